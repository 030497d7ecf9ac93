package datatree

import (
	"testing"

	"github.com/zkd/zkd/jute"
)

func TestStatsTrack(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		ok      bool
	}{
		{"count=2,bytes=6", "count=2,bytes=6", true},
		{"", "count=-1,bytes=-1", true},
		{"bytes=5,count=1", "count=1,bytes=5", true},
		// zkCli's limit format round-trips through the 3.8.0 quirks.
		{"count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1", "count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1", true},
		{"count=1,,bytes=2;", "count=1,bytes=2", true},
		{"a==5", "count=-1,bytes=-1=;a=-1", true},
		{"count=", "", false},
		{"count", "", false},
		{",count=1", "", false},
		{"count=x", "", false},
	} {
		m, ok := parseStatsTrack(tc.in)
		if ok != tc.ok {
			t.Errorf("parse %q: ok %v", tc.in, ok)
			continue
		}
		if ok {
			if got := formatStatsTrack(m); got != tc.out {
				t.Errorf("%q → %q, want %q", tc.in, got, tc.out)
			}
		}
	}
}

func TestQuotaMultiRollback(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	for _, p := range []string{"/app", "/zookeeper/quota/app", "/zookeeper/quota/app/zookeeper_limits", "/zookeeper/quota/app/zookeeper_stats"} {
		h.create(p, jute.ModePersistent)
	}
	stats := func() string {
		d, _, err := tr.GetData("/zookeeper/quota/app/zookeeper_stats", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(d)
	}
	if got := stats(); got != "count=1,bytes=1" {
		t.Fatalf("initial stats %q", got)
	}
	before := tr.Digest()
	_, failed := tr.Multi(h.tx(1), []Op{
		{Type: jute.OpCreate, Create: CreateOp{Path: "/app/x", Data: []byte("abc"), ACL: OpenACLUnsafe}},
		{Type: jute.OpSetData, Path: "/app", Data: []byte("12345"), Version: -1},
		{Type: jute.OpDelete, Path: "/zookeeper/quota/app/zookeeper_limits", Version: -1},
		{Type: jute.OpCheck, Path: "/missing", Version: -1},
	})
	if !failed || tr.Digest() != before || stats() != "count=1,bytes=1" {
		t.Fatalf("rollback: failed=%v stats %q", failed, stats())
	}
	h.check()
	_, failed = tr.Multi(h.tx(1), []Op{
		{Type: jute.OpCreate, Create: CreateOp{Path: "/app/x", Data: []byte("abc"), ACL: OpenACLUnsafe}},
		{Type: jute.OpSetData, Path: "/app", Data: []byte("12345"), Version: -1},
	})
	if failed || stats() != "count=2,bytes=8" {
		t.Fatalf("commit: failed=%v stats %q", failed, stats())
	}
	h.check()
}

// TestQuotaEnforcement: with EnforceQuota, hard limits refuse creates and
// setData that would exceed them (QuotaExceeded, nothing applied); soft
// limits and trees without the setting never refuse.
func TestQuotaEnforcement(t *testing.T) {
	setup := func(enforce bool) *harness {
		cfg := DefaultConfig()
		cfg.EnforceQuota = enforce
		h := newHarness(t, cfg)
		for _, p := range []string{"/hq", "/zookeeper/quota/hq"} {
			h.create(p, jute.ModePersistent)
		}
		// As zkCli.s setquota -N 3 -B 5 (hard): limits, then stats.
		if _, _, err := h.tree.Create(h.tx(1), CreateOp{Path: "/zookeeper/quota/hq/zookeeper_limits", Data: []byte("count=-1,bytes=-1;countHardLimit=3;byteHardLimit=5"), ACL: OpenACLUnsafe}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.tree.Create(h.tx(1), CreateOp{Path: "/zookeeper/quota/hq/zookeeper_stats", ACL: OpenACLUnsafe}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := setup(true)
	mk := func(p, data string) error {
		_, _, err := h.tree.Create(h.tx(1), CreateOp{Path: p, Data: []byte(data), ACL: OpenACLUnsafe})
		return err
	}
	wantErr(t, "first child", mk("/hq/a", "1"), nil)
	wantErr(t, "second child", mk("/hq/b", "1"), nil) // count 3 with /hq itself
	wantErr(t, "over the count", mk("/hq/c", ""), ErrQuotaExceeded)
	if _, err := h.tree.Exists("/hq/c", nil); err == nil {
		t.Fatal("refused create left a node")
	}
	_, err := h.tree.SetData(h.tx(1), "/hq/a", []byte("123"), -1) // bytes 3 → 5 (h.create writes "d")
	wantErr(t, "up to the byte limit", err, nil)
	_, err = h.tree.SetData(h.tx(1), "/hq/a", []byte("1234"), -1)
	wantErr(t, "over the byte limit", err, ErrQuotaExceeded)
	_, err = h.tree.SetData(h.tx(1), "/hq/a", []byte("1234"), 99)
	wantErr(t, "quota is checked before the version", err, ErrQuotaExceeded)

	h = setup(false)
	for _, p := range []string{"/hq/a", "/hq/b", "/hq/c", "/hq/d"} {
		wantErr(t, "not enforced: "+p, mk(p, "xx"), nil)
	}
}
