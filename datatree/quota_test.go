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
