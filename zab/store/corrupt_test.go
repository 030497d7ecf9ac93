package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// newestWAL returns the path of the newest Pebble WAL in dir.
func newestWAL(t *testing.T, dir string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no WAL in %s (%v)", dir, err)
	}
	return logs[len(logs)-1] // zero-padded numbers sort as text
}

// filled opens a store in a new directory with keys synced keys k0000...
func filled(t *testing.T, keys int) (*Store, Options) {
	t.Helper()
	opts := Options{Dir: t.TempDir(), MemTableSize: testMemTable, CacheSize: testCache}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < keys; i++ {
		if err := s.Set([]byte(fmt.Sprintf("k%04d", i)), []byte(strings.Repeat("v", 40))); err != nil {
			t.Fatal(err)
		}
	}
	return s, opts
}

// TestCheckWAL damages Pebble's newest WAL after synced writes: a byte
// flipped in a record that valid records follow must refuse the open,
// naming the file and the offset (Pebble alone would drop it and every
// record after it); a torn tail (zeros from a sector on) and a bad last
// chunk are Pebble's to drop, as before.
func TestCheckWAL(t *testing.T) {
	const keys = 200
	tests := []struct {
		name    string
		damage  func(t *testing.T, b []byte) []byte
		refused bool
		kept    int // keys readable after an accepted open (at least)
	}{
		{"byte flipped in an early record", func(t *testing.T, b []byte) []byte {
			b[100] ^= 0x40
			return b
		}, true, 0},
		{"tail zeroed from a sector boundary", func(t *testing.T, b []byte) []byte {
			from := len(b) / 2 / walSectorSize * walSectorSize
			clear(b[from:])
			return b
		}, false, keys / 3},
		{"file cut in the middle", func(t *testing.T, b []byte) []byte {
			return b[:len(b)/2]
		}, false, keys / 3},
		{"no damage", func(t *testing.T, b []byte) []byte { return b }, false, keys},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, opts := filled(t, keys)
			dir := opts.Dir
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			wal := newestWAL(t, dir)
			b, err := os.ReadFile(wal)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(wal, tc.damage(t, b), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err = Open(opts)
			if tc.refused {
				if err == nil {
					s.Close()
					t.Fatal("Open accepted a WAL with a changed record that valid ones follow")
				}
				var ce *CorruptError
				if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Path != wal || ce.Offset < 0 || ce.Offset > 100 {
					t.Fatalf("Open: %v, want a CorruptError naming %s and an offset at or before 100", err, wal)
				}
				t.Logf("%v", err)
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			n := 0
			for i := 0; i < keys; i++ {
				if _, err := s.Get([]byte(fmt.Sprintf("k%04d", i))); err == nil {
					n++
				} else if n < i {
					break
				}
			}
			if n < tc.kept {
				t.Fatalf("%d keys readable, want at least %d", n, tc.kept)
			}
		})
	}
}

// TestCorruptFiles damages Pebble's other files after a flush (so that a
// table, a MANIFEST and an OPTIONS file exist): a changed or cut table, or
// a changed MANIFEST record that valid ones follow, refuses the open with
// an ErrCorrupt naming the file; a damaged
// OPTIONS file, which only records the options zkd passes at every open,
// is written again and the open goes on with every key.
func TestCorruptFiles(t *testing.T) {
	const keys = 500
	only := func(t *testing.T, dir, pattern string) string {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil || len(m) != 1 {
			t.Fatalf("%s in %s: %v (%v)", pattern, dir, m, err)
		}
		return m[0]
	}
	flip := func(pattern string, at func(size int) int) func(t *testing.T, dir string) string {
		return func(t *testing.T, dir string) string {
			p := only(t, dir, pattern)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[at(len(b))] ^= 0x20
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	cut := func(pattern string) func(t *testing.T, dir string) string {
		return func(t *testing.T, dir string) string {
			p := only(t, dir, pattern)
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string) string
		refused bool
	}{
		{"table byte flipped", flip("*.sst", func(n int) int { return n / 4 }), true},
		{"table cut", cut("*.sst"), true},
		{"table removed", func(t *testing.T, dir string) string {
			p := only(t, dir, "*.sst")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			return strings.TrimSuffix(p, ".sst")
		}, true},
		// The second of its three records: the third, valid, follows.
		{"MANIFEST byte flipped", flip("MANIFEST-*", func(n int) int { return 45 }), true},
		// The last record: there whole, so not an append a crash cut.
		{"MANIFEST last record flipped", flip("MANIFEST-*", func(n int) int { return n - 10 }), true},
		{"OPTIONS byte flipped", flip("OPTIONS-*", func(n int) int { return 20 }), false},
		{"OPTIONS cut", cut("OPTIONS-*"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, opts := filled(t, keys)
			dir := opts.Dir
			if err := s.db.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path := tc.damage(t, dir)
			s, err := Open(opts)
			if tc.refused {
				if err == nil {
					s.Close()
					t.Fatalf("Open accepted a damaged %s", path)
				}
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(path)) {
					t.Fatalf("Open: %v, want an ErrCorrupt naming %s", err, path)
				}
				t.Logf("%v", err)
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			for i := 0; i < keys; i++ {
				if _, err := s.Get([]byte(fmt.Sprintf("k%04d", i))); err != nil {
					t.Fatalf("key %d: %v", i, err)
				}
			}
		})
	}
}

// TestCheckTablesCompactedAway is the start-up table check racing
// Pebble's own compactions: a member restarted after kill -9 replays its
// WAL and compacts at once, so a table listed live can be gone from the
// directory by the time the check opens it. That table must be skipped
// (the soak's kill nemesis saw restarts refused with "open 000262.sst: no
// such file or directory"); a table still live and missing must still
// refuse the start, naming the file.
func TestCheckTablesCompactedAway(t *testing.T) {
	s, opts := filled(t, 300)
	defer s.Close()
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	stale, first := lastTable(t, s, opts.Dir)
	// More tables, then one compaction of everything: the first table is
	// obsolete and Pebble deletes it (in the background).
	for i := 0; i < 300; i++ {
		if err := s.Set([]byte(fmt.Sprintf("k%04d", i)), []byte(strings.Repeat("w", 40))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact([]byte("a"), []byte("z"), true); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(first); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there 10s after a compaction made it obsolete", first)
		}
	}
	if err := checkTableList(s.db, vfs.Default, opts.Dir, stale); err != nil {
		t.Fatalf("a table compacted away since the listing refused the check: %v", err)
	}

	live, victim := lastTable(t, s, opts.Dir)
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	err := checkTableList(s.db, vfs.Default, opts.Dir, live)
	if err == nil || !strings.Contains(err.Error(), victim) {
		t.Fatalf("a live table removed from the directory: check gave %v, want an error naming %s", err, victim)
	}
}

// lastTable lists s's tables and returns the listing and the path (in
// dir) of the last table in it.
func lastTable(t *testing.T, s *Store, dir string) ([][]pebble.SSTableInfo, string) {
	t.Helper()
	levels, err := s.db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, level := range levels {
		for _, tb := range level {
			last = filepath.Join(dir, fmt.Sprintf("%06d.sst", tb.FileNum))
		}
	}
	if last == "" {
		t.Fatal("no table in the store")
	}
	return levels, last
}
