package fencing

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Algorithm names the signature scheme in PublicKeyInfo.
const Algorithm = "Ed25519"

// spkiPrefix is the DER of an X.509 SubjectPublicKeyInfo for an Ed25519
// key (RFC 8410) up to the 32 key bytes: what Java's X509EncodedKeySpec
// reads.
var spkiPrefix = []byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}

// PublicKeyInfo is the ensemble's verifying key as published at
// /zookeeper/fencing and by the admin command "fencing", as JSON.
type PublicKeyInfo struct {
	// Algorithm is always "Ed25519".
	Algorithm string `json:"algorithm"`
	// KeyID is the key id tokens carry, in hex.
	KeyID string `json:"key_id"`
	// PublicKey is the raw 32-byte key in standard base64 (what Python's
	// Ed25519PublicKey.from_public_bytes and Go's ed25519 take).
	PublicKey string `json:"public_key"`
	// PublicKeySPKI is the same key as a DER SubjectPublicKeyInfo in
	// standard base64 (what Java's X509EncodedKeySpec takes).
	PublicKeySPKI string `json:"public_key_spki"`
	// TokenPrefix is the path prefix under which tokens are read.
	TokenPrefix string `json:"token_prefix"`
}

// TokenPathPrefix is the virtual path a lock node's path is appended to
// for reading its token; the node itself holds the public key.
const TokenPathPrefix = "/zookeeper/fencing"

// Info returns the published form of pub.
func Info(pub ed25519.PublicKey) PublicKeyInfo {
	spki := append(append([]byte{}, spkiPrefix...), pub...)
	return PublicKeyInfo{
		Algorithm:     Algorithm,
		KeyID:         IDOf(pub).String(),
		PublicKey:     base64.StdEncoding.EncodeToString(pub),
		PublicKeySPKI: base64.StdEncoding.EncodeToString(spki),
		TokenPrefix:   TokenPathPrefix,
	}
}

// MarshalInfo returns Info(pub) as JSON with a final newline.
func MarshalInfo(pub ed25519.PublicKey) []byte {
	b, err := json.MarshalIndent(Info(pub), "", "  ")
	if err != nil {
		panic(err) // a struct of strings always marshals
	}
	return append(b, '\n')
}

// ParsePublicKey reads a public key from the JSON published at
// /zookeeper/fencing, or from its raw key in standard base64.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	var info PublicKeyInfo
	raw := string(data)
	if err := json.Unmarshal(data, &info); err == nil {
		if info.Algorithm != Algorithm {
			return nil, fmt.Errorf("fencing: key algorithm %q, want %q", info.Algorithm, Algorithm)
		}
		raw = info.PublicKey
	}
	pub, err := base64.StdEncoding.DecodeString(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("fencing: public key: %w", err)
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("fencing: public key of %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	if info.KeyID != "" && info.KeyID != IDOf(pub).String() {
		return nil, fmt.Errorf("fencing: key id %s does not match the key (%s)", info.KeyID, IDOf(pub))
	}
	return ed25519.PublicKey(pub), nil
}
