package zkformat

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

// StreamReader reads jute's binary encoding from a stream, as ZooKeeper's
// BinaryInputArchive does over a socket: records there carry no length
// frame, so they are decoded as they arrive. The first error sticks; every
// later read returns zero values.
type StreamReader struct {
	r   *bufio.Reader
	err error
	n   int64
	// MaxBuffer bounds one buffer or string (jute.maxbuffer); default
	// 64 MiB.
	MaxBuffer int
}

// NewStreamReader reads from r through a buffer.
func NewStreamReader(r io.Reader) *StreamReader {
	return &StreamReader{r: bufio.NewReaderSize(r, 64<<10), MaxBuffer: 64 << 20}
}

// Err returns the first error met, or nil.
func (s *StreamReader) Err() error { return s.err }

// Offset returns the number of bytes read so far.
func (s *StreamReader) Offset() int64 { return s.n }

func (s *StreamReader) full(p []byte) {
	if s.err != nil {
		clear(p)
		return
	}
	n, err := io.ReadFull(s.r, p)
	s.n += int64(n)
	if err != nil {
		s.err = err
		clear(p)
	}
}

// Int reads a 4-byte big-endian int.
func (s *StreamReader) Int() int32 {
	var b [4]byte
	s.full(b[:])
	return int32(binary.BigEndian.Uint32(b[:]))
}

// Long reads an 8-byte big-endian long.
func (s *StreamReader) Long() int64 {
	var b [8]byte
	s.full(b[:])
	return int64(binary.BigEndian.Uint64(b[:]))
}

// Buffer reads a length-prefixed byte buffer; length -1 is nil.
func (s *StreamReader) Buffer() []byte {
	n := s.Int()
	if s.err != nil || n == -1 {
		return nil
	}
	if n < 0 || int(n) > s.MaxBuffer {
		s.err = fmt.Errorf("zkformat: offset %d: buffer length %d out of range", s.n-4, n)
		return nil
	}
	if n <= 64<<10 {
		b := make([]byte, n)
		s.full(b)
		return b
	}
	// A large length is believed only as the bytes arrive, so a damaged
	// length costs no large allocation.
	var buf bytes.Buffer
	m, err := io.CopyN(&buf, s.r, int64(n))
	s.n += m
	if err != nil {
		s.err = err
		return nil
	}
	return buf.Bytes()
}

// String reads a length-prefixed UTF-8 string.
func (s *StreamReader) String() string { return string(s.Buffer()) }

// ACLs reads a vector of ACL records; length -1 is nil.
func (s *StreamReader) ACLs() []jute.ACL {
	n := s.Int()
	if s.err != nil || n == -1 {
		return nil
	}
	if n < 0 || int(n) > s.MaxBuffer/12 {
		s.err = fmt.Errorf("zkformat: offset %d: ACL count %d out of range", s.n-4, n)
		return nil
	}
	out := make([]jute.ACL, 0, n)
	for i := int32(0); i < n && s.err == nil; i++ {
		var a jute.ACL
		a.Perms = s.Int()
		a.Id.Scheme = s.String()
		a.Id.Id = s.String()
		out = append(out, a)
	}
	return out
}

// syncSignature ends the snapshot a ZooKeeper leader streams to a learner
// (LearnerHandler writes it after ZKDatabase.serializeSnapshot).
const syncSignature = "BenWasHere"

// ReadSyncSnapshot reads the snapshot a ZooKeeper leader sends a learner
// after a SNAP packet (SerializeUtils.serializeSnapshot: the session
// table, the ACL cache, the nodes up to "/", then the signature
// "BenWasHere"). It is a snapshot file's body without the file header,
// seals and digest. zxid becomes the tree's LastZxid. The leader writes
// it from its live tree, so it may already hold the effects of
// transactions after zxid, which the leader sends next: Tree.Apply
// replays them as a log is replayed over a snapshot taken under load.
func ReadSyncSnapshot(s *StreamReader, zxid int64) (*Tree, error) {
	bad := func(format string, args ...any) error {
		if s.err != nil {
			return fmt.Errorf("zkformat: leader snapshot: offset %d: "+format+": %w", append(append([]any{s.n}, args...), s.err)...)
		}
		return fmt.Errorf("zkformat: leader snapshot: offset %d: "+format, append([]any{s.n}, args...)...)
	}
	t := newTree()
	t.LastZxid = zxid
	ns := s.Int()
	if ns < 0 {
		return nil, bad("bad session count %d", ns)
	}
	for i := int32(0); i < ns && s.err == nil; i++ {
		id := s.Long()
		t.Sessions[id] = s.Int()
	}
	nacl := s.Int()
	if s.err != nil || nacl < 0 {
		return nil, bad("session table or ACL cache size %d", nacl)
	}
	aclByID := map[int64][]jute.ACL{openACLID: datatree.OpenACLUnsafe}
	for i := int32(0); i < nacl && s.err == nil; i++ {
		id := s.Long()
		aclByID[id] = t.internACL(s.ACLs())
	}
	for {
		path := s.String()
		if s.err != nil {
			return nil, bad("node path")
		}
		if path == "/" {
			break
		}
		n := &datatree.NodeImage{Path: path}
		n.Data = s.Buffer()
		aclID := s.Long()
		n.Czxid, n.Mzxid = s.Long(), s.Long()
		n.Ctime, n.Mtime = s.Long(), s.Long()
		n.Version, n.Cversion, n.Aversion = s.Int(), s.Int(), s.Int()
		n.EphemeralOwner, n.Pzxid = s.Long(), s.Long()
		if s.err != nil {
			return nil, bad("node %q", path)
		}
		acl, ok := aclByID[aclID]
		if !ok {
			return nil, bad("node %q refers to ACL %d, which the ACL cache does not hold", path, aclID)
		}
		n.ACL = acl
		if path == "" {
			n.Path = "/"
		} else if !strings.HasPrefix(path, "/") || t.nodes[path] != nil || t.nodes[parentPath(path)] == nil {
			return nil, bad("node %q repeated, malformed or without its parent", path)
		}
		t.put(n)
	}
	if t.nodes["/"] == nil {
		return nil, bad("no root node")
	}
	if sig := s.String(); sig != syncSignature {
		return nil, bad("signature %q, want %q", sig, syncSignature)
	}
	return t, nil
}

// DecodeTxn decodes one transaction as a learner receives it in a
// PROPOSAL or INFORM packet, or as a log record holds it: TxnHeader, the
// record, and the 3.6+ digest when present.
func DecodeTxn(b []byte) (Txn, error) { return decodeTxn(b) }

// NewInitialTree returns the database of a ZooKeeper that has applied no
// transaction (DataTree's constructor): the root, /zookeeper,
// /zookeeper/quota and /zookeeper/config (read-only to the world, version
// and aversion -1 as ZooKeeper's own setACL and config write leave them).
func NewInitialTree() *Tree {
	t := newTree()
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota"} {
		t.put(&datatree.NodeImage{Path: p, Data: []byte{}, ACL: t.internACL(datatree.OpenACLUnsafe)})
	}
	t.put(&datatree.NodeImage{Path: "/zookeeper/config", Data: []byte{}, Version: -1, Aversion: -1,
		ACL: t.internACL([]jute.ACL{{Perms: jute.PermRead, Id: jute.Id{Scheme: "world", Id: "anyone"}}})})
	return t
}

// TreeFromImages rebuilds a Tree from node images (parents first, as
// datatree.Tree.Images gives them), a session table and the last zxid
// applied: how a follower resumes from a data directory it seeded.
func TreeFromImages(images []datatree.NodeImage, sessions map[int64]int32, lastZxid int64) (*Tree, error) {
	t := newTree()
	t.LastZxid = lastZxid
	for i := range images {
		n := images[i]
		if n.Path != "/" && t.nodes[parentPath(n.Path)] == nil {
			return nil, fmt.Errorf("zkformat: image %q comes without its parent", n.Path)
		}
		n.ACL = t.internACL(n.ACL)
		t.put(&n)
	}
	if t.nodes["/"] == nil {
		return nil, fmt.Errorf("zkformat: images hold no root")
	}
	for id, to := range sessions {
		t.Sessions[id] = to
	}
	return t, nil
}
