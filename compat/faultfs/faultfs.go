package faultfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is one mounted fault file system. Its methods are safe for concurrent
// use, and may be called while other processes use the mount.
type FS struct {
	backing string
	mnt     string
	server  *fuse.Server

	mu         sync.Mutex // guards everything below, and serializes writes
	fsyncErr   syscall.Errno
	writeErr   syscall.Errno
	spaceLeft  int64 // -1: unlimited
	fsyncDelay time.Duration
	filter     func(rel string) bool
	injected   int
	files      map[uint64]*fileState // by backing inode number
}

// fileState is what faultfs knows of a file written through the mount
// since it was last fsynced.
type fileState struct {
	path       string // backing path, kept current across renames
	named      bool   // its directory entry survives a power cut
	syncedSize int64
	undo       []undoRec
}

// undoRec holds bytes a write or truncate replaced, to put back at a power
// cut.
type undoRec struct {
	off  int64
	data []byte
}

// Mount mounts a loopback of backing at mnt (both existing directories)
// with no fault set, and returns once the mount answers.
func Mount(backing, mnt string) (*FS, error) {
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("faultfs: backing directory %s: %w", backing, err)
	}
	f := &FS{backing: backing, mnt: mnt, spaceLeft: -1, files: map[uint64]*fileState{}}
	root := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, ffs: f}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)
	zero := time.Duration(0)
	srv, err := fs.Mount(mnt, root.RootNode, &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:      "faultfs",
			Name:        "faultfs",
			DirectMount: true,
			// Writes must reach Write one by one, as the caller issued
			// them: no kernel write-back cache.
			DisableXAttrs: true,
		},
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
	})
	if err != nil {
		return nil, fmt.Errorf("faultfs: mount %s on %s: %w", backing, mnt, err)
	}
	f.server = srv
	if err := srv.WaitMount(); err != nil {
		_ = srv.Unmount()
		return nil, fmt.Errorf("faultfs: mount %s: %w", mnt, err)
	}
	return f, nil
}

// MountTemp mounts a file system over a fresh temporary directory of t
// at another, and unmounts it when t ends: after the cleanups registered
// later, such as those stopping the processes that use it.
func MountTemp(t testing.TB) *FS {
	t.Helper()
	f, err := Mount(t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// Unmount unmounts the file system. Files still open through it make this
// fail with EBUSY; stop the processes using it first.
func (f *FS) Unmount() error {
	var err error
	for i := 0; i < 50; i++ {
		if err = f.server.Unmount(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("faultfs: unmount %s: %w", f.mnt, err)
}

// Dir is the mount point.
func (f *FS) Dir() string { return f.mnt }

// SetFsyncError makes every fsync and fdatasync (of a file or directory
// the filter accepts) fail with errno; 0 lets them succeed again. A failed
// fsync syncs nothing: the file keeps its undo log.
func (f *FS) SetFsyncError(errno syscall.Errno) {
	f.mu.Lock()
	f.fsyncErr = errno
	f.mu.Unlock()
}

// SetWriteError makes every write fail with errno, writing nothing; 0 lets
// them succeed again.
func (f *FS) SetWriteError(errno syscall.Errno) {
	f.mu.Lock()
	f.writeErr = errno
	f.mu.Unlock()
}

// SetSpaceLeft lets n more bytes be allocated, after which allocating
// writes fail with ENOSPC; a negative n means unlimited (the default).
func (f *FS) SetSpaceLeft(n int64) {
	f.mu.Lock()
	f.spaceLeft = n
	f.mu.Unlock()
}

// SetFsyncDelay makes every fsync and fdatasync wait d before it is done
// (0: no delay).
func (f *FS) SetFsyncDelay(d time.Duration) {
	f.mu.Lock()
	f.fsyncDelay = d
	f.mu.Unlock()
}

// SetFilter limits every fault to the paths (relative to the mount, as
// "data/000001.wal") for which accept is true; nil applies them everywhere.
func (f *FS) SetFilter(accept func(rel string) bool) {
	f.mu.Lock()
	f.filter = accept
	f.mu.Unlock()
}

// Clear removes every fault and the filter.
func (f *FS) Clear() {
	f.mu.Lock()
	f.fsyncErr, f.writeErr, f.spaceLeft, f.fsyncDelay, f.filter = 0, 0, -1, 0, nil
	f.mu.Unlock()
}

// Injected is the number of operations answered with an injected fault or
// delay so far.
func (f *FS) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

// applies reports whether faults apply to backing path p. f.mu is held.
func (f *FS) applies(p string) bool {
	if f.filter == nil {
		return true
	}
	rel, err := filepath.Rel(f.backing, p)
	if err != nil {
		return false
	}
	return f.filter(rel)
}

// state returns the tracked state of the file with inode ino at backing
// path p, starting it (as synced, named, at its current size) if the file
// is not tracked yet. f.mu is held.
func (f *FS) state(ino uint64, p string, size int64) *fileState {
	s := f.files[ino]
	if s == nil {
		s = &fileState{path: p, named: true, syncedSize: size}
		f.files[ino] = s
	}
	return s
}

// PowerCut puts every file written through the mount back as it was at its
// last fsync, and removes files never fsynced whose directory was never
// fsynced either; files the filter rejects are left as they are. Faults
// stay as set. Call it with no process writing to
// the mount.
func (f *FS) PowerCut() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	inos := make([]uint64, 0, len(f.files))
	for ino := range f.files {
		inos = append(inos, ino)
	}
	sort.Slice(inos, func(i, j int) bool { return inos[i] < inos[j] })
	for _, ino := range inos {
		s := f.files[ino]
		if !f.applies(s.path) {
			continue // outside the filter: as if synced
		}
		if !s.named {
			if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if err := s.restore(); err != nil {
			errs = append(errs, err)
		}
	}
	f.files = map[uint64]*fileState{}
	return errors.Join(errs...)
}

// restore replays s's undo log backwards and cuts the file to its synced
// size.
func (s *fileState) restore() error {
	fh, err := os.OpenFile(s.path, os.O_WRONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // unlinked since: unlinks are durable at once
		}
		return fmt.Errorf("faultfs: power cut: %w", err)
	}
	defer fh.Close()
	for i := len(s.undo) - 1; i >= 0; i-- {
		u := s.undo[i]
		if _, err := fh.WriteAt(u.data, u.off); err != nil {
			return fmt.Errorf("faultfs: power cut: restore %s at %d: %w", s.path, u.off, err)
		}
	}
	if err := fh.Truncate(s.syncedSize); err != nil {
		return fmt.Errorf("faultfs: power cut: truncate %s to %d: %w", s.path, s.syncedSize, err)
	}
	return fh.Sync()
}

// fsync runs the fsync of the file or directory at backing path p with the
// faults set, calling do for the real sync, and on success marks what it
// made durable: the file's contents and name (file), or the names of the
// files directly in it (directory).
func (f *FS) fsync(p string, ino uint64, isDir bool, do func() syscall.Errno) syscall.Errno {
	f.mu.Lock()
	applies := f.applies(p)
	delay, errno := f.fsyncDelay, f.fsyncErr
	if !applies {
		delay, errno = 0, 0
	}
	if delay > 0 || errno != 0 {
		f.injected++
	}
	f.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	if errno != 0 {
		return errno
	}
	if e := do(); e != 0 {
		return e
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if isDir {
		for _, s := range f.files {
			if filepath.Dir(s.path) == p {
				s.named = true
			}
		}
		return 0
	}
	if s := f.files[ino]; s != nil {
		var st syscall.Stat_t
		if err := syscall.Stat(s.path, &st); err == nil {
			s.syncedSize = st.Size
		}
		s.named, s.undo = true, nil
	}
	return 0
}

// write runs a write of n bytes at off to the file open as fd (inode ino,
// backing path p) with the faults set, keeping the bytes it replaces.
func (f *FS) write(fd int, ino uint64, p string, n int64, off int64, do func() (int, error)) (uint32, syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	applies := f.applies(p)
	if applies && f.writeErr != 0 {
		f.injected++
		return 0, f.writeErr
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, fs.ToErrno(err)
	}
	if grow := off + n - st.Size; grow > 0 && applies && f.spaceLeft >= 0 {
		if grow > f.spaceLeft {
			f.injected++
			return 0, syscall.ENOSPC
		}
		f.spaceLeft -= grow
	}
	s := f.state(ino, p, st.Size)
	if e := s.keep(off, min(off+n, st.Size)); e != 0 {
		return 0, e
	}
	w, err := do()
	return uint32(max(w, 0)), fs.ToErrno(err)
}

// keep saves the file's bytes in [from, to) to its undo log, reading
// them through a descriptor of its own: the writer's may be write-only.
func (s *fileState) keep(from, to int64) syscall.Errno {
	if to <= from {
		return 0
	}
	fd, err := syscall.Open(s.path, syscall.O_RDONLY, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	old := make([]byte, to-from)
	r, err := syscall.Pread(fd, old, from)
	if err != nil {
		return fs.ToErrno(err)
	}
	s.undo = append(s.undo, undoRec{off: from, data: old[:r]})
	return 0
}

// resize runs a change of the file's size to size (truncate or fallocate)
// with the faults set, keeping the bytes a shrink drops.
func (f *FS) resize(fd int, ino uint64, p string, size int64, do func() syscall.Errno) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	applies := f.applies(p)
	if grow := size - st.Size; grow > 0 && applies && f.spaceLeft >= 0 {
		if grow > f.spaceLeft {
			f.injected++
			return syscall.ENOSPC
		}
		f.spaceLeft -= grow
	}
	s := f.state(ino, p, st.Size)
	if e := s.keep(size, st.Size); e != 0 {
		return e
	}
	return do()
}

// created records a file just created through the mount: its name is not
// durable until it or its directory is fsynced.
func (f *FS) created(ino uint64, p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[ino] = &fileState{path: p}
}

// noSpace reports whether creating an entry at p must fail with ENOSPC.
func (f *FS) noSpace(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spaceLeft == 0 && f.applies(p) {
		f.injected++
		return true
	}
	return false
}

// renamed moves the tracked state of the file now at newPath, and forgets
// the file it replaced.
func (f *FS) renamed(movedIno, replacedIno uint64, newPath string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if replacedIno != 0 && replacedIno != movedIno {
		delete(f.files, replacedIno)
	}
	if s := f.files[movedIno]; s != nil {
		s.path = newPath
	}
}

// unlinked forgets the file with inode ino.
func (f *FS) unlinked(ino uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.files, ino)
}

// inoOf is the backing inode number of the file at p, 0 if there is none.
func inoOf(p string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return 0
	}
	return st.Ino
}

// node is a loopback node whose file handles and syncs go through FS.
type node struct {
	fs.LoopbackNode
	ffs *FS
}

var (
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
)

// backingPath is the node's path in the backing directory.
func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

// Open opens the backing file and wraps its handle.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, e := n.LoopbackNode.Open(ctx, flags)
	if e != 0 {
		return nil, 0, e
	}
	return n.wrap(fh.(*fs.LoopbackFile)), fl, 0
}

// Create creates the backing file, tracked as not yet durable.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	p := filepath.Join(n.backingPath(), name)
	if n.ffs.noSpace(p) {
		return nil, nil, 0, syscall.ENOSPC
	}
	existed := inoOf(p) != 0
	in, fh, fl, e := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if e != 0 {
		return nil, nil, 0, e
	}
	child, ok := in.Operations().(*node)
	if !ok {
		return nil, nil, 0, syscall.EIO
	}
	h := child.wrap(fh.(*fs.LoopbackFile))
	if !existed {
		n.ffs.created(h.ino, p)
	}
	return in, h, fl, 0
}

// Mkdir answers ENOSPC when no space is left.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.ffs.noSpace(filepath.Join(n.backingPath(), name)) {
		return nil, syscall.ENOSPC
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

// wrap makes a handle whose writes and syncs go through FS.
func (n *node) wrap(lf *fs.LoopbackFile) *handle {
	h := &handle{LoopbackFile: lf, n: n}
	var st syscall.Stat_t
	_ = h.fd(func(fd int) syscall.Errno { return fs.ToErrno(syscall.Fstat(fd, &st)) })
	h.ino = st.Ino
	return h
}

// Fsync syncs the file (through its handle) or, when the kernel sends no
// handle, the node's backing path.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if h, ok := f.(*handle); ok {
		return h.Fsync(ctx, flags)
	}
	p := n.backingPath()
	return n.ffs.fsync(p, inoOf(p), n.IsDir(), func() syscall.Errno { return syncPath(p) })
}

// syncPath fsyncs the file or directory at p.
func syncPath(p string) syscall.Errno {
	fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	return fs.ToErrno(syscall.Fsync(fd))
}

// Setattr keeps the bytes a truncate drops before truncating.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if h, ok := f.(*handle); ok {
		return h.Setattr(ctx, in, out)
	}
	size, ok := in.GetSize()
	if !ok || n.IsDir() {
		return n.LoopbackNode.Setattr(ctx, f, in, out)
	}
	p := n.backingPath()
	fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	return n.ffs.resize(fd, st.Ino, p, int64(size), func() syscall.Errno {
		return n.LoopbackNode.Setattr(ctx, f, in, out)
	})
}

// Rename renames the backing file and moves its tracked state.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	from := filepath.Join(n.backingPath(), name)
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	to := filepath.Join(np.backingPath(), newName)
	moved, replaced := inoOf(from), inoOf(to)
	if e := n.LoopbackNode.Rename(ctx, name, &np.LoopbackNode, newName, flags); e != 0 {
		return e
	}
	n.ffs.renamed(moved, replaced, to)
	return 0
}

// Unlink removes the backing file and forgets its tracked state.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	ino := inoOf(filepath.Join(n.backingPath(), name))
	if e := n.LoopbackNode.Unlink(ctx, name); e != 0 {
		return e
	}
	n.ffs.unlinked(ino)
	return 0
}

// OpendirHandle opens the directory with a handle whose fsync goes through
// FS.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	ds, e := fs.NewLoopbackDirStream(n.backingPath())
	if e != 0 {
		return nil, 0, e
	}
	return &dirHandle{DirStream: ds, n: n}, 0, 0
}

// handle is an open file whose writes, resizes and syncs go through FS.
type handle struct {
	*fs.LoopbackFile
	n   *node
	ino uint64
}

// fd runs fn with the handle's file descriptor.
func (h *handle) fd(fn func(fd int) syscall.Errno) syscall.Errno {
	var e syscall.Errno = syscall.EBADF
	// LoopbackFile does not export its descriptor except through
	// PassthroughFd, which hands it out without transferring it.
	if fd, ok := h.LoopbackFile.PassthroughFd(); ok {
		e = fn(fd)
	}
	return e
}

// PassthroughFd refuses kernel passthrough: every write must come here.
func (h *handle) PassthroughFd() (int, bool) { return 0, false }

// Write writes data at off, with the faults set.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	var w uint32
	e := h.fd(func(fd int) syscall.Errno {
		var e syscall.Errno
		w, e = h.n.ffs.write(fd, h.ino, h.n.backingPath(), int64(len(data)), off, func() (int, error) {
			return syscall.Pwrite(fd, data, off)
		})
		return e
	})
	return w, e
}

// Writev writes the slices of data one after the other at off.
func (h *handle) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	var total uint32
	for _, d := range data {
		w, e := h.Write(ctx, d, off+int64(total))
		total += w
		if e != 0 {
			return total, e
		}
		if int(w) < len(d) {
			break
		}
	}
	return total, 0
}

// Fsync syncs the file, with the faults set.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return h.fd(func(fd int) syscall.Errno {
		return h.n.ffs.fsync(h.n.backingPath(), h.ino, false, func() syscall.Errno {
			return fs.ToErrno(syscall.Fsync(fd))
		})
	})
}

// Setattr keeps the bytes a truncate drops before truncating.
func (h *handle) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	size, ok := in.GetSize()
	if !ok {
		return h.LoopbackFile.Setattr(ctx, in, out)
	}
	return h.fd(func(fd int) syscall.Errno {
		return h.n.ffs.resize(fd, h.ino, h.n.backingPath(), int64(size), func() syscall.Errno {
			return h.LoopbackFile.Setattr(ctx, in, out)
		})
	})
}

// Allocate counts the space a fallocate adds.
func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	return h.fd(func(fd int) syscall.Errno {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return fs.ToErrno(err)
		}
		end := max(int64(off+size), st.Size)
		const keepSize = 1 // FALLOC_FL_KEEP_SIZE
		if mode&keepSize != 0 {
			end = st.Size
		}
		return h.n.ffs.resize(fd, h.ino, h.n.backingPath(), end, func() syscall.Errno {
			return h.LoopbackFile.Allocate(ctx, off, size, mode)
		})
	})
}

// dirHandle is an open directory whose fsync goes through FS.
type dirHandle struct {
	fs.DirStream
	n *node
}

// Readdirent forwards to the loopback directory stream.
func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.DirStream.(fs.FileReaddirenter).Readdirent(ctx)
}

// Seekdir forwards to the loopback directory stream.
func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.DirStream.(fs.FileSeekdirer).Seekdir(ctx, off)
}

// Releasedir forwards to the loopback directory stream.
func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	d.DirStream.(fs.FileReleasedirer).Releasedir(ctx, flags)
}

// Fsyncdir syncs the directory, with the faults set, making the names in
// it durable.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	p := d.n.backingPath()
	return d.n.ffs.fsync(p, 0, true, func() syscall.Errno { return syncPath(p) })
}
