package fencing

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func testSigner(t testing.TB, b byte) *Signer {
	t.Helper()
	s, err := NewSigner(bytes.Repeat([]byte{b}, SeedLen))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	s := testSigner(t, 1)
	tests := []Token{
		{LockPath: "/locks/db", Node: "lock-0000000003", Czxid: 0x200000005, Session: 0x1000a, ReadZxid: 0x200000009},
		{LockPath: "/", Node: "_c_9f-lock-0000000000", Czxid: -1, Session: -0x7f00000000000001, ReadZxid: 0},
		{LockPath: "/ü/é", Node: "x__rlock__0000000001", Czxid: 1 << 62},
	}
	for _, want := range tests {
		t.Run(want.Node, func(t *testing.T) {
			text := s.Sign(&want)
			if !bytes.HasPrefix(text, []byte(Prefix)) || want.KeyID != s.KeyID() {
				t.Fatalf("token %q, key id %s", text, want.KeyID)
			}
			got, err := Decode(append(append([]byte(" \n"), text...), '\n'))
			if err != nil {
				t.Fatal(err)
			}
			if got.Token != want || !got.Verify(s.PublicKey()) {
				t.Fatalf("decoded %+v (verifies %v), want %+v", got.Token, got.Verify(s.PublicKey()), want)
			}
			if again := s.Sign(&want); !bytes.Equal(again, text) {
				t.Fatal("signing is not deterministic")
			}
			if other := testSigner(t, 2); got.Verify(other.PublicKey()) {
				t.Fatal("verifies with another key")
			}
		})
	}
}

// TestDecodeRejects: each malformed or tampered form fails to decode or
// to verify.
// b64url is the base64url alphabet. The last character of a signature
// carries 2 bits; the character after it in the alphabet sets a padding
// bit, which strict decoding refuses.
const b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func TestDecodeRejects(t *testing.T) {
	s := testSigner(t, 1)
	good := string(s.Sign(&Token{LockPath: "/l", Node: "lock-0000000001", Czxid: 5, Session: 7, ReadZxid: 9}))
	p64, s64, _ := strings.Cut(strings.TrimPrefix(good, Prefix), ".")
	payload, _ := base64.RawURLEncoding.DecodeString(p64)
	enc := func(p []byte) string { return Prefix + base64.RawURLEncoding.EncodeToString(p) + "." + s64 }
	mut := func(f func(p []byte) []byte) string { return enc(f(append([]byte{}, payload...))) }
	malformed := map[string]string{
		"empty":         "",
		"no prefix":     strings.TrimPrefix(good, Prefix),
		"other version": "zkdf2." + strings.TrimPrefix(good, Prefix),
		"no signature":  Prefix + p64,
		"bad base64":    Prefix + p64 + "!." + s64,
		"short sig":     Prefix + p64 + "." + s64[:10],
		"padded":        good + "==",
		"short payload": enc(payload[:20]),
		"bad magic":     mut(func(p []byte) []byte { p[0] = 'X'; return p }),
		"bad version":   mut(func(p []byte) []byte { p[4] = 2; return p }),
		"trailing":      enc(append(append([]byte{}, payload...), 0)),
		"cut name":      enc(payload[:len(payload)-1]),
		"huge length":   mut(func(p []byte) []byte { p[fixedLen] = 0x7f; return p }),
		"relative lock": enc((&Token{LockPath: "l", Node: "n"}).payload()),
		"slash in node": enc((&Token{LockPath: "/l", Node: "a/b"}).payload()),
		"empty node":    enc((&Token{LockPath: "/l"}).payload()),
	}
	for name, text := range malformed {
		if _, err := DecodeString(text); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	tampered := map[string]string{
		"czxid":     mut(func(p []byte) []byte { p[5+KeyIDLen+7]++; return p }),
		"signature": Prefix + p64 + "." + base64.RawURLEncoding.EncodeToString(make([]byte, ed25519.SignatureSize)),
	}
	for name, text := range tampered {
		d, err := DecodeString(text)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d.Verify(s.PublicKey()) {
			t.Errorf("%s: tampered token verifies", name)
		}
	}
}

func TestPublicKeyInfo(t *testing.T) {
	s := testSigner(t, 3)
	pub, err := ParsePublicKey(MarshalInfo(s.PublicKey()))
	if err != nil || !bytes.Equal(pub, s.PublicKey()) {
		t.Fatalf("parse published key: %v", err)
	}
	raw := base64.StdEncoding.EncodeToString(s.PublicKey())
	if pub, err := ParsePublicKey([]byte(raw + "\n")); err != nil || !bytes.Equal(pub, s.PublicKey()) {
		t.Fatalf("parse raw key: %v", err)
	}
	in := Info(s.PublicKey())
	spki, _ := base64.StdEncoding.DecodeString(in.PublicKeySPKI)
	if len(spki) != 44 || !bytes.Equal(spki[12:], s.PublicKey()) {
		t.Fatalf("SPKI %x", spki)
	}
	bad := map[string]string{
		"algorithm": `{"algorithm":"RSA","public_key":"` + raw + `"}`,
		"key id":    `{"algorithm":"Ed25519","key_id":"0000000000000000","public_key":"` + raw + `"}`,
		"length":    `{"algorithm":"Ed25519","public_key":"AAAA"}`,
		"base64":    "not base64!",
	}
	for name, text := range bad {
		if _, err := ParsePublicKey([]byte(text)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	if _, err := NewSigner([]byte("short")); err == nil {
		t.Fatal("NewSigner took a short seed")
	}
}
