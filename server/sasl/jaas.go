package sasl

import (
	"fmt"
	"strings"
)

// LoginModule is one module line of a JAAS login configuration section.
type LoginModule struct {
	// Class is the module's class name.
	Class string
	// Flag is required, requisite, sufficient or optional.
	Flag string
	// Options are the key=value options, in file order.
	Options [][2]string
}

// Option returns the value of the named option.
func (m LoginModule) Option(name string) (string, bool) {
	for _, kv := range m.Options {
		if kv[0] == name {
			return kv[1], true
		}
	}
	return "", false
}

// JAAS is a parsed JAAS login configuration file: sections by name.
type JAAS map[string][]LoginModule

// Class names of the login modules zkd knows.
const (
	// DigestLoginModule holds DIGEST-MD5 users as user_<name> options.
	DigestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"
	// Krb5LoginModule is Kerberos (GSSAPI).
	Krb5LoginModule = "com.sun.security.auth.module.Krb5LoginModule"
)

// ParseJAAS parses the syntax of Java's default login configuration
// (sun.security.provider.ConfigFile):
//
//	Name {
//	    ModuleClass Flag key=value key="quoted value";
//	};
//
// with // and /* */ comments, double- or single-quoted strings, and
// ${name} in values replaced by the property of that name from props (an
// unknown property is an error, as ConfigFile's expansion is). A section
// name given twice is an error, as in Java.
func ParseJAAS(text string, props map[string]string) (JAAS, error) {
	lx := &lexer{s: text, line: 1}
	out := JAAS{}
	for {
		tok, err := lx.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tEOF {
			return out, nil
		}
		if tok.kind != tWord && tok.kind != tQuoted {
			return nil, lx.errorf("expected a section name, found %q", tok.text)
		}
		name := tok.text
		if _, dup := out[name]; dup {
			return nil, lx.errorf("can not specify multiple entries for %s", name)
		}
		if err := lx.expect('{'); err != nil {
			return nil, err
		}
		var mods []LoginModule
		for {
			tok, err := lx.next()
			if err != nil {
				return nil, err
			}
			if tok.kind == '}' {
				break
			}
			if tok.kind != tWord {
				return nil, lx.errorf("expected a login module class in section %s, found %q", name, tok.text)
			}
			m := LoginModule{Class: tok.text}
			flag, err := lx.next()
			if err != nil {
				return nil, err
			}
			switch f := strings.ToLower(flag.text); {
			case flag.kind == tWord && (f == "required" || f == "requisite" || f == "sufficient" || f == "optional"):
				m.Flag = f
			default:
				return nil, lx.errorf("invalid control flag %q for %s in section %s", flag.text, m.Class, name)
			}
			for {
				tok, err := lx.next()
				if err != nil {
					return nil, err
				}
				if tok.kind == ';' {
					break
				}
				if tok.kind != tWord {
					return nil, lx.errorf("expected an option name or ';' after %s in section %s, found %q", m.Class, name, tok.text)
				}
				if err := lx.expect('='); err != nil {
					return nil, err
				}
				val, err := lx.next()
				if err != nil {
					return nil, err
				}
				if val.kind != tWord && val.kind != tQuoted {
					return nil, lx.errorf("option %s of %s has no value", tok.text, m.Class)
				}
				v, err := expand(val.text, props)
				if err != nil {
					return nil, lx.errorf("option %s of %s: %v", tok.text, m.Class, err)
				}
				m.Options = append(m.Options, [2]string{tok.text, v})
			}
			mods = append(mods, m)
		}
		if err := lx.expect(';'); err != nil {
			return nil, err
		}
		if len(mods) == 0 {
			return nil, lx.errorf("section %s has no login module", name)
		}
		out[name] = mods
	}
}

// Krb5Login is the service side of a JAAS section's Krb5LoginModule:
// where the service principal's keys are.
type Krb5Login struct {
	// Principal is the principal option, service/host@REALM.
	Principal string
	// KeyTab is the keyTab option, a keytab file's path.
	KeyTab string
	// IsInitiator is the isInitiator option (default true): the login
	// gets a TGT from the KDC, which proves the keytab's keys at start.
	IsInitiator bool
}

// ServerLogin returns what section name configures for a server: the
// DIGEST-MD5 users of every user_<name> option (as ZooKeeper's
// SaslServerCallbackHandler collects them), and, when a module is
// Krb5LoginModule, its keytab and principal. ZooKeeper serves GSSAPI
// alone when the section logs a Kerberos principal in, so a caller given
// a Krb5Login serves GSSAPI and no DIGEST-MD5 user. A Krb5LoginModule
// that does not take its keys from a keytab (useKeyTab=true, storeKey=true,
// keyTab, principal), or a module zkd cannot run, is an error naming it.
func (j JAAS) ServerLogin(name string) (users map[string]string, krb *Krb5Login, err error) {
	mods, ok := j[name]
	if !ok {
		return nil, nil, fmt.Errorf("sasl: no JAAS section named %q", name)
	}
	users = map[string]string{}
	for _, m := range mods {
		switch m.Class {
		case DigestLoginModule:
		case Krb5LoginModule:
			if krb != nil {
				return nil, nil, fmt.Errorf("sasl: JAAS section %s names %s twice", name, m.Class)
			}
			if krb, err = krb5Login(name, m); err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, fmt.Errorf("sasl: JAAS section %s uses login module %s, which zkd does not implement; only %s (DIGEST-MD5) and %s (Kerberos, from a keytab) are", name, m.Class, DigestLoginModule, Krb5LoginModule)
		}
		for _, kv := range m.Options {
			if u, ok := strings.CutPrefix(kv[0], "user_"); ok {
				users[u] = kv[1]
			}
		}
	}
	return users, krb, nil
}

// krb5Login checks the options of a server's Krb5LoginModule.
func krb5Login(section string, m LoginModule) (*Krb5Login, error) {
	for _, o := range []string{"useKeyTab", "storeKey"} {
		if v, _ := m.Option(o); !strings.EqualFold(v, "true") {
			return nil, fmt.Errorf("sasl: JAAS section %s: %s needs %s=true: zkd takes a server's Kerberos keys from a keytab only (useKeyTab=true storeKey=true keyTab=... principal=...)", section, m.Class, o)
		}
	}
	kt, _ := m.Option("keyTab")
	p, _ := m.Option("principal")
	if kt == "" || p == "" {
		return nil, fmt.Errorf("sasl: JAAS section %s: %s needs keyTab and principal options", section, m.Class)
	}
	init, _ := m.Option("isInitiator")
	return &Krb5Login{Principal: p, KeyTab: kt, IsInitiator: !strings.EqualFold(init, "false")}, nil
}

// expand replaces ${name} with props[name].
func expand(s string, props map[string]string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		key := s[i+2 : i+j]
		v, ok := props[key]
		if !ok {
			return "", fmt.Errorf("property ${%s} is not set", key)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// Token kinds of the JAAS lexer; single characters ({ } ; =) are their
// own kind.
const (
	tEOF    = -1
	tWord   = -2
	tQuoted = -3
)

type token struct {
	kind int
	text string
}

type lexer struct {
	s    string
	i    int
	line int
}

func (lx *lexer) errorf(format string, a ...any) error {
	return fmt.Errorf("sasl: JAAS configuration line %d: %s", lx.line, fmt.Sprintf(format, a...))
}

func (lx *lexer) expect(c byte) error {
	tok, err := lx.next()
	if err != nil {
		return err
	}
	if tok.kind != int(c) {
		return lx.errorf("expected %q, found %q", string(c), tok.text)
	}
	return nil
}

// next returns the next token, skipping white space and comments.
func (lx *lexer) next() (token, error) {
	for lx.i < len(lx.s) {
		c := lx.s[lx.i]
		switch {
		case c == '\n':
			lx.line++
			lx.i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			lx.i++
		case strings.HasPrefix(lx.s[lx.i:], "//"):
			for lx.i < len(lx.s) && lx.s[lx.i] != '\n' {
				lx.i++
			}
		case strings.HasPrefix(lx.s[lx.i:], "/*"):
			end := strings.Index(lx.s[lx.i+2:], "*/")
			if end < 0 {
				return token{}, lx.errorf("unterminated /* comment")
			}
			lx.line += strings.Count(lx.s[lx.i:lx.i+2+end], "\n")
			lx.i += end + 4
		case c == '{' || c == '}' || c == ';' || c == '=':
			lx.i++
			return token{kind: int(c), text: string(c)}, nil
		case c == '"' || c == '\'':
			var b strings.Builder
			lx.i++
			for {
				if lx.i >= len(lx.s) {
					return token{}, lx.errorf("unterminated quoted string")
				}
				d := lx.s[lx.i]
				lx.i++
				if d == c {
					return token{kind: tQuoted, text: b.String()}, nil
				}
				if d == '\n' {
					return token{}, lx.errorf("quoted string runs past the end of the line")
				}
				if d == '\\' && lx.i < len(lx.s) {
					d = lx.s[lx.i]
					lx.i++
				}
				b.WriteByte(d)
			}
		default:
			start := lx.i
			for lx.i < len(lx.s) && isWordChar(lx.s[lx.i]) {
				lx.i++
			}
			if lx.i == start {
				return token{}, lx.errorf("unexpected character %q", string(c))
			}
			return token{kind: tWord, text: lx.s[start:lx.i]}, nil
		}
	}
	return token{kind: tEOF, text: "end of file"}, nil
}

// isWordChar reports whether c may appear in an unquoted word.
func isWordChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c >= 0x80:
		return true
	}
	return strings.IndexByte("$_-*.:/@+", c) >= 0
}
