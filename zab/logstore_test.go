package zab

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	"go.uber.org/zap/zaptest"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab/store"
	"github.com/zkd/zkd/zab/wal"
)

// untar unpacks a testdata .tar.gz into dir.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Clean(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(out, tr); err != nil {
				t.Fatal(err)
			}
			out.Close()
		}
	}
}

// legacyDir is a standalone zkd data directory written by 48c1e2d, the
// head before the segment log, which kept raft's log in Pebble: 300
// znodes under /legacy (fill), /legacy-marker set twice, then kill -9
// (no snapshot at shutdown: the state is all in the log).
const legacyArchive = "testdata/pebble-log-48c1e2d.tar.gz"

// TestOpenMovesPebbleLog opens a data directory of an older zkd: the log
// moves into the segment log, the tree is the one that zkd acknowledged,
// Pebble no longer holds the log, new writes land after it, and the
// next start opens from the segment log alone.
func TestOpenMovesPebbleLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "zkd")
	untar(t, legacyArchive, filepath.Dir(dir))
	check := func(n *Node, wantNodes int) {
		t.Helper()
		data, st, err := n.Tree().GetData("/legacy-marker", nil, nil)
		if err != nil || string(data) != "v2 by 48c1e2d" || st.Version != 1 {
			t.Fatalf("/legacy-marker: %q version %d, %v; want \"v2 by 48c1e2d\" at version 1", data, st.Version, err)
		}
		for _, p := range []string{"/legacy/n00000000", "/legacy/n00000299"} {
			if _, _, err := n.Tree().GetData(p, nil, nil); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
		if kids, _, err := n.Tree().GetChildren("/legacy", nil, nil); err != nil || len(kids) != wantNodes {
			t.Fatalf("/legacy has %d children (%v), want %d", len(kids), err, wantNodes)
		}
	}
	n := openNode(t, dir)
	check(n, 300)
	if m := n.Stats().Store; m.LogEntries == 0 {
		t.Fatalf("segment log empty after the move: %+v", m)
	}
	s := n.Submit(&Request{Op: jute.OpCreateSession, Timeout: 30000}).Wait()
	body := jute.Encode(&jute.CreateRequest{Path: "/legacy/after", Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}})
	if r := n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: body}).Wait(); r.Err != nil {
		t.Fatal(r.Err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	// Pebble holds no log any more, and says it moved.
	st, err := store.Open(store.Options{Dir: dir, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	last, _ := st.LastIndex()
	moved, _ := st.GetUint64(keyLogInWAL)
	st.Close()
	if last != 0 || moved != 1 {
		t.Fatalf("after the move Pebble's log ends at %d and the marker is %d; want an empty log and 1", last, moved)
	}

	n = openNode(t, dir)
	defer n.Close()
	check(n, 301)
}

// TestMoveLogInterrupted simulates a start that copied the Pebble log into
// the segment log but crashed before setting the marker: the segment log
// also holds stale entries. The next start copies again from Pebble, which
// still holds everything, and comes up with the acknowledged tree.
func TestMoveLogInterrupted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "zkd")
	untar(t, legacyArchive, filepath.Dir(dir))
	st, err := store.Open(store.Options{Dir: dir, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := st.FirstIndex()
	last, _ := st.LastIndex()
	// A partial copy: the first half of the entries.
	cfg := DefaultConfig()
	cfg.Dir, cfg.Logger = dir, zaptest.NewLogger(t)
	wl, err := openWALOnly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var half []*raft.Log
	for i := first; i <= first+(last-first)/2; i++ {
		e := new(raft.Log)
		if err := st.GetLog(i, e); err != nil {
			t.Fatal(err)
		}
		half = append(half, e)
	}
	if err := wl.StoreLogs(half); err != nil {
		t.Fatal(err)
	}
	wl.Close()
	st.Close()

	n := openNode(t, dir)
	defer n.Close()
	data, _, err := n.Tree().GetData("/legacy-marker", nil, nil)
	if err != nil || string(data) != "v2 by 48c1e2d" {
		t.Fatalf("/legacy-marker after an interrupted move: %q, %v", data, err)
	}
	if kids, _, _ := n.Tree().GetChildren("/legacy", nil, nil); len(kids) != 300 {
		t.Fatalf("/legacy has %d children, want 300", len(kids))
	}
	if m := n.Stats().Store; m.FirstIndex != first || m.LastIndex < last {
		t.Fatalf("segment log holds %d-%d, want %d-%d or more", m.FirstIndex, m.LastIndex, first, last)
	}
}

// openWALOnly opens the segment log of cfg.Dir without moving anything.
func openWALOnly(cfg Config) (*wal.Log, error) {
	return wal.Open(wal.Options{Dir: filepath.Join(cfg.Dir, walDir), Logger: cfg.Logger})
}

// TestLogCacheBounds checks the cache in front of the segment log: it keeps
// recent entries within its byte and entry bounds (a packed entry can be
// megabytes), serves what it holds and falls back to the log for the rest,
// and forgets everything on DeleteRange.
func TestLogCacheBounds(t *testing.T) {
	wl, err := wal.Open(wal.Options{Dir: t.TempDir(), NoSync: true, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Close()
	c := newLogCache(wl)
	c.maxBytes, c.maxLogs = 10<<10, 8
	big := func(i uint64, size int) *raft.Log {
		return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, size)}
	}
	for i := uint64(1); i <= 20; i++ {
		if err := c.StoreLogs([]*raft.Log{big(i, 3<<10)}); err != nil {
			t.Fatal(err)
		}
		if c.bytes > c.maxBytes || len(c.logs) > c.maxLogs {
			t.Fatalf("after %d entries the cache holds %d entries, %d bytes; bounds %d, %d", i, len(c.logs), c.bytes, c.maxLogs, c.maxBytes)
		}
	}
	if got := c.logs[0].Index; got != 18 {
		t.Fatalf("oldest cached entry %d, want 18 (three of 3 KiB fit in 10 KiB)", got)
	}
	for i := uint64(1); i <= 20; i++ {
		var l raft.Log
		if err := c.GetLog(i, &l); err != nil || l.Index != i || len(l.Data) != 3<<10 || l.Data[0] != byte(i) {
			t.Fatalf("GetLog(%d) = %d, %d bytes, %v", i, l.Index, len(l.Data), err)
		}
	}
	// An entry over the byte bound is still kept, alone.
	if err := c.StoreLogs([]*raft.Log{big(21, 64<<10)}); err != nil {
		t.Fatal(err)
	}
	if len(c.logs) != 1 || c.logs[0].Index != 21 {
		t.Fatalf("cache after an oversized entry: %d entries", len(c.logs))
	}
	if err := c.DeleteRange(15, 21); err != nil {
		t.Fatal(err)
	}
	if len(c.logs) != 0 || c.bytes != 0 {
		t.Fatalf("cache after DeleteRange: %d entries, %d bytes", len(c.logs), c.bytes)
	}
	if err := c.GetLog(15, new(raft.Log)); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog of a deleted entry: %v", err)
	}
}

// TestLastCommand checks the search for the last command entry after a
// snapshot, which decides whether a start replayed writes (and so
// returns the freed heap) and what the FSM must have applied first.
func TestLastCommand(t *testing.T) {
	st := raft.NewInmemStore()
	types := []raft.LogType{raft.LogConfiguration, raft.LogCommand, raft.LogCommand, raft.LogNoop, raft.LogConfiguration}
	for i, typ := range types {
		if err := st.StoreLog(&raft.Log{Index: uint64(i + 1), Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name        string
		after, last uint64
		want        uint64
	}{
		{"commands before raft's own entries", 0, 5, 3},
		{"snapshot covers the commands", 3, 5, 0},
		{"snapshot between them", 2, 5, 3},
		{"last is a command", 0, 2, 2},
		{"nothing after the snapshot", 5, 5, 0},
		{"a missing entry stops the search", 0, 9, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lastCommand(st, tt.after, tt.last); got != tt.want {
				t.Fatalf("lastCommand(%d, %d) = %d, want %d", tt.after, tt.last, got, tt.want)
			}
		})
	}
}
