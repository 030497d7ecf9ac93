package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

var (
	_ raft.LogStore          = (*Log)(nil)
	_ raft.MonotonicLogStore = (*Log)(nil)
)

// Limits of Options.SegmentSize.
const (
	// DefaultSegmentSize is the size of a segment file in bytes (64 MiB).
	DefaultSegmentSize = 64 << 20
	// MinSegmentSize is the smallest SegmentSize allowed (1 KiB), for
	// tests that want many segments.
	MinSegmentSize = 1 << 10
	// MaxSegmentSize is the largest size of any segment file (4 GiB - 1):
	// record offsets are kept as uint32.
	MaxSegmentSize = 1<<32 - 1
)

// ErrClosed is returned by operations on a closed Log.
var ErrClosed = errors.New("wal: closed")

// Options configures Open.
type Options struct {
	// Dir is the directory of the log's files; it is created if missing and
	// must hold nothing else. Required.
	Dir string
	// NoSync skips every fdatasync and fsync, and preallocates segments as
	// sparse files instead of writing zeros. For tests only: with it a
	// crash can lose acknowledged raft entries.
	NoSync bool
	// SegmentSize is the size in bytes of a segment file, between
	// MinSegmentSize and MaxSegmentSize. A batch bigger than that gets a
	// segment of its own sized to fit. Default DefaultSegmentSize.
	SegmentSize int64
	// Logger receives recovery warnings (torn writes dropped) and
	// background errors. Default: a no-op logger.
	Logger *zap.Logger
	// OnAppend, when set, is called after each successful StoreLogs (and
	// StoreLog) with the number of entries stored, how many of them were
	// commands (raft.LogCommand), and how long the call took, fdatasync
	// included; on the caller's (raft's) goroutine. It must not block.
	OnAppend func(entries, commands int, took time.Duration)
	// OnSync, when set, is called after each fdatasync of a segment file
	// (one per StoreLogs, plus one per rotation for the new segment's
	// header, and those of DeleteRange and recovery) with its duration, on
	// the goroutine that synced. It must not block. It is not
	// called with NoSync.
	OnSync func(took time.Duration)
	// MaxBatch, when positive, is the most entries one StoreLogs call
	// holds (raft's MaxAppendEntries). Recovery then tells a torn write
	// from corruption: a record failing its CRC in the newest segment
	// followed by MaxBatch or more good records cannot be the torn last
	// batch, and Open fails with a *CorruptError. Zero: only the sector
	// rules of the package documentation tell a torn write from
	// corruption.
	MaxBatch int
	// OnSyncError, when set, is called when an fsync or fdatasync of a
	// segment file fails, with the file and the error, before the error is
	// returned (see zab.Config.OnDiskFailure).
	OnSyncError func(file string, err error)
	// BeforeSync, when set, is called before each fdatasync of a segment
	// file with its path, inside the time that SyncingSince, OnSync and
	// LastSync count: tests stall it to play a slow disk. Not called with
	// NoSync.
	BeforeSync func(path string)
	// Defer, when set, is asked at each StoreLogs whose entries are all
	// commands: true lets it return once they are written, before their
	// fdatasync, which the log's own goroutine makes at once (Durable,
	// WaitDurable). See deferred.go for what the caller must then hold
	// back. Called on the writer's goroutine; it must not block.
	Defer func() bool
}

// Validate reports the first bad field of o.
func (o *Options) Validate() error {
	switch {
	case o.Dir == "":
		return errors.New("wal: Options.Dir is required")
	case o.SegmentSize != 0 && o.SegmentSize < MinSegmentSize:
		return fmt.Errorf("wal: Options.SegmentSize %d is below the minimum %d", o.SegmentSize, MinSegmentSize)
	case o.SegmentSize > MaxSegmentSize:
		return fmt.Errorf("wal: Options.SegmentSize %d is above the maximum %d", o.SegmentSize, int64(MaxSegmentSize))
	}
	return nil
}

// Log is hashicorp/raft's log kept in preallocated segment files. It
// implements raft.LogStore and raft.MonotonicLogStore. Every method is safe
// for concurrent use; GetLog, FirstIndex and LastIndex never wait for an
// fdatasync.
//
// Lock order: w, then mu. spare is taken with w held or alone, never with
// mu held.
type Log struct {
	dir         string
	noSync      bool
	segmentSize int64
	log         *zap.Logger
	onAppend    func(entries, commands int, took time.Duration)
	onSync      func(time.Duration)
	onSyncError func(file string, err error)
	beforeSync  func(path string)
	maxBatch    int
	deferFn     func() bool

	closed atomic.Bool
	// bounds is the log's first and last index as one value, replaced (never
	// modified) under mu, so readers never see a first from one update and
	// a last from another. Never nil.
	bounds atomic.Pointer[bounds]

	// w serializes the writers: StoreLogs, DeleteRange and Close.
	w struct {
		sync.Mutex
		buf     []byte // encoding buffer of a batch, reused
		rel     []int  // offset of each record of the batch in buf
		nextSeq uint64 // sequence number of the next segment
		// failed is the first write or sync error; after it every write
		// fails until the log is reopened, because what reached the disk is
		// unknown.
		failed error
	}

	// mu guards the segment list against readers. The list, and each
	// segment's offsets and end, change only with both w and mu held, so a
	// writer holding w reads them without mu.
	mu struct {
		sync.RWMutex
		segs []*segment // by base index; the last is the tail
	}

	// spare is the preallocated file the next rotation renames into a
	// segment; its own goroutine prepares it.
	spare struct {
		sync.Mutex
		f *os.File // named spareName; nil when none is ready
	}
	spareBytes  atomic.Int64 // size of the ready spare, for Metrics
	spareWanted chan struct{}
	stop        chan struct{} // closed by Close
	wg          sync.WaitGroup

	// counters for Metrics.
	appends         atomic.Uint64
	appendedEntries atomic.Uint64
	appendedBytes   atomic.Uint64
	syncs           atomic.Uint64
	lastAppendNs    atomic.Int64
	lastSyncNs      atomic.Int64

	// busySince is when the disk write the log now waits on began (unix
	// ns), 0 when none: see SyncingSince. Stored by the writer (w held,
	// or Open) and by the syncer.
	busySince atomic.Int64

	// durable is the index up to which every entry held is on disk
	// (deferred.go); dsync is the syncer's state.
	durable atomic.Uint64
	dsync   struct {
		sync.Mutex
		// cond wakes the waits on durable (WaitDurable, the window of
		// a deferred StoreLogs); work wakes the syncer, only when a
		// deferred write left it something to sync or the log stops.
		// Apart, a synced StoreLogs (standalone, every one) does not
		// wake the syncer for nothing at each append.
		cond, work *sync.Cond
		written    uint64   // the last index written by a deferred StoreLogs
		seg        *segment // the segment it went to (the tail)
		gen        uint64   // moves on with each truncation
		err        error    // the syncer's failed fdatasync
		stopped    bool     // Close: no more syncs
	}
	// syncerBusy is when the syncer's fdatasync in progress began (unix
	// ns), 0 when none: see SyncingSince.
	syncerBusy atomic.Int64
	// files is held shared by the syncer over an fdatasync, and
	// exclusively to close a segment's file (closeSegmentFile).
	files sync.RWMutex
}

// bounds is the log's first and last index; both are 0 when empty is set.
// (Index 0 is a valid raft.Log index to this package, so emptiness has its
// own flag.)
type bounds struct {
	first, last uint64
	empty       bool
}

var emptyBounds = &bounds{empty: true}

// segment is one open segment file.
type segment struct {
	seq  uint64
	base uint64 // index of its first record
	path string
	f    *os.File
	size int64  // file size: its capacity
	seed uint32 // crcSeed(seq)
	// offsets holds the offset of each record (index base+i at offsets[i]);
	// end is the offset after the last record. See Log.mu.
	offsets []uint32
	end     int64
	// removed is set, under Log.files, once the file is closed.
	removed bool
}

// Open opens the log in opts.Dir, creating the directory if needed, and
// recovers it: it removes half-made files, checks every segment header and
// record, wipes a torn write at the end of the newest segment (logging a
// warning) and refuses to open if any other record is bad. See the package
// documentation for the rules.
func Open(opts Options) (*Log, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.SegmentSize == 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("wal: create directory %s: %w", opts.Dir, err)
	}
	l := &Log{
		dir:         opts.Dir,
		noSync:      opts.NoSync,
		segmentSize: opts.SegmentSize,
		log:         opts.Logger,
		onAppend:    opts.OnAppend,
		onSync:      opts.OnSync,
		onSyncError: opts.OnSyncError,
		beforeSync:  opts.BeforeSync,
		maxBatch:    opts.MaxBatch,
		deferFn:     opts.Defer,
		spareWanted: make(chan struct{}, 1),
		stop:        make(chan struct{}),
	}
	l.bounds.Store(emptyBounds)
	l.dsync.cond = sync.NewCond(&l.dsync.Mutex)
	l.dsync.work = sync.NewCond(&l.dsync.Mutex)
	if err := l.recover(); err != nil {
		for _, s := range l.mu.segs {
			_ = s.f.Close()
		}
		if l.spare.f != nil {
			_ = l.spare.f.Close()
		}
		return nil, err
	}
	// What the log holds may be in the page cache only (a deferred write
	// before a kill): on disk before anyone reads it as durable.
	if segs := l.mu.segs; len(segs) > 0 && !l.noSync {
		tail := segs[len(segs)-1]
		if err := fdatasync(tail.f); err != nil {
			for _, s := range l.mu.segs {
				_ = s.f.Close()
			}
			return nil, fmt.Errorf("wal: fdatasync %s at open: %w", tail.path, err)
		}
	}
	if b := l.bounds.Load(); !b.empty {
		l.durable.Store(b.last)
	}
	l.wg.Add(2)
	go l.spareLoop()
	go l.syncer()
	l.wantSpare()
	return l, nil
}

// recover loads the directory into l; see Open.
func (l *Log) recover() error {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("wal: read directory %s: %w", l.dir, err)
	}
	var (
		seqs     []uint64
		floor    uint64 // segments at or below it are void (reset marker)
		hasSpare bool
		removed  bool
	)
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(l.dir, name)
		switch {
		case strings.HasSuffix(name, ".tmp"):
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("wal: remove %s: %w", path, err)
			}
			l.log.Info("removed a half-made file", zap.String("path", path))
		case name == resetName:
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("wal: read %s: %w", path, err)
			}
			if floor, err = decodeReset(path, b); err != nil {
				return err
			}
		case name == spareName:
			hasSpare = true
		default:
			if seq, ok := parseSegmentName(name); ok {
				seqs = append(seqs, seq)
			}
		}
	}
	slices.Sort(seqs)
	l.w.nextSeq = floor + 1
	if len(seqs) > 0 {
		l.w.nextSeq = max(l.w.nextSeq, seqs[len(seqs)-1]+1)
	}
	for _, seq := range seqs {
		path := filepath.Join(l.dir, segmentName(seq))
		if seq <= floor {
			// DeleteRange emptied the log but crashed before removing
			// every segment.
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("wal: remove %s: %w", path, err)
			}
			removed = true
			l.log.Info("removed a segment of an emptied log", zap.String("path", path))
			continue
		}
		seg, err := openSegment(path, seq)
		if err != nil {
			return err
		}
		l.mu.segs = append(l.mu.segs, seg)
	}
	segs := l.mu.segs
	var entries uint64
	for i, seg := range segs {
		res, err := scanSegment(seg.f, seg.path, seg.size, segHeader{seq: seg.seq, base: seg.base})
		if err != nil {
			return err
		}
		n := uint64(len(res.offsets))
		if i+1 < len(segs) {
			next := segs[i+1]
			if next.base < seg.base {
				return &formatError{fmt.Sprintf("wal: %s: base index %d is below base index %d of the older segment %s",
					next.path, next.base, seg.base, seg.path)}
			}
			switch want := next.base - seg.base; {
			case n < want:
				return &CorruptError{Path: seg.path, Offset: res.end, Index: seg.base + n, Reason: res.stop.String()}
			case n > want:
				return &formatError{fmt.Sprintf("wal: %s: holds indexes %d-%d but the next segment %s starts at index %d",
					seg.path, seg.base, seg.base+n-1, next.path, next.base)}
			}
		} else if err := l.repairTail(seg, res); err != nil {
			return err
		}
		seg.offsets, seg.end = res.offsets, res.end
		entries += n
	}
	if entries == 0 && len(segs) > 0 {
		// Only empty segments (a crash after the first rotation, before
		// its batch reached the disk): the log is empty, and its next
		// append may start at any index.
		for _, seg := range segs {
			_ = seg.f.Close()
			if err := os.Remove(seg.path); err != nil {
				return fmt.Errorf("wal: remove %s: %w", seg.path, err)
			}
		}
		l.mu.segs, segs, removed = nil, nil, true
	}
	if removed && !l.noSync {
		if err := syncDir(l.dir); err != nil {
			return err
		}
	}
	if len(segs) > 0 {
		tail := segs[len(segs)-1]
		l.bounds.Store(&bounds{first: segs[0].base, last: tail.base + uint64(len(tail.offsets)) - 1})
	}
	if hasSpare {
		path := filepath.Join(l.dir, spareName)
		if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
			// A spare must be all zeros: records are written into it and
			// recovery reads any non-zero byte after them as damage. One
			// changed at rest is remade (it holds nothing).
			if fi, err := f.Stat(); err == nil && fi.Size() == l.segmentSize {
				if zero, err := allZero(f, 0, fi.Size()); err == nil && zero {
					l.spare.f = f
					l.spareBytes.Store(fi.Size())
				} else {
					l.log.Warn("the spare segment is not all zeros (changed on disk): removed, a new one is made",
						zap.String("path", path))
				}
			}
			if l.spare.f == nil {
				_ = f.Close()
			}
		}
		if l.spare.f == nil {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("wal: remove %s: %w", path, err)
			}
		}
	}
	b := l.bounds.Load()
	l.log.Debug("wal opened", zap.String("dir", l.dir), zap.Int("segments", len(segs)),
		zap.Uint64("first_index", b.first), zap.Uint64("last_index", b.last))
	return nil
}

// openSegment opens the segment file path and checks its header.
func openSegment(path string, seq uint64) (seg *segment, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("wal: stat %s: %w", path, err)
	}
	size := fi.Size()
	if size < headerSize {
		return nil, &formatError{fmt.Sprintf("wal: %s: bad segment header (file is %d bytes)", path, size)}
	}
	if size > MaxSegmentSize {
		return nil, &formatError{fmt.Sprintf("wal: %s: %d bytes is larger than any segment", path, size)}
	}
	hb := make([]byte, headerSize)
	if _, err := f.ReadAt(hb, 0); err != nil {
		return nil, fmt.Errorf("wal: read %s: %w", path, err)
	}
	h, err := decodeHeader(hb)
	if err != nil {
		return nil, &formatError{fmt.Sprintf("wal: %s: bad segment header (%v)", path, err)}
	}
	if h.seq != seq {
		return nil, &formatError{fmt.Sprintf("wal: %s: bad segment header (sequence %d does not match the file name)", path, h.seq)}
	}
	return &segment{seq: seq, base: h.base, path: path, f: f, size: size, seed: crcSeed(seq), end: headerSize}, nil
}

// repairTail wipes what follows the last good record of the tail segment
// if it is not all zeros: a torn write from a crash during the last batch,
// which raft never saw acknowledged. Zeroing it keeps its records from
// validating again once shorter records are written before them.
//
// It refuses (a *CorruptError) what no torn write produces. A segment is
// preallocated with zeros and a batch is one pwrite into it, so a crash
// before its fdatasync leaves each sector the batch covers either written
// or still zero: a torn record has a sector that is zero from the record
// on, its length can only have lost bits (it still fits the file), and
// nothing follows the torn batch but zeros. See tornAt and the package
// documentation.
func (l *Log) repairTail(seg *segment, res scanResult) error {
	index := seg.base + uint64(len(res.offsets))
	corrupt := func(reason string) error {
		return &CorruptError{Path: seg.path, Offset: res.end, Index: index, Reason: reason}
	}
	reason := res.stop.String()
	switch res.stop {
	case stopEnd:
		if res.end == seg.size && seg.size < l.segmentSize {
			return corrupt(fmt.Sprintf("the file ends there, at %d bytes, short of the %d bytes every segment is preallocated with: it was truncated, and records after it may be lost",
				seg.size, l.segmentSize))
		}
		clean, err := allZero(seg.f, res.end, seg.size)
		if err != nil || clean {
			return err
		}
		reason = "bytes after the end"
		torn, err := tornAt(seg, res.end, res.end+4)
		if err != nil {
			return err
		}
		if !torn {
			return corrupt("zero length in a sector that holds data after it, which a crash does not leave: corruption, not a torn write")
		}
	case stopTruncated:
		return corrupt("its length runs past the end of the file, which a crash cannot leave in a preallocated segment: corruption or a truncated file, not a torn write")
	case stopCRC:
		if l.maxBatch > 0 {
			// A torn write spoils at most the last batch. Good records
			// after the bad one beyond a batch's worth mean the bad record
			// was synced and acknowledged, and then changed on disk.
			n, err := goodAfter(seg, res, l.maxBatch)
			if err != nil {
				return err
			}
			if n >= l.maxBatch {
				return corrupt(fmt.Sprintf("crc mismatch, followed by %d or more good records: corruption, not a torn write", n))
			}
		}
		var hdr [recordHeaderSize]byte
		if _, err := seg.f.ReadAt(hdr[:], res.end); err != nil {
			return fmt.Errorf("wal: read %s at offset %d: %w", seg.path, res.end, err)
		}
		torn, err := tornAt(seg, res.end, res.end+recordHeaderSize+int64(binary.LittleEndian.Uint32(hdr[0:4])))
		if err != nil {
			return err
		}
		if !torn {
			return corrupt("crc mismatch in a record whose every sector was written, which a crash does not leave: corruption, not a torn write")
		}
	}
	l.log.Warn("dropping a torn write at the end of the log",
		zap.String("path", seg.path), zap.Int64("offset", res.end),
		zap.Uint64("index", index), zap.String("reason", reason))
	if err := writeZeros(seg.f, res.end, seg.size); err != nil {
		return err
	}
	return l.syncFile(seg.f, seg.path)
}

// sectorSize is the unit in which a disk writes: a write cut short by a
// power loss leaves each 512-byte sector it covers either written or as it
// was (the page cache writes back whole pages, made of whole sectors).
const sectorSize = 512

// tornAt reports whether the bytes of seg in [from, to) can be the start
// of a write cut short by a crash: some sector overlapping them holds only
// zeros from from on (to its end), as it was preallocated, so the write
// may not have reached it. A record without such a sector was written
// whole, and a crc mismatch in it is corruption.
func tornAt(seg *segment, from, to int64) (bool, error) {
	to = min(to, seg.size)
	end := min((to+sectorSize-1)/sectorSize*sectorSize, seg.size)
	if to <= from {
		return false, nil
	}
	buf := make([]byte, end-from)
	if _, err := seg.f.ReadAt(buf, from); err != nil {
		return false, fmt.Errorf("wal: read %s at offset %d: %w", seg.path, from, err)
	}
	for s := from; s < to; s = (s/sectorSize + 1) * sectorSize {
		e := min((s/sectorSize+1)*sectorSize, end)
		if isZero(buf[s-from : e-from]) {
			return true, nil
		}
	}
	return false, nil
}

// formatError reports a bad segment header or segment layout; it matches
// ErrCorrupt.
type formatError struct{ msg string }

// Error implements error.
func (e *formatError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *formatError) Is(target error) bool { return target == ErrCorrupt }

// Close stops preparing spares, waits for operations in flight and closes
// the files. It flushes nothing: every acknowledged write is already
// synced. Later calls, and every other method after it, fail with
// ErrClosed.
func (l *Log) Close() error {
	if l.closed.Swap(true) {
		return ErrClosed
	}
	close(l.stop)
	l.stopSyncer()
	l.wg.Wait()
	l.w.Lock()
	defer l.w.Unlock()
	l.mu.Lock()
	segs := l.mu.segs
	l.mu.segs = nil
	l.mu.Unlock()
	var errs []error
	for _, s := range segs {
		if err := s.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("wal: close %s: %w", s.path, err))
		}
	}
	l.spare.Lock()
	if l.spare.f != nil {
		if err := l.spare.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("wal: close spare: %w", err))
		}
		l.spare.f = nil
	}
	l.spare.Unlock()
	return errors.Join(errs...)
}

// Metrics are cheap-to-read figures about the log, for the server's
// metrics and admin commands.
type Metrics struct {
	// FirstIndex and LastIndex are the log bounds (both 0 when empty);
	// Entries is the number of entries between them.
	FirstIndex, LastIndex, Entries uint64
	// Appends counts StoreLogs/StoreLog calls since Open; AppendedEntries
	// counts their entries and AppendedBytes the bytes written to
	// segments for them (record headers and payloads).
	Appends, AppendedEntries, AppendedBytes uint64
	// Syncs counts fdatasyncs of segment files since Open.
	Syncs uint64
	// LastAppendLatency is how long the last StoreLogs took, fdatasync
	// included.
	LastAppendLatency time.Duration
	// Segments is the number of segment files.
	Segments int
	// DiskBytes is the size of the segment files plus the ready spare.
	DiskBytes int64
}

// Metrics returns the log's current figures.
func (l *Log) Metrics() Metrics {
	b := l.bounds.Load()
	m := Metrics{
		Appends:           l.appends.Load(),
		AppendedEntries:   l.appendedEntries.Load(),
		AppendedBytes:     l.appendedBytes.Load(),
		Syncs:             l.syncs.Load(),
		LastAppendLatency: time.Duration(l.lastAppendNs.Load()),
		DiskBytes:         l.spareBytes.Load(),
	}
	if !b.empty {
		m.FirstIndex, m.LastIndex, m.Entries = b.first, b.last, b.last-b.first+1
	}
	l.mu.RLock()
	m.Segments = len(l.mu.segs)
	for _, s := range l.mu.segs {
		m.DiskBytes += s.size
	}
	l.mu.RUnlock()
	return m
}

// SyncingSince returns when the disk write the log is waiting on began:
// the StoreLogs in progress (from its first write, a rotation included, to
// the end of its fdatasync), or any other fdatasync of a segment file
// (DeleteRange, recovery, the syncer's after a deferred write); the
// earliest when both the writer and the syncer wait. It reads atomic
// values and never blocks, so a monitor can watch a
// writer stuck in the kernel (zab hands leadership away when the leader's
// has run too long).
func (l *Log) SyncingSince() time.Time {
	ns := l.busySince.Load()
	if s := l.syncerBusy.Load(); s != 0 && (ns == 0 || s < ns) {
		ns = s
	}
	if ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// LastSync returns how long the last completed fdatasync of a segment file
// took; 0 before the first (and always with NoSync).
func (l *Log) LastSync() time.Duration { return time.Duration(l.lastSyncNs.Load()) }

// markBusy records that the log's writer, holding w, starts waiting on the
// disk, unless it already is; the returned function, deferred, ends it.
func (l *Log) markBusy() func() {
	if l.busySince.Load() != 0 {
		return func() {}
	}
	l.busySince.Store(time.Now().UnixNano())
	return func() { l.busySince.Store(0) }
}

// syncFile fdatasyncs the segment file f (named path) unless NoSync,
// counting and reporting the sync.
func (l *Log) syncFile(f *os.File, path string) error {
	if l.noSync {
		return nil
	}
	defer l.markBusy()()
	start := time.Now()
	if l.beforeSync != nil {
		l.beforeSync(path)
	}
	if err := fdatasync(f); err != nil {
		if l.onSyncError != nil {
			l.onSyncError(path, err)
		}
		return fmt.Errorf("wal: fdatasync %s: %w", path, err)
	}
	took := time.Since(start)
	l.syncs.Add(1)
	l.lastSyncNs.Store(int64(took))
	if l.onSync != nil {
		l.onSync(took)
	}
	return nil
}

// goodAfter counts the good records, with consecutive indexes, that follow
// the bad record at res.end in seg (whose length field is intact: its CRC
// failed), up to limit.
func goodAfter(seg *segment, res scanResult, limit int) (int, error) {
	var hdr [recordHeaderSize]byte
	if _, err := seg.f.ReadAt(hdr[:], res.end); err != nil {
		return 0, fmt.Errorf("wal: read %s at offset %d: %w", seg.path, res.end, err)
	}
	off := res.end + recordHeaderSize + int64(binary.LittleEndian.Uint32(hdr[0:4]))
	want := seg.base + uint64(len(res.offsets)) + 1
	n := 0
	for ; n < limit && off+recordHeaderSize <= seg.size; n++ {
		if _, err := seg.f.ReadAt(hdr[:], off); err != nil {
			return 0, fmt.Errorf("wal: read %s at offset %d: %w", seg.path, off, err)
		}
		length := int64(binary.LittleEndian.Uint32(hdr[0:4]))
		if length == 0 || off+recordHeaderSize+length > seg.size {
			break
		}
		rec := make([]byte, recordHeaderSize+length)
		if _, err := seg.f.ReadAt(rec, off); err != nil {
			return 0, fmt.Errorf("wal: read %s at offset %d: %w", seg.path, off, err)
		}
		payload, ok := checkRecord(seg.seed, rec)
		if !ok {
			break
		}
		if idx, err := decodeIndex(payload); err != nil || idx != want {
			break
		}
		off += recordHeaderSize + length
		want++
	}
	return n, nil
}
