package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// layout is a copy of a log's segment list, still usable after Close.
type layout []segment

// layoutOf copies l's segment list.
func layoutOf(l *Log) layout {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out layout
	for _, s := range l.mu.segs {
		c := *s
		c.offsets = append([]uint32(nil), s.offsets...)
		out = append(out, c)
	}
	return out
}

// recordAt returns the segment file of entry index and the byte range of
// its record there.
func recordAt(t testing.TB, lay layout, index uint64) (path string, off, end int64) {
	t.Helper()
	for _, s := range lay {
		if i := index - s.base; index >= s.base && i < uint64(len(s.offsets)) {
			end = s.end
			if i+1 < uint64(len(s.offsets)) {
				end = int64(s.offsets[i+1])
			}
			return s.path, int64(s.offsets[i]), end
		}
	}
	t.Fatalf("no record for index %d", index)
	return "", 0, 0
}

// writeAt overwrites path at off with b.
func writeAt(t testing.TB, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// sectorAfter is the first sector boundary after off.
func sectorAfter(off int64) int64 { return (off/sectorSize + 1) * sectorSize }

// TestTornTail damages the end of the newest segment as a crash during the
// last batch (17-30, one pwrite of more than a sector) could: each sector it covers either
// written or still zero. Recovery keeps the entries before the damage,
// wipes the rest with a warning naming the file, offset and index, takes
// new appends, and is clean the next time.
func TestTornTail(t *testing.T) {
	type damage struct {
		path     string
		off      int64 // where the torn write starts (the warning's offset)
		lastKept uint64
	}
	// firstFrom is the first record of the last batch ending after off.
	firstFrom := func(t *testing.T, l layout, off int64) (uint64, int64) {
		for i := uint64(17); i <= 30; i++ {
			_, o, end := recordAt(t, l, i)
			if end > off {
				return i, o
			}
		}
		t.Fatalf("no record of the last batch ends after %d", off)
		return 0, 0
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, l layout) damage
	}{
		{"sectors from the batch's second on unwritten", func(t *testing.T, l layout) damage {
			path, off17, _ := recordAt(t, l, 17)
			_, _, end := recordAt(t, l, 30)
			s := sectorAfter(off17)
			writeAt(t, path, s, make([]byte, end-s))
			i, off := firstFrom(t, l, s)
			if off == s {
				// A record starting on the boundary would be wholly zero:
				// the log would end cleanly, with nothing to warn about.
				t.Fatalf("record %d starts on the sector boundary %d: change the layout", i, s)
			}
			return damage{path, off, i - 1}
		}},
		{"the batch's first sector unwritten, the next written", func(t *testing.T, l layout) damage {
			path, off17, _ := recordAt(t, l, 17)
			writeAt(t, path, off17, make([]byte, sectorAfter(off17)-off17))
			return damage{path, off17, 16}
		}},
		{"a later sector written past an unwritten one", func(t *testing.T, l layout) damage {
			path, _, end := recordAt(t, l, 30)
			writeAt(t, path, sectorAfter(end)+100, []byte("stale"))
			return damage{path, end, 30}
		}},
	}
	for _, noSync := range []bool{true, false} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/nosync=%v", tc.name, noSync), func(t *testing.T) {
				logger, warnings := observed()
				opts := Options{Dir: t.TempDir(), NoSync: noSync, SegmentSize: 64 << 10, Logger: logger}
				l := openLog(t, opts)
				store(t, l, 1, 16, 1, 4)
				store(t, l, 17, 30, 1, 14)
				lay := layoutOf(l)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				d := tc.damage(t, lay)

				l = openLog(t, opts)
				checkBounds(t, l, 1, d.lastKept)
				checkEntries(t, l, 1, d.lastKept, 1)
				checkMissing(t, l, d.lastKept+1)
				all := warnings.TakeAll()
				if len(all) != 1 {
					t.Fatalf("%d warnings, want 1: %v", len(all), all)
				}
				fields := all[0].ContextMap()
				if fields["path"] != d.path || fields["offset"] != d.off || fields["index"] != d.lastKept+1 {
					t.Fatalf("warning %q %v, want path %s offset %d index %d", all[0].Message, fields, d.path, d.off, d.lastKept+1)
				}

				// One entry the size of the first one dropped: if the torn
				// bytes were not wiped, those after it would line up.
				store(t, l, d.lastKept+1, d.lastKept+1, 2, 1)
				l = reopen(t, l, opts)
				if all := warnings.TakeAll(); len(all) != 0 {
					t.Fatalf("second recovery warned: %v", all)
				}
				checkBounds(t, l, 1, d.lastKept+1)
				checkEntries(t, l, 1, d.lastKept, 1)
				checkEntries(t, l, d.lastKept+1, d.lastKept+1, 2)
				store(t, l, d.lastKept+2, 60, 2, 3)
				l = reopen(t, l, opts)
				checkEntries(t, l, d.lastKept+1, 60, 2)
				if all := warnings.TakeAll(); len(all) != 0 {
					t.Fatalf("third recovery warned: %v", all)
				}
			})
		}
	}
}

// TestOpenRefusesCorruption damages records of segments other than the
// newest, or any segment header: Open must refuse, naming the file (and for
// a bad record, its offset and index).
func TestOpenRefusesCorruption(t *testing.T) {
	type want struct {
		path    string
		corrupt *CorruptError // nil: a header or layout error
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, l layout, bases []uint64) want
	}{
		{"payload byte flipped in the first segment", func(t *testing.T, l layout, b []uint64) want {
			path, off, _ := recordAt(t, l, 3)
			buf := make([]byte, 1)
			f, _ := os.Open(path)
			_, _ = f.ReadAt(buf, off+12)
			f.Close()
			writeAt(t, path, off+12, []byte{buf[0] ^ 0x01})
			return want{path, &CorruptError{Path: path, Offset: off, Index: 3, Reason: "crc mismatch"}}
		}},
		{"length past the file in the second segment", func(t *testing.T, l layout, b []uint64) want {
			path, off, _ := recordAt(t, l, b[1]+1)
			writeAt(t, path, off, binary.LittleEndian.AppendUint32(nil, 0xFFFF))
			return want{path, &CorruptError{Path: path, Offset: off, Index: b[1] + 1, Reason: "truncated"}}
		}},
		{"record zeroed in the third segment", func(t *testing.T, l layout, b []uint64) want {
			path, off, end := recordAt(t, l, b[2]+4)
			writeAt(t, path, off, make([]byte, end-off))
			return want{path, &CorruptError{Path: path, Offset: off, Index: b[2] + 4, Reason: "missing"}}
		}},
		{"middle segment removed", func(t *testing.T, l layout, b []uint64) want {
			path, _, _ := recordAt(t, l, b[3])
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			prev, _, end := recordAt(t, l, b[3]-1)
			return want{prev, &CorruptError{Path: prev, Offset: end, Index: b[3], Reason: "missing"}}
		}},
		{"header byte flipped", func(t *testing.T, l layout, b []uint64) want {
			path, _, _ := recordAt(t, l, b[2])
			writeAt(t, path, 17, []byte{0xEE})
			return want{path: path}
		}},
		{"header zeroed in a segment that is not the newest", func(t *testing.T, l layout, b []uint64) want {
			path, _, _ := recordAt(t, l, b[2])
			writeAt(t, path, 0, make([]byte, headerSize))
			return want{path: path}
		}},
		{"header zeroed in the newest segment", func(t *testing.T, l layout, b []uint64) want {
			path := l[len(l)-1].path
			writeAt(t, path, 0, make([]byte, headerSize))
			return want{path: path}
		}},
		{"file renamed to another sequence", func(t *testing.T, l layout, b []uint64) want {
			path, _, _ := recordAt(t, l, b[2])
			to := filepath.Join(filepath.Dir(path), segmentName(1<<40))
			if err := os.Rename(path, to); err != nil {
				t.Fatal(err)
			}
			return want{path: to}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{Dir: dir, NoSync: true, SegmentSize: MinSegmentSize}
			l, bases := fillLog(t, opts)
			lay := layoutOf(l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			w := tc.damage(t, lay, bases)
			_, err := Open(opts)
			if err == nil {
				t.Fatal("Open accepted a corrupt sealed segment")
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), w.path) {
				t.Fatalf("Open = %v, want an ErrCorrupt naming %s", err, w.path)
			}
			if w.corrupt != nil {
				var ce *CorruptError
				if !errors.As(err, &ce) || *ce != *w.corrupt {
					t.Fatalf("Open = %#v, want %#v", err, w.corrupt)
				}
				if s := fmt.Sprintf("cannot be trusted past index %d", w.corrupt.Index-1); !strings.Contains(err.Error(), s) {
					t.Fatalf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

func TestGetLogCorrupt(t *testing.T) {
	l := openLog(t, Options{Dir: t.TempDir(), NoSync: true})
	store(t, l, 1, 5, 1, 5)
	path, off, end := recordAt(t, layoutOf(l), 3)
	writeAt(t, path, end-1, []byte{0})
	var e raft.Log
	err := l.GetLog(3, &e)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != path || ce.Offset != off || ce.Index != 3 || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("GetLog of a damaged record = %v", err)
	}
	checkEntries(t, l, 4, 5, 1)
}

// TestForeignRecord pastes a record from an earlier segment, byte for byte,
// where the same index belongs in a later segment: only the sequence number
// in its CRC tells them apart, and recovery must not take it (it refuses:
// no crash writes a whole record past the end).
func TestForeignRecord(t *testing.T) {
	logger, warnings := observed()
	opts := Options{Dir: t.TempDir(), NoSync: true, SegmentSize: 64 << 10, Logger: logger}
	l := openLog(t, opts)
	store(t, l, 1, 5, 1, 5)
	path, off, end := recordAt(t, layoutOf(l), 3)
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	foreign := old[off:end]

	// Empty the log (as a snapshot install does) and write 1..2 again: a
	// new segment with another sequence number.
	if err := l.DeleteRange(1, 5); err != nil {
		t.Fatal(err)
	}
	store(t, l, 1, 2, 1, 2)
	path2, _, end2 := recordAt(t, layoutOf(l), 2)
	if path2 == path {
		t.Fatal("the new log reused the old segment file name")
	}
	// What this segment would hold for index 3 differs only in the CRC.
	own := append(make([]byte, recordHeaderSize), appendLog(nil, logRange(3, 3, 1)[0])...)
	putRecordHeader(l.mu.segs[0].seed, own)
	if !bytes.Equal(own[:4], foreign[:4]) || !bytes.Equal(own[8:], foreign[8:]) || bytes.Equal(own[4:8], foreign[4:8]) {
		t.Fatalf("records differ beyond their CRC:\n own %x\nforeign %x", own, foreign)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	writeAt(t, path2, end2, foreign)

	// No crash leaves a whole record where zeros were: it is refused.
	_, err = Open(opts)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != path2 || ce.Offset != end2 || ce.Index != 3 {
		t.Fatalf("Open = %v, want a CorruptError at %s offset %d index 3", err, path2, end2)
	}
	if all := warnings.TakeAll(); len(all) != 0 {
		t.Fatalf("warnings %v, want none", all)
	}
	// The control: the segment's own record for 3 is accepted.
	writeAt(t, path2, end2, own)
	l = openLog(t, opts)
	checkBounds(t, l, 1, 3)
}

// TestResetMarker crashes (stops) DeleteRange of the whole log right after
// it wrote the reset marker: Open must finish the job, and new segments
// must sort after the old ones.
func TestResetMarker(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, NoSync: true, SegmentSize: MinSegmentSize}
	l, _ := fillLog(t, opts)
	old := segmentFiles(t, dir)
	l.w.Lock()
	err := l.writeResetLocked(l.mu.segs[len(l.mu.segs)-1].seq)
	l.w.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	l = reopen(t, l, opts)
	checkBounds(t, l, 0, 0)
	if files := segmentFiles(t, dir); len(files) != 0 {
		t.Fatalf("segments of the emptied log left: %v", files)
	}
	store(t, l, 7, 9, 2, 3)
	if files := segmentFiles(t, dir); len(files) != 1 || files[0] <= old[len(old)-1] {
		t.Fatalf("new segment %v does not sort after the old %v", files, old)
	}
	l = reopen(t, l, opts)
	checkBounds(t, l, 7, 9)
	checkEntries(t, l, 7, 9, 2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	writeAt(t, filepath.Join(dir, resetName), 9, []byte{0xFF})
	if _, err := Open(opts); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), resetName) {
		t.Fatalf("Open with a damaged reset marker = %v", err)
	}
}

// TestEmptyNewestSegment leaves what a crash after a rotation, before its
// batch reached the disk, leaves: a newest segment with its header and no
// record. Open keeps it as the tail when older segments hold the log, and
// removes it when it is all there is.
func TestEmptyNewestSegment(t *testing.T) {
	tests := []struct {
		name  string
		store uint64 // entries before the crash; 0 for none
	}{
		{"after other segments", 50},
		{"as the only segment", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logger, warnings := observed()
			dir := t.TempDir()
			opts := Options{Dir: dir, NoSync: true, SegmentSize: MinSegmentSize, Logger: logger}
			l := openLog(t, opts)
			if tc.store > 0 {
				store(t, l, 1, tc.store, 1, 5)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			empty := filepath.Join(dir, segmentName(1<<20))
			b := make([]byte, MinSegmentSize)
			copy(b, segHeader{seq: 1 << 20, base: tc.store + 1}.encode())
			if err := os.WriteFile(empty, b, 0o644); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, opts)
			_, err := os.Stat(empty)
			if tc.store > 0 {
				checkBounds(t, l, 1, tc.store)
				if err != nil {
					t.Fatalf("empty tail segment removed: %v", err)
				}
			} else {
				checkBounds(t, l, 0, 0)
				if !os.IsNotExist(err) {
					t.Fatalf("empty only segment kept: %v", err)
				}
			}
			if all := warnings.TakeAll(); len(all) != 0 {
				t.Fatalf("warnings: %v", all)
			}
			store(t, l, tc.store+1, tc.store+30, 1, 5)
			l = reopen(t, l, opts)
			checkEntries(t, l, 1, tc.store+30, 1)
		})
	}
}

// TestSpare checks that rotation renames the prepared spare into place,
// that Open keeps a complete spare and removes half-made files, and that
// every StoreLogs is still one write even when it rotates.
func TestSpare(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, SegmentSize: MinSegmentSize}
	l := openLog(t, opts)
	ready := func(l *Log) os.FileInfo {
		t.Helper()
		l.spare.Lock()
		defer l.spare.Unlock()
		if l.spare.f == nil {
			f, err := l.makeSpareLocked(nil)
			if err != nil {
				t.Fatal(err)
			}
			l.spare.f = f
		}
		fi, err := os.Stat(filepath.Join(dir, spareName))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != MinSegmentSize {
			t.Fatalf("spare is %d bytes", fi.Size())
		}
		return fi
	}
	spare := ready(l)
	store(t, l, 1, 3, 1, 3)
	seg, err := os.Stat(filepath.Join(dir, segmentFiles(t, dir)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(spare, seg) {
		t.Fatal("the first segment is not the prepared spare")
	}
	if m := l.Metrics(); m.Syncs != 2 {
		t.Fatalf("a rotating StoreLogs made %d fdatasyncs, want 2 (header, batch)", m.Syncs)
	}
	store(t, l, 4, 6, 1, 3)
	if m := l.Metrics(); m.Syncs != 3 {
		t.Fatalf("a StoreLogs into the tail made %d fdatasyncs, want 1", m.Syncs-2)
	}

	spare = ready(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{spareTmpName, bigTmpName, resetTmpName} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l = openLog(t, opts)
	for _, name := range []string{spareTmpName, bigTmpName, resetTmpName} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Fatalf("%s not removed: %v", name, err)
		}
	}
	l.spare.Lock()
	kept := l.spare.f
	l.spare.Unlock()
	if kept == nil {
		t.Fatal("Open did not keep the complete spare")
	}
	if fi, err := kept.Stat(); err != nil || !os.SameFile(fi, spare) {
		t.Fatalf("kept spare is another file (%v)", err)
	}
	store(t, l, 7, 60, 1, 4)
	checkEntries(t, l, 1, 60, 1)
}

// TestWriteErrorSticky makes a write fail: the log refuses writes until
// reopened, keeps serving what it had, and recovers on reopen.
func TestWriteErrorSticky(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, NoSync: true, Logger: zap.NewNop()}
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	store(t, l, 1, 3, 1, 3)
	tail := l.mu.segs[0]
	_ = tail.f.Close() // the next pwrite fails
	if err := l.StoreLogs(logRange(4, 4, 1)); err == nil {
		t.Fatal("StoreLogs to a closed file succeeded")
	}
	for i, err := range []error{l.StoreLogs(logRange(4, 4, 1)), l.DeleteRange(1, 1)} {
		if err == nil || !strings.Contains(err.Error(), "unusable") {
			t.Fatalf("write %d after a failed write = %v, want unusable", i, err)
		}
	}
	checkBounds(t, l, 1, 3)
	_ = l.Close() // reports the file closed behind its back
	l = openLog(t, opts)
	checkBounds(t, l, 1, 3)
	store(t, l, 4, 6, 1, 3)
	checkEntries(t, l, 1, 6, 1)
}

// TestCorruptionNotTorn damages the newest segment in ways no crash
// leaves in a preallocated segment: Open refuses, naming the file, the
// offset and the index, even within the last MaxBatch records (where the
// count of good records after the damage cannot tell).
func TestCorruptionNotTorn(t *testing.T) {
	const maxBatch = 4
	flip := func(idx uint64) func(t *testing.T, l layout) (int64, uint64) {
		return func(t *testing.T, l layout) (int64, uint64) {
			path, off, _ := recordAt(t, l, idx)
			buf := make([]byte, 1)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = f.ReadAt(buf, off+recordHeaderSize+2)
			f.Close()
			writeAt(t, path, off+recordHeaderSize+2, []byte{buf[0] ^ 0x10})
			return off, idx
		}
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, l layout) (off int64, index uint64)
	}{
		{"byte flipped, many good records after", flip(5)},
		{"byte flipped, exactly MaxBatch good records after", flip(16)},
		{"byte flipped, fewer than MaxBatch good records after", flip(17)},
		{"byte flipped in the last record", flip(20)},
		{"last record overwritten with garbage", func(t *testing.T, l layout) (int64, uint64) {
			path, off, end := recordAt(t, l, 20)
			writeAt(t, path, off+recordHeaderSize, bytes.Repeat([]byte{0xAA}, int(end-off-recordHeaderSize)))
			return off, 20
		}},
		{"length runs past the file", func(t *testing.T, l layout) (int64, uint64) {
			path, off, _ := recordAt(t, l, 18)
			writeAt(t, path, off, binary.LittleEndian.AppendUint32(nil, 0xFFFFFF00))
			return off, 18
		}},
		{"length flipped in the last record", func(t *testing.T, l layout) (int64, uint64) {
			path, off, _ := recordAt(t, l, 20)
			writeAt(t, path, off, []byte{0x11})
			return off, 20
		}},
		{"file cut mid-record", func(t *testing.T, l layout) (int64, uint64) {
			path, off, _ := recordAt(t, l, 20)
			if err := os.Truncate(path, off+5); err != nil {
				t.Fatal(err)
			}
			return off, 20
		}},
		{"file cut at a record boundary", func(t *testing.T, l layout) (int64, uint64) {
			path, off, _ := recordAt(t, l, 19)
			if err := os.Truncate(path, off); err != nil {
				t.Fatal(err)
			}
			return off, 19
		}},
		{"record zeroed in a sector with data after it", func(t *testing.T, l layout) (int64, uint64) {
			// The last record whose successor starts in its sector.
			for i := uint64(19); i > 0; i-- {
				path, off, end := recordAt(t, l, i)
				if end+recordHeaderSize < sectorAfter(off) {
					writeAt(t, path, off, make([]byte, end-off))
					return off, i
				}
			}
			t.Fatal("no record shares its sector with the next")
			return 0, 0
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Dir: t.TempDir(), SegmentSize: 64 << 10, MaxBatch: maxBatch}
			l := openLog(t, opts)
			store(t, l, 1, 20, 1, 1)
			lay := layoutOf(l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			path := lay[len(lay)-1].path
			off, index := tc.damage(t, lay)
			l, err := Open(opts)
			if err == nil {
				l.Close()
				t.Fatal("Open accepted a damaged log no crash leaves")
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path || ce.Offset != off || ce.Index != index {
				t.Fatalf("Open: %v, want a CorruptError at %s offset %d index %d", err, path, off, index)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", off)) {
				t.Fatalf("error %q does not name the file and offset", err)
			}
		})
	}
}

// TestTruncatedInZeros: a newest segment cut in the zeros after its last
// record lost nothing; Open keeps every record.
func TestTruncatedInZeros(t *testing.T) {
	opts := Options{Dir: t.TempDir(), SegmentSize: 64 << 10}
	l := openLog(t, opts)
	store(t, l, 1, 20, 1, 1)
	lay := layoutOf(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path, _, end := recordAt(t, lay, 20)
	if err := os.Truncate(path, end+100); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, opts)
	checkBounds(t, l, 1, 20)
	checkEntries(t, l, 1, 20, 1)
}
