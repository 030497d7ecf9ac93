package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"

	"go.uber.org/zap"
)

// exitCorrupt is zkd's exit status when its data directory is corrupt:
// EX_DATAERR of sysexits.h.
const exitCorrupt = 65

// exitDiskFailure is zkd's exit status after a failed fsync: EX_IOERR of
// sysexits.h.
const exitDiskFailure = 74

// diskFailure returns zab.Config.OnDiskFailure for the process: the first
// failed fsync logs one line naming the file and what to do, and exits with
// exitDiskFailure. Nothing acknowledged is lost by exiting: a write is
// acknowledged only after its fsync succeeded, and the restart recovers
// from what the disk holds (a member of an ensemble also catches up from
// its peers). Carrying on would not be safe: after a failed fsync Linux
// may mark the lost pages clean, so a later fsync can succeed over data the
// disk never got (PostgreSQL's "fsyncgate").
func diskFailure(log *zap.Logger, dataDir string) func(file string, err error) {
	var once sync.Once
	return func(file string, err error) {
		once.Do(func() {
			if isDiskFull(err) {
				log.Error(diskFullMessage(dataDir, err), zap.String("file", file), zap.Error(err), zap.Int("exit", exitDiskFailure))
				_ = log.Sync()
				os.Exit(exitDiskFailure)
			}
			log.Error(fmt.Sprintf("DISK FAILURE: fsync of %s failed (%v); zkd stops now, since the page cache may hold writes the disk lost. "+
				"Check the disk (dmesg, SMART) and restart zkd once it is healthy: it recovers what was synced, and a member catches up from its peers",
				file, err), zap.String("file", file), zap.Error(err), zap.Int("exit", exitDiskFailure))
			_ = log.Sync()
			os.Exit(exitDiskFailure)
		})
		select {} // another goroutine is exiting the process
	}
}

// isDiskFull reports whether err is ENOSPC, or Pebble's fatal message for
// it (Pebble reports a failed commit as text).
func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), syscall.ENOSPC.Error())
}

// diskFullMessage is the one line zkd logs when it stops, or cannot start,
// because the file system of dataDir is full.
func diskFullMessage(dataDir string, err error) string {
	return fmt.Sprintf("DISK FULL: no space left on the file system of dataDir %s (%v); zkd stops. "+
		"Free space there (old snapshots and logs, other files; see autopurge.*) and start zkd again: nothing acknowledged is lost", dataDir, err)
}

// corruptMessage is the one line zkd logs when it refuses to start on a
// corrupt data directory; err names the file and the offset. Pebble's
// errors may span lines: they are joined into the one. cfgPath is the
// zoo.cfg zkd was started with, named in the rebuild command.
func corruptMessage(dataDir, cfgPath string, err error) string {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
	return fmt.Sprintf("CORRUPT DATA in dataDir %s: %s; zkd refuses to start. "+
		"A member of an ensemble: rebuild it from its peers with `zkd rebuild %s` (it moves the data aside, keeping it), then start zkd: "+
		"it copies the leader's state and votes again once caught up. "+
		"Standalone: restore the data directory from a backup", dataDir, msg, cfgPath)
}

// cfgPathOr is the zoo.cfg path for messages ("zoo.cfg" when zkd runs
// without one).
func cfgPathOr(path string) string {
	if path == "" {
		return "zoo.cfg"
	}
	return path
}
