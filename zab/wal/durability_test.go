package wal

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const crashEnv = "ZKD_WAL_CRASH_DIR"

// crashSegmentSize makes the crash child rotate every few dozen batches.
const crashSegmentSize = 16 << 10

// TestMain turns the test binary into TestCrashSIGKILL's writer process
// when crashEnv is set.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
	}
	os.Exit(m.Run())
}

// crashChild appends batches of 5 (and, every 50 batches, compacts the
// front) forever, printing each acknowledged last index, until it is
// killed.
func crashChild(dir string) {
	l, err := Open(Options{Dir: dir, SegmentSize: crashSegmentSize})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := uint64(1); ; i += 5 {
		err := l.StoreLogs(logRange(i, i+4, 1))
		if err == nil && i%250 == 1 && i > 500 {
			err = l.DeleteRange(1, i-400)
		}
		if err != nil {
			fmt.Fprintln(out, "error", err)
			out.Flush()
			os.Exit(2)
		}
		// Acknowledge only after StoreLogs returned.
		fmt.Fprintln(out, "ack", i+4)
		out.Flush()
	}
}

// TestCrashSIGKILL re-executes the test binary as a writer, SIGKILLs it
// mid-stream, reopens the log and checks that every index the child
// acknowledged is present and intact, and that the log takes new appends.
func TestCrashSIGKILL(t *testing.T) {
	for round := range 3 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var acked uint64
		killAfter := uint64(300 + 700*round)
		deadline := time.Now().Add(20 * time.Second)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "error") {
				t.Fatalf("child: %s", line)
			}
			if v, ok := strings.CutPrefix(line, "ack "); ok {
				acked, _ = strconv.ParseUint(v, 10, 64)
				if acked >= killAfter || time.Now().After(deadline) {
					_ = cmd.Process.Signal(syscall.SIGKILL)
					break
				}
			}
		}
		_ = cmd.Wait()
		if acked == 0 {
			t.Fatal("child acknowledged nothing")
		}
		opts := Options{Dir: dir, SegmentSize: crashSegmentSize}
		l := openLog(t, opts)
		first, _ := l.FirstIndex()
		last, _ := l.LastIndex()
		// The child runs on past the acknowledgement read here until
		// the signal lands, compacting as it goes: the front it may have
		// reached is bounded by its own last append, not by acked.
		if last < acked || first > max(last, 500)-400 {
			t.Fatalf("log %d-%d after SIGKILL, acknowledged up to %d", first, last, acked)
		}
		checkEntries(t, l, first, last, 1)
		store(t, l, last+1, last+20, 2, 4)
		l = reopen(t, l, opts)
		checkEntries(t, l, last+1, last+20, 2)
		t.Logf("round %d: acknowledged %d, recovered %d-%d", round, acked, first, last)
	}
}
