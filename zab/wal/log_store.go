package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/hashicorp/raft"
)

// maxKeptBuffer is the largest encoding buffer StoreLogs keeps for the next
// batch; a bigger one (from an unusually large batch) is dropped.
const maxKeptBuffer = 4 << 20

// IsMonotonic implements raft.MonotonicLogStore: the log never has gaps, so
// raft deletes the whole log after installing or restoring a snapshot
// instead of leaving a gap before the entries that follow it.
func (l *Log) IsMonotonic() bool { return true }

// FirstIndex returns the lowest index in the log, or 0 if it is empty. It
// reads a cached value and never blocks.
func (l *Log) FirstIndex() (uint64, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	return l.bounds.Load().first, nil
}

// LastIndex returns the highest index in the log, or 0 if it is empty. It
// reads a cached value and never blocks.
func (l *Log) LastIndex() (uint64, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	return l.bounds.Load().last, nil
}

// GetLog fills log with entry index, or returns raft.ErrLogNotFound if the
// index is outside [FirstIndex, LastIndex]. It reads the record from its
// segment with one pread into a new buffer, which log.Data and
// log.Extensions then share (nothing else is copied). It waits for no
// fdatasync: a StoreLogs in progress only blocks it while publishing the
// new entries, not while syncing them. A record failing its CRC returns a
// *CorruptError.
func (l *Log) GetLog(index uint64, log *raft.Log) error {
	l.mu.RLock()
	if l.closed.Load() {
		l.mu.RUnlock()
		return ErrClosed
	}
	b := l.bounds.Load()
	if b.empty || index < b.first || index > b.last {
		l.mu.RUnlock()
		return raft.ErrLogNotFound
	}
	segs := l.mu.segs
	seg := segs[sort.Search(len(segs), func(i int) bool { return segs[i].base > index })-1]
	i := index - seg.base
	off, end := int64(seg.offsets[i]), seg.end
	if i+1 < uint64(len(seg.offsets)) {
		end = int64(seg.offsets[i+1])
	}
	rec := make([]byte, end-off)
	_, err := seg.f.ReadAt(rec, off)
	l.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("wal: read %s at offset %d (index %d): %w", seg.path, off, index, err)
	}
	payload, ok := checkRecord(seg.seed, rec)
	if !ok {
		return &CorruptError{Path: seg.path, Offset: off, Index: index, Reason: "crc mismatch"}
	}
	if err := decodeLog(payload, log); err != nil {
		return &CorruptError{Path: seg.path, Offset: off, Index: index, Reason: err.Error()}
	}
	if log.Index != index {
		return &CorruptError{Path: seg.path, Offset: off, Index: index, Reason: fmt.Sprintf("holds index %d", log.Index)}
	}
	return nil
}

// StoreLog stores one entry durably; see StoreLogs.
func (l *Log) StoreLog(log *raft.Log) error {
	return l.StoreLogs([]*raft.Log{log})
}

// StoreLogs appends the entries durably: one pwrite of the whole encoded
// batch at the end of the tail segment (or at the start of a new one if it
// does not fit) and one fdatasync, after which GetLog and LastIndex see
// them. A rotation adds the fdatasync of the new segment's header. Their indexes must be contiguous and follow LastIndex; on an empty
// log the first may be any index. After a write or sync error every later
// write fails until the log is reopened.
func (l *Log) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	start := time.Now()
	l.w.Lock()
	defer l.w.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	b := l.bounds.Load()
	first := logs[0].Index
	if !b.empty && first != b.last+1 {
		return fmt.Errorf("wal: store logs %d-%d: index %d does not follow the last index %d",
			first, logs[len(logs)-1].Index, first, b.last)
	}
	for i, e := range logs {
		if e.Index != first+uint64(i) {
			return fmt.Errorf("wal: store logs %d-%d: index %d at position %d of the batch, want %d",
				first, logs[len(logs)-1].Index, e.Index, i, first+uint64(i))
		}
	}

	buf, rel := l.w.buf[:0], l.w.rel[:0]
	commands := 0
	for _, e := range logs {
		rel = append(rel, len(buf))
		buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0)
		buf = appendLog(buf, e)
		if e.Type == raft.LogCommand {
			commands++
		}
	}
	n := len(buf)
	if int64(headerSize+n) > MaxSegmentSize {
		return fmt.Errorf("wal: store logs %d-%d: batch of %d bytes is larger than any segment", first, logs[len(logs)-1].Index, n)
	}
	deferred := l.deferrable(logs)
	if deferred && !b.empty {
		if err := l.awaitWindowLocked(b.last, len(logs)); err != nil {
			return err
		}
	}
	defer l.markBusy()()
	segs := l.mu.segs
	var tail *segment
	if len(segs) > 0 {
		tail = segs[len(segs)-1]
	}
	if tail == nil || b.empty || tail.end+int64(n) > tail.size {
		if tail != nil && !b.empty && l.durable.Load() < b.last {
			// Deferred records in the segment being left: on disk first,
			// so that unsynced records are only ever in the tail.
			if err := l.syncFile(tail.f, tail.path); err != nil {
				return l.failLocked(err)
			}
			l.markDurable(b.last, false)
		}
		var err error
		if tail, err = l.rotateLocked(first, n); err != nil {
			return l.failLocked(err)
		}
	}
	for i, r := range rel {
		end := n
		if i+1 < len(rel) {
			end = rel[i+1]
		}
		putRecordHeader(tail.seed, buf[r:end])
	}
	if _, err := tail.f.WriteAt(buf, tail.end); err != nil {
		return l.failLocked(fmt.Errorf("wal: write %s at offset %d (indexes %d-%d): %w",
			tail.path, tail.end, first, logs[len(logs)-1].Index, err))
	}
	if !deferred {
		if err := l.syncFile(tail.f, tail.path); err != nil {
			return l.failLocked(err)
		}
	}

	l.mu.Lock()
	for _, r := range rel {
		tail.offsets = append(tail.offsets, uint32(tail.end)+uint32(r))
	}
	tail.end += int64(n)
	last := logs[len(logs)-1].Index
	nb := &bounds{first: b.first, last: last}
	if b.empty {
		nb.first = first
	}
	l.bounds.Store(nb)
	l.mu.Unlock()
	if deferred {
		l.markWritten(tail, last)
	} else {
		// The fdatasync covered every earlier record of the tail too.
		l.markDurable(last, b.empty)
	}

	if cap(buf) > maxKeptBuffer {
		buf = nil
	}
	l.w.buf, l.w.rel = buf[:0], rel[:0]
	took := time.Since(start)
	l.appends.Add(1)
	l.appendedEntries.Add(uint64(len(logs)))
	l.appendedBytes.Add(uint64(n))
	l.lastAppendNs.Store(int64(took))
	if l.onAppend != nil {
		l.onAppend(len(logs), commands, took)
	}
	return nil
}

// rotateLocked makes a new tail segment whose first record will be index
// base, with room for a batch of n bytes: the ready spare (or, for a batch
// bigger than a segment, a new file sized to fit) gets the segment header,
// synced, and is renamed to the next sequence number, then the directory is
// synced. An empty tail it replaces is removed.
func (l *Log) rotateLocked(base uint64, n int) (*segment, error) {
	if err := l.dropEmptyTailLocked(); err != nil {
		return nil, err
	}
	seq := l.w.nextSeq
	path := filepath.Join(l.dir, segmentName(seq))
	hdr := segHeader{seq: seq, base: base}.encode()
	size := l.segmentSize
	var (
		f   *os.File
		err error
	)
	if need := int64(headerSize + n); need > size {
		size = min((need+4095)&^4095, MaxSegmentSize)
		tmp := filepath.Join(l.dir, bigTmpName)
		if f, err = l.preallocate(tmp, size, nil); err != nil {
			return nil, err
		}
		if err := l.installSegment(f, tmp, path, hdr); err != nil {
			return nil, err
		}
	} else if f, err = l.takeSpare(path, hdr); err != nil {
		return nil, err
	}
	l.w.nextSeq++
	seg := &segment{seq: seq, base: base, path: path, f: f, size: size, seed: crcSeed(seq), end: headerSize}
	l.mu.Lock()
	l.mu.segs = append(l.mu.segs, seg)
	l.mu.Unlock()
	if !l.noSync {
		if err := syncDir(l.dir); err != nil {
			return nil, err
		}
	}
	return seg, nil
}

// installSegment writes the segment header hdr into the preallocated file
// f, named from, syncs it and renames the file to path. The header is on
// disk before the name is, so a segment file never lacks its header; a
// crash before the rename leaves a spare or a *.tmp file, which Open reuses
// or removes. f is closed on error.
func (l *Log) installSegment(f *os.File, from, path string, hdr []byte) error {
	if _, err := f.WriteAt(hdr, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("wal: write header of %s: %w", from, err)
	}
	if err := l.syncFile(f, from); err != nil {
		_ = f.Close()
		return err
	}
	if err := os.Rename(from, path); err != nil {
		_ = f.Close()
		return fmt.Errorf("wal: rename %s to %s: %w", from, path, err)
	}
	return nil
}

// dropEmptyTailLocked removes the tail segment if it holds no record, so
// that a rotation never leaves an empty segment behind it.
func (l *Log) dropEmptyTailLocked() error {
	segs := l.mu.segs
	if len(segs) == 0 || len(segs[len(segs)-1].offsets) > 0 {
		return nil
	}
	tail := segs[len(segs)-1]
	l.mu.Lock()
	l.mu.segs = segs[: len(segs)-1 : len(segs)-1]
	l.mu.Unlock()
	_ = l.closeSegmentFile(tail)
	if err := os.Remove(tail.path); err != nil {
		return fmt.Errorf("wal: remove %s: %w", tail.path, err)
	}
	return nil
}

// DeleteRange deletes the entries min..max (inclusive) in the two ways raft
// does:
//
//   - From the front (min <= FirstIndex): compaction after a snapshot.
//     Segment files holding only entries up to max are removed, oldest
//     first, and FirstIndex becomes max+1. The entries of a segment only
//     partly deleted stay in its file: after a restart FirstIndex goes
//     back to that segment's first index. Raft accepts that: they are
//     committed entries it already has in a snapshot. If max >= LastIndex
//     the log becomes empty: every segment is removed, and the next
//     StoreLogs may start at any index.
//   - From the back (min > FirstIndex, max >= LastIndex): a follower
//     dropping a conflicting suffix. Newer segments are removed, newest
//     first, then the one holding min is overwritten with zeros from min's
//     record to its end and synced, so those records never come back; it is
//     the tail again, and LastIndex becomes min-1.
//
// A range strictly inside the log is refused: it would leave a hole.
// Ranges outside the log delete nothing.
func (l *Log) DeleteRange(min, max uint64) error {
	l.w.Lock()
	defer l.w.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	b := l.bounds.Load()
	switch {
	case min > max || b.empty:
		return nil
	case min <= b.first && max >= b.last:
		return l.deleteAllLocked()
	case min <= b.first:
		if max < b.first {
			return nil
		}
		return l.deleteFrontLocked(max)
	case max >= b.last:
		if min > b.last {
			return nil
		}
		return l.truncateLocked(min)
	default:
		return fmt.Errorf("wal: delete range %d-%d: would leave a hole in the log %d-%d", min, max, b.first, b.last)
	}
}

// deleteFrontLocked makes max+1 the first index and removes the segments
// that hold only entries before it.
func (l *Log) deleteFrontLocked(max uint64) error {
	segs := l.mu.segs
	k := 0 // segments to remove
	for k+1 < len(segs) && segs[k+1].base <= max+1 {
		k++
	}
	l.mu.Lock()
	l.mu.segs = append([]*segment(nil), segs[k:]...)
	l.bounds.Store(&bounds{first: max + 1, last: l.bounds.Load().last})
	l.mu.Unlock()
	// Oldest first, syncing the directory after each, so that a crash
	// leaves a contiguous run of segments.
	for _, s := range segs[:k] {
		if err := l.removeSegment(s); err != nil {
			return l.failLocked(err)
		}
	}
	return nil
}

// deleteAllLocked empties the log. It first writes the reset marker naming
// the newest segment, so that a crash while removing the segments cannot
// bring back an old log that the next append (at any index) would not
// follow: Open removes every segment the marker covers.
func (l *Log) deleteAllLocked() error {
	segs := l.mu.segs
	if err := l.writeResetLocked(segs[len(segs)-1].seq); err != nil {
		return l.failLocked(err)
	}
	l.mu.Lock()
	l.mu.segs = nil
	l.bounds.Store(emptyBounds)
	l.mu.Unlock()
	l.markDurable(0, true)
	for _, s := range segs {
		if err := l.removeSegment(s); err != nil {
			return l.failLocked(err)
		}
	}
	return nil
}

// truncateLocked deletes the entries from min to the end, min being after
// FirstIndex and at most LastIndex.
func (l *Log) truncateLocked(min uint64) error {
	segs := l.mu.segs
	k := sort.Search(len(segs), func(i int) bool { return segs[i].base > min }) - 1
	seg := segs[k]
	i := min - seg.base
	keep, wipe := k+1, true
	if i == 0 {
		// min starts segment k (never the first: min > FirstIndex): drop
		// the whole segment, and segment k-1, which ends at min-1, is the
		// tail again.
		keep, wipe = k, false
	}
	from, to := int64(seg.offsets[i]), seg.end
	l.mu.Lock()
	l.mu.segs = segs[:keep:keep]
	if wipe {
		seg.offsets = seg.offsets[:i]
		seg.end = from
	}
	l.bounds.Store(&bounds{first: l.bounds.Load().first, last: min - 1})
	l.mu.Unlock()
	// Newest first, syncing the directory after each, so that a crash
	// leaves the log a prefix of what it was.
	for j := len(segs) - 1; j >= keep; j-- {
		if err := l.removeSegment(segs[j]); err != nil {
			return l.failLocked(err)
		}
	}
	if !wipe {
		// The new tail was left by a rotation, which synced it.
		l.markDurable(min-1, true)
		return nil
	}
	if err := writeZeros(seg.f, from, to); err != nil {
		return l.failLocked(err)
	}
	if err := l.syncFile(seg.f, seg.path); err != nil {
		return l.failLocked(err)
	}
	l.markDurable(min-1, true)
	return nil
}

// removeSegment closes and removes a segment already taken out of the
// list, then syncs the directory.
func (l *Log) removeSegment(s *segment) error {
	_ = l.closeSegmentFile(s)
	if err := os.Remove(s.path); err != nil {
		return fmt.Errorf("wal: remove %s: %w", s.path, err)
	}
	if l.noSync {
		return nil
	}
	return syncDir(l.dir)
}

// writeResetLocked durably replaces the reset marker with one covering
// every segment up to seq.
func (l *Log) writeResetLocked(seq uint64) error {
	tmp, path := filepath.Join(l.dir, resetTmpName), filepath.Join(l.dir, resetName)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("wal: create %s: %w", tmp, err)
	}
	_, err = f.Write(encodeReset(seq))
	if err == nil && !l.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wal: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("wal: rename %s: %w", tmp, err)
	}
	if l.noSync {
		return nil
	}
	return syncDir(l.dir)
}

// writableLocked returns why the log cannot be written to, if it cannot.
func (l *Log) writableLocked() error {
	if l.closed.Load() {
		return ErrClosed
	}
	if l.w.failed != nil {
		return fmt.Errorf("wal: unusable after an earlier write error (reopen to recover): %w", l.w.failed)
	}
	l.dsync.Lock()
	err := l.dsync.err
	l.dsync.Unlock()
	if err != nil {
		return fmt.Errorf("wal: unusable after a failed fdatasync of deferred records (reopen to recover): %w", err)
	}
	return nil
}

// failLocked records err as the write error that makes the log unusable
// and returns it.
func (l *Log) failLocked(err error) error {
	if l.w.failed == nil {
		l.w.failed = err
	}
	return err
}
