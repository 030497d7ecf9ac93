package main

import (
	"regexp"
	"strings"
)

// argsPattern splits a command line as zkCli's MyCommandOptions does: runs
// of non-space characters not starting with a quote, or whole "double" or
// 'single' quoted strings.
var argsPattern = regexp.MustCompile(`\s*([^"'\s]\S*|"[^"]*"|'[^']*')\s*`)

// tokenize splits a command line into words, stripping one pair of
// surrounding quotes from quoted words. Text zkCli's pattern cannot match
// (an unterminated quote) is skipped, as zkCli skips it.
func tokenize(line string) []string {
	var out []string
	for _, m := range argsPattern.FindAllStringSubmatch(line, -1) {
		w := m[1]
		if len(w) >= 2 && (w[0] == '"' || w[0] == '\'') && w[len(w)-1] == w[0] {
			w = w[1 : len(w)-1]
		}
		out = append(out, w)
	}
	return out
}

// optSpec describes a command's options the way commons-cli's PosixParser
// reads them for zkCli: single-letter flags that may be bundled (-sw), and
// options that take a value, either single letters (-v 3, -v3) or whole
// words (-members list).
type optSpec struct {
	flags string   // single-letter options without a value
	vals  string   // single-letter options with a value
	words []string // multi-letter options with a value
}

// parsedArgs is a command line after option parsing.
type parsedArgs struct {
	opts map[string]string // option name to value ("" for flags)
	args []string          // the command name followed by its other arguments
}

// has reports whether option name was given.
func (p *parsedArgs) has(name string) bool {
	_, ok := p.opts[name]
	return ok
}

// parseOpts separates options from arguments. Options may appear anywhere
// after the command name (as with PosixParser); "--" ends them. The error
// texts are commons-cli's.
func parseOpts(words []string, spec optSpec) (*parsedArgs, error) {
	p := &parsedArgs{opts: map[string]string{}}
	if len(words) == 0 {
		return p, nil
	}
	p.args = append(p.args, words[0])
	for i := 1; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			p.args = append(p.args, words[i+1:]...)
			break
		}
		if len(w) < 2 || w[0] != '-' {
			p.args = append(p.args, w)
			continue
		}
		name := w[1:]
		if contains(spec.words, name) {
			if i+1 >= len(words) {
				return nil, failf("org.apache.commons.cli.MissingArgumentException: Missing argument for option: %s", name)
			}
			i++
			p.opts[name] = words[i]
			continue
		}
		for j := 0; j < len(name); j++ {
			c := name[j : j+1]
			switch {
			case strings.Contains(spec.flags, c):
				p.opts[c] = ""
			case strings.Contains(spec.vals, c):
				if j+1 < len(name) {
					p.opts[c] = name[j+1:]
				} else if i+1 < len(words) {
					i++
					p.opts[c] = words[i]
				} else {
					return nil, failf("org.apache.commons.cli.MissingArgumentException: Missing argument for option: %s", c)
				}
				j = len(name)
			default:
				if j == 0 {
					return nil, failf("org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: %s", w)
				}
				return nil, failf("org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -%s", c)
			}
		}
	}
	return p, nil
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validatePath checks a znode path as ZooKeeper's PathUtils.validatePath
// does before a request is sent; sequential creates may end in "/".
func validatePath(path string, sequential bool) error {
	if path == "" {
		return failf("Path length must be > 0")
	}
	if path[0] != '/' {
		return failf("Path must start with / character")
	}
	if len(path) == 1 {
		return nil
	}
	if path[len(path)-1] == '/' && !sequential {
		return failf("Path must not end with / character")
	}
	runes := []rune(path)
	for i := 1; i < len(runes); i++ {
		c, last := runes[i], runes[i-1]
		next := rune(0)
		if i+1 < len(runes) {
			next = runes[i+1]
		}
		switch {
		case c == 0:
			return failf("null character not allowed @%d", i)
		case c == '/' && last == '/':
			return failf("empty node name specified @%d", i)
		case c == '.' && last == '.' && runes[i-2] == '/' && (next == '/' || i+1 == len(runes)):
			return failf("relative paths not allowed @%d", i)
		case c == '.' && last == '/' && (next == '/' || i+1 == len(runes)):
			return failf("relative paths not allowed @%d", i)
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0 && c <= 0xffff:
			return failf("invalid character @%d", i)
		}
	}
	return nil
}
