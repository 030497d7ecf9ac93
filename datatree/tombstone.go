package datatree

import (
	"slices"
	"strings"
)

// Tombstones implement zkd's opt-in lock delay (docs/fencing.md, "Lock
// delay"): when a session expires, its lock nodes are not deleted but stay
// in the tree, unchanged, until a deadline the log chose, so that the next
// contender's node is not the lowest until then. A tombstone stays indexed
// under its (dead) owner like any ephemeral, so snapshots and the
// ephemerals index need nothing new; only the deadlines are extra state,
// which the caller (package zab) saves beside the tree and restores with
// SetTombstone.

// Tombstone is one lock node kept after its session expired.
type Tombstone struct {
	// Path is the node's path.
	Path string
	// Czxid and Session are the node's, as when its session was alive.
	Czxid   int64
	Session int64
	// Deadline is when it may be removed, ms since the epoch (the
	// expiry entry's leader time plus the delay).
	Deadline int64
}

// CloseSessionDelayed closes session as CloseSession does, except that its
// ephemerals whose name keep accepts become tombstones due at deadline
// instead of being deleted: no watch fires for them and nothing about them
// changes. It returns the paths of the tombstones, sorted.
func (t *Tree) CloseSessionDelayed(tx *Txn, session int64, keep func(name string) bool, deadline int64) []string {
	var w writer
	t.begin(&w, tx, false)
	defer w.end()
	type item struct {
		path string
		n    *node
	}
	var (
		kept  []string
		items []item
	)
	for n := range t.ephemerals[session] {
		if keep(n.name()) {
			t.tombstones[n] = deadline
			kept = append(kept, n.path())
		} else if _, tomb := t.tombstones[n]; !tomb {
			items = append(items, item{n.path(), n})
		}
	}
	slices.Sort(kept)
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.path, b.path) })
	for _, it := range items {
		w.deleteNode(it.n, it.path)
	}
	return kept
}

// DeleteTombstone deletes the tombstone at path, firing watches as a
// delete does, if its deadline is at or before tx.Time. Otherwise it
// returns ErrNoNode (no node or not a tombstone) or ErrBadVersion (not due
// yet), changing nothing.
func (t *Tree) DeleteTombstone(tx *Txn, path string) error {
	var w writer
	t.begin(&w, tx, false)
	defer w.end()
	n := t.lookup(path)
	if n == nil {
		return pathErr(ErrNoNode, path)
	}
	deadline, ok := t.tombstones[n]
	if !ok {
		return pathErr(ErrNoNode, path)
	}
	if deadline > tx.Time {
		return pathErr(ErrBadVersion, path)
	}
	w.deleteNode(n, path)
	return nil
}

// SetTombstone marks the ephemeral at path as a tombstone due at deadline,
// as CloseSessionDelayed did before a snapshot of the tree was taken. It
// returns ErrNoNode when path is not a session's ephemeral.
func (t *Tree) SetTombstone(path string, deadline int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.lookup(path)
	if n == nil || t.ephemeralType(n.stat.ephemeralOwner) != typeNormal {
		return pathErr(ErrNoNode, path)
	}
	t.tombstones[n] = deadline
	return nil
}

// Tombstones lists the tombstones, sorted by path.
func (t *Tree) Tombstones() []Tombstone {
	t.mu.RLock()
	out := make([]Tombstone, 0, len(t.tombstones))
	for n, d := range t.tombstones {
		out = append(out, Tombstone{Path: n.path(), Czxid: n.stat.czxid, Session: n.stat.ephemeralOwner, Deadline: d})
	}
	t.mu.RUnlock()
	slices.SortFunc(out, func(a, b Tombstone) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// DueTombstones lists, sorted, the paths of the tombstones whose deadline
// is at or before now: those DeleteTombstone would delete at that time.
func (t *Tree) DueTombstones(now int64) []string {
	t.mu.RLock()
	var out []string
	for n, d := range t.tombstones {
		if d <= now {
			out = append(out, n.path())
		}
	}
	t.mu.RUnlock()
	slices.Sort(out)
	return out
}
