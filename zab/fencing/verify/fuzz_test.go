package verify

import (
	"bytes"
	"testing"
)

// FuzzCheck: Check never panics, and accepts nothing but the tokens the key
// signed (the seed corpus holds the only ones), give or take the white
// space Decode trims.
func FuzzCheck(f *testing.F) {
	s := signer(f, 1)
	v, _ := New(s.PublicKey())
	signed := map[string]bool{}
	for _, cz := range []int64{1, 2} {
		tok := token(s, "/a", cz)
		signed[string(tok)] = true
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, tok []byte) {
		if _, err := v.Check("r", tok); err == nil && !signed[string(bytes.TrimSpace(tok))] {
			t.Fatalf("accepted a token the key did not sign: %q", tok)
		}
	})
}
