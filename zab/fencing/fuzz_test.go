package fencing

import (
	"bytes"
	"testing"
)

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to
// the same payload.
func FuzzDecode(f *testing.F) {
	s, err := NewSigner(bytes.Repeat([]byte{9}, SeedLen))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.Sign(&Token{LockPath: "/locks/db", Node: "lock-0000000003", Czxid: 0x200000005, Session: 0x1000a, ReadZxid: 0x200000009}))
	f.Add(s.Sign(&Token{LockPath: "/", Node: "x__lock__0000000000"}))
	f.Add([]byte(Prefix + "."))
	f.Add([]byte(Prefix + "WktERg.AAAA"))
	f.Fuzz(func(t *testing.T, text []byte) {
		d, err := Decode(text)
		if err != nil {
			return
		}
		if !bytes.Equal(d.Token.payload(), d.Payload) {
			t.Fatalf("payload %x re-encodes as %x", d.Payload, d.Token.payload())
		}
		_ = d.Verify(s.PublicKey())
	})
}
