package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFollowCommand(t *testing.T) {
	const zk38 = "../../zab/zkformat/testdata/zk38"
	for _, tc := range []struct {
		name     string
		args     []string
		imported bool   // the data dir holds zk38, imported
		followed string // the zkd.followed file, "" for none
		wantCode int
		want     string
	}{
		{"without -zk", []string{"-sid", "4"}, false, "", 2, "usage: zkd follow"},
		{"without an id", []string{"-zk", "127.0.0.1:1"}, false, "", 2, "-sid"},
		{"into an imported member", []string{"-zk", "127.0.0.1:1", "-sid", "4"}, true, "", 1, "not from an earlier zkd follow"},
		{"into a member written since", []string{"-zk", "127.0.0.1:1", "-sid", "4"}, true, "0xd5\n", 1, "written by zkd since zkd follow left it at zxid 0xd5 (now 0xd6)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "zoo.cfg")
			if err := os.WriteFile(cfg, []byte("dataDir="+filepath.Join(dir, "data")+"\nclientPort=2181\nzookeeper.extendedTypesEnabled=true\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.imported {
				var out, errb bytes.Buffer
				if code := migrateMain("import", []string{"-from", zk38, cfg}, &out, &errb); code != 0 {
					t.Fatalf("import: %s", errb.String())
				}
			}
			if tc.followed != "" {
				if err := os.WriteFile(filepath.Join(dir, "data", "zkd"+followedSuffix), []byte(tc.followed), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var out, errb bytes.Buffer
			code := followMain(append(tc.args, cfg), &out, &errb)
			if code != tc.wantCode || !strings.Contains(out.String()+errb.String(), tc.want) {
				t.Fatalf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", code, tc.wantCode, tc.want, out.String(), errb.String())
			}
		})
	}
}

// TestFollowResume reads back what a cutover wrote: the state resumes at
// its zxid with every node and session, and the cutover can write over it.
func TestFollowResume(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte("dataDir="+filepath.Join(dir, "data")+"\nclientPort=2181\nzookeeper.extendedTypesEnabled=true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := migrateMain("import", []string{"-from", "../../zab/zkformat/testdata/zk38", cfg}, &out, &errb); code != 0 {
		t.Fatalf("import: %s", errb.String())
	}
	c, err := parseZooCfg(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := seedConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nc.Dir+followedSuffix, []byte("0xd6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tree, err := resumeState(nc)
	if err != nil {
		t.Fatal(err)
	}
	if tree.LastZxid != 0xd6 || tree.Len() != 126 || len(tree.Sessions) != 3 {
		t.Fatalf("resumed at 0x%x with %d nodes, %d sessions; want 0xd6, 126, 3", tree.LastZxid, tree.Len(), len(tree.Sessions))
	}
	if err := cutover(nc, tree, &out); err != nil {
		t.Fatal(err)
	}
	again, err := resumeState(nc)
	if err != nil || again.LastZxid != 0xd6 || again.Len() != 126 || again.Digest() != tree.Digest() {
		t.Fatalf("after a second cutover: %v, %+v", err, again)
	}
}
