package datatree

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
)

func TestMultiCommit(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	h.create("/old", jute.ModePersistent)
	w := &recorder{}
	tr.GetChildren("/", nil, w)
	tr.Exists("/m/c", w)
	tr.GetData("/old", nil, w)
	tx := h.tx(5)
	res, failed := tr.Multi(tx, []Op{
		{Type: jute.OpCreate, Create: CreateOp{Path: "/m", ACL: OpenACLUnsafe}},
		{Type: jute.OpCreate2, Create: CreateOp{Path: "/m/c", Data: []byte("x"), ACL: OpenACLUnsafe, Mode: jute.ModeEphemeral}},
		{Type: jute.OpCreate, Create: CreateOp{Path: "/m/s-", ACL: OpenACLUnsafe, Mode: jute.ModePersistentSequential}},
		{Type: jute.OpCheck, Path: "/m/c", Version: 0},
		{Type: jute.OpSetData, Path: "/m/c", Data: []byte("yy"), Version: 0},
		{Type: jute.OpCheck, Path: "/m/c", Version: 1},
		{Type: jute.OpDelete, Path: "/old", Version: 0},
	})
	if failed {
		t.Fatalf("multi failed: %+v", res)
	}
	// A create2 op reports create: ZooKeeper rebuilds multi creates from
	// their mode.
	wantTypes := []int32{jute.OpCreate, jute.OpCreate, jute.OpCreate, jute.OpCheck, jute.OpSetData, jute.OpCheck, jute.OpDelete}
	for i, r := range res {
		if r.Type != wantTypes[i] || r.Err != nil {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if res[0].Path != "/m" || res[1].Path != "/m/c" || res[2].Path != "/m/s-0000000001" {
		t.Fatalf("paths %q %q %q", res[0].Path, res[1].Path, res[2].Path)
	}
	if res[1].Stat.Czxid != tx.Zxid || res[1].Stat.EphemeralOwner != 5 || res[1].Stat.Version != 0 {
		t.Fatalf("create2 stat %+v", res[1].Stat)
	}
	if res[4].Stat.Version != 1 || res[4].Stat.DataLength != 2 {
		t.Fatalf("setData stat %+v", res[4].Stat)
	}
	if got := w.take(); !slices.Equal(got, []string{"children:/", "created:/m/c", "deleted:/old"}) {
		t.Fatalf("events %v", got)
	}
	if tr.LastZxid() != tx.Zxid {
		t.Fatal("zxid not noted")
	}
	h.check()
}

func TestMultiRollback(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ops     []Op
		failAt  int
		wantErr error
	}{
		{"create then bad version", []Op{
			{Type: jute.OpCreate, Create: CreateOp{Path: "/new", ACL: OpenACLUnsafe}},
			{Type: jute.OpSetData, Path: "/a", Data: []byte("z"), Version: 7},
			{Type: jute.OpDelete, Path: "/a", Version: -1},
		}, 1, ErrBadVersion},
		{"delete then check sees it gone", []Op{
			{Type: jute.OpDelete, Path: "/a/b", Version: -1},
			{Type: jute.OpCheck, Path: "/a/b", Version: -1},
		}, 1, ErrNoNode},
		{"sequential and ephemeral rolled back", []Op{
			{Type: jute.OpCreate, Create: CreateOp{Path: "/a/s-", ACL: OpenACLUnsafe, Mode: jute.ModeEphemeralSequential}},
			{Type: jute.OpCreate, Create: CreateOp{Path: "/a/s-", ACL: aclFor(jute.PermAll, "ip", "10.0.0.1"), Mode: jute.ModeEphemeralSequential}},
			{Type: jute.OpSetData, Path: "/a", Data: []byte("zz"), Version: 0},
			{Type: jute.OpCreate, Create: CreateOp{Path: "/a", ACL: OpenACLUnsafe}},
		}, 3, ErrNodeExists},
		{"delete with unique acl rolled back", []Op{
			{Type: jute.OpDelete, Path: "/u", Version: -1},
			{Type: jute.OpCreate, Create: CreateOp{Path: "/u2", ACL: aclFor(jute.PermAll, "ip", "1.2.3.4")}},
			{Type: jute.OpCheck, Path: "/missing", Version: -1},
		}, 2, ErrNoNode},
		{"not empty after earlier create", []Op{
			{Type: jute.OpCreate, Create: CreateOp{Path: "/a/c", ACL: OpenACLUnsafe}},
			{Type: jute.OpDelete, Path: "/a/b", Version: -1},
			{Type: jute.OpDelete, Path: "/a", Version: -1},
		}, 2, ErrNotEmpty},
		{"unsupported op type", []Op{
			{Type: jute.OpCheck, Path: "/a", Version: -1},
			{Type: jute.OpGetData, Path: "/a"},
		}, 1, ErrBadArguments},
		{"first op fails", []Op{
			{Type: jute.OpDelete, Path: "/zookeeper", Version: -1},
			{Type: jute.OpCheck, Path: "/a", Version: -1},
		}, 0, ErrBadArguments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, DefaultConfig())
			tr := h.tree
			h.create("/a", jute.ModePersistent)
			h.create("/a/b", jute.ModePersistent)
			if _, _, err := tr.Create(h.tx(1), CreateOp{Path: "/u", ACL: aclFor(jute.PermAll, "ip", "1.2.3.4")}); err != nil {
				t.Fatal(err)
			}
			var snap1 []byte
			{
				var b bytesBuffer
				if err := tr.WriteSnapshot(&b); err != nil {
					t.Fatal(err)
				}
				snap1 = b.b
			}
			before := tr.Digest()
			w := &recorder{}
			tr.AddWatch("/", w, jute.AddWatchModePersistentRecursive)
			tr.GetChildren("/a", nil, w)
			tx := h.tx(9)
			res, failed := tr.Multi(tx, tc.ops)
			if !failed {
				t.Fatal("multi did not fail")
			}
			for i, r := range res {
				if r.Type != jute.OpError {
					t.Fatalf("result %d type %d", i, r.Type)
				}
				switch {
				case i < tc.failAt:
					if r.Err != nil {
						t.Fatalf("result %d before failure: %v", i, r.Err)
					}
				case i == tc.failAt:
					wantErr(t, "failing op", r.Err, tc.wantErr)
				default:
					if !errors.Is(r.Err, ErrRuntimeInconsistency) || !errors.Is(r.Err, jute.CodeRuntimeInconsistency) {
						t.Fatalf("result %d after failure: %v", i, r.Err)
					}
				}
			}
			if got := w.take(); len(got) != 0 {
				t.Fatalf("failed multi fired %v", got)
			}
			if tr.Digest() != before {
				t.Fatal("failed multi changed the tree")
			}
			if tr.LastZxid() != tx.Zxid {
				t.Fatal("failed multi did not consume its zxid")
			}
			tr.NoteZxid(tx.Zxid - 1)
			var b bytesBuffer
			if err := tr.WriteSnapshot(&b); err != nil {
				t.Fatal(err)
			}
			if string(b.b) != string(snap1) {
				t.Fatal("snapshot differs after rollback")
			}
			h.check()
			// The rolled-back watch registrations are intact.
			h.create("/a/z", jute.ModePersistent)
			if got := w.take(); !slices.Equal(got, []string{"created:/a/z", "children:/a"}) {
				t.Fatalf("after rollback: %v", got)
			}
		})
	}
}

func TestMultiEmpty(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	res, failed := h.tree.Multi(h.tx(1), nil)
	if failed || len(res) != 0 {
		t.Fatalf("empty multi: %v %v", res, failed)
	}
}

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// Checked against ZooKeeper 3.8.0: deletes do not advance the persisted
// cversion, so a sequential create after create+delete in one multi is
// numbered by creates only.
func TestMultiSequentialAfterDelete(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.create("/s", jute.ModePersistent)
	res, failed := h.tree.Multi(h.tx(1), []Op{
		{Type: jute.OpCreate, Create: CreateOp{Path: "/s/a", ACL: OpenACLUnsafe}},
		{Type: jute.OpDelete, Path: "/s/a", Version: -1},
		{Type: jute.OpCreate, Create: CreateOp{Path: "/s/q-", ACL: OpenACLUnsafe, Mode: jute.ModePersistentSequential}},
	})
	if failed || res[2].Path != "/s/q-0000000001" {
		t.Fatalf("%v %+v", failed, res)
	}
	if st := h.stat("/s"); st.Cversion != 3 || st.NumChildren != 1 {
		t.Fatalf("stat %+v", st)
	}
	if n, _ := h.tree.GetAllChildrenNumber("/", nil); n != 5 {
		t.Fatalf("GetAllChildrenNumber(/) = %d", n)
	}
}

// Checked against ZooKeeper 3.8.0's MultiOperationRecord: the mode, not the
// op type, decides what a create in a multi makes and reports.
func TestMultiCreateKinds(t *testing.T) {
	h := newHarness(t, Config{ExtendedTypes: true})
	res, failed := h.tree.Multi(h.tx(1), []Op{
		{Type: jute.OpCreate2, Create: CreateOp{Path: "/c", ACL: OpenACLUnsafe, Mode: jute.ModeContainer}},
		{Type: jute.OpCreateContainer, Create: CreateOp{Path: "/p", ACL: OpenACLUnsafe, Mode: jute.ModePersistent}},
		{Type: jute.OpCreateTTL, Create: CreateOp{Path: "/q", ACL: OpenACLUnsafe, Mode: jute.ModePersistent, TTL: 10}},
		{Type: jute.OpCreateTTL, Create: CreateOp{Path: "/t", ACL: OpenACLUnsafe, Mode: jute.ModePersistentWithTTL, TTL: 10}},
	})
	if failed {
		t.Fatalf("%+v", res)
	}
	for i, want := range []int32{jute.OpCreateContainer, jute.OpCreate, jute.OpCreate, jute.OpCreateTTL} {
		if res[i].Type != want {
			t.Errorf("result %d type %d, want %d", i, res[i].Type, want)
		}
	}
	h.tree.mu.RLock()
	kinds := []ephType{h.tree.ephemeralType(h.tree.lookup("/c").stat.ephemeralOwner), h.tree.ephemeralType(h.tree.lookup("/p").stat.ephemeralOwner),
		h.tree.ephemeralType(h.tree.lookup("/q").stat.ephemeralOwner), h.tree.ephemeralType(h.tree.lookup("/t").stat.ephemeralOwner)}
	h.tree.mu.RUnlock()
	if !slices.Equal(kinds, []ephType{typeContainer, typeVoid, typeVoid, typeTTL}) {
		t.Fatalf("kinds %v", kinds)
	}
	res, failed = h.tree.Multi(h.tx(1), []Op{
		{Type: jute.OpCreate, Create: CreateOp{Path: "/u", ACL: OpenACLUnsafe, Mode: jute.ModePersistentWithTTL}},
	})
	if !failed {
		t.Fatal("TTL mode without a TTL succeeded")
	}
	wantErr(t, "ttl mode in create op", res[0].Err, ErrBadArguments)
	h.check()
}
