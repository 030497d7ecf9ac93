// Package faultfs is a fault-injecting FUSE file system for tests: a
// loopback mount of a real directory that, on command from the test, makes
// the disk misbehave under a real process (a zkd member whose data
// directory sits on the mount) or under plain os.File calls.
//
// The test process serves the mount itself (go-fuse runs the FUSE server
// in goroutines), so the Go API below is how a test flips a fault while a
// child process keeps writing:
//
//	ffs, err := faultfs.Mount(backingDir, mountDir)
//	defer ffs.Unmount()
//	ffs.SetFsyncError(syscall.EIO)   // every fsync/fdatasync now fails
//	ffs.SetWriteError(syscall.EIO)   // every write now fails
//	ffs.SetSpaceLeft(0)              // ENOSPC on any write that allocates
//	ffs.SetFsyncDelay(3*time.Second) // every fsync takes 3 s longer
//	ffs.Clear()                      // no faults
//	ffs.PowerCut()                   // drop every write not yet fsynced
//
// MountTemp mounts one over fresh temporary directories of a test and
// unmounts it when the test ends.
//
// SetFilter restricts the faults to paths (relative to the mount) a
// predicate accepts; Injected counts the faults answered so far, so a test
// can wait for the first one instead of sleeping.
//
// # Space
//
// SetSpaceLeft(n) lets n more bytes be allocated, then answers ENOSPC. Only
// writes that allocate count: bytes written past a file's end, truncate or
// fallocate growing a file, and (once no space is left) creating a file or
// directory. Overwriting bytes a file already has succeeds, as on a real
// full disk, where preallocated blocks stay writable.
//
// # Power cut
//
// As lazyfs does, faultfs remembers what each file held at its last fsync:
// before a write overwrites bytes, or a truncate drops them, it keeps the
// old bytes in an undo log for that file (only bytes below the file's size:
// growth needs no undo, the file is cut back to its synced size). A
// successful fsync or fdatasync of the file empties its undo log. PowerCut
// replays every undo log backwards and truncates each file to its size at
// its last fsync, and removes each file created through the mount that was
// never fsynced and whose directory was never fsynced since. Stop the
// process using the mount before PowerCut, as a real power cut would.
//
// Limits of the model: renames and unlinks are durable at once (a rename
// is not undone by a power cut, even before its directory is synced), and
// an fsync of a directory makes the names of the files in it durable but
// syncs nothing else. Those are the guarantees journaling file systems
// give in practice; they are weaker than POSIX.
//
// A process the test starts should not have its working directory (or
// anything else it touches before exec) on the mount: os/exec holds
// syscall.ForkLock until the child has exec'd, which can stall the FUSE
// server in the same process. Keep a member's directory off the mount and
// link its data directory onto it, as compat/diskfault does.
//
// Mounting needs /dev/fuse and CAP_SYS_ADMIN (the mount is made directly,
// without fusermount). Kernel caching of attributes and entries is turned
// off, so what a PowerCut restores is what the next open sees.
package faultfs
