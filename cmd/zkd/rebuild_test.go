package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd/zkd/zab"
)

// TestRebuildCommand: zkd rebuild refuses a standalone zoo.cfg and a
// member whose quorum port is in use (running), and otherwise moves the
// member's zkd data aside, keeping it and myid, and leaves the marker.
func TestRebuildCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().(*net.TCPAddr).Port
	free := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	member := func(quorumPort int) string {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(filepath.Join(data, "zkd", "wal"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(data, "myid"), []byte("1\n"), 0o644)
		os.WriteFile(filepath.Join(data, "zkd", "wal", "0000000000000001.wal"), []byte("log"), 0o644)
		cfg := fmt.Sprintf("tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nserver.1=127.0.0.1:%d:%d\nserver.2=127.0.0.1:%d:%d\nserver.3=127.0.0.1:%d:%d\n",
			data, free(), quorumPort, free(), free(), free(), free(), free())
		path := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	standalone := filepath.Join(t.TempDir(), "zoo.cfg")
	os.WriteFile(standalone, []byte(fmt.Sprintf("dataDir=%s\nclientPort=%d\n", t.TempDir(), free())), 0o644)

	for _, tc := range []struct {
		name string
		cfg  string
		code int
		want string
	}{
		{"standalone", standalone, 2, "no peers to rebuild it from"},
		{"running", member(busy), 1, "stop this member's zkd first"},
		{"stopped", member(free()), 0, "copies the state from the ensemble's leader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := rebuildMain([]string{tc.cfg}, &out, &errOut)
			if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s%s", code, tc.code, tc.want, out.String(), errOut.String())
			}
			if code != 0 {
				return
			}
			data := filepath.Join(filepath.Dir(tc.cfg), "data")
			moved, _ := filepath.Glob(filepath.Join(data, "zkd.before-rebuild-*", "wal", "*.wal"))
			if len(moved) != 1 {
				t.Fatalf("old raft log not kept: %v", moved)
			}
			if _, err := os.Stat(filepath.Join(data, "zkd", zab.RebuildMarker)); err != nil {
				t.Fatalf("no rebuild marker: %v", err)
			}
			if _, err := os.Stat(filepath.Join(data, "myid")); err != nil {
				t.Fatalf("myid not kept: %v", err)
			}
		})
	}
}
