package datatree

import (
	"hash/maphash"
	"iter"
	"math/bits"
)

// kidSet is a node's children by name, compact for the tree's two common
// shapes: lock directories with a handful of children and flat directories
// with very many. Up to smallKids children are a plain list searched in
// order; beyond that an open-addressing hash table of node pointers
// (linear probing, at most 3/4 full), which costs 11–21 bytes a child
// where a map[string]*node costs about 40, and ~250 bytes for a map of
// one to eight entries.
//
// The order of children in a kidSet is arbitrary (for the table it depends
// on a per-process hash seed), like a Go map's: whatever is encoded,
// hashed or returned to clients sorts them first.
type kidSet struct {
	slots  []*node // the list (len == n), or the table (power-of-two length)
	n      int     // children held
	hashed bool    // slots is a table
}

const (
	smallKids    = 8  // largest list; a table holds more
	minKidsTable = 16 // smallest table
)

// kidSeed seeds the child tables' hash: random per process, as a Go map's,
// so names cannot be chosen to collide.
var kidSeed = maphash.MakeSeed()

func kidHash(name string) uint64 { return maphash.String(kidSeed, name) }

// tableSize is the smallest power-of-two table (at least minKidsTable)
// that holds n children at most 3/4 full.
func tableSize(n int) int {
	need := n + n/3 + 1
	if need <= minKidsTable {
		return minKidsTable
	}
	return 1 << bits.Len(uint(need-1))
}

// newKidSet returns a set sized for n children.
func newKidSet(n int) *kidSet {
	if n <= smallKids {
		return &kidSet{slots: make([]*node, 0, n)}
	}
	return &kidSet{slots: make([]*node, tableSize(n)), hashed: true}
}

// size is the number of children; a nil set has none.
func (k *kidSet) size() int {
	if k == nil {
		return 0
	}
	return k.n
}

// get returns the child called name, or nil.
func (k *kidSet) get(name string) *node {
	if k == nil {
		return nil
	}
	if !k.hashed {
		for _, c := range k.slots {
			if c.name() == name {
				return c
			}
		}
		return nil
	}
	mask := len(k.slots) - 1
	for i := int(kidHash(name)) & mask; ; i = (i + 1) & mask {
		c := k.slots[i]
		if c == nil {
			return nil
		}
		if c.name() == name {
			return c
		}
	}
}

// all yields every child, in no particular order. The set must not change
// while it is iterated.
func (k *kidSet) all() iter.Seq[*node] {
	return func(yield func(*node) bool) {
		if k == nil {
			return
		}
		for _, c := range k.slots {
			if c != nil && !yield(c) {
				return
			}
		}
	}
}

// add inserts c, whose name must not be in the set.
func (k *kidSet) add(c *node) {
	if !k.hashed {
		if k.n < smallKids {
			k.slots = append(k.slots, c)
			k.n++
			return
		}
		k.rehash(tableSize(k.n + 1))
	} else if (k.n+1)*4 > len(k.slots)*3 {
		k.rehash(len(k.slots) * 2)
	}
	k.put(c)
	k.n++
}

// put places c in the table's first free slot from its home.
func (k *kidSet) put(c *node) {
	mask := len(k.slots) - 1
	i := int(kidHash(c.name())) & mask
	for k.slots[i] != nil {
		i = (i + 1) & mask
	}
	k.slots[i] = c
}

// rehash moves every child into a new table of size slots.
func (k *kidSet) rehash(size int) {
	old := k.slots
	k.slots = make([]*node, size)
	k.hashed = true
	for _, c := range old {
		if c != nil {
			k.put(c)
		}
	}
}

// remove deletes c, which must be in the set. A table that falls to
// smallKids/2 children becomes a list again, and one under 1/8 full
// halves.
func (k *kidSet) remove(c *node) {
	if !k.hashed {
		for i, x := range k.slots {
			if x == c {
				last := len(k.slots) - 1
				k.slots[i] = k.slots[last]
				k.slots[last] = nil
				k.slots = k.slots[:last]
				k.n--
				return
			}
		}
		return
	}
	mask := len(k.slots) - 1
	i := int(kidHash(c.name())) & mask
	for k.slots[i] != c {
		if k.slots[i] == nil {
			return
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: pull later entries of the probe run into
	// the hole unless their home lies cyclically after it.
	for j := (i + 1) & mask; k.slots[j] != nil; j = (j + 1) & mask {
		home := int(kidHash(k.slots[j].name())) & mask
		if (j-home)&mask >= (j-i)&mask {
			k.slots[i] = k.slots[j]
			i = j
		}
	}
	k.slots[i] = nil
	k.n--
	switch {
	case k.n <= smallKids/2:
		list := make([]*node, 0, k.n)
		for _, x := range k.slots {
			if x != nil {
				list = append(list, x)
			}
		}
		k.slots, k.hashed = list, false
	case len(k.slots) > minKidsTable && k.n*8 < len(k.slots):
		k.rehash(len(k.slots) / 2)
	}
}
