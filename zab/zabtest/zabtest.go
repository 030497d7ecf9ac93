// Package zabtest holds test helpers that change a stopped zkd member's
// persisted state behind its back, as a disk flipping bits or an
// operator's edit would, while keeping every checksum valid: what zkd's
// corruption checks cannot catch and its divergence detection must.
//
// It imports datatree and zab/store, never zab itself, so that zab's own
// tests can use it.
package zabtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/zab/store"
)

// treeMagic opens the datatree snapshot (format version 1) that ends
// every zkd FSM snapshot (see datatree.WriteSnapshot).
var treeMagic = []byte("zkdT\x00\x00\x00\x01")

// ReplaceInTree returns a copy of snap, a zkd FSM snapshot, in which the
// one occurrence of old in the tree's bytes is replaced by repl (of the
// same length) and the tree's CRC-32C recomputed, so that it loads as a
// valid snapshot of a tree that differs from the original. Make old a
// node's data, unique in the tree (a path or an ACL holding it would be
// changed as well).
func ReplaceInTree(snap, old, repl []byte) ([]byte, error) {
	if len(old) != len(repl) || len(old) == 0 {
		return nil, errors.New("zabtest: old and repl must be non-empty and of the same length")
	}
	at := bytes.Index(snap, treeMagic)
	if at < 0 {
		return nil, errors.New("zabtest: no datatree snapshot in the FSM snapshot")
	}
	out := bytes.Clone(snap)
	tree := out[at:]
	if _, err := datatree.ReadSnapshot(bytes.NewReader(tree), datatree.DefaultConfig()); err != nil {
		return nil, fmt.Errorf("zabtest: the tree at offset %d does not load before the change: %w", at, err)
	}
	if n := bytes.Count(tree, old); n != 1 {
		return nil, fmt.Errorf("zabtest: %q occurs %d times in the tree, want once", old, n)
	}
	copy(tree[bytes.Index(tree, old):], repl)
	body := len(tree) - 4
	binary.BigEndian.PutUint32(tree[body:], crc32.Checksum(tree[:body], crc32.MakeTable(crc32.Castagnoli)))
	if _, err := datatree.ReadSnapshot(bytes.NewReader(tree), datatree.DefaultConfig()); err != nil {
		return nil, fmt.Errorf("zabtest: the changed tree does not load: %w", err)
	}
	return out, nil
}

// ReplaceInSnapshot applies ReplaceInTree to the newest snapshot in dir, a
// stopped member's zkd state directory (zab.Config.Dir: dataDir/zkd), and
// stores the result in its place: a snapshot of the same index, term and
// membership, with its store checksum recomputed, that the member loads
// at its next start.
func ReplaceInSnapshot(dir string, old, repl []byte) error {
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		return fmt.Errorf("zabtest: open %s (is the member stopped?): %w", dir, err)
	}
	defer s.Close()
	snaps := s.SnapshotStore(1) // the new snapshot alone is kept
	metas, err := snaps.List()
	if err != nil {
		return err
	}
	if len(metas) == 0 {
		return fmt.Errorf("zabtest: no snapshot in %s", dir)
	}
	meta, rc, err := snaps.Open(metas[0].ID)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return fmt.Errorf("zabtest: read snapshot %s: %w", meta.ID, err)
	}
	changed, err := ReplaceInTree(data, old, repl)
	if err != nil {
		return fmt.Errorf("zabtest: snapshot %s in %s: %w", meta.ID, dir, err)
	}
	sink, err := snaps.Create(meta.Version, meta.Index, meta.Term, meta.Configuration, meta.ConfigurationIndex, nil)
	if err != nil {
		return err
	}
	if _, err := sink.Write(changed); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}
