package zab

import (
	"sync"
	"time"

	"github.com/zkd/zkd/jute"
)

// Packing: the leader puts the client requests that wait for the log into
// one raft entry (kindBatch) rather than one entry each. Every request in
// the entry still gets its own zxid when it applies, in order, so the tree
// and the zxids are what one entry per request would give. What packing
// saves is raft's cost per entry: its future, its place in every append
// and AppendEntries message, its encoding to each follower, its commit
// bookkeeping and its apply call.
//
// A batch is proposed as soon as a request arrives while none of this
// member's batches is in flight (proposed, not yet committed here or
// failed); a lone client never waits for company. While one is in flight,
// the requests wait, and go as the next batch once the one in flight
// lands (commits: the apply goroutine proposes them before it applies the
// batch that landed), or sooner, while fewer than Config.MaxInflightBatches are in
// flight, once as many wait as the last batch held: a second batch then
// overlaps the first one's fsync and apply without splitting the load into
// one large batch and one of a single request, which would double the
// fsyncs for the same writes. Under load the log holds one entry per group
// commit.

// Defaults for the packing knobs.
const (
	// DefaultMaxInflightBatches keeps one batch being made durable while
	// the next one is on its way: a standalone member's default, where a
	// batch's flight is one fdatasync and its apply.
	DefaultMaxInflightBatches = 2
	// DefaultEnsembleMaxInflightBatches is a member of an ensemble's
	// default. There a batch's flight is a round trip and a follower's
	// fdatasync, and a second batch in flight mostly splits the waiting
	// writes into two entries, each paying raft's cost per entry on every
	// member (an AppendEntries, which a follower handles one at a time
	// with an fdatasync each, its encoding, a commit notice): on this
	// project's 2-core machine, 3 members and 16 go-zk clients, one batch
	// in flight made 20% fewer fdatasyncs and gave create+delete 8% and
	// lock acquisitions 14% more per second, setData the same, over six
	// interleaved runs each (docs/bench/2026-11-27-inflight).
	DefaultEnsembleMaxInflightBatches = 1
	// maxBatchBytes bounds the request bodies packed into one entry; a
	// larger request goes alone.
	maxBatchBytes = 4 << 20
)

// queued is a request waiting to be packed.
type queued struct {
	origin, seq uint64
	req         Request
	// forwarded carries a SubmitFor's outcome: nil once the batch
	// committed, else why it did not. Nil for this member's own Submit,
	// whose Future the FSM or completeLoop completes.
	forwarded chan error
	at        time.Time
}

// batchState is the in-flight bookkeeping, guarded by Node.submitMu.
type batchState struct {
	queue    []queued
	spare    []queued // the previous queue's array, reused
	bytes    int
	nextID   uint64
	inflight map[uint64]bool // batch ids proposed and not yet landed: whether they carry other members' requests
	// poke: since the last batch was proposed, a batch landed whose
	// commit the followers must hear of (commitnotice.go): any batch with
	// commit notices, one with other members' requests without.
	poke bool
	// landed is the newest of this member's batches that committed, for
	// a commit notice.
	landed   struct{ index, term uint64 }
	lastSize int  // requests in the last batch proposed
	closed   bool // the node stopped: requests fail at once
	holding  bool // a leadership hand-off is under way: nothing is proposed (handoff.go)
	// rerouting: leadership was handed off, and this member's own
	// writes that reach the queue go to Config.Reroute instead, until it
	// leads again (handoff.go).
	rerouting bool
	// queuedTotal and proposedTotal count requests ever queued and ever
	// proposed; a barrier waits (on flushed) until proposedTotal reaches
	// the queuedTotal it saw, so it follows every write taken before it
	// without proposing outside the pacing.
	queuedTotal, proposedTotal uint64
	flushed                    *sync.Cond // on Node.submitMu; broadcast by flushLocked, failQueued and, while holding, batchLanded
}

// enqueueLocked adds a request and proposes a batch if the pacing allows.
// The caller holds submitMu.
func (n *Node) enqueueLocked(q queued) {
	if n.batch.closed {
		n.failItem(q, ErrStopped)
		return
	}
	if n.batch.rerouting && q.forwarded == nil && q.origin == n.bootID {
		n.cfg.Reroute(q.seq, n.pending.get(q.seq), &q.req)
		return
	}
	if q.req.Op == jute.OpCreateSession {
		q.req.SessionID = n.nextSession
		n.nextSession++
	}
	n.batch.queue = append(n.batch.queue, q)
	n.batch.bytes += len(q.req.Body)
	n.batch.queuedTotal++
	if n.solo.active {
		n.soloWakeLocked()
		return
	}
	if n.mayFlushLocked() {
		n.flushLocked()
	}
}

// mayFlushLocked reports whether the pacing lets the queued requests go as
// a batch now (see the package comment above). The caller holds submitMu.
func (n *Node) mayFlushLocked() bool {
	b := &n.batch
	switch {
	case len(b.queue) == 0 || b.holding || n.solo.taking || n.solo.active:
		// Held, or the standalone direct log's committer takes them
		// (solo.go).
		return false
	case len(b.inflight) == 0:
		return true
	case len(b.inflight) >= n.maxInflight:
		return false
	}
	return len(b.queue) >= b.lastSize || b.bytes >= maxBatchBytes
}

// flushLocked proposes the queued requests as one entry (up to
// maxBatchBytes of bodies). The caller holds submitMu.
func (n *Node) flushLocked() {
	b := &n.batch
	if len(b.queue) == 0 {
		return
	}
	take, size := b.next()
	items := b.queue[:take]
	b.lastSize = take
	b.poke = false // this batch's AppendEntries carries the commit index
	b.nextID++
	id := b.nextID
	e := &entry{kind: kindBatch, origin: n.bootID, seq: id, time: time.Now().UnixMilli(), batch: items}
	n.markDigest(e)
	data := e.encode()
	af := n.raft.Apply(data, 0)
	n.noteProposed(len(data), len(items))
	remote := false
	p := pendingApply{af: af, batch: id, at: time.Now()}
	if !n.standalone {
		// Kept for a hand-off's requeue, which a lone member never
		// makes; standalone, holding every batch's bytes until it
		// applied cost setData about 9% of its rate (A/B, 2026-11-27).
		p.data = data
	}
	for _, it := range items {
		remote = remote || it.origin != n.bootID
		if it.forwarded != nil {
			p.forwarded = append(p.forwarded, it.forwarded)
		} else if it.origin == n.bootID {
			p.own = append(p.own, ownReq{seq: it.seq, origin: it.req.Origin})
		}
	}
	b.inflight[id] = remote
	b.proposedTotal += uint64(take)
	b.flushed.Broadcast()
	n.applyq <- p
	rest := b.queue[take:]
	if len(rest) == 0 {
		clear(b.queue)
		b.queue, b.spare = b.spare[:0], b.queue[:0]
		b.bytes = 0
		return
	}
	b.queue = append(b.spare[:0], rest...)
	clear(items)
	b.spare = items[:0]
	b.bytes -= size
}

// next returns how many of the queued requests the next batch takes, and
// the size of their bodies: up to maxBatchBytes, and at least one. The
// caller holds submitMu.
func (b *batchState) next() (take, size int) {
	for take < len(b.queue) && (take == 0 || size+len(b.queue[take].req.Body) <= maxBatchBytes) {
		size += len(b.queue[take].req.Body)
		take++
	}
	return take, size
}

// batchLanded ends batch id's flight and proposes what waits. The apply
// goroutine calls it with direct set as the batch commits, before its
// requests apply, with the entry's raft index and term: it proposes the
// next batch itself, so that batch's fsync overlaps this one's apply and
// replies without waking the proposer first, and tells the followers of
// the commit if nothing follows. (raft.Apply does not block it: every
// Apply is made under submitMu, and the pacing keeps at most
// MaxInflightBatches batches and the odd leader entry in raft's apply
// channel, far below its capacity.) completeLoop calls it for a batch
// that failed, and hands the proposing to the proposer goroutine.
func (n *Node) batchLanded(id uint64, direct bool, index, term uint64) {
	n.submitMu.Lock()
	b := &n.batch
	remote, ok := b.inflight[id]
	delete(b.inflight, id)
	if b.holding || n.solo.taking {
		b.flushed.Broadcast() // release waits for the batches in flight
	}
	if ok && !n.standalone && (remote || n.cfg.OnCommitted != nil) {
		b.poke = true
	}
	if index > b.landed.index {
		b.landed.index, b.landed.term = index, term
	}
	if ok && direct {
		for n.mayFlushLocked() {
			n.flushLocked()
		}
	}
	tellIndex, tellTerm := n.takeNoticeLocked()
	more := ok && (n.mayFlushLocked() || n.pokeDueLocked())
	n.submitMu.Unlock()
	if tellIndex > 0 {
		n.cfg.OnCommitted(tellTerm, tellIndex)
	}
	if more {
		select {
		case n.proposeWake <- struct{}{}:
		default:
		}
	}
}

// proposeLoop proposes the requests queued behind batches in flight once
// one of them lands, and pokes the followers after a batch of theirs.
//
// The poke: a follower applies, and so answers, a request it forwarded
// only once it learns that the leader committed it. With commit notices
// (Config.OnCommitted), batchLanded tells it at once. Without, the leader
// appends a raft barrier, which reaches the followers with the commit
// index: one more small entry and fsync on every member, instead of
// waiting up to two raft CommitTimeouts.
func (n *Node) proposeLoop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case <-n.proposeWake:
		}
		n.submitMu.Lock()
		for n.mayFlushLocked() {
			n.flushLocked()
		}
		tell, term := n.takeNoticeLocked()
		if n.cfg.OnCommitted == nil && n.pokeDueLocked() {
			n.batch.poke = false
			// Under submitMu, so it enters the log in order with the
			// batches; raft.Barrier only queues it.
			n.raft.Barrier(0)
		}
		n.submitMu.Unlock()
		if tell > 0 {
			n.cfg.OnCommitted(term, tell)
		}
	}
}

// takeNoticeLocked returns the index and term of the commit to tell the
// followers of now, and clears the poke; index 0 when none is due or
// commit notices are off. The caller holds submitMu and calls
// Config.OnCommitted once it released it.
func (n *Node) takeNoticeLocked() (index, term uint64) {
	if n.cfg.OnCommitted == nil || !n.pokeDueLocked() {
		return 0, 0
	}
	n.batch.poke = false
	return n.batch.landed.index, n.batch.landed.term
}

// pokeDueLocked reports whether the followers must be told of a commit:
// a batch landed, and no batch follows that would carry it. For the
// barrier, not while the log's fdatasync takes CommitTimeout or longer:
// raft sends the commit within one to two CommitTimeouts anyway, and a
// barrier, an entry of its own, would hold the next batch behind one
// more slow fdatasync (a leader whose disk stalls for a second per fsync
// took two per write). A commit notice touches no disk. The caller holds
// submitMu.
func (n *Node) pokeDueLocked() bool { return n.pokeDueAfter(n.wal.LastSync()) }

// pokeDueAfter is pokeDueLocked with the log's last fdatasync having
// taken lastSync.
func (n *Node) pokeDueAfter(lastSync time.Duration) bool {
	b := &n.batch
	if !b.poke || len(b.queue) != 0 || len(b.inflight) != 0 {
		return false
	}
	return n.cfg.OnCommitted != nil || lastSync < n.commitTimeout
}

// failQueued stops the packing and fails every request still waiting to
// be packed or in a batch nobody will complete; on Close, after the
// node's goroutines ended.
func (n *Node) failQueued(err error) {
	n.submitMu.Lock()
	n.batch.closed = true
	q := n.batch.queue
	n.batch.queue = nil
	n.batch.flushed.Broadcast()
	n.submitMu.Unlock()
	for _, it := range q {
		n.failItem(it, err)
	}
	n.drainApplyq(err)
}

// drainApplyq fails the requests of every batch still waiting in applyq
// with err, once nobody will wait on its raft future.
func (n *Node) drainApplyq(err error) {
	for {
		select {
		case p := <-n.applyq:
			for _, o := range p.own {
				n.fail(o.seq, err)
			}
			for _, ch := range p.forwarded {
				ch <- err
			}
		default:
			return
		}
	}
}

// failItem fails one request that never made it into a batch.
func (n *Node) failItem(it queued, err error) {
	if it.forwarded != nil {
		it.forwarded <- err
	} else if it.origin == n.bootID {
		n.fail(it.seq, err)
	}
}

// encodeBatch writes the packed requests: their count, then each one's
// origin, seq and Request.
func encodeBatch(enc *jute.Encoder, items []queued) {
	enc.WriteInt(int32(len(items)))
	for i := range items {
		enc.WriteLong(int64(items[i].origin))
		enc.WriteLong(int64(items[i].seq))
		items[i].req.Encode(enc)
	}
}

// packed is one request of a decoded kindBatch entry.
type packed struct {
	origin, seq uint64
	req         Request
}

// decodeBatch reads what encodeBatch wrote; errors stick in d.
func decodeBatch(d *jute.Decoder) []packed {
	n := d.VectorLen(8 + 8 + 4 + 8 + 4 + 4 + 4)
	out := make([]packed, 0, max(n, 0))
	for i := 0; i < n && d.Err() == nil; i++ {
		var p packed
		p.origin = uint64(d.ReadLong())
		p.seq = uint64(d.ReadLong())
		p.req.decodeIn(d)
		out = append(out, p)
	}
	return out
}
