package zab

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/zab/store"
	"github.com/zkd/zkd/zab/wal"
)

// Raft's log lives in a segment log (package wal) in the walDir folder of
// the data directory; Pebble keeps raft's stable store and the snapshots.
// Data directories written before the segment log existed (up to 48c1e2d)
// hold the log in Pebble: openLog moves it over at start.

// walDir is the segment log's folder inside Config.Dir.
const walDir = "wal"

// keyLogInWAL marks, in the Pebble stable store, that raft's log lives in
// the segment log: set once the log Pebble held (if any) was copied over
// and synced, before Pebble's copy is deleted.
var keyLogInWAL = []byte("zkd.log.wal")

// maxAppendEntries is raft's MaxAppendEntries: the most entries one
// StoreLogs holds, which the segment log's recovery relies on (see
// wal.Options.MaxBatch).
const maxAppendEntries = 64

// moveChunk bounds the entries copied per StoreLogs while moving a
// Pebble-held log: no more than raft's own batches.
const moveChunk = maxAppendEntries

// openLog opens the segment log of the node in cfg.Dir, first moving into
// it the log an older zkd kept in st (Pebble). The move is safe to
// interrupt: Pebble's copy is deleted only after the segment log holds
// every entry, synced, and the marker says so; an interrupted move starts
// over from Pebble.
func openLog(cfg Config, st *store.Store, deferNow func() bool, onAppend func(entries, commands int, took time.Duration), onSync func(time.Duration)) (*wal.Log, error) {
	dir := filepath.Join(cfg.Dir, walDir)
	l, err := wal.Open(wal.Options{Dir: dir, NoSync: cfg.NoSync, Logger: cfg.Logger.Named("wal"), OnAppend: onAppend, OnSync: onSync, OnSyncError: cfg.OnDiskFailure, MaxBatch: maxAppendEntries, BeforeSync: cfg.beforeSync, Defer: deferNow})
	if err != nil {
		return nil, fmt.Errorf("zab: open the raft log in %s: %w", dir, err)
	}
	if err := moveLog(cfg.Logger, st, l, dir); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// moveLog copies the log Pebble holds into l, marks it moved and deletes
// Pebble's copy (see openLog).
func moveLog(log *zap.Logger, st *store.Store, l *wal.Log, dir string) error {
	moved, err := st.GetUint64(keyLogInWAL)
	if err != nil && !errors.Is(err, store.ErrKeyNotFound) {
		return fmt.Errorf("zab: read the log marker in %s: %w", dir, err)
	}
	first, _ := st.FirstIndex()
	last, _ := st.LastIndex()
	if moved == 0 && last > 0 {
		if err := copyLog(st, l, first, last, dir); err != nil {
			return err
		}
		log.Info("raft log moved from Pebble into the segment log (data directory of an older zkd)",
			zap.String("dir", dir), zap.Uint64("first", first), zap.Uint64("last", last))
	}
	if moved == 0 {
		if err := st.SetUint64(keyLogInWAL, 1); err != nil {
			return fmt.Errorf("zab: mark the raft log moved in %s: %w", dir, err)
		}
	}
	if last > 0 {
		// Pebble's copy, from this move or one interrupted after the
		// marker was set.
		if err := st.DeleteRange(first, last); err != nil {
			return fmt.Errorf("zab: delete the raft log Pebble held in %s after moving it: %w", dir, err)
		}
	}
	return nil
}

// copyLog copies Pebble's entries into l, which it empties first (a move
// interrupted before its marker left a partial copy). Pebble's log may
// have a gap below a snapshot a follower installed; the segment log holds
// no gaps, so only the run of entries that ends at last is copied (what
// precedes a gap is covered by that snapshot).
func copyLog(st *store.Store, l *wal.Log, first, last uint64, dir string) error {
	if lf, _ := l.FirstIndex(); lf > 0 {
		ll, _ := l.LastIndex()
		if err := l.DeleteRange(lf, ll); err != nil {
			return fmt.Errorf("zab: empty the segment log in %s before moving the raft log into it: %w", dir, err)
		}
	}
	from := last
	for from > first {
		var e raft.Log
		if err := st.GetLog(from-1, &e); errors.Is(err, raft.ErrLogNotFound) {
			break
		} else if err != nil {
			return fmt.Errorf("zab: read raft log entry %d in %s: %w", from-1, dir, err)
		}
		from--
	}
	batch := make([]*raft.Log, 0, moveChunk)
	for i := from; i <= last; i++ {
		e := new(raft.Log)
		if err := st.GetLog(i, e); err != nil {
			return fmt.Errorf("zab: read raft log entry %d in %s: %w", i, dir, err)
		}
		batch = append(batch, e)
		if len(batch) == moveChunk || i == last {
			if err := l.StoreLogs(batch); err != nil {
				return fmt.Errorf("zab: move raft log entries %d-%d into %s: %w", batch[0].Index, i, dir, err)
			}
			batch = batch[:0]
		}
	}
	return nil
}

// logStats overlays the segment log's figures on the store's.
func logStats(m store.Metrics, w wal.Metrics) store.Metrics {
	m.FirstIndex, m.LastIndex, m.LogEntries = w.FirstIndex, w.LastIndex, w.Entries
	m.LogDiskBytes = uint64(w.DiskBytes)
	m.Appends, m.AppendedEntries, m.AppendedBytes = w.Appends, w.AppendedEntries, w.AppendedBytes
	m.LastCommitLatency = w.LastAppendLatency
	m.WALSyncs = w.Syncs
	m.DiskBytes += uint64(w.DiskBytes)
	return m
}

// logCache keeps the most recently stored entries in memory, bounded in
// bytes as well as in entries, in front of the segment log: raft reads
// back what it just stored (a follower to apply it, the leader to
// replicate it), and those reads then make no system call. raft's own
// LogCache bounds entries only, and a packed entry may hold megabytes.
// Safe for concurrent use.
type logCache struct {
	store    *wal.Log
	maxBytes int
	maxLogs  int

	mu    sync.RWMutex
	logs  []*raft.Log // contiguous indexes, oldest first
	bytes int

	// afterStore, when set, is called with the last index stored after
	// each successful append (a commit notice waiting for its entry,
	// commitnotice.go). It must not block.
	afterStore func(last uint64)
}

// Bounds of logCache.
const (
	logCacheBytes   = 16 << 20
	logCacheEntries = 4096
)

func newLogCache(store *wal.Log) *logCache {
	return &logCache{store: store, maxBytes: logCacheBytes, maxLogs: logCacheEntries}
}

// GetLog implements raft.LogStore.
func (c *logCache) GetLog(index uint64, l *raft.Log) error {
	c.mu.RLock()
	if n := len(c.logs); n > 0 {
		if first := c.logs[0].Index; index >= first && index < first+uint64(n) {
			*l = *c.logs[index-first]
			c.mu.RUnlock()
			return nil
		}
	}
	c.mu.RUnlock()
	return c.store.GetLog(index, l)
}

// StoreLog implements raft.LogStore.
func (c *logCache) StoreLog(l *raft.Log) error { return c.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore: the entries go to the segment log,
// then into the cache.
func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.store.StoreLogs(logs); err != nil {
		c.reset()
		return err
	}
	c.cache(logs)
	if c.afterStore != nil && len(logs) > 0 {
		c.afterStore(logs[len(logs)-1].Index)
	}
	return nil
}

// cache adds stored entries to the cache, dropping the oldest beyond its
// bounds.
func (c *logCache) cache(logs []*raft.Log) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		if n := len(c.logs); n > 0 && c.logs[n-1].Index+1 != l.Index {
			c.clearLocked()
		}
		c.logs = append(c.logs, l)
		c.bytes += len(l.Data) + len(l.Extensions)
	}
	drop := 0
	for drop < len(c.logs)-1 && (c.bytes > c.maxBytes || len(c.logs)-drop > c.maxLogs) {
		c.bytes -= len(c.logs[drop].Data) + len(c.logs[drop].Extensions)
		c.logs[drop] = nil
		drop++
	}
	if drop > 0 {
		c.logs = append(c.logs[:0], c.logs[drop:]...)
	}
}

// DeleteRange implements raft.LogStore; it empties the cache.
func (c *logCache) DeleteRange(min, max uint64) error {
	c.reset()
	return c.store.DeleteRange(min, max)
}

// FirstIndex implements raft.LogStore.
func (c *logCache) FirstIndex() (uint64, error) { return c.store.FirstIndex() }

// LastIndex implements raft.LogStore.
func (c *logCache) LastIndex() (uint64, error) { return c.store.LastIndex() }

// IsMonotonic implements raft.MonotonicLogStore, as the segment log does.
func (c *logCache) IsMonotonic() bool { return c.store.IsMonotonic() }

func (c *logCache) reset() {
	c.mu.Lock()
	c.clearLocked()
	c.mu.Unlock()
}

func (c *logCache) clearLocked() {
	clear(c.logs)
	c.logs, c.bytes = c.logs[:0], 0
}
