package diskfault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// startFails starts s and waits for it to exit with status code, having
// logged, since this start, a line containing every one of want.
func startFails(t *testing.T, s *zkproc.Server, code int, want ...string) {
	t.Helper()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	waitExit(t, s, 15*time.Second)
	log := s.Log()
	log = log[strings.LastIndex(log, "=== zkproc: starting"):]
	if st := s.Cmd.ProcessState; st == nil || st.ExitCode() != code {
		t.Fatalf("exit %v, want status %d; log:\n%s", st, code, tail(log, 3000))
	}
	for _, l := range strings.Split(log, "\n") {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			t.Logf("%s", l)
			return
		}
	}
	t.Fatalf("no line with all of %q; log:\n%s", want, tail(log, 3000))
}

// TestIntegration_CorruptWAL flips one byte in a record of the raft log
// that many synced records follow: start-up refuses with one line naming
// the segment file, the offset and what to do, instead of dropping the
// acknowledged records after it as a torn write.
func TestIntegration_CorruptWAL(t *testing.T) {
	s := zkproc.StartZkd(t, zkproc.Options{Binary: zkdBin(t)})
	w := &writer{c: connect(t, s.Addr)}
	w.writeN(t, 200)
	s.Stop()
	seg := filepath.Join(s.DataDir, "zkd", "wal", "0000000000000001.wal")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	const at = 5000
	orig := b[at]
	b[at] ^= 0xff
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	startFails(t, s, 65, "CORRUPT DATA in dataDir", seg, "record at offset ", "zkd rebuild "+s.CfgPath)
	// Repaired, every acknowledged write is there.
	b[at] = orig
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
	w.checkAcked(t, connect(t, s.Addr))
}

// TestIntegration_CorruptMyID: a member whose myid is garbage, empty or
// missing refuses to start with a line naming the file.
func TestIntegration_CorruptMyID(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{Binary: zkdBin(t)})
	s := servers[2]
	s.Stop()
	myid := filepath.Join(s.DataDir, "myid")
	for _, tc := range []struct {
		name    string
		content *string
		code    int
	}{
		{"garbage", ptr("3x\n"), 2},
		{"empty", ptr(""), 2},
		{"missing", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.content == nil {
				if err := os.Remove(myid); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(myid, []byte(*tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			startFails(t, s, tc.code, myid)
		})
	}
	if err := os.WriteFile(myid, []byte(fmt.Sprintln(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
}

func ptr(s string) *string { return &s }
