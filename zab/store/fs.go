package store

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// countingFS wraps Pebble's filesystem to count and time the fsyncs of
// write-ahead-log files (named *.log), which is what Metrics reports as
// WALSyncs and LastWALSyncLatency.
type countingFS struct {
	vfs.FS
	syncs      atomic.Uint64
	lastSyncNs atomic.Int64
	onSync     func(time.Duration) // Options.OnWALSync; may be nil
}

func (fs *countingFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &countingFile{File: f, fs: fs}, nil
}

// Create implements vfs.FS.
func (fs *countingFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f, err)
}

// ReuseForWrite implements vfs.FS; Pebble recycles old WAL files with it.
func (fs *countingFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(newname, f, err)
}

// countingFile is a WAL file whose syncs are counted.
type countingFile struct {
	vfs.File
	fs *countingFS
}

func (f *countingFile) timed(start time.Time) {
	d := time.Since(start)
	f.fs.syncs.Add(1)
	f.fs.lastSyncNs.Store(int64(d))
	if f.fs.onSync != nil {
		f.fs.onSync(d)
	}
}

// Sync implements vfs.File.
func (f *countingFile) Sync() error {
	defer f.timed(time.Now())
	return f.File.Sync()
}

// SyncData implements vfs.File.
func (f *countingFile) SyncData() error {
	defer f.timed(time.Now())
	return f.File.SyncData()
}

// SyncTo implements vfs.File.
func (f *countingFile) SyncTo(length int64) (bool, error) {
	defer f.timed(time.Now())
	return f.File.SyncTo(length)
}
