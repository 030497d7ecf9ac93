package zkformat

import (
	"bytes"
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

// FuzzReadSyncSnapshot: any stream gives a tree or an error, never a
// panic; seeded with the real snapshots' bodies (no file header) ended by
// the learner signature.
func FuzzReadSyncSnapshot(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(zk38, "snapshot.*"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		// The body after magic, version and dbid, cut before the first
		// seal: find the "/" terminator (length 1, then '/').
		body := b[16:]
		if i := bytes.Index(body, []byte{0, 0, 0, 1, '/'}); i >= 0 {
			f.Add(append(append([]byte{}, body[:i+5]...), 0, 0, 0, 10, 'B', 'e', 'n', 'W', 'a', 's', 'H', 'e', 'r', 'e'))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := ReadSyncSnapshot(NewStreamReader(bytes.NewReader(b)), 7)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "zkformat: leader snapshot: offset ") {
				t.Fatalf("error does not say where: %v", err)
			}
			return
		}
		if tr.LastZxid != 7 || tr.Node("/") == nil {
			t.Fatalf("a tree without its root or zxid: %d nodes, zxid %d", tr.Len(), tr.LastZxid)
		}
	})
}

// TestReadSyncSnapshotSeeds checks that the fuzz seeds built from real
// snapshots read, with the same nodes as the files.
func TestReadSyncSnapshotSeeds(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(zk38, "snapshot.cb"))
	if err != nil {
		t.Fatal(err)
	}
	file, err := ReadSnapshot("snapshot.cb", b, 0xcb)
	if err != nil {
		t.Fatal(err)
	}
	body := b[16:]
	i := bytes.Index(body, []byte{0, 0, 0, 1, '/'})
	stream := append(append([]byte{}, body[:i+5]...), 0, 0, 0, 10, 'B', 'e', 'n', 'W', 'a', 's', 'H', 'e', 'r', 'e')
	tr, err := ReadSyncSnapshot(NewStreamReader(bytes.NewReader(stream)), 0xcb)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != file.Tree.Len() || tr.Digest() != file.Tree.Digest() || len(tr.Sessions) != len(file.Tree.Sessions) {
		t.Fatalf("stream: %d nodes, digest %x, %d sessions; file: %d, %x, %d", tr.Len(), tr.Digest(), len(tr.Sessions), file.Tree.Len(), file.Tree.Digest(), len(file.Tree.Sessions))
	}
	if _, err := ReadSyncSnapshot(NewStreamReader(bytes.NewReader(stream[:len(stream)-3])), 0xcb); err == nil {
		t.Fatal("a stream cut in its signature read")
	}
}
