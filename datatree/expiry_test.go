package datatree

import (
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
)

func TestContainersAndTTL(t *testing.T) {
	h := newHarness(t, Config{ExtendedTypes: true})
	tr := h.tree
	at := func(now int64) *Txn { tx := h.tx(0); tx.Time = now; return tx }
	mk := func(path string, mode int32, ttl int64, opcode int32, now int64) jute.Stat {
		t.Helper()
		_, st, err := tr.Create(at(now), CreateOp{Path: path, ACL: OpenACLUnsafe, Mode: mode, TTL: ttl, Type: opcode})
		if err != nil {
			t.Fatalf("create %s: %v", path, err)
		}
		return st
	}
	if st := mk("/c", jute.ModeContainer, 0, 0, 1000); st.EphemeralOwner != 0 {
		t.Fatalf("container reports owner %#x", st.EphemeralOwner)
	}
	if st := mk("/t", jute.ModePersistentWithTTL, 500, 0, 1000); st.EphemeralOwner != 0 {
		t.Fatalf("ttl node reports owner %#x", st.EphemeralOwner)
	}
	tr.mu.RLock()
	if o := tr.lookup("/c").stat.ephemeralOwner; o != containerOwner {
		t.Errorf("container owner %#x", o)
	}
	if o := tr.lookup("/t").stat.ephemeralOwner; uint64(o) != 0xff000000000001f4 {
		t.Errorf("ttl owner %#x", uint64(o))
	}
	tr.mu.RUnlock()
	// createContainer makes a container whatever the mode; create with the
	// container flag makes a plain persistent node (ZooKeeper 3.8).
	mk("/c2", jute.ModePersistent, 0, jute.OpCreateContainer, 1000)
	mk("/plain", jute.ModeContainer, 0, jute.OpCreate, 1000)
	mk("/ts-", jute.ModePersistentSequentialWithTTL, 100, jute.OpCreateTTL, 1000)
	// Containers and TTL nodes can have children; they are not ephemeral.
	mk("/c/kid", jute.ModePersistent, 0, 0, 1000)
	mk("/c2/kid", jute.ModePersistent, 0, 0, 1000)
	mk("/plain/kid", jute.ModePersistent, 0, 0, 1000)
	mk("/t/kid", jute.ModePersistent, 0, 0, 1000)
	if got := tr.ExpiryCandidates(2000, 0); !slices.Equal(got, []string{"/ts-0000000004"}) {
		t.Fatalf("candidates with kids present: %v", got)
	}
	for _, p := range []string{"/c/kid", "/c2/kid", "/plain/kid", "/t/kid"} {
		if err := tr.Delete(h.tx(1), p, -1); err != nil {
			t.Fatal(err)
		}
	}
	if tr.EphemeralCount() != 0 {
		t.Fatalf("EphemeralCount %d counts containers or ttl nodes", tr.EphemeralCount())
	}
	// /t: mtime 1000, ttl 500: expired only when now-mtime > 500.
	if got := tr.ExpiryCandidates(1500, 0); !slices.Equal(got, []string{"/c", "/c2", "/ts-0000000004"}) {
		t.Fatalf("candidates at 1500: %v", got)
	}
	if got := tr.ExpiryCandidates(1501, 0); !slices.Equal(got, []string{"/c", "/c2", "/t", "/ts-0000000004"}) {
		t.Fatalf("candidates at 1501: %v", got)
	}
	if got := tr.ExpiryCandidates(1501, 2); !slices.Equal(got, []string{"/c", "/c2"}) {
		t.Fatalf("limited candidates: %v", got)
	}
	// A write refreshes the TTL.
	if _, err := tr.SetData(at(1400), "/t", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	w := &recorder{}
	tr.GetChildren("/", nil, w)
	for _, tc := range []struct {
		path string
		now  int64
		want error
	}{
		{"/t", 1700, ErrBadVersion},
		{"/plain", 5000, ErrBadVersion},
		{"/zookeeper", 5000, ErrBadArguments},
		{"/nope", 5000, ErrNoNode},
		{"/t", 1901, nil},
		{"/c", 5000, nil},
		{"/c", 5000, ErrNoNode},
	} {
		wantErr(t, "DeleteExpired "+tc.path, tr.DeleteExpired(at(tc.now), tc.path), tc.want)
	}
	if got := w.take(); !slices.Equal(got, []string{"children:/"}) {
		t.Fatalf("events %v", got)
	}
	// A new container with no child yet is not a candidate.
	mk("/fresh", jute.ModeContainer, 0, 0, 1000)
	wantErr(t, "fresh container", tr.DeleteExpired(at(1e9), "/fresh"), ErrBadVersion)
	h.check()
}

func TestContainerNeverUsed(t *testing.T) {
	h := newHarness(t, Config{ContainerMaxNeverUsedMs: 100})
	tx := h.tx(0)
	tx.Time = 1000
	if _, _, err := h.tree.Create(tx, CreateOp{Path: "/c", ACL: OpenACLUnsafe, Mode: jute.ModeContainer}); err != nil {
		t.Fatal(err)
	}
	if got := h.tree.ExpiryCandidates(1100, 0); len(got) != 0 {
		t.Fatalf("too early: %v", got)
	}
	if got := h.tree.ExpiryCandidates(1101, 0); !slices.Equal(got, []string{"/c"}) {
		t.Fatalf("never-used container: %v", got)
	}
}

func TestTTLNeedsExtendedTypes(t *testing.T) {
	// With extended types off, a TTL-looking owner is a plain ephemeral
	// owner, as EphemeralType.get decides.
	tr := New(DefaultConfig())
	if got := tr.ephemeralType(extendedMask | 5); got != typeNormal {
		t.Fatalf("type %d", got)
	}
	tr = New(Config{ExtendedTypes: true})
	if got := tr.ephemeralType(extendedMask | 5); got != typeTTL {
		t.Fatalf("type %d", got)
	}
	if got := tr.ephemeralType(containerOwner); got != typeContainer {
		t.Fatalf("type %d", got)
	}
}
