package zab

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// The direct log: a standalone member's write path once it has started.
//
// A standalone member is its own quorum: an entry is committed once it is
// on its own disk. Through raft, each batch still costs two goroutine
// hand-offs before its replies go out (raft's leaderLoop appends and
// commits it, then raft's runFSM applies it), and on a 2-core machine
// those hand-offs, not the disk or the CPU, set the rate at 16 clients
// (docs/bench/2026-11-27-latency). So once raft has started, elected this
// member and applied its log, the member takes its log over (takeOver):
// one goroutine, the committer, packs what waits, appends it to the same
// segment log raft uses, in raft's own record format, with one fdatasync,
// applies it and writes the replies: one hand-off per batch, from the
// connection that queued the request to the committer.
//
// Raft stays: it recovers the member at start (its snapshot, then the log
// tail the committer wrote, which raft replays as its own entries), and
// the data directory is one raft would write, so a member started later
// without the direct log, or by an older zkd, reads it. After the takeover
// raft appends nothing more: the committer is the log's only writer, and
// every other entry (session expiries, sweeps, /zookeeper/config, the
// fencing key) is queued to it. Snapshots are the committer's too
// (soloSnapshot): raft's idea of its last index stopped at the takeover,
// so a raft snapshot would label the tree with the wrong index, and the
// FSM refuses it.

// soloState is the direct log's bookkeeping. active, busy and entries are
// guarded by Node.submitMu; index and term are the committer's, and read
// elsewhere through their atomics.
type soloState struct {
	// active: the takeover is done, every append goes to the committer.
	active bool
	// taking: a takeover is under way; nothing is proposed until it ends.
	taking bool
	// busy: the committer has been woken, or is committing; a flush then
	// only queues.
	busy bool
	// entries are leader entries (propose) waiting for the committer;
	// they go before the queued client requests, as a proposal through
	// raft goes before requests that wait behind a batch in flight.
	entries []*entry
	// appliedTotal counts the client requests the committer has applied
	// (or failed); a barrier waits for it to reach batch.queuedTotal.
	appliedTotal uint64
	// confIndex is the raft index of the membership, for snapshots.
	confIndex uint64

	wake chan struct{}
	// ready is closed once the takeover ended, done or not (WaitReady).
	ready chan struct{}
	// commitMu is held while the committer appends and applies, and by a
	// snapshot: the FSM's image then matches index.
	commitMu  sync.Mutex
	index     atomic.Uint64 // the log's last index
	term      atomic.Uint64 // the term the committer writes its entries in
	snapIndex atomic.Uint64 // the newest snapshot's index
	snapTerm  atomic.Uint64

	// later collects the work completion hooks defer while the
	// committer applies a batch (Later); nil outside that.
	later atomic.Pointer[Later]
	// replies takes each batch's deferred work to soloReplier, in batch
	// order; Close closes it once the committer has stopped.
	replies     chan *Later
	repliesDone chan struct{}
}

// soloReplier runs the work completion hooks deferred while their batch
// applied (the replies' socket writes), batch after batch, so that the
// committer appends the next batch meanwhile. It ends once Close closed
// the channel and everything in it ran.
func (n *Node) soloReplier() {
	defer close(n.solo.repliesDone)
	for l := range n.solo.replies {
		for i, fn := range l.fns {
			fn()
			l.fns[i] = nil
		}
	}
}

// soloDeferFrom is the smallest batch whose replies the committer leaves
// to soloReplier. A batch that large is applied in less time than its
// replies take to write, one socket write each, so the committer does
// better to hand them over (one hand-off per batch) and start the next
// append. With fewer, the hand-off costs more than it saves: on this
// project's 2-core machine (raw zkbench clients, interleaved against a
// build without the replier) deferring the replies of batches from 16
// gave 64 clients about 10% more creates and setData per second (6 of 7
// rounds ahead) and left 16 clients, whose batches hold about 5
// requests, level; deferring every batch's replies cost 16 clients
// 10–15% (docs/bench/2026-11-27-stop32).
const soloDeferFrom = 16

// errSoloSnapshot is the FSM's answer to a snapshot raft asks for once the
// direct log has taken over.
var errSoloSnapshot = errors.New("zab: the standalone member's log is written directly since start; raft's own snapshot would carry a stale index, so the member takes its snapshots itself")

// takeOver waits until raft leads and has applied its log, then makes the
// committer the log's writer. It runs once, on its own goroutine, in a
// standalone member.
func (n *Node) takeOver() {
	defer n.wg.Done()
	defer close(n.solo.ready)
	for n.raft.State() != raft.Leader {
		select {
		case <-n.stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	n.submitMu.Lock()
	defer n.submitMu.Unlock()
	b := &n.batch
	n.solo.taking = true
	defer func() {
		n.solo.taking = false
		// A takeover that failed leaves the writes to raft: propose
		// what queued meanwhile.
		for n.mayFlushLocked() {
			n.flushLocked()
		}
	}()
	for len(b.inflight) > 0 && !b.closed {
		b.flushed.Wait()
	}
	if b.closed {
		return
	}
	// Everything in raft's log applies before the barrier does. It is
	// waited for under submitMu: no batch is in flight, so nothing on
	// raft's apply path takes submitMu (batchLanded runs for batches).
	err := n.awaitRaft(n.raft.Barrier(0))
	if err == nil {
		err = n.cfg.takeoverErr
	}
	if err != nil {
		n.log.Warn("standalone: the direct log did not take over; writes keep going through raft", zap.Error(err))
		return
	}
	last := n.raft.LastIndex()
	confIndex, err := n.configIndex()
	if err != nil {
		n.log.Warn("standalone: the direct log did not take over; writes keep going through raft", zap.Error(err))
		return
	}
	n.solo.confIndex = confIndex
	n.solo.index.Store(last)
	n.solo.term.Store(n.raft.CurrentTerm())
	if s, err := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64); err == nil {
		n.solo.snapIndex.Store(s)
	}
	if s, err := strconv.ParseUint(n.raft.Stats()["last_snapshot_term"], 10, 64); err == nil {
		n.solo.snapTerm.Store(s)
	}
	// Every request raft took has applied: the barrier followed them.
	n.solo.appliedTotal = b.proposedTotal
	n.fsm.setSoloActive()
	n.solo.active = true
	n.log.Debug("standalone: the direct log took over from raft", zap.Uint64("index", last), zap.Uint64("term", n.solo.term.Load()))
	if len(b.queue) > 0 {
		n.soloWakeLocked()
	}
}

// configIndex returns the index of the membership raft uses, which a
// snapshot records (raft's GetConfiguration does not tell it): that of
// the newest configuration entry raft applied (fsm.StoreConfiguration),
// or, when the newest snapshot is later, the one it recorded.
func (n *Node) configIndex() (uint64, error) {
	metas, err := n.snaps.List()
	if err != nil {
		return 0, fmt.Errorf("zab: list snapshots: %w", err)
	}
	index := n.fsm.confIndex.Load()
	if len(metas) > 0 {
		index = max(index, metas[0].ConfigurationIndex)
	}
	if index == 0 {
		return 0, errors.New("zab: no configuration in the log or a snapshot")
	}
	return index, nil
}

// soloWakeLocked has the committer take what waits. The caller holds
// submitMu.
func (n *Node) soloWakeLocked() {
	if n.solo.busy || n.batch.closed {
		return
	}
	n.solo.busy = true
	n.solo.wake <- struct{}{}
}

// soloProposeLocked queues a leader entry for the committer. The caller
// holds submitMu.
func (n *Node) soloProposeLocked(e *entry) {
	n.solo.entries = append(n.solo.entries, e)
	n.soloWakeLocked()
}

// soloLoop is the committer: woken by soloWakeLocked, it commits until
// nothing waits.
func (n *Node) soloLoop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case <-n.solo.wake:
		}
		n.submitMu.Lock()
		for (len(n.batch.queue) > 0 || len(n.solo.entries) > 0) && !n.batch.closed {
			n.soloCommitLocked()
		}
		n.solo.busy = false
		n.submitMu.Unlock()
	}
}

// soloCommitLocked appends the waiting leader entries and one batch of the
// queued requests (up to maxBatchBytes of bodies) with one fdatasync,
// applies them, and so answers them. The caller holds submitMu; it is
// released while the log is written and the entries apply.
func (n *Node) soloCommitLocked() {
	b := &n.batch
	now := time.Now().UnixMilli()
	var logs []*raft.Log
	next := n.solo.index.Load()
	term := n.solo.term.Load()
	add := func(data []byte) {
		next++
		logs = append(logs, &raft.Log{Index: next, Term: term, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()})
	}
	for _, e := range n.solo.entries {
		e.origin = n.bootID
		e.time = now
		data := e.encode()
		n.noteProposed(len(data), 0)
		add(data)
	}
	clear(n.solo.entries)
	n.solo.entries = n.solo.entries[:0]
	take, size := b.next()
	var items []queued
	if take > 0 {
		items = b.queue[:take]
		b.nextID++
		e := &entry{kind: kindBatch, origin: n.bootID, seq: b.nextID, time: now, batch: items}
		n.markDigest(e)
		data := e.encode()
		n.noteProposed(len(data), take)
		add(data)
		b.proposedTotal += uint64(take)
		b.flushed.Broadcast()
		// The requests are encoded: what the failure path below needs
		// of them is their seq, kept in own.
		b.queue = append(b.spare[:0], b.queue[take:]...)
		b.bytes -= size
	}
	n.submitMu.Unlock()

	n.solo.commitMu.Lock()
	err := n.logs.StoreLogs(logs)
	var later *Later
	if err == nil {
		n.solo.index.Store(next)
		if take >= soloDeferFrom {
			later = &Later{fns: make([]func(), 0, take)}
			n.solo.later.Store(later)
		}
		for _, l := range logs {
			n.fsm.apply(l, false)
		}
		n.solo.later.Store(nil)
	}
	n.solo.commitMu.Unlock()
	if later != nil && len(later.fns) > 0 {
		n.solo.replies <- later
	}
	if err == nil {
		// Requests another member forwarded (SubmitFor) learn of their
		// commit; this member's own were answered as they applied.
		for _, it := range items {
			if it.forwarded != nil {
				it.forwarded <- nil
			}
		}
	} else {
		// The disk refused the append (a failed fsync or a full disk
		// stops the member through Config.OnDiskFailure). Nothing of it
		// applied: the requests fail, and the next append reuses the
		// indexes, as raft's would after it stepped down.
		n.log.Error("standalone: log append failed; its writes are refused",
			zap.Uint64("index", next-uint64(len(logs))+1), zap.Int("entries", len(logs)), zap.Error(err))
		err = fmt.Errorf("zab: log append failed: %w", err)
		for _, it := range items {
			n.failItem(it, err)
		}
	}

	n.submitMu.Lock()
	n.solo.appliedTotal += uint64(take)
	b.flushed.Broadcast()
	if take > 0 {
		clear(items)
		b.spare = items[:0]
	}
}

// soloBarrierLocked waits until every request queued so far has applied
// (or failed). The caller holds submitMu.
func (n *Node) soloBarrierLocked() error {
	target := n.batch.queuedTotal
	for n.solo.appliedTotal < target && !n.batch.closed {
		n.batch.flushed.Wait()
	}
	if n.batch.closed {
		return ErrStopped
	}
	return nil
}

// soloSnapshot snapshots the tree at the direct log's last index, stores
// it as raft's snapshot store would, and trims the log behind it, keeping
// Config.TrailingLogs entries, as raft does after its snapshots.
func (n *Node) soloSnapshot() error {
	n.solo.commitMu.Lock()
	index, term := n.solo.index.Load(), n.solo.term.Load()
	if index <= n.solo.snapIndex.Load() {
		n.solo.commitMu.Unlock()
		return raft.ErrNothingNewToSnapshot
	}
	snap, err := n.fsm.snapshot()
	n.solo.commitMu.Unlock()
	if err != nil {
		return err
	}
	defer snap.Release()
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return fmt.Errorf("zab: snapshot: raft's configuration: %w", err)
	}
	sink, err := n.snaps.Create(raft.SnapshotVersionMax, index, term, cf.Configuration(), n.solo.confIndex, n.transport)
	if err != nil {
		return fmt.Errorf("zab: snapshot at index %d: %w", index, err)
	}
	if err := snap.Persist(sink); err != nil {
		return fmt.Errorf("zab: snapshot at index %d: %w", index, err)
	}
	n.solo.snapIndex.Store(index)
	n.solo.snapTerm.Store(term)
	// Trim as raft's compactLogs does: up to the snapshot, keeping the
	// trailing entries.
	first, err := n.logs.FirstIndex()
	if err != nil {
		return fmt.Errorf("zab: snapshot at index %d: the log's first index: %w", index, err)
	}
	if index <= n.trailingLogs {
		return nil
	}
	if upTo := index - n.trailingLogs; first > 0 && upTo >= first {
		if err := n.logs.DeleteRange(first, upTo); err != nil {
			return fmt.Errorf("zab: snapshot at index %d: trim the log to %d: %w", index, upTo, err)
		}
	}
	return nil
}

// takeSnapshot snapshots now: through raft, or the direct log's own once
// it took over.
func (n *Node) takeSnapshot() error {
	if n.fsm.soloActive.Load() {
		return n.soloSnapshot()
	}
	return n.raft.Snapshot().Error()
}

// soloStats corrects raft's figures for what the direct log wrote since
// it took over: raft's stopped at the takeover.
func (n *Node) soloStats(m map[string]string) {
	if !n.fsm.soloActive.Load() {
		return
	}
	last := strconv.FormatUint(n.solo.index.Load(), 10)
	m["last_log_index"] = last
	m["commit_index"] = last
	m["applied_index"] = last
	m["last_log_term"] = strconv.FormatUint(n.solo.term.Load(), 10)
	m["last_snapshot_index"] = strconv.FormatUint(n.solo.snapIndex.Load(), 10)
	m["last_snapshot_term"] = strconv.FormatUint(n.solo.snapTerm.Load(), 10)
}
