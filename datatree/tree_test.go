package datatree

import (
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
)

// Values observed on a fresh ZooKeeper 3.8.0.
func TestFreshTree(t *testing.T) {
	tr := New(DefaultConfig())
	for _, tc := range []struct {
		path     string
		cversion int32
		children int32
		aversion int32
		acl      []jute.ACL
	}{
		{"/", -1, 1, 0, OpenACLUnsafe},
		{"/zookeeper", -2, 2, 0, OpenACLUnsafe},
		{"/zookeeper/quota", 0, 0, 0, OpenACLUnsafe},
		{"/zookeeper/config", 0, 0, -1, ReadACLUnsafe},
	} {
		data, st, err := tr.GetData(tc.path, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		want := jute.Stat{Cversion: tc.cversion, NumChildren: tc.children, Aversion: tc.aversion}
		if st != want || len(data) != 0 || data == nil {
			t.Errorf("%s: stat %+v data %q, want %+v and empty data", tc.path, st, data, want)
		}
		acl, _, _ := tr.GetACL(tc.path, nil)
		if !slices.Equal(acl, tc.acl) {
			t.Errorf("%s: acl %v, want %v", tc.path, acl, tc.acl)
		}
	}
	if got := tr.NodeCount(); got != 5 {
		t.Errorf("NodeCount = %d, want 5 (ZooKeeper counts the root twice)", got)
	}
	if got := tr.ApproxDataSize(); got != 44 {
		t.Errorf("ApproxDataSize = %d, want 44", got)
	}
	if n, _ := tr.GetAllChildrenNumber("", nil); n != 4 {
		t.Errorf("GetAllChildrenNumber(\"\") = %d, want 4 (ZooKeeper counts its \"/\" alias of the root)", n)
	}
	if n, _ := tr.GetAllChildrenNumber("/", nil); n != 3 {
		t.Errorf("GetAllChildrenNumber(/) = %d, want 3", n)
	}
	if err := tr.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// The sequence below reproduces a session against ZooKeeper 3.8.0: the
// persisted cversion counts creates, the reported one creates and deletes,
// and sequential suffixes use the persisted one.
func TestStatBookkeeping(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	h.create("/q", jute.ModePersistent)
	q0 := h.stat("/q")
	if q0.Czxid != h.zxid || q0.Mzxid != h.zxid || q0.Pzxid != h.zxid || q0.Version != 0 || q0.Cversion != 0 || q0.DataLength != 1 {
		t.Fatalf("new node stat %+v", q0)
	}
	if root := h.stat("/"); root.Cversion != 0 || root.Pzxid != h.zxid || root.NumChildren != 2 {
		t.Fatalf("root after create: %+v", root)
	}
	h.create("/q/a", jute.ModePersistent)
	if err := tr.Delete(h.tx(1), "/q/a", -1); err != nil {
		t.Fatal(err)
	}
	delZxid := h.zxid
	if st := h.stat("/q"); st.Cversion != 2 || st.Pzxid != delZxid || st.NumChildren != 0 || st.Mzxid != q0.Mzxid {
		t.Fatalf("after create+delete: %+v", st)
	}
	if p := h.create("/q/s-", jute.ModePersistentSequential); p != "/q/s-0000000001" {
		t.Fatalf("first sequential = %s", p)
	}
	if st := h.stat("/q"); st.Cversion != 3 || st.NumChildren != 1 {
		t.Fatalf("after seq: %+v", st)
	}
	h.create("/q/b", jute.ModePersistent)
	if err := tr.Delete(h.tx(1), "/q/b", -1); err != nil {
		t.Fatal(err)
	}
	if p := h.create("/q/s-", jute.ModePersistentSequential); p != "/q/s-0000000003" {
		t.Fatalf("second sequential = %s", p)
	}
	if st := h.stat("/q"); st.Cversion != 6 || st.NumChildren != 2 {
		t.Fatalf("after second seq: %+v", st)
	}
	// Root and sequential under root.
	if p := h.create("/", jute.ModePersistentSequential); p != "/0000000001" {
		t.Fatalf("sequential under root = %s", p)
	}
	// setData and setACL.
	tx := h.tx(1)
	st, err := tr.SetData(tx, "/q", []byte("hello"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != 1 || st.Mzxid != tx.Zxid || st.Mtime != tx.Time || st.DataLength != 5 || st.Czxid != q0.Czxid || st.Ctime != q0.Ctime {
		t.Fatalf("setData stat %+v", st)
	}
	st, err = tr.SetACL(h.tx(1), "/q", ReadACLUnsafe, 0)
	if err != nil || st.Aversion != 1 || st.Mzxid != tx.Zxid || st.Version != 1 {
		t.Fatalf("setACL stat %+v %v", st, err)
	}
	if tr.LastZxid() != h.zxid {
		t.Fatalf("LastZxid %d, want %d", tr.LastZxid(), h.zxid)
	}
	// A failed write still consumes its zxid.
	if err := tr.Delete(h.tx(1), "/nope", -1); err == nil {
		t.Fatal("delete of missing node succeeded")
	}
	if tr.LastZxid() != h.zxid {
		t.Fatalf("LastZxid after failure %d, want %d", tr.LastZxid(), h.zxid)
	}
	tr.NoteZxid(h.zxid + 5)
	if tr.LastZxid() != h.zxid+5 {
		t.Fatal("NoteZxid ignored")
	}
	h.check()
}

func TestSequentialNegativeCversion(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.create("/p", jute.ModePersistent)
	h.tree.mu.Lock()
	h.tree.lookup("/p").stat.cversion = -5
	h.tree.mu.Unlock()
	if p := h.create("/p/x", jute.ModePersistentSequential); p != "/p/x-000000005" {
		t.Fatalf("got %s", p)
	}
	// At MaxInt32 the increment overflows and ZooKeeper keeps the old
	// cversion (and pzxid).
	h.tree.mu.Lock()
	h.tree.lookup("/p").stat.cversion = 1<<31 - 1
	h.tree.mu.Unlock()
	before := h.stat("/p").Pzxid
	if p := h.create("/p/y", jute.ModePersistentSequential); p != "/p/y2147483647" {
		t.Fatalf("got %s", p)
	}
	if st := h.stat("/p"); st.Pzxid != before {
		t.Fatalf("pzxid moved on cversion overflow: %+v", st)
	}
	h.check()
}

func TestCreateValidation(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.create("/a", jute.ModePersistent)
	h.create("/eph", jute.ModeEphemeral)
	if _, _, err := h.tree.Create(h.tx(1), CreateOp{Path: "/locked", ACL: aclFor(jute.PermAll&^jute.PermCreate, "world", "anyone")}); err != nil {
		t.Fatal(err)
	}
	ttlOn := newHarness(t, Config{ExtendedTypes: true})
	for _, tc := range []struct {
		name    string
		h       *harness
		op      CreateOp
		session int64
		want    error
	}{
		{"ok", h, CreateOp{Path: "/b", ACL: OpenACLUnsafe}, 1, nil},
		{"bad mode", h, CreateOp{Path: "/b", ACL: OpenACLUnsafe, Mode: 7}, 1, ErrBadArguments},
		{"negative mode", h, CreateOp{Path: "/b", ACL: OpenACLUnsafe, Mode: -1}, 1, ErrBadArguments},
		{"no slash", h, CreateOp{Path: "b", ACL: OpenACLUnsafe}, 1, ErrBadArguments},
		{"trailing slash", h, CreateOp{Path: "/a/", ACL: OpenACLUnsafe}, 1, ErrBadArguments},
		{"empty segment", h, CreateOp{Path: "/a//b", ACL: OpenACLUnsafe}, 1, ErrNoNode},
		{"dot", h, CreateOp{Path: "/a/.", ACL: OpenACLUnsafe}, 1, ErrBadArguments},
		{"dotdot", h, CreateOp{Path: "/a/..", ACL: OpenACLUnsafe}, 1, ErrBadArguments},
		{"nul", h, CreateOp{Path: "/a\x00", ACL: OpenACLUnsafe}, 1, ErrBadArguments},
		{"control", h, CreateOp{Path: "/a\x01", ACL: OpenACLUnsafe}, 1, ErrBadArguments},
		{"root", h, CreateOp{Path: "/", ACL: OpenACLUnsafe}, 1, ErrNodeExists},
		{"exists", h, CreateOp{Path: "/a", ACL: OpenACLUnsafe}, 1, ErrNodeExists},
		{"no parent", h, CreateOp{Path: "/x/y", ACL: OpenACLUnsafe}, 1, ErrNoNode},
		{"invalid acl before no parent", h, CreateOp{Path: "/x/y"}, 1, ErrInvalidACL},
		{"empty acl", h, CreateOp{Path: "/c", ACL: []jute.ACL{}}, 1, ErrInvalidACL},
		{"no create perm", h, CreateOp{Path: "/locked/x", ACL: OpenACLUnsafe}, 1, ErrNoAuth},
		{"child of ephemeral", h, CreateOp{Path: "/eph/x", ACL: OpenACLUnsafe}, 1, ErrNoChildrenForEphemerals},
		{"exists before ephemeral parent", h, CreateOp{Path: "/eph", ACL: OpenACLUnsafe}, 1, ErrNodeExists},
		{"ephemeral without session", h, CreateOp{Path: "/e2", ACL: OpenACLUnsafe, Mode: jute.ModeEphemeral}, 0, ErrBadArguments},
		{"ttl disabled", h, CreateOp{Path: "/t", ACL: OpenACLUnsafe, Mode: jute.ModePersistentWithTTL, TTL: 100}, 1, ErrUnimplemented},
		{"ttl ok", ttlOn, CreateOp{Path: "/t", ACL: OpenACLUnsafe, Mode: jute.ModePersistentWithTTL, TTL: 100}, 1, nil},
		{"ttl zero", ttlOn, CreateOp{Path: "/t0", ACL: OpenACLUnsafe, Mode: jute.ModePersistentWithTTL, TTL: 0}, 1, ErrBadArguments},
		{"ttl too big", ttlOn, CreateOp{Path: "/t1", ACL: OpenACLUnsafe, Mode: jute.ModePersistentWithTTL, TTL: MaxTTL + 1}, 1, ErrBadArguments},
		{"ttl max", ttlOn, CreateOp{Path: "/t2", ACL: OpenACLUnsafe, Mode: jute.ModePersistentWithTTL, TTL: MaxTTL}, 1, nil},
		{"ttl mode via create opcode", ttlOn, CreateOp{Path: "/t3", ACL: OpenACLUnsafe, Mode: jute.ModePersistentWithTTL, TTL: 5, Type: jute.OpCreate}, 1, ErrBadArguments},
		{"createTTL with plain mode", ttlOn, CreateOp{Path: "/t4", ACL: OpenACLUnsafe, Mode: jute.ModePersistent, TTL: 5, Type: jute.OpCreateTTL}, 1, ErrBadArguments},
		{"createTTL with plain mode negative ttl", ttlOn, CreateOp{Path: "/t4", ACL: OpenACLUnsafe, Mode: jute.ModePersistent, TTL: -1, Type: jute.OpCreateTTL}, 1, ErrBadArguments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.h.tree.Digest()
			_, _, err := tc.h.tree.Create(tc.h.tx(tc.session), tc.op)
			wantErr(t, tc.name, err, tc.want)
			if tc.want != nil && tc.h.tree.Digest() != before {
				t.Fatal("failed create changed the tree")
			}
			tc.h.check()
		})
	}
}

func TestDeleteSetDataValidation(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.create("/a", jute.ModePersistent)
	h.create("/a/b", jute.ModePersistent)
	h.create("/c", jute.ModePersistent)
	if _, _, err := h.tree.Create(h.tx(1), CreateOp{Path: "/ro", ACL: aclFor(jute.PermRead|jute.PermCreate, "world", "anyone")}); err != nil {
		t.Fatal(err)
	}
	h.create("/ro/x", jute.ModePersistent)
	for _, tc := range []struct {
		name string
		do   func(tx *Txn) error
		want error
	}{
		{"delete root", func(tx *Txn) error { return h.tree.Delete(tx, "/", -1) }, ErrBadArguments},
		{"delete /zookeeper", func(tx *Txn) error { return h.tree.Delete(tx, "/zookeeper", -1) }, ErrBadArguments},
		{"delete /zookeeper/quota", func(tx *Txn) error { return h.tree.Delete(tx, "/zookeeper/quota", -1) }, ErrBadArguments},
		{"delete no slash", func(tx *Txn) error { return h.tree.Delete(tx, "a", -1) }, ErrBadArguments},
		{"delete trailing slash is no node", func(tx *Txn) error { return h.tree.Delete(tx, "/c/", -1) }, ErrNoNode},
		{"delete missing parent", func(tx *Txn) error { return h.tree.Delete(tx, "/x/y", -1) }, ErrNoNode},
		{"delete missing", func(tx *Txn) error { return h.tree.Delete(tx, "/x", -1) }, ErrNoNode},
		{"delete not empty", func(tx *Txn) error { return h.tree.Delete(tx, "/a", -1) }, ErrNotEmpty},
		{"delete bad version", func(tx *Txn) error { return h.tree.Delete(tx, "/c", 3) }, ErrBadVersion},
		{"delete bad version before not empty", func(tx *Txn) error { return h.tree.Delete(tx, "/a", 3) }, ErrBadVersion},
		{"delete no perm on parent", func(tx *Txn) error { return h.tree.Delete(tx, "/ro/x", -1) }, ErrNoAuth},
		{"setData invalid path", func(tx *Txn) error { _, err := h.tree.SetData(tx, "/c/", nil, -1); return err }, ErrBadArguments},
		{"setData missing", func(tx *Txn) error { _, err := h.tree.SetData(tx, "/x", nil, -1); return err }, ErrNoNode},
		{"setData bad version", func(tx *Txn) error { _, err := h.tree.SetData(tx, "/c", nil, 1); return err }, ErrBadVersion},
		{"setData no perm", func(tx *Txn) error { _, err := h.tree.SetData(tx, "/ro", nil, -1); return err }, ErrNoAuth},
		{"setACL invalid acl first", func(tx *Txn) error { _, err := h.tree.SetACL(tx, "/x", nil, -1); return err }, ErrInvalidACL},
		{"setACL missing", func(tx *Txn) error { _, err := h.tree.SetACL(tx, "/x", OpenACLUnsafe, -1); return err }, ErrNoNode},
		{"setACL no admin", func(tx *Txn) error { _, err := h.tree.SetACL(tx, "/ro", OpenACLUnsafe, -1); return err }, ErrNoAuth},
		{"setACL bad aversion", func(tx *Txn) error { _, err := h.tree.SetACL(tx, "/c", OpenACLUnsafe, 2); return err }, ErrBadVersion},
		{"delete ok", func(tx *Txn) error { return h.tree.Delete(tx, "/c", 0) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.tree.Digest()
			err := tc.do(h.tx(1))
			wantErr(t, tc.name, err, tc.want)
			if tc.want != nil && h.tree.Digest() != before {
				t.Fatal("failed write changed the tree")
			}
			h.check()
		})
	}
}

func TestDataNilAndCopy(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	buf := []byte("abc")
	if _, _, err := h.tree.Create(h.tx(1), CreateOp{Path: "/n", ACL: OpenACLUnsafe}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.tree.Create(h.tx(1), CreateOp{Path: "/d", Data: buf, ACL: OpenACLUnsafe}); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'X'
	if d, _, _ := h.tree.GetData("/n", nil, nil); d != nil {
		t.Fatalf("nil data came back as %q", d)
	}
	if d, _, _ := h.tree.GetData("/d", nil, nil); string(d) != "abc" {
		t.Fatalf("data aliased caller's buffer: %q", d)
	}
	if _, err := h.tree.SetData(h.tx(1), "/d", []byte{}, -1); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := h.tree.GetData("/d", nil, nil); d == nil || len(d) != 0 {
		t.Fatalf("empty data became %v", d)
	}
}

func TestEphemerals(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	h.create("/app", jute.ModePersistent)
	mk := func(path string, session int64, mode int32) string {
		p, st, err := tr.Create(h.tx(session), CreateOp{Path: path, ACL: OpenACLUnsafe, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if st.EphemeralOwner != session {
			t.Fatalf("%s owner %#x", p, st.EphemeralOwner)
		}
		return p
	}
	mk("/app/z", 7, jute.ModeEphemeral)
	mk("/app/a", 7, jute.ModeEphemeral)
	lock := mk("/app/lock-", 7, jute.ModeEphemeralSequential)
	mk("/app/b", 8, jute.ModeEphemeral)
	mk("/top", 7, jute.ModeEphemeral)
	if got := tr.GetEphemerals(7, ""); !slices.Equal(got, []string{"/app/a", lock, "/app/z", "/top"}) {
		t.Fatalf("ephemerals of 7: %v", got)
	}
	if got := tr.GetEphemerals(7, "/app/l"); !slices.Equal(got, []string{lock}) {
		t.Fatalf("prefixed: %v", got)
	}
	if got := tr.GetEphemerals(9, "/"); got == nil || len(got) != 0 {
		t.Fatalf("unknown session: %v", got)
	}
	if tr.EphemeralCount() != 5 {
		t.Fatalf("EphemeralCount %d", tr.EphemeralCount())
	}
	w := &recorder{}
	for _, p := range []string{"/app/a", lock, "/app/z", "/top", "/app/b"} {
		if _, _, err := tr.GetData(p, nil, w); err != nil {
			t.Fatal(err)
		}
	}
	tx := h.tx(0)
	tr.CloseSession(tx, 7)
	if got := w.take(); !slices.Equal(got, []string{"deleted:/app/a", "deleted:" + lock, "deleted:/app/z", "deleted:/top"}) {
		t.Fatalf("close events %v", got)
	}
	if got := tr.GetEphemerals(7, ""); len(got) != 0 {
		t.Fatalf("left: %v", got)
	}
	if st := h.stat("/app"); st.NumChildren != 1 || st.Pzxid != tx.Zxid {
		t.Fatalf("parent after close: %+v", st)
	}
	if tr.LastZxid() != tx.Zxid || tr.EphemeralCount() != 1 {
		t.Fatal("close session bookkeeping")
	}
	h.check()
}

func TestSetConfigData(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	w := &recorder{}
	h.tree.GetData(ConfigPath, nil, w)
	_, err := h.tree.SetConfigData(h.tx(1), []byte("server.1=a:1:2"), true)
	wantErr(t, "reconfig without super", err, ErrNoAuth)
	_, err = h.tree.SetData(h.tx(1), ConfigPath, []byte("x"), -1)
	wantErr(t, "plain setData", err, ErrNoAuth)
	tx := h.tx(1, SuperID)
	st, err := h.tree.SetConfigData(tx, []byte("server.1=a:1:2"), true)
	if err != nil || st.Version != -1 || st.Mzxid != tx.Zxid || st.DataLength != 14 {
		t.Fatalf("%+v %v", st, err)
	}
	if got := w.take(); !slices.Equal(got, []string{"changed:" + ConfigPath}) {
		t.Fatalf("events %v", got)
	}
	if _, err := h.tree.SetConfigData(h.tx(0), nil, false); err != nil {
		t.Fatal(err)
	}
	h.check()
}
