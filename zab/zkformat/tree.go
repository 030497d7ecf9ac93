package zkformat

import (
	"sort"
	"strings"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

// Ephemeral owner markers, as ZooKeeper's EphemeralType encodes them.
const (
	containerOwner int64 = -1 << 63
	ttlMarker      int64 = -1 << 56 // high byte 0xFF
	ttlReserved    int64 = 0x00ffff0000000000
)

// Tree is ZooKeeper's DataTree as its snapshot and transaction log describe
// it: every node by path ("/" for the root) with its persisted stat, the
// ephemerals by session, the session table and the running digest.
type Tree struct {
	nodes      map[string]*datatree.NodeImage
	ephemerals map[int64]map[string]struct{}
	// Sessions maps each live session to its timeout in ms.
	Sessions map[int64]int32
	// LastZxid is the zxid of the last transaction applied (or the
	// snapshot's, before any).
	LastZxid int64
	digest   uint64
	// acls interns ACL lists so that equal lists share one slice.
	acls map[string][]jute.ACL
}

func newTree() *Tree {
	return &Tree{
		nodes:      make(map[string]*datatree.NodeImage),
		ephemerals: make(map[int64]map[string]struct{}),
		Sessions:   make(map[int64]int32),
		acls:       make(map[string][]jute.ACL),
	}
}

// Len returns the number of nodes, the root included.
func (t *Tree) Len() int { return len(t.nodes) }

// Digest returns ZooKeeper's tree digest (digest version 2).
func (t *Tree) Digest() uint64 { return t.digest }

// Images returns every node, parents before children (paths in byte
// order), ready for datatree.FromImages.
func (t *Tree) Images() []datatree.NodeImage {
	paths := make([]string, 0, len(t.nodes))
	for p := range t.nodes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	out := make([]datatree.NodeImage, len(paths))
	for i, p := range paths {
		out[i] = *t.nodes[p]
	}
	return out
}

// Node returns the node at path, or nil.
func (t *Tree) Node(path string) *datatree.NodeImage { return t.nodes[path] }

func (t *Tree) internACL(acl []jute.ACL) []jute.ACL {
	k := aclKey(acl)
	if v, ok := t.acls[k]; ok {
		return v
	}
	t.acls[k] = acl
	return acl
}

// nodeDigest is DigestCalculator.calculateDigest: CRC32 of the path (""
// for the root), the data and the persisted stat; 0 under /zookeeper/.
func nodeDigest(n *datatree.NodeImage) uint64 { return datatree.ImageDigest(n) }

// isSessionOwner reports whether owner is a session id (an ephemeral's
// owner) rather than 0, the container marker or a TTL.
func isSessionOwner(owner int64) bool {
	if owner == 0 || owner == containerOwner {
		return false
	}
	return owner&ttlMarker != ttlMarker
}

// put adds a node whose parent is known to exist.
func (t *Tree) put(n *datatree.NodeImage) {
	t.nodes[n.Path] = n
	t.digest += nodeDigest(n)
	if isSessionOwner(n.EphemeralOwner) {
		set := t.ephemerals[n.EphemeralOwner]
		if set == nil {
			set = make(map[string]struct{}, 1)
			t.ephemerals[n.EphemeralOwner] = set
		}
		set[n.Path] = struct{}{}
	}
}

// change runs f on node n, keeping the digest right.
func (t *Tree) change(n *datatree.NodeImage, f func()) {
	t.digest -= nodeDigest(n)
	f()
	t.digest += nodeDigest(n)
}

func parentPath(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// createNode is DataTree.createNode during replay: a missing parent or an
// existing node leaves the tree alone (ZooKeeper's NoNode/NodeExists,
// which replay ignores); the parent's cversion and pzxid move only
// forward.
func (t *Tree) createNode(path string, data []byte, acl []jute.ACL, owner int64, parentCVersion int32, zxid, time int64) {
	if path == "/" || path == "" {
		return
	}
	parent := t.nodes[parentPath(path)]
	if parent == nil || t.nodes[path] != nil {
		return
	}
	if parentCVersion == -1 {
		parentCVersion = parent.Cversion + 1
	}
	if parentCVersion > parent.Cversion {
		t.change(parent, func() {
			parent.Cversion = parentCVersion
			parent.Pzxid = zxid
		})
	}
	t.put(&datatree.NodeImage{
		Path: path, Data: data, ACL: t.internACL(acl),
		Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: time, Mtime: time,
		EphemeralOwner: owner,
	})
}

// deleteNode is DataTree.deleteNode: the parent's pzxid moves forward,
// its cversion stays.
func (t *Tree) deleteNode(path string, zxid int64) {
	n := t.nodes[path]
	if n == nil || path == "/" {
		return
	}
	parent := t.nodes[parentPath(path)]
	if parent == nil {
		return
	}
	t.digest -= nodeDigest(n)
	delete(t.nodes, path)
	if set := t.ephemerals[n.EphemeralOwner]; set != nil {
		delete(set, path)
		if len(set) == 0 {
			delete(t.ephemerals, n.EphemeralOwner)
		}
	}
	if zxid > parent.Pzxid {
		t.change(parent, func() { parent.Pzxid = zxid })
	}
}

func (t *Tree) setData(path string, data []byte, version int32, zxid, time int64) {
	n := t.nodes[path]
	if n == nil {
		return
	}
	t.change(n, func() {
		n.Data = data
		n.Mtime = time
		n.Mzxid = zxid
		n.Version = version
	})
}

func (t *Tree) setACL(path string, acl []jute.ACL, version int32) {
	n := t.nodes[path]
	if n == nil {
		return
	}
	t.change(n, func() {
		n.ACL = t.internACL(acl)
		n.Aversion = version
	})
}

// killSession deletes the session's ephemerals and the paths its
// closeSession transaction lists, as DataTree.killSession does.
func (t *Tree) killSession(id, zxid int64, paths []string) {
	for _, p := range paths {
		t.deleteNode(p, zxid)
	}
	set := t.ephemerals[id]
	rest := make([]string, 0, len(set))
	for p := range set {
		rest = append(rest, p)
	}
	sort.Strings(rest)
	for _, p := range rest {
		t.deleteNode(p, zxid)
	}
}
