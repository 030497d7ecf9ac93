package gozk

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_ObserverAcrossLeaderChange (issue 19, item 4): on 3
// voters and 1 observer, a lock holder whose session is on the observer
// (its only server) and a waiter on a follower; the leader is killed with
// SIGKILL. Once a new leader serves, the holder's session is the same and
// never expired, its ephemeral lock node and another ephemeral are still
// there, the waiter has not got the lock, a watch set on the observer
// before the change fires for a write made after it, sync then read on
// the observer sees that write, and the holder can create ephemerals;
// when it unlocks, the waiter gets the lock, and when it closes, its
// ephemerals go. The same on ZooKeeper 3.8, whose observer drops its
// clients when it loses its leader (go-zk resumes the session there).
func TestIntegration_ObserverAcrossLeaderChange(t *testing.T) {
	opts := zkproc.Options{Observers: 1, TickTime: 500}
	t.Run("zkd", func(t *testing.T) {
		observerAcrossLeaderChange(t, zkproc.StartZkdEnsemble(t, 4, opts))
	})
	t.Run("zookeeper", func(t *testing.T) {
		observerAcrossLeaderChange(t, zkproc.StartZooKeeperEnsemble(t, 4, opts))
	})
}

func observerAcrossLeaderChange(t *testing.T, servers []*zkproc.Server) {
	voters, obs := servers[:3], servers[3]
	if m := obs.Mode(); m != "observer" {
		t.Fatalf("member 4 is %q, want observer", m)
	}
	old := zkproc.LeaderOf(t, voters, 30*time.Second)
	follower := voters[(old+1)%3]

	const timeout = 15 * time.Second
	holder, holderEv := connectTo(t, []string{obs.Addr}, timeout)
	waiter, _ := connectTo(t, []string{follower.Addr}, timeout)
	var expired atomic.Bool
	watch := make(chan zk.Event, 16)
	go func() {
		for ev := range holderEv {
			if ev.State == zk.StateExpired {
				expired.Store(true)
			}
		}
	}()
	sid := holder.SessionID()

	_, err := holder.Create("/obs", nil, 0, worldACL)
	must(t, err)
	_, err = holder.Create("/obs/data", []byte("before"), 0, worldACL)
	must(t, err)
	_, err = holder.Create("/obs/eph", nil, zk.FlagEphemeral, worldACL)
	must(t, err)
	_, _, wch, err := holder.GetW("/obs/data")
	must(t, err)
	go func() {
		if ev, ok := <-wch; ok {
			watch <- ev
		}
	}()
	hl := zk.NewLock(holder, "/obs/lock", worldACL)
	must(t, hl.Lock())
	wl := zk.NewLock(waiter, "/obs/lock", worldACL)
	acquired := make(chan error, 1)
	go func() { acquired <- wl.Lock() }()
	// The waiter is queued once its node is beside the holder's.
	lockNodes := func(c *zk.Conn) []string {
		t.Helper()
		for range 100 {
			if _, err := c.Sync("/obs/lock"); err == nil {
				if kids, _, err := c.Children("/obs/lock"); err == nil {
					return kids
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatal("cannot list /obs/lock")
		return nil
	}
	for deadline := time.Now().Add(20 * time.Second); len(lockNodes(waiter)) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the waiter's lock node never appeared: %v", lockNodes(waiter))
		}
		time.Sleep(50 * time.Millisecond)
	}
	before := lockNodes(holder)

	t.Logf("kill -9 the leader, voter %d (%s)", old+1, voters[old].Addr)
	voters[old].Kill()
	rest := slices.Delete(slices.Clone(voters), old, old+1)
	newLeader := zkproc.LeaderOf(t, rest, 60*time.Second)
	t.Logf("new leader %s", rest[newLeader].Addr)
	for deadline := time.Now().Add(60 * time.Second); obs.Mode() != "observer"; {
		if time.Now().After(deadline) {
			t.Fatal("the observer does not follow the new leader")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The holder's session, on the observer, lives on.
	for deadline := time.Now().Add(timeout); holder.State() != zk.StateHasSession; {
		if time.Now().After(deadline) {
			t.Fatalf("holder's session not back on the observer: state %v", holder.State())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if holder.SessionID() != sid || expired.Load() {
		t.Fatalf("holder's session 0x%x became 0x%x (expired: %v)", sid, holder.SessionID(), expired.Load())
	}
	// A write on the follower fires the watch set on the observer, and a
	// sync on the observer makes its read see the write. The watch is
	// awaited before the holder sends anything: go-zk v1.0.4 reads its
	// last zxid for setWatches while its receive loop may write it for
	// the reply to a request sent first, a data race in the client that
	// the race detector reports. The write comes from a new session,
	// which has no watches to re-set.
	writer, _ := connectTo(t, []string{follower.Addr}, timeout)
	var werr error
	for range 50 {
		if _, werr = writer.Set("/obs/data", []byte("after"), -1); werr == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	must(t, werr)
	select {
	case ev := <-watch:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/obs/data" {
			t.Errorf("watch event %+v, want NodeDataChanged on /obs/data", ev)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the watch set on the observer before the leader change did not fire")
	}
	if after := lockNodes(holder); !slices.Equal(after, before) {
		t.Errorf("lock nodes after the leader change %v, before %v", after, before)
	}
	select {
	case err := <-acquired:
		t.Fatalf("the waiter got the lock (err %v) while the holder's session lives", err)
	default:
	}
	if ok, _, err := holder.Exists("/obs/eph"); err != nil || !ok {
		t.Errorf("holder's ephemeral after the leader change: exists %v, %v", ok, err)
	}

	_, err = holder.Sync("/obs/data")
	must(t, err)
	data, _, err := holder.Get("/obs/data")
	if err != nil || string(data) != "after" {
		t.Errorf("read on the observer after sync: %q, %v; want \"after\"", data, err)
	}
	_, err = holder.Create("/obs/eph2", nil, zk.FlagEphemeral, worldACL)
	must(t, err)
	_, err = writer.Sync("/obs/eph2")
	must(t, err)
	if ok, _, err := writer.Exists("/obs/eph2"); err != nil || !ok {
		t.Errorf("ephemeral created on the observer after the change, seen from the follower: %v, %v", ok, err)
	}

	// Unlock hands the lock over; closing the session removes its nodes.
	must(t, hl.Unlock())
	select {
	case err := <-acquired:
		must(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter did not get the lock after the holder released it")
	}
	holder.Close()
	for _, p := range []string{"/obs/eph", "/obs/eph2"} {
		ok := true
		for deadline := time.Now().Add(20 * time.Second); ok && time.Now().Before(deadline); {
			waiter.Sync(p)
			if ok, _, err = waiter.Exists(p); err != nil && !errors.Is(err, zk.ErrNoNode) {
				t.Fatal(err)
			}
			if ok {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if ok {
			t.Errorf("%s outlived its closed session", p)
		}
	}
	must(t, wl.Unlock())
}
