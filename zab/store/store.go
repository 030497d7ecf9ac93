package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"go.uber.org/zap"
)

// Defaults for Options fields left zero.
const (
	// DefaultCacheSize is the Pebble block cache size in bytes (64 MiB).
	DefaultCacheSize = 64 << 20
	// DefaultMemTableSize is the Pebble memtable size in bytes (32 MiB).
	DefaultMemTableSize = 32 << 20
	// DefaultSnapshotChunkSize is the size of one stored snapshot chunk in
	// bytes (1 MiB).
	DefaultSnapshotChunkSize = 1 << 20
)

// Key prefixes; see the package documentation.
const (
	prefixLog      = 'l'
	prefixStable   = 's'
	prefixMeta     = 'm'
	prefixPending  = 'p'
	prefixChunk    = 'c'
	chunkSeparator = '/'
)

// ErrClosed is returned by operations on a closed Store.
var ErrClosed = errors.New("store: closed")

// Options configures Open.
type Options struct {
	// Dir is the directory of the Pebble database; it is created if missing.
	// Required.
	Dir string
	// NoSync commits every write without fsync. For tests only: with it a
	// crash can lose acknowledged raft entries.
	NoSync bool
	// Logger receives Pebble's log lines and the store's own. Default: a
	// no-op logger.
	Logger *zap.Logger
	// CacheSize is the Pebble block cache in bytes. Default DefaultCacheSize.
	CacheSize int64
	// MemTableSize is the Pebble memtable size in bytes. Default
	// DefaultMemTableSize.
	MemTableSize uint64
	// SnapshotChunkSize is the size in bytes of the values a snapshot is
	// split into. Default DefaultSnapshotChunkSize.
	SnapshotChunkSize int
	// FS is the filesystem Pebble uses. Default vfs.Default (the OS). Tests
	// pass vfs.NewStrictMem() to simulate losing unsynced writes.
	FS vfs.FS
	// OnDiskFailure, when set, is called instead of panicking when Pebble
	// hits an error it cannot continue after (a failed fsync or write of
	// its WAL: "fatal commit error"), with Dir and the error; it must not
	// return (see zab.Config.OnDiskFailure).
	OnDiskFailure func(file string, err error)
	// OnWALSync, when set, is called after each fsync of the write-ahead
	// log with its duration, on the goroutine that synced. It must not
	// block.
	OnWALSync func(time.Duration)
	// OnAppend, when set, is called after each append to the log with the
	// number of entries it stored, how many of them were commands
	// (raft.LogCommand), and how long the batch took to commit, fsync
	// included; on raft's goroutine. It must not block.
	OnAppend func(entries, commands int, took time.Duration)
}

// Validate reports the first bad field of o.
func (o *Options) Validate() error {
	switch {
	case o.Dir == "":
		return errors.New("store: Options.Dir is required")
	case o.CacheSize < 0:
		return fmt.Errorf("store: Options.CacheSize %d is negative", o.CacheSize)
	case o.SnapshotChunkSize < 0:
		return fmt.Errorf("store: Options.SnapshotChunkSize %d is negative", o.SnapshotChunkSize)
	case o.MemTableSize >= 4<<30:
		return fmt.Errorf("store: Options.MemTableSize %d must be below 4 GiB", o.MemTableSize)
	}
	return nil
}

// Store is a Pebble database holding raft's log, stable store and snapshots.
// It implements raft.LogStore and raft.StableStore; SnapshotStore returns a
// raft.SnapshotStore over the same database. All methods are safe for
// concurrent use. No method may be called after Close.
type Store struct {
	dir       string
	db        *pebble.DB
	fs        *countingFS
	log       *zap.Logger
	writeOpts *pebble.WriteOptions
	// onDisk is Options.OnDiskFailure: release hands it the I/O error
	// a Pebble write panicked with.
	onDisk    func(file string, err error)
	chunkSize int
	// cache is the database's block cache, emptied after each snapshot
	// read (see snapshotReader.Close); cacheSize its capacity.
	cache     *pebble.Cache
	cacheSize int64

	// logMu orders log writers against DeleteRange: StoreLogs holds it for
	// reading (so concurrent appenders still share fsyncs), DeleteRange for
	// writing while it recomputes the cached bounds.
	logMu sync.RWMutex
	// bounds caches the log's lowest and highest index as one value, so no
	// reader ever sees a first from one update and a last from another
	// (such as first 1, last 0 while the first batch is being recorded). It
	// is never nil after Open; both indexes are 0 when the log is empty.
	bounds atomic.Pointer[logBounds]

	// closeMu is held for reading by every operation that touches the
	// database and for writing by Close, so Close waits for operations in
	// flight and later ones fail with ErrClosed instead of reaching a closed
	// Pebble (which panics).
	closeMu sync.RWMutex
	closed  atomic.Bool

	// corruption is the first error of a read that found data on disk
	// corrupt (see Corruption); nil until then.
	corruption atomic.Pointer[error]

	// counters for Metrics.
	appends           atomic.Uint64 // StoreLogs calls
	appendedEntries   atomic.Uint64
	appendedBytes     atomic.Uint64
	lastCommitLatency atomic.Int64                                    // ns
	onAppend          func(entries, commands int, took time.Duration) // Options.OnAppend; may be nil

	snaps struct {
		sync.Mutex
		lastMs  int64       // last millisecond used in a snapshot ID
		metas   []*snapMeta // newest first
		readers map[*snapshotReader]struct{}
	}
}

// Open opens (creating if needed) the store in opts.Dir, removes the chunks
// of snapshots whose writing never completed, and loads the log bounds.
func Open(opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.MemTableSize == 0 {
		opts.MemTableSize = DefaultMemTableSize
	}
	if opts.SnapshotChunkSize == 0 {
		opts.SnapshotChunkSize = DefaultSnapshotChunkSize
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	cfs := &countingFS{FS: opts.FS, onSync: opts.OnWALSync}
	cache := pebble.NewCache(opts.CacheSize)
	defer cache.Unref()
	popts := &pebble.Options{
		FS:           cfs,
		Cache:        cache,
		MemTableSize: opts.MemTableSize,
		Logger:       pebbleLogger{s: opts.Logger.Named("pebble").WithOptions(zap.AddCallerSkip(1)).Sugar(), dir: opts.Dir, fatal: opts.OnDiskFailure},
	}
	if err := checkLogs(opts.FS, opts.Dir); err != nil {
		return nil, err
	}
	if err := repairOptions(opts.FS, opts.Dir, popts, func(path string, err error) {
		opts.Logger.Warn("Pebble's OPTIONS file is damaged; it holds only options zkd sets at every start, so it is written again from them",
			zap.String("path", path), zap.Error(err))
	}); err != nil {
		return nil, err
	}
	db, err := pebble.Open(opts.Dir, popts)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", opts.Dir, openError(err))
	}
	if err := checkTables(db, opts.FS, opts.Dir); err != nil {
		_ = db.Close()
		return nil, err
	}
	s := &Store{
		dir:       opts.Dir,
		db:        db,
		fs:        cfs,
		log:       opts.Logger,
		writeOpts: pebble.Sync,
		chunkSize: opts.SnapshotChunkSize,
		onAppend:  opts.OnAppend,
		onDisk:    opts.OnDiskFailure,
		cache:     cache,
		cacheSize: opts.CacheSize,
	}
	if opts.NoSync {
		s.writeOpts = pebble.NoSync
	}
	s.snaps.readers = make(map[*snapshotReader]struct{})
	if err := s.recover(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: %w", opts.Dir, markCorrupt(err))
	}
	return s, nil
}

// recover loads the cached log bounds and snapshot list and drops
// half-written snapshots.
func (s *Store) recover() error {
	first, err := s.seekFirstLog(0)
	if err != nil {
		return err
	}
	last, err := s.seekLastLog(^uint64(0))
	if err != nil {
		return err
	}
	s.bounds.Store(&logBounds{first: first, last: last})
	if err := s.dropPendingSnapshots(); err != nil {
		return err
	}
	metas, err := s.loadSnapshotMetas()
	if err != nil {
		return err
	}
	s.snaps.metas = metas
	s.log.Debug("store opened", zap.Uint64("first_index", first), zap.Uint64("last_index", last),
		zap.Int("snapshots", len(metas)))
	return nil
}

// noteCorrupt returns err marked as ErrCorrupt if it reports corrupt data
// (see markCorrupt), remembering the first such error for Corruption.
func (s *Store) noteCorrupt(err error) error {
	err = markCorrupt(err)
	if errors.Is(err, ErrCorrupt) {
		s.corruption.CompareAndSwap(nil, &err)
	}
	return err
}

// Corruption returns the first error of a read from this store that found
// data on disk corrupt (a Pebble block or record failing its checksum, a
// snapshot failing its CRC), or nil. Raft folds the errors of the reads it
// makes at start (term, vote, snapshots) into its own text, or falls back
// to an older snapshot when the newest does not read; this keeps the
// cause, so that the caller can refuse to start.
func (s *Store) Corruption() error {
	if p := s.corruption.Load(); p != nil {
		return *p
	}
	return nil
}

// Close waits for operations in flight, ends snapshot readers still open
// (their next Read fails with ErrClosed) and closes the database. It
// flushes nothing extra: every acknowledged write is already synced. Later
// calls fail with ErrClosed.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Swap(true) {
		return ErrClosed
	}
	s.snaps.Lock()
	readers := s.snaps.readers
	s.snaps.readers = nil
	s.snaps.Unlock()
	for r := range readers {
		_ = r.release(ErrClosed)
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Metrics are cheap-to-read figures about the store, for the server's
// metrics and admin commands.
type Metrics struct {
	// FirstIndex and LastIndex are the log bounds (0 when empty).
	FirstIndex, LastIndex uint64
	// LogEntries is LastIndex-FirstIndex+1, or 0 when the log is empty.
	LogEntries uint64
	// LogDiskBytes estimates the on-disk bytes of the log's key range
	// (entries still only in the memtable are not counted).
	LogDiskBytes uint64
	// Appends counts StoreLogs/StoreLog calls since Open; AppendedEntries
	// and AppendedBytes count the entries and their Data+Extensions bytes.
	Appends, AppendedEntries, AppendedBytes uint64
	// LastCommitLatency is how long the last StoreLogs batch commit took,
	// fsync included.
	LastCommitLatency time.Duration
	// WALSyncs counts fsyncs of Pebble's write-ahead log since Open;
	// WALSyncs/AppendedEntries shows how well appends are grouped.
	WALSyncs uint64
	// LastWALSyncLatency is the duration of the last WAL fsync.
	LastWALSyncLatency time.Duration
	// DiskBytes is the total disk space used by the database.
	DiskBytes uint64
	// Snapshots is the number of complete snapshots stored.
	Snapshots int
	// LastSnapshotIndex, LastSnapshotTerm and LastSnapshotSize describe the
	// newest snapshot; LastSnapshotAge is the time since it was written.
	// All zero when there is none.
	LastSnapshotIndex, LastSnapshotTerm uint64
	LastSnapshotSize                    int64
	LastSnapshotAge                     time.Duration
}

// Metrics returns the store's current figures.
func (s *Store) Metrics() Metrics {
	b := s.bounds.Load()
	m := Metrics{
		FirstIndex:         b.first,
		LastIndex:          b.last,
		Appends:            s.appends.Load(),
		AppendedEntries:    s.appendedEntries.Load(),
		AppendedBytes:      s.appendedBytes.Load(),
		LastCommitLatency:  time.Duration(s.lastCommitLatency.Load()),
		WALSyncs:           s.fs.syncs.Load(),
		LastWALSyncLatency: time.Duration(s.fs.lastSyncNs.Load()),
	}
	if m.LastIndex != 0 && m.LastIndex >= m.FirstIndex {
		m.LogEntries = m.LastIndex - m.FirstIndex + 1
	}
	if s.acquire() == nil {
		if n, err := s.db.EstimateDiskUsage([]byte{prefixLog}, []byte{prefixLog + 1}); err == nil {
			m.LogDiskBytes = n
		}
		m.DiskBytes = s.db.Metrics().DiskSpaceUsage()
		s.release()
	}
	s.snaps.Lock()
	m.Snapshots = len(s.snaps.metas)
	if len(s.snaps.metas) > 0 {
		newest := s.snaps.metas[0]
		m.LastSnapshotIndex = newest.Index
		m.LastSnapshotTerm = newest.Term
		m.LastSnapshotSize = newest.Size
		m.LastSnapshotAge = time.Since(newest.CreatedAt)
	}
	s.snaps.Unlock()
	return m
}

// acquire holds off Close until release. It fails with ErrClosed once
// Close has begun.
func (s *Store) acquire() error {
	s.closeMu.RLock()
	if s.closed.Load() {
		s.closeMu.RUnlock()
		return ErrClosed
	}
	return nil
}

// release ends what acquire began. Deferred by every write, it also takes
// a panic of Pebble's with an I/O error (Pebble panics when it cannot
// create its next WAL file, e.g. on a full disk while a snapshot fills the
// memtable) to OnDiskFailure, which logs the one DISK FULL or DISK FAILURE
// line and exits, instead of a Go stack trace and exit status 2.
func (s *Store) release() {
	s.closeMu.RUnlock()
	if r := recover(); r != nil {
		s.diskPanic(r)
	}
}

// diskPanic hands a panic with an I/O error to onDisk, and panics again
// with anything else.
func (s *Store) diskPanic(r any) {
	err, ok := r.(error)
	var pe *fs.PathError
	var errno syscall.Errno
	if ok && s.onDisk != nil && (errors.As(err, &pe) || errors.As(err, &errno)) {
		file := s.dir
		if pe != nil {
			file = pe.Path
		}
		s.onDisk(file, err)
	}
	panic(r)
}

// logKey returns the key of log entry idx.
func logKey(idx uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefixLog
	binary.BigEndian.PutUint64(k[1:], idx)
	return k
}

// logKeyIndex decodes the index of a log key.
func logKeyIndex(k []byte) (uint64, bool) {
	if len(k) != 9 || k[0] != prefixLog {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[1:]), true
}

// prefixEnd returns the first key after every key starting with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil // p is all 0xff: no upper bound
}
