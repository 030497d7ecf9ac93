package diskfault

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// only returns the one file of s's data directory matching pattern
// (relative to dataDir/zkd).
func only(t *testing.T, s *zkproc.Server, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(s.DataDir, "zkd", pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("%s in %s: %v (%v)", pattern, s.DataDir, m, err)
	}
	return m[0]
}

// lastNonZero is the offset of the last non-zero byte of b.
func lastNonZero(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

// edit rewrites the file at path with f applied to its bytes.
func edit(t *testing.T, path string, f func(b []byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyDir replaces to with a copy of from.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.RemoveAll(to); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v: %s", from, to, err, out)
	}
}

// TestIntegration_CorruptAtRest damages, one at a time, each file a
// stopped standalone zkd keeps (raft log segments and spare, Pebble's WAL,
// table, MANIFEST and OPTIONS, where raft's term and vote, the snapshots
// and in them the fencing key live): start-up either refuses with exit
// status 65 and one CORRUPT DATA line naming the file (and the offset
// where the format has one), or, for a file zkd can rebuild (derived),
// rebuilds it with a warning naming it and serves every acknowledged
// write. After the cases the undamaged copy serves every acknowledged
// write.
func TestIntegration_CorruptAtRest(t *testing.T) {
	s := zkproc.StartZkd(t, zkproc.Options{Binary: zkdBin(t), ExtraCfg: map[string]string{"snapCount": "50"}})
	w := &writer{c: connect(t, s.Addr)}
	w.writeN(t, 120)
	s.Stop()
	// The restart replays Pebble's WAL into a table; the second run's
	// writes and its shutdown snapshot go to a new WAL.
	s.Restart(t)
	w.c = connect(t, s.Addr)
	w.writeN(t, 120)
	s.Stop()
	pristine := filepath.Join(t.TempDir(), "data")
	copyDir(t, s.DataDir, pristine)

	segment := func(t *testing.T) string { return only(t, s, "wal/0000000000000001.wal") }
	tests := []struct {
		name string
		// damage damages a fresh copy and returns the file the line must
		// name; warn, if set, is what a rebuilt file's warning says
		// instead of a refusal.
		damage func(t *testing.T) string
		offset bool
		warn   string
	}{
		{"raft log: byte flipped in an early record", func(t *testing.T) string {
			p := segment(t)
			edit(t, p, func(b []byte) []byte { b[5000] ^= 0xff; return b })
			return p
		}, true, ""},
		{"raft log: byte flipped in the last record", func(t *testing.T) string {
			p := segment(t)
			edit(t, p, func(b []byte) []byte { b[lastNonZero(b)-20] ^= 0x01; return b })
			return p
		}, true, ""},
		{"raft log: segment cut in its last record", func(t *testing.T) string {
			p := segment(t)
			edit(t, p, func(b []byte) []byte { return b[:lastNonZero(b)-10] })
			return p
		}, true, ""},
		{"raft log: spare changed", func(t *testing.T) string {
			p := only(t, s, "wal/spare")
			edit(t, p, func(b []byte) []byte { b[len(b)/2] = 1; return b })
			return p
		}, false, "the spare segment is not all zeros"},
		{"Pebble WAL: byte flipped", func(t *testing.T) string {
			p := only(t, s, "*.log")
			edit(t, p, func(b []byte) []byte { b[100] ^= 0x08; return b })
			return p
		}, true, ""},
		{"Pebble table: byte flipped", func(t *testing.T) string {
			p := only(t, s, "*.sst")
			edit(t, p, func(b []byte) []byte { b[len(b)/3] ^= 0x08; return b })
			return p
		}, false, ""},
		{"Pebble table: cut", func(t *testing.T) string {
			p := only(t, s, "*.sst")
			edit(t, p, func(b []byte) []byte { return b[:len(b)/2] })
			return p
		}, false, ""},
		{"Pebble MANIFEST: byte flipped in its first record", func(t *testing.T) string {
			current, err := os.ReadFile(only(t, s, "CURRENT"))
			if err != nil {
				t.Fatal(err)
			}
			p := only(t, s, strings.TrimSpace(string(current)))
			edit(t, p, func(b []byte) []byte { b[10] ^= 0x08; return b })
			return p
		}, true, ""},
		{"Pebble OPTIONS: garbage", func(t *testing.T) string {
			p := only(t, s, "OPTIONS-*")
			edit(t, p, func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("="), []byte(":")) })
			return p
		}, false, "Pebble's OPTIONS file is damaged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			copyDir(t, pristine, s.DataDir)
			path := tc.damage(t)
			if tc.warn != "" {
				s.Restart(t)
				waitLog(t, s, tc.warn, 10*time.Second)
				if l := logLines(s, tc.warn); !strings.Contains(l[len(l)-1], path) {
					t.Fatalf("warning %q does not name %s", l, path)
				}
				w.checkAcked(t, connect(t, s.Addr))
				s.Stop()
				return
			}
			want := []string{"CORRUPT DATA in dataDir " + s.DataDir, path, "refuses to start"}
			if tc.offset {
				want = append(want, "offset ")
			}
			startFails(t, s, 65, want...)
		})
	}
	copyDir(t, pristine, s.DataDir)
	s.Restart(t)
	w.checkAcked(t, connect(t, s.Addr))
}

// TestIntegration_CorruptFollower: a follower whose raft log was changed
// at rest refuses to start (65, the CORRUPT DATA line), the two others go
// on acknowledging writes, and the line names zkd rebuild. Done by hand
// instead (the data directory moved aside, myid kept, started again), the
// rebuild is safe too: the member is fenced from voting until it has
// caught up (quorum/rejoin.go), and comes back with every acknowledged
// write.
func TestIntegration_CorruptFollower(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{Binary: zkdBin(t)})
	l := leader(t, servers)
	victim, other := servers[(l+1)%3], servers[(l+2)%3]
	w := &writer{c: connect(t, other.Addr)}
	w.writeN(t, 100)
	victim.Stop()
	seg := only(t, victim, "wal/0000000000000001.wal")
	edit(t, seg, func(b []byte) []byte { b[5000] ^= 0xff; return b })
	startFails(t, victim, 65, "CORRUPT DATA in dataDir "+victim.DataDir, seg, "offset ", "zkd rebuild "+victim.CfgPath)
	w.writeN(t, 50)

	aside := victim.DataDir + ".corrupt"
	if err := os.Rename(victim.DataDir, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(victim.DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	myid, err := os.ReadFile(filepath.Join(aside, "myid"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim.DataDir, "myid"), myid, 0o644); err != nil {
		t.Fatal(err)
	}
	victim.Restart(t)
	c := connect(t, victim.Addr)
	if _, err := c.Sync("/"); err != nil {
		t.Fatal(err)
	}
	w.checkAcked(t, c)
}
