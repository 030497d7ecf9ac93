package datatree

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"unsafe"

	"github.com/zkd/zkd/jute"
)

// Snapshot format (all integers big-endian, jute encodings):
//
//	magic "zkdT", format version int32 = 1, lastZxid int64
//	body:
//	  ACL table: count int32, then each list as a jute ACL vector, numbered
//	    in order of first use by the node walk below
//	  nodes, depth first, children by name: name string ("" for the root),
//	    data buffer (-1 for nil), ACL index int32, czxid, mzxid, pzxid,
//	    ctime, mtime, ephemeralOwner int64, version, cversion, aversion int32,
//	    child count int32
//	crc32c of everything before it, uint32
//
// The body depends only on the tree's content, so identical trees give
// identical bytes, and Digest hashes the same body.
const (
	snapMagic   = "zkdT"
	snapVersion = 1
	// maxSnapField bounds one name or data buffer when reading.
	maxSnapField = 1 << 30
)

// ErrCorruptSnapshot is returned by ReadSnapshot for a stream that is not a
// complete, intact snapshot.
var ErrCorruptSnapshot = errors.New("datatree: corrupt snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// walkBody emits the canonical body encoding in chunks.
func (t *Tree) walkBody(emit func([]byte) error) error {
	// Number ACL lists by first use in the walk.
	aclIdx := make(map[aclRef]int32)
	var aclList []*aclEntry
	t.forEachSorted(func(n *node) {
		if _, ok := aclIdx[n.acl]; !ok {
			aclIdx[n.acl] = int32(len(aclList))
			aclList = append(aclList, t.acls.get(n.acl))
		}
	})
	e := jute.NewEncoder(make([]byte, 0, 64<<10))
	flush := func(force bool) error {
		if e.Len() >= 32<<10 || (force && e.Len() > 0) {
			err := emit(e.Bytes())
			e.Reset()
			return err
		}
		return nil
	}
	e.WriteInt(int32(len(aclList)))
	for _, a := range aclList {
		e.WriteACLs(a.acls)
		if err := flush(false); err != nil {
			return err
		}
	}
	var err error
	t.forEachSorted(func(n *node) {
		if err != nil {
			return
		}
		e.WriteString(n.name())
		e.WriteBuffer(n.bytes())
		e.WriteInt(aclIdx[n.acl])
		s := &n.stat
		e.WriteLong(s.czxid)
		e.WriteLong(s.mzxid)
		e.WriteLong(s.pzxid)
		e.WriteLong(s.ctime)
		e.WriteLong(s.mtime)
		e.WriteLong(s.ephemeralOwner)
		e.WriteInt(s.version)
		e.WriteInt(s.cversion)
		e.WriteInt(n.aversion)
		e.WriteInt(int32(n.kids.size()))
		err = flush(false)
	})
	if err != nil {
		return err
	}
	return flush(true)
}

// forEachSorted visits nodes depth first, children in name order. Callers
// hold mu.
func (t *Tree) forEachSorted(visit func(n *node)) {
	type frame struct {
		kids []*node
		i    int
	}
	visit(t.root)
	stack := []frame{{kids: sortedChildren(t.root)}}
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.i == len(f.kids) {
			stack = stack[:len(stack)-1]
			continue
		}
		n := f.kids[f.i]
		f.i++
		visit(n)
		if n.kids.size() > 0 {
			stack = append(stack, frame{kids: sortedChildren(n)})
		}
	}
}

func sortedChildren(n *node) []*node {
	if n.kids.size() == 0 {
		return nil
	}
	kids := make([]*node, 0, n.kids.size())
	for c := range n.kids.all() {
		kids = append(kids, c)
	}
	slices.SortFunc(kids, func(a, b *node) int { return strings.Compare(a.name(), b.name()) })
	return kids
}

// WriteSnapshot writes the tree and LastZxid to w. Identical trees (and
// zxids) give identical bytes. It holds the read lock while writing, so
// writes wait; watches are not included.
func (t *Tree) WriteSnapshot(w io.Writer) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	bw := bufio.NewWriterSize(w, 64<<10)
	crc := crc32.New(castagnoli)
	out := io.MultiWriter(bw, crc)
	var hdr [16]byte
	copy(hdr[:4], snapMagic)
	binary.BigEndian.PutUint32(hdr[4:8], snapVersion)
	binary.BigEndian.PutUint64(hdr[8:16], uint64(t.lastZxid.Load()))
	if _, err := out.Write(hdr[:]); err != nil {
		return fmt.Errorf("datatree: write snapshot: %w", err)
	}
	if err := t.walkBody(func(b []byte) error { _, err := out.Write(b); return err }); err != nil {
		return fmt.Errorf("datatree: write snapshot: %w", err)
	}
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	if _, err := bw.Write(tail[:]); err != nil {
		return fmt.Errorf("datatree: write snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("datatree: write snapshot: %w", err)
	}
	return nil
}

// Digest returns a 64-bit FNV-1a hash of the tree's canonical encoding
// (every node's path, data, ACL and stat; not LastZxid and not watches):
// equal trees give equal digests, and different trees differ except for
// hash collisions. It walks the whole tree.
func (t *Tree) Digest() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	h := fnv.New64a()
	_ = t.walkBody(func(b []byte) error { _, err := h.Write(b); return err })
	return h.Sum64()
}

// snapReader reads the snapshot's fields through its own buffer, hashing
// what it reads a buffer at a time (a checksum update and a read call per
// field cost about a third of a load).
type snapReader struct {
	r        io.Reader
	in       []byte // buffered input: in[pos:end] is unread
	pos, end int
	hashed   int    // in[hashed:pos] is read but not yet in crc
	crc      uint32 // Castagnoli CRC of the bytes read before in[hashed:]
	err      error
	buf      [8]byte
	read     int64 // bytes read so far
	// scratch holds a node's name until its data's length is known.
	scratch []byte
	// presized counts the children that child sets were sized for ahead
	// of reading them (see presize).
	presized int64
}

// presize gives n, which the snapshot says has k children, a child set of
// their size before they are read, sparing the growth steps (whose
// garbage would stay resident after a load). A corrupt count must not
// make it allocate without bound, so the children sized ahead stay below
// 4 per byte read plus 2^20.
func (s *snapReader) presize(n *node, k int32) {
	if s.presized+int64(k) > 4*s.read+1<<20 {
		return
	}
	s.presized += int64(k)
	n.kids = newKidSet(int(k))
}

func (s *snapReader) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: "+format, append([]any{ErrCorruptSnapshot}, args...)...)
	}
}

// full fills p with the next bytes.
func (s *snapReader) full(p []byte) {
	if s.err != nil {
		return
	}
	if len(p) <= s.end-s.pos {
		copy(p, s.in[s.pos:])
		s.pos += len(p)
		s.read += int64(len(p))
		return
	}
	for len(p) > 0 {
		if s.pos == s.end && !s.fill() {
			return
		}
		k := copy(p, s.in[s.pos:s.end])
		s.pos += k
		s.read += int64(k)
		p = p[k:]
	}
}

// sum hashes the bytes read so far and returns their checksum.
func (s *snapReader) sum() uint32 {
	s.crc = crc32.Update(s.crc, castagnoli, s.in[s.hashed:s.pos])
	s.hashed = s.pos
	return s.crc
}

// fill hashes the bytes read, then refills the empty buffer; at the end
// of the input it fails.
func (s *snapReader) fill() bool {
	s.sum()
	s.pos, s.end, s.hashed = 0, 0, 0
	n, err := io.ReadAtLeast(s.r, s.in, 1)
	if n == 0 {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		s.fail("%v", err)
		return false
	}
	s.end = n
	return true
}

func (s *snapReader) int32() int32 {
	s.full(s.buf[:4])
	if s.err != nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(s.buf[:4]))
}

func (s *snapReader) int64() int64 {
	s.full(s.buf[:8])
	if s.err != nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(s.buf[:8]))
}

// length reads a buffer's length prefix: -1 (nil) or 0..maxSnapField.
func (s *snapReader) length() int32 {
	n := s.int32()
	if s.err == nil && (n < -1 || n > maxSnapField) {
		s.fail("bad length %d", n)
	}
	return n
}

// body appends the next n bytes to dst.
func (s *snapReader) body(dst []byte, n int32) []byte {
	if s.err != nil || n <= 0 {
		return dst
	}
	if n <= 64<<10 {
		dst = slices.Grow(dst, int(n))
		s.full(dst[len(dst) : len(dst)+int(n)])
		return dst[:len(dst)+int(n)]
	}
	// Grow as bytes arrive so a corrupt length cannot force a huge
	// allocation up front.
	for left := int(n); left > 0 && s.err == nil; {
		k := min(left, 64<<10)
		dst = slices.Grow(dst, k)
		s.full(dst[len(dst) : len(dst)+k])
		dst = dst[:len(dst)+k]
		left -= k
	}
	return dst
}

// string reads a length-prefixed buffer as a string; -1 gives "".
func (s *snapReader) string() string {
	n := s.length()
	if s.err != nil || n <= 0 {
		return ""
	}
	b := s.body(make([]byte, 0, n), n)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// nameData reads a node's name and data buffers into one allocation: the
// name through a scratch buffer, then both once the data's length is
// known.
func (s *snapReader) nameData() nameData {
	nl := s.length()
	s.scratch = s.body(s.scratch[:0], nl)
	dl := s.length()
	if s.err != nil {
		return nameData{}
	}
	if dl < 0 {
		return makeNameData(string(s.scratch), nil)
	}
	buf := s.body(append(make([]byte, 0, len(s.scratch)+int(min(dl, 64<<10))), s.scratch...), dl)
	if s.err != nil || len(buf) == 0 {
		return nameData{}
	}
	return nameData{p: unsafe.SliceData(buf), nameLen: uint32(len(s.scratch)), dataLen: uint32(dl)}
}

// ReadSnapshot rebuilds a tree written by WriteSnapshot, with LastZxid
// restored and no watches. A truncated or damaged stream gives an error
// wrapping ErrCorruptSnapshot.
func ReadSnapshot(r io.Reader, cfg Config) (*Tree, error) {
	s := &snapReader{r: r, in: make([]byte, 64<<10)}
	var hdr [16]byte
	s.full(hdr[:])
	if s.err != nil {
		return nil, s.err
	}
	if string(hdr[:4]) != snapMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrCorruptSnapshot)
	}
	if v := binary.BigEndian.Uint32(hdr[4:8]); v != snapVersion {
		return nil, fmt.Errorf("%w: unknown format version %d", ErrCorruptSnapshot, v)
	}
	t := newEmpty(cfg)
	t.lastZxid.Store(int64(binary.BigEndian.Uint64(hdr[8:16])))

	nacl := s.int32()
	if s.err == nil && nacl < 0 {
		s.fail("bad acl count %d", nacl)
	}
	acls := make([][]jute.ACL, 0, min(max(nacl, 0), 1<<16))
	for i := int32(0); i < nacl && s.err == nil; i++ {
		cnt := s.int32()
		if cnt < -1 || cnt > 1<<20 {
			s.fail("bad acl length %d", cnt)
			break
		}
		var list []jute.ACL
		if cnt >= 0 {
			list = make([]jute.ACL, 0, min(cnt, 16))
		}
		for j := int32(0); j < cnt && s.err == nil; j++ {
			var a jute.ACL
			a.Perms = s.int32()
			a.Id.Scheme = s.string()
			a.Id.Id = s.string()
			list = append(list, a)
		}
		acls = append(acls, list)
	}
	entries := make([]aclRef, len(acls))
	for i := range entries {
		entries[i] = noACL
	}

	readNode := func(parent *node) (*node, int32) {
		n := &node{parent: parent, nd: s.nameData()}
		idx := s.int32()
		n.stat.czxid = s.int64()
		n.stat.mzxid = s.int64()
		n.stat.pzxid = s.int64()
		n.stat.ctime = s.int64()
		n.stat.mtime = s.int64()
		n.stat.ephemeralOwner = s.int64()
		n.stat.version = s.int32()
		n.stat.cversion = s.int32()
		n.aversion = s.int32()
		kids := s.int32()
		if s.err != nil {
			return nil, 0
		}
		if idx < 0 || int(idx) >= len(acls) {
			s.fail("bad acl index %d", idx)
			return nil, 0
		}
		if entries[idx] == noACL {
			entries[idx] = t.acls.intern(acls[idx])
		} else {
			t.acls.retain(entries[idx])
		}
		n.acl = entries[idx]
		if kids < 0 {
			s.fail("bad child count %d", kids)
			return nil, 0
		}
		return n, kids
	}

	root, kids := readNode(nil)
	if s.err != nil {
		return nil, s.err
	}
	if root.name() != "" {
		return nil, fmt.Errorf("%w: root has a name", ErrCorruptSnapshot)
	}
	t.root = root
	t.nodes = 1
	t.dataSize = int64(1 + root.dataLen())
	// The tree digest is summed as the nodes arrive, each frame carrying
	// its node's path CRC (see computeDigest).
	var dw treeWalkDigest
	t.digest = dw.root(root)
	type frame struct {
		n    *node
		plen int // length of n's path, 0 for the root
		left int32
		crc  uint32 // CRC-32 of n's path
		out  bool   // n's children are outside the digest (n is /zookeeper or under it)
	}
	if kids > 0 {
		s.presize(root, kids)
	}
	stack := []frame{{n: root, left: kids}}
	for len(stack) > 0 && s.err == nil {
		f := &stack[len(stack)-1]
		if f.left == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		f.left--
		n, k := readNode(f.n)
		if s.err != nil {
			break
		}
		if n.name() == "" || strings.IndexByte(n.name(), '/') >= 0 {
			s.fail("bad node name %q", n.name())
			break
		}
		if f.n.kids.get(n.name()) != nil {
			s.fail("duplicate node %q", n.name())
			break
		}
		plen := f.plen + 1 + len(n.name())
		t.link(n, plen)
		var crc uint32
		if !f.out {
			var d uint64
			d, crc = dw.child(f.crc, n, k > 0)
			t.digest += d
		}
		if k > 0 {
			s.presize(n, k)
			stack = append(stack, frame{n: n, plen: plen, left: k, crc: crc, out: f.out || isZookeeperNode(f.n, n)})
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	want := s.sum()
	var tail [4]byte
	s.full(tail[:])
	if s.err != nil {
		return nil, fmt.Errorf("missing checksum: %w", s.err)
	}
	if got := binary.BigEndian.Uint32(tail[:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorruptSnapshot, got, want)
	}
	// Like ZooKeeper's setupQuota, but without recounting: the stats nodes
	// are restored as they were, so members that load a snapshot agree
	// with members that never restarted.
	if q := t.scanQuotas(); len(q) > 0 {
		t.quotas = q
	}
	return t, nil
}
