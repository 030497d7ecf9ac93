// Package verify is what a storage service fenced by zkd locks imports: it
// checks a fencing token's signature against the ensemble's public key and
// keeps, per resource, the highest czxid it accepted, refusing any token
// with a lower one. A lock holder that paused past its session's expiry
// (GC, a stopped VM, a partition) and comes back with its old token is thus
// refused once a later holder wrote.
//
// The resource is whatever the service protects (a table, a file, a
// shard); by default it is the token's lock path. Tokens of equal czxid are
// accepted: the same holder writes more than once. The state is in memory;
// a service that must refuse stale tokens across its own restarts stores
// Highest(resource) with the resource's data and seeds it back with
// Observe.
package verify

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"

	"github.com/zkd/zkd/zab/fencing"
)

// Errors of Check, to test with errors.Is.
var (
	// ErrSignature: the token was not signed by the verifier's key.
	ErrSignature = errors.New("verify: bad signature")
	// ErrStale: a token with a higher czxid was accepted for the resource.
	ErrStale = errors.New("verify: stale token")
)

// StaleError is the error of a stale token (errors.Is(err, ErrStale)).
type StaleError struct {
	Resource string
	// Czxid is the refused token's and Highest the highest accepted.
	Czxid, Highest int64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("verify: stale token for %s: czxid 0x%x below 0x%x already seen", e.Resource, uint64(e.Czxid), uint64(e.Highest))
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Verifier checks tokens and tracks the highest czxid per resource. It is
// safe for concurrent use.
type Verifier struct {
	pub ed25519.PublicKey
	mu  struct {
		sync.Mutex
		highest map[string]int64
	}
}

// New returns a verifier for pub (fencing.ParsePublicKey reads the key as
// published at /zookeeper/fencing).
func New(pub ed25519.PublicKey) (*Verifier, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("verify: public key of %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	v := &Verifier{pub: append(ed25519.PublicKey{}, pub...)}
	v.mu.highest = make(map[string]int64)
	return v, nil
}

// Verify checks token's format and signature only, and returns its content.
func (v *Verifier) Verify(token []byte) (*fencing.Token, error) {
	s, err := fencing.Decode(token)
	if err != nil {
		return nil, err
	}
	if !s.Verify(v.pub) {
		return nil, fmt.Errorf("%w (token key %s, verifier key %s)", ErrSignature, s.KeyID, fencing.IDOf(v.pub))
	}
	return &s.Token, nil
}

// Check verifies token and, if it is not older than the newest token
// accepted for resource ("" means the token's lock path), records its czxid
// as the newest and returns its content. A service calls Check in the same
// critical section as the write it guards, so that a stale write cannot
// slip in between.
func (v *Verifier) Check(resource string, token []byte) (*fencing.Token, error) {
	t, err := v.Verify(token)
	if err != nil {
		return nil, err
	}
	if resource == "" {
		resource = t.LockPath
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if h, ok := v.mu.highest[resource]; ok && t.Czxid < h {
		return nil, &StaleError{Resource: resource, Czxid: t.Czxid, Highest: h}
	}
	v.mu.highest[resource] = t.Czxid
	return t, nil
}

// Highest returns the highest czxid accepted for resource, and whether one
// was.
func (v *Verifier) Highest(resource string) (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	h, ok := v.mu.highest[resource]
	return h, ok
}

// Observe raises resource's highest czxid to czxid (never lowers it), for
// a service restoring its state.
func (v *Verifier) Observe(resource string, czxid int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if h, ok := v.mu.highest[resource]; !ok || czxid > h {
		v.mu.highest[resource] = czxid
	}
}
