package datatree

import (
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
)

func TestDigestID(t *testing.T) {
	// zkCli: addauth digest super:test and DigestAuthenticationProvider's
	// generateDigest("super:test").
	if got := DigestID("super", "test"); got != "super:D/InIHSb7yEEbrWz8b9l71RjZJU=" {
		t.Fatalf("DigestID = %s", got)
	}
}

func TestACLChecks(t *testing.T) {
	alice := digestID("alice", "pw")
	bob := digestID("bob", "pw")
	local := jute.Id{Scheme: "ip", Id: "127.0.0.1"}
	other := jute.Id{Scheme: "ip", Id: "10.1.2.3"}
	for _, tc := range []struct {
		name string
		acl  []jute.ACL
		perm int32
		auth []jute.Id
		ok   bool
	}{
		{"world", OpenACLUnsafe, jute.PermWrite, nil, true},
		{"world read only", ReadACLUnsafe, jute.PermWrite, nil, false},
		{"empty acl passes", nil, jute.PermAdmin, nil, true},
		{"digest match", aclFor(jute.PermAll, "digest", alice.Id), jute.PermRead, []jute.Id{alice}, true},
		{"digest other user", aclFor(jute.PermAll, "digest", alice.Id), jute.PermRead, []jute.Id{bob}, false},
		{"digest no auth", aclFor(jute.PermAll, "digest", alice.Id), jute.PermRead, nil, false},
		{"digest perm missing", aclFor(jute.PermRead, "digest", alice.Id), jute.PermWrite, []jute.Id{alice}, false},
		{"super", aclFor(jute.PermRead, "digest", alice.Id), jute.PermAdmin, []jute.Id{SuperID}, true},
		{"ip exact", aclFor(jute.PermAll, "ip", "127.0.0.1"), jute.PermRead, []jute.Id{local}, true},
		{"ip cidr", aclFor(jute.PermAll, "ip", "10.0.0.0/8"), jute.PermRead, []jute.Id{other}, true},
		{"ip cidr miss", aclFor(jute.PermAll, "ip", "10.0.0.0/16"), jute.PermRead, []jute.Id{other}, false},
		{"ip /0", aclFor(jute.PermAll, "ip", "1.2.3.4/0"), jute.PermRead, []jute.Id{other}, true},
		{"ip scheme mismatch", aclFor(jute.PermAll, "ip", "127.0.0.1"), jute.PermRead, []jute.Id{alice}, false},
		{"any of perms", aclFor(jute.PermRead, "world", "anyone"), jute.PermRead | jute.PermAdmin, nil, true},
		{"sasl match", aclFor(jute.PermAll, "sasl", "bob"), jute.PermRead, []jute.Id{{Scheme: "sasl", Id: "bob"}}, true},
		{"sasl other user", aclFor(jute.PermAll, "sasl", "bob"), jute.PermRead, []jute.Id{{Scheme: "sasl", Id: "amy"}}, false},
		{"sasl user super matches any sasl entry", aclFor(jute.PermAll, "sasl", "bob"), jute.PermRead, []jute.Id{{Scheme: "sasl", Id: "super"}}, true},
		{"sasl user super is not digest super", aclFor(jute.PermAll, "digest", alice.Id), jute.PermRead, []jute.Id{{Scheme: "sasl", Id: "super"}}, false},
		{"second entry", append(aclFor(jute.PermRead, "digest", bob.Id), aclFor(jute.PermWrite, "digest", alice.Id)...), jute.PermWrite, []jute.Id{bob, alice}, true},
	} {
		if got := checkACL(tc.acl, tc.perm, tc.auth); got != tc.ok {
			t.Errorf("%s: checkACL = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestFixupACL(t *testing.T) {
	tr := New(Config{ExtraAuthSchemes: []string{"sasl"}})
	alice := digestID("alice", "pw")
	ip := jute.Id{Scheme: "ip", Id: "127.0.0.1"}
	for _, tc := range []struct {
		name string
		acl  []jute.ACL
		auth []jute.Id
		want []jute.ACL // nil: invalid
	}{
		{"world", OpenACLUnsafe, nil, OpenACLUnsafe},
		{"world not anyone", aclFor(jute.PermAll, "world", "someone"), nil, nil},
		{"empty", []jute.ACL{}, nil, nil},
		{"nil", nil, nil, nil},
		{"duplicates removed", append(slices.Clone(OpenACLUnsafe), OpenACLUnsafe...), nil, OpenACLUnsafe},
		{"auth expands to digest", CreatorAllACL, []jute.Id{ip, alice}, aclFor(jute.PermAll, "digest", alice.Id)},
		{"auth with only ip", CreatorAllACL, []jute.Id{ip}, nil},
		{"auth with none", CreatorAllACL, nil, nil},
		{"auth expands extra scheme", aclFor(jute.PermRead, "auth", "whatever"), []jute.Id{{Scheme: "sasl", Id: "u@R"}}, aclFor(jute.PermRead, "sasl", "u@R")},
		{"digest ok", aclFor(jute.PermAll, "digest", "u:hash"), nil, aclFor(jute.PermAll, "digest", "u:hash")},
		{"digest empty user ok", aclFor(jute.PermAll, "digest", ":hash"), nil, aclFor(jute.PermAll, "digest", ":hash")},
		{"digest no colon", aclFor(jute.PermAll, "digest", "uhash"), nil, nil},
		{"digest trailing colon", aclFor(jute.PermAll, "digest", "u:"), nil, nil},
		{"digest two colons", aclFor(jute.PermAll, "digest", "u:a:b"), nil, nil},
		{"ip ok", aclFor(jute.PermAll, "ip", "10.0.0.0/8"), nil, aclFor(jute.PermAll, "ip", "10.0.0.0/8")},
		{"ip bits too big", aclFor(jute.PermAll, "ip", "10.0.0.0/33"), nil, nil},
		{"ip empty bits", aclFor(jute.PermAll, "ip", "10.0.0.0/"), nil, nil},
		{"ip bad octet", aclFor(jute.PermAll, "ip", "10.0.0.256"), nil, nil},
		{"ip v6 unsupported in 3.8", aclFor(jute.PermAll, "ip", "::1"), nil, nil},
		{"unknown scheme", aclFor(jute.PermAll, "x509", "CN=a"), nil, nil},
		{"extra scheme", aclFor(jute.PermAll, "sasl", "u@R"), nil, aclFor(jute.PermAll, "sasl", "u@R")},
		{"super scheme has no provider", aclFor(jute.PermAll, "super", ""), nil, nil},
	} {
		got, ok := tr.fixupACL(tc.acl, tc.auth)
		if ok != (tc.want != nil) || (ok && !slices.Equal(got, tc.want)) {
			t.Errorf("%s: fixupACL = %v %v, want %v", tc.name, got, ok, tc.want)
		}
	}
}

func TestACLEnforcement(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	alice := digestID("alice", "pw")
	bob := digestID("bob", "pw")
	// A node only alice may touch, created with the auth scheme.
	if _, _, err := tr.Create(h.tx(1, alice), CreateOp{Path: "/priv", Data: []byte("s"), ACL: CreatorAllACL}); err != nil {
		t.Fatal(err)
	}
	acl, _, err := tr.GetACL("/priv", []jute.Id{alice})
	if err != nil || !slices.Equal(acl, aclFor(jute.PermAll, "digest", alice.Id)) {
		t.Fatalf("acl %v %v", acl, err)
	}
	// A node everyone reads but only alice administers.
	mixed := append(slices.Clone(ReadACLUnsafe), aclFor(jute.PermAdmin, "digest", alice.Id)...)
	if _, _, err := tr.Create(h.tx(1), CreateOp{Path: "/mixed", ACL: mixed}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		do   func(auth []jute.Id) error
		who  []jute.Id
		want error
	}{
		{"getData owner", func(a []jute.Id) error { _, _, err := tr.GetData("/priv", a, nil); return err }, []jute.Id{alice}, nil},
		{"getData other", func(a []jute.Id) error { _, _, err := tr.GetData("/priv", a, nil); return err }, []jute.Id{bob}, ErrNoAuth},
		{"getData super", func(a []jute.Id) error { _, _, err := tr.GetData("/priv", a, nil); return err }, []jute.Id{SuperID}, nil},
		{"getChildren other", func(a []jute.Id) error { _, _, err := tr.GetChildren("/priv", a, nil); return err }, nil, ErrNoAuth},
		{"getAllChildrenNumber other", func(a []jute.Id) error { _, err := tr.GetAllChildrenNumber("/priv", a); return err }, nil, ErrNoAuth},
		{"exists needs nothing", func(a []jute.Id) error { _, err := tr.Exists("/priv", nil); return err }, nil, nil},
		{"getACL other", func(a []jute.Id) error { _, _, err := tr.GetACL("/priv", a); return err }, nil, ErrNoAuth},
		{"setData other", func(a []jute.Id) error { _, err := tr.SetData(h.tx(1, a...), "/priv", nil, -1); return err }, []jute.Id{bob}, ErrNoAuth},
		{"create child other", func(a []jute.Id) error {
			_, _, err := tr.Create(h.tx(1, a...), CreateOp{Path: "/priv/c", ACL: OpenACLUnsafe})
			return err
		}, []jute.Id{bob}, ErrNoAuth},
		{"create child owner", func(a []jute.Id) error {
			_, _, err := tr.Create(h.tx(1, a...), CreateOp{Path: "/priv/c", ACL: OpenACLUnsafe})
			return err
		}, []jute.Id{alice}, nil},
		{"delete child other", func(a []jute.Id) error { return tr.Delete(h.tx(1, a...), "/priv/c", -1) }, []jute.Id{bob}, ErrNoAuth},
		{"setACL other", func(a []jute.Id) error { _, err := tr.SetACL(h.tx(1, a...), "/priv", OpenACLUnsafe, -1); return err }, []jute.Id{bob}, ErrNoAuth},
		{"setACL mixed non-admin", func(a []jute.Id) error { _, err := tr.SetACL(h.tx(1, a...), "/mixed", OpenACLUnsafe, -1); return err }, nil, ErrNoAuth},
		{"check other in multi", func(a []jute.Id) error {
			res, failed := tr.Multi(h.tx(1, a...), []Op{{Type: jute.OpCheck, Path: "/priv", Version: -1}})
			if !failed {
				return nil
			}
			return res[0].Err
		}, []jute.Id{bob}, ErrNoAuth},
		{"delete child owner", func(a []jute.Id) error { return tr.Delete(h.tx(1, a...), "/priv/c", -1) }, []jute.Id{alice}, nil},
	} {
		wantErr(t, tc.name, tc.do(tc.who), tc.want)
	}
	// getACL with READ but not ADMIN redacts digest hashes.
	acl, _, err = tr.GetACL("/mixed", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(ReadACLUnsafe), aclFor(jute.PermAdmin, "digest", "alice:x")...)
	if !slices.Equal(acl, want) {
		t.Fatalf("redacted acl %v, want %v", acl, want)
	}
	if acl, _, _ = tr.GetACL("/mixed", []jute.Id{alice}); !slices.Equal(acl, mixed) {
		t.Fatalf("admin sees %v", acl)
	}
	h.check()
}

func TestACLInterning(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	for i := 0; i < 50; i++ {
		h.create("/n", jute.ModePersistentSequential)
	}
	custom := aclFor(jute.PermRead, "ip", "10.0.0.1")
	if _, err := tr.SetACL(h.tx(1), "/n0000000003", custom, -1); err != nil {
		t.Fatal(err)
	}
	if len(tr.acls.byKey) != 3 { // open, read-only (/zookeeper/config), custom
		t.Fatalf("%d interned lists", len(tr.acls.byKey))
	}
	if err := tr.Delete(h.tx(1), "/n0000000003", -1); err != nil {
		t.Fatal(err)
	}
	if len(tr.acls.byKey) != 2 {
		t.Fatalf("%d interned lists after last user went", len(tr.acls.byKey))
	}
	h.check()
}
