// Package lockview recognises the lock recipes' znodes (Curator's, Kazoo's
// and go-zk's sequential ephemeral children) and turns a lock path's
// children into its holders and waiters in queue order. It is pure: the
// server feeds it from its tree (server.Server.Locks) and zkcli from
// getChildren and exists over the client protocol.
package lockview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/zkd/zkd/datatree"
)

// Lock modes of one lock node, by the recipe's naming.
const (
	LockExclusive = "exclusive" // Curator/go-zk "lock-", Kazoo Lock and WriteLock "__lock__"
	LockRead      = "read"      // Curator "__READ__" or "-read-", Kazoo ReadLock "__rlock__"
	LockWrite     = "write"     // Curator "__WRIT__" or "-write-"
	LockLease     = "lease"     // Curator semaphore "-lease-"
)

// Kinds of lock path.
const (
	KindMutex     = "mutex"     // only exclusive nodes: the lowest sequence holds
	KindRWLock    = "rwlock"    // read nodes beside write or exclusive ones
	KindSemaphore = "semaphore" // lease nodes: every lease is shown as held
)

// Node is one contender of a lock: a sequential ephemeral child of the
// lock path.
type Node struct {
	// Name is the child's name, e.g. "_c_1b2…-lock-0000000003".
	Name string `json:"name"`
	// Mode is LockExclusive, LockRead, LockWrite or LockLease.
	Mode string `json:"mode"`
	// SessionID owns the node; Session is the same in hex, as logs print it.
	SessionID int64  `json:"session_id"`
	Session   string `json:"session"`
	// Client is the remote address of the session's connection when it is
	// connected to this member, else "remote".
	Client string `json:"client"`
	// Czxid orders grants: every later contender of any lock has a larger
	// one, so it is the fencing number (docs/fencing.md). Sequence is the
	// recipe's queue position only: it restarts at 0 when a lock path that
	// is a container (Curator's) is removed once empty.
	Czxid    int64 `json:"czxid"`
	Sequence int64 `json:"sequence"`
	// Ctime is the node's creation time, ms since the epoch (leader clock).
	Ctime int64 `json:"ctime"`
	// AgeMs is now − Ctime: for a holder, how long it has held the lock
	// (at most: it held since its predecessor left), for a waiter how long
	// it has waited.
	AgeMs int64 `json:"age_ms"`
	// Tombstone is set when the node's session expired under a lock delay
	// (zkd.lockDelayMs, docs/fencing.md): nobody holds it, but it keeps
	// its place in the queue until DelayUntil, ms since the epoch in log
	// time (its expiry entry's leader time plus the delay), DelayLeftMs
	// from now (0: due, removal under way).
	Tombstone   bool  `json:"tombstone,omitempty"`
	DelayUntil  int64 `json:"delay_until,omitempty"`
	DelayLeftMs int64 `json:"delay_left_ms,omitempty"`
}

// Lock is one lock path: its holders (one for a mutex; for a
// read/write lock the leading readers, or the leading writer) and its
// waiters, in the order they will get the lock.
type Lock struct {
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Holders []Node `json:"holders"`
	Waiters []Node `json:"waiters"`
}

// ParseName reads a lock recipe's child name: a prefix naming the mode
// and a 10-digit sequence suffix. It knows Curator's InterProcessMutex
// ("[_c_<uuid>-]lock-"), InterProcessReadWriteLock ("…__READ__",
// "…__WRIT__"), semaphore leases ("…-lease-"), Kazoo's Lock and WriteLock
// ("<uuid>__lock__": Kazoo's write lock is its exclusive lock) and ReadLock
// ("<uuid>__rlock__"), go-zk's Lock ("lock-" or "_c_<guid>-lock-") and the
// generic "-read-"/"-write-".
func ParseName(name string) (mode string, seq int64, ok bool) {
	if len(name) <= 10 {
		return "", 0, false
	}
	prefix, digits := name[:len(name)-10], name[len(name)-10:]
	// Ten decimal digits, checked by hand: ParseInt would allocate an
	// error for every non-lock name in a tree walk. A sequence that
	// overflowed (ZooKeeper prints it signed: "-000000001") is refused.
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", 0, false
		}
		seq = seq*10 + int64(digits[i]-'0')
	}
	has := func(s string) bool { return prefix == strings.TrimPrefix(s, "-") || strings.HasSuffix(prefix, s) }
	switch {
	case strings.HasSuffix(prefix, "__lock__"), has("-lock-"):
		return LockExclusive, seq, true
	case strings.HasSuffix(prefix, "__rlock__"), strings.HasSuffix(prefix, "__READ__"), has("-read-"):
		return LockRead, seq, true
	case strings.HasSuffix(prefix, "__WRIT__"), has("-write-"):
		return LockWrite, seq, true
	case has("-lease-"):
		return LockLease, seq, true
	}
	return "", 0, false
}

// IsLockName reports whether name is a lock recipe's node name (see
// ParseName); it is cheap enough to filter a tree walk with.
func IsLockName(name string) bool {
	_, _, ok := ParseName(name)
	return ok
}

// Build turns ephemerals grouped by parent (datatree.EphemeralsByParent,
// or the same gathered over the client protocol) into lock paths, in the
// groups' order; parents without lock-named children are left out. client
// maps a session to its connection's address ("" when unknown: shown as
// "remote"); now is ms since the epoch, for the ages.
func Build(groups []datatree.EphemeralGroup, client func(int64) string, now int64) []Lock {
	var out []Lock
	for _, g := range groups {
		var nodes []Node
		kind := KindMutex
		for _, c := range g.Children {
			mode, seq, ok := ParseName(c.Name)
			if !ok {
				continue
			}
			switch mode {
			case LockRead, LockWrite:
				kind = KindRWLock
			case LockLease:
				if kind == KindMutex {
					kind = KindSemaphore
				}
			}
			addr := client(c.Stat.EphemeralOwner)
			if addr == "" {
				addr = "remote"
			}
			nodes = append(nodes, Node{
				Name: c.Name, Mode: mode,
				SessionID: c.Stat.EphemeralOwner, Session: fmt.Sprintf("0x%x", uint64(c.Stat.EphemeralOwner)), Client: addr,
				Czxid: c.Stat.Czxid, Sequence: seq, Ctime: c.Stat.Ctime, AgeMs: max(0, now-c.Stat.Ctime),
			})
		}
		if len(nodes) == 0 {
			continue
		}
		// Sequence order is queue order: the recipes' prefixes differ per
		// client, so names do not sort by it.
		slices.SortFunc(nodes, func(a, b Node) int {
			return cmp.Or(cmp.Compare(a.Sequence, b.Sequence), cmp.Compare(a.Czxid, b.Czxid))
		})
		held := holders(kind, nodes)
		out = append(out, Lock{Path: g.Parent, Kind: kind, Holders: nodes[:held:held], Waiters: append([]Node{}, nodes[held:]...)})
	}
	return out
}

// holders returns how many of the queue's first nodes hold the lock:
// every lease of a semaphore (the server does not know the number of
// leases); for a read/write lock the readers before the first writer, or
// the first writer alone (an exclusive node counts as a writer: Kazoo's
// WriteLock is its Lock); otherwise the lowest sequence.
func holders(kind string, nodes []Node) int {
	switch kind {
	case KindSemaphore:
		return len(nodes)
	case KindRWLock:
		if nodes[0].Mode != LockRead {
			return 1
		}
		n := 0
		for n < len(nodes) && nodes[n].Mode == LockRead {
			n++
		}
		return n
	}
	return 1
}

// MarkTombstones flags the nodes of locks that are lock delay tombstones
// (datatree.Tree.Tombstones: matched by path and czxid) with the delay
// left at now, ms since the epoch. A tombstone stays where its sequence
// puts it: usually the holder, which is what keeps the next waiter
// waiting.
func MarkTombstones(locks []Lock, tombs []datatree.Tombstone, now int64) {
	if len(tombs) == 0 {
		return
	}
	byPath := make(map[string]datatree.Tombstone, len(tombs))
	for _, tb := range tombs {
		byPath[tb.Path] = tb
	}
	mark := func(parent string, nodes []Node) {
		for i := range nodes {
			tb, ok := byPath[strings.TrimSuffix(parent, "/")+"/"+nodes[i].Name]
			if ok && tb.Czxid == nodes[i].Czxid {
				nodes[i].Tombstone = true
				nodes[i].DelayUntil = tb.Deadline
				nodes[i].DelayLeftMs = max(0, tb.Deadline-now)
			}
		}
	}
	for _, l := range locks {
		mark(l.Path, l.Holders)
		mark(l.Path, l.Waiters)
	}
}
