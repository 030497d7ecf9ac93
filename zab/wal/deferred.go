// Deferred syncs: a leader writes its log while the followers write
// theirs.
//
// hashicorp/raft's leader stores new entries (StoreLogs, fdatasync
// included) before it sends them to the followers, so every commit waits
// for two fdatasyncs one after the other: the leader's, then a
// follower's. The Raft thesis (§10.2.1) lets the leader write in
// parallel, provided it counts itself towards a commit only once its own
// write is durable. Raft counts the leader as soon as StoreLogs returns,
// so with Options.Defer a StoreLogs of commands returns once its records
// are written, before their fdatasync, which the log's syncer goroutine
// makes at once; Durable says how far the syncs got. The caller (zab) then
// keeps the rule itself: nothing applies, and no follower is told of a
// commit, beyond Durable. An entry raft counts as committed but that is
// durable only on the followers is seen by nobody until the leader's sync
// lands, and if the leader dies first, whoever leads next decides it, as
// for any entry not yet committed.
//
// At most deferWindow entries are written and not synced at any time (a
// writer waits for the syncer beyond it), so a torn tail after a power
// cut stays within what recovery takes for a torn write (Options.MaxBatch).
// A rotation syncs the segment it leaves, so unsynced records are only
// ever in the tail.

package wal

import (
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// defaultDeferWindow bounds the entries written and not synced when
// Options.MaxBatch is zero.
const defaultDeferWindow = 64

// deferWindow is the most entries a deferred StoreLogs leaves unsynced.
func (l *Log) deferWindow() uint64 {
	if l.maxBatch > 0 {
		return uint64(l.maxBatch)
	}
	return defaultDeferWindow
}

// Durable returns the highest index up to which every entry the log holds
// is known to be on disk (synced). Without deferred writes it is always
// LastIndex.
func (l *Log) Durable() uint64 { return l.durable.Load() }

// WaitDurable blocks until every entry up to index is on disk. It fails
// if a sync failed (the log is then unusable) or the log is closed.
func (l *Log) WaitDurable(index uint64) error {
	if l.durable.Load() >= index {
		return nil
	}
	l.dsync.Lock()
	defer l.dsync.Unlock()
	for l.durable.Load() < index {
		if l.dsync.err != nil {
			return l.dsync.err
		}
		if l.dsync.stopped {
			return ErrClosed
		}
		if last := l.bounds.Load().last; l.dsync.written < index && last < index {
			return fmt.Errorf("wal: wait for index %d to be durable: the log ends at %d", index, last)
		}
		l.dsync.cond.Wait()
	}
	return nil
}

// deferrable reports whether a StoreLogs of logs may return before its
// fdatasync: Options.Defer says so and every entry is a command (raft's
// configuration changes and the rest are synced before raft counts them).
func (l *Log) deferrable(logs []*raft.Log) bool {
	if l.deferFn == nil || l.noSync || uint64(len(logs)) > l.deferWindow() {
		return false
	}
	for _, e := range logs {
		if e.Type != raft.LogCommand {
			return false
		}
	}
	return l.deferFn()
}

// awaitWindowLocked waits, holding w, until n more entries written after
// last keep the unsynced ones within deferWindow.
func (l *Log) awaitWindowLocked(last uint64, n int) error {
	l.dsync.Lock()
	defer l.dsync.Unlock()
	for last+uint64(n) > l.durable.Load()+l.deferWindow() && l.dsync.written > l.durable.Load() {
		if l.dsync.err != nil {
			return l.dsync.err
		}
		if l.dsync.stopped {
			return ErrClosed
		}
		l.dsync.cond.Wait()
	}
	return nil
}

// markWritten records that the deferred records up to last are written to
// seg and wakes the syncer.
func (l *Log) markWritten(seg *segment, last uint64) {
	l.dsync.Lock()
	l.dsync.written, l.dsync.seg = last, seg
	l.dsync.cond.Broadcast()
	l.dsync.work.Signal()
	l.dsync.Unlock()
}

// markDurable records that every entry up to last is on disk (a synced
// StoreLogs or rotation, recovery, a truncation: gen moves on with the
// latter so the syncer does not publish a sync of records that are gone).
func (l *Log) markDurable(last uint64, truncated bool) {
	l.dsync.Lock()
	if truncated {
		l.dsync.gen++
		l.dsync.written = min(l.dsync.written, last)
		l.durable.Store(last)
	} else if last > l.durable.Load() {
		l.durable.Store(last)
	}
	l.dsync.cond.Broadcast()
	l.dsync.Unlock()
}

// syncer fdatasyncs the tail after deferred writes until Close.
func (l *Log) syncer() {
	defer l.wg.Done()
	for {
		l.dsync.Lock()
		for l.dsync.written <= l.durable.Load() && !l.dsync.stopped && l.dsync.err == nil {
			l.dsync.work.Wait()
		}
		if l.dsync.stopped || l.dsync.err != nil {
			l.dsync.Unlock()
			return
		}
		target, seg, gen := l.dsync.written, l.dsync.seg, l.dsync.gen
		l.dsync.Unlock()

		l.files.RLock()
		var err error
		if !seg.removed {
			l.syncerBusy.Store(time.Now().UnixNano())
			err = l.syncFile(seg.f, seg.path)
			l.syncerBusy.Store(0)
		}
		l.files.RUnlock()

		l.dsync.Lock()
		if err != nil {
			l.dsync.err = err
		} else if gen == l.dsync.gen && target > l.durable.Load() {
			l.durable.Store(target)
		}
		l.dsync.cond.Broadcast()
		l.dsync.Unlock()
	}
}

// stopSyncer ends the syncer and every wait on it.
func (l *Log) stopSyncer() {
	l.dsync.Lock()
	l.dsync.stopped = true
	l.dsync.cond.Broadcast()
	l.dsync.work.Broadcast()
	l.dsync.Unlock()
}

// closeSegmentFile closes a segment's file once no sync of it runs; the
// syncer skips it afterwards.
func (l *Log) closeSegmentFile(s *segment) error {
	l.files.Lock()
	defer l.files.Unlock()
	s.removed = true
	return s.f.Close()
}
