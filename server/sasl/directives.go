package sasl

import (
	"fmt"
	"strings"
)

// maxToken is the largest token either side accepts, as Java's
// DigestMD5Server (responses) and DigestMD5Client (challenges): 4096 and
// 2048 bytes.
const (
	maxResponse  = 4096
	maxChallenge = 2048
)

// parseDirectives parses an RFC 2831 digest-challenge or digest-response:
// a comma-separated list of name=value pairs, where a value is a token or
// a quoted string with backslash escapes, and linear white space may
// surround every element. Empty list elements are allowed (RFC 2616 #rule).
// A directive given twice is an error, as in Java's parser.
func parseDirectives(b []byte) (map[string]string, error) {
	out := make(map[string]string)
	i, n := 0, len(b)
	skipLWS := func() {
		for i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
			i++
		}
	}
	for {
		skipLWS()
		if i >= n {
			return out, nil
		}
		if b[i] == ',' {
			i++
			continue
		}
		start := i
		for i < n && isTokenChar(b[i]) {
			i++
		}
		if i == start {
			return nil, fmt.Errorf("DIGEST-MD5: directive name expected at offset %d", i)
		}
		name := strings.ToLower(string(b[start:i]))
		skipLWS()
		if i >= n || b[i] != '=' {
			return nil, fmt.Errorf("DIGEST-MD5: directive %q has no value", name)
		}
		i++
		skipLWS()
		var val strings.Builder
		if i < n && b[i] == '"' {
			i++
			closed := false
			for i < n {
				c := b[i]
				i++
				if c == '\\' && i < n {
					val.WriteByte(b[i])
					i++
					continue
				}
				if c == '"' {
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("DIGEST-MD5: unterminated quoted value of %q", name)
			}
		} else {
			start := i
			for i < n && b[i] != ',' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
				if b[i] == '"' {
					return nil, fmt.Errorf("DIGEST-MD5: stray quote in value of %q", name)
				}
				i++
			}
			val.Write(b[start:i])
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("DIGEST-MD5: peer sent more than one %s directive", name)
		}
		out[name] = val.String()
		skipLWS()
		if i < n && b[i] != ',' {
			return nil, fmt.Errorf("DIGEST-MD5: comma expected after %q", name)
		}
	}
}

// isTokenChar reports whether c may appear in an RFC 2616 token.
func isTokenChar(c byte) bool {
	if c <= ' ' || c >= 0x7f {
		return false
	}
	return !strings.ContainsRune("()<>@,;:\\\"/[]?={}", rune(c))
}

// quote renders s as an RFC 2831 quoted-string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}
