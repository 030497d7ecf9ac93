package zab

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"go.uber.org/zap/zaptest"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab/zabtest"
)

// digestLeader applies entries as a leader would propose them: each batch
// carries the newest digest the leader recorded before it.
type digestLeader struct {
	f     *fsm
	index uint64
}

// propose stamps e with the leader's newest digest, applies it on the
// leader and returns the log entry the followers get.
func (l *digestLeader) propose(e *entry) *raft.Log {
	if d, ok := l.f.digests.newest(); ok && e.kind == kindBatch {
		e.mark = digestMark{version: datatree.DigestVersion, zxid: d.Zxid, digest: d.Digest}
	}
	l.index++
	log := &raft.Log{Index: l.index, Term: 2, Type: raft.LogCommand, Data: e.encode()}
	l.f.Apply(log)
	return log
}

func batchOf(time int64, reqs ...Request) *entry {
	e := &entry{kind: kindBatch, origin: 1, seq: uint64(time), time: time}
	for i, r := range reqs {
		e.batch = append(e.batch, queued{origin: 1, seq: uint64(i), req: r})
	}
	return e
}

func createReq(path, data string) Request {
	return Request{Op: jute.OpCreate, SessionID: 11, Body: jute.Encode(&jute.CreateRequest{Path: path, Data: []byte(data), Acl: datatree.OpenACLUnsafe})}
}

// errDiverged is what the test's OnDivergence panics with.
type errDiverged struct{ d Divergence }

// applyCatching applies log on f and returns the divergence f reported.
func applyCatching(f *fsm, log *raft.Log) (d *Divergence) {
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(errDiverged)
			if !ok {
				panic(p)
			}
			d = &e.d
		}
	}()
	f.Apply(log)
	return nil
}

// TestDigestDivergence: a follower restored from the leader's snapshot
// with one node's data changed (checksums valid) reports the mismatch,
// counted and with both digests, at the first entry that carries a digest
// it recorded; a follower restored from the intact snapshot never does.
func TestDigestDivergence(t *testing.T) {
	leader := &digestLeader{f: newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))}
	leader.propose(batchOf(1000, Request{Op: jute.OpCreateSession, SessionID: 11, Timeout: 30000}))
	leader.propose(batchOf(1001, createReq("/canary", "canary-AAAA"), createReq("/a", "x")))
	snap := snapshotBytes(t, leader.f)
	snapZxid, snapDigest := leader.f.tree.Load().LastZxid(), leader.f.tree.Load().TreeDigest()
	bad, err := zabtest.ReplaceInTree(snap, []byte("canary-AAAA"), []byte("canary-BBBB"))
	if err != nil {
		t.Fatal(err)
	}

	restore := func(b []byte) (*fsm, *int) {
		f := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
		if err := f.Restore(nopCloser{bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
		mismatches := new(int)
		f.observer.DigestMismatch = func() { *mismatches++ }
		f.onDivergence = func(d Divergence) { panic(errDiverged{d}) }
		return f, mismatches
	}
	good, goodCount := restore(snap)
	diverged, badCount := restore(bad)
	if diverged.tree.Load().TreeDigest() == snapDigest {
		t.Fatal("the changed snapshot loads with the original digest")
	}

	var got *Divergence
	for i := 0; i < 5; i++ {
		log := leader.propose(batchOf(int64(1002+i), createReq(fmt.Sprintf("/n%d", i), "y")))
		if d := applyCatching(good, log); d != nil {
			t.Fatalf("the intact follower diverged at entry %d: %v", i, d)
		}
		if got = applyCatching(diverged, log); got != nil {
			if i != 0 {
				t.Fatalf("mismatch found at entry %d after the snapshot, want the first", i)
			}
			break
		}
	}
	if got == nil {
		t.Fatal("the changed follower never reported a mismatch")
	}
	if got.Zxid != snapZxid || got.Leader != snapDigest || got.Mine != diverged.tree.Load().TreeDigest() {
		t.Fatalf("divergence %v; want zxid 0x%x, leader %016x, mine %016x", got, snapZxid, snapDigest, diverged.tree.Load().TreeDigest())
	}
	if *badCount != 1 || *goodCount != 0 {
		t.Fatalf("mismatches counted: diverged %d, intact %d; want 1 and 0", *badCount, *goodCount)
	}
	if good.tree.Load().TreeDigest() != leader.f.tree.Load().TreeDigest() {
		t.Fatal("the intact follower's digest differs from the leader's")
	}
	t.Logf("detected: %v", got)
}

// TestDigestMarkEncoding: a batch's digest trailer survives encoding, and
// a batch without one (as written before digests, or with NoDigest)
// decodes with none and is not checked.
func TestDigestMarkEncoding(t *testing.T) {
	e := batchOf(5, createReq("/a", "b"))
	plain, err := decodeEntry(e.encode())
	if err != nil || plain.mark.version != 0 {
		t.Fatalf("batch without a digest: %+v, %v", plain.mark, err)
	}
	e.mark = digestMark{version: datatree.DigestVersion, zxid: 0x200000007, digest: 0xfedcba9876543210}
	got, err := decodeEntry(e.encode())
	if err != nil || got.mark != e.mark || len(got.packed) != 1 {
		t.Fatalf("batch with a digest: %+v (%d requests), %v; want %+v", got.mark, len(got.packed), err, e.mark)
	}
}

// TestDigestLogWindow: the log answers for the entries it still holds
// and not for those that fell out of it, nor for a zxid it never saw.
func TestDigestLogWindow(t *testing.T) {
	var l digestLog
	for z := int64(1); z <= 3*digestLogSize; z++ {
		l.record(2*z, uint64(z))
		l.record(2*z, uint64(z)) // an entry taking no zxid repeats it
	}
	last := int64(3 * digestLogSize)
	for _, tc := range []struct {
		zxid int64
		ok   bool
	}{{2 * last, true}, {2 * (last - digestLogSize + 1), true}, {2 * (last - digestLogSize), false}, {2*last - 1, false}, {2, false}} {
		d, ok := l.at(tc.zxid)
		if ok != tc.ok || ok && d != uint64(tc.zxid/2) {
			t.Errorf("at(%d) = %d, %v; want ok %v", tc.zxid, d, ok, tc.ok)
		}
	}
	if h := l.history(); len(h) != digestLogSize || h[0].Zxid != 2*last {
		t.Fatalf("history: %d entries, newest %d", len(h), h[0].Zxid)
	}
}
