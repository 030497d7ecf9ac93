package datatree

import (
	"slices"
	"strings"

	"github.com/zkd/zkd/jute"
)

// EphemeralChild is one session-owned ephemeral znode, as returned by
// EphemeralsByParent: its name under the parent and its client Stat.
type EphemeralChild struct {
	Name string
	Stat jute.Stat
}

// EphemeralGroup is a parent znode and its session-owned ephemeral
// children, sorted by name.
type EphemeralGroup struct {
	Parent   string
	Children []EphemeralChild
}

// EphemeralsByParent groups the session-owned ephemerals whose name keep
// accepts (every one when keep is nil) and whose parent's path is prefix or
// lies under it ("" or "/" for all) by parent, sorted by parent path. It
// walks the session ephemerals index rather than the whole tree, so its
// cost grows with the number of ephemerals, not of znodes; containers and
// TTL nodes are not included. It is read-only and holds the tree's read
// lock for the walk, calling keep under it (keep must be cheap and must not
// call the tree); the result shares nothing with the tree. The lock view
// (server.Server.Locks) is built on it.
func (t *Tree) EphemeralsByParent(prefix string, keep func(name string) bool) []EphemeralGroup {
	prefix = strings.TrimSuffix(prefix, "/")
	t.mu.RLock()
	byParent := map[*node][]EphemeralChild{}
	for _, set := range t.ephemerals {
		for n := range set {
			if keep != nil && !keep(n.name()) {
				continue
			}
			byParent[n.parent] = append(byParent[n.parent], EphemeralChild{Name: n.name(), Stat: t.clientStat(n)})
		}
	}
	out := make([]EphemeralGroup, 0, len(byParent))
	for p, children := range byParent {
		path := p.path()
		if prefix != "" && path != prefix && !strings.HasPrefix(path, prefix+"/") {
			continue
		}
		out = append(out, EphemeralGroup{Parent: path, Children: children})
	}
	t.mu.RUnlock()
	for _, g := range out {
		slices.SortFunc(g.Children, func(a, b EphemeralChild) int { return strings.Compare(a.Name, b.Name) })
	}
	slices.SortFunc(out, func(a, b EphemeralGroup) int { return strings.Compare(a.Parent, b.Parent) })
	return out
}

// SessionEphemeral returns the Stat of the node at path if it is owned by
// a session (an ephemeral, not a container or TTL node), after checking
// READ. A missing node, one of another kind or a tombstone is ErrNoNode.
// The fencing token of a lock node is built on it (package server).
func (t *Tree) SessionEphemeral(path string, auth []jute.Id) (jute.Stat, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.lookup(path)
	if n == nil || t.ephemeralType(n.stat.ephemeralOwner) != typeNormal {
		return jute.Stat{}, pathErr(ErrNoNode, path)
	}
	if _, tomb := t.tombstones[n]; tomb {
		// A lock delay's tombstone: nobody holds it (tombstone.go).
		return jute.Stat{}, pathErr(ErrNoNode, path)
	}
	if !checkACL(t.aclOf(n), jute.PermRead, auth) {
		return jute.Stat{}, pathErr(ErrNoAuth, path)
	}
	return t.clientStat(n), nil
}
