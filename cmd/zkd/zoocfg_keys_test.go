package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab/tlsconf"
)

func TestUnknownKeyMessage(t *testing.T) {
	tests := []struct{ key, want string }{
		{"maxClientCnxn", "maxClientCnxn: unknown key; did you mean maxClientCnxns?"},
		{"ticktime", "ticktime: unknown key; did you mean tickTime?"},
		{"tickTiem", "tickTiem: unknown key; did you mean tickTime?"},
		{"ssl.keystore.location", "ssl.keystore.location: unknown key; did you mean ssl.keyStore.location?"},
		{"sever.1", "sever.1: unknown key; did you mean server.N?"},
		{"zookeeper.sslQuorum", "zookeeper.sslQuorum: unknown key; did you mean sslQuorum?"},
		{"zkd.log.levle", "zkd.log.levle: unknown key; did you mean zkd.log.level?"},
		{"fooBarBaz", "fooBarBaz: unknown key; zkd does not read it"},
		{"x", "x: unknown key; zkd does not read it"},
	}
	for _, tt := range tests {
		if got := unknownKeyMessage(tt.key); got != tt.want {
			t.Errorf("unknownKeyMessage(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// TestParseUnknownKeys: parsing sorts the keys set into known, accepted
// without effect and unknown; an unknown key still becomes a system
// property, as in ZooKeeper, and refusals stay refusals.
func TestParseUnknownKeys(t *testing.T) {
	tests := []struct {
		cfg               string
		unknown, noEffect []string
	}{
		{"tickTime=2000\nmaxClientCnxns=10\n", nil, nil},
		{"maxClientCnxn=10\n", []string{"maxClientCnxn"}, nil},
		{"forceSync=no\ngroup.1=1:2\nstandaloneEnabled=false\n", nil, []string{"forceSync", "group.1", "standaloneEnabled"}},
		{"server.1=127.0.0.1:2888:3888\nauthProvider.1=x\nssl.quorum.protocol=TLSv1.3\n", nil, nil},
		{"tickTiem=2000\nsslQuorum=false\nbogus=1\n", []string{"tickTiem", "bogus"}, nil},
	}
	for _, tt := range tests {
		c, err := cfgFrom(t, tt.cfg)
		if err != nil {
			t.Fatalf("%q: %v", tt.cfg, err)
		}
		if !slices.Equal(c.UnknownKeys, tt.unknown) || !slices.Equal(c.NoEffect, tt.noEffect) {
			t.Errorf("%q: unknown %q, no effect %q; want %q, %q", tt.cfg, c.UnknownKeys, c.NoEffect, tt.unknown, tt.noEffect)
		}
		for _, k := range tt.unknown {
			if _, ok := c.Props["zookeeper."+k]; !ok {
				t.Errorf("%q: unknown key %s is not a system property", tt.cfg, k)
			}
		}
	}
	// A refused key is known: it stops zkd rather than draw a warning.
	c, err := cfgFrom(t, "quorum.auth.enableSasl=true\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := configs(c, zap.NewNop()); len(c.UnknownKeys) != 0 || err == nil {
		t.Errorf("quorum.auth.enableSasl=true: unknown %q, refused %v", c.UnknownKeys, err)
	}
}

// docKeyRow is a row of docs/zoo-cfg.md's table: | `key` | status | … |.
var docKeyRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([a-z ]+?) \\|")

// TestZooCfgKeysDocumented: docs/zoo-cfg.md has one row per key of
// zooCfgKeys, with the same status, and no other.
func TestZooCfgKeysDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/zoo-cfg.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]string{}
	for _, m := range docKeyRow.FindAllStringSubmatch(string(b), -1) {
		if _, dup := doc[m[1]]; dup {
			t.Errorf("docs/zoo-cfg.md: %s has two rows", m[1])
		}
		doc[m[1]] = m[2]
	}
	for _, k := range zooCfgKeys {
		switch st, ok := doc[k.key]; {
		case !ok:
			t.Errorf("docs/zoo-cfg.md lacks a row for %s (%s)", k.key, k.status)
		case st != string(k.status):
			t.Errorf("docs/zoo-cfg.md: %s is %q, but zkd has it %q", k.key, st, k.status)
		}
		delete(doc, k.key)
	}
	for k := range doc {
		t.Errorf("docs/zoo-cfg.md lists %s, which zkd does not read (add it to zooCfgKeys or remove the row)", k)
	}
}

// TestZooCfgKeysCoverParser: every key cmd/zkd's code reads is in
// zooCfgKeys: the cases of zooCfg.set, the names given to zooCfg.prop,
// propBool and propInt or indexing Props (constant, or built from a
// function's table of names), and the ssl.* and ssl.quorum.* names
// tlsconf.FromProps asks for.
func TestZooCfgKeysCoverParser(t *testing.T) {
	read := map[string]string{} // zoo.cfg key → where it is read
	for _, prefix := range []string{"zookeeper.ssl.", "zookeeper.ssl.quorum."} {
		tlsconf.FromProps(func(name string) (string, bool) {
			read[strings.TrimPrefix(name, "zookeeper.")] = "tlsconf.FromProps"
			return "", false
		}, prefix)
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pkgs["main"].Files {
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				for name, pos := range keysReadIn(fset, fn) {
					read[name] = pos
				}
			}
		}
	}
	if len(read) < 50 {
		t.Fatalf("found only %d keys read; the scan is broken", len(read))
	}
	for k, pos := range read {
		if _, ok := keyStatusOf(k); !ok {
			t.Errorf("%s reads %s, which zooCfgKeys (and docs/zoo-cfg.md) lack", pos, k)
		}
	}
}

// keysReadIn returns the zoo.cfg keys fn reads, each with a position.
func keysReadIn(fset *token.FileSet, fn *ast.FuncDecl) map[string]string {
	consts := map[string]string{}
	var tables []string // string literals heading fn's composite literals
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if i < len(n.Values) {
					if s, ok := strLit(n.Values[i]); ok {
						consts[name.Name] = s
					}
				}
			}
		case *ast.CompositeLit:
			for _, e := range n.Elts {
				if c, ok := e.(*ast.CompositeLit); ok && len(c.Elts) > 0 {
					e = c.Elts[0]
				}
				if s, ok := strLit(e); ok {
					tables = append(tables, s)
				}
			}
		}
		return true
	})
	out := map[string]string{}
	add := func(name string, at token.Pos) {
		if rest, ok := strings.CutPrefix(name, "zookeeper."); ok {
			name = rest
		}
		out[name] = fset.Position(at).String()
	}
	// arg adds the key an expression names: a constant, a constant
	// prefix plus a table entry, or any entry of fn's tables.
	arg := func(e ast.Expr) {
		if s, ok := strLit(e); ok {
			add(s, e.Pos())
			return
		}
		prefix := ""
		if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.ADD {
			if id, ok := b.X.(*ast.Ident); ok {
				prefix = consts[id.Name]
				if s, ok := strLit(b.Y); ok {
					add(prefix+s, e.Pos())
					return
				}
			}
		}
		for _, s := range tables {
			add(prefix+s, e.Pos())
		}
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) > 0 &&
				(sel.Sel.Name == "prop" || sel.Sel.Name == "propBool" || sel.Sel.Name == "propInt") {
				arg(n.Args[0])
			}
		case *ast.IndexExpr:
			// Props["x"] without the zookeeper. prefix is a -D property
			// only (java.security.auth.login.config), not a zoo.cfg key.
			if sel, ok := n.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Props" {
				if s, ok := strLit(n.Index); ok && strings.HasPrefix(s, "zookeeper.") {
					add(s, n.Pos())
				}
			}
		case *ast.SwitchStmt:
			// zooCfg.set's switch key { case "tickTime": … }.
			if id, ok := n.Tag.(*ast.Ident); ok && id.Name == "key" {
				for _, st := range n.Body.List {
					for _, e := range st.(*ast.CaseClause).List {
						if s, ok := strLit(e); ok {
							add(s, e.Pos())
						}
					}
				}
			}
		}
		return true
	})
	return out
}

// strLit returns the value of a string literal.
func strLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

// TestIntegration_UnknownKeyWarning: a zkd started with a misspelt key
// serves, and its log has one WARN line naming the key and the closest
// known one; the keys zkproc writes itself draw none.
func TestIntegration_UnknownKeyWarning(t *testing.T) {
	s := zkproc.StartZkd(t, zkproc.Options{ExtraCfg: map[string]string{"maxClientCnxn": "10"}})
	b, err := os.ReadFile(s.LogPath) // StartZkd returns once zkd serves, after the warning
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.Lines(string(b)) {
		if strings.Contains(l, "unknown key") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "\tWARN\t") ||
		!strings.Contains(lines[0], "zoo.cfg: maxClientCnxn: unknown key; did you mean maxClientCnxns?") {
		t.Fatalf("log lines about unknown keys: %q", lines)
	}
}
