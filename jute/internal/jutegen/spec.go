package main

import (
	"fmt"
	"go/token"
	"strings"
)

// spec says which classes of the .jute file to emit and what the .jute
// language cannot: each record's doc comment, a comment for a field, and a
// named Go type for an int field (ReplyHeader.err is a jute.Code).
//
// Its lines are
//
//	# a comment
//	Class: doc comment, starting with Class
//	Class.field: trailing comment for the field
//	Class.field GoType
//	Class.field GoType: trailing comment for the field
type spec struct {
	// order lists the classes to emit as the spec names them.
	order []string
	doc   map[string]string // class → doc comment
	field map[string]fieldSpec
}

// fieldSpec is what a spec line says about one field.
type fieldSpec struct {
	GoType  string
	Comment string
	line    int
	used    bool
}

// parseSpec parses a spec file.
func parseSpec(src string) (*spec, error) {
	s := &spec{doc: map[string]string{}, field: map[string]fieldSpec{}}
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		head, text, hasText := strings.Cut(line, ":")
		text = strings.TrimSpace(text)
		words := strings.Fields(head)
		if len(words) == 0 || len(words) > 2 {
			return nil, fmt.Errorf("spec line %d: want \"Class: doc\", \"Class.field [GoType][: comment]\"", n)
		}
		cls, fld, isField := strings.Cut(words[0], ".")
		// A jute field may be named after a Go keyword (type), so only
		// its upper-cased Go name must be an identifier.
		if !token.IsIdentifier(cls) || isField && !token.IsIdentifier(goName(fld)) {
			return nil, fmt.Errorf("spec line %d: bad name %q", n, words[0])
		}
		if !isField {
			if len(words) != 1 || !hasText || text == "" {
				return nil, fmt.Errorf("spec line %d: class %s needs a doc comment after a colon", n, cls)
			}
			if _, dup := s.doc[cls]; dup {
				return nil, fmt.Errorf("spec line %d: class %s named twice", n, cls)
			}
			if w, _, _ := strings.Cut(text, " "); w != cls {
				return nil, fmt.Errorf("spec line %d: doc comment of %s must start with its name", n, cls)
			}
			s.order = append(s.order, cls)
			s.doc[cls] = text
			continue
		}
		fs := fieldSpec{Comment: text, line: n}
		if len(words) == 2 {
			if !token.IsIdentifier(words[1]) {
				return nil, fmt.Errorf("spec line %d: bad Go type %q", n, words[1])
			}
			fs.GoType = words[1]
		}
		if fs.GoType == "" && fs.Comment == "" {
			return nil, fmt.Errorf("spec line %d: %s says nothing", n, words[0])
		}
		if _, dup := s.field[words[0]]; dup {
			return nil, fmt.Errorf("spec line %d: field %s named twice", n, words[0])
		}
		s.field[words[0]] = fs
	}
	return s, nil
}
