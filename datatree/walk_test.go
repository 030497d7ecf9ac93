package datatree

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zkd/zkd/jute"
)

func TestEphemeralsByParent(t *testing.T) {
	tr := New(DefaultConfig())
	zxid := int64(0)
	create := func(session int64, path string, mode int32) {
		t.Helper()
		zxid++
		tx := &Txn{Zxid: zxid, Time: 1000 + zxid, SessionID: session}
		if _, _, err := tr.Create(tx, CreateOp{Path: path, ACL: OpenACLUnsafe, Mode: mode}); err != nil {
			t.Fatalf("create %s: %v", path, err)
		}
	}
	create(1, "/a", jute.ModePersistent)
	create(1, "/a/lock", jute.ModePersistent)
	create(2, "/a/lock/x-", jute.ModeEphemeralSequential)
	create(1, "/a/lock/x-", jute.ModeEphemeralSequential)
	create(1, "/a/lock/p", jute.ModePersistent)
	create(3, "/b", jute.ModeEphemeral)
	create(3, "/ab", jute.ModePersistent)
	create(3, "/ab/e", jute.ModeEphemeral)

	names := func(gs []EphemeralGroup) map[string][]string {
		out := map[string][]string{}
		for _, g := range gs {
			for _, c := range g.Children {
				out[g.Parent] = append(out[g.Parent], c.Name)
			}
		}
		return out
	}
	tests := []struct {
		prefix string
		want   map[string][]string
	}{
		{"", map[string][]string{"/": {"b"}, "/a/lock": {"x-0000000000", "x-0000000001"}, "/ab": {"e"}}},
		{"/", map[string][]string{"/": {"b"}, "/a/lock": {"x-0000000000", "x-0000000001"}, "/ab": {"e"}}},
		{"/a", map[string][]string{"/a/lock": {"x-0000000000", "x-0000000001"}}},
		{"/a/lock/", map[string][]string{"/a/lock": {"x-0000000000", "x-0000000001"}}},
		{"/ab", map[string][]string{"/ab": {"e"}}},
		{"/none", map[string][]string{}},
	}
	for _, tc := range tests {
		if got := names(tr.EphemeralsByParent(tc.prefix, nil)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("EphemeralsByParent(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}
	g := tr.EphemeralsByParent("/a/lock", nil)[0]
	if st := g.Children[0].Stat; st.EphemeralOwner != 2 || st.Czxid != 3 || st.Ctime != 1003 {
		t.Errorf("first lock child stat = %+v, want owner 2, czxid 3, ctime 1003", st)
	}
	onlyX := func(name string) bool { return strings.HasPrefix(name, "x-") }
	if got := names(tr.EphemeralsByParent("", onlyX)); !reflect.DeepEqual(got, map[string][]string{"/a/lock": {"x-0000000000", "x-0000000001"}}) {
		t.Errorf("EphemeralsByParent with a name filter = %v", got)
	}
	tr.CloseSession(&Txn{Zxid: 100, Time: 2000, SessionID: 2}, 2)
	if got := names(tr.EphemeralsByParent("/a", nil)); !reflect.DeepEqual(got, map[string][]string{"/a/lock": {"x-0000000001"}}) {
		t.Errorf("after closing session 2: %v", got)
	}
}
