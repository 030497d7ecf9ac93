package datatree

import "testing"

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
