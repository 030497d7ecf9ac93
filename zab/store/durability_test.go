package store

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

	"github.com/cockroachdb/pebble/vfs"
	"github.com/hashicorp/raft"
)

// TestDurabilityUnsyncedLost writes through a strict in-memory filesystem,
// "crashes" by dropping everything not fsynced, and reopens. With syncing
// on, every acknowledged write survives; with NoSync the same writes are
// lost, which shows the test can tell the difference.
func TestDurabilityUnsyncedLost(t *testing.T) {
	tests := []struct {
		name    string
		noSync  bool
		survive bool
	}{
		{"synced writes survive", false, true},
		{"NoSync writes are lost", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewStrictMem()
			// The directory itself must exist in the synced state.
			if err := fs.MkdirAll("db", 0o755); err != nil {
				t.Fatal(err)
			}
			if d, err := fs.OpenDir(""); err == nil {
				_ = d.Sync()
				_ = d.Close()
			}
			s, err := Open(Options{Dir: "db", FS: fs, NoSync: tc.noSync})
			if err != nil {
				t.Fatal(err)
			}
			for i := uint64(1); i <= 50; i += 10 {
				if err := s.StoreLogs(logRange(i, i+9)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.SetUint64([]byte("CurrentTerm"), 9); err != nil {
				t.Fatal(err)
			}
			// Crash: the close writes nothing durable, then unsynced data
			// disappears.
			fs.SetIgnoreSyncs(true)
			_ = s.Close()
			fs.ResetToSyncedState()
			fs.SetIgnoreSyncs(false)

			s, err = Open(Options{Dir: "db", FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			last, _ := s.LastIndex()
			term, termErr := s.GetUint64([]byte("CurrentTerm"))
			if tc.survive {
				if last != 50 || termErr != nil || term != 9 {
					t.Fatalf("after crash: last index %d, term %d (%v); want 50, 9", last, term, termErr)
				}
				for i := uint64(1); i <= 50; i++ {
					var l raft.Log
					if err := s.GetLog(i, &l); err != nil || l.Data[0] != byte(i) {
						t.Fatalf("GetLog(%d) = %+v, %v", i, l, err)
					}
				}
			} else if last == 50 && termErr == nil {
				t.Fatalf("unsynced writes survived the simulated crash")
			}
		})
	}
}

const crashEnv = "ZKD_STORE_CRASH_DIR"

// TestMain turns the test binary into TestCrashSIGKILL's writer process
// when crashEnv is set.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
	}
	os.Exit(m.Run())
}

// crashChild appends batches forever, printing each acknowledged last
// index, until it is killed.
func crashChild(dir string) {
	s, err := Open(Options{Dir: dir})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := uint64(1); ; i += 5 {
		logs := logRange(i, i+4)
		for _, l := range logs {
			l.Data = []byte(strings.Repeat(strconv.FormatUint(l.Index, 10), 20))
		}
		if err := s.StoreLogs(logs); err != nil {
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
// mid-stream, reopens the store and checks that every index the child
// acknowledged is present and intact.
func TestCrashSIGKILL(t *testing.T) {
	for round := 0; round < 3; round++ {
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
		killAfter := uint64(100 + 150*round)
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
		s, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatalf("reopen after SIGKILL: %v", err)
		}
		last, _ := s.LastIndex()
		if last < acked {
			t.Fatalf("last index %d < acknowledged %d", last, acked)
		}
		for i := uint64(1); i <= acked; i++ {
			var l raft.Log
			if err := s.GetLog(i, &l); err != nil {
				t.Fatalf("acknowledged index %d lost: %v", i, err)
			}
			if want := strings.Repeat(strconv.FormatUint(i, 10), 20); string(l.Data) != want {
				t.Fatalf("index %d data %q", i, l.Data)
			}
		}
		t.Logf("round %d: acknowledged %d, recovered last index %d", round, acked, last)
		_ = s.Close()
	}
}
