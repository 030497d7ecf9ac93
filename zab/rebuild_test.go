package zab

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap/zaptest"
)

// TestPrepareRebuild: the data moves aside intact, the directory is left
// with the marker alone, and a member of an ensemble opened on it does not
// bootstrap a membership of its own (it would then elect with nothing);
// ClearRebuild removes the marker; member counters round-trip.
func TestPrepareRebuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "zkd")
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wal", "seg"), []byte("log"), 0o644); err != nil {
		t.Fatal(err)
	}
	moved, err := PrepareRebuild(dir, time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if want := dir + ".before-rebuild-20261127T040000Z"; moved != want {
		t.Fatalf("moved to %s, want %s", moved, want)
	}
	if b, err := os.ReadFile(filepath.Join(moved, "wal", "seg")); err != nil || string(b) != "log" {
		t.Fatalf("old data not kept: %q %v", b, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != RebuildMarker {
		t.Fatalf("rebuilt directory holds %v, want the marker alone", entries)
	}

	cfg := DefaultConfig()
	cfg.Dir, cfg.NoSync, cfg.Logger = dir, true, zaptest.NewLogger(t)
	addr, trans := raft.NewInmemTransport("")
	cfg.Transport = trans
	cfg.Servers = []raft.Server{
		{Suffrage: raft.Voter, ID: "1", Address: addr},
		{Suffrage: raft.Voter, ID: "2", Address: "b"},
		{Suffrage: raft.Voter, ID: "3", Address: "c"},
	}
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	fut := n.Raft().GetConfiguration()
	if err := fut.Error(); err != nil {
		t.Fatal(err)
	}
	if s := fut.Configuration().Servers; len(s) != 0 {
		t.Fatalf("rebuilt member bootstrapped %v", s)
	}
	if !n.Rebuilding() {
		t.Fatal("Rebuilding false with the marker there")
	}
	if err := n.ClearRebuild(); err != nil || n.Rebuilding() {
		t.Fatalf("ClearRebuild: %v, still rebuilding %v", err, n.Rebuilding())
	}
	if v, err := n.MemberCounter("x"); err != nil || v != 0 {
		t.Fatalf("unset counter: %d %v", v, err)
	}
	if err := n.SetMemberCounter("x", 7); err != nil {
		t.Fatal(err)
	}
	if v, err := n.MemberCounter("x"); err != nil || v != 7 {
		t.Fatalf("counter: %d %v, want 7", v, err)
	}
}
