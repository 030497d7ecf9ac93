package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMigrateCommands(t *testing.T) {
	const zk38 = "../../zab/zkformat/testdata/zk38"
	cfgFile := func(t *testing.T, extra string) string {
		dir := t.TempDir()
		p := filepath.Join(dir, "zoo.cfg")
		cfg := "dataDir=" + filepath.Join(dir, "data") + "\nclientPort=2181\n" + extra
		if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		cmd      string
		args     func(cfg string) []string
		extra    string
		wantCode int
		want     string // in stdout or stderr
	}{
		{"import without -from", "import", func(cfg string) []string { return []string{cfg} }, "", 2, "usage: zkd import"},
		{"export without -to", "export", func(cfg string) []string { return []string{cfg} }, "", 2, "usage: zkd export"},
		{"import without zoo.cfg", "import", func(string) []string { return []string{"-from", zk38} }, "", 2, "usage"},
		{"import from nothing", "import", func(cfg string) []string { return []string{"-from", filepath.Dir(cfg), cfg} }, "", 1, "no ZooKeeper snapshot"},
		{"TTL nodes need extended types", "import", func(cfg string) []string { return []string{"-from", zk38, cfg} }, "", 1, "/ttl is a TTL node"},
		{"import", "import", func(cfg string) []string { return []string{"-from", zk38, cfg} }, "zookeeper.extendedTypesEnabled=true\n", 0, "sessions 3, last zxid 0xd6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgFile(t, tc.extra)
			var out, errb bytes.Buffer
			code := migrateMain(tc.cmd, tc.args(cfg), &out, &errb)
			if code != tc.wantCode || !strings.Contains(out.String()+errb.String(), tc.want) {
				t.Fatalf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", code, tc.wantCode, tc.want, out.String(), errb.String())
			}
			if tc.wantCode != 0 {
				if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "data", "zkd")); err == nil && tc.cmd == "import" {
					t.Errorf("a failed import left %s", filepath.Join(filepath.Dir(cfg), "data", "zkd"))
				}
				return
			}
			// The imported member exports the same database back.
			var out2 bytes.Buffer
			to := filepath.Join(t.TempDir(), "data")
			if code := migrateMain("export", []string{"-to", to, cfg}, &out2, &errb); code != 0 {
				t.Fatalf("export: %d %s", code, errb.String())
			}
			if !strings.Contains(out2.String(), "snapshot.d6: znodes 127, ephemerals 3, sessions 3") {
				t.Errorf("export: %s", out2.String())
			}
		})
	}
}
