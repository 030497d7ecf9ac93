package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/hashicorp/raft"

	"github.com/zkd/zkd/zab/wal"
)

var _ raft.LogStore = (*Store)(nil)

// ErrCorruptLog is wrapped by errors decoding a stored log entry.
var ErrCorruptLog = errors.New("store: corrupt log entry")

// appendLog appends the encoding of l to buf: the segment log's (wal).
func appendLog(buf []byte, l *raft.Log) []byte { return wal.AppendLog(buf, l) }

// decodeLog fills l from b, copying it first (Pebble reuses b after the
// value's closer is closed).
func decodeLog(b []byte, l *raft.Log) error {
	if err := wal.DecodeLog(append([]byte(nil), b...), l); err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptLog, err)
	}
	return nil
}

// FirstIndex returns the lowest index in the log, or 0 if it is empty. It
// reads a cached value.
func (s *Store) FirstIndex() (uint64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return s.bounds.Load().first, nil
}

// LastIndex returns the highest index in the log, or 0 if it is empty. It
// reads a cached value.
func (s *Store) LastIndex() (uint64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return s.bounds.Load().last, nil
}

// GetLog fills log with entry index, or returns raft.ErrLogNotFound.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	v, closer, err := s.db.Get(logKey(index))
	if errors.Is(err, pebble.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("store: get log %d: %w", index, err)
	}
	err = decodeLog(v, log)
	_ = closer.Close()
	if err != nil {
		return fmt.Errorf("store: log %d: %w", index, err)
	}
	return nil
}

// StoreLog stores one entry durably.
func (s *Store) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

// StoreLogs stores the entries in one Pebble batch committed with
// pebble.Sync: they are all on disk, or none is, when it returns. Entries
// may overwrite existing indexes (raft truncates conflicting suffixes with
// DeleteRange first).
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	b := s.db.NewBatch()
	defer b.Close()
	var (
		buf       []byte
		lo, hi    = logs[0].Index, logs[0].Index
		dataBytes uint64
		key       [9]byte
	)
	key[0] = prefixLog
	for _, l := range logs {
		binary.BigEndian.PutUint64(key[1:], l.Index)
		buf = appendLog(buf[:0], l)
		if err := b.Set(key[:], buf, nil); err != nil {
			return fmt.Errorf("store: batch log %d: %w", l.Index, err)
		}
		lo, hi = min(lo, l.Index), max(hi, l.Index)
		dataBytes += uint64(len(l.Data) + len(l.Extensions))
	}
	s.logMu.RLock()
	defer s.logMu.RUnlock()
	start := time.Now()
	if err := b.Commit(s.writeOpts); err != nil {
		return fmt.Errorf("store: commit logs %d-%d: %w", lo, hi, err)
	}
	took := time.Since(start)
	s.lastCommitLatency.Store(int64(took))
	s.appends.Add(1)
	s.appendedEntries.Add(uint64(len(logs)))
	s.appendedBytes.Add(dataBytes)
	for {
		old := s.bounds.Load()
		nb := old.extend(lo, hi)
		if nb == old || s.bounds.CompareAndSwap(old, nb) {
			break
		}
	}
	if s.onAppend != nil {
		commands := 0
		for _, l := range logs {
			if l.Type == raft.LogCommand {
				commands++
			}
		}
		s.onAppend(len(logs), commands, took)
	}
	return nil
}

// DeleteRange deletes the entries with indexes in [min, max] and updates
// the cached bounds. The deletion is synced like any other log write.
func (s *Store) DeleteRange(min, max uint64) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if min > max {
		return nil
	}
	var end []byte
	if max == ^uint64(0) {
		end = []byte{prefixLog + 1}
	} else {
		end = logKey(max + 1)
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if err := s.db.DeleteRange(logKey(min), end, s.writeOpts); err != nil {
		return fmt.Errorf("store: delete logs %d-%d: %w", min, max, err)
	}
	b := *s.bounds.Load()
	if b.first == 0 && b.last == 0 {
		return nil
	}
	if min <= b.first && max >= b.last {
		s.bounds.Store(&logBounds{})
		return nil
	}
	if min <= b.first && max >= b.first {
		f, err := s.seekFirstLog(max + 1)
		if err != nil {
			return err
		}
		b.first = f
	}
	if max >= b.last && min <= b.last {
		l, err := s.seekLastLog(min - 1)
		if err != nil {
			return err
		}
		b.last = l
	}
	if b.first == 0 || b.last == 0 {
		b = logBounds{}
	}
	s.bounds.Store(&b)
	return nil
}

// logBounds is the cached lowest and highest log index; both are 0 when the
// log is empty.
type logBounds struct {
	first, last uint64
}

// extend returns the bounds after entries lo..hi were stored: b itself if
// they lie within it, else new bounds covering both.
func (b *logBounds) extend(lo, hi uint64) *logBounds {
	if b.first != 0 && b.first <= lo && b.last >= hi {
		return b
	}
	nb := logBounds{first: lo, last: hi}
	if b.first != 0 {
		nb.first = min(b.first, lo)
		nb.last = max(b.last, hi)
	}
	return &nb
}

// seekFirstLog returns the lowest stored index >= from, or 0 if none.
func (s *Store) seekFirstLog(from uint64) (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logKey(from), UpperBound: []byte{prefixLog + 1}})
	if err != nil {
		return 0, fmt.Errorf("store: iterate log: %w", err)
	}
	defer it.Close()
	if !it.First() {
		return 0, it.Error()
	}
	idx, ok := logKeyIndex(it.Key())
	if !ok {
		return 0, fmt.Errorf("store: bad log key %x", it.Key())
	}
	return idx, nil
}

// seekLastLog returns the highest stored index <= upto, or 0 if none.
func (s *Store) seekLastLog(upto uint64) (uint64, error) {
	upper := []byte{prefixLog + 1}
	if upto != ^uint64(0) {
		upper = logKey(upto + 1)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixLog}, UpperBound: upper})
	if err != nil {
		return 0, fmt.Errorf("store: iterate log: %w", err)
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	idx, ok := logKeyIndex(it.Key())
	if !ok {
		return 0, fmt.Errorf("store: bad log key %x", it.Key())
	}
	return idx, nil
}
