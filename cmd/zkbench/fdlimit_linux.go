package main

import "golang.org/x/sys/unix"

// setNoFile sets the RLIMIT_NOFILE soft limit of process pid to soft (its
// hard limit unchanged) and returns the soft limit it had.
func setNoFile(pid int, soft uint64) (uint64, error) {
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		return 0, err
	}
	return old.Cur, unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: min(soft, old.Max), Max: old.Max}, nil)
}
