package quorum_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_SessionMovesMembers: when the member holding a client's
// connection dies, the client reattaches its session on another member
// and keeps its ephemeral node and its watch (re-armed by setWatches).
func TestIntegration_SessionMovesMembers(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200})
	c, expired := dial(t, 4*time.Second, zkproc.Addrs(servers)...)
	if _, err := c.Create("/mine", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/watched", []byte("a"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, _, events, err := c.GetW("/watched")
	if err != nil {
		t.Fatal(err)
	}
	session := c.SessionID()
	held := -1
	for i, s := range servers {
		if s.Addr == c.Server() {
			held = i
		}
	}
	if held < 0 {
		t.Fatalf("client on %q, not a member", c.Server())
	}
	servers[held].Kill()
	other, _ := dial(t, 4*time.Second, servers[(held+1)%3].Addr)
	deadline := time.Now().Add(10 * time.Second)
	for c.State() != zk.StateHasSession || c.Server() == servers[held].Addr {
		if time.Now().After(deadline) {
			t.Fatalf("client did not move: state %v on %s", c.State(), c.Server())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c.SessionID() != session || expired.Load() != 0 {
		t.Fatalf("session changed or expired: 0x%x → 0x%x, expired %d", session, c.SessionID(), expired.Load())
	}
	if ok, st, err := other.Exists("/mine"); err != nil || !ok || st.EphemeralOwner != session {
		t.Fatalf("ephemeral after the move: %v %+v %v", ok, st, err)
	}
	if _, err := other.Set("/watched", []byte("b"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/watched" {
			t.Fatalf("watch event %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not survive the move")
	}
}
