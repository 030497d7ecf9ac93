//go:build !linux

package main

import "errors"

// setNoFile needs Linux's prlimit.
func setNoFile(pid int, soft uint64) (uint64, error) {
	return 0, errors.New("zkbench: -fault fd-limit needs Linux (prlimit)")
}
