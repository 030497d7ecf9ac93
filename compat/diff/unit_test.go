package diff

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
)

func TestGenerate_Deterministic(t *testing.T) {
	for _, seed := range []uint64{0, 1, 42, 1 << 40} {
		a, b := Generate(seed, 80), Generate(seed, 80)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("seed %d: two scripts differ", seed)
		}
		if len(a.Ops) != 80 {
			t.Errorf("seed %d: %d steps, want 80", seed, len(a.Ops))
		}
		if a.Sessions < 2 || a.Sessions > 4 {
			t.Errorf("seed %d: %d sessions, want 2–4", seed, a.Sessions)
		}
	}
	if reflect.DeepEqual(Generate(1, 40).Ops, Generate(2, 40).Ops) {
		t.Error("seeds 1 and 2 give the same script")
	}
}

// TestGenerate_Coverage checks that a handful of seeds exercise every kind
// of step, every create opcode and mode, every ACL scheme and the three
// kinds of version, and that steps respect the slots' open/closed state.
func TestGenerate_Coverage(t *testing.T) {
	kinds := map[Kind]bool{}
	codes := map[int32]bool{}
	modes := map[int32]bool{}
	schemes := map[string]bool{}
	versions := map[int32]bool{}
	var visit func(o Op)
	writesOnlyMultiRead := false
	visit = func(o Op) {
		kinds[o.Kind] = true
		if o.Kind == KMultiRead && len(o.Sub) > 0 && !slices.ContainsFunc(o.Sub, func(s Op) bool { return s.Kind == KGetData || s.Kind == KGetChildren }) {
			writesOnlyMultiRead = true
		}
		if o.Kind == KCreate {
			codes[o.Code], modes[o.Mode] = true, true
		}
		if o.Kind == KDelete || o.Kind == KSetData {
			versions[o.Version] = true
			if o.Kind == KDelete && o.Path == "" {
				t.Errorf("a script deletes the run's root")
			}
		}
		for _, a := range o.ACL {
			schemes[a.Id.Scheme] = true
		}
		for _, s := range o.Sub {
			visit(s)
		}
	}
	for seed := range uint64(30) {
		s := Generate(seed, 80)
		open := make([]bool, s.Sessions)
		for i := range open {
			open[i] = true
		}
		for i, o := range s.Ops {
			switch {
			case o.Kind == KOpen && open[o.Session]:
				t.Errorf("seed %d step %d: open on an open slot", seed, i)
			case o.Kind != KOpen && !open[o.Session]:
				t.Errorf("seed %d step %d: %s on a closed slot", seed, i, o.Kind)
			}
			switch o.Kind {
			case KOpen:
				open[o.Session] = true
			case KClose:
				open[o.Session] = false
			}
			visit(o)
		}
	}
	for _, k := range []Kind{KCreate, KDelete, KSetData, KSetACL, KExists, KGetData, KGetChildren, KGetChildren2,
		KGetACL, KMulti, KMultiRead, KSync, KAddWatch, KCheckWatches, KRemoveWatches, KGetEphemerals,
		KAllChildren, KAuth, KWhoAmI, KOpen, KClose, "check", KDeleteContainer} {
		if !kinds[k] {
			t.Errorf("no %s step in 30 seeds", k)
		}
	}
	if !writesOnlyMultiRead {
		t.Error("no multiRead holding only writes in 30 seeds")
	}
	for _, c := range []int32{jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL} {
		if !codes[c] {
			t.Errorf("no %s create", jute.OpName(c))
		}
	}
	for m := range int32(7) {
		if !modes[m] {
			t.Errorf("no create with mode %d", m)
		}
	}
	for _, s := range []string{"world", "digest", "auth", "ip"} {
		if !schemes[s] {
			t.Errorf("no ACL with scheme %s", s)
		}
	}
	for _, v := range []int32{-1, 0, 7} {
		if !versions[v] {
			t.Errorf("no delete or setData with version %d", v)
		}
	}
}

func TestWithout(t *testing.T) {
	s := Script{Sessions: 1, Ops: []Op{
		{Kind: KCheckWatches, Path: "a"},
		{Kind: KMulti, Sub: []Op{{Kind: KCreate, Code: jute.OpCreate2, Path: "a", Mode: 6}, {Kind: KDelete, Path: "b"}}},
		{Kind: KMulti, Sub: []Op{{Kind: KCreate, Code: jute.OpCreate, Path: "a", Mode: 5}}},
		{Kind: KGetData, Path: "a"},
	}}
	got := s.Without(regexp.MustCompile(`^checkWatches|^(create|create2) \S+ mode=[56]`))
	want := []Op{{Kind: KMulti, Sub: []Op{{Kind: KDelete, Path: "b"}}}, {Kind: KGetData, Path: "a"}}
	if !reflect.DeepEqual(got.Ops, want) {
		t.Errorf("Without = %v, want %v", got.Ops, want)
	}
	if !reflect.DeepEqual(s.Without(nil), s) {
		t.Error("Without(nil) changed the script")
	}
}

func TestShrink(t *testing.T) {
	mk := func(data ...string) Script {
		s := Script{Sessions: 1}
		for _, d := range data {
			s.Ops = append(s.Ops, Op{Kind: KSetData, Data: d})
		}
		return s
	}
	datas := func(s Script) []string {
		var out []string
		for _, o := range s.Ops {
			out = append(out, o.Data)
		}
		return out
	}
	// has reports whether the script holds every one of want, in order.
	has := func(want ...string) func(Script) bool {
		return func(s Script) bool {
			i := 0
			for _, o := range s.Ops {
				if i < len(want) && o.Data == want[i] {
					i++
				}
			}
			return i == len(want)
		}
	}
	var noise []string
	for i := range 40 {
		noise = append(noise, "n"+string(rune('a'+i%26)))
	}
	tests := []struct {
		name  string
		s     Script
		fails func(Script) bool
		want  []string
	}{
		{"one culprit", mk(slices.Concat(noise[:20], []string{"bad"}, noise[20:])...), has("bad"), []string{"bad"}},
		{"two culprits in order", mk(slices.Concat([]string{"x"}, noise[:10], []string{"y"}, noise[10:])...), has("x", "y"), []string{"x", "y"}},
		{"already minimal", mk("x"), has("x"), []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Shrink(tt.s, tt.fails, 10*time.Second)
			if !slices.Equal(datas(got), tt.want) {
				t.Errorf("Shrink = %v, want %v", datas(got), tt.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	s := Script{Sessions: 1, Ops: []Op{{Kind: KGetData, Path: "a"}, {Kind: KSetData, Path: "a"}}}
	base := func() *Trace {
		return &Trace{Steps: []string{"zxid=z1 OK", "zxid=z2 OK"}, Sessions: []string{"S0.1"},
			Events: map[string][]string{"S0.1": {"NodeDataChanged state=3 /R/a"}}}
	}
	tests := []struct {
		name   string
		change func(*Trace)
		step   int
		sig    string
	}{
		{"equal", func(*Trace) {}, -2, ""},
		{"reply", func(tr *Trace) { tr.Steps[1] = "zxid=z2 -103(bad version)" }, 1, "setData:setData OK -103(bad"},
		{"zxid only", func(tr *Trace) { tr.Steps[1] = "zxid=z3 OK" }, 1, "setData:setData OK OK"},
		{"missing step", func(tr *Trace) { tr.Steps = tr.Steps[:1] }, 1, "setData:setData OK "},
		{"events", func(tr *Trace) { tr.Events["S0.1"] = nil }, -1, "events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := base()
			tt.change(b)
			d := Compare(s, base(), b)
			if tt.step == -2 {
				if d != nil {
					t.Fatalf("difference %+v in equal traces", d)
				}
				return
			}
			if d == nil || d.Step != tt.step || d.Signature() != tt.sig {
				t.Fatalf("Compare = %+v, want step %d signature %q", d, tt.step, tt.sig)
			}
			if !strings.Contains(d.Format("zkd", "zookeeper"), "zookeeper:") {
				t.Errorf("Format lacks the second server's name: %s", d.Format("zkd", "zookeeper"))
			}
		})
	}
}

// TestNormalize checks the mapping of absolute values: zxids by first
// appearance, session ids by label, the root as /R, times by ZooKeeper's
// rules only.
func TestNormalize(t *testing.T) {
	r := &runner{root: "/diff7", zx: map[int64]int{}, sess: map[int64]string{0x1234: "S1.1"}}
	st := jute.Stat{Czxid: 0x500, Mzxid: 0x500, Pzxid: 0x501, Ctime: 1000, Mtime: 1000, EphemeralOwner: 0x1234, DataLength: 3}
	got := r.resp(&jute.Create2Response{Path: "/diff7/a", Stat: st})
	want := "/R/a {czxid=z1 mzxid=z1 pzxid=z2 times-ok version=0 cversion=0 aversion=0 owner=S1.1 dataLength=3 numChildren=0}"
	if got != want {
		t.Errorf("create2:\n got %s\nwant %s", got, want)
	}
	// Same absolute values map to the same symbols afterwards.
	if got := r.zxid(0x501); got != "z2" {
		t.Errorf("zxid 0x501 = %s, want z2", got)
	}
	tests := []struct {
		name string
		st   jute.Stat
		want string
	}{
		{"changed later", jute.Stat{Czxid: 1, Mzxid: 2, Ctime: 5, Mtime: 9}, "times-ok"},
		{"changed in the same ms", jute.Stat{Czxid: 1, Mzxid: 2, Ctime: 5, Mtime: 5}, "times-ok"},
		{"unchanged but mtime moved", jute.Stat{Czxid: 1, Mzxid: 1, Ctime: 5, Mtime: 6}, "unchanged-but-mtime!=ctime"},
		{"mtime before ctime", jute.Stat{Czxid: 1, Mzxid: 2, Ctime: 5, Mtime: 4}, "mtime<ctime"},
		{"no ctime", jute.Stat{Czxid: 1, Mzxid: 1}, "ctime=0"},
		{"foreign session", jute.Stat{EphemeralOwner: 99, Ctime: 1, Mtime: 1}, "owner=unknown(0x63)"},
	}
	for _, tt := range tests {
		if got := r.stat(&tt.st); !strings.Contains(got, tt.want) {
			t.Errorf("%s: %s lacks %s", tt.name, got, tt.want)
		}
	}
	if got := r.resp(&jute.GetChildrenResponse{Children: []string{"b", "a", "c"}}); got != "[a b c]" {
		t.Errorf("children = %s, want sorted [a b c]", got)
	}
	if got := r.resp(&jute.GetEphemeralsResponse{Ephemerals: []string{"/diff7/b", "/diff7/a/x"}}); got != "[/R/a/x /R/b]" {
		t.Errorf("ephemerals = %s", got)
	}
	if got, want := r.path("/diff70/a"), "/diff70/a"; got != want {
		t.Errorf("path of a sibling root = %s, want it unmapped", got)
	}
}

func TestDigest(t *testing.T) {
	if got, want := Digest("super:test"), "super:D/InIHSb7yEEbrWz8b9l71RjZJU="; got != want {
		t.Errorf("Digest = %s, want %s", got, want)
	}
}

func TestOpString(t *testing.T) {
	tests := []struct {
		op   Op
		want string
	}{
		{Op{Session: 1, Kind: KCreate, Code: jute.OpCreateTTL, Path: "a", Mode: 5, TTL: 100, Data: "d", ACL: worldAll},
			`s1 createTTL /R/a mode=5 data="d" acl=[world:anyone:31] ttl=100`},
		{Op{Kind: KDelete, Path: "", Version: -1}, "s0 delete /R version=-1"},
		{Op{Kind: KMultiRead, Sub: []Op{{Kind: KGetData, Path: "a"}, {Kind: KGetChildren, Path: "b", Watch: true}}},
			"s0 multiRead [getData /R/a watch=false; getChildren /R/b watch=true]"},
		{Op{Session: 2, Kind: KAuth, Data: "u1:p1"}, "s2 addAuth digest u1:p1"},
	}
	for _, tt := range tests {
		if got := tt.op.String(); got != tt.want {
			t.Errorf("String = %s, want %s", got, tt.want)
		}
	}
}
