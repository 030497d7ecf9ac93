package wal

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data (and only the metadata needed to read it back)
// to stable storage. Writes into preallocated space need no size update, so
// this flushes no inode.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fdatasync(int(fd)) }); err != nil {
		return err
	}
	return serr
}
