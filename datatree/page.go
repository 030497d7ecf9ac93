package datatree

import (
	"slices"
	"strings"

	"github.com/zkd/zkd/jute"
)

// Child is one entry of a ChildPage: a child's name and Stat.
type Child struct {
	Name string
	Stat jute.Stat
}

// ChildPage is one page of a node's children in name order (see
// ChildrenPage).
type ChildPage struct {
	// Children are at most limit children, sorted by name.
	Children []Child
	// Matched counts the children whose name has the prefix, on every page.
	Matched int
	// More reports that matching children follow the last one returned.
	More bool
}

// ChildrenPage returns the children of path whose names start with prefix
// and sort after after ("" for the first page), at most limit of them, in
// name order, with the node's own Stat. It costs one pass over the
// children and keeps at most 2×limit names, so a directory of 100k
// children is paged without sorting or copying them all.
//
// It checks no ACL: names and Stats are structure, which ZooKeeper's
// exists also shows to anyone. Callers that show data must check READ with
// GetData. limit must be positive.
func (t *Tree) ChildrenPage(path, prefix, after string, limit int) (ChildPage, jute.Stat, error) {
	if limit <= 0 {
		return ChildPage{}, jute.Stat{}, pathErr(ErrBadArguments, path)
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.lookup(path)
	if n == nil {
		return ChildPage{}, jute.Stat{}, pathErr(ErrNoNode, path)
	}
	var page ChildPage
	var cand []*node
	byName := func(a, b *node) int { return strings.Compare(a.name(), b.name()) }
	after1 := 0                 // matching children after `after`
	bound, bounded := "", false // once cand was cut to limit: its largest name
	for c := range n.kids.all() {
		name := c.name()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		page.Matched++
		if name <= after && after != "" {
			continue
		}
		after1++
		if bounded && name >= bound {
			continue // cannot be among the first limit
		}
		cand = append(cand, c)
		if len(cand) >= 2*limit {
			slices.SortFunc(cand, byName)
			cand = cand[:limit]
			bound, bounded = cand[limit-1].name(), true
		}
	}
	slices.SortFunc(cand, byName)
	cand = cand[:min(limit, len(cand))]
	page.More = after1 > len(cand)
	page.Children = make([]Child, len(cand))
	for i, c := range cand {
		page.Children[i] = Child{Name: c.name(), Stat: t.clientStat(c)}
	}
	return page, t.clientStat(n), nil
}
