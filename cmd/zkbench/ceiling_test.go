package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCeiling runs both minimal servers in a child process, as make
// ceiling does, and checks that the clients got answers.
func TestCeiling(t *testing.T) {
	for _, mode := range ceilingModes {
		t.Run("mode="+mode, func(t *testing.T) {
			cfg, err := parseArgs([]string{"-workload", "ceiling", "-ceiling", mode, "-ceiling-dir", t.TempDir(),
				"-clients", "3", "-duration", "300ms", "-warmup", "50ms"}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			res, err := run(context.Background(), cfg, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if res.Workload != "ceiling-"+mode || res.Ops == 0 || res.Errors != 0 || res.Latency.P50 <= 0 {
				t.Fatalf("result %+v: want answers and no errors", res)
			}
		})
	}
}

// TestCeilingBadMode checks that -ceiling takes only the known servers.
func TestCeilingBadMode(t *testing.T) {
	if _, err := parseArgs([]string{"-workload", "ceiling", "-ceiling", "fast"}, io.Discard); err == nil {
		t.Fatal("-ceiling fast accepted")
	}
}

// TestCeilingLogGroupCommit checks the append server's group commit: frames
// queued while no batch runs go out in one batch, each waiter is released
// only after its batch was written, and the log file holds them all.
func TestCeilingLogGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := openCeilingLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.f.Close()
	waits := make([]func() error, 10)
	for i := range waits {
		waits[i] = l.add()
	}
	go l.run()
	done := make(chan error)
	go func() {
		for _, w := range waits {
			if err := w(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waiters not released")
	}
	if got := l.synced.Load(); got != 10 {
		t.Fatalf("synced %d frames, want 10", got)
	}
	if l.off != 10*ceilingRequest {
		t.Fatalf("log offset %d, want %d: the ten frames were not written as one batch", l.off, 10*ceilingRequest)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() != ceilingLogSize {
		t.Fatalf("log file: %v, size %d; want the preallocated %d bytes", err, st.Size(), ceilingLogSize)
	}
}
