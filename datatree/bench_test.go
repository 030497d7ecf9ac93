package datatree

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/zkd/zkd/jute"
)

func BenchmarkCreateDelete(b *testing.B) {
	b.Run("mode=ephemeral-sequential", func(b *testing.B) {
		h := newHarness(b, DefaultConfig())
		h.create("/locks", jute.ModePersistent)
		tx := &Txn{SessionID: 7}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			tx.Zxid++
			p, _, err := h.tree.Create(tx, CreateOp{Path: "/locks/lock-", Data: []byte("x"), ACL: OpenACLUnsafe, Mode: jute.ModeEphemeralSequential})
			if err != nil {
				b.Fatal(err)
			}
			tx.Zxid++
			if err := h.tree.Delete(tx, p, -1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGetData(b *testing.B) {
	b.Run("size=1KiB", func(b *testing.B) {
		h := newHarness(b, DefaultConfig())
		h.tree.Create(h.tx(1), CreateOp{Path: "/a", Data: make([]byte, 1024), ACL: OpenACLUnsafe})
		auth := []jute.Id{digestID("u", "p")}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, _, err := h.tree.GetData("/a", auth, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSetData(b *testing.B) {
	b.Run("size=1KiB", func(b *testing.B) {
		h := newHarness(b, DefaultConfig())
		data := make([]byte, 1024)
		h.tree.Create(h.tx(1), CreateOp{Path: "/a", Data: data, ACL: OpenACLUnsafe})
		tx := &Txn{Zxid: h.zxid}
		b.ReportAllocs()
		b.SetBytes(1024)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			tx.Zxid++
			if _, err := h.tree.SetData(tx, "/a", data, -1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGetChildren(b *testing.B) {
	b.Run("children=1000", func(b *testing.B) {
		h := newHarness(b, DefaultConfig())
		h.create("/p", jute.ModePersistent)
		for i := 0; i < 1000; i++ {
			h.create("/p/c-", jute.ModePersistentSequential)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.tree.GetChildren("/p", nil, nil)
		}
	})
}

// bigTree builds n nodes: 100 parents of n/100 children with 32-byte data.
func bigTree(b *testing.B, n int) *Tree {
	tr := New(DefaultConfig())
	tx := &Txn{SessionID: 1}
	data := make([]byte, 32)
	for p := 0; p < 100; p++ {
		tx.Zxid++
		parent := fmt.Sprintf("/p%03d", p)
		tr.Create(tx, CreateOp{Path: parent, ACL: OpenACLUnsafe})
		for c := 0; c < n/100; c++ {
			tx.Zxid++
			if _, _, err := tr.Create(tx, CreateOp{Path: parent + "/n-", Data: data, ACL: OpenACLUnsafe, Mode: jute.ModeEphemeralSequential}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return tr
}

func BenchmarkSnapshot(b *testing.B) {
	tr := bigTree(b, 100_000)
	var buf bytes.Buffer
	if err := tr.WriteSnapshot(&buf); err != nil {
		b.Fatal(err)
	}
	snap := buf.Bytes()
	b.Run("nodes=100k/op=write", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(snap)))
		for i := 0; i < b.N; i++ {
			var w bytesBuffer
			w.b = make([]byte, 0, len(snap))
			if err := tr.WriteSnapshot(&w); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("nodes=100k/op=read", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(snap)))
		for i := 0; i < b.N; i++ {
			if _, err := ReadSnapshot(bytes.NewReader(snap), DefaultConfig()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
