package main

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"
	"unicode"
	"unicode/utf8"
)

// generator holds a parsed .jute file and spec while it writes Go.
type generator struct {
	f     *file
	s     *spec
	byRef map[string]*class // "module.Class" → class
	emit  map[string]*class // short name → class, for the classes to emit
	buf   bytes.Buffer
}

// generate returns the gofmt-ed Go source of package pkg for the classes
// that s names, with header as its first comment line.
func generate(f *file, s *spec, pkg, header string) ([]byte, error) {
	g := &generator{f: f, s: s, byRef: map[string]*class{}, emit: map[string]*class{}}
	for _, c := range f.Classes {
		ref := c.Module + "." + c.Name
		if g.byRef[ref] != nil {
			return nil, fmt.Errorf("class %s declared twice", ref)
		}
		g.byRef[ref] = c
	}
	for _, name := range s.order {
		var found *class
		for _, c := range f.Classes {
			if c.Name != name {
				continue
			}
			if found != nil {
				return nil, fmt.Errorf("class %s is in modules %s and %s; Go needs one", name, found.Module, c.Module)
			}
			found = c
		}
		if found == nil {
			return nil, fmt.Errorf("spec names class %s, which the .jute file does not declare", name)
		}
		g.emit[name] = found
	}
	if err := g.check(); err != nil {
		return nil, err
	}

	g.printf("%s\n\npackage %s\n", header, pkg)
	for _, c := range f.Classes {
		if g.emit[c.Name] == c {
			g.record(c)
		}
	}
	out, err := format.Source(g.buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gofmt of the generated code: %v", err)
	}
	return out, nil
}

func (g *generator) printf(format string, args ...any) { fmt.Fprintf(&g.buf, format, args...) }

// resolve finds the class a record type names: a qualified name exactly,
// an unqualified one in the referring class's module.
func (g *generator) resolve(from *class, ref string) *class {
	if strings.Contains(ref, ".") {
		return g.byRef[ref]
	}
	return g.byRef[from.Module+"."+ref]
}

// check makes sure every emitted field has a type the generator can write,
// every record it refers to is emitted too, and every field line of the
// spec was used.
func (g *generator) check() error {
	for _, name := range g.s.order {
		c := g.emit[name]
		for _, fl := range c.Fields {
			key := c.Name + "." + fl.Name
			fs, ok := g.s.field[key]
			if ok {
				fs.used = true
				g.s.field[key] = fs
				if fs.GoType != "" && fl.Type.Kind != kindInt {
					return fmt.Errorf("spec line %d: %s is %s; only an int field can take a Go type", fs.line, key, fl.Type)
				}
			}
			if err := g.checkType(c, fl.Type, false); err != nil {
				return fmt.Errorf("%s: %v", key, err)
			}
		}
	}
	for key, fs := range g.s.field {
		if !fs.used {
			return fmt.Errorf("spec line %d: %s is not a field of an emitted class", fs.line, key)
		}
	}
	return nil
}

func (g *generator) checkType(c *class, t *typ, inVector bool) error {
	switch t.Kind {
	case kindInt, kindLong, kindBoolean, kindUstring, kindBuffer:
		if inVector && t.Kind != kindUstring {
			return fmt.Errorf("vector<%s> is not supported", t)
		}
		return nil
	case kindVector:
		if inVector {
			return fmt.Errorf("nested vector %s is not supported", t)
		}
		return g.checkType(c, t.Elem, true)
	case kindRecord:
		r := g.resolve(c, t.Ref)
		if r == nil {
			return fmt.Errorf("record %s is not declared", t.Ref)
		}
		if g.emit[r.Name] != r {
			return fmt.Errorf("record %s is not emitted; add it to the spec", t.Ref)
		}
		return nil
	}
	return fmt.Errorf("type %s is not supported", t)
}

// goName upper-cases the first letter of a jute name.
func goName(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// goType is the Go type of a field.
func (g *generator) goType(c *class, fl field) string {
	if fs := g.s.field[c.Name+"."+fl.Name]; fs.GoType != "" {
		return fs.GoType
	}
	t := fl.Type
	switch t.Kind {
	case kindInt:
		return "int32"
	case kindLong:
		return "int64"
	case kindBoolean:
		return "bool"
	case kindUstring:
		return "string"
	case kindBuffer:
		return "[]byte"
	case kindVector:
		if t.Elem.Kind == kindUstring {
			return "[]string"
		}
		return "[]" + g.resolve(c, t.Elem.Ref).Name
	}
	return g.resolve(c, t.Ref).Name
}

// primitiveCall names the Encoder and Decoder methods of a primitive.
var primitiveCall = map[kind]string{
	kindInt:     "Int",
	kindLong:    "Long",
	kindBoolean: "Bool",
	kindUstring: "String",
	kindBuffer:  "Buffer",
}

// codec returns the statements that encode and decode one field of r.
func (g *generator) codec(c *class, fl field) (enc, dec string) {
	f := "r." + goName(fl.Name)
	t := fl.Type
	switch t.Kind {
	case kindRecord:
		return f + ".Encode(e)", f + ".Decode(d)"
	case kindVector:
		name := "Strings"
		if t.Elem.Kind == kindRecord {
			name = g.resolve(c, t.Elem.Ref).Name + "s"
		}
		return "e.Write" + name + "(" + f + ")", f + " = d.Read" + name + "()"
	}
	call := primitiveCall[t.Kind]
	if gt := g.s.field[c.Name+"."+fl.Name].GoType; gt != "" {
		return "e.Write" + call + "(int32(" + f + "))", f + " = " + gt + "(d.Read" + call + "())"
	}
	return "e.Write" + call + "(" + f + ")", f + " = d.Read" + call + "()"
}

// minSize is the fewest bytes an encoding of t takes, which bounds the
// element count a vector's remaining bytes can hold.
func (g *generator) minSize(c *class, t *typ) int {
	switch t.Kind {
	case kindBoolean, kindByte:
		return 1
	case kindLong, kindDouble:
		return 8
	case kindRecord:
		r := g.resolve(c, t.Ref)
		n := 0
		for _, fl := range r.Fields {
			n += g.minSize(r, fl.Type)
		}
		return n
	}
	return 4 // int, float, and the length prefix of ustring, buffer, vector, map
}

// usedInVector reports whether an emitted class has a vector of r.
func (g *generator) usedInVector(r *class) bool {
	for _, c := range g.emit {
		for _, fl := range c.Fields {
			if fl.Type.Kind == kindVector && fl.Type.Elem.Kind == kindRecord && g.resolve(c, fl.Type.Elem.Ref) == r {
				return true
			}
		}
	}
	return false
}

// record writes a class's type, its Encode and Decode, and, when another
// record holds a vector of it, the vector's Encoder and Decoder methods.
func (g *generator) record(c *class) {
	g.printf("\n%s", comment(g.s.doc[c.Name]))
	g.printf("type %s struct {\n", c.Name)
	for _, fl := range c.Fields {
		g.printf("%s %s", goName(fl.Name), g.goType(c, fl))
		if text := g.s.field[c.Name+"."+fl.Name].Comment; text != "" {
			g.printf(" // %s", text)
		}
		g.printf("\n")
	}
	g.printf("}\n")

	var enc, dec strings.Builder
	for _, fl := range c.Fields {
		e, d := g.codec(c, fl)
		enc.WriteString("\t" + e + "\n")
		dec.WriteString("\t" + d + "\n")
	}
	g.printf("\n// Encode writes the record.\nfunc (r *%s) Encode(e *Encoder) {\n%s}\n", c.Name, enc.String())
	g.printf("\n// Decode reads the record.\nfunc (r *%s) Decode(d *Decoder) {\n%s}\n", c.Name, dec.String())

	if !g.usedInVector(c) {
		return
	}
	n := c.Name
	least := g.minSize(c, &typ{Kind: kindRecord, Ref: c.Module + "." + n})
	g.printf("\n%s", comment(fmt.Sprintf("Write%ss appends a vector of %s records; nil is written as -1.", n, n)))
	g.printf(`func (e *Encoder) Write%[1]ss(v []%[1]s) {
	if v == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(v)))
	for i := range v {
		v[i].Encode(e)
	}
}
`, n)
	g.printf("\n%s", comment(fmt.Sprintf("Read%ss reads a vector of %s records; -1 gives nil. "+
		"Each takes at least %d bytes, which bounds the count before anything is allocated.", n, n, least)))
	g.printf(`func (d *Decoder) Read%[1]ss() []%[1]s {
	n := d.VectorLen(%[2]d)
	if n < 0 || d.err != nil {
		return nil
	}
	v := make([]%[1]s, n)
	for i := 0; i < n && d.err == nil; i++ {
		v[i].Decode(d)
	}
	return v
}
`, n, least)
}

// comment turns text into // lines of at most about 80 columns.
func comment(text string) string {
	var b, line strings.Builder
	for _, w := range strings.Fields(text) {
		if line.Len() > 0 && line.Len()+1+len(w) > 77 {
			b.WriteString("// " + line.String() + "\n")
			line.Reset()
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(w)
	}
	if line.Len() > 0 {
		b.WriteString("// " + line.String() + "\n")
	}
	return b.String()
}
