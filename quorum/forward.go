// The follower side of forwarding: the ordered queue of writes, touches
// and syncs this member sends to the leader, and what becomes of them when
// the leader changes or a write fails (forwarder, run). The protocol's
// message kinds are here; its framing and stream are in forward_stream.go,
// the leader's side in forward_leader.go.

package quorum

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
)

// Message kinds of the forwarding protocol on the election port. Every
// message is a 4-byte big-endian length, then the kind byte and a jute
// body.
const (
	// msgWrite (follower → leader): origin bootID, seq, zab.Request.
	msgWrite byte = 1
	// msgTouch (follower → leader): a vector of session ids, then the
	// follower's applied raft index, applied zxid and whether it serves
	// (older members send the index alone, or nothing).
	msgTouch byte = 2
	// msgSync (follower → leader): a sync id.
	msgSync byte = 3
	// msgWriteFailed (leader → follower): seq of a write the leader could
	// not commit.
	msgWriteFailed byte = 4
	// msgSynced (leader → follower): sync id, ok flag, applied index.
	msgSynced byte = 5
	// msgHello (follower → leader), first on every stream: the
	// follower's myid, so the leader knows which members are in touch.
	msgHello byte = 6
	// msgProgress (leader → follower), at most once a progressInterval:
	// the leader's Progress table (progress.go). Followers of an older
	// version ignore kinds they do not know.
	msgProgress byte = 7
	// msgCommitted (leader → follower): the leader's myid, a raft term
	// and index: the entry at index, which the leader proposed as leader
	// of that term, committed (commitnotice.go). Followers of an older
	// version ignore it.
	msgCommitted byte = 10
)

// fwdItem is one thing the forwarder sends, in queue order.
type fwdItem struct {
	kind    byte
	seq     uint64
	f       *zab.Future
	req     *zab.Request
	touches []int64
	syncID  uint64
}

type syncResult struct {
	index uint64
	err   error
}

// lostTTL is how long the forwarder remembers a connection whose write was
// lost. The server closes such a connection as soon as it answers the lost
// write, so a minute is far more than any later write of it needs.
const lostTTL = time.Minute

// forwarder owns this member's single ordered stream to the leader.
type forwarder struct {
	m  *Member
	q  chan fwdItem
	mu struct {
		sync.Mutex
		touches  map[int64]struct{}
		syncs    map[uint64]chan syncResult
		nextSync uint64
		// lost holds the client connections (zab.Request.Origin) that
		// had a write fail here, and when: their later writes are
		// refused, so none lands after an earlier one was lost.
		lost      map[uint64]time.Time
		lastPrune time.Time
		// progress is the leader's last progress table, received at
		// progressAt (msgProgress).
		progress   Progress
		progressAt time.Time
	}
	// lostCount mirrors len(mu.lost), so that lostWrite costs no lock
	// while no write was lost (nearly always).
	lostCount atomic.Int64
	// streamOpen is set while the forwarder has a stream to a leader: a
	// member that has just become leader sends its writes through the
	// forwarder until that stream to the old leader is closed and its
	// unanswered writes are failed.
	streamOpen atomic.Bool
	brokenCh   chan *fconn
	stop       chan struct{}
	wg         sync.WaitGroup
	// writes counts writes queued here and not yet handed on (to the
	// leader's stream, or to the local log once this member leads). A
	// new leader's own writes wait until it is zero (awaitQueuedWrites),
	// so one connection's writes keep their order across the change.
	writes atomic.Int64
}

func newForwarder(m *Member) *forwarder {
	f := &forwarder{m: m, q: make(chan fwdItem, 4096), brokenCh: make(chan *fconn, 4), stop: make(chan struct{})}
	f.mu.touches = map[int64]struct{}{}
	f.mu.syncs = map[uint64]chan syncResult{}
	f.mu.lost = map[uint64]time.Time{}
	f.wg.Add(1)
	go f.run()
	return f
}

func (f *forwarder) enqueue(it fwdItem) bool {
	select {
	case f.q <- it:
		return true
	case <-f.stop:
		return false
	}
}

// awaitQueuedWrites waits until no write is queued here any more (at most
// d), and reports whether the queue emptied. Only a leader calls it:
// nothing new is queued then, so the queue drains.
func (f *forwarder) awaitQueuedWrites(d time.Duration) bool {
	for deadline := time.Now().Add(d); f.writes.Load() > 0; {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-time.After(time.Millisecond):
		case <-f.stop:
			return false
		}
	}
	return true
}

// failQueuedWrites fails every write waiting in the queue, keeping the
// touches and syncs (which it re-queues). Only the run goroutine calls it.
func (f *forwarder) failQueuedWrites() {
	var keep []fwdItem
	for done := false; !done; {
		select {
		case it := <-f.q:
			if it.kind == msgWrite {
				f.writes.Add(-1)
				f.failItem(it, zab.ErrNotLeader)
			} else {
				keep = append(keep, it)
			}
		default:
			done = true
		}
	}
	for _, it := range keep {
		select {
		case f.q <- it:
		default:
			f.failItem(it, zab.ErrNotLeader)
		}
	}
}

// markLost records that a write of connection origin failed here.
func (f *forwarder) markLost(origin uint64) {
	if origin == 0 {
		return
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.lost[origin] = now
	f.pruneLost(now)
}

// pruneLost forgets the connections that lost a write more than lostTTL
// ago, at most once per lostTTL/4. The caller holds f.mu.
func (f *forwarder) pruneLost(now time.Time) {
	if now.Sub(f.mu.lastPrune) >= lostTTL/4 {
		f.mu.lastPrune = now
		for o, t := range f.mu.lost {
			if now.Sub(t) > lostTTL {
				delete(f.mu.lost, o)
			}
		}
	}
	f.lostCount.Store(int64(len(f.mu.lost)))
}

// lostWrite reports whether connection origin had a write fail here: its
// later writes must fail too.
func (f *forwarder) lostWrite(origin uint64) bool {
	if origin == 0 || f.lostCount.Load() == 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruneLost(time.Now())
	_, ok := f.mu.lost[origin]
	return ok
}

func (f *forwarder) write(seq uint64, fut *zab.Future, r *zab.Request) {
	f.writes.Add(1)
	if !f.enqueue(fwdItem{kind: msgWrite, seq: seq, f: fut, req: r}) {
		f.writes.Add(-1)
		f.m.node.Fail(seq, zab.ErrStopped)
	}
}

func (f *forwarder) touch(id int64) {
	f.mu.Lock()
	f.mu.touches[id] = struct{}{}
	f.mu.Unlock()
}

func (f *forwarder) sync(ctx context.Context) (uint64, error) {
	ch := make(chan syncResult, 1)
	f.mu.Lock()
	f.mu.nextSync++
	id := f.mu.nextSync
	f.mu.syncs[id] = ch
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.mu.syncs, id)
		f.mu.Unlock()
	}()
	if !f.enqueue(fwdItem{kind: msgSync, syncID: id}) {
		return 0, zab.ErrStopped
	}
	select {
	case r := <-ch:
		return r.index, r.err
	case <-ctx.Done():
		return 0, fmt.Errorf("quorum: sync: %w", ctx.Err())
	}
}

func (f *forwarder) syncDone(id uint64, r syncResult) {
	f.mu.Lock()
	ch := f.mu.syncs[id]
	delete(f.mu.syncs, id)
	f.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// failSyncs fails every sync waiting for an answer.
func (f *forwarder) failSyncs() {
	f.mu.Lock()
	syncs := f.mu.syncs
	f.mu.syncs = map[uint64]chan syncResult{}
	f.mu.Unlock()
	for _, ch := range syncs {
		ch <- syncResult{err: zab.ErrNotLeader}
	}
}

// leaderGone probes, on a goroutine that close waits for, whether the
// leader's process is gone after its stream ended with err
// (leadergone.go). Only the forwarder's own goroutines call it, so close
// cannot be waiting yet.
func (f *forwarder) leaderGone(leader raft.ServerID, err error) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.m.leaderStreamEnded(f.stop, leader, err)
	}()
}

func (f *forwarder) close() {
	close(f.stop)
	f.wg.Wait()
}

// run is the forwarder's loop: it sends queued items on the stream to the
// current leader, batches touches every half tick, and fails what it
// cannot deliver.
func (f *forwarder) run() {
	defer f.wg.Done()
	tick := time.NewTicker(f.m.timing.TouchInterval)
	defer tick.Stop()
	var c *fconn
	closeConn := func() {
		if c == nil {
			return
		}
		c.nc.Close()
		lost := false
		for _, it := range c.inflight {
			if !isDone(it.f) {
				lost = true
				f.markLost(it.req.Origin)
			}
			f.m.node.Fail(it.seq, zab.ErrNotLeader)
		}
		f.failSyncs()
		c = nil
		f.streamOpen.Store(false)
		if lost {
			// Writes went down with the leader. Fail the writes queued
			// behind them too: a connection's later write must not
			// reach the new leader ahead of a lost earlier one.
			f.failQueuedWrites()
		}
	}
	defer func() {
		closeConn()
		for {
			select {
			case it := <-f.q:
				if it.kind == msgWrite {
					f.writes.Add(-1)
				}
				f.failItem(it, zab.ErrStopped)
			default:
				return
			}
		}
	}()
	for {
		var it fwdItem
		select {
		case <-f.stop:
			return
		case b := <-f.brokenCh:
			if b == c {
				closeConn()
			}
			continue
		case <-tick.C:
			if c != nil {
				if l := f.m.node.Leader(); l != "" && l != c.target {
					// A new leader: the old stream's unanswered writes
					// are lost (or applied already), and this member
					// may lead and submit directly again.
					closeConn()
				}
			}
			f.mu.Lock()
			if len(f.mu.touches) == 0 && (f.m.node.IsLeader() || f.m.node.Leader() == "") {
				f.mu.Unlock()
				continue
			}
			// An empty batch still tells the leader this member is in
			// touch (reconfig's synced-quorum test).
			ids := make([]int64, 0, len(f.mu.touches))
			for id := range f.mu.touches {
				ids = append(ids, id)
			}
			clear(f.mu.touches)
			f.mu.Unlock()
			it = fwdItem{kind: msgTouch, touches: ids}
		case it = <-f.q:
		}
		if it.kind == msgWrite && isDone(it.f) {
			f.writes.Add(-1)
			continue
		}
		c = f.deliver(c, it, closeConn)
		if it.kind == msgWrite {
			f.writes.Add(-1)
		}
		if c != nil && len(f.q) == 0 {
			if err := c.w.Flush(); err != nil {
				closeConn()
			}
		}
	}
}

func isDone(f *zab.Future) bool {
	if f == nil {
		return false
	}
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

func (f *forwarder) failItem(it fwdItem, err error) {
	switch it.kind {
	case msgWrite:
		f.markLost(it.req.Origin)
		f.m.node.Fail(it.seq, err)
	case msgSync:
		f.syncDone(it.syncID, syncResult{err: err})
	}
}

func (f *forwarder) log() *zap.Logger { return f.m.log }

// local handles an item while this member itself leads.
func (f *forwarder) local(it fwdItem) {
	n := f.m.node
	switch it.kind {
	case msgWrite:
		if it.req.Op == jute.OpReconfig {
			go f.m.leaderReconfig(n.BootID(), it.seq, it.req, func(err error) { n.Fail(it.seq, err) })
			return
		}
		wait := n.SubmitFor(n.BootID(), it.seq, it.req)
		go func() {
			if err := wait(); err != nil {
				f.markLost(it.req.Origin)
				n.Fail(it.seq, zab.ErrNotLeader)
			}
		}()
	case msgTouch:
		for _, id := range it.touches {
			n.Touch(id)
		}
	case msgSync:
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), f.m.timing.HoldTimeout)
			defer cancel()
			idx, err := n.SyncIndex(ctx)
			f.syncDone(it.syncID, syncResult{index: idx, err: err})
		}()
	}
}
