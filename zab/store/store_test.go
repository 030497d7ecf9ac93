package store

import (
	"bytes"
	"errors"
	"io/fs"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Small Pebble buffers keep the many store opens of the tests cheap.
const (
	testMemTable = 2 << 20
	testCache    = 1 << 20
)

// openTest opens a store in a fresh temporary directory. Tests that do not
// check durability run without fsync to stay fast.
func openTest(t testing.TB, noSync bool) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, NoSync: noSync, MemTableSize: testMemTable, CacheSize: testCache})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, dir
}

func reopen(t testing.TB, s *Store, dir string) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2, err := Open(Options{Dir: dir, NoSync: true, MemTableSize: testMemTable, CacheSize: testCache})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	return s2
}

// logsEqual compares every raft.Log field, AppendedAt by instant.
func logsEqual(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		reflect.DeepEqual(a.Data, b.Data) && reflect.DeepEqual(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt)
}

func TestLogRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 21, 21, 50, 1, 123456789, time.UTC)
	big := bytes.Repeat([]byte{0xAB}, 1<<20)
	tests := []struct {
		name string
		log  raft.Log
	}{
		{"all fields", raft.Log{Index: 1, Term: 2, Type: raft.LogCommand, Data: []byte("create /a"),
			Extensions: []byte{1, 2, 3}, AppendedAt: at}},
		{"nil data and extensions", raft.Log{Index: 2, Term: 2, Type: raft.LogNoop}},
		{"empty non-nil data", raft.Log{Index: 3, Term: 2, Type: raft.LogCommand, Data: []byte{}, Extensions: []byte{}}},
		{"configuration", raft.Log{Index: 4, Term: 3, Type: raft.LogConfiguration, Data: []byte{0, 1}, AppendedAt: at.Add(time.Hour)}},
		{"barrier", raft.Log{Index: 5, Term: 3, Type: raft.LogBarrier}},
		{"pre-epoch time", raft.Log{Index: 6, Term: 3, Type: raft.LogCommand, AppendedAt: time.Unix(-5, 7)}},
		{"max term and index", raft.Log{Index: 1<<64 - 2, Term: 1<<64 - 1, Type: raft.LogCommand, Data: []byte("x")}},
		{"1 MiB data", raft.Log{Index: 7, Term: 3, Type: raft.LogCommand, Data: big}},
	}
	s, _ := openTest(t, true)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.log
			if err := s.StoreLog(&in); err != nil {
				t.Fatalf("StoreLog: %v", err)
			}
			// Decoding into a dirty Log must overwrite every field.
			out := raft.Log{Data: []byte("stale"), Extensions: []byte("stale"), AppendedAt: time.Now(), Type: raft.LogBarrier}
			if err := s.GetLog(in.Index, &out); err != nil {
				t.Fatalf("GetLog: %v", err)
			}
			if !logsEqual(&in, &out) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
			}
			// The encoding alone also round-trips.
			var dec raft.Log
			if err := decodeLog(appendLog(nil, &in), &dec); err != nil || !logsEqual(&in, &dec) {
				t.Fatalf("decodeLog: %v %+v", err, dec)
			}
		})
	}
}

// TestDecodeLogCorrupt checks that a bad value read from Pebble is an
// ErrCorruptLog (zab/wal's codec tests cover the encoding itself).
func TestDecodeLogCorrupt(t *testing.T) {
	good := appendLog(nil, &raft.Log{Index: 9, Term: 1, Data: []byte("abc"), Extensions: []byte("e"), AppendedAt: time.Unix(1, 0)})
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"bad version", append([]byte{9}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(append([]byte{}, good...), 0)},
		{"header only", good[:2]},
		{"unknown flag", append([]byte{good[0], 0x30}, good[2:]...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l raft.Log
			if err := decodeLog(tc.b, &l); !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("decodeLog = %v, want ErrCorruptLog", err)
			}
		})
	}
}

func TestGetLogMissing(t *testing.T) {
	s, _ := openTest(t, true)
	var l raft.Log
	if err := s.GetLog(1, &l); err != raft.ErrLogNotFound {
		t.Fatalf("empty store: GetLog = %v, want raft.ErrLogNotFound", err)
	}
	if err := s.StoreLogs([]*raft.Log{{Index: 1, Term: 1}, {Index: 2, Term: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, idx := range []uint64{0, 3, 1 << 40} {
		if err := s.GetLog(idx, &l); err != raft.ErrLogNotFound {
			t.Fatalf("GetLog(%d) = %v, want raft.ErrLogNotFound", idx, err)
		}
	}
	if err := s.DeleteRange(1, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.GetLog(1, &l); err != raft.ErrLogNotFound {
		t.Fatalf("deleted: GetLog = %v, want raft.ErrLogNotFound", err)
	}
}

// logRange returns entries lo..hi with term 1.
func logRange(lo, hi uint64) []*raft.Log {
	var out []*raft.Log
	for i := lo; i <= hi; i++ {
		out = append(out, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	return out
}

func TestIndexBounds(t *testing.T) {
	tests := []struct {
		name        string
		store       [][2]uint64 // ranges appended, in order
		del         [][2]uint64 // ranges deleted, in order
		first, last uint64
	}{
		{"empty", nil, nil, 0, 0},
		{"one batch", [][2]uint64{{1, 10}}, nil, 1, 10},
		{"two batches", [][2]uint64{{1, 10}, {11, 20}}, nil, 1, 20},
		{"starts after snapshot install", [][2]uint64{{500, 510}}, nil, 500, 510},
		{"trim prefix", [][2]uint64{{1, 10}}, [][2]uint64{{1, 4}}, 5, 10},
		{"trim prefix from below first", [][2]uint64{{5, 10}}, [][2]uint64{{0, 6}}, 7, 10},
		{"trim suffix (conflict)", [][2]uint64{{1, 10}}, [][2]uint64{{8, 10}}, 1, 7},
		{"trim suffix beyond last", [][2]uint64{{1, 10}}, [][2]uint64{{8, 1 << 62}}, 1, 7},
		{"delete all", [][2]uint64{{1, 10}}, [][2]uint64{{1, 10}}, 0, 0},
		{"delete all wider", [][2]uint64{{3, 10}}, [][2]uint64{{0, ^uint64(0)}}, 0, 0},
		{"delete middle", [][2]uint64{{1, 10}}, [][2]uint64{{4, 6}}, 1, 10},
		{"delete nothing below", [][2]uint64{{5, 10}}, [][2]uint64{{1, 3}}, 5, 10},
		{"delete nothing above", [][2]uint64{{5, 10}}, [][2]uint64{{11, 30}}, 5, 10},
		{"gap then trim to gap", [][2]uint64{{1, 3}, {10, 12}}, [][2]uint64{{1, 5}}, 10, 12},
		{"gap then trim suffix to gap", [][2]uint64{{1, 3}, {10, 12}}, [][2]uint64{{9, 12}}, 1, 3},
		{"trim then append", [][2]uint64{{1, 10}}, [][2]uint64{{1, 10}}, 0, 0},
		{"reversed delete ignored", [][2]uint64{{1, 10}}, [][2]uint64{{7, 3}}, 1, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := openTest(t, true)
			for _, r := range tc.store {
				if err := s.StoreLogs(logRange(r[0], r[1])); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range tc.del {
				if err := s.DeleteRange(r[0], r[1]); err != nil {
					t.Fatal(err)
				}
			}
			check := func(s *Store, when string) {
				t.Helper()
				first, _ := s.FirstIndex()
				last, _ := s.LastIndex()
				if first != tc.first || last != tc.last {
					t.Fatalf("%s: bounds = [%d, %d], want [%d, %d]", when, first, last, tc.first, tc.last)
				}
				m := s.Metrics()
				if m.FirstIndex != tc.first || m.LastIndex != tc.last {
					t.Fatalf("%s: metrics bounds = [%d, %d]", when, m.FirstIndex, m.LastIndex)
				}
			}
			check(s, "cached")
			check(reopen(t, s, dir), "after reopen")
		})
	}
}

func TestAppendAfterDeleteAll(t *testing.T) {
	s, _ := openTest(t, true)
	if err := s.StoreLogs(logRange(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(logRange(11, 12)); err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 11 || last != 12 {
		t.Fatalf("bounds = [%d, %d], want [11, 12]", first, last)
	}
}

func TestOverwriteAfterConflict(t *testing.T) {
	s, _ := openTest(t, true)
	if err := s.StoreLogs(logRange(1, 5)); err != nil {
		t.Fatal(err)
	}
	// A follower truncates a conflicting suffix and appends the leader's.
	if err := s.DeleteRange(4, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs([]*raft.Log{{Index: 4, Term: 2, Data: []byte("new")}}); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := s.GetLog(4, &l); err != nil || l.Term != 2 || string(l.Data) != "new" {
		t.Fatalf("GetLog(4) = %+v, %v", l, err)
	}
	if last, _ := s.LastIndex(); last != 4 {
		t.Fatalf("LastIndex = %d, want 4", last)
	}
}

func TestStableStore(t *testing.T) {
	s, dir := openTest(t, true)
	tests := []struct {
		key, val []byte
	}{
		{[]byte("CurrentTerm"), []byte{0, 0, 0, 0, 0, 0, 0, 7}},
		{[]byte("LastVoteCand"), []byte("node-2")},
		{[]byte("empty"), []byte{}},
		{[]byte{}, []byte("empty key")},
		{[]byte{0xff, 0}, bytes.Repeat([]byte("v"), 100000)},
	}
	for _, tc := range tests {
		if err := s.Set(tc.key, tc.val); err != nil {
			t.Fatalf("Set(%q): %v", tc.key, err)
		}
	}
	check := func(st *Store) {
		t.Helper()
		for _, tc := range tests {
			got, err := st.Get(tc.key)
			if err != nil || !bytes.Equal(got, tc.val) {
				t.Fatalf("Get(%q) = %q, %v; want %q", tc.key, got, err, tc.val)
			}
		}
		if _, err := st.Get([]byte("missing")); err == nil || err.Error() != "not found" {
			t.Fatalf("Get(missing) error = %v, want \"not found\"", err)
		}
		if _, err := st.GetUint64([]byte("missing")); err == nil || err.Error() != "not found" {
			t.Fatalf("GetUint64(missing) error = %v, want \"not found\"", err)
		}
	}
	check(s)
	check(reopen(t, s, dir))
}

func TestStableUint64(t *testing.T) {
	s, _ := openTest(t, true)
	for _, v := range []uint64{0, 1, 255, 256, 1 << 32, 1<<64 - 1} {
		if err := s.SetUint64([]byte("k"), v); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetUint64([]byte("k"))
		if err != nil || got != v {
			t.Fatalf("GetUint64 = %d, %v; want %d", got, err, v)
		}
	}
	// A value that is not 8 bytes is an error, not a silent zero.
	if err := s.Set([]byte("short"), []byte{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUint64([]byte("short")); err == nil {
		t.Fatal("GetUint64 of a 1-byte value succeeded")
	}
	// Stable keys and log entries do not collide.
	if err := s.StoreLog(&raft.Log{Index: 1, Term: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(logKey(1)[1:], []byte("stable")); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := s.GetLog(1, &l); err != nil || l.Term != 1 {
		t.Fatalf("log clobbered by stable key: %+v %v", l, err)
	}
}

func TestClosed(t *testing.T) {
	s, _ := openTest(t, true)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	checks := map[string]error{
		"Close":     s.Close(),
		"StoreLog":  s.StoreLog(&raft.Log{Index: 1}),
		"GetLog":    s.GetLog(1, &l),
		"Set":       s.Set([]byte("a"), nil),
		"DeleteRng": s.DeleteRange(1, 2),
	}
	_, checks["Get"] = s.Get([]byte("a"))
	_, checks["FirstIndex"] = s.FirstIndex()
	_, checks["List"] = s.SnapshotStore(1).List()
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		ok   bool
	}{
		{"ok", Options{Dir: "x"}, true},
		{"no dir", Options{}, false},
		{"negative cache", Options{Dir: "x", CacheSize: -1}, false},
		{"negative chunk", Options{Dir: "x", SnapshotChunkSize: -1}, false},
		{"huge memtable", Options{Dir: "x", MemTableSize: 5 << 30}, false},
	}
	for _, tc := range tests {
		if err := tc.o.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
	}
	if _, err := Open(Options{}); err == nil {
		t.Fatal("Open without Dir succeeded")
	}
}

func TestMetrics(t *testing.T) {
	s, _ := openTest(t, false)
	if err := s.StoreLogs(logRange(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(logRange(11, 15)); err != nil {
		t.Fatal(err)
	}
	m := s.Metrics()
	if m.LogEntries != 15 || m.Appends != 2 || m.AppendedEntries != 15 || m.AppendedBytes != 15 {
		t.Fatalf("metrics = %+v", m)
	}
	// Two synced commits: at least two WAL fsyncs, timed.
	if m.WALSyncs < 2 || m.LastWALSyncLatency <= 0 || m.LastCommitLatency <= 0 {
		t.Fatalf("sync metrics = %+v", m)
	}
	if m.DiskBytes == 0 {
		t.Fatalf("DiskBytes = 0")
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if m := s.Metrics(); m.LogDiskBytes == 0 {
		t.Fatalf("LogDiskBytes = 0 after flush")
	}
}

// TestWritePanicGoesToOnDiskFailure: a panic with an I/O error inside a
// write (Pebble panics when it cannot create its next WAL file on a full
// disk) reaches OnDiskFailure with the file, which logs DISK FULL and exits
// 74 in zkd; any other panic goes on as a panic.
func TestWritePanicGoesToOnDiskFailure(t *testing.T) {
	s, _ := openTest(t, true)
	type exited struct{ file string }
	s.onDisk = func(file string, err error) {
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("OnDiskFailure got %v, want ENOSPC", err)
		}
		panic(exited{file}) // zkd exits here; the test unwinds instead
	}
	write := func(v any) (r any) {
		defer func() { r = recover() }()
		if err := s.acquire(); err != nil {
			t.Fatal(err)
		}
		defer s.release()
		panic(v)
	}
	enospc := &fs.PathError{Op: "write", Path: "/data/zkd/000018.log", Err: syscall.ENOSPC}
	if got, ok := write(enospc).(exited); !ok || got.file != "/data/zkd/000018.log" {
		t.Fatalf("a write panicking with ENOSPC ended in %v, want OnDiskFailure naming the file", got)
	}
	if got := write("a bug"); got != "a bug" {
		t.Fatalf("a write panicking with a non-I/O value ended in %v, want the panic to go on", got)
	}
	// The store still works: release unlocked before handing the panic on.
	if err := s.SetUint64([]byte("k"), 7); err != nil {
		t.Fatal(err)
	}
}
