package datatree

import (
	"testing"
	"unicode/utf16"
)

func TestValidatePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/", true},
		{"/a", true},
		{"/a/b/c", true},
		{"/a.b", true},
		{"/...", true},
		{"/.a", true},
		{"/a..", true},
		{"/é", true},
		{"/日本", true},
		{"", false},
		{"a", false},
		{"/a/", false},
		{"//", false},
		{"/a//b", false},
		{"/.", false},
		{"/..", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/a/..", false},
		{"/a\x00b", false},
		{"/a\x01", false},
		{"/a\x1f", false},
		{"/a\x7f", false},
		{"/a\u0085", false},
		{"/a\u009f", false},
		{"/a\u00a0", true},
		{"/a\ud7ff", true},
		{"/a\ue000", false},
		{"/a\uf8ff", false},
		{"/a\uf900", true},
		{"/a\ufff0", false},
		{"/a\U0001F600", false},
		{"/a\xff", false},
	} {
		if got := ValidatePath(tc.path); got != tc.ok {
			t.Errorf("ValidatePath(%q) = %v, want %v", tc.path, got, tc.ok)
		}
	}
}

// javaValidatePath is PathUtils.validatePath transcribed over UTF-16 code
// units, as Java sees the decoded string; FuzzValidatePath checks that the
// byte-level ValidatePath agrees with it.
func javaValidatePath(path string) bool {
	chars := utf16.Encode([]rune(path))
	if len(chars) == 0 || chars[0] != '/' {
		return false
	}
	if len(chars) == 1 {
		return true
	}
	if chars[len(chars)-1] == '/' {
		return false
	}
	lastc := uint16('/')
	for i := 1; i < len(chars); lastc, i = chars[i], i+1 {
		c := chars[i]
		switch {
		case c == 0:
			return false
		case c == '/' && lastc == '/':
			return false
		case c == '.' && lastc == '.':
			if chars[i-2] == '/' && (i+1 == len(chars) || chars[i+1] == '/') {
				return false
			}
		case c == '.':
			if chars[i-1] == '/' && (i+1 == len(chars) || chars[i+1] == '/') {
				return false
			}
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			return false
		}
	}
	return true
}

func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "/a/./b", "/..", "/a\u0085", "/\U0001F600", "/a\xff", "/...", "//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidatePath(s), javaValidatePath(s); got != want {
			t.Fatalf("ValidatePath(%q) = %v, Java rules say %v", s, got, want)
		}
	})
}

func TestAppendSequence(t *testing.T) {
	for _, tc := range []struct {
		v    int32
		want string
	}{
		{0, "/p0000000000"},
		{42, "/p0000000042"},
		{1<<31 - 1, "/p2147483647"},
		{-1, "/p-000000001"},
		{-1 << 31, "/p-2147483648"},
	} {
		if got := appendSequence("/p", tc.v); got != tc.want {
			t.Errorf("appendSequence(%d) = %s, want %s", tc.v, got, tc.want)
		}
	}
}
