package zab

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap/zaptest"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/zab/fencing"
)

func seedOf(b byte) []byte { return bytes.Repeat([]byte{b}, fencing.SeedLen) }

// TestFSMFencingKey: the first well-formed key entry installs the key on
// every member alike, later ones and malformed ones are ignored, and the key
// survives a snapshot while a v2 snapshot restores without one.
func TestFSMFencingKey(t *testing.T) {
	es := append([]*entry{
		{kind: kindFencingKey, fenceSeed: []byte("short")},
		{kind: kindFencingKey, fenceSeed: seedOf(1)},
	}, script()...)
	es = append(es, &entry{kind: kindFencingKey, fenceSeed: seedOf(2)})
	want, _ := fencing.NewSigner(seedOf(1))
	var snaps [][]byte
	for i := 0; i < 2; i++ {
		f := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
		if f.fence.Load() != nil {
			t.Fatal("a new FSM has a fencing key")
		}
		applyAll(t, f, es, 3)
		s := f.fence.Load()
		if s == nil || !bytes.Equal(s.PublicKey(), want.PublicKey()) {
			t.Fatalf("member %d: fencing key %v, want the first well-formed entry's", i, s)
		}
		snaps = append(snaps, snapshotBytes(t, f))
	}
	if !bytes.Equal(snaps[0], snaps[1]) {
		t.Fatal("members snapshot differently")
	}
	// Key entries take no zxid: the tree's zxids are those of the same
	// writes without them, as ZooKeeper would give.
	plain := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	applyAll(t, plain, script(), 3)
	keyed := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	applyAll(t, keyed, es, 3)
	if plain.tree.Load().LastZxid() != keyed.tree.Load().LastZxid() || plain.tree.Load().Digest() != keyed.tree.Load().Digest() {
		t.Fatalf("key entries moved zxids: 0x%x vs 0x%x", keyed.tree.Load().LastZxid(), plain.tree.Load().LastZxid())
	}
	b := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	if err := b.Restore(nopCloser{bytes.NewReader(snaps[0])}); err != nil {
		t.Fatal(err)
	}
	if s := b.fence.Load(); s == nil || !bytes.Equal(s.PublicKey(), want.PublicKey()) {
		t.Fatal("fencing key lost in snapshot restore")
	}
	if !bytes.Equal(snapshotBytes(t, b), snaps[0]) {
		t.Fatal("restored FSM snapshots differently")
	}
	// A later key entry after the restore is still ignored.
	b.Apply(&raft.Log{Index: 100, Term: 3, Type: raft.LogCommand, Data: (&entry{kind: kindFencingKey, fenceSeed: seedOf(3)}).encode()})
	if !bytes.Equal(b.fence.Load().PublicKey(), want.PublicKey()) {
		t.Fatal("a later key entry replaced the key")
	}
	// Restoring a snapshot without a key clears the key.
	c := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	applyAll(t, c, script(), 3)
	if err := b.Restore(nopCloser{bytes.NewReader(snapshotBytes(t, c))}); err != nil {
		t.Fatal(err)
	}
	if b.fence.Load() != nil {
		t.Fatal("key kept after restoring a snapshot without one")
	}
}

// TestSnapshotRejectsBadFencingSeed: a v3 snapshot whose key length is
// wrong is refused rather than restored without a key.
func TestSnapshotRejectsBadFencingSeed(t *testing.T) {
	f := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	applyAll(t, f, append(script(), &entry{kind: kindFencingKey, fenceSeed: seedOf(1)}), 2)
	data := snapshotBytes(t, f)
	data[19] = 31 // the seed's length: 32 → 31
	if err := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t)).Restore(nopCloser{bytes.NewReader(data)}); err == nil {
		t.Fatal("snapshot with a 31-byte fencing key restored")
	}
}

// TestNodeFencingKeyPersists: a new single-member ensemble draws a key as
// soon as it leads, and keeps that key across a restart (log replay) and a
// restart from a snapshot.
func TestNodeFencingKeyPersists(t *testing.T) {
	dir := t.TempDir()
	n := openNode(t, dir)
	pub := waitFencingKey(t, n)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	for _, snap := range []bool{false, true} {
		n = openNode(t, dir)
		if snap {
			if err := n.Snapshot(); err != nil {
				t.Fatal(err)
			}
		}
		if got := waitFencingKey(t, n); !bytes.Equal(got, pub) {
			t.Fatalf("restart (snapshot %v): key %x, want %x", snap, got, pub)
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func waitFencingKey(t *testing.T, n *Node) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		if s := n.FencingSigner(); s != nil {
			return s.PublicKey()
		}
		select {
		case <-ctx.Done():
			t.Fatal("no fencing key installed")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
