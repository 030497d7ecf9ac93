package fencing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Prefix opens every token of format version 1.
const Prefix = "zkdf1."

const (
	magic   = "ZKDF"
	version = 1
	// fixedLen is the payload up to the lock path: magic, version, key
	// id, czxid, session, read zxid.
	fixedLen = 4 + 1 + KeyIDLen + 8 + 8 + 8
	// MaxPathLen bounds the lock path and node name a token may carry
	// (ZooKeeper's jute.maxbuffer bounds a path the same way).
	MaxPathLen = 1 << 20
)

// KeyIDLen is the length of a key id.
const KeyIDLen = 8

// SeedLen is the length of the replicated key material (an Ed25519 seed).
const SeedLen = ed25519.SeedSize

// ErrMalformed is returned (wrapped) for text that is not a well-formed
// token.
var ErrMalformed = errors.New("fencing: malformed token")

// KeyID names a public key inside tokens: the first 8 bytes of its SHA-256.
type KeyID [KeyIDLen]byte

// String returns the key id in hex.
func (k KeyID) String() string { return hex.EncodeToString(k[:]) }

// IDOf returns the key id of pub.
func IDOf(pub ed25519.PublicKey) KeyID {
	sum := sha256.Sum256(pub)
	var id KeyID
	copy(id[:], sum[:KeyIDLen])
	return id
}

// Token is the signed content of one fencing token.
type Token struct {
	// KeyID names the key that signed the token.
	KeyID KeyID
	// LockPath is the lock node's parent, e.g. "/locks/db".
	LockPath string
	// Node is the lock node's name, e.g. "lock-0000000003".
	Node string
	// Czxid is the zxid that created the lock node: the grant's order.
	Czxid int64
	// Session is the session owning the lock node (its ephemeralOwner).
	Session int64
	// ReadZxid is the last zxid the member had applied when it answered.
	ReadZxid int64
}

// NodePath returns the lock node's full path.
func (t *Token) NodePath() string {
	if t.LockPath == "/" {
		return "/" + t.Node
	}
	return t.LockPath + "/" + t.Node
}

// String describes the token for logs and zkcli.
func (t *Token) String() string {
	return fmt.Sprintf("lock=%s node=%s czxid=0x%x session=0x%x read_zxid=0x%x key=%s",
		t.LockPath, t.Node, uint64(t.Czxid), uint64(t.Session), uint64(t.ReadZxid), t.KeyID)
}

// payload encodes t's signed bytes.
func (t *Token) payload() []byte {
	b := make([]byte, 0, fixedLen+8+len(t.LockPath)+len(t.Node))
	b = append(b, magic...)
	b = append(b, version)
	b = append(b, t.KeyID[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(t.Czxid))
	b = binary.BigEndian.AppendUint64(b, uint64(t.Session))
	b = binary.BigEndian.AppendUint64(b, uint64(t.ReadZxid))
	b = binary.BigEndian.AppendUint32(b, uint32(len(t.LockPath)))
	b = append(b, t.LockPath...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(t.Node)))
	b = append(b, t.Node...)
	return b
}

// Signer signs tokens with the ensemble's key.
type Signer struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	id   KeyID
}

// NewSigner returns a signer for the key derived from seed, which must be
// SeedLen bytes.
func NewSigner(seed []byte) (*Signer, error) {
	if len(seed) != SeedLen {
		return nil, fmt.Errorf("fencing: key seed of %d bytes, want %d", len(seed), SeedLen)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	return &Signer{priv: priv, pub: pub, id: IDOf(pub)}, nil
}

// PublicKey returns the verifying key.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.pub }

// KeyID returns the id of the signer's key.
func (s *Signer) KeyID() KeyID { return s.id }

// Sign sets t.KeyID to the signer's and returns the token text. It is safe
// for concurrent use and deterministic: the same t gives the same text on
// every member.
func (s *Signer) Sign(t *Token) []byte {
	t.KeyID = s.id
	p := t.payload()
	sig := ed25519.Sign(s.priv, p)
	enc := base64.RawURLEncoding
	out := make([]byte, 0, len(Prefix)+enc.EncodedLen(len(p))+1+enc.EncodedLen(len(sig)))
	out = append(out, Prefix...)
	out = enc.AppendEncode(out, p)
	out = append(out, '.')
	out = enc.AppendEncode(out, sig)
	return out
}

// Signed is a decoded token before its signature was checked.
type Signed struct {
	Token
	// Payload is the signed bytes and Signature the Ed25519 signature
	// over them.
	Payload   []byte
	Signature []byte
}

// Verify reports whether the signature is pub's over the payload and the
// payload names pub's key id.
func (s *Signed) Verify(pub ed25519.PublicKey) bool {
	if len(pub) != ed25519.PublicKeySize || s.KeyID != IDOf(pub) {
		return false
	}
	return ed25519.Verify(pub, s.Payload, s.Signature)
}

// Decode parses token text (surrounding white space is ignored, as zkCli
// output and shells add it). It checks the format only; Signed.Verify
// checks the signature.
func Decode(text []byte) (*Signed, error) {
	text = bytes.TrimSpace(text)
	rest, ok := bytes.CutPrefix(text, []byte(Prefix))
	if !ok {
		return nil, fmt.Errorf("%w: no %q prefix", ErrMalformed, Prefix)
	}
	p64, s64, ok := bytes.Cut(rest, []byte{'.'})
	if !ok {
		return nil, fmt.Errorf("%w: no signature part", ErrMalformed)
	}
	// Strict: a token has one text form, so a service may also compare
	// tokens as strings.
	enc := base64.RawURLEncoding.Strict()
	payload, err := enc.AppendDecode(nil, p64)
	if err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	sig, err := enc.AppendDecode(nil, s64)
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrMalformed, err)
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w: signature of %d bytes", ErrMalformed, len(sig))
	}
	t, err := decodePayload(payload)
	if err != nil {
		return nil, err
	}
	return &Signed{Token: t, Payload: payload, Signature: sig}, nil
}

// DecodeString is Decode for a string.
func DecodeString(text string) (*Signed, error) { return Decode([]byte(text)) }

func decodePayload(p []byte) (Token, error) {
	var t Token
	if len(p) < fixedLen {
		return t, fmt.Errorf("%w: payload of %d bytes", ErrMalformed, len(p))
	}
	if string(p[:4]) != magic {
		return t, fmt.Errorf("%w: bad magic", ErrMalformed)
	}
	if p[4] != version {
		return t, fmt.Errorf("%w: version %d", ErrMalformed, p[4])
	}
	copy(t.KeyID[:], p[5:5+KeyIDLen])
	i := 5 + KeyIDLen
	t.Czxid = int64(binary.BigEndian.Uint64(p[i:]))
	t.Session = int64(binary.BigEndian.Uint64(p[i+8:]))
	t.ReadZxid = int64(binary.BigEndian.Uint64(p[i+16:]))
	rest := p[fixedLen:]
	var err error
	if t.LockPath, rest, err = readString(rest, "lock path"); err != nil {
		return t, err
	}
	if t.Node, rest, err = readString(rest, "node name"); err != nil {
		return t, err
	}
	if len(rest) != 0 {
		return t, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(rest))
	}
	if !strings.HasPrefix(t.LockPath, "/") || t.Node == "" || strings.Contains(t.Node, "/") {
		return t, fmt.Errorf("%w: lock path %q node %q", ErrMalformed, t.LockPath, t.Node)
	}
	return t, nil
}

func readString(b []byte, what string) (string, []byte, error) {
	if len(b) < 4 {
		return "", nil, fmt.Errorf("%w: %s length cut short", ErrMalformed, what)
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if n > MaxPathLen || uint64(n) > uint64(len(b)) {
		return "", nil, fmt.Errorf("%w: %s of %d bytes, %d left", ErrMalformed, what, n, len(b))
	}
	return string(b[:n]), b[n:], nil
}
