package zab

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap/zaptest"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

// pack turns the request entries of es into kindBatch entries of up to
// size requests each (other entries stay as they are), as a leader packs
// what waits for the log.
func pack(es []*entry, size int) []*entry {
	var out []*entry
	var cur *entry
	for i, e := range es {
		if e.kind != kindRequest {
			cur = nil
			out = append(out, e)
			continue
		}
		if cur == nil || len(cur.batch) == size {
			cur = &entry{kind: kindBatch, origin: 1, seq: uint64(i), time: e.time}
			out = append(out, cur)
		}
		cur.batch = append(cur.batch, queued{origin: e.origin, seq: e.seq, req: e.req})
	}
	return out
}

func TestBatchEntryRoundTrip(t *testing.T) {
	for _, size := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			for i, want := range pack(script(), size) {
				got, err := decodeEntry(want.encode())
				if err != nil {
					t.Fatalf("entry %d: %v", i, err)
				}
				if want.kind == kindBatch {
					if len(got.packed) != len(want.batch) {
						t.Fatalf("entry %d: %d requests decoded, want %d", i, len(got.packed), len(want.batch))
					}
					for j, p := range got.packed {
						w := want.batch[j]
						if p.origin != w.origin || p.seq != w.seq || p.req.Op != w.req.Op || p.req.SessionID != w.req.SessionID ||
							!bytes.Equal(p.req.Body, w.req.Body) || p.req.Reject != w.req.Reject {
							t.Fatalf("entry %d request %d: %+v, want %+v", i, j, p, w)
						}
					}
				}
			}
		})
	}
}

// unpack turns every kindBatch entry of es back into one kindRequest entry
// per request, each with the batch's time (the leader stamps a batch once).
func unpack(es []*entry) []*entry {
	var out []*entry
	for _, e := range es {
		if e.kind != kindBatch {
			out = append(out, e)
			continue
		}
		for _, q := range e.batch {
			out = append(out, &entry{kind: kindRequest, origin: q.origin, seq: q.seq, time: e.time, req: q.req})
		}
	}
	return out
}

// TestBatchAppliesAsSingleEntries checks that packing changes nothing the
// FSM computes: the same requests, packed or one per entry, give the same
// results, zxids and tree (snapshot bytes and digest), whatever the batch
// size, with a Reject carried inside a batch too.
func TestBatchAppliesAsSingleEntries(t *testing.T) {
	es := script()
	es = append(es, &entry{kind: kindRequest, time: 1020, req: Request{Op: jute.OpReconfig, SessionID: 12, Reject: jute.CodeReconfigDisabled}})
	for _, size := range []int{1, 3, 100} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			packed := pack(es, size)
			single := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
			want := applyAll(t, single, unpack(packed), 3)
			f := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
			var batches []uint64
			f.onBatch = func(_, id, _, _ uint64) { batches = append(batches, id) }
			got := applyAll(t, f, packed, 3)
			if len(got) != len(want) || len(got) != len(es)-1 {
				t.Fatalf("%d results, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Zxid != want[i].Zxid || fmt.Sprint(got[i].Err) != fmt.Sprint(want[i].Err) || got[i].SessionID != want[i].SessionID {
					t.Fatalf("result %d: %+v, want %+v", i, got[i], want[i])
				}
			}
			if got[len(got)-1].Err != jute.CodeReconfigDisabled {
				t.Fatalf("rejected reconfig in a batch: %v", got[len(got)-1].Err)
			}
			// A snapshot is the magic, the raft index applied (which
			// packing changes), then the state.
			a, b := snapshotBytes(t, f), snapshotBytes(t, single)
			if !bytes.Equal(a[:8], b[:8]) || !bytes.Equal(a[16:], b[16:]) {
				t.Fatal("packed and single entries leave different snapshots")
			}
			if f.tree.Load().Digest() != single.tree.Load().Digest() {
				t.Fatal("digests differ")
			}
			if len(batches) == 0 {
				t.Fatal("onBatch never called")
			}
		})
	}
}

// TestNodePacksConcurrentWrites submits many writes at once: they share
// fewer raft entries than there are writes, each still gets its own zxid in
// submit order, and the tree holds them all.
func TestNodePacksConcurrentWrites(t *testing.T) {
	n := openNode(t, t.TempDir(), viaRaft) // raft's pacing; the direct log has its own tests
	defer n.Close()
	s := openSession(t, n)
	before := n.raft.LastIndex()
	const writes = 500
	var futures []*Future
	for i := range writes {
		body := createBody(fmt.Sprintf("/p%d", i))
		futures = append(futures, n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: body}))
	}
	var last int64
	for i, f := range futures {
		r := f.Wait()
		if r.Err != nil {
			t.Fatalf("create %d: %v", i, r.Err)
		}
		if r.Zxid != last+1 && last != 0 {
			t.Fatalf("create %d: zxid 0x%x after 0x%x, want consecutive zxids in submit order", i, r.Zxid, last)
		}
		last = r.Zxid
	}
	entries := n.raft.LastIndex() - before
	if entries >= writes {
		t.Fatalf("%d writes took %d raft entries: nothing was packed", writes, entries)
	}
	if got := n.Tree().NodeCount(); got < writes {
		t.Fatalf("%d znodes, want at least %d", got, writes)
	}
	t.Logf("%d writes in %d raft entries", writes, entries)
}

// TestNodeForwardedBatchFailsOnClose checks that requests queued behind
// batches in flight are answered, not left hanging, when the node closes.
func TestNodeForwardedBatchFailsOnClose(t *testing.T) {
	forBothLogs(t, func(t *testing.T, opts ...func(*Config)) {
		n := openNode(t, t.TempDir(), opts...)
		var waits []func() error
		for i := range 200 {
			waits = append(waits, n.SubmitFor(n.BootID()+1, uint64(i+1), &Request{Op: jute.OpCreateSession, Timeout: 30000}))
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			var wg sync.WaitGroup
			for _, w := range waits {
				wg.Go(func() { _ = w() })
			}
			wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("forwarded requests still waiting after Close")
		}
		if err := n.SubmitFor(1, 1, &Request{Op: jute.OpCreateSession})(); err != ErrStopped {
			t.Fatalf("SubmitFor after Close: %v, want ErrStopped", err)
		}
	})
}

// TestNodeBatchPacingSettles checks that the pacing does not wedge: after
// rounds of concurrent writes, nothing stays queued and no batch stays in
// flight once every write completed.
func TestNodeBatchPacingSettles(t *testing.T) {
	n := openNode(t, t.TempDir(), viaRaft) // raft's pacing; the direct log has its own tests
	defer n.Close()
	s := openSession(t, n)
	for round := range 3 {
		var fs []*Future
		for i := range 50 {
			body := createBody(fmt.Sprintf("/r%d-%d", round, i))
			fs = append(fs, n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: body}))
		}
		waitAll(t, fs)
		// A batch lands just after its last request completed: wait
		// for that, and fail if the pacing stays wedged.
		deadline := time.Now().Add(10 * time.Second)
		for {
			n.submitMu.Lock()
			inflight, queued := len(n.batch.inflight), len(n.batch.queue)
			n.submitMu.Unlock()
			if queued == 0 && inflight == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d queued, %d in flight 10 s after every write completed", round, queued, inflight)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// failedFuture is a raft future that failed, as for a leader that lost
// its leadership with the batch in flight.
type failedFuture struct{ err error }

func (f failedFuture) Error() error          { return f.err }
func (f failedFuture) Index() uint64         { return 0 }
func (f failedFuture) Response() interface{} { return nil }

// TestNodeBatchLandsOnFailure checks what a batch raft failed does: its
// own requests fail with ErrNotLeader, its forwarded ones are answered
// alike, its flight ends, and the requests queued behind it are proposed.
func TestNodeBatchLandsOnFailure(t *testing.T) {
	n := openNode(t, t.TempDir(), viaRaft) // raft's pacing; the direct log has its own tests
	defer n.Close()
	seq, own := n.Register()
	fwd := make(chan error, 1)
	n.submitMu.Lock()
	n.batch.nextID++
	id := n.batch.nextID
	for range n.maxInflight {
		n.batch.inflight[id] = false
		id++
	}
	n.submitMu.Unlock()
	// The pacing is full: this request waits in the queue.
	waiting := n.Submit(&Request{Op: jute.OpCreateSession, Timeout: 30000})
	n.submitMu.Lock()
	if len(n.batch.queue) != 1 {
		n.submitMu.Unlock()
		t.Fatalf("%d requests queued behind a full pacing, want 1", len(n.batch.queue))
	}
	n.submitMu.Unlock()
	n.applyq <- pendingApply{af: failedFuture{raft.ErrLeadershipLost}, batch: id - uint64(n.maxInflight), own: []ownReq{{seq: seq}}, forwarded: []chan error{fwd}}
	waitAll(t, []*Future{own, waiting})
	if err := own.Result().Err; err != ErrNotLeader {
		t.Fatalf("own request of the failed batch: %v, want ErrNotLeader", err)
	}
	if err := <-fwd; err != ErrNotLeader {
		t.Fatalf("forwarded request of the failed batch: %v, want ErrNotLeader", err)
	}
	if r := waiting.Result(); r.Err != nil || r.SessionID == 0 {
		t.Fatalf("request queued behind the failed batch: %+v, want it proposed and applied", r)
	}
}

// forBothLogs runs fn on a standalone node whose writes go through raft and
// on one with the direct log (solo.go).
func forBothLogs(t *testing.T, fn func(t *testing.T, opts ...func(*Config))) {
	t.Run("raft", func(t *testing.T) { fn(t, viaRaft) })
	t.Run("direct", func(t *testing.T) { fn(t) })
}

// waitAll waits for every future, failing the test after 20 s.
func waitAll(t *testing.T, fs []*Future) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, f := range fs {
		select {
		case <-f.Done():
		case <-ctx.Done():
			t.Fatalf("request %d of %d never completed", i, len(fs))
		}
	}
}

// TestNodeSnapshotsAfterSnapCountWrites checks that SnapshotThreshold
// (snapCount) counts writes, not raft entries: 200 packed writes in a few
// entries still make a snapshot with a threshold of 50.
func TestNodeSnapshotsAfterSnapCountWrites(t *testing.T) {
	forBothLogs(t, func(t *testing.T, opts ...func(*Config)) {
		n := openNode(t, t.TempDir(), append(opts, func(c *Config) { c.SnapshotThreshold = 50 })...)
		defer n.Close()
		s := openSession(t, n)
		var fs []*Future
		for i := range 200 {
			body := createBody(fmt.Sprintf("/s%d", i))
			fs = append(fs, n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: body}))
		}
		waitAll(t, fs)
		if entries, _ := strconv.ParseUint(n.Stats().Raft["last_log_index"], 10, 64); entries >= 50 {
			t.Fatalf("200 concurrent writes took %d raft entries: not packed, and raft's own threshold would snapshot", entries)
		}
		deadline := time.Now().Add(20 * time.Second)
		for n.LastSnapshotZxid() < fs[100].Result().Zxid {
			if time.Now().After(deadline) {
				t.Fatalf("no snapshot past zxid 0x%x after 200 writes with snapCount 50 (last at 0x%x)", fs[100].Result().Zxid, n.LastSnapshotZxid())
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

func TestFutureOnComplete(t *testing.T) {
	// Set before completion, the hook runs once, after Done closed, with
	// the result in place; set after, it is refused and never runs.
	f := newFuture()
	ran := 0
	if !f.OnComplete(func() {
		ran++
		select {
		case <-f.Done():
		default:
			t.Error("hook ran before Done closed")
		}
		if f.Result().Zxid != 7 {
			t.Errorf("hook saw zxid %d, want 7", f.Result().Zxid)
		}
	}) {
		t.Fatal("OnComplete on a pending future refused")
	}
	f.complete(Result{Zxid: 7})
	if ran != 1 {
		t.Fatalf("hook ran %d times, want 1", ran)
	}
	done := FailedFuture(ErrNotLeader)
	if done.OnComplete(func() { t.Error("hook of a completed future ran") }) {
		t.Fatal("OnComplete on a completed future accepted")
	}
}

// TestSyncCoversQueuedWrites: a sync answers for every write the leader
// took before it, those still waiting in the batch queue behind a batch in
// flight included: when Sync returns, each of them has applied. (A
// barrier straight into raft's log overtook the queue; a client that
// resumed its session elsewhere and synced then missed its own create.)
func TestSyncCoversQueuedWrites(t *testing.T) {
	forBothLogs(t, func(t *testing.T, opts ...func(*Config)) {
		n := openNode(t, t.TempDir(), opts...)
		defer n.Close()
		s := openSession(t, n)
		for round := range 20 {
			var futures []*Future
			for i := range 200 {
				body := createBody(fmt.Sprintf("/s%d-%d", round, i))
				futures = append(futures, n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: body}))
			}
			if err := n.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i, f := range futures {
				select {
				case <-f.Done():
				default:
					t.Fatalf("round %d: create %d submitted before the sync has not applied when the sync returned", round, i)
				}
			}
		}
	})
}

// TestSyncStormSharesBarriers: thousands of syncs at once, beside a stream
// of writes, all return, and they share raft barriers instead of putting
// one entry each into the log. Each sync holding submitMu while it put its
// own barrier into raft filled raft's FSM channel while the FSM waited for
// submitMu, and the leader deadlocked in a 100,000-session reattach storm.
func TestSyncStormSharesBarriers(t *testing.T) {
	n := openNode(t, t.TempDir(), viaRaft) // raft's pacing; the direct log has its own tests
	defer n.Close()
	s := openSession(t, n)
	before := n.raft.LastIndex()
	const syncs, writers, writes = 4000, 8, 100
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, syncs+writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				body := createBody(fmt.Sprintf("/w%d-%d", w, i))
				if r := n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: body}).Wait(); r.Err != nil {
					errs <- r.Err
					return
				}
			}
		}()
	}
	for range syncs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Sync(ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("sync or write failed (a deadlock ends in the context's deadline): %v", err)
	}
	entries := n.raft.LastIndex() - before
	if entries >= syncs {
		t.Errorf("%d syncs and %d writes added %d raft entries: the syncs did not share barriers", syncs, writers*writes, entries)
	}
	t.Logf("%d syncs and %d writes: %d raft entries", syncs, writers*writes, entries)
}

// TestNoPokeWhileFsyncSlow: a poke is due after a batch of other members'
// requests lands with nothing behind it, unless the log's last fdatasync
// took raft's CommitTimeout or longer: then raft's own commit message comes
// sooner than a poke, whose entry would queue the next batch behind one
// more slow fdatasync.
func TestNoPokeWhileFsyncSlow(t *testing.T) {
	n := openNode(t, t.TempDir())
	defer n.Close()
	tests := []struct {
		lastSync time.Duration
		want     bool
	}{
		{0, true},
		{n.commitTimeout / 2, true},
		{n.commitTimeout, false},
		{2 * time.Second, false},
	}
	for _, tt := range tests {
		n.submitMu.Lock()
		n.batch.poke = true
		got := n.pokeDueAfter(tt.lastSync)
		n.batch.poke = false
		n.submitMu.Unlock()
		if got != tt.want {
			t.Errorf("last fdatasync %v (CommitTimeout %v): poke due %v, want %v", tt.lastSync, n.commitTimeout, got, tt.want)
		}
	}
}

// openSession opens a 30 s session on n for a test's writes.
func openSession(t *testing.T, n *Node) Result {
	t.Helper()
	s := n.Submit(&Request{Op: jute.OpCreateSession, Timeout: 30000}).Wait()
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	return s
}

// createBody is a create request for path, open to anyone.
func createBody(path string) []byte {
	return jute.Encode(&jute.CreateRequest{Path: path, Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}})
}
