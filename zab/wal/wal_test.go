package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// openLog opens a log with opts (Dir required) and closes it at the end of
// the test.
func openLog(t testing.TB, opts Options) *Log {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// reopen closes l and opens its directory again with opts.
func reopen(t testing.TB, l *Log, opts Options) *Log {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openLog(t, opts)
}

// observed returns a logger whose warnings the returned observer records.
func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.WarnLevel)
	return zap.New(core), logs
}

// entryData is the Data of test entry index in term: it names both, so a
// reader can tell a stale entry from a current one.
// It is 40 bytes long whatever the index, so that tiny segments fill fast.
func entryData(index, term uint64) []byte {
	return fmt.Appendf(nil, "%06d/%d/%s", index, term, strings.Repeat(".", 30))
}

// logRange returns command entries lo..hi of term.
func logRange(lo, hi, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := lo; i <= hi; i++ {
		out = append(out, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: entryData(i, term)})
	}
	return out
}

// store appends lo..hi of term in batches of batch entries.
func store(t testing.TB, l *Log, lo, hi, term uint64, batch int) {
	t.Helper()
	logs := logRange(lo, hi, term)
	for len(logs) > 0 {
		n := min(batch, len(logs))
		if err := l.StoreLogs(logs[:n]); err != nil {
			t.Fatalf("StoreLogs %d-%d: %v", logs[0].Index, logs[n-1].Index, err)
		}
		logs = logs[n:]
	}
}

// checkBounds fails unless the log's bounds are first, last.
func checkBounds(t testing.TB, l *Log, first, last uint64) {
	t.Helper()
	f, err1 := l.FirstIndex()
	la, err2 := l.LastIndex()
	if err1 != nil || err2 != nil || f != first || la != last {
		t.Fatalf("bounds = %d-%d (%v, %v), want %d-%d", f, la, err1, err2, first, last)
	}
}

// checkEntries fails unless entries lo..hi are readable with term.
func checkEntries(t testing.TB, l *Log, lo, hi, term uint64) {
	t.Helper()
	for i := lo; i <= hi; i++ {
		var e raft.Log
		if err := l.GetLog(i, &e); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if e.Index != i || e.Term != term || !bytes.Equal(e.Data, entryData(i, term)) {
			t.Fatalf("GetLog(%d) = index %d term %d data %q, want term %d", i, e.Index, e.Term, e.Data, term)
		}
	}
}

// checkMissing fails unless GetLog returns raft.ErrLogNotFound for each of
// indexes.
func checkMissing(t testing.TB, l *Log, indexes ...uint64) {
	t.Helper()
	for _, i := range indexes {
		var e raft.Log
		if err := l.GetLog(i, &e); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("GetLog(%d) = %v (term %d), want raft.ErrLogNotFound", i, err, e.Term)
		}
	}
}

// segmentFiles returns the segment file names in dir, oldest first.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, ok := parseSegmentName(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// segmentBases returns the base index of each open segment, oldest first.
func segmentBases(l *Log) []uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []uint64
	for _, s := range l.mu.segs {
		out = append(out, s.base)
	}
	return out
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
		{"nil data and extensions, zero time", raft.Log{Index: 2, Term: 2, Type: raft.LogNoop}},
		{"empty non-nil data", raft.Log{Index: 3, Term: 2, Type: raft.LogCommand, Data: []byte{}, Extensions: []byte{}}},
		{"configuration", raft.Log{Index: 4, Term: 3, Type: raft.LogConfiguration, Data: []byte{0, 1}, AppendedAt: at.Add(time.Hour)}},
		{"barrier", raft.Log{Index: 5, Term: 3, Type: raft.LogBarrier}},
		{"pre-epoch time", raft.Log{Index: 6, Term: 3, Type: raft.LogCommand, AppendedAt: time.Unix(-5, 7)}},
		{"max term and index", raft.Log{Index: 1<<64 - 2, Term: 1<<64 - 1, Type: raft.LogCommand, Data: []byte("x")}},
		{"index 0", raft.Log{Index: 0, Term: 1, Type: raft.LogCommand, Data: []byte("zero")}},
		{"1 MiB data", raft.Log{Index: 7, Term: 3, Type: raft.LogCommand, Data: big}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Dir: t.TempDir(), NoSync: true, SegmentSize: 64 << 10}
			l := openLog(t, opts)
			in := tc.log
			if err := l.StoreLog(&in); err != nil {
				t.Fatalf("StoreLog: %v", err)
			}
			get := func(l *Log) raft.Log {
				t.Helper()
				// Decoding into a dirty Log must overwrite every field.
				out := raft.Log{Data: []byte("stale"), Extensions: []byte("stale"), AppendedAt: time.Now(), Type: raft.LogBarrier}
				if err := l.GetLog(in.Index, &out); err != nil {
					t.Fatalf("GetLog: %v", err)
				}
				if !logsEqual(&in, &out) {
					t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
				}
				return out
			}
			checkBounds(t, l, in.Index, in.Index)
			a, b := get(l), get(l)
			// The returned slices are the caller's: writing to or appending
			// to one changes nothing else.
			if len(a.Data) > 0 {
				a.Data[0] ^= 0xff
				if b.Data[0] == a.Data[0] {
					t.Fatal("two GetLog calls share Data")
				}
			}
			if a.Data != nil && a.Extensions != nil {
				ext := bytes.Clone(a.Extensions)
				_ = append(a.Data, 0xEE, 0xEE, 0xEE, 0xEE)
				if !bytes.Equal(a.Extensions, ext) {
					t.Fatal("appending to Data overwrote Extensions")
				}
			}
			l = reopen(t, l, opts)
			checkBounds(t, l, in.Index, in.Index)
			get(l)
		})
	}
}

func TestGetLogMissing(t *testing.T) {
	l := openLog(t, Options{Dir: t.TempDir(), NoSync: true})
	checkBounds(t, l, 0, 0)
	checkMissing(t, l, 0, 1)
	store(t, l, 1, 2, 1, 2)
	checkMissing(t, l, 0, 3, 1<<40, 1<<64-1)
	if err := l.DeleteRange(1, 1); err != nil {
		t.Fatal(err)
	}
	checkMissing(t, l, 1)
	checkEntries(t, l, 2, 2, 1)
}

// TestRotation writes across many tiny segments, with and without syncing
// (which preallocates by writing zeros), including a batch bigger than a
// segment, and reads everything back before and after reopening.
func TestRotation(t *testing.T) {
	for _, noSync := range []bool{true, false} {
		t.Run(fmt.Sprintf("nosync=%v", noSync), func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{Dir: dir, NoSync: noSync, SegmentSize: MinSegmentSize}
			l := openLog(t, opts)
			for i, batch := uint64(1), 1; i <= 300; batch = batch%7 + 1 {
				hi := min(i+uint64(batch)-1, 300)
				store(t, l, i, hi, 1, batch)
				i = hi + 1
			}
			// A batch of 3 KiB: bigger than a segment, so it gets one of
			// its own; the next batch starts another normal one.
			huge := logRange(301, 303, 1)
			for _, e := range huge {
				e.Data = bytes.Repeat(entryData(e.Index, 1), 128)
			}
			if err := l.StoreLogs(huge); err != nil {
				t.Fatal(err)
			}
			store(t, l, 304, 320, 1, 5)

			files := segmentFiles(t, dir)
			if len(files) < 15 {
				t.Fatalf("%d segment files, want many: %v", len(files), files)
			}
			if m := l.Metrics(); m.Segments != len(files) || m.Entries != 320 || m.Appends == 0 {
				t.Fatalf("Metrics = %+v with %d files", m, len(files))
			}
			var sizes []int64
			for _, name := range files {
				fi, err := os.Stat(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				sizes = append(sizes, fi.Size())
			}
			var oversized int
			for _, s := range sizes {
				switch {
				case s == MinSegmentSize:
				case s > 3<<10:
					oversized++
				default:
					t.Fatalf("segment sizes %v: want %d, or one oversized", sizes, MinSegmentSize)
				}
			}
			if oversized != 1 {
				t.Fatalf("segment sizes %v: want exactly one oversized", sizes)
			}
			check := func(l *Log) {
				t.Helper()
				checkBounds(t, l, 1, 320)
				checkEntries(t, l, 1, 300, 1)
				checkEntries(t, l, 304, 320, 1)
				for _, want := range huge {
					var e raft.Log
					if err := l.GetLog(want.Index, &e); err != nil || !logsEqual(want, &e) {
						t.Fatalf("GetLog(%d) = %v", want.Index, err)
					}
				}
			}
			check(l)
			l = reopen(t, l, opts)
			check(l)
			if got := len(segmentBases(l)); got != len(files) {
				t.Fatalf("reopened with %d segments, want %d", got, len(files))
			}
			store(t, l, 321, 400, 1, 9)
			l = reopen(t, l, opts)
			checkEntries(t, l, 1, 300, 1)
			checkEntries(t, l, 304, 400, 1)
		})
	}
}

func TestStoreLogsContiguity(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, NoSync: true, SegmentSize: MinSegmentSize}
	l := openLog(t, opts)
	// An empty log accepts any first index.
	store(t, l, 7, 40, 1, 4)
	tests := []struct {
		name    string
		indexes []uint64
	}{
		{"gap after last", []uint64{42}},
		{"overlaps last", []uint64{40, 41}},
		{"before first", []uint64{3}},
		{"gap inside batch", []uint64{41, 43}},
		{"repeat inside batch", []uint64{41, 41}},
		{"reversed batch", []uint64{42, 41}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs []*raft.Log
			for _, i := range tc.indexes {
				logs = append(logs, &raft.Log{Index: i, Term: 1, Data: entryData(i, 1)})
			}
			err := l.StoreLogs(logs)
			if err == nil || !strings.HasPrefix(err.Error(), "wal: store logs ") {
				t.Fatalf("StoreLogs(%v) = %v, want a wal: store logs error", tc.indexes, err)
			}
			checkBounds(t, l, 7, 40)
		})
	}
	// A refused batch leaves the log writable.
	store(t, l, 41, 45, 1, 5)
	checkEntries(t, l, 7, 45, 1)

	// Emptied (as after a snapshot install), the log takes any index again.
	if err := l.DeleteRange(7, 45); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, l, 0, 0)
	if files := segmentFiles(t, dir); len(files) != 0 {
		t.Fatalf("emptied log left segment files %v", files)
	}
	store(t, l, 1000, 1040, 2, 8)
	l = reopen(t, l, opts)
	checkBounds(t, l, 1000, 1040)
	checkEntries(t, l, 1000, 1040, 2)
	checkMissing(t, l, 7, 45, 999, 1041)
	if err := l.StoreLogs(logRange(46, 46, 2)); err == nil {
		t.Fatal("after reopen, StoreLogs at the old index was accepted")
	}
	store(t, l, 1041, 1041, 2, 1)
}

// TestCallbacks checks OnAppend and OnSync, Metrics, NoSync, and that
// GetLog and LastIndex do not wait for a StoreLogs that is syncing.
func TestCallbacks(t *testing.T) {
	type appendCall struct{ entries, commands int }
	batches := [][]*raft.Log{
		{{Index: 1, Term: 1, Type: raft.LogConfiguration}, {Index: 2, Term: 1, Type: raft.LogNoop}, {Index: 3, Term: 1, Type: raft.LogCommand}},
		logRange(4, 8, 1),
		{{Index: 9, Term: 1, Type: raft.LogBarrier}},
	}
	wantAppends := []appendCall{{3, 1}, {5, 5}, {1, 0}}
	tests := []struct {
		noSync    bool
		wantSyncs int
	}{
		// One per batch, and one for the first segment's header.
		{noSync: false, wantSyncs: len(batches) + 1},
		{noSync: true, wantSyncs: 0},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("nosync=%v", tc.noSync), func(t *testing.T) {
			var (
				appends []appendCall
				syncs   int
				l       *Log
			)
			opts := Options{
				Dir:         t.TempDir(),
				NoSync:      tc.noSync,
				SegmentSize: 64 << 10,
				OnAppend: func(entries, commands int, took time.Duration) {
					appends = append(appends, appendCall{entries, commands})
					if took <= 0 {
						t.Errorf("OnAppend took %v", took)
					}
				},
				OnSync: func(took time.Duration) {
					syncs++
					// StoreLogs is mid-call, its entries synced but not yet
					// published: readers must still get through.
					done := make(chan error, 1)
					go func() {
						var e raft.Log
						err := l.GetLog(1, &e)
						if errors.Is(err, raft.ErrLogNotFound) {
							err = nil // the first batch is not published yet
						}
						if _, lerr := l.LastIndex(); err == nil {
							err = lerr
						}
						done <- err
					}()
					select {
					case err := <-done:
						if err != nil {
							t.Errorf("GetLog during a sync: %v", err)
						}
					case <-time.After(10 * time.Second):
						t.Error("GetLog blocked by a StoreLogs that was syncing")
					}
				},
			}
			l = openLog(t, opts)
			for _, b := range batches {
				if err := l.StoreLogs(b); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(appends, wantAppends) {
				t.Fatalf("OnAppend calls %v, want %v", appends, wantAppends)
			}
			if syncs != tc.wantSyncs {
				t.Fatalf("OnSync called %d times, want %d", syncs, tc.wantSyncs)
			}
			m := l.Metrics()
			if m.Appends != 3 || m.AppendedEntries != 9 || m.Syncs != uint64(tc.wantSyncs) ||
				m.AppendedBytes == 0 || m.LastAppendLatency <= 0 || m.Segments != 1 || m.DiskBytes < 64<<10 ||
				m.FirstIndex != 1 || m.LastIndex != 9 || m.Entries != 9 {
				t.Fatalf("Metrics = %+v", m)
			}
			l = reopen(t, l, opts)
			checkBounds(t, l, 1, 9)
			checkEntries(t, l, 4, 8, 1)
		})
	}
}

func TestClosed(t *testing.T) {
	l := openLog(t, Options{Dir: t.TempDir(), NoSync: true})
	store(t, l, 1, 3, 1, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var e raft.Log
	_, err1 := l.FirstIndex()
	_, err2 := l.LastIndex()
	for i, err := range []error{err1, err2, l.GetLog(1, &e), l.StoreLogs(logRange(4, 4, 1)), l.DeleteRange(1, 1), l.Close()} {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("call %d after Close = %v, want ErrClosed", i, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		field string
	}{
		{"no dir", Options{}, "Dir"},
		{"tiny segments", Options{Dir: "x", SegmentSize: MinSegmentSize - 1}, "SegmentSize"},
		{"huge segments", Options{Dir: "x", SegmentSize: MaxSegmentSize + 1}, "SegmentSize"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if err == nil || !strings.Contains(err.Error(), "Options."+tc.field) {
				t.Fatalf("Validate = %v, want an error naming %s", err, tc.field)
			}
			if _, err := Open(tc.opts); err == nil {
				t.Fatal("Open accepted bad options")
			}
		})
	}
}

// TestSyncingSince: while a StoreLogs waits on its fdatasync, SyncingSince
// reports when its disk write began, without waiting for it; once it
// returns, SyncingSince is zero and LastSync holds the sync's duration.
func TestSyncingSince(t *testing.T) {
	release := make(chan struct{})
	var stall atomic.Bool
	l := openLog(t, Options{Dir: t.TempDir(), SegmentSize: MinSegmentSize * 64, BeforeSync: func(string) {
		if stall.Load() {
			<-release
		}
	}})
	if err := l.StoreLogs(logRange(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	if !l.SyncingSince().IsZero() {
		t.Fatalf("SyncingSince = %v with no write in progress, want zero", l.SyncingSince())
	}
	stall.Store(true)
	before := time.Now()
	done := make(chan error, 1)
	go func() { done <- l.StoreLogs(logRange(4, 6, 1)) }()
	deadline := time.Now().Add(10 * time.Second)
	for l.SyncingSince().IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("SyncingSince stayed zero while a StoreLogs waited on its fdatasync")
		}
		time.Sleep(time.Millisecond)
	}
	since := l.SyncingSince()
	if since.Before(before.Add(-time.Millisecond)) || since.After(time.Now()) {
		t.Fatalf("SyncingSince = %v, want between %v and now", since, before)
	}
	const held = 50 * time.Millisecond
	time.Sleep(held) // the stall being measured, not a wait for an event
	if got := time.Since(l.SyncingSince()); got < held {
		t.Fatalf("the write in progress has run %v by SyncingSince, want at least %v", got, held)
	}
	stall.Store(false)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !l.SyncingSince().IsZero() {
		t.Fatalf("SyncingSince = %v after the write returned, want zero", l.SyncingSince())
	}
	if got := l.LastSync(); got < held {
		t.Fatalf("LastSync = %v, want at least the %v the sync was held", got, held)
	}
}
