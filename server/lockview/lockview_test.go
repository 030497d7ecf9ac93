package lockview

import (
	"reflect"
	"testing"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

func TestParseName(t *testing.T) {
	tests := []struct {
		name string
		mode string
		seq  int64
		ok   bool
	}{
		{"lock-0000000003", LockExclusive, 3, true},
		{"_c_0f3c8a8e-8c6b-4a5e-b1d2-6a1e1e1e1e1e-lock-0000000012", LockExclusive, 12, true},
		{"_c_8e0b8bd3a1ad4ee1ae6f0d2b1e6f5b7a-lock-0000000000", LockExclusive, 0, true},
		{"3f2a9d4c1b8e4f7a9c6d2e1f0a9b8c7d__lock__0000000007", LockExclusive, 7, true},
		{"3f2a9d4c1b8e4f7a9c6d2e1f0a9b8c7d__rlock__0000000008", LockRead, 8, true},
		{"_c_0f3c8a8e-8c6b-4a5e-b1d2-6a1e1e1e1e1e-__READ__0000000001", LockRead, 1, true},
		{"_c_0f3c8a8e-8c6b-4a5e-b1d2-6a1e1e1e1e1e-__WRIT__0000000002", LockWrite, 2, true},
		{"_c_abc-read-0000000004", LockRead, 4, true},
		{"_c_abc-write-0000000005", LockWrite, 5, true},
		{"_c_abc-lease-0000000006", LockLease, 6, true},
		{"latch-0000000001", "", 0, false},     // leader latch, not a lock
		{"lock-00000001", "", 0, false},        // short sequence
		{"lock-", "", 0, false},                // no sequence
		{"lock-000000000x", "", 0, false},      // not digits
		{"lock--000000001", "", 0, false},      // overflowed (negative) sequence
		{"mylock-0000000001", "", 0, false},    // not the recipe's prefix
		{"foo__lockx0000000001", "", 0, false}, // near miss
	}
	for _, tc := range tests {
		mode, seq, ok := ParseName(tc.name)
		if mode != tc.mode || seq != tc.seq || ok != tc.ok {
			t.Errorf("ParseName(%q) = %q, %d, %v; want %q, %d, %v", tc.name, mode, seq, ok, tc.mode, tc.seq, tc.ok)
		}
	}
}

// child builds one ephemeral child for Build tests: owner = session,
// czxid = 100+seq, ctime = 1000+seq.
func child(name string, session, seq int64) datatree.EphemeralChild {
	return datatree.EphemeralChild{Name: name, Stat: jute.Stat{EphemeralOwner: session, Czxid: 100 + seq, Ctime: 1000 + seq}}
}

func TestLockView(t *testing.T) {
	// Names sorted as the tree returns them: by name, not by sequence.
	groups := []datatree.EphemeralGroup{
		{Parent: "/curator/mutex", Children: []datatree.EphemeralChild{
			child("_c_aaa-lock-0000000002", 3, 2),
			child("_c_bbb-lock-0000000000", 1, 0),
			child("_c_ccc-lock-0000000001", 2, 1),
		}},
		{Parent: "/kazoo/rw", Children: []datatree.EphemeralChild{
			child("a__lock__0000000002", 3, 2),
			child("b__rlock__0000000000", 1, 0),
			child("c__rlock__0000000001", 2, 1),
			child("d__rlock__0000000003", 4, 3),
		}},
		{Parent: "/curator/rw", Children: []datatree.EphemeralChild{
			child("_c_x-__READ__0000000001", 2, 1),
			child("_c_y-__WRIT__0000000000", 1, 0),
		}},
		{Parent: "/sem/leases", Children: []datatree.EphemeralChild{
			child("_c_x-lease-0000000000", 1, 0),
			child("_c_y-lease-0000000001", 2, 1),
		}},
		{Parent: "/members", Children: []datatree.EphemeralChild{child("member-0000000000", 1, 0)}},
		{Parent: "/mixed", Children: []datatree.EphemeralChild{
			child("lock-0000000005", 2, 5),
			child("worker", 1, 0),
		}},
	}
	clients := map[int64]string{1: "127.0.0.1:5001"}
	got := Build(groups, func(id int64) string { return clients[id] }, 2000)

	type summary struct {
		path, kind       string
		holders, waiters []string
	}
	names := func(ns []Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	var sums []summary
	for _, l := range got {
		sums = append(sums, summary{l.Path, l.Kind, names(l.Holders), names(l.Waiters)})
	}
	want := []summary{
		{"/curator/mutex", KindMutex, []string{"_c_bbb-lock-0000000000"}, []string{"_c_ccc-lock-0000000001", "_c_aaa-lock-0000000002"}},
		{"/kazoo/rw", KindRWLock, []string{"b__rlock__0000000000", "c__rlock__0000000001"}, []string{"a__lock__0000000002", "d__rlock__0000000003"}},
		{"/curator/rw", KindRWLock, []string{"_c_y-__WRIT__0000000000"}, []string{"_c_x-__READ__0000000001"}},
		{"/sem/leases", KindSemaphore, []string{"_c_x-lease-0000000000", "_c_y-lease-0000000001"}, nil},
		{"/mixed", KindMutex, []string{"lock-0000000005"}, nil},
	}
	if !reflect.DeepEqual(sums, want) {
		t.Errorf("Build:\n got %+v\nwant %+v", sums, want)
	}
	h := got[0].Holders[0]
	wantH := Node{Name: "_c_bbb-lock-0000000000", Mode: LockExclusive, SessionID: 1, Session: "0x1",
		Client: "127.0.0.1:5001", Czxid: 100, Sequence: 0, Ctime: 1000, AgeMs: 1000}
	if h != wantH {
		t.Errorf("holder = %+v, want %+v", h, wantH)
	}
	if w := got[0].Waiters[0]; w.Client != "remote" || w.Czxid != 101 || w.Sequence != 1 || w.AgeMs != 999 {
		t.Errorf("first waiter = %+v, want client remote, czxid 101, sequence 1, age 999", w)
	}
}

// TestMarkTombstones: a node is marked only when both its path and its
// czxid match a tombstone (a later node of the same name is not the
// tombstone), with the deadline and the delay left, never negative.
func TestMarkTombstones(t *testing.T) {
	groups := []datatree.EphemeralGroup{{Parent: "/l", Children: []datatree.EphemeralChild{
		child("lock-0000000000", 1, 0),
		child("lock-0000000001", 2, 1),
		child("lock-0000000002", 3, 2),
	}}}
	tombs := []datatree.Tombstone{
		{Path: "/l/lock-0000000000", Czxid: 100, Session: 1, Deadline: 5000},
		{Path: "/l/lock-0000000001", Czxid: 999, Session: 9, Deadline: 5000}, // another node of that name
		{Path: "/l/lock-0000000002", Czxid: 102, Session: 3, Deadline: 3000},
	}
	tests := []struct {
		now  int64
		want [3][2]int64 // per node: tombstone (0/1), delay left
	}{
		{4000, [3][2]int64{{1, 1000}, {0, 0}, {1, 0}}},
		{5000, [3][2]int64{{1, 0}, {0, 0}, {1, 0}}},
	}
	for _, tc := range tests {
		locks := Build(groups, func(int64) string { return "" }, tc.now)
		MarkTombstones(locks, tombs, tc.now)
		nodes := append(append([]Node{}, locks[0].Holders...), locks[0].Waiters...)
		for i, n := range nodes {
			got := [2]int64{0, n.DelayLeftMs}
			if n.Tombstone {
				got[0] = 1
				if n.DelayUntil != tombs[i].Deadline {
					t.Errorf("now %d: %s delay_until %d, want %d", tc.now, n.Name, n.DelayUntil, tombs[i].Deadline)
				}
			}
			if got != tc.want[i] {
				t.Errorf("now %d: %s tombstone/left = %v, want %v", tc.now, n.Name, got, tc.want[i])
			}
		}
	}
}
