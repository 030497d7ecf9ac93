package zab

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap/zaptest"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

func testLockName(name string) bool { return strings.HasPrefix(name, "lock-") }

func lockDelayFSM(t *testing.T) *fsm {
	f := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	f.lockName = testLockName
	return f
}

// TestExpireEntryWithoutDelayKeepsFormat: an expiry entry without a lock
// delay encodes as it did before lock delay existed, and such an entry
// decodes with no delay.
func TestExpireEntryWithoutDelayKeepsFormat(t *testing.T) {
	plain := (&entry{kind: kindExpire, time: 9, sessions: []int64{1, 2}}).encode()
	if want := 4 + 3*8 + 4 + 2*8; len(plain) != want {
		t.Fatalf("expiry entry of %d bytes, want %d", len(plain), want)
	}
	e, err := decodeEntry(plain)
	if err != nil || e.lockDelay != 0 {
		t.Fatalf("decoded %+v, %v", e, err)
	}
	delayed, err := decodeEntry((&entry{kind: kindExpire, sessions: []int64{1}, lockDelay: 250}).encode())
	if err != nil || delayed.lockDelay != 250 {
		t.Fatalf("decoded %+v, %v", delayed, err)
	}
}

// lockDelayScript: session 11 holds /locks/lock-0000000000 and owns /eph,
// session 12 waits with lock-0000000001; 11 expires at leader time 2000
// under a 5000 ms delay.
func lockDelayScript() []*entry {
	create := func(path string, mode int32) []byte {
		return jute.Encode(&jute.CreateRequest{Path: path, Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}, Flags: mode})
	}
	return []*entry{
		{kind: kindRequest, time: 1000, req: Request{Op: jute.OpCreateSession, SessionID: 11, Timeout: 4000}},
		{kind: kindRequest, time: 1001, req: Request{Op: jute.OpCreateSession, SessionID: 12, Timeout: 4000}},
		{kind: kindRequest, time: 1002, req: Request{Op: jute.OpCreate, SessionID: 11, Body: create("/locks", jute.ModePersistent)}},
		{kind: kindRequest, time: 1003, req: Request{Op: jute.OpCreate, SessionID: 11, Body: create("/locks/lock-", jute.ModeEphemeralSequential)}},
		{kind: kindRequest, time: 1004, req: Request{Op: jute.OpCreate, SessionID: 12, Body: create("/locks/lock-", jute.ModeEphemeralSequential)}},
		{kind: kindRequest, time: 1005, req: Request{Op: jute.OpCreate, SessionID: 11, Body: create("/eph", jute.ModeEphemeral)}},
		{kind: kindExpire, time: 2000, sessions: []int64{11}, lockDelay: 5000},
	}
}

func applyFrom(f *fsm, index uint64, es ...*entry) {
	for i, e := range es {
		f.Apply(&raft.Log{Index: index + uint64(i), Term: 1, Type: raft.LogCommand, Data: e.encode()})
	}
}

// TestFSMLockDelayLifecycle: the expiry entry's delay turns the expired
// holder's lock node into a tombstone due at the entry's time + delay on
// every member alike; a removal entry stamped before the deadline leaves
// it, one at or after removes it; a snapshot taken meanwhile carries it,
// so a member restored from it removes it at the same entry. Without a
// delay (or a close by the client) the node goes at once.
func TestFSMLockDelayLifecycle(t *testing.T) {
	const held, waiting = "/locks/lock-0000000000", "/locks/lock-0000000001"
	a, b := lockDelayFSM(t), lockDelayFSM(t)
	applyAll(t, a, lockDelayScript(), 1)
	applyAll(t, b, lockDelayScript(), 1)
	snap := snapshotBytes(t, a)
	if !bytes.Equal(snap, snapshotBytes(t, b)) {
		t.Fatal("two FSMs fed the same entries have different snapshots")
	}
	if got := string(snap[:len(snapshotMagicTombs)]); got != snapshotMagicTombs {
		t.Fatalf("snapshot with a tombstone opens %q", got)
	}
	tree := a.tree.Load()
	tombs := tree.Tombstones()
	if len(tombs) != 1 || tombs[0].Path != held || tombs[0].Deadline != 7000 || tombs[0].Session != 11 {
		t.Fatalf("tombstones %+v, want %s due at 7000", tombs, held)
	}
	if _, err := tree.Exists("/eph", nil); err == nil {
		t.Fatal("the expired session's non-lock ephemeral survived")
	}
	if _, ok := a.sessionTimeout(11); ok {
		t.Fatal("expired session still live")
	}

	c := lockDelayFSM(t)
	if err := c.Restore(nopCloser{bytes.NewReader(snap)}); err != nil {
		t.Fatal(err)
	}
	if got := c.tree.Load().Tombstones(); !slices.Equal(got, tombs) {
		t.Fatalf("restored tombstones %+v, want %+v", got, tombs)
	}
	if !bytes.Equal(snapshotBytes(t, c), snap) {
		t.Fatal("restored FSM snapshots differently")
	}

	next := uint64(len(lockDelayScript()) + 1)
	steps := []struct {
		time int64
		left bool
	}{{6999, true}, {7000, false}}
	for _, st := range steps {
		for _, f := range []*fsm{a, b, c} {
			applyFrom(f, next, &entry{kind: kindDeleteTombstones, time: st.time, paths: []string{held}})
			_, err := f.tree.Load().Exists(held, nil)
			if left := err == nil; left != st.left {
				t.Fatalf("removal at %d: tombstone left = %v, want %v", st.time, left, st.left)
			}
			if _, err := f.tree.Load().Exists(waiting, nil); err != nil {
				t.Fatalf("waiter's node: %v", err)
			}
		}
		next++
	}
	snap = snapshotBytes(t, a)
	if got := string(snap[:len(snapshotMagic)]); got != snapshotMagic {
		t.Fatalf("snapshot without tombstones opens %q", got)
	}
	for _, f := range []*fsm{b, c} {
		if !bytes.Equal(snapshotBytes(t, f), snap) {
			t.Fatal("members differ after the removal")
		}
	}
}

// TestFSMNoDelayDeletesAtOnce: an expiry without a delay, and a client's
// closeSession even when expiries carry one, delete lock nodes at once.
func TestFSMNoDelayDeletesAtOnce(t *testing.T) {
	tests := []struct {
		name string
		end  *entry
	}{
		{"expiry without delay", &entry{kind: kindExpire, time: 2000, sessions: []int64{11}}},
		{"closeSession", &entry{kind: kindRequest, time: 2000, req: Request{Op: jute.OpCloseSession, SessionID: 11}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := lockDelayFSM(t)
			es := lockDelayScript()
			es[len(es)-1] = tt.end
			applyAll(t, f, es, 1)
			if _, err := f.tree.Load().Exists("/locks/lock-0000000000", nil); err == nil {
				t.Fatal("lock node of the closed session survived")
			}
			if n := len(f.tree.Load().Tombstones()); n != 0 {
				t.Fatalf("%d tombstones", n)
			}
		})
	}
}

// TestNodeLockDelay: a standalone node with LockDelayMs expires a
// session into a tombstone; the stopped member's stored state holds it
// with the same deadline (from the snapshot taken at close), and the
// restarted leader removes it once due, through the log.
func TestNodeLockDelay(t *testing.T) {
	dir := t.TempDir()
	const delay = 3000
	opts := func(c *Config) { c.LockDelayMs, c.LockName = delay, testLockName }
	n := openNode(t, dir, opts)
	s := n.Submit(&Request{Op: jute.OpCreateSession, Timeout: 200}).Wait()
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	body := jute.Encode(&jute.CreateRequest{Path: "/lock-", Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}, Flags: jute.ModeEphemeralSequential})
	if r := n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: body}).Wait(); r.Err != nil {
		t.Fatal(r.Err)
	}
	tomb := waitTree(t, n, "a tombstone", func(tr *datatree.Tree) bool { return len(tr.Tombstones()) == 1 }).Tombstones()[0]
	if _, ok := n.SessionTimeout(s.SessionID); ok {
		t.Fatal("session live beside its tombstone")
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Dir, cfg.Logger = dir, zaptest.NewLogger(t)
	opts(&cfg)
	st, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Tree.Tombstones(); len(got) != 1 || got[0] != tomb {
		t.Fatalf("stored tombstones %+v, want %+v", got, tomb)
	}
	n = openNode(t, dir, opts)
	defer n.Close()
	waitTree(t, n, "the tombstone removed", func(tr *datatree.Tree) bool {
		_, err := tr.Exists(tomb.Path, nil)
		return err != nil && len(tr.Tombstones()) == 0
	})
}

func waitTree(t *testing.T, n *Node, what string, ok func(*datatree.Tree) bool) *datatree.Tree {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if tr := n.Tree(); ok(tr) {
			return tr
		}
		select {
		case <-ctx.Done():
			t.Fatal(fmt.Sprintf("timed out waiting for %s", what))
		case <-time.After(10 * time.Millisecond):
		}
	}
}
