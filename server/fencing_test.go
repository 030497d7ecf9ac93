package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab/fencing"
	"github.com/zkd/zkd/zab/fencing/verify"
)

// fencedBackend is a fakeBackend whose fencing key can be installed later,
// as the first leader's key entry does.
type fencedBackend struct {
	*fakeBackend
	sg atomic.Pointer[fencing.Signer]
}

func (b *fencedBackend) FencingSigner() *fencing.Signer { return b.sg.Load() }

func startFencedServer(t testing.TB) (*fencedBackend, string) {
	t.Helper()
	b := &fencedBackend{fakeBackend: newFakeBackend()}
	return b, startBackendServer(t, b, b.close)
}

func testSigner(t testing.TB) *fencing.Signer {
	sg, err := fencing.NewSigner(bytes.Repeat([]byte{42}, fencing.SeedLen))
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

// TestFencingVirtualNodes: /zookeeper/fencing answers the public key and
// /zookeeper/fencing<lock node> a token that verifies and names the lock
// node, its czxid and owner; other paths there are NoNode, writes are
// refused, and /zookeeper lists no fencing child.
func TestFencingVirtualNodes(t *testing.T) {
	b, addr := startFencedServer(t)
	zc := dialZK(t, addr)
	if _, _, err := zc.Get("/zookeeper/fencing"); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("get /zookeeper/fencing without a key: %v, want NoNode", err)
	}
	sg := testSigner(t)
	b.sg.Store(sg)

	data, st, err := zc.Get("/zookeeper/fencing")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := fencing.ParsePublicKey(data)
	if err != nil || !bytes.Equal(pub, sg.PublicKey()) || int(st.DataLength) != len(data) {
		t.Fatalf("public key %q: %v (stat %+v)", data, err, st)
	}
	var info fencing.PublicKeyInfo
	if err := json.Unmarshal(data, &info); err != nil || info.KeyID != sg.KeyID().String() {
		t.Fatalf("key info %+v: %v", info, err)
	}

	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/locks", "/locks/lock-0000000005"} {
		if _, err := zc.Create(p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := zc.Create("/locks/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create("/locks/other", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	_, lst, err := zc.Get(lock)
	if err != nil {
		t.Fatal(err)
	}
	tok, tst, err := zc.Get("/zookeeper/fencing" + lock)
	if err != nil {
		t.Fatal(err)
	}
	v, err := verify.New(pub)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Check("", tok)
	if err != nil {
		t.Fatalf("token %q: %v", tok, err)
	}
	want := fencing.Token{KeyID: sg.KeyID(), LockPath: "/locks", Node: lock[len("/locks/"):],
		Czxid: lst.Czxid, Session: zc.SessionID(), ReadZxid: got.ReadZxid}
	if *got != want || got.ReadZxid < lst.Czxid || got.NodePath() != lock {
		t.Fatalf("token %+v, want %+v", *got, want)
	}
	if tst.Czxid != lst.Czxid || tst.EphemeralOwner != zc.SessionID() || int(tst.DataLength) != len(tok) {
		t.Fatalf("token stat %+v, lock stat %+v", tst, lst)
	}
	if ex, est, err := zc.Exists("/zookeeper/fencing" + lock); !ex || err != nil || est.DataLength != tst.DataLength {
		t.Fatalf("exists on the token: %v %+v %v", ex, est, err)
	}
	if acls, _, err := zc.GetACL("/zookeeper/fencing" + lock); err != nil || len(acls) != 1 || acls[0].Perms != zk.PermRead {
		t.Fatalf("token ACL %+v: %v", acls, err)
	}

	for _, p := range []string{
		"/zookeeper/fencing/locks",                    // not a lock node's name
		"/zookeeper/fencing/locks/lock-0000000099",    // no such node
		"/zookeeper/fencing/locks/lock-0000000005",    // persistent
		"/zookeeper/fencing/locks/other",              // ephemeral, not a lock name
		"/zookeeper/fencing/zookeeper/fencing" + lock, // a token of a token
		"/zookeeper/fencingx" + lock,                  // not the subtree
	} {
		if _, _, err := zc.Get(p); !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("get %s: %v, want NoNode", p, err)
		}
	}

	writes := []struct {
		name string
		do   func() error
		want error
	}{
		{"create key node", func() error { _, err := zc.Create("/zookeeper/fencing", nil, 0, acl); return err }, zk.ErrNodeExists},
		{"create token", func() error {
			_, err := zc.Create("/zookeeper/fencing/locks", nil, 0, acl)
			return err
		}, zk.ErrNoAuth},
		{"set key", func() error { _, err := zc.Set("/zookeeper/fencing", []byte("x"), -1); return err }, zk.ErrNoAuth},
		{"set token", func() error { _, err := zc.Set("/zookeeper/fencing"+lock, []byte("x"), -1); return err }, zk.ErrNoAuth},
		{"delete token", func() error { return zc.Delete("/zookeeper/fencing"+lock, -1) }, zk.ErrNoAuth},
		{"setACL key", func() error { _, err := zc.SetACL("/zookeeper/fencing", acl, -1); return err }, zk.ErrNoAuth},
	}
	for _, w := range writes {
		if err := w.do(); !errors.Is(err, w.want) {
			t.Errorf("%s: %v, want %v", w.name, err, w.want)
		}
	}
	kids, _, err := zc.Children("/zookeeper")
	if err != nil || slices.Contains(kids, "fencing") {
		t.Fatalf("children of /zookeeper %v: %v", kids, err)
	}
	if kids, _, err := zc.Children("/zookeeper/fencing"); err != nil || len(kids) != 0 {
		t.Fatalf("children of /zookeeper/fencing %v: %v", kids, err)
	}

	// Once the lock node is gone, so is its token.
	if err := zc.Delete(lock, -1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := zc.Get("/zookeeper/fencing" + lock); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("token of a deleted lock node: %v", err)
	}
}

// TestFencingTokenACL: a token is READ-checked as its lock node.
func TestFencingTokenACL(t *testing.T) {
	b, addr := startFencedServer(t)
	b.sg.Store(testSigner(t))
	owner, other := dialZK(t, addr), dialZK(t, addr)
	if err := owner.AddAuth("digest", []byte("u:p")); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Create("/l", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	lock, err := owner.Create("/l/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.DigestACL(zk.PermAll, "u", "p"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := owner.Get("/zookeeper/fencing" + lock); err != nil {
		t.Fatalf("owner reads its token: %v", err)
	}
	if _, _, err := other.Get("/zookeeper/fencing" + lock); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated token read: %v, want NoAuth", err)
	}
	// FencingToken (the web console's read) gives the bytes the owner
	// reads, under the same check.
	s, err := New(DefaultConfig(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want, _, err := owner.Get("/zookeeper/fencing" + lock)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.FencingToken(lock, []jute.Id{{Scheme: "digest", Id: Digest("u:p")}})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("FencingToken = %q, %v; the owner read %q", got, err, want)
	}
	if _, err := s.FencingToken(lock, nil); !errors.Is(err, jute.CodeNoAuth) {
		t.Fatalf("FencingToken without auth: %v, want NoAuth", err)
	}
}

// TestFencingMultiRead: a multiRead's getData and getChildren answer the
// virtual nodes as the single reads do, and a NoNode there is an error
// result beside the others.
func TestFencingMultiRead(t *testing.T) {
	fb, addr := startFencedServer(t)
	sg := testSigner(t)
	fb.sg.Store(sg)
	c := dialRaw(t, addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/locks", Acl: openACL}, &jute.CreateResponse{})
	c.call(2, jute.OpCreate, &jute.CreateRequest{Path: "/locks/lock-", Acl: openACL, Flags: jute.ModeEphemeralSequential}, &jute.CreateResponse{})
	tokPath := fencing.TokenPathPrefix + "/locks/lock-0000000000"
	req := &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: tokPath}},
		{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: fencing.TokenPathPrefix + "/locks"}},
		{Type: jute.OpGetChildren, Req: &jute.GetChildrenRequest{Path: fencing.TokenPathPrefix}},
		{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: fencing.TokenPathPrefix}},
	}}
	var resp jute.MultiResponse
	if h := c.call(3, jute.OpMultiRead, req, &resp); h.Err != 0 || len(resp.Results) != 4 {
		t.Fatalf("multiRead header %+v, results %+v", h, resp.Results)
	}
	r := resp.Results
	if r[0].Type != jute.OpGetData {
		t.Fatalf("token result %+v", r[0])
	}
	if d, err := fencing.Decode(r[0].Resp.(*jute.GetDataResponse).Data); err != nil || !d.Verify(sg.PublicKey()) || d.NodePath() != "/locks/lock-0000000000" {
		t.Fatalf("token from multiRead: %v", err)
	}
	if r[1].Type != jute.OpError || r[1].Err != jute.CodeNoNode {
		t.Fatalf("non-lock path result %+v, want NoNode", r[1])
	}
	if r[2].Type != jute.OpGetChildren || len(r[2].Resp.(*jute.GetChildrenResponse).Children) != 0 {
		t.Fatalf("children of the key node %+v", r[2])
	}
	if pub, err := fencing.ParsePublicKey(r[3].Resp.(*jute.GetDataResponse).Data); err != nil || !bytes.Equal(pub, sg.PublicKey()) {
		t.Fatalf("key from multiRead: %v", err)
	}
}

// BenchmarkFencingToken compares a getData of a lock node's token (a tree
// lookup plus an Ed25519 signature) with a plain getData of the lock node
// itself, over loopback with the fake backend. depth=1 is one request at a
// time (its ns/op is the round trip); depth=32 keeps 32 in flight.
func BenchmarkFencingToken(b *testing.B) {
	for _, read := range []string{"plain", "token"} {
		for _, depth := range []int{1, 32} {
			b.Run(fmt.Sprintf("read=%s/depth=%d", read, depth), func(b *testing.B) {
				fb, addr := startFencedServer(b)
				fb.sg.Store(testSigner(b))
				c := dialRaw(b, addr)
				c.session()
				c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/locks", Acl: openACL}, &jute.CreateResponse{})
				c.call(2, jute.OpCreate, &jute.CreateRequest{Path: "/locks/lock-", Acl: openACL, Flags: jute.ModeEphemeralSequential}, &jute.CreateResponse{})
				path := "/locks/lock-0000000000"
				if read == "token" {
					path = fencing.TokenPathPrefix + path
				}
				benchGetData(b, c, path, depth)
			})
		}
	}
}
