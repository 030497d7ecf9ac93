package datatree

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
	"unsafe"
)

// ZooKeeper's tree digest (3.6+, digest version 2: DigestCalculator,
// NodeHashMapImpl, AdHash). Each node's digest is the CRC-32 (IEEE, as
// java.util.zip.CRC32) of its path ("" for the root), its data and 60
// bytes of its persisted stat, big-endian: czxid, mzxid, pzxid, ctime,
// mtime (8 bytes each), version, cversion, aversion (4 each) and
// ephemeralOwner (8). Nodes under /zookeeper/ count 0 (ZooKeeper leaves
// them out: quota statistics and /zookeeper/config are written locally);
// /zookeeper itself counts. The tree's digest is the sum of its nodes'
// digests, modulo 2^64, so it is kept up to date by subtracting a node's
// digest before a change and adding it after, as NodeHashMapImpl's
// preChange and postChange do. ACLs are not in it (aversion is).
//
// The tree keeps the sum in Tree.digest, under the write lock: a create
// adds the node and re-adds its parent (whose cversion and pzxid moved),
// a delete subtracts the node and re-adds its parent, setData and setACL
// re-add the node. Nodes do not cache their digest (a node is packed
// into 96 bytes), so a change hashes the node before and after it: a
// create or a delete hashes three nodes' worth (the node, its parent
// twice), each in one CRC-32 call over path, data and stat copied
// together (see digestConcatMax). A multi that rolls back restores the
// sum it started with. A snapshot load and FromImages compute it from
// scratch, carrying each node's path CRC down to its children.

// DigestVersion is ZooKeeper's DigestCalculator.DIGEST_VERSION, the
// algorithm TreeDigest implements.
const DigestVersion = 2

// digestExcluded is ZooDefs.ZOOKEEPER_NODE_SUBTREE: nodes whose path
// starts with it count 0.
const digestExcluded = "/zookeeper/"

// stringBytes views s as bytes without copying, for hashing only.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// crcPathData is the CRC-32 of path ("" for the root) and n's data, the
// part of n's digest that its stat does not change.
func crcPathData(path string, n *node) uint32 {
	if path == "/" {
		path = ""
	}
	crc := crc32.Update(0, crc32.IEEETable, stringBytes(path))
	return crc32.Update(crc, crc32.IEEETable, n.bytes())
}

// finishDigest adds n's persisted stat to crc (crcPathData's) and returns
// n's digest. buf is scratch space for the stat's 60 bytes.
func finishDigest(crc uint32, n *node, buf *[60]byte) uint64 {
	return uint64(crc32.Update(crc, crc32.IEEETable, appendStat(buf[:0], n)))
}

// digestCounts reports whether the node at path is in the digest.
func digestCounts(path string) bool { return !strings.HasPrefix(path, digestExcluded) }

// digestConcatMax bounds the path and data a writer copies into its
// scratch buffer, with the stat, to hash them in one call: one call over
// 60 bytes or more takes CRC-32's carry-less multiply path, where three
// short ones cost several times as much. Larger nodes are hashed in place.
const digestConcatMax = 512

// nodeDigest is n's digest at path (0 under /zookeeper/). Callers hold
// the write lock: it uses the tree's scratch buffers.
func (t *Tree) nodeDigest(path string, n *node) uint64 {
	if !digestCounts(path) {
		return 0
	}
	if path == "/" {
		path = ""
	}
	data := n.bytes()
	if len(path)+len(data) > digestConcatMax {
		return finishDigest(crcPathData(path, n), n, &t.digestStat)
	}
	b := append(t.digestBuf[:0], path...)
	b = append(b, data...)
	b = appendStat(b, n)
	t.digestBuf = b
	return uint64(crc32.ChecksumIEEE(b))
}

// appendStat appends the 60 bytes of n's stat that its digest covers.
func appendStat(b []byte, n *node) []byte {
	s := &n.stat
	b = binary.BigEndian.AppendUint64(b, uint64(s.czxid))
	b = binary.BigEndian.AppendUint64(b, uint64(s.mzxid))
	b = binary.BigEndian.AppendUint64(b, uint64(s.pzxid))
	b = binary.BigEndian.AppendUint64(b, uint64(s.ctime))
	b = binary.BigEndian.AppendUint64(b, uint64(s.mtime))
	b = binary.BigEndian.AppendUint32(b, uint32(s.version))
	b = binary.BigEndian.AppendUint32(b, uint32(s.cversion))
	b = binary.BigEndian.AppendUint32(b, uint32(n.aversion))
	return binary.BigEndian.AppendUint64(b, uint64(s.ephemeralOwner))
}

// digestChange re-adds the digest of the node n at path around change,
// which alters n's stat. Callers hold the write lock.
func (t *Tree) digestChange(path string, n *node, change func()) {
	before := t.nodeDigest(path, n)
	change()
	t.digest += t.nodeDigest(path, n) - before
}

// TreeDigest returns ZooKeeper's digest of the tree (version
// DigestVersion): the sum of its nodes' digests, kept up to date by every
// write. Trees with the same nodes, data and stats have the same digest
// in zkd and in ZooKeeper 3.6+.
func (t *Tree) TreeDigest() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.digest
}

// ComputeTreeDigest computes TreeDigest from scratch, walking every node;
// for tests and checks of the running sum.
func (t *Tree) ComputeTreeDigest() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.computeDigest()
}

// computeDigest walks the tree, carrying each node's path CRC down to its
// children rather than building paths. Callers hold mu.
func (t *Tree) computeDigest() uint64 {
	var w treeWalkDigest
	type frame struct {
		n   *node
		crc uint32 // CRC-32 of n's path
	}
	sum := w.root(t.root)
	stack := []frame{{t.root, 0}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := range f.n.kids.all() {
			descend := c.kids.size() > 0 && !isZookeeperNode(f.n, c)
			d, crc := w.child(f.crc, c, descend)
			sum += d
			if descend {
				stack = append(stack, frame{c, crc})
			}
		}
	}
	return sum
}

// isZookeeperNode reports whether c, a child of parent, is /zookeeper,
// whose descendants the digest leaves out.
func isZookeeperNode(parent, c *node) bool { return parent.parent == nil && c.name() == "zookeeper" }

// treeWalkDigest hashes nodes met parent first (a snapshot load, a walk),
// in as few CRC calls as it can: a node's "/name", data and stat copied
// together into buf when they are small.
type treeWalkDigest struct {
	buf  []byte
	stat [60]byte
}

// root returns the root's digest (its path is "").
func (w *treeWalkDigest) root(n *node) uint64 {
	return finishDigest(crc32.Update(0, crc32.IEEETable, n.bytes()), n, &w.stat)
}

// child returns the digest of c, whose parent's path has CRC-32 parent,
// and, when pathCRC is set (c has children to hash), the CRC-32 of c's
// path.
func (w *treeWalkDigest) child(parent uint32, c *node, pathCRC bool) (uint64, uint32) {
	name, data := c.name(), c.bytes()
	if len(name)+len(data) > digestConcatMax {
		crc := crc32.Update(crc32.Update(parent, crc32.IEEETable, slash), crc32.IEEETable, stringBytes(name))
		return finishDigest(crc32.Update(crc, crc32.IEEETable, data), c, &w.stat), crc
	}
	b := append(w.buf[:0], '/')
	b = append(b, name...)
	var crc uint32
	if pathCRC {
		crc = crc32.Update(parent, crc32.IEEETable, b)
		parent, b = crc, b[:0]
	}
	b = append(b, data...)
	b = appendStat(b, c)
	w.buf = b
	return uint64(crc32.Update(parent, crc32.IEEETable, b)), crc
}

var slash = []byte{'/'}

// ImageDigest is the digest of the node im describes (0 under
// /zookeeper/): ZooKeeper's DigestCalculator.calculateDigest, for readers
// of ZooKeeper's own files (package zkformat).
func ImageDigest(im *NodeImage) uint64 {
	if !digestCounts(im.Path) {
		return 0
	}
	path := im.Path
	if path == "/" {
		path = ""
	}
	n := node{aversion: im.Aversion, stat: persisted{
		czxid: im.Czxid, mzxid: im.Mzxid, pzxid: im.Pzxid, ctime: im.Ctime, mtime: im.Mtime,
		ephemeralOwner: im.EphemeralOwner, version: im.Version, cversion: im.Cversion,
	}}
	var buf [60]byte
	crc := crc32.Update(crc32.Update(0, crc32.IEEETable, stringBytes(path)), crc32.IEEETable, im.Data)
	return finishDigest(crc, &n, &buf)
}
