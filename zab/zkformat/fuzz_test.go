package zkformat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd/zkd/datatree"
)

func seedFiles(f *testing.F, prefix string) {
	paths, _ := filepath.Glob(filepath.Join(zk38, prefix+".*"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzReadSnapshot: any bytes give a snapshot or a FormatError, never a
// panic; a snapshot that reads holds a tree datatree accepts.
func FuzzReadSnapshot(f *testing.F) {
	seedFiles(f, "snapshot")
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ReadSnapshot("fuzz", b, 1)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: offset ") {
				t.Fatalf("error does not name the file and offset: %v", err)
			}
			return
		}
		if _, err := datatree.FromImages(datatree.Config{ExtendedTypes: true}, 1, s.Tree.Images()); err != nil && !strings.Contains(err.Error(), "invalid path") {
			t.Fatalf("a snapshot that read gives no tree: %v", err)
		}
	})
}

// FuzzReadLog: any bytes give transactions or a FormatError, never a
// panic, and applying what was read never panics either.
func FuzzReadLog(f *testing.F) {
	seedFiles(f, "log")
	f.Fuzz(func(t *testing.T, b []byte) {
		lf, err := ReadLog("fuzz", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: offset ") {
				t.Fatalf("error does not name the file and offset: %v", err)
			}
			return
		}
		if lf.Partial > int64(len(b)) {
			t.Fatalf("partial record at %d beyond the file's %d bytes", lf.Partial, len(b))
		}
		tr := newTree()
		tr.put(&datatree.NodeImage{Path: "/", ACL: datatree.OpenACLUnsafe})
		for i := range lf.Txns {
			tr.Apply(&lf.Txns[i])
		}
	})
}
