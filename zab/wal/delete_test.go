package wal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fillLog opens a log of 1 KiB segments holding entries 1..200 of term 1
// (about 15 entries a segment) and returns it with its segments' bases.
func fillLog(t *testing.T, opts Options) (*Log, []uint64) {
	t.Helper()
	l := openLog(t, opts)
	store(t, l, 1, 200, 1, 5)
	bases := segmentBases(l)
	if len(bases) < 8 {
		t.Fatalf("only %d segments", len(bases))
	}
	return l, bases
}

func TestDeleteRangeFront(t *testing.T) {
	tests := []struct {
		name string
		min  uint64
		// max returns the last index to delete given the segment bases.
		max func(bases []uint64) uint64
		// removed is how many segment files go.
		removed func(bases []uint64) int
		// firstAfterReopen is FirstIndex after a restart: the base of the
		// oldest segment still there.
		firstAfterReopen func(bases []uint64) uint64
	}{
		{"inside the first segment", 1,
			func(b []uint64) uint64 { return b[0] + 4 },
			func([]uint64) int { return 0 },
			func(b []uint64) uint64 { return b[0] }},
		{"into the fourth segment", 1,
			func(b []uint64) uint64 { return b[3] + 2 },
			func([]uint64) int { return 3 },
			func(b []uint64) uint64 { return b[3] }},
		{"up to a segment boundary, min below first", 0,
			func(b []uint64) uint64 { return b[3] - 1 },
			func([]uint64) int { return 3 },
			func(b []uint64) uint64 { return b[3] }},
		{"all but the last entry", 1,
			func([]uint64) uint64 { return 199 },
			func(b []uint64) int { return len(b) - 1 },
			func(b []uint64) uint64 { return b[len(b)-1] }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{Dir: dir, NoSync: true, SegmentSize: MinSegmentSize}
			l, bases := fillLog(t, opts)
			files := segmentFiles(t, dir)
			max := tc.max(bases)
			if err := l.DeleteRange(tc.min, max); err != nil {
				t.Fatal(err)
			}
			checkBounds(t, l, max+1, 200)
			checkMissing(t, l, 1, max)
			checkEntries(t, l, max+1, 200, 1)
			if got, want := segmentFiles(t, dir), files[tc.removed(bases):]; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("segment files %v, want %v", got, want)
			}
			// Compacting again from the new first index works too.
			if max+1 < 150 {
				if err := l.DeleteRange(max+1, max+1); err != nil {
					t.Fatal(err)
				}
				checkBounds(t, l, max+2, 200)
			}

			// The rest of a partly deleted segment comes back on restart.
			l = reopen(t, l, opts)
			first := tc.firstAfterReopen(bases)
			checkBounds(t, l, first, 200)
			checkEntries(t, l, first, 200, 1)
			store(t, l, 201, 240, 1, 7)
			l = reopen(t, l, opts)
			checkBounds(t, l, first, 240)
			checkEntries(t, l, first, 240, 1)
		})
	}
}

func TestDeleteRangeAll(t *testing.T) {
	tests := []struct {
		name     string
		min, max uint64
	}{
		{"exactly the log", 1, 200},
		{"past both ends", 0, 1<<64 - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{Dir: dir, NoSync: true, SegmentSize: MinSegmentSize}
			l, _ := fillLog(t, opts)
			if err := l.DeleteRange(tc.min, tc.max); err != nil {
				t.Fatal(err)
			}
			checkBounds(t, l, 0, 0)
			checkMissing(t, l, 1, 200)
			if files := segmentFiles(t, dir); len(files) != 0 {
				t.Fatalf("segment files left: %v", files)
			}
			if m := l.Metrics(); m.Segments != 0 || m.Entries != 0 {
				t.Fatalf("Metrics = %+v", m)
			}
			l = reopen(t, l, opts)
			checkBounds(t, l, 0, 0)
			// The next index is free, as after a snapshot install.
			store(t, l, 5000, 5100, 3, 10)
			l = reopen(t, l, opts)
			checkBounds(t, l, 5000, 5100)
			checkEntries(t, l, 5000, 5100, 3)
		})
	}
}

func TestDeleteRangeTail(t *testing.T) {
	tests := []struct {
		name string
		min  func(bases []uint64) uint64
	}{
		{"inside the tail segment", func([]uint64) uint64 { return 197 }},
		{"across segments", func(b []uint64) uint64 { return b[2] + 3 }},
		{"at a segment base", func(b []uint64) uint64 { return b[4] }},
		{"all but the first entry", func([]uint64) uint64 { return 2 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{Dir: dir, NoSync: true, SegmentSize: MinSegmentSize}
			l, bases := fillLog(t, opts)
			files := segmentFiles(t, dir)
			min := tc.min(bases)
			if err := l.DeleteRange(min, 200); err != nil {
				t.Fatal(err)
			}
			check := func(l *Log) {
				t.Helper()
				checkBounds(t, l, 1, min-1)
				checkEntries(t, l, 1, min-1, 1)
				checkMissing(t, l, min, 200)
			}
			check(l)
			keep := 0 // segments starting before min survive
			for _, b := range bases {
				if b < min {
					keep++
				}
			}
			if got, want := segmentFiles(t, dir), files[:keep]; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("segment files %v, want %v", got, want)
			}
			l = reopen(t, l, opts)
			check(l)

			// New entries of a later term, as from a new leader. They have
			// the size of the ones they replace, so a stale record that was
			// not wiped would follow the last of them exactly and be read
			// back at the next recovery.
			store(t, l, min, min+2, 2, 3)
			l = reopen(t, l, opts)
			checkBounds(t, l, 1, min+2)
			checkEntries(t, l, 1, min-1, 1)
			checkEntries(t, l, min, min+2, 2)
			checkMissing(t, l, min+3)
			store(t, l, min+3, min+80, 2, 6)
			l = reopen(t, l, opts)
			checkBounds(t, l, 1, min+80)
			checkEntries(t, l, 1, min-1, 1)
			checkEntries(t, l, min, min+80, 2)
		})
	}
}

func TestDeleteRangeRefusedOrNoop(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, NoSync: true, SegmentSize: MinSegmentSize}
	l, _ := fillLog(t, opts)
	if err := l.DeleteRange(50, 60); err == nil || !strings.Contains(err.Error(), "hole") {
		t.Fatalf("DeleteRange(50, 60) = %v, want a hole error", err)
	}
	if err := l.DeleteRange(2, 199); err == nil {
		t.Fatal("DeleteRange(2, 199) accepted")
	}
	for _, r := range [][2]uint64{{201, 300}, {60, 50}, {0, 0}} {
		if err := l.DeleteRange(r[0], r[1]); err != nil {
			t.Fatalf("DeleteRange(%d, %d) = %v", r[0], r[1], err)
		}
	}
	checkBounds(t, l, 1, 200)
	checkEntries(t, l, 1, 200, 1)
	if _, err := os.Stat(filepath.Join(dir, resetName)); !os.IsNotExist(err) {
		t.Fatalf("reset marker written without emptying the log: %v", err)
	}
}
