package zab

import (
	"errors"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

// seedState is a tree as an import would bring it: a ZooKeeper epoch-5
// zxid, one session owning an ephemeral lock node.
func seedState(t *testing.T) State {
	t.Helper()
	const sess, zxid = 0x1000000abc, 5<<32 | 0x2a
	open := datatree.OpenACLUnsafe
	tree, err := datatree.FromImages(datatree.DefaultConfig(), zxid, []datatree.NodeImage{
		{Path: "/", ACL: open, Cversion: 1, Pzxid: 0x10},
		{Path: "/locks", ACL: open, Czxid: 0x10, Mzxid: 0x10, Pzxid: zxid, Cversion: 7},
		{Path: "/locks/lock-0000000006", ACL: open, Czxid: zxid, Mzxid: zxid, Pzxid: zxid, EphemeralOwner: sess},
	})
	if err != nil {
		t.Fatal(err)
	}
	return State{Tree: tree, Sessions: []int64{sess}, Timeouts: []int32{30000}}
}

func TestSeedThenOpen(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Dir, cfg.Logger = dir, zaptest.NewLogger(t)
	st := seedState(t)
	if err := Seed(cfg, st); err != nil {
		t.Fatal(err)
	}
	if err := Seed(cfg, st); !errors.Is(err, ErrHasState) {
		t.Fatalf("second seed: %v, want ErrHasState", err)
	}
	n := openNode(t, dir)
	if n.LastZxid() != st.Tree.LastZxid() || n.Tree().Digest() != st.Tree.Digest() {
		t.Fatalf("opened at zxid 0x%x digest %x, seeded 0x%x %x", n.LastZxid(), n.Tree().Digest(), st.Tree.LastZxid(), st.Tree.Digest())
	}
	if to, ok := n.SessionTimeout(st.Sessions[0]); !ok || to != 30000 {
		t.Fatalf("seeded session: %d %v", to, ok)
	}
	// The seeded session writes; the zxid is in a later epoch and the
	// sequence number continues from the seeded cversion.
	body := jute.Encode(&jute.CreateRequest{Path: "/locks/lock-", Acl: datatree.OpenACLUnsafe, Flags: jute.ModeEphemeralSequential})
	r := n.Submit(&Request{Op: jute.OpCreate, SessionID: st.Sessions[0], Body: body}).Wait()
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.Zxid>>32 <= 5 {
		t.Errorf("first zxid after the seed 0x%x, want an epoch above 5", r.Zxid)
	}
	if got := r.Resp.(*jute.CreateResponse).Path; got != "/locks/lock-0000000007" {
		t.Errorf("created %s, want /locks/lock-0000000007", got)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	// Load reads what the member holds now, the write included.
	got, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tree.LastZxid() != r.Zxid || got.Tree.EphemeralCount() != 2 || len(got.Sessions) != 1 || got.Timeouts[0] != 30000 {
		t.Fatalf("loaded zxid 0x%x, %d ephemerals, sessions %v %v", got.Tree.LastZxid(), got.Tree.EphemeralCount(), got.Sessions, got.Timeouts)
	}
}
