package main

import (
	"strings"
	"testing"
)

// FuzzParseLine feeds arbitrary command lines through every parser the shell
// applies to user input: none may panic, and option parsing must keep every
// word that is not an option.
func FuzzParseLine(f *testing.F) {
	for _, seed := range []string{
		"ls -s -w -R /", `create -e -s /a "x y" world:anyone:cdrwa`, "set -v3 /a -- -1",
		"reconfig -add 1=h:1:2;3 -remove 2 -v 10", "setAcl -R /a digest:u:h:rw,ip:10.0.0.0/8:r",
		`"unterminated`, "removewatches /a -cdal", "get -", "x -v",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words := tokenize(line)
		for _, w := range words {
			if strings.ContainsAny(w, " \t\n") && !strings.ContainsAny(line, `"'`) {
				t.Fatalf("word %q of %q contains space though the line has no quotes", w, line)
			}
		}
		for _, c := range commands {
			p, err := parseOpts(words, c.spec)
			if err != nil || len(words) == 0 {
				continue
			}
			if p.args[0] != words[0] {
				t.Fatalf("command name %q became %q", words[0], p.args[0])
			}
			for _, a := range p.args[1:] {
				if !contains(words, a) {
					t.Fatalf("argument %q is not one of the words %q", a, words)
				}
			}
		}
		for _, w := range words {
			parseACL(w)
			validatePath(w, false)
			validatePath(w, true)
			splitChroot(w)
		}
	})
}
