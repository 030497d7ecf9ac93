package gozk

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

func TestIntegration_CRUD(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		c, _ := connect(t, s.Addr)
		p, err := c.Create("/a", []byte("hello"), 0, worldACL)
		must(t, err)
		if p != "/a" {
			t.Fatalf("create returned %q", p)
		}
		if _, err := c.Create("/a", nil, 0, worldACL); !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("second create: %v", err)
		}
		if _, err := c.Create("/missing/child", nil, 0, worldACL); !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("create under missing parent: %v", err)
		}
		data, st, err := c.Get("/a")
		must(t, err)
		if string(data) != "hello" || st.Version != 0 || st.DataLength != 5 || st.Czxid != st.Mzxid ||
			st.Czxid != st.Pzxid || st.NumChildren != 0 || st.EphemeralOwner != 0 || st.Ctime != st.Mtime {
			t.Fatalf("fresh node: %q %+v", data, st)
		}
		st2, err := c.Set("/a", []byte("world!"), 0)
		must(t, err)
		if st2.Version != 1 || st2.DataLength != 6 || st2.Mzxid <= st.Mzxid || st2.Czxid != st.Czxid || st2.Pzxid != st.Pzxid {
			t.Fatalf("after set: %+v (before %+v)", st2, st)
		}
		if _, err := c.Set("/a", nil, 0); !errors.Is(err, zk.ErrBadVersion) {
			t.Fatalf("set with stale version: %v", err)
		}
		if _, err := c.Set("/a", []byte("any"), -1); err != nil {
			t.Fatalf("set with version -1: %v", err)
		}
		_, err = c.Create("/a/b", nil, 0, worldACL)
		must(t, err)
		_, err = c.Create("/a/c", nil, 0, worldACL)
		must(t, err)
		kids, pst, err := c.Children("/a")
		must(t, err)
		sort.Strings(kids)
		if fmt.Sprint(kids) != "[b c]" || pst.NumChildren != 2 || pst.Cversion != 2 || pst.Pzxid <= st2.Mzxid {
			t.Fatalf("children %v, parent %+v", kids, pst)
		}
		if err := c.Delete("/a", -1); !errors.Is(err, zk.ErrNotEmpty) {
			t.Fatalf("delete non-empty: %v", err)
		}
		if err := c.Delete("/a/b", 5); !errors.Is(err, zk.ErrBadVersion) {
			t.Fatalf("delete with wrong version: %v", err)
		}
		must(t, c.Delete("/a/b", 0))
		if err := c.Delete("/a/b", -1); !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("delete twice: %v", err)
		}
		ok, pst2, err := c.Exists("/a")
		must(t, err)
		if !ok || pst2.Cversion != 3 || pst2.NumChildren != 1 {
			t.Fatalf("after child delete: %+v", pst2)
		}
		if ok, _, err := c.Exists("/nope"); ok || err != nil {
			t.Fatalf("exists on missing: %v %v", ok, err)
		}
		if _, _, err := c.Get("/nope"); !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("get missing: %v", err)
		}
		for _, p := range []string{"/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
			if ok, _, err := c.Exists(p); !ok || err != nil {
				t.Errorf("system node %s: %v %v", p, ok, err)
			}
		}
		if _, err := c.Sync("/a"); err != nil {
			t.Fatalf("sync: %v", err)
		}
	})
}

func TestIntegration_SequentialAndEphemeral(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		c, _ := connect(t, s.Addr)
		other, _ := connect(t, s.Addr)
		_, err := c.Create("/q", nil, 0, worldACL)
		must(t, err)
		// Sequence numbers count child creates only (ZooKeeper keeps
		// creates in cversion and reports 2*creates-numChildren), so
		// after n-0, x and x's delete the next name is 0000000002.
		p0, err := c.Create("/q/n-", nil, zk.FlagSequence, worldACL)
		must(t, err)
		_, err = c.Create("/q/x", nil, 0, worldACL)
		must(t, err)
		must(t, c.Delete("/q/x", -1))
		p3, err := c.Create("/q/n-", nil, zk.FlagSequence|zk.FlagEphemeral, worldACL)
		must(t, err)
		if p0 != "/q/n-0000000000" || p3 != "/q/n-0000000002" {
			t.Fatalf("sequential names %s %s", p0, p3)
		}
		_, st, err := c.Get(p3)
		must(t, err)
		if st.EphemeralOwner != c.SessionID() {
			t.Fatalf("ephemeralOwner 0x%x, session 0x%x", st.EphemeralOwner, c.SessionID())
		}
		if _, err := c.Create(p3+"/child", nil, 0, worldACL); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
			t.Fatalf("child of ephemeral: %v", err)
		}
		ok, _, ch, err := other.ExistsW(p3)
		must(t, err)
		if !ok {
			t.Fatal("other session does not see the ephemeral")
		}
		c.Close()
		ev := waitEvent(t, ch, 10*time.Second)
		if ev.Type != zk.EventNodeDeleted || ev.Path != p3 {
			t.Fatalf("event %+v", ev)
		}
		if ok, _, _ := other.Exists(p0); !ok {
			t.Fatal("persistent sequential node went with the session")
		}
	})
}

func TestIntegration_Watches(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		c, _ := connect(t, s.Addr)
		w, _ := connect(t, s.Addr)
		_, err := c.Create("/w", []byte("1"), 0, worldACL)
		must(t, err)

		_, _, data, err := w.GetW("/w")
		must(t, err)
		_, _, kids, err := w.ChildrenW("/w")
		must(t, err)
		_, _, exist, err := w.ExistsW("/w/new")
		must(t, err)

		_, err = c.Set("/w", []byte("2"), -1)
		must(t, err)
		if ev := waitEvent(t, data, 5*time.Second); ev.Type != zk.EventNodeDataChanged || ev.Path != "/w" {
			t.Fatalf("data watch: %+v", ev)
		}
		_, err = c.Create("/w/new", nil, 0, worldACL)
		must(t, err)
		if ev := waitEvent(t, exist, 5*time.Second); ev.Type != zk.EventNodeCreated || ev.Path != "/w/new" {
			t.Fatalf("exist watch: %+v", ev)
		}
		if ev := waitEvent(t, kids, 5*time.Second); ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/w" {
			t.Fatalf("child watch: %+v", ev)
		}
		// One-shot: a second change sends nothing on the fired watches.
		_, err = c.Set("/w", []byte("3"), -1)
		must(t, err)
		noEvent(t, data, 300*time.Millisecond)

		// Deleting a node fires NodeDeleted to data and child watchers.
		_, _, data2, err := w.GetW("/w/new")
		must(t, err)
		_, _, kids2, err := w.ChildrenW("/w/new")
		must(t, err)
		must(t, c.Delete("/w/new", -1))
		for _, ch := range []<-chan zk.Event{data2, kids2} {
			if ev := waitEvent(t, ch, 5*time.Second); ev.Type != zk.EventNodeDeleted || ev.Path != "/w/new" {
				t.Fatalf("delete watch: %+v", ev)
			}
		}
		// An exists watch on a node that exists fires on data change.
		_, _, ex2, err := w.ExistsW("/w")
		must(t, err)
		_, err = c.Set("/w", nil, -1)
		must(t, err)
		if ev := waitEvent(t, ex2, 5*time.Second); ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("exists watch on existing node: %+v", ev)
		}
	})
}

func TestIntegration_Multi(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		c, _ := connect(t, s.Addr)
		_, err := c.Create("/m", []byte("v0"), 0, worldACL)
		must(t, err)
		res, err := c.Multi(
			&zk.CreateRequest{Path: "/m/a", Data: []byte("a"), Acl: worldACL},
			&zk.CreateRequest{Path: "/m/a/b", Acl: worldACL},
			&zk.SetDataRequest{Path: "/m", Data: []byte("v1"), Version: 0},
			&zk.CheckVersionRequest{Path: "/m", Version: 1},
		)
		must(t, err)
		if len(res) != 4 || res[0].String != "/m/a" || res[1].String != "/m/a/b" || res[2].Stat == nil || res[2].Stat.Version != 1 {
			t.Fatalf("multi results %+v", res)
		}
		// A failing op rolls everything back and reports per-op errors.
		res, err = c.Multi(
			&zk.CreateRequest{Path: "/m/x", Acl: worldACL},
			&zk.DeleteRequest{Path: "/m/a", Version: -1}, // not empty
			&zk.SetDataRequest{Path: "/m", Version: -1},
		)
		if !errors.Is(err, zk.ErrNotEmpty) {
			t.Fatalf("failing multi: %v", err)
		}
		if len(res) != 3 || res[0].Error != nil || !errors.Is(res[1].Error, zk.ErrNotEmpty) || res[2].Error == nil || !strings.Contains(res[2].Error.Error(), "-2") {
			t.Fatalf("failing multi results: %+v", res)
		}
		if ok, _, _ := c.Exists("/m/x"); ok {
			t.Fatal("failed multi left /m/x behind")
		}
		if _, st, _ := c.Get("/m"); st.Version != 1 {
			t.Fatalf("failed multi changed /m: version %d", st.Version)
		}
	})
}

func TestIntegration_ACL(t *testing.T) {
	// super:test, digest of "super:test".
	opts := zkproc.Options{ExtraCfg: map[string]string{
		"DigestAuthenticationProvider.superDigest": "super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
	}}
	forBoth(t, opts, func(t *testing.T, s *zkproc.Server) {
		owner, _ := connect(t, s.Addr)
		stranger, _ := connect(t, s.Addr)
		must(t, owner.AddAuth("digest", []byte("alice:secret")))
		_, err := owner.Create("/private", []byte("x"), 0, zk.DigestACL(zk.PermAll, "alice", "secret"))
		must(t, err)
		if _, _, err := stranger.Get("/private"); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("stranger read: %v", err)
		}
		if _, err := stranger.Set("/private", nil, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("stranger write: %v", err)
		}
		if ok, _, err := stranger.Exists("/private"); !ok || err != nil {
			t.Fatalf("exists needs no permission: %v %v", ok, err)
		}
		acl, st, err := owner.GetACL("/private")
		must(t, err)
		if len(acl) != 1 || acl[0].Scheme != "digest" || acl[0].ID != "alice:"+hashOf("alice:secret") || st.Aversion != 0 {
			t.Fatalf("getACL %+v %+v", acl, st)
		}
		// "auth" ACLs take the creator's identities.
		_, err = owner.Create("/mine", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "auth"}})
		must(t, err)
		acl, _, err = owner.GetACL("/mine")
		must(t, err)
		if len(acl) != 1 || acl[0].Scheme != "digest" || acl[0].ID != "alice:"+hashOf("alice:secret") {
			t.Fatalf("auth ACL became %+v", acl)
		}
		if _, err := stranger.Create("/theirs", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "auth"}}); !errors.Is(err, zk.ErrInvalidACL) {
			t.Fatalf("auth ACL without auth: %v", err)
		}
		// Read-only for the world.
		_, err = owner.Create("/ro", nil, 0, append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "alice", "secret")...))
		must(t, err)
		if _, err := stranger.Set("/ro", nil, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("write to read-only: %v", err)
		}
		st, err = owner.SetACL("/ro", worldACL, 0)
		must(t, err)
		if st.Aversion != 1 {
			t.Fatalf("aversion after setACL %d", st.Aversion)
		}
		if _, err := owner.SetACL("/ro", worldACL, 0); !errors.Is(err, zk.ErrBadVersion) {
			t.Fatalf("setACL stale aversion: %v", err)
		}
		// The super user passes every check.
		super, _ := connect(t, s.Addr)
		must(t, super.AddAuth("digest", []byte("super:test")))
		if _, _, err := super.Get("/private"); err != nil {
			t.Fatalf("super read: %v", err)
		}
	})
}

func hashOf(userPassword string) string {
	return zkDigest(userPassword)
}

func TestIntegration_ContainersAndTTL(t *testing.T) {
	// ZooKeeper reads the sweep interval from the system property
	// znode.container.checkIntervalMs (no "zookeeper." prefix), so the
	// zoo.cfg key has no effect there; zkd honours both.
	opts := zkproc.Options{
		ExtraCfg: map[string]string{
			"extendedTypesEnabled":            "true",
			"znode.container.checkIntervalMs": "100",
		},
		JVMFlags: []string{"-Dznode.container.checkIntervalMs=100"},
	}
	forBoth(t, opts, func(t *testing.T, s *zkproc.Server) {
		c, _ := connect(t, s.Addr)
		_, err := c.CreateContainer("/box", nil, zk.FlagContainer, worldACL)
		must(t, err)
		_, err = c.Create("/box/item", nil, 0, worldACL)
		must(t, err)
		time.Sleep(300 * time.Millisecond)
		if ok, _, _ := c.Exists("/box"); !ok {
			t.Fatal("container with a child was removed")
		}
		must(t, c.Delete("/box/item", -1))
		waitFor(t, 10*time.Second, "empty container to go", func() bool {
			ok, _, _ := c.Exists("/box")
			return !ok
		})
		// A container that never had children stays.
		_, err = c.CreateContainer("/empty", nil, zk.FlagContainer, worldACL)
		must(t, err)
		time.Sleep(300 * time.Millisecond)
		if ok, _, _ := c.Exists("/empty"); !ok {
			t.Fatal("never-used container was removed")
		}

		_, err = c.CreateTTL("/ttl", []byte("x"), zk.FlagTTL, worldACL, 300*time.Millisecond)
		must(t, err)
		_, st, err := c.Get("/ttl")
		must(t, err)
		if st.EphemeralOwner != 0 {
			t.Logf("TTL node ephemeralOwner 0x%x", st.EphemeralOwner)
		}
		waitFor(t, 10*time.Second, "TTL node to expire", func() bool {
			ok, _, _ := c.Exists("/ttl")
			return !ok
		})
	})
}

func TestIntegration_TTLNeedsExtendedTypes(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		c, _ := connect(t, s.Addr)
		if _, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, worldACL, time.Second); err == nil || !strings.Contains(err.Error(), "-6") {
			t.Fatalf("TTL create without extendedTypesEnabled: %v", err)
		}
	})
}
