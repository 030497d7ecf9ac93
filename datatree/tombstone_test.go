package datatree

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zkd/zkd/jute"
)

func isLockTestName(name string) bool { return strings.Contains(name, "lock-") }

// TestTombstoneLifecycle: a delayed close keeps the session's lock nodes,
// unchanged and without firing watches, deletes its other ephemerals, and
// the tombstones go only when DeleteTombstone runs at or after their
// deadline, firing the waiter's watch then. Another session's node and a
// plain delete are untouched by it.
func TestTombstoneLifecycle(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.create("/locks", jute.ModePersistent)
	const holder, waiter = 2, 3
	mk := func(session int64, path string, mode int32) string {
		t.Helper()
		p, _, err := h.tree.Create(h.tx(session), CreateOp{Path: path, Data: []byte("d"), ACL: OpenACLUnsafe, Mode: mode})
		if err != nil {
			t.Fatalf("create %s for session %#x: %v", path, session, err)
		}
		return p
	}
	held := mk(holder, "/locks/lock-", jute.ModeEphemeralSequential)
	other := mk(holder, "/other", jute.ModeEphemeral)
	waiting := mk(waiter, "/locks/lock-", jute.ModeEphemeralSequential)
	before := h.stat(held)
	var w recorder
	if _, err := h.tree.Exists(held, &w); err != nil {
		t.Fatal(err)
	}

	tx := h.tx(holder)
	deadline := tx.Time + 5000
	kept := h.tree.CloseSessionDelayed(tx, holder, isLockTestName, deadline)
	if !slices.Equal(kept, []string{held}) {
		t.Fatalf("kept %v, want [%s]", kept, held)
	}
	h.check()
	if got := w.take(); len(got) != 0 {
		t.Fatalf("watch on the tombstone fired at expiry: %v", got)
	}
	if st := h.stat(held); st != before {
		t.Fatalf("tombstone stat changed: %+v, was %+v", st, before)
	}
	if _, err := h.tree.Exists(other, nil); !errors.Is(err, ErrNoNode) {
		t.Fatalf("non-lock ephemeral %s: %v, want NoNode", other, err)
	}
	if _, err := h.tree.SessionEphemeral(held, nil); !errors.Is(err, ErrNoNode) {
		t.Fatalf("SessionEphemeral of a tombstone: %v, want NoNode", err)
	}
	want := []Tombstone{{Path: held, Czxid: before.Czxid, Session: holder, Deadline: deadline}}
	if got := h.tree.Tombstones(); !slices.Equal(got, want) {
		t.Fatalf("Tombstones() = %+v, want %+v", got, want)
	}

	steps := []struct {
		name string
		path string
		at   int64
		err  error
	}{
		{"not a tombstone", waiting, deadline + 1, ErrNoNode},
		{"missing", "/locks/none", deadline + 1, ErrNoNode},
		{"before deadline", held, deadline - 1, ErrBadVersion},
		{"at deadline", held, deadline, nil},
		{"again", held, deadline + 1, ErrNoNode},
	}
	for _, s := range steps {
		if due := h.tree.DueTombstones(s.at); s.path == held && s.err == nil && !slices.Equal(due, []string{held}) {
			t.Fatalf("%s: DueTombstones(%d) = %v", s.name, s.at, due)
		}
		h.zxid++
		wantErr(t, s.name, h.tree.DeleteTombstone(&Txn{Zxid: h.zxid, Time: s.at}, s.path), s.err)
		h.check()
		if s.err == ErrBadVersion {
			if due := h.tree.DueTombstones(s.at); len(due) != 0 {
				t.Fatalf("%s: DueTombstones(%d) = %v", s.name, s.at, due)
			}
			if got := w.take(); len(got) != 0 {
				t.Fatalf("%s: watch fired: %v", s.name, got)
			}
		}
	}
	if got := w.take(); !slices.Equal(got, []string{"deleted:" + held}) {
		t.Fatalf("waiter's watch: %v, want the tombstone's delete", got)
	}
	if len(h.tree.Tombstones()) != 0 {
		t.Fatalf("tombstones left: %+v", h.tree.Tombstones())
	}
	if _, err := h.tree.Exists(waiting, nil); err != nil {
		t.Fatalf("waiter's node: %v", err)
	}
}

// oneTombstone returns a tree whose only lock node, /locks/lock-0000000000
// of session 2, is a tombstone due at deadline.
func oneTombstone(t *testing.T, deadline int64) (*harness, string) {
	h := newHarness(t, DefaultConfig())
	h.create("/locks", jute.ModePersistent)
	p, _, err := h.tree.Create(h.tx(2), CreateOp{Path: "/locks/lock-", ACL: OpenACLUnsafe, Mode: jute.ModeEphemeralSequential})
	if err != nil {
		t.Fatal(err)
	}
	h.tree.CloseSessionDelayed(h.tx(2), 2, isLockTestName, deadline)
	return h, p
}

// TestTombstoneDeletedByClient: a tombstone deleted by a request (or a
// multi that is rolled back) keeps the index right.
func TestTombstoneDeletedByClient(t *testing.T) {
	h, p := oneTombstone(t, 1<<40)
	res, failed := h.tree.Multi(h.tx(1), []Op{
		{Type: jute.OpDelete, Path: p, Version: -1},
		{Type: jute.OpDelete, Path: "/locks/none", Version: -1},
	})
	if !failed || !errors.Is(res[1].Err, ErrNoNode) {
		t.Fatalf("multi: %+v", res)
	}
	h.check()
	if got := h.tree.Tombstones(); len(got) != 1 || got[0].Path != p {
		t.Fatalf("after rolled-back multi: %+v", got)
	}
	wantErr(t, "delete", h.tree.Delete(h.tx(1), p, -1), nil)
	h.check()
	if got := h.tree.Tombstones(); len(got) != 0 {
		t.Fatalf("after delete: %+v", got)
	}
}

// TestSetTombstoneAfterSnapshot: the tree image carries a tombstone as the
// ephemeral it is; SetTombstone restores its deadline, and refuses what is
// not a session ephemeral.
func TestSetTombstoneAfterSnapshot(t *testing.T) {
	h, p := oneTombstone(t, 777)
	var buf bytes.Buffer
	if err := h.tree.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	r, err := ReadSnapshot(&buf, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTombstone(p, 777); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Tombstones(), h.tree.Tombstones()) {
		t.Fatalf("restored %+v, want %+v", r.Tombstones(), h.tree.Tombstones())
	}
	wantErr(t, "persistent", r.SetTombstone("/locks", 1), ErrNoNode)
	wantErr(t, "missing", r.SetTombstone("/locks/x", 1), ErrNoNode)
}
