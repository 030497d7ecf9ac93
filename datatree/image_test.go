package datatree

import (
	"strings"
	"testing"

	"github.com/zkd/zkd/jute"
)

func TestImagesRoundTrip(t *testing.T) {
	tr := New(Config{ExtendedTypes: true})
	tx := &Txn{Zxid: 1, Time: 100, SessionID: 0x77}
	for _, op := range []CreateOp{
		{Path: "/a", Data: []byte("x"), ACL: OpenACLUnsafe},
		{Path: "/a/e", ACL: OpenACLUnsafe, Mode: jute.ModeEphemeral},
		{Path: "/a/s-", ACL: ReadACLUnsafe, Mode: jute.ModePersistentSequential},
		{Path: "/c", ACL: OpenACLUnsafe, Mode: jute.ModeContainer},
		{Path: "/t", ACL: OpenACLUnsafe, Mode: jute.ModePersistentWithTTL, TTL: 5000},
	} {
		tx.Zxid++
		if _, _, err := tr.Create(tx, op); err != nil {
			t.Fatalf("create %s: %v", op.Path, err)
		}
	}
	var ims []NodeImage
	if err := tr.Images(func(im *NodeImage) error { ims = append(ims, *im); return nil }); err != nil {
		t.Fatal(err)
	}
	back, err := FromImages(Config{ExtendedTypes: true}, tr.LastZxid(), ims)
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest() != tr.Digest() || back.NodeCount() != tr.NodeCount() || back.EphemeralCount() != 1 {
		t.Fatalf("rebuilt tree differs: digest %x/%x, %d/%d nodes", back.Digest(), tr.Digest(), back.NodeCount(), tr.NodeCount())
	}
	if err := back.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestFromImagesRefuses(t *testing.T) {
	root := NodeImage{Path: "/", ACL: OpenACLUnsafe}
	n := func(p string) NodeImage { return NodeImage{Path: p, ACL: OpenACLUnsafe} }
	for name, tc := range map[string]struct {
		ims  []NodeImage
		want string
	}{
		"empty":          {nil, "root"},
		"root not first": {[]NodeImage{n("/a"), root}, "root"},
		"orphan":         {[]NodeImage{root, n("/a/b")}, "before its parent /a"},
		"repeated":       {[]NodeImage{root, n("/a"), n("/a")}, "twice"},
		"bad path":       {[]NodeImage{root, n("/a/")}, "invalid path"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := FromImages(DefaultConfig(), 0, tc.ims)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
