package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc64"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// ErrSnapshotNotFound is returned by Open for an unknown snapshot ID.
var ErrSnapshotNotFound = errors.New("store: snapshot not found")

// ErrSnapshotCorrupt is returned by a snapshot reader whose bytes do not
// match the size or checksum recorded when it was written.
var ErrSnapshotCorrupt = errors.New("store: snapshot corrupt")

var crcTable = crc64.MakeTable(crc64.ECMA)

// snapMeta is what is stored under a snapshot's meta key: raft's meta plus
// the checksum of the contents and the creation time.
type snapMeta struct {
	raft.SnapshotMeta
	CRC       uint64
	Chunks    uint64
	CreatedAt time.Time
}

// newerFirst orders metas newest first, as raft's FileSnapshotStore does:
// by term, then index, then ID, descending.
func newerFirst(metas []*snapMeta) {
	sort.Slice(metas, func(i, j int) bool {
		a, b := metas[i], metas[j]
		if a.Term != b.Term {
			return a.Term > b.Term
		}
		if a.Index != b.Index {
			return a.Index > b.Index
		}
		return a.ID > b.ID
	})
}

func metaKey(id string) []byte    { return append([]byte{prefixMeta}, id...) }
func pendingKey(id string) []byte { return append([]byte{prefixPending}, id...) }

// chunkPrefix returns the prefix of all chunk keys of snapshot id. IDs never
// contain the separator, so no ID's prefix is a prefix of another's.
func chunkPrefix(id string) []byte {
	k := append([]byte{prefixChunk}, id...)
	return append(k, chunkSeparator)
}

func chunkKey(id string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(chunkPrefix(id), seq)
}

// validID reports whether id could be a snapshot ID of this store.
func validID(id string) bool {
	return id != "" && !strings.ContainsRune(id, chunkSeparator)
}

// snapshotStore is the raft.SnapshotStore returned by Store.SnapshotStore.
type snapshotStore struct {
	s      *Store
	retain int
}

// SnapshotStore returns a raft.SnapshotStore keeping snapshots in this
// store's database. Contents are split into chunks of
// Options.SnapshotChunkSize bytes written as they arrive; the sink's Close
// commits the meta (raft.SnapshotMeta, configuration included, with a CRC-64
// of the contents) with pebble.Sync, after which List shows it, and then
// deletes all but the newest retain snapshots (retain below 1 counts as 1).
// A cancelled sink, or one whose process died before Close, leaves nothing
// behind (a half-written snapshot is removed by the next Open).
func (s *Store) SnapshotStore(retain int) raft.SnapshotStore {
	if retain < 1 {
		retain = 1
	}
	return &snapshotStore{s: s, retain: retain}
}

// Create starts a new snapshot. The returned sink must be closed or
// cancelled.
func (ss *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64,
	configuration raft.Configuration, configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version < raft.SnapshotVersionMin || version > raft.SnapshotVersionMax {
		return nil, fmt.Errorf("store: unsupported snapshot version %d", version)
	}
	s := ss.s
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	s.snaps.Lock()
	ms := time.Now().UnixMilli()
	if ms <= s.snaps.lastMs {
		ms = s.snaps.lastMs + 1
	}
	s.snaps.lastMs = ms
	s.snaps.Unlock()
	id := fmt.Sprintf("%d-%d-%d", term, index, ms)
	if err := s.db.Set(pendingKey(id), nil, pebble.NoSync); err != nil {
		return nil, fmt.Errorf("store: create snapshot %s: %w", id, err)
	}
	s.log.Info("snapshot started", zap.String("snapshot", id), zap.Uint64("index", index), zap.Uint64("term", term))
	return &snapshotSink{
		ss: ss,
		meta: snapMeta{SnapshotMeta: raft.SnapshotMeta{
			Version:            version,
			ID:                 id,
			Index:              index,
			Term:               term,
			Configuration:      configuration,
			ConfigurationIndex: configurationIndex,
		}},
		crc:   crc64.New(crcTable),
		buf:   make([]byte, 0, s.chunkSize),
		start: time.Now(),
	}, nil
}

// List returns the complete snapshots, newest first.
func (ss *snapshotStore) List() ([]*raft.SnapshotMeta, error) {
	s := ss.s
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.snaps.Lock()
	defer s.snaps.Unlock()
	out := make([]*raft.SnapshotMeta, len(s.snaps.metas))
	for i, m := range s.snaps.metas {
		c := m.SnapshotMeta
		out[i] = &c
	}
	return out, nil
}

// Open returns the meta of snapshot id and a reader streaming its
// contents chunk by chunk from a consistent view of the database (a
// snapshot reaped meanwhile still reads to the end). The reader returns
// ErrSnapshotCorrupt at the end if the size or checksum disagree with the
// meta.
func (ss *snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	s := ss.s
	if err := s.acquire(); err != nil {
		return nil, nil, err
	}
	defer s.release()
	if !validID(id) {
		return nil, nil, fmt.Errorf("%w: %q", ErrSnapshotNotFound, id)
	}
	snap := s.db.NewSnapshot()
	defer snap.Close()
	v, closer, err := snap.Get(metaKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil, fmt.Errorf("%w: %q", ErrSnapshotNotFound, id)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: open snapshot %s: %w", id, err)
	}
	var m snapMeta
	err = json.Unmarshal(v, &m)
	_ = closer.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("store: snapshot %s meta: %w", id, err)
	}
	prefix := chunkPrefix(id)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, nil, fmt.Errorf("store: open snapshot %s: %w", id, err)
	}
	r := &snapshotReader{s: s, it: it, meta: &m, crc: crc64.New(crcTable)}
	r.valid = it.First()
	s.snaps.Lock()
	s.snaps.readers[r] = struct{}{}
	s.snaps.Unlock()
	meta := m.SnapshotMeta
	return &meta, r, nil
}

// snapshotSink buffers a snapshot's bytes into chunks.
type snapshotSink struct {
	ss     *snapshotStore
	meta   snapMeta
	crc    hash.Hash64
	buf    []byte
	start  time.Time
	closed bool
	err    error // sticky write error
}

var _ raft.SnapshotSink = (*snapshotSink)(nil)

// ID returns the snapshot's ID.
func (k *snapshotSink) ID() string { return k.meta.ID }

// Write appends p to the snapshot, storing each full chunk unsynced.
func (k *snapshotSink) Write(p []byte) (int, error) {
	if k.closed {
		return 0, errors.New("store: write to closed snapshot sink")
	}
	if k.err != nil {
		return 0, k.err
	}
	n := len(p)
	_, _ = k.crc.Write(p)
	k.meta.Size += int64(n)
	for len(p) > 0 {
		room := cap(k.buf) - len(k.buf)
		take := min(room, len(p))
		k.buf = append(k.buf, p[:take]...)
		p = p[take:]
		if len(k.buf) == cap(k.buf) {
			if err := k.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// flush stores the buffered bytes as the next chunk.
func (k *snapshotSink) flush() error {
	if len(k.buf) == 0 {
		return nil
	}
	if err := k.ss.s.acquire(); err != nil {
		k.err = err
		return err
	}
	defer k.ss.s.release()
	if err := k.ss.s.db.Set(chunkKey(k.meta.ID, k.meta.Chunks), k.buf, pebble.NoSync); err != nil {
		k.err = fmt.Errorf("store: write snapshot %s: %w", k.meta.ID, err)
		return k.err
	}
	k.meta.Chunks++
	k.buf = k.buf[:0]
	return nil
}

// Close stores the last chunk and commits the meta with pebble.Sync, then
// reaps snapshots beyond the store's retain count. On error the snapshot
// is removed.
func (k *snapshotSink) Close() error {
	if k.closed {
		return nil
	}
	if err := k.flush(); err != nil {
		_ = k.Cancel()
		return err
	}
	k.closed = true
	s := k.ss.s
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	k.meta.CRC = k.crc.Sum64()
	k.meta.CreatedAt = time.Now()
	enc, err := json.Marshal(&k.meta)
	if err != nil {
		_ = k.removeAcquired()
		return fmt.Errorf("store: snapshot %s meta: %w", k.meta.ID, err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(metaKey(k.meta.ID), enc, nil)
	_ = b.Delete(pendingKey(k.meta.ID), nil)
	if err := b.Commit(s.writeOpts); err != nil {
		_ = k.removeAcquired()
		return fmt.Errorf("store: commit snapshot %s: %w", k.meta.ID, err)
	}
	s.log.Info("snapshot written", zap.String("snapshot", k.meta.ID), zap.Int64("size", k.meta.Size),
		zap.Uint64("chunks", k.meta.Chunks), zap.Duration("took", time.Since(k.start)))

	s.snaps.Lock()
	defer s.snaps.Unlock()
	m := k.meta
	s.snaps.metas = append(s.snaps.metas, &m)
	newerFirst(s.snaps.metas)
	return k.ss.reapLocked()
}

// Cancel abandons the snapshot and deletes what was written.
func (k *snapshotSink) Cancel() error {
	if k.closed {
		return nil
	}
	k.closed = true
	return k.remove()
}

// remove deletes the sink's chunks and pending marker.
func (k *snapshotSink) remove() error {
	if err := k.ss.s.acquire(); err != nil {
		return err
	}
	defer k.ss.s.release()
	return k.removeAcquired()
}

// removeAcquired is remove for a caller that already holds acquire.
func (k *snapshotSink) removeAcquired() error {
	s := k.ss.s
	b := s.db.NewBatch()
	defer b.Close()
	prefix := chunkPrefix(k.meta.ID)
	_ = b.DeleteRange(prefix, prefixEnd(prefix), nil)
	_ = b.Delete(pendingKey(k.meta.ID), nil)
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("store: cancel snapshot %s: %w", k.meta.ID, err)
	}
	return nil
}

// reapLocked deletes the snapshots beyond retain. s.snaps is held.
func (ss *snapshotStore) reapLocked() error {
	s := ss.s
	if len(s.snaps.metas) <= ss.retain {
		return nil
	}
	old := s.snaps.metas[ss.retain:]
	b := s.db.NewBatch()
	defer b.Close()
	for _, m := range old {
		prefix := chunkPrefix(m.ID)
		_ = b.Delete(metaKey(m.ID), nil)
		_ = b.DeleteRange(prefix, prefixEnd(prefix), nil)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("store: reap snapshots: %w", err)
	}
	for _, m := range old {
		s.log.Info("snapshot reaped", zap.String("snapshot", m.ID))
	}
	s.snaps.metas = s.snaps.metas[:ss.retain:ss.retain]
	return nil
}

// snapshotReader streams a snapshot's chunks from a Pebble iterator. Its
// mutex lets Store.Close release the iterator of a reader still open.
type snapshotReader struct {
	s     *Store
	mu    sync.Mutex
	it    *pebble.Iterator // nil once closed
	meta  *snapMeta
	crc   hash.Hash64
	valid bool // it is positioned on a chunk
	off   int  // bytes of the current chunk already returned
	n     int64
	err   error // sticky
}

// Read implements io.Reader.
func (r *snapshotReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	total := 0
	for len(p) > 0 {
		if !r.valid {
			if err := r.it.Error(); err != nil {
				r.err = r.s.noteCorrupt(fmt.Errorf("store: read snapshot %s in %s: %w", r.meta.ID, r.s.dir, err))
			} else if r.n != r.meta.Size || r.crc.Sum64() != r.meta.CRC {
				r.err = r.s.noteCorrupt(fmt.Errorf("%w: %s in %s read %d bytes, crc %x; meta says %d bytes, crc %x",
					ErrSnapshotCorrupt, r.meta.ID, r.s.dir, r.n, r.crc.Sum64(), r.meta.Size, r.meta.CRC))
			} else {
				r.err = io.EOF
			}
			if total > 0 {
				return total, nil
			}
			return 0, r.err
		}
		v := r.it.Value()
		c := copy(p, v[r.off:])
		_, _ = r.crc.Write(p[:c])
		r.off += c
		r.n += int64(c)
		total += c
		p = p[c:]
		if r.off == len(v) {
			r.off = 0
			r.valid = r.it.Next()
		}
	}
	return total, nil
}

// Close releases the iterator. Reading afterwards fails.
//
// It also empties the block cache: a snapshot is read whole and seldom
// (a restore, or sending it to a follower), so its blocks, which would
// otherwise fill the cache (64 MiB by default, 64 bytes of resident memory
// per znode at 1M znodes after a restart), are of no further use. Raft log
// blocks dropped with them are read again on demand.
func (r *snapshotReader) Close() error {
	r.s.snaps.Lock()
	delete(r.s.snaps.readers, r)
	r.s.snaps.Unlock()
	err := r.release(errors.New("store: read from closed snapshot reader"))
	r.s.cache.Reserve(int(r.s.cacheSize))()
	return err
}

// release closes the iterator once and makes later reads return cause.
func (r *snapshotReader) release(cause error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.it == nil {
		return nil
	}
	err := r.it.Close()
	r.it = nil
	r.valid = false
	if r.err == nil || r.err == io.EOF {
		r.err = cause
	}
	return err
}

// dropPendingSnapshots deletes the chunks of snapshots whose sink never
// closed (the process died mid-write).
func (s *Store) dropPendingSnapshots() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixPending}, UpperBound: []byte{prefixPending + 1}})
	if err != nil {
		return fmt.Errorf("store: scan pending snapshots: %w", err)
	}
	var ids []string
	for ok := it.First(); ok; ok = it.Next() {
		ids = append(ids, string(it.Key()[1:]))
	}
	err = errors.Join(it.Error(), it.Close())
	if err != nil {
		return fmt.Errorf("store: scan pending snapshots: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, id := range ids {
		prefix := chunkPrefix(id)
		_ = b.DeleteRange(prefix, prefixEnd(prefix), nil)
		_ = b.Delete(pendingKey(id), nil)
		s.log.Warn("removing incomplete snapshot", zap.String("snapshot", id))
	}
	if err := b.Commit(s.writeOpts); err != nil {
		return fmt.Errorf("store: remove incomplete snapshots: %w", err)
	}
	return nil
}

// loadSnapshotMetas reads every stored snapshot meta, newest first.
func (s *Store) loadSnapshotMetas() ([]*snapMeta, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixMeta}, UpperBound: []byte{prefixMeta + 1}})
	if err != nil {
		return nil, fmt.Errorf("store: scan snapshots: %w", err)
	}
	defer it.Close()
	var metas []*snapMeta
	for ok := it.First(); ok; ok = it.Next() {
		m := new(snapMeta)
		if err := json.NewDecoder(bytes.NewReader(it.Value())).Decode(m); err != nil {
			return nil, fmt.Errorf("store: snapshot meta %q: %w", it.Key()[1:], err)
		}
		metas = append(metas, m)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("store: scan snapshots: %w", err)
	}
	newerFirst(metas)
	return metas, nil
}
