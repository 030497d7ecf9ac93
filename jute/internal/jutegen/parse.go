package main

import (
	"fmt"
	"strings"
	"unicode"
)

// kind is the kind of a jute field type.
type kind int

const (
	kindByte kind = iota
	kindBoolean
	kindInt
	kindLong
	kindFloat
	kindDouble
	kindUstring
	kindBuffer
	kindVector
	kindMap
	kindRecord
)

// primitives maps the jute language's primitive type keywords to kinds.
var primitives = map[string]kind{
	"byte":    kindByte,
	"boolean": kindBoolean,
	"int":     kindInt,
	"long":    kindLong,
	"float":   kindFloat,
	"double":  kindDouble,
	"ustring": kindUstring,
	"buffer":  kindBuffer,
}

// typ is a field type: a primitive, a vector or map of types, or a record
// named by Ref (qualified with its module or not, as written).
type typ struct {
	Kind kind
	Elem *typ   // vector element, map value
	Key  *typ   // map key
	Ref  string // record name, for kindRecord
}

// String gives the type as the jute language writes it.
func (t *typ) String() string {
	switch t.Kind {
	case kindVector:
		return "vector<" + t.Elem.String() + ">"
	case kindMap:
		return "map<" + t.Key.String() + "," + t.Elem.String() + ">"
	case kindRecord:
		return t.Ref
	}
	for k, v := range primitives {
		if v == t.Kind {
			return k
		}
	}
	return "?"
}

// field is one field of a class.
type field struct {
	Name string
	Type *typ
}

// class is one jute record declaration.
type class struct {
	Module string
	Name   string
	Fields []field
}

// file is a parsed .jute file: its classes in declaration order.
type file struct {
	Classes []*class
}

// lexeme is one lexical token: an identifier (dots allowed, so qualified
// names are one lexeme) or a one-character punctuation mark.
type lexeme struct {
	text string
	line int
}

// lex splits jute source into tokens, dropping white space and both
// comment forms (// to end of line and /* ... */).
func lex(src string) ([]lexeme, error) {
	var toks []lexeme
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case strings.ContainsRune("{}<>;,", rune(c)):
			toks = append(toks, lexeme{string(c), line})
			i++
		case isIdentByte(c):
			j := i
			for j < len(src) && (isIdentByte(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, lexeme{src[i:j], line})
			i = j
		default:
			return nil, fmt.Errorf("line %d: unexpected %q", line, c)
		}
	}
	return toks, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c < 0x80 && (unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)))
}

// parser reads tokens of the jute language:
//
//	file   = { "module" name "{" { class } "}" }
//	class  = "class" name "{" { type name ";" } "}"
//	type   = primitive | name | "vector" "<" type ">" | "map" "<" type "," type ">"
type parser struct {
	toks []lexeme
	pos  int
}

// parse parses a whole .jute file.
func parse(src string) (*file, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	f := &file{}
	for !p.done() {
		if err := p.module(f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) done() bool { return p.pos >= len(p.toks) }

// next returns the next lexeme's text, or "" at the end of input.
func (p *parser) next() string {
	if p.done() {
		p.pos++
		return ""
	}
	t := p.toks[p.pos]
	p.pos++
	return t.text
}

func (p *parser) peek() string {
	if p.done() {
		return ""
	}
	return p.toks[p.pos].text
}

// errorf reports an error at the line of the last lexeme read.
func (p *parser) errorf(format string, args ...any) error {
	line := 0
	if n := len(p.toks); n > 0 {
		line = p.toks[min(max(p.pos-1, 0), n-1)].line
	}
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

func (p *parser) expect(want string) error {
	if got := p.next(); got != want {
		return p.errorf("want %q, got %q", want, got)
	}
	return nil
}

// name reads an identifier, dots allowed only when qualified is set.
func (p *parser) name(what string, qualified bool) (string, error) {
	s := p.next()
	if s == "" || !isIdentByte(s[0]) || unicode.IsDigit(rune(s[0])) || (!qualified && strings.Contains(s, ".")) {
		return "", p.errorf("want %s name, got %q", what, s)
	}
	return s, nil
}

// opening reads `keyword name {` and returns the name.
func (p *parser) opening(keyword string, qualified bool) (string, error) {
	if err := p.expect(keyword); err != nil {
		return "", err
	}
	name, err := p.name(keyword, qualified)
	if err != nil {
		return "", err
	}
	return name, p.expect("{")
}

func (p *parser) module(f *file) error {
	mod, err := p.opening("module", true)
	if err != nil {
		return err
	}
	for p.peek() != "}" {
		c, err := p.class(mod)
		if err != nil {
			return err
		}
		f.Classes = append(f.Classes, c)
	}
	return p.expect("}")
}

func (p *parser) class(mod string) (*class, error) {
	name, err := p.opening("class", false)
	if err != nil {
		return nil, err
	}
	c := &class{Module: mod, Name: name}
	for p.peek() != "}" {
		t, err := p.typ()
		if err != nil {
			return nil, err
		}
		fname, err := p.name("field", false)
		if err != nil {
			return nil, err
		}
		if err := p.expect(";"); err != nil {
			return nil, err
		}
		c.Fields = append(c.Fields, field{Name: fname, Type: t})
	}
	return c, p.expect("}")
}

func (p *parser) typ() (*typ, error) {
	s, err := p.name("type", true)
	if err != nil {
		return nil, err
	}
	if k, ok := primitives[s]; ok {
		return &typ{Kind: k}, nil
	}
	switch s {
	case "vector":
		args, err := p.typeArgs(1)
		if err != nil {
			return nil, err
		}
		return &typ{Kind: kindVector, Elem: args[0]}, nil
	case "map":
		args, err := p.typeArgs(2)
		if err != nil {
			return nil, err
		}
		return &typ{Kind: kindMap, Key: args[0], Elem: args[1]}, nil
	}
	return &typ{Kind: kindRecord, Ref: s}, nil
}

// typeArgs reads n comma-separated types between < and >.
func (p *parser) typeArgs(n int) ([]*typ, error) {
	args := make([]*typ, n)
	for i := range args {
		sep := ","
		if i == 0 {
			sep = "<"
		}
		if err := p.expect(sep); err != nil {
			return nil, err
		}
		t, err := p.typ()
		if err != nil {
			return nil, err
		}
		args[i] = t
	}
	return args, p.expect(">")
}
