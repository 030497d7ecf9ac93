package layers

import (
	"fmt"
	"go/build"
	"go/token"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// module is the module path, the prefix of every path checked.
const module = "github.com/zkd/zkd"

// ranks gives each top-level directory its layer: a package may import
// only a lower rank or its own directory's packages. Keep it in step with
// doc.go, README.md and DESIGN.md.
var ranks = map[string]int{
	"jute":     0,
	"datatree": 1,
	"session":  1,
	"zab":      2,
	"server":   3,
	"quorum":   3,
	"compat":   4,
	"cmd":      5,
}

// edge is one import line: from package From (module-relative) to To, at
// Pos, in test code or not.
type edge struct {
	From, To, Pos string
	Test          bool
}

// top returns the top-level directory of a module-relative path.
func top(rel string) string {
	t, _, _ := strings.Cut(rel, "/")
	return t
}

// harness reports whether a package is a test harness (its last element
// ends in "test", as quorum/quorumtest), whose imports count as test code.
func harness(rel string) bool { return strings.HasSuffix(path.Base(rel), "test") }

// check returns why e breaks the layering, or "" when it does not.
func check(e edge) string {
	from, to := top(e.From), top(e.To)
	rf, okf := ranks[from]
	rt, okt := ranks[to]
	switch {
	case !okf:
		return fmt.Sprintf("%s: %s is not a layer (add it to ranks, doc.go and README.md)", e.Pos, from)
	case !okt:
		return fmt.Sprintf("%s: %s imports %s: %s is not a layer", e.Pos, e.From, e.To, to)
	case from == to, rt < rf:
		return ""
	case to == "compat" && (e.Test || harness(e.From)):
		return ""
	case rt == rf:
		return fmt.Sprintf("%s: %s imports %s: %s and %s are siblings and may not import each other", e.Pos, e.From, e.To, from, to)
	}
	return fmt.Sprintf("%s: %s imports %s: %s (layer %d) may not import %s (layer %d), a layer above it", e.Pos, e.From, e.To, from, rf, to, rt)
}

func TestCheck(t *testing.T) {
	tests := []struct {
		e    edge
		want string // a substring of the complaint; "" for none
	}{
		{edge{From: "quorum", To: "server/tlsconf"}, "siblings"},
		{edge{From: "server", To: "quorum"}, "siblings"},
		{edge{From: "datatree", To: "session"}, "siblings"},
		{edge{From: "zab", To: "server"}, "a layer above"},
		{edge{From: "jute", To: "datatree"}, "a layer above"},
		{edge{From: "server/sasl", To: "cmd/zkd"}, "a layer above"},
		{edge{From: "quorum", To: "compat/zkproc"}, "a layer above"},
		{edge{From: "quorum", To: "compat/zkproc", Test: true}, ""},
		{edge{From: "quorum/quorumtest", To: "compat/zkproc"}, ""},
		{edge{From: "zab", To: "cmd/zkd", Test: true}, "a layer above"},
		{edge{From: "tools/x", To: "jute"}, "not a layer"},
		{edge{From: "server", To: "tools/x"}, "not a layer"},
		{edge{From: "server", To: "zab/tlsconf"}, ""},
		{edge{From: "quorum", To: "zab/tlsconf"}, ""},
		{edge{From: "server", To: "server/sasl"}, ""},
		{edge{From: "cmd/zkd", To: "quorum"}, ""},
		{edge{From: "cmd/zkbench", To: "compat/zkwire"}, ""},
		{edge{From: "zab", To: "session"}, ""},
		{edge{From: "datatree", To: "jute"}, ""},
	}
	for _, tt := range tests {
		got := check(tt.e)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("check(%+v) = %q, want one containing %q", tt.e, got, tt.want)
		}
	}
}

// edges lists every import of a module package by a package of the module,
// its tests included.
func edges(t *testing.T) []edge {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Dir}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var es []edge
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		imp, dir, _ := strings.Cut(strings.TrimSpace(line), " ")
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", imp, err)
		}
		from := strings.TrimPrefix(imp, module+"/")
		add := func(pos map[string][]token.Position, test bool) {
			for to, ps := range pos {
				rel, ok := strings.CutPrefix(to, module+"/")
				if !ok {
					continue
				}
				pos := fmt.Sprintf("%s:%d", path.Join(from, path.Base(ps[0].Filename)), ps[0].Line)
				es = append(es, edge{From: from, To: rel, Pos: pos, Test: test})
			}
		}
		add(p.ImportPos, false)
		add(p.TestImportPos, true)
		add(p.XTestImportPos, true)
	}
	return es
}

func TestLayers(t *testing.T) {
	var bad []string
	for _, e := range edges(t) {
		if why := check(e); why != "" {
			bad = append(bad, why)
		}
	}
	slices.Sort(bad)
	for _, b := range slices.Compact(bad) {
		t.Error(b)
	}
}
