package datatree

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand"
	"strings"
	"testing"

	"github.com/zkd/zkd/jute"
)

// referenceDigest is ZooKeeper's DigestCalculator summed over the tree,
// written plainly from each node's image: CRC-32 of the path ("" for
// "/"), the data and the 60-byte stat; 0 under /zookeeper/.
func referenceDigest(t testing.TB, tree *Tree) uint64 {
	t.Helper()
	var sum uint64
	err := tree.Images(func(im *NodeImage) error {
		if strings.HasPrefix(im.Path, "/zookeeper/") {
			return nil
		}
		var b bytes.Buffer
		if im.Path != "/" {
			b.WriteString(im.Path)
		}
		b.Write(im.Data)
		for _, v := range []any{im.Czxid, im.Mzxid, im.Pzxid, im.Ctime, im.Mtime, im.Version, im.Cversion, im.Aversion, im.EphemeralOwner} {
			_ = binary.Write(&b, binary.BigEndian, v)
		}
		sum += uint64(crc32.ChecksumIEEE(b.Bytes()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// checkDigest fails unless the running digest equals the one computed
// from scratch and the plain reference.
func checkDigest(t testing.TB, tree *Tree, after string) {
	t.Helper()
	got, scratch, ref := tree.TreeDigest(), tree.ComputeTreeDigest(), referenceDigest(t, tree)
	if got != ref || scratch != ref {
		t.Fatalf("after %s: running digest %016x, from scratch %016x, reference %016x", after, got, scratch, ref)
	}
}

func TestTreeDigestFresh(t *testing.T) {
	tree := New(DefaultConfig())
	checkDigest(t, tree, "New")
	if tree.TreeDigest() == 0 {
		t.Fatal("a fresh tree's digest is 0: the root and /zookeeper count")
	}
}

// TestTreeDigestRandomOps applies random writes of every kind (creates of
// every mode, sequential and ephemeral included, deletes, setData,
// setACL, multis that commit and multis that roll back, sessions closed
// with and without lock tombstones, containers and TTL nodes expiring,
// quota nodes, /zookeeper/config) and checks after each one that the
// running digest is the one computed from scratch, and at the end that a
// snapshot load gives it too.
func TestTreeDigestRandomOps(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			h := newHarness(t, Config{ExtendedTypes: true, ContainerMaxNeverUsedMs: 1})
			tree := h.tree
			var paths []string // nodes that may exist
			pick := func() string {
				if len(paths) == 0 || rng.Intn(8) == 0 {
					return "/"
				}
				return paths[rng.Intn(len(paths))]
			}
			child := func() string {
				p := pick()
				if p == "/" {
					p = ""
				}
				return fmt.Sprintf("%s/n%d", p, rng.Intn(6))
			}
			data := func() []byte {
				n := rng.Intn(40)
				switch rng.Intn(5) {
				case 0:
					return nil
				case 1:
					return []byte{}
				case 2:
					n = digestConcatMax - 8 + rng.Intn(16) // hashed in place, or around the limit
				}
				b := make([]byte, n)
				rng.Read(b)
				return b
			}
			modes := []int32{jute.ModePersistent, jute.ModeEphemeral, jute.ModePersistentSequential,
				jute.ModeEphemeralSequential, jute.ModeContainer, jute.ModePersistentWithTTL}
			for step := 0; step < 400; step++ {
				session := int64(1 + rng.Intn(3))
				var what string
				switch op := rng.Intn(12); op {
				case 0, 1, 2:
					mode := modes[rng.Intn(len(modes))]
					c := CreateOp{Path: child(), Data: data(), ACL: OpenACLUnsafe, Mode: mode, TTL: 1 + int64(rng.Intn(3))}
					p, _, err := tree.Create(h.tx(session), c)
					if err == nil {
						paths = append(paths, p)
					}
					what = fmt.Sprintf("create %s mode %d: %v", c.Path, mode, err)
				case 3:
					p := pick()
					what = fmt.Sprintf("delete %s: %v", p, tree.Delete(h.tx(session), p, -1))
				case 4, 5:
					p := pick()
					_, err := tree.SetData(h.tx(session), p, data(), -1)
					what = fmt.Sprintf("setData %s: %v", p, err)
				case 6:
					p := pick()
					_, err := tree.SetACL(h.tx(session), p, aclFor(jute.PermAll, "world", "anyone"), -1)
					what = fmt.Sprintf("setACL %s: %v", p, err)
				case 7, 8:
					var ops []Op
					for i := rng.Intn(4) + 1; i > 0; i-- {
						switch rng.Intn(4) {
						case 0:
							ops = append(ops, Op{Type: jute.OpCreate, Create: CreateOp{Path: child(), Data: data(), ACL: OpenACLUnsafe, Mode: modes[rng.Intn(4)]}})
						case 1:
							ops = append(ops, Op{Type: jute.OpDelete, Path: pick(), Version: -1})
						case 2:
							ops = append(ops, Op{Type: jute.OpSetData, Path: pick(), Data: data(), Version: -1})
						case 3:
							ops = append(ops, Op{Type: jute.OpCheck, Path: pick(), Version: -1})
						}
					}
					res, failed := tree.Multi(h.tx(session), ops)
					for _, r := range res {
						if r.Path != "" {
							paths = append(paths, r.Path)
						}
					}
					what = fmt.Sprintf("multi of %d ops (failed %v)", len(ops), failed)
				case 9:
					tx := h.tx(0)
					if rng.Intn(2) == 0 {
						tree.CloseSession(tx, session)
					} else {
						tree.CloseSessionDelayed(tx, session, func(name string) bool { return strings.HasSuffix(name, "1") }, tx.Time)
						for _, p := range tree.DueTombstones(tx.Time + 1) {
							_ = tree.DeleteTombstone(h.tx(0), p)
						}
					}
					what = fmt.Sprintf("close session %d", session)
				case 10:
					tx := h.tx(0)
					for _, p := range tree.ExpiryCandidates(tx.Time+10, 0) {
						_ = tree.DeleteExpired(tx, p)
					}
					what = "expiry sweep"
				case 11:
					if rng.Intn(2) == 0 {
						_, err := tree.SetConfigData(h.tx(0), data(), false)
						what = fmt.Sprintf("set config: %v", err)
					} else {
						p := "/zookeeper/quota" + child()
						_, _, err := tree.Create(h.tx(0), CreateOp{Path: p, Data: data(), ACL: OpenACLUnsafe})
						what = fmt.Sprintf("create %s: %v", p, err)
					}
				}
				checkDigest(t, tree, what)
			}
			h.check()
			var buf bytes.Buffer
			if err := tree.WriteSnapshot(&buf); err != nil {
				t.Fatal(err)
			}
			loaded, err := ReadSnapshot(&buf, tree.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if loaded.TreeDigest() != tree.TreeDigest() {
				t.Fatalf("digest after a snapshot load %016x, before %016x", loaded.TreeDigest(), tree.TreeDigest())
			}
		})
	}
}

// TestTreeDigestSnapshot checks that a snapshot load and FromImages give
// the digest the tree had, and that it is sensitive to a byte of data,
// a stat field and aversion, but not to an ACL or to /zookeeper/'s nodes.
func TestTreeDigestSnapshot(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	for i := 0; i < 7; i++ {
		h.create(fmt.Sprintf("/a%d", i), jute.ModePersistent)
	}
	for i := 0; i < 50; i++ {
		h.create(fmt.Sprintf("/a%d/s-", i%7), jute.ModePersistentSequential)
	}
	h.create("/a0/x", jute.ModeEphemeral)
	if _, err := h.tree.SetACL(h.tx(1), "/a1", aclFor(jute.PermRead, "world", "anyone"), -1); err != nil {
		t.Fatal(err)
	}
	want := h.tree.TreeDigest()
	checkDigest(t, h.tree, "setup")

	var buf bytes.Buffer
	if err := h.tree.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	loaded, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.TreeDigest(); got != want {
		t.Fatalf("digest after a snapshot load %016x, before %016x", got, want)
	}
	checkDigest(t, loaded, "snapshot load")
	var ims []NodeImage
	_ = h.tree.Images(func(im *NodeImage) error { ims = append(ims, *im); return nil })
	fromIms, err := FromImages(DefaultConfig(), h.tree.LastZxid(), ims)
	if err != nil {
		t.Fatal(err)
	}
	if got := fromIms.TreeDigest(); got != want {
		t.Fatalf("digest of FromImages %016x, want %016x", got, want)
	}

	// The load goes on from there: writes keep it right.
	if _, err := loaded.SetData(h.tx(1), "/a0/x", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	checkDigest(t, loaded, "setData after load")

	for _, tc := range []struct {
		name    string
		edit    func(im []NodeImage)
		changes bool
	}{
		{"data byte", func(im []NodeImage) { im[3].Data = append([]byte{}, im[3].Data...); im[3].Data[0] ^= 1 }, true},
		{"mtime", func(im []NodeImage) { im[3].Mtime++ }, true},
		{"aversion", func(im []NodeImage) { im[3].Aversion++ }, true},
		{"acl", func(im []NodeImage) { im[3].ACL = aclFor(jute.PermRead, "world", "anyone") }, false},
		{"quota node", func(im []NodeImage) {
			for i := range im {
				if im[i].Path == "/zookeeper/quota" {
					im[i].Mzxid++
				}
			}
		}, false},
	} {
		alt := append([]NodeImage(nil), ims...)
		tc.edit(alt)
		tr, err := FromImages(DefaultConfig(), 0, alt)
		if err != nil {
			t.Fatal(err)
		}
		if changed := tr.TreeDigest() != want; changed != tc.changes {
			t.Errorf("%s: digest changed %v, want %v", tc.name, changed, tc.changes)
		}
	}
}
