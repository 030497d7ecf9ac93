package store

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/hashicorp/raft"
)

var testConfig = raft.Configuration{Servers: []raft.Server{
	{Suffrage: raft.Voter, ID: "1", Address: "127.0.0.1:2888"},
	{Suffrage: raft.Voter, ID: "2", Address: "127.0.0.1:2889"},
	{Suffrage: raft.Nonvoter, ID: "3", Address: "127.0.0.1:2890"},
}}

// writeSnap creates, fills and closes a snapshot.
func writeSnap(t *testing.T, ss raft.SnapshotStore, index, term uint64, data []byte) string {
	t.Helper()
	sink, err := ss.Create(raft.SnapshotVersionMax, index, term, testConfig, index-1, nil)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	// Write in uneven pieces to cross chunk boundaries.
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1+len(rest)/3)
		if _, err := sink.Write(rest[:n]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		rest = rest[n:]
	}
	if err := sink.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return sink.ID()
}

func readSnap(t *testing.T, ss raft.SnapshotStore, id string) (*raft.SnapshotMeta, []byte) {
	t.Helper()
	meta, rc, err := ss.Open(id)
	if err != nil {
		t.Fatalf("Open(%s): %v", id, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	return meta, got
}

// countPrefix counts keys with the given prefix byte.
func countPrefix(t *testing.T, s *Store, p byte) int {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

func TestSnapshotRoundTrip(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	random := func(n int) []byte { b := make([]byte, n); rnd.Read(b); return b }
	tests := []struct {
		name      string
		chunkSize int
		data      []byte
	}{
		{"empty", 16, nil},
		{"one byte", 16, []byte{7}},
		{"exactly one chunk", 16, random(16)},
		{"chunk plus one", 16, random(17)},
		{"many chunks", 16, random(1000)},
		{"default chunk 3.5 MiB", 0, random(3<<20 + 1<<19)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(Options{Dir: dir, NoSync: true, SnapshotChunkSize: tc.chunkSize})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			ss := s.SnapshotStore(2)
			id := writeSnap(t, ss, 100, 3, tc.data)
			meta, got := readSnap(t, ss, id)
			if !bytes.Equal(got, tc.data) {
				t.Fatalf("contents differ: %d bytes vs %d", len(got), len(tc.data))
			}
			want := raft.SnapshotMeta{Version: raft.SnapshotVersionMax, ID: id, Index: 100, Term: 3,
				Configuration: testConfig, ConfigurationIndex: 99, Size: int64(len(tc.data))}
			if !reflect.DeepEqual(*meta, want) {
				t.Fatalf("meta = %+v\nwant %+v", *meta, want)
			}
			list, err := ss.List()
			if err != nil || len(list) != 1 || !reflect.DeepEqual(*list[0], want) {
				t.Fatalf("List = %+v, %v", list, err)
			}
			if n := countPrefix(t, s, prefixPending); n != 0 {
				t.Fatalf("%d pending markers after Close", n)
			}
			// Still there, same bytes, after reopening.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open(Options{Dir: dir, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			ss = s.SnapshotStore(2)
			meta2, got2 := readSnap(t, ss, id)
			if !bytes.Equal(got2, tc.data) || !reflect.DeepEqual(*meta2, want) {
				t.Fatalf("after reopen: meta %+v, %d bytes", meta2, len(got2))
			}
		})
	}
}

func TestSnapshotListAndReap(t *testing.T) {
	tests := []struct {
		name   string
		retain int
		snaps  [][2]uint64 // index, term in creation order
		want   [][2]uint64 // listed, newest first
	}{
		{"retain 2 of 3", 2, [][2]uint64{{10, 1}, {20, 1}, {30, 2}}, [][2]uint64{{30, 2}, {20, 1}}},
		{"retain 3 of 2", 3, [][2]uint64{{10, 1}, {20, 1}}, [][2]uint64{{20, 1}, {10, 1}}},
		{"retain 0 means 1", 0, [][2]uint64{{10, 1}, {20, 1}}, [][2]uint64{{20, 1}}},
		{"term orders before index", 5, [][2]uint64{{50, 1}, {40, 2}}, [][2]uint64{{40, 2}, {50, 1}}},
		{"same index, created later is newer", 5, [][2]uint64{{10, 1}, {10, 1}}, [][2]uint64{{10, 1}, {10, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTest(t, true)
			s.chunkSize = 8
			ss := s.SnapshotStore(tc.retain)
			var ids []string
			for _, sn := range tc.snaps {
				ids = append(ids, writeSnap(t, ss, sn[0], sn[1], bytes.Repeat([]byte{byte(sn[0])}, 20)))
			}
			list, err := ss.List()
			if err != nil {
				t.Fatal(err)
			}
			var got [][2]uint64
			for _, m := range list {
				got = append(got, [2]uint64{m.Index, m.Term})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("List = %v, want %v", got, tc.want)
			}
			if len(tc.snaps) >= 2 && tc.snaps[0] == tc.snaps[1] && list[0].ID != ids[1] {
				t.Fatalf("newest = %s, want %s", list[0].ID, ids[1])
			}
			// Reaped snapshots are gone: meta and every chunk.
			if n := countPrefix(t, s, prefixMeta); n != len(tc.want) {
				t.Fatalf("%d metas stored, want %d", n, len(tc.want))
			}
			if n, want := countPrefix(t, s, prefixChunk), 3*len(tc.want); n != want {
				t.Fatalf("%d chunks stored, want %d", n, want)
			}
			listed := map[string]bool{}
			for _, m := range list {
				listed[m.ID] = true
			}
			for _, id := range ids {
				_, _, err := ss.Open(id)
				if listed[id] != (err == nil) {
					t.Fatalf("Open(%s) = %v, listed %v", id, err, listed[id])
				}
				if err != nil && !errors.Is(err, ErrSnapshotNotFound) {
					t.Fatalf("Open(%s) = %v, want ErrSnapshotNotFound", id, err)
				}
			}
			m := s.Metrics()
			if m.Snapshots != len(tc.want) || m.LastSnapshotIndex != tc.want[0][0] || m.LastSnapshotTerm != tc.want[0][1] ||
				m.LastSnapshotSize != 20 {
				t.Fatalf("metrics = %+v", m)
			}
		})
	}
}

func TestSnapshotCancelLeavesNothing(t *testing.T) {
	s, _ := openTest(t, true)
	s.chunkSize = 4
	ss := s.SnapshotStore(3)
	keep := writeSnap(t, ss, 5, 1, []byte("kept snapshot"))
	sink, err := ss.Create(raft.SnapshotVersionMax, 10, 1, testConfig, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write(bytes.Repeat([]byte("x"), 100)); err != nil {
		t.Fatal(err)
	}
	if err := sink.Cancel(); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil { // raft may Close after Cancel: a no-op
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("y")); err == nil {
		t.Fatal("Write after Cancel succeeded")
	}
	list, _ := ss.List()
	if len(list) != 1 || list[0].ID != keep {
		t.Fatalf("List = %+v", list)
	}
	if _, _, err := ss.Open(sink.ID()); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("Open(cancelled) = %v", err)
	}
	for p, want := range map[byte]int{prefixChunk: 4, prefixMeta: 1, prefixPending: 0} {
		if n := countPrefix(t, s, p); n != want {
			t.Fatalf("prefix %c: %d keys, want %d", p, n, want)
		}
	}
}

func TestSnapshotIncompleteRemovedOnOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, NoSync: true, SnapshotChunkSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	ss := s.SnapshotStore(3)
	keep := writeSnap(t, ss, 5, 1, []byte("kept snapshot"))
	sink, err := ss.Create(raft.SnapshotVersionMax, 10, 1, testConfig, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write(bytes.Repeat([]byte("x"), 100)); err != nil {
		t.Fatal(err)
	}
	// The process "dies" here: the sink is never closed.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, _ := s.SnapshotStore(3).List()
	if len(list) != 1 || list[0].ID != keep {
		t.Fatalf("List = %+v", list)
	}
	for p, want := range map[byte]int{prefixChunk: 4, prefixPending: 0} {
		if n := countPrefix(t, s, p); n != want {
			t.Fatalf("prefix %c: %d keys, want %d", p, n, want)
		}
	}
}

func TestSnapshotErrors(t *testing.T) {
	s, _ := openTest(t, true)
	ss := s.SnapshotStore(1)
	if _, err := ss.Create(raft.SnapshotVersionMax+1, 1, 1, testConfig, 1, nil); err == nil {
		t.Fatal("Create with unsupported version succeeded")
	}
	for _, id := range []string{"", "1-2-3", "a/b"} {
		if _, _, err := ss.Open(id); !errors.Is(err, ErrSnapshotNotFound) {
			t.Fatalf("Open(%q) = %v", id, err)
		}
	}
}

// TestSnapshotCorruptDetected changes a stored snapshot under Pebble's
// checksums (as a bug or a changed byte Pebble's checksums missed would):
// the reader fails at the end with ErrSnapshotCorrupt, and the store
// remembers it (Corruption).
func TestSnapshotCorruptDetected(t *testing.T) {
	s, _ := openTest(t, true)
	s.chunkSize = 8
	ss := s.SnapshotStore(1)
	id := writeSnap(t, ss, 10, 1, []byte("0123456789abcdefghij"))
	tests := []struct {
		name  string
		apply func() error
	}{
		{"flipped byte", func() error { return s.db.Set(chunkKey(id, 1), []byte("89abcdeF"), pebble.NoSync) }},
		{"missing chunk", func() error { return s.db.Delete(chunkKey(id, 2), pebble.NoSync) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.apply(); err != nil {
				t.Fatal(err)
			}
			_, rc, err := ss.Open(id)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if _, err := io.ReadAll(rc); !errors.Is(err, ErrSnapshotCorrupt) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ReadAll = %v, want ErrSnapshotCorrupt and ErrCorrupt", err)
			}
			// Remembered, for a start that raft would carry on from an
			// older snapshot.
			if err := s.Corruption(); !errors.Is(err, ErrSnapshotCorrupt) || !strings.Contains(err.Error(), id) {
				t.Fatalf("Corruption() = %v, want the snapshot's ErrSnapshotCorrupt", err)
			}
		})
	}
}

// A reader opened before its snapshot is reaped still reads it whole.
func TestSnapshotReadWhileReaped(t *testing.T) {
	s, _ := openTest(t, true)
	s.chunkSize = 8
	ss := s.SnapshotStore(1)
	data := bytes.Repeat([]byte("old!"), 50)
	id := writeSnap(t, ss, 10, 1, data)
	_, rc, err := ss.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(rc, buf); err != nil {
		t.Fatal(err)
	}
	writeSnap(t, ss, 20, 1, []byte("new"))
	if _, _, err := ss.Open(id); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("old snapshot not reaped: %v", err)
	}
	rest, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(append(buf, rest...), data) {
		t.Fatalf("read after reap: %v, %d bytes", err, len(rest)+5)
	}
}

// Closing the store with a snapshot reader still open succeeds (no leaked
// iterator) and the reader then fails with ErrClosed.
func TestCloseWithOpenSnapshotReader(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, NoSync: true, SnapshotChunkSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	ss := s.SnapshotStore(1)
	id := writeSnap(t, ss, 1, 1, []byte("0123456789"))
	_, rc, err := ss.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(rc, buf); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close with open reader: %v", err)
	}
	if _, err := rc.Read(buf); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after store Close = %v, want ErrClosed", err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	// A reader closed normally is forgotten by the store.
	s, err = Open(Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	_, rc, err = s.SnapshotStore(1).Open(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Read(buf); err == nil {
		t.Fatal("Read after reader Close succeeded")
	}
	if n := len(s.snaps.readers); n != 0 {
		t.Fatalf("%d readers still registered", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// Operations racing with Close either complete or fail with ErrClosed;
// none reaches the closed Pebble database (which would panic).
func TestCloseRacesOperations(t *testing.T) {
	for round := 0; round < 5; round++ {
		s, err := Open(Options{Dir: t.TempDir(), NoSync: true, SnapshotChunkSize: 8})
		if err != nil {
			t.Fatal(err)
		}
		ss := s.SnapshotStore(2)
		done := make(chan struct{})
		errs := make(chan error, 4)
		for w := 0; w < 3; w++ {
			go func(w int) {
				defer func() { done <- struct{}{} }()
				for i := uint64(1); ; i++ {
					var err error
					switch w {
					case 0:
						err = s.StoreLogs(logRange(i, i))
					case 1:
						var l raft.Log
						if err = s.GetLog(i/2+1, &l); err == raft.ErrLogNotFound {
							err = nil
						}
					case 2:
						var sink raft.SnapshotSink
						if sink, err = ss.Create(raft.SnapshotVersionMax, i, 1, testConfig, 1, nil); err == nil {
							if _, err = sink.Write([]byte("some snapshot bytes")); err == nil {
								err = sink.Close()
							}
						}
					}
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		for w := 0; w < 3; w++ {
			<-done
		}
		select {
		case err := <-errs:
			t.Fatalf("operation failed with %v, want success or ErrClosed", err)
		default:
		}
	}
}
