package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/hashicorp/raft"
)

var _ raft.StableStore = (*Store)(nil)

// ErrKeyNotFound is returned by Get and GetUint64 for a missing key. Its
// text is exactly "not found", without the package prefix, because
// hashicorp/raft compares err.Error() against that string (as raft-boltdb
// and raft's InmemStore return it).
var ErrKeyNotFound = errors.New("not found")

func stableKey(key []byte) []byte {
	k := make([]byte, 1+len(key))
	k[0] = prefixStable
	copy(k[1:], key)
	return k
}

// Set stores val under key, synced.
func (s *Store) Set(key []byte, val []byte) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if err := s.db.Set(stableKey(key), val, s.writeOpts); err != nil {
		return fmt.Errorf("store: set %q: %w", key, err)
	}
	return nil
}

// Get returns the value of key, or ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	v, closer, err := s.db.Get(stableKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, s.noteCorrupt(fmt.Errorf("store: get %q: %w", key, err))
	}
	out := append([]byte{}, v...)
	_ = closer.Close()
	return out, nil
}

// SetUint64 stores val under key as 8 big-endian bytes, synced.
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the uint64 under key, or ErrKeyNotFound.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("store: value of %q is %d bytes, not a uint64", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
