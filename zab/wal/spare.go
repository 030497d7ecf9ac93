package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"
)

// preallocSyncEvery is how many bytes of zeros preallocate writes between
// two fsyncs.
const preallocSyncEvery = 2 << 20

// errStopped ends a preallocation that Close interrupted.
var errStopped = errors.New("wal: stopped")

// spareLoop prepares a spare segment each time one is wanted, until Close.
// Rotation then only renames it, instead of writing a segment of zeros on
// raft's write path.
func (l *Log) spareLoop() {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		case <-l.spareWanted:
		}
		l.spare.Lock()
		if l.spare.f == nil {
			f, err := l.makeSpareLocked(l.stop)
			switch {
			case err == nil:
				l.spare.f = f
			case !errors.Is(err, errStopped):
				// The next rotation tries again inline and reports the
				// error to raft if it persists.
				l.log.Warn("preparing a spare segment failed", zap.Error(err))
			}
		}
		l.spare.Unlock()
	}
}

// wantSpare asks spareLoop to prepare a spare if none is ready.
func (l *Log) wantSpare() {
	select {
	case l.spareWanted <- struct{}{}:
	default:
	}
}

// makeSpareLocked preallocates a SegmentSize file as spareTmpName and
// renames it to spareName once complete, so that Open can tell a finished
// spare from a half-made one. A close of stop aborts it with errStopped.
func (l *Log) makeSpareLocked(stop <-chan struct{}) (*os.File, error) {
	tmp := filepath.Join(l.dir, spareTmpName)
	f, err := l.preallocate(tmp, l.segmentSize, stop)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(l.dir, spareName)
	if err := os.Rename(tmp, path); err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("wal: rename %s: %w", tmp, err)
	}
	if !l.noSync {
		if err := syncDir(l.dir); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	l.spareBytes.Store(l.segmentSize)
	return f, nil
}

// takeSpare installs the ready spare as the segment path with header hdr
// (see installSegment) and hands it over, first preparing one inline if
// none is ready (waiting for spareLoop if it is preparing one), then asks
// for the next. It installs under the spare lock, before spareLoop can put
// a new spare under the same name.
func (l *Log) takeSpare(path string, hdr []byte) (*os.File, error) {
	l.spare.Lock()
	defer l.spare.Unlock()
	f := l.spare.f
	if f == nil {
		var err error
		if f, err = l.makeSpareLocked(nil); err != nil {
			return nil, err
		}
	}
	l.spare.f = nil
	l.spareBytes.Store(0)
	if err := l.installSegment(f, filepath.Join(l.dir, spareName), path, hdr); err != nil {
		return nil, err
	}
	l.wantSpare()
	return f, nil
}

// preallocate creates path as a file of size bytes of zeros, written out so
// that later writes into it change neither the file size nor its extents
// (and an fdatasync after them flushes data only), and fsyncs it. With
// NoSync it only sets the size: a sparse file reads as zeros too. A close
// of stop aborts it with errStopped and removes the file.
func (l *Log) preallocate(path string, size int64, stop <-chan struct{}) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", path, err)
	}
	fail := func(err error) (*os.File, error) {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, err
	}
	if l.noSync {
		if err := f.Truncate(size); err != nil {
			return fail(fmt.Errorf("wal: size %s: %w", path, err))
		}
		return f, nil
	}
	unsynced := int64(0)
	for off := int64(0); off < size; {
		select {
		case <-stop:
			return fail(errStopped)
		default:
		}
		n := min(size-off, int64(len(zeroChunk)))
		if _, err := f.WriteAt(zeroChunk[:n], off); err != nil {
			return fail(fmt.Errorf("wal: preallocate %s at offset %d: %w", path, off, err))
		}
		off += n
		// Synced as it goes, a few MiB at a time: one flush of the whole
		// segment at the end would queue its 64 MiB ahead of the
		// fdatasync of every raft append made meanwhile.
		if unsynced += n; unsynced >= preallocSyncEvery || off == size {
			if err := f.Sync(); err != nil {
				return fail(fmt.Errorf("wal: fsync %s: %w", path, err))
			}
			unsynced = 0
		}
	}
	if size == 0 {
		if err := f.Sync(); err != nil {
			return fail(fmt.Errorf("wal: fsync %s: %w", path, err))
		}
	}
	return f, nil
}
