package zkformat

import (
	"bufio"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"strings"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

// File magics (FileSnap.SNAP_MAGIC, FileTxnLog.TXNLOG_MAGIC) and the one
// format version ZooKeeper has written since 3.0.
const (
	snapMagic     int32 = 0x5A4B534E // "ZKSN"
	logMagic      int32 = 0x5A4B4C47 // "ZKLG"
	formatVersion int32 = 2
	// digestVersion is DigestCalculator's DIGEST_VERSION: digests of
	// another version are not compared.
	digestVersion int32 = 2
	// DigestVersion is digestVersion for other packages.
	DigestVersion = digestVersion
	// openACLID is the ACL cache's id for world:anyone ALL, which the
	// cache never lists (ReferenceCountedACLCache.OPEN_UNSAFE_ACL_ID).
	openACLID int64 = -1
)

// FormatError is damage found in a ZooKeeper file: which file, where, and
// what.
type FormatError struct {
	File   string
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: offset %d: %s", e.File, e.Offset, e.Msg)
}

// ZxidDigest is the digest a 3.6+ snapshot ends with: the tree digest
// right after transaction Zxid was applied.
type ZxidDigest struct {
	Zxid    int64
	Version int32
	Digest  uint64
}

// Snapshot is one decoded snapshot file.
type Snapshot struct {
	// Tree holds the nodes and sessions; its LastZxid is the zxid the
	// caller gave (the file name's).
	Tree *Tree
	// Digest is the trailing zxid digest, nil when the file has none.
	Digest *ZxidDigest
}

// ReadSnapshot decodes a snapshot file's bytes (uncompressed), checking
// its Adler32 seals. name is used in errors; zxid (from the file name)
// becomes the tree's LastZxid.
func ReadSnapshot(name string, data []byte, zxid int64) (*Snapshot, error) {
	d := jute.NewDecoder(data)
	bad := func(format string, args ...any) error {
		return &FormatError{File: name, Offset: int64(d.Offset()), Msg: fmt.Sprintf(format, args...)}
	}
	short := func(what string) error {
		if errors.Is(d.Err(), jute.ErrShort) {
			return bad("truncated in %s", what)
		}
		return bad("%s: %v", what, d.Err())
	}
	if m := d.ReadInt(); d.Err() != nil || m != snapMagic {
		return nil, bad("not a ZooKeeper snapshot (magic %08x, want %08x \"ZKSN\")", uint32(m), uint32(snapMagic))
	}
	if v := d.ReadInt(); v != formatVersion {
		return nil, bad("snapshot format version %d, want %d", v, formatVersion)
	}
	d.ReadLong() // dbid
	t := newTree()
	// Some 100 bytes a node is typical: size the table once, not by
	// doubling.
	t.nodes = make(map[string]*datatree.NodeImage, len(data)/100)
	t.LastZxid = zxid
	ns := d.ReadInt()
	if d.Err() != nil {
		return nil, short("header")
	}
	if ns < 0 || int64(ns)*12 > int64(d.Remaining()) {
		return nil, bad("bad session count %d", ns)
	}
	for i := int32(0); i < ns; i++ {
		id := d.ReadLong()
		t.Sessions[id] = d.ReadInt()
	}
	// ACL cache: map size, then (id, ACL vector) pairs.
	nacl := d.ReadInt()
	if d.Err() != nil {
		return nil, short("session table")
	}
	if nacl < 0 || int64(nacl)*12 > int64(d.Remaining()) {
		return nil, bad("bad ACL cache size %d", nacl)
	}
	aclByID := make(map[int64][]jute.ACL, nacl+1)
	aclByID[openACLID] = datatree.OpenACLUnsafe
	for i := int32(0); i < nacl; i++ {
		id := d.ReadLong()
		list := d.ReadACLs()
		if d.Err() != nil {
			return nil, short("ACL cache")
		}
		if list == nil {
			return nil, bad("ACL list %d is null", id)
		}
		aclByID[id] = t.internACL(list)
	}
	// Nodes until the "/" terminator; the root is written as "".
	for {
		path := d.ReadString()
		if d.Err() != nil {
			return nil, short("node path")
		}
		if path == "/" {
			break
		}
		off := d.Offset()
		n := &datatree.NodeImage{Path: path}
		n.Data = d.ReadBuffer()
		aclID := d.ReadLong()
		n.Czxid = d.ReadLong()
		n.Mzxid = d.ReadLong()
		n.Ctime = d.ReadLong()
		n.Mtime = d.ReadLong()
		n.Version = d.ReadInt()
		n.Cversion = d.ReadInt()
		n.Aversion = d.ReadInt()
		n.EphemeralOwner = d.ReadLong()
		n.Pzxid = d.ReadLong()
		if d.Err() != nil {
			return nil, short("node " + path)
		}
		acl, ok := aclByID[aclID]
		if !ok {
			return nil, &FormatError{File: name, Offset: int64(off), Msg: fmt.Sprintf("node %q refers to ACL %d, which the ACL cache does not hold", path, aclID)}
		}
		n.ACL = acl
		if path == "" {
			if len(t.nodes) != 0 {
				return nil, bad("a second root node")
			}
			n.Path = "/"
			t.put(n)
			continue
		}
		if !strings.HasPrefix(path, "/") || t.nodes[path] != nil {
			return nil, &FormatError{File: name, Offset: int64(off), Msg: fmt.Sprintf("bad or repeated node path %q", path)}
		}
		if t.nodes[parentPath(path)] == nil {
			return nil, &FormatError{File: name, Offset: int64(off), Msg: fmt.Sprintf("node %q comes without its parent", path)}
		}
		t.put(n)
	}
	if t.nodes["/"] == nil {
		return nil, bad("no root node")
	}
	if err := checkSeal(name, d, data); err != nil {
		return nil, err
	}
	s := &Snapshot{Tree: t}
	// What may follow, each block sealed again: the 3.6+ zxid digest
	// (zxid, version, digest: 20 bytes) when zookeeper.digest.enabled,
	// then 3.9's last processed zxid (8 bytes) when enabled. ZooKeeper
	// knows which from its settings; here the length tells.
	const seal = 8 + 4 + 1
	rest := d.Remaining()
	if rest == 20+seal || rest == 20+seal+8+seal {
		zd := &ZxidDigest{Zxid: d.ReadLong(), Version: d.ReadInt(), Digest: uint64(d.ReadLong())}
		if err := checkSeal(name, d, data); err != nil {
			return nil, err
		}
		// As DataTree.deserializeZxidDigest: an empty digest, or one
		// older than the snapshot, is not used.
		if zd.Zxid > 0 && zd.Zxid >= zxid {
			s.Digest = zd
		}
	}
	if d.Remaining() == 8+seal {
		// 3.9's lastProcessedZxid: the replay starts from the file name's
		// zxid regardless, which covers it.
		d.ReadLong()
		if err := checkSeal(name, d, data); err != nil {
			return nil, err
		}
	}
	if d.Remaining() != 0 {
		return nil, bad("%d unexpected bytes after the snapshot", d.Remaining())
	}
	return s, nil
}

// checkSeal reads a seal (SnapStream.sealStream: the Adler32 of every byte
// so far, then the string "/") and checks it.
func checkSeal(name string, d *jute.Decoder, data []byte) error {
	off := d.Offset()
	want := adler32.Checksum(data[:off])
	got := d.ReadLong()
	slash := d.ReadString()
	if d.Err() != nil {
		return &FormatError{File: name, Offset: int64(off), Msg: "truncated before its checksum"}
	}
	if uint32(got) != want || got>>32 != 0 {
		return &FormatError{File: name, Offset: int64(off), Msg: fmt.Sprintf("checksum %08x, computed %08x: the file is damaged", got, want)}
	}
	if slash != "/" {
		return &FormatError{File: name, Offset: int64(off + 8), Msg: "no \"/\" after the checksum"}
	}
	return nil
}

// WriteSnapshot writes tree and sessions as a ZooKeeper 3.8 snapshot file
// (uncompressed) ending with the zxid digest of 3.6+: the tree's digest at
// its LastZxid, which it returns. ZooKeeper takes the file's zxid from its
// name, snapshot.<LastZxid in hex>. Equal ACL lists share one ACL cache
// entry, numbered from 1 in order of first use.
func WriteSnapshot(w io.Writer, tree *datatree.Tree, sessionIDs []int64, timeouts []int32) (uint64, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	sum := adler32.New()
	out := io.MultiWriter(bw, sum)
	e := jute.NewEncoder(make([]byte, 0, 64<<10))
	flush := func() error {
		_, err := out.Write(e.Bytes())
		e.Reset()
		return err
	}
	e.WriteInt(snapMagic)
	e.WriteInt(formatVersion)
	e.WriteLong(-1) // dbid
	e.WriteInt(int32(len(sessionIDs)))
	for i, id := range sessionIDs {
		e.WriteLong(id)
		e.WriteInt(timeouts[i])
	}
	// The ACL cache comes before the nodes, so number the lists first.
	ids := map[string]int64{}
	var lists [][]jute.ACL
	if err := tree.Images(func(im *datatree.NodeImage) error {
		k := aclKey(im.ACL)
		if _, ok := ids[k]; !ok {
			ids[k] = int64(len(lists) + 1)
			lists = append(lists, im.ACL)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	e.WriteInt(int32(len(lists)))
	for i, l := range lists {
		e.WriteLong(int64(i + 1))
		e.WriteACLs(l)
	}
	var digest uint64
	err := tree.Images(func(im *datatree.NodeImage) error {
		digest += nodeDigest(im)
		if im.Path == "/" {
			e.WriteString("")
		} else {
			e.WriteString(im.Path)
		}
		e.WriteBuffer(im.Data)
		e.WriteLong(ids[aclKey(im.ACL)])
		e.WriteLong(im.Czxid)
		e.WriteLong(im.Mzxid)
		e.WriteLong(im.Ctime)
		e.WriteLong(im.Mtime)
		e.WriteInt(im.Version)
		e.WriteInt(im.Cversion)
		e.WriteInt(im.Aversion)
		e.WriteLong(im.EphemeralOwner)
		e.WriteLong(im.Pzxid)
		if e.Len() >= 32<<10 {
			return flush()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("zkformat: write snapshot: %w", err)
	}
	e.WriteString("/")
	if err := flush(); err != nil {
		return 0, fmt.Errorf("zkformat: write snapshot: %w", err)
	}
	// Seal, digest, seal again (FileSnap.serialize); each seal's checksum
	// covers every byte before it.
	seal := func() error {
		e.WriteLong(int64(sum.Sum32()))
		e.WriteString("/")
		return flush()
	}
	if err := seal(); err != nil {
		return 0, fmt.Errorf("zkformat: write snapshot: %w", err)
	}
	e.WriteLong(tree.LastZxid())
	e.WriteInt(digestVersion)
	e.WriteLong(int64(digest))
	if err := flush(); err != nil {
		return 0, fmt.Errorf("zkformat: write snapshot: %w", err)
	}
	if err := seal(); err != nil {
		return 0, fmt.Errorf("zkformat: write snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("zkformat: write snapshot: %w", err)
	}
	return digest, nil
}

func aclKey(acl []jute.ACL) string {
	var b strings.Builder
	for _, a := range acl {
		fmt.Fprintf(&b, "%d\x00%s\x00%s\x00", a.Perms, a.Id.Scheme, a.Id.Id)
	}
	return b.String()
}
