package datatree

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/zkd/zkd/jute"
)

// script applies a fixed mix of writes; it is the input of the determinism
// and round-trip tests.
func script(h *harness) {
	tr := h.tree
	alice := digestID("alice", "pw")
	h.create("/app", jute.ModePersistent)
	for i := 0; i < 30; i++ {
		sess := int64(i%3 + 1)
		tr.Create(h.tx(sess), CreateOp{Path: "/app/lock-", Data: []byte{byte(i)}, ACL: OpenACLUnsafe, Mode: jute.ModeEphemeralSequential})
	}
	tr.Create(h.tx(1, alice), CreateOp{Path: "/app/priv", Data: nil, ACL: CreatorAllACL})
	tr.Create(h.tx(1), CreateOp{Path: "/app/ip", Data: []byte{}, ACL: aclFor(jute.PermRead, "ip", "10.0.0.0/8")})
	tr.Create(h.tx(1), CreateOp{Path: "/cont", ACL: OpenACLUnsafe, Mode: jute.ModeContainer})
	tr.Create(h.tx(1), CreateOp{Path: "/cont/x", ACL: OpenACLUnsafe})
	tr.Create(h.tx(1), CreateOp{Path: "/ttl", ACL: OpenACLUnsafe, Mode: jute.ModePersistentWithTTL, TTL: 1234})
	tr.SetData(h.tx(1), "/app", bytes.Repeat([]byte("z"), 3000), -1)
	tr.SetACL(h.tx(1), "/app/lock-0000000004", ReadACLUnsafe, -1)
	tr.Delete(h.tx(1), "/app/lock-0000000007", -1)
	tr.Multi(h.tx(2), []Op{
		{Type: jute.OpCreate, Create: CreateOp{Path: "/m", ACL: OpenACLUnsafe}},
		{Type: jute.OpCreate, Create: CreateOp{Path: "/m/a", ACL: OpenACLUnsafe}},
	})
	tr.Multi(h.tx(2), []Op{
		{Type: jute.OpCreate, Create: CreateOp{Path: "/m2", ACL: OpenACLUnsafe}},
		{Type: jute.OpCreate, Create: CreateOp{Path: "/m/a", ACL: OpenACLUnsafe}},
	})
	tr.CloseSession(h.tx(2), 2)
	tr.Delete(h.tx(1), "/cont/x", -1)
	for _, p := range []string{"/zookeeper/quota/app", "/zookeeper/quota/app/zookeeper_limits", "/zookeeper/quota/app/zookeeper_stats", "/app/q"} {
		tr.Create(h.tx(1), CreateOp{Path: p, Data: []byte("count=1,bytes=2"), ACL: OpenACLUnsafe})
	}
}

func snapshotBytes(t testing.TB, tr *Tree) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tr.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSnapshotRoundTrip(t *testing.T) {
	cfg := Config{ExtendedTypes: true}
	h := newHarness(t, cfg)
	script(h)
	h.check()
	snap := snapshotBytes(t, h.tree)
	got, err := ReadSnapshot(bytes.NewReader(snap), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if got.Digest() != h.tree.Digest() {
		t.Fatal("digest differs after round trip")
	}
	if again := snapshotBytes(t, got); !bytes.Equal(again, snap) {
		t.Fatal("re-encoded snapshot differs")
	}
	if got.LastZxid() != h.tree.LastZxid() || got.NodeCount() != h.tree.NodeCount() ||
		got.ApproxDataSize() != h.tree.ApproxDataSize() || got.EphemeralCount() != h.tree.EphemeralCount() {
		t.Fatal("counters differ after round trip")
	}
	for _, s := range []int64{1, 2, 3} {
		if fmt.Sprint(got.GetEphemerals(s, "")) != fmt.Sprint(h.tree.GetEphemerals(s, "")) {
			t.Fatalf("ephemerals of %d differ", s)
		}
	}
	if fmt.Sprint(got.ExpiryCandidates(1<<40, 0)) != fmt.Sprint(h.tree.ExpiryCandidates(1<<40, 0)) {
		t.Fatal("expiry candidates differ")
	}
	for _, p := range []string{"/", "/app", "/app/priv", "/app/ip", "/ttl", "/zookeeper/config"} {
		d1, s1, e1 := h.tree.GetData(p, []jute.Id{SuperID}, nil)
		d2, s2, e2 := got.GetData(p, []jute.Id{SuperID}, nil)
		a1, _, _ := h.tree.GetACL(p, []jute.Id{SuperID})
		a2, _, _ := got.GetACL(p, []jute.Id{SuperID})
		if e1 != nil || e2 != nil || !bytes.Equal(d1, d2) || (d1 == nil) != (d2 == nil) || s1 != s2 || fmt.Sprint(a1) != fmt.Sprint(a2) {
			t.Fatalf("%s differs: %v %v %+v %+v", p, e1, e2, s1, s2)
		}
	}
	// The restored tree keeps working.
	nh := &harness{t: t, tree: got, zxid: h.zxid}
	nh.create("/after", jute.ModePersistentSequential)
	nh.check()
}

func TestSnapshotDeterminism(t *testing.T) {
	cfg := Config{ExtendedTypes: true}
	h1, h2 := newHarness(t, cfg), newHarness(t, cfg)
	script(h1)
	script(h2)
	if !bytes.Equal(snapshotBytes(t, h1.tree), snapshotBytes(t, h2.tree)) {
		t.Fatal("same txns gave different snapshots")
	}
	if h1.tree.Digest() != h2.tree.Digest() {
		t.Fatal("same txns gave different digests")
	}
	// Same content reached by a different history encodes the same.
	a, b := newHarness(t, cfg), newHarness(t, cfg)
	a.create("/x", jute.ModePersistent)
	a.tree.SetACL(a.tx(1), "/x", ReadACLUnsafe, -1)
	if _, err := a.tree.SetACL(a.tx(1, SuperID), "/x", OpenACLUnsafe, -1); err != nil {
		t.Fatal(err)
	}
	b.create("/x", jute.ModePersistent)
	b.tree.SetACL(b.tx(1), "/x", OpenACLUnsafe, -1)
	b.tree.SetACL(b.tx(1), "/x", OpenACLUnsafe, -1)
	a.tree.mu.Lock()
	a.tree.lookup("/x").stat = b.tree.lookup("/x").stat
	a.tree.mu.Unlock()
	if a.tree.Digest() != b.tree.Digest() {
		t.Fatal("equal trees have different digests")
	}
}

func TestDigestSensitivity(t *testing.T) {
	base := newHarness(t, DefaultConfig())
	base.create("/a", jute.ModePersistent)
	d0 := base.tree.Digest()
	for _, tc := range []struct {
		name string
		do   func(h *harness)
	}{
		{"data", func(h *harness) { h.tree.SetData(h.tx(1), "/a", []byte("e"), -1) }},
		{"acl", func(h *harness) { h.tree.SetACL(h.tx(1), "/a", ReadACLUnsafe, -1) }},
		{"node", func(h *harness) { h.create("/b", jute.ModePersistent) }},
		{"nil vs empty data", func(h *harness) {
			h.tree.mu.Lock()
			h.tree.lookup("/a").setData(nil)
			h.tree.mu.Unlock()
		}},
		{"stat", func(h *harness) {
			h.tree.mu.Lock()
			h.tree.lookup("/a").stat.ctime++
			h.tree.mu.Unlock()
		}},
	} {
		h := newHarness(t, DefaultConfig())
		h.create("/a", jute.ModePersistent)
		if h.tree.Digest() != d0 {
			t.Fatal("digest is not a function of content")
		}
		tc.do(h)
		if h.tree.Digest() == d0 {
			t.Errorf("%s change not reflected in digest", tc.name)
		}
	}
	// LastZxid is not content.
	base.tree.NoteZxid(99)
	if base.tree.Digest() != d0 {
		t.Error("digest depends on LastZxid")
	}
}

func TestSnapshotCorruption(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	script(h)
	snap := snapshotBytes(t, h.tree)
	for _, n := range []int{0, 3, 16, 40, len(snap) / 2, len(snap) - 1} {
		if _, err := ReadSnapshot(bytes.NewReader(snap[:n]), DefaultConfig()); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("truncated at %d: %v", n, err)
		}
	}
	for _, off := range []int{0, 5, 12, 30, len(snap) / 3, len(snap) - 2} {
		bad := bytes.Clone(snap)
		bad[off] ^= 0x40
		if _, err := ReadSnapshot(bytes.NewReader(bad), DefaultConfig()); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("flipped byte %d: %v", off, err)
		}
	}
}

func FuzzReadSnapshot(f *testing.F) {
	h := newHarness(f, DefaultConfig())
	h.create("/a", jute.ModePersistent)
	h.create("/a/b", jute.ModeEphemeral)
	f.Add(snapshotBytes(f, h.tree))
	f.Add(snapshotBytes(f, New(DefaultConfig())))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := ReadSnapshot(bytes.NewReader(b), DefaultConfig())
		if err != nil {
			return
		}
		if err := tr.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		if again := snapshotBytes(t, tr); !bytes.Equal(again, b) {
			t.Fatal("accepted snapshot does not re-encode identically")
		}
	})
}
