package datatree

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/zkd/zkd/jute"
)

// Txn is the context of one write, stamped by the leader and replicated in
// the log entry.
type Txn struct {
	Zxid      int64
	Time      int64     // ms since the epoch (leader's clock): ctime/mtime
	SessionID int64     // the requesting session; ephemeralOwner of ephemerals
	Auth      []jute.Id // the requester's identities; SuperID passes every ACL check
}

// Config tunes a Tree. The zero value is valid; DefaultConfig documents the
// defaults.
type Config struct {
	// ExtendedTypes is zookeeper.extendedTypesEnabled: TTL creates are
	// allowed (otherwise they fail with ErrUnimplemented) and ephemeralOwner
	// values with the high byte 0xFF are TTL nodes. Default false.
	ExtendedTypes bool
	// ContainerMaxNeverUsedMs is znode.container.maxNeverUsedIntervalMs: a
	// container that never had a child becomes an expiry candidate this many
	// ms after its mtime. 0 (the default) never expires such containers.
	ContainerMaxNeverUsedMs int64
	// ExtraAuthSchemes lists ACL schemes besides digest and ip that have an
	// authentication provider (e.g. "sasl", "x509"): their ids are valid in
	// ACLs, count as authenticated for the "auth" scheme, and match by
	// equality. Default none, as in ZooKeeper without extra providers.
	ExtraAuthSchemes []string
	// EnforceQuota is zookeeper.enforceQuota: a create or setData that
	// would take a quota'd subtree past a hard limit (countHardLimit,
	// byteHardLimit in its zookeeper_limits node) fails with
	// ErrQuotaExceeded. Soft limits are never enforced. Default false.
	EnforceQuota bool
	// Observer receives the tree's figures for monitoring; its zero value
	// observes nothing.
	Observer Observer
}

// Observer hears what ZooKeeper's DataTree reports to its metrics. Each
// field may be nil. The hooks run with the tree locked, on the goroutine
// that applied the write: they must return quickly and must not call
// into the tree. They never change what is applied.
type Observer struct {
	// Wrote is called for each node a committed write created, deleted
	// or set, with the bytes ZooKeeper's write_per_namespace counts: the
	// path's length plus the data's (none for a delete).
	Wrote func(path string, n int)
	// WatchesFired is called for each trigger that notified watchers: the
	// event type and how many (ZooKeeper's node_*_watch_count).
	WatchesFired func(typ int32, n int)
}

// DefaultConfig returns ZooKeeper 3.8's defaults.
func DefaultConfig() Config { return Config{} }

// Validate reports a bad field.
func (c Config) Validate() error {
	if c.ContainerMaxNeverUsedMs < 0 {
		return &Error{jute.CodeBadArguments, "datatree: ContainerMaxNeverUsedMs must not be negative"}
	}
	return nil
}

// persisted is ZooKeeper's StatPersisted but for aversion, which the node
// keeps beside its ACL reference so that the node packs into 112 bytes.
// cversion counts child creates.
type persisted struct {
	czxid, mzxid, pzxid int64
	ctime, mtime        int64
	ephemeralOwner      int64
	version, cversion   int32
}

// node is one znode. Its full path is not stored: it is the names on the
// way up through parent. The layout is sized for the allocator's 96-byte
// class: name and data share one allocation (see nameData) and the ACL is
// a 4-byte reference into the tree's cache.
type node struct {
	parent   *node
	nd       nameData
	kids     *kidSet // nil when there are none
	acl      aclRef
	aversion int32 // StatPersisted's, kept out of stat for the packing
	stat     persisted
}

// nameData is a node's name and data in one allocation: the name's bytes
// followed by the data's, which nothing writes to once made (new data gets
// a new allocation, so strings and slices taken from the old one stay
// valid). Its zero value is an empty name with empty (not nil) data.
type nameData struct {
	p       *byte
	nameLen uint32
	dataLen uint32 // nilDataLen for nil data (ZooKeeper's null)
}

// nilDataLen marks data that is nil (a -1 length on the wire and in
// snapshots) as opposed to empty. Data is far below 4 GiB (jute's buffer
// limit is an int32), so the length cannot reach it.
const nilDataLen = ^uint32(0)

// makeNameData copies name and data (nil kept apart from empty) into one
// allocation.
func makeNameData(name string, data []byte) nameData {
	dl := uint32(len(data))
	if data == nil {
		dl = nilDataLen
	}
	if len(name)+len(data) == 0 {
		return nameData{dataLen: dl}
	}
	buf := make([]byte, len(name)+len(data))
	copy(buf, name)
	copy(buf[len(name):], data)
	return nameData{p: unsafe.SliceData(buf), nameLen: uint32(len(name)), dataLen: dl}
}

// name is the node's name ("" for the root).
func (n *node) name() string { return unsafe.String(n.nd.p, n.nd.nameLen) }

// dataLen is the length of the node's data (0 when nil).
func (n *node) dataLen() int {
	if n.nd.dataLen == nilDataLen {
		return 0
	}
	return int(n.nd.dataLen)
}

// data is the node's data as a string sharing its memory ("" when nil).
func (n *node) data() string {
	if n.dataLen() == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(n.nd.p), n.nd.nameLen)), n.nd.dataLen)
}

// setData gives n new data (nil kept apart from empty) in a new
// allocation with its name.
func (n *node) setData(data []byte) { n.nd = makeNameData(n.name(), data) }

// bytes returns the node's data without copying: the slice shares the
// node's memory, which nothing writes to, and callers must not modify
// it. Nil data gives nil and empty data a non-nil empty slice.
func (n *node) bytes() []byte {
	switch n.nd.dataLen {
	case nilDataLen:
		return nil
	case 0:
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(n.nd.p), n.nd.nameLen)), n.nd.dataLen)
}

// Ephemeral owner encodings (EphemeralType).
const (
	containerOwner   int64 = -1 << 63 // 0x8000000000000000
	extendedMask     int64 = -1 << 56 // 0xFF00000000000000
	reservedBitsMask int64 = 0x00ffff0000000000
	// MaxTTL is the largest TTL in ms (EphemeralType.TTL.maxValue, 40 bits).
	MaxTTL int64 = 0xffffffffff
)

type ephType uint8

const (
	typeVoid ephType = iota
	typeNormal
	typeContainer
	typeTTL
	typeInvalid // extended bits set to an unknown feature
)

// ephemeralType is EphemeralType.get.
func (t *Tree) ephemeralType(owner int64) ephType {
	if t.cfg.ExtendedTypes && owner&extendedMask == extendedMask {
		if owner&reservedBitsMask == 0 {
			return typeTTL
		}
		return typeInvalid
	}
	switch owner {
	case containerOwner:
		return typeContainer
	case 0:
		return typeVoid
	}
	return typeNormal
}

func ttlOf(owner int64) int64 { return owner &^ (extendedMask | reservedBitsMask) }

// Tree is the znode tree. It is safe for concurrent use: writes and reads may
// come from different goroutines.
type Tree struct {
	cfg Config

	mu         sync.RWMutex
	root       *node
	nodes      int   // real nodes, root included
	dataSize   int64 // sum of len(path)+len(data), as ZooKeeper's approximate data size
	acls       aclCache
	ephemerals map[int64]map[*node]struct{} // session → its ephemerals
	containers map[*node]struct{}
	ttls       map[*node]struct{}
	tombstones map[*node]int64     // lock delay: expired sessions' lock nodes → removal deadline (tombstone.go)
	quotas     map[string]struct{} // paths with a zookeeper_limits node; nil when none
	lastZxid   atomic.Int64
	// digest is ZooKeeper's tree digest, kept by every write (digest.go);
	// digestBuf and digestStat are the writers' scratch space for hashing.
	digest     uint64
	digestBuf  []byte
	digestStat [60]byte

	wmu     sync.Mutex
	dataW   watchTable
	childW  watchTable
	pending []pendingEvent // reused under mu (write lock) only
}

// New returns a tree as on a fresh ZooKeeper 3.8: "/", "/zookeeper",
// "/zookeeper/quota" and "/zookeeper/config" (READ-only for world, aversion
// -1), all with zero zxids and times.
func New(cfg Config) *Tree {
	t := newEmpty(cfg)
	open := t.acls.intern(OpenACLUnsafe)
	t.root = &node{acl: open}
	t.nodes = 1
	t.dataSize = 1
	zk := t.addInitial(t.root, "zookeeper", OpenACLUnsafe)
	t.addInitial(zk, "quota", OpenACLUnsafe)
	cfgNode := t.addInitial(zk, "config", ReadACLUnsafe)
	cfgNode.aversion = -1
	t.digest = t.computeDigest()
	return t
}

func newEmpty(cfg Config) *Tree {
	t := &Tree{
		cfg:        cfg,
		acls:       newACLCache(),
		ephemerals: make(map[int64]map[*node]struct{}),
		containers: make(map[*node]struct{}),
		ttls:       make(map[*node]struct{}),
		tombstones: make(map[*node]int64),
	}
	t.dataW.init()
	t.childW.init()
	return t
}

// addInitial links a system node without touching the parent's cversion,
// as ZooKeeper's DataTree constructor does.
func (t *Tree) addInitial(parent *node, name string, acl []jute.ACL) *node {
	n := &node{parent: parent, nd: makeNameData(name, []byte{}), acl: t.acls.intern(acl)}
	if parent.kids == nil {
		parent.kids = newKidSet(1)
	}
	parent.kids.add(n)
	t.nodes++
	t.dataSize += int64(len(n.path()))
	return n
}

// path rebuilds a node's full path.
func (n *node) path() string {
	if n.parent == nil {
		return "/"
	}
	depth, size := 0, 0
	for m := n; m.parent != nil; m = m.parent {
		depth++
		size += 1 + len(m.name())
	}
	var b strings.Builder
	b.Grow(size)
	names := make([]string, depth)
	i := depth
	for m := n; m.parent != nil; m = m.parent {
		i--
		names[i] = m.name()
	}
	for _, s := range names {
		b.WriteByte('/')
		b.WriteString(s)
	}
	return b.String()
}

// lookup finds the node at path exactly as ZooKeeper's nodes map would: ""
// and "/" are the root; anything else must be "/"-separated non-empty names.
// Callers hold mu.
func (t *Tree) lookup(path string) *node {
	if path == "" || path == "/" {
		return t.root
	}
	if path[0] != '/' {
		return nil
	}
	n := t.root
	rest := path[1:]
	for {
		seg, tail, more := strings.Cut(rest, "/")
		c := n.kids.get(seg)
		if c == nil {
			return nil
		}
		n = c
		if !more {
			return n
		}
		rest = tail
	}
}

// clientStat is DataNode.copyStat: the reported cversion counts creates and
// deletes (2*persisted - numChildren) and special owners read as 0.
func (t *Tree) clientStat(n *node) jute.Stat {
	nc := int32(n.kids.size())
	owner := n.stat.ephemeralOwner
	if t.ephemeralType(owner) != typeNormal {
		owner = 0
	}
	return jute.Stat{
		Czxid:          n.stat.czxid,
		Mzxid:          n.stat.mzxid,
		Ctime:          n.stat.ctime,
		Mtime:          n.stat.mtime,
		Version:        n.stat.version,
		Cversion:       n.stat.cversion*2 - nc,
		Aversion:       n.aversion,
		EphemeralOwner: owner,
		DataLength:     int32(n.dataLen()),
		NumChildren:    nc,
		Pzxid:          n.stat.pzxid,
	}
}

// GetData returns the node's data and Stat after checking READ against auth
// (FinalRequestProcessor). A non-nil w registers a one-shot data watch, only
// when the read succeeds, as ZooKeeper does. The returned slice is shared
// with the tree and must not be modified.
func (t *Tree) GetData(path string, auth []jute.Id, w Watcher) ([]byte, jute.Stat, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.lookup(path)
	if n == nil {
		return nil, jute.Stat{}, pathErr(ErrNoNode, path)
	}
	if !checkACL(t.aclOf(n), jute.PermRead, auth) {
		return nil, jute.Stat{}, pathErr(ErrNoAuth, path)
	}
	if w != nil {
		t.wmu.Lock()
		t.dataW.add(path, w, modeStandard)
		t.wmu.Unlock()
	}
	return n.bytes(), t.clientStat(n), nil
}

// Exists returns the node's Stat. It checks no ACL. A non-nil w registers a
// one-shot data watch whether or not the node exists (an exist watch fires
// NodeCreated when the node appears). A path containing NUL fails with
// ErrBadArguments and registers nothing, as in FinalRequestProcessor.
func (t *Tree) Exists(path string, w Watcher) (jute.Stat, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return jute.Stat{}, pathErr(ErrBadArguments, path)
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if w != nil {
		t.wmu.Lock()
		t.dataW.add(path, w, modeStandard)
		t.wmu.Unlock()
	}
	n := t.lookup(path)
	if n == nil {
		return jute.Stat{}, pathErr(ErrNoNode, path)
	}
	return t.clientStat(n), nil
}

// GetChildren returns the node's child names, sorted, and its Stat after
// checking READ. A non-nil w registers a one-shot child watch when the read
// succeeds.
func (t *Tree) GetChildren(path string, auth []jute.Id, w Watcher) ([]string, jute.Stat, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.lookup(path)
	if n == nil {
		return nil, jute.Stat{}, pathErr(ErrNoNode, path)
	}
	if !checkACL(t.aclOf(n), jute.PermRead, auth) {
		return nil, jute.Stat{}, pathErr(ErrNoAuth, path)
	}
	if w != nil {
		t.wmu.Lock()
		t.childW.add(path, w, modeStandard)
		t.wmu.Unlock()
	}
	names := make([]string, 0, n.kids.size())
	for c := range n.kids.all() {
		names = append(names, c.name())
	}
	slices.Sort(names)
	return names, t.clientStat(n), nil
}

// GetACL returns the node's ACL and Stat. It needs READ or ADMIN; without
// ADMIN the hash part of digest ids is replaced by "x", as in 3.8.
func (t *Tree) GetACL(path string, auth []jute.Id) ([]jute.ACL, jute.Stat, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.lookup(path)
	if n == nil {
		return nil, jute.Stat{}, pathErr(ErrNoNode, path)
	}
	if !checkACL(t.aclOf(n), jute.PermRead|jute.PermAdmin, auth) {
		return nil, jute.Stat{}, pathErr(ErrNoAuth, path)
	}
	st := t.clientStat(n)
	if checkACL(t.aclOf(n), jute.PermAdmin, auth) {
		return slices.Clone(t.aclOf(n)), st, nil
	}
	return redactDigests(t.aclOf(n)), st, nil
}

// GetEphemerals lists the ephemerals of session whose path starts with
// prefix (every one for "", "/" or a blank prefix), sorted.
func (t *Tree) GetEphemerals(session int64, prefix string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	all := strings.TrimSpace(prefix) == "" || strings.TrimSpace(prefix) == "/"
	var out []string
	for n := range t.ephemerals[session] {
		p := n.path()
		if all || strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// GetAllChildrenNumber counts every descendant of path after checking READ.
// For "/" that is every node but the root, system nodes included.
func (t *Tree) GetAllChildrenNumber(path string, auth []jute.Id) (int32, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.lookup(path)
	if n == nil {
		return 0, pathErr(ErrNoNode, path)
	}
	if !checkACL(t.aclOf(n), jute.PermRead, auth) {
		return 0, pathErr(ErrNoAuth, path)
	}
	if n == t.root {
		if path == "" {
			// ZooKeeper counts the keys under path+"/" of its node table,
			// which holds the root twice (as "" and "/"): for the empty
			// path that is every node but "", so one more than for "/".
			return int32(t.nodes), nil
		}
		return int32(t.nodes - 1), nil
	}
	count := 0
	stack := []*node{n}
	for len(stack) > 0 {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := range m.kids.all() {
			count++
			if c.kids != nil {
				stack = append(stack, c)
			}
		}
	}
	return int32(count), nil
}

// LastZxid returns the zxid of the last applied write or noted zxid.
func (t *Tree) LastZxid() int64 { return t.lastZxid.Load() }

// NoteZxid records that zxid was consumed (a session op or any txn that does
// not reach the tree's write methods). Write methods note their own zxid,
// failed or not.
func (t *Tree) NoteZxid(zxid int64) { t.lastZxid.Store(zxid) }

// NodeCount returns ZooKeeper's znode_count, which counts the root twice
// (ZooKeeper keys it under "" and "/"): real nodes + 1.
func (t *Tree) NodeCount() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.nodes + 1
}

// ApproxDataSize returns ZooKeeper's approximate_data_size: the sum over
// nodes of len(path)+len(data).
func (t *Tree) ApproxDataSize() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.dataSize
}

// EphemeralCount returns how many session ephemerals exist (containers and
// TTL nodes excluded, as in ZooKeeper's ephemerals_count).
func (t *Tree) EphemeralCount() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	c := 0
	for _, s := range t.ephemerals {
		c += len(s)
	}
	return c
}
