package datatree

import (
	"slices"
	"strconv"
	"strings"

	"github.com/zkd/zkd/jute"
)

// CreateOp is a create request.
type CreateOp struct {
	Path string
	Data []byte
	ACL  []jute.ACL
	Mode int32 // jute.ModePersistent … jute.ModePersistentSequentialWithTTL
	TTL  int64 // ms; read only for jute.OpCreateTTL
	// Type is the request's opcode: jute.OpCreate, OpCreate2,
	// OpCreateContainer or OpCreateTTL. It decides the node's kind as in
	// ZooKeeper (createContainer always makes a container, createTTL a TTL
	// node, create/create2 an ephemeral or persistent node). 0 infers it
	// from Mode: container mode → createContainer, TTL modes → createTTL,
	// others → create. Multi ignores it and Op.Type alike: ZooKeeper
	// rebuilds every create of a multi from its mode (see Multi).
	Type int32
}

// Op is one operation of a multi.
type Op struct {
	Type    int32 // jute.OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData, OpCheck
	Create  CreateOp
	Path    string // delete, setData, check
	Data    []byte // setData
	Version int32  // delete, setData, check
}

// OpResult is the outcome of one op of a multi.
type OpResult struct {
	// Type is jute.OpError when the multi failed. On success it is the op's
	// type, except for creates: ZooKeeper reports jute.OpCreate (answer
	// with the path only), OpCreateContainer or OpCreateTTL (answer with
	// path and Stat) according to the mode, even for a create2 op.
	Type int32
	Err  error     // when the multi failed: nil for ops before the failing one (code 0), its error, then ErrRuntimeInconsistency
	Path string    // creates
	Stat jute.Stat // creates and setData
}

// writer applies one write (or one multi) under the tree's write lock,
// collecting watch events and, in a multi, undo steps.
type writer struct {
	t        *Tree
	tx       *Txn
	multi    bool
	undo     []func()
	events   []pendingEvent
	triggers []trigger
	trigBuf  [3]trigger
	// releases are ACL references dropped by deletes inside a multi; they
	// are released only when the multi commits.
	releases []aclRef
	// wrote lists the nodes written, for Config.Observer.Wrote once the
	// write commits; kept only when that hook is set.
	wrote []wroteNode
}

// wroteNode is one node a write changed and its size as ZooKeeper's
// write_per_namespace counts it.
type wroteNode struct {
	path string
	n    int
}

// noteWrite records that path was written with n bytes of path and data.
func (w *writer) noteWrite(path string, n int) {
	if w.t.cfg.Observer.Wrote != nil {
		w.wrote = append(w.wrote, wroteNode{path, n})
	}
}

func (w *writer) deferRelease(ref aclRef) { w.releases = append(w.releases, ref) }

// trigger is one watch trigger queued by a write; they run in order when
// the write commits, so a failed multi consumes no one-shot watch.
type trigger struct {
	tbl  *watchTable
	path string
	typ  int32
	acl  []jute.ACL
	// suppressPrev skips the watchers the previous trigger fired (a deleted
	// node's child watchers after its data watchers).
	suppressPrev bool
}

// fire queues a trigger of typ on path in tbl.
func (w *writer) fire(tbl *watchTable, path string, typ int32, acl []jute.ACL, suppressPrev bool) {
	w.triggers = append(w.triggers, trigger{tbl, path, typ, acl, suppressPrev})
}

// runTriggers fires the queued triggers and turns them into events.
func (w *writer) runTriggers() {
	if len(w.triggers) == 0 {
		return
	}
	w.t.wmu.Lock()
	defer w.t.wmu.Unlock()
	var buf, prev []Watcher
	for _, tr := range w.triggers {
		start := len(buf)
		buf = tr.tbl.trigger(tr.path, tr.typ, buf)
		got := buf[start:]
		if f := w.t.cfg.Observer.WatchesFired; f != nil && len(got) > 0 {
			f(tr.typ, len(got))
		}
		for _, x := range got {
			if tr.suppressPrev && slices.Contains(prev, x) {
				continue
			}
			w.events = append(w.events, pendingEvent{w: x, ev: jute.WatcherEvent{Type: tr.typ, State: jute.StateSyncConnected, Path: tr.path}, acl: tr.acl})
		}
		prev = got
	}
}

// begin takes the write lock; end notes the zxid, delivers and unlocks.
func (t *Tree) begin(w *writer, tx *Txn, multi bool) {
	t.mu.Lock()
	w.t, w.tx, w.multi = t, tx, multi
	w.triggers = w.trigBuf[:0]
}

func (w *writer) end() {
	w.runTriggers()
	// lastZxid only grows: the config write of a new ensemble carries the
	// config's version (0) as its mzxid, as ZooKeeper's does.
	if w.tx.Zxid > w.t.lastZxid.Load() {
		w.t.lastZxid.Store(w.tx.Zxid)
	}
	// Deliver before unlocking: a reader that could see this write's
	// effect must find its events already queued on its connection.
	deliver(w.events)
	if f := w.t.cfg.Observer.Wrote; f != nil {
		for _, wn := range w.wrote {
			f(wn.path, wn.n)
		}
	}
	w.t.mu.Unlock()
}

// Create validates and applies a create exactly as ZooKeeper's
// PrepRequestProcessor and DataTree do, returning the created path (with
// the sequential suffix) and its Stat. On failure nothing changes.
func (t *Tree) Create(tx *Txn, op CreateOp) (string, jute.Stat, error) {
	var w writer
	t.begin(&w, tx, false)
	defer w.end()
	return w.create(op, op.Type)
}

// Delete deletes path if version is -1 or matches, it has no children and
// the caller has DELETE on the parent.
func (t *Tree) Delete(tx *Txn, path string, version int32) error {
	var w writer
	t.begin(&w, tx, false)
	defer w.end()
	return w.delete(path, version)
}

// SetData replaces path's data if version is -1 or matches and the caller
// has WRITE; it returns the new Stat.
func (t *Tree) SetData(tx *Txn, path string, data []byte, version int32) (jute.Stat, error) {
	var w writer
	t.begin(&w, tx, false)
	defer w.end()
	return w.setData(path, data, version)
}

// SetACL replaces path's ACL if aversion is -1 or matches and the caller has
// ADMIN; it returns the new Stat. It fires no watches.
func (t *Tree) SetACL(tx *Txn, path string, acl []jute.ACL, aversion int32) (jute.Stat, error) {
	var w writer
	t.begin(&w, tx, false)
	defer w.end()
	return w.setACL(path, acl, aversion)
}

// Multi applies ops all-or-nothing. Each op sees the effects of the earlier
// ones. A create op's kind and result type follow its mode, as ZooKeeper's
// MultiOperationRecord decoding makes them: a createTTL op with a plain
// mode makes a plain node, a createContainer op with a plain mode a plain
// node, and a TTL mode outside a createTTL op (Create.TTL unset) fails with
// ErrBadArguments. On the first failure everything is rolled back, no watch fires, and
// every result has Type jute.OpError with Err nil before the failing op, its
// error at it and ErrRuntimeInconsistency after it.
func (t *Tree) Multi(tx *Txn, ops []Op) (results []OpResult, failed bool) {
	var w writer
	t.begin(&w, tx, true)
	defer w.end()
	digest := t.digest // restored with the rest on a rollback
	results = make([]OpResult, len(ops))
	failedAt := -1
	var ferr error
	for i := range ops {
		op := &ops[i]
		var err error
		r := OpResult{Type: op.Type}
		switch op.Type {
		case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
			// ZooKeeper's MultiOperationRecord rebuilds every create
			// from its flags, so the mode decides the opcode (and the
			// result type) whatever the op said.
			r.Type = createOpcode(op.Create.Mode)
			r.Path, r.Stat, err = w.create(op.Create, r.Type)
		case jute.OpDelete:
			err = w.delete(op.Path, op.Version)
		case jute.OpSetData:
			r.Stat, err = w.setData(op.Path, op.Data, op.Version)
		case jute.OpCheck:
			err = w.check(op.Path, op.Version)
		default:
			err = pathErr(ErrBadArguments, op.Path)
		}
		if err != nil {
			failedAt, ferr = i, err
			break
		}
		results[i] = r
	}
	if failedAt < 0 {
		for _, en := range w.releases {
			t.acls.release(en)
		}
		return results, false
	}
	for i := len(w.undo) - 1; i >= 0; i-- {
		w.undo[i]()
	}
	t.digest = digest
	w.undo = nil
	w.triggers = nil
	w.wrote = nil
	for i := range results {
		results[i] = OpResult{Type: jute.OpError}
		switch {
		case i == failedAt:
			results[i].Err = ferr
		case i > failedAt:
			results[i].Err = ErrRuntimeInconsistency
		}
	}
	return results, true
}

// CloseSession deletes every ephemeral of session in path order, firing
// watches, and forgets the session's ephemerals.
func (t *Tree) CloseSession(tx *Txn, session int64) {
	var w writer
	t.begin(&w, tx, false)
	defer w.end()
	set := t.ephemerals[session]
	if len(set) == 0 {
		return
	}
	type item struct {
		path string
		n    *node
	}
	items := make([]item, 0, len(set))
	for n := range set {
		items = append(items, item{n.path(), n})
	}
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.path, b.path) })
	for _, it := range items {
		w.deleteNode(it.n, it.path)
	}
	delete(t.ephemerals, session)
}

// DeleteExpired deletes path if it is still an expiry candidate at tx.Time:
// an empty container with cversion > 0 (or never used for longer than
// ContainerMaxNeverUsedMs), or a childless TTL node with tx.Time-mtime > ttl.
// Otherwise it returns ErrBadArguments (bad or special path), ErrNoNode,
// ErrNotEmpty, or ErrBadVersion (not a container or TTL node, or not
// expired), changing nothing. No ACL is checked (ZooKeeper's
// deleteContainer is server-internal).
func (t *Tree) DeleteExpired(tx *Txn, path string) error {
	var w writer
	t.begin(&w, tx, false)
	defer w.end()
	if _, _, ok := parentOf(path); !ok || strings.IndexByte(path, 0) >= 0 || isSpecialPath(path) {
		return pathErr(ErrBadArguments, path)
	}
	n := t.lookup(path)
	if n == nil {
		return pathErr(ErrNoNode, path)
	}
	if n.kids.size() > 0 {
		return pathErr(ErrNotEmpty, path)
	}
	if !t.expired(n, tx.Time) {
		return pathErr(ErrBadVersion, path)
	}
	w.deleteNode(n, path)
	return nil
}

// expired is ContainerManager's candidate test for one childless node.
func (t *Tree) expired(n *node, now int64) bool {
	if n.kids.size() > 0 {
		return false
	}
	switch t.ephemeralType(n.stat.ephemeralOwner) {
	case typeContainer:
		if n.stat.cversion > 0 {
			return true
		}
		return n.stat.cversion == 0 && t.cfg.ContainerMaxNeverUsedMs != 0 && now-n.stat.mtime > t.cfg.ContainerMaxNeverUsedMs
	case typeTTL:
		ttl := ttlOf(n.stat.ephemeralOwner)
		return ttl != 0 && now-n.stat.mtime > ttl
	}
	return false
}

// ExpiryCandidates lists, sorted, the containers and TTL nodes that
// DeleteExpired would delete at time now; at most max of them when max > 0.
func (t *Tree) ExpiryCandidates(now int64, max int) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []string
	for _, set := range []map[*node]struct{}{t.containers, t.ttls} {
		for n := range set {
			if t.expired(n, now) {
				out = append(out, n.path())
			}
		}
	}
	slices.Sort(out)
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return out
}

// appendSequence appends v as Java's String.format("%010d", v) does:
// zero-padded to ten characters, a minus sign counting as one.
func appendSequence(path string, v int32) string {
	b := make([]byte, 0, len(path)+11)
	b = append(b, path...)
	x := int64(v)
	width := 10
	if x < 0 {
		b = append(b, '-')
		x = -x
		width = 9
	}
	var digits [11]byte
	d := strconv.AppendInt(digits[:0], x, 10)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return string(append(b, d...))
}

// createOpcode is the opcode ZooKeeper's Op.create picks for a mode.
func createOpcode(mode int32) int32 {
	switch {
	case mode == jute.ModeContainer:
		return jute.OpCreateContainer
	case isTTLMode(mode):
		return jute.OpCreateTTL
	}
	return jute.OpCreate
}

func isTTLMode(mode int32) bool {
	return mode == jute.ModePersistentWithTTL || mode == jute.ModePersistentSequentialWithTTL
}

func isSequentialMode(mode int32) bool {
	return mode == jute.ModePersistentSequential || mode == jute.ModeEphemeralSequential || mode == jute.ModePersistentSequentialWithTTL
}

func isEphemeralMode(mode int32) bool {
	return mode == jute.ModeEphemeral || mode == jute.ModeEphemeralSequential
}

func (w *writer) create(op CreateOp, opcode int32) (string, jute.Stat, error) {
	t := w.t
	path := op.Path
	mode := op.Mode
	if mode < jute.ModePersistent || mode > jute.ModePersistentSequentialWithTTL {
		return "", jute.Stat{}, pathErr(ErrBadArguments, path)
	}
	if opcode == 0 {
		opcode = createOpcode(mode)
	}
	ttl := int64(-1)
	if opcode == jute.OpCreateTTL {
		ttl = op.TTL
	}
	// validateCreateRequest
	if isTTLMode(mode) {
		if !t.cfg.ExtendedTypes {
			return "", jute.Stat{}, pathErr(ErrUnimplemented, path)
		}
		if ttl <= 0 || ttl > MaxTTL {
			return "", jute.Stat{}, pathErr(ErrBadArguments, path)
		}
	} else if ttl >= 0 || opcode == jute.OpCreateTTL {
		return "", jute.Stat{}, pathErr(ErrBadArguments, path)
	}
	if isEphemeralMode(mode) && w.tx.SessionID == 0 {
		return "", jute.Stat{}, pathErr(ErrBadArguments, path)
	}
	// validatePathForCreate
	parentPath, _, ok := parentOf(path)
	if !ok || strings.IndexByte(path, 0) >= 0 {
		return "", jute.Stat{}, pathErr(ErrBadArguments, path)
	}
	acl, ok := t.fixupACL(op.ACL, w.tx.Auth)
	if !ok {
		return "", jute.Stat{}, pathErr(ErrInvalidACL, path)
	}
	if err := fencingErr(path, true); err != nil {
		return "", jute.Stat{}, err
	}
	parent := t.lookup(parentPath)
	if parent == nil {
		return "", jute.Stat{}, pathErr(ErrNoNode, parentPath)
	}
	if !checkACL(t.aclOf(parent), jute.PermCreate, w.tx.Auth) {
		return "", jute.Stat{}, pathErr(ErrNoAuth, path)
	}
	if isSequentialMode(mode) {
		path = appendSequence(path, parent.stat.cversion)
	}
	if !ValidatePath(path) {
		return "", jute.Stat{}, pathErr(ErrBadArguments, path)
	}
	if path == "/" {
		return "", jute.Stat{}, pathErr(ErrNodeExists, path)
	}
	name := path[len(parentPath)+1:]
	if parent.kids.get(name) != nil {
		return "", jute.Stat{}, pathErr(ErrNodeExists, path)
	}
	if t.ephemeralType(parent.stat.ephemeralOwner) == typeNormal {
		return "", jute.Stat{}, pathErr(ErrNoChildrenForEphemerals, path)
	}
	if err := t.checkQuota(path, int64(len(op.Data)), 1); err != nil {
		return "", jute.Stat{}, err
	}
	var owner int64
	switch {
	case opcode == jute.OpCreateContainer:
		owner = containerOwner
	case opcode == jute.OpCreateTTL:
		owner = extendedMask | ttl
	case isEphemeralMode(mode):
		owner = w.tx.SessionID
	}
	data := op.Data
	n := &node{
		parent: parent,
		nd:     makeNameData(name, data),
		acl:    t.acls.intern(acl),
		stat: persisted{
			czxid: w.tx.Zxid, mzxid: w.tx.Zxid, pzxid: w.tx.Zxid,
			ctime: w.tx.Time, mtime: w.tx.Time,
			ephemeralOwner: owner,
		},
	}
	oldCv, oldPz := parent.stat.cversion, parent.stat.pzxid
	t.digestChange(parentPath, parent, func() {
		if newCv := oldCv + 1; newCv > oldCv {
			parent.stat.cversion = newCv
			parent.stat.pzxid = w.tx.Zxid
		}
	})
	t.link(n, len(path))
	t.digest += t.nodeDigest(path, n)
	if w.multi {
		w.undo = append(w.undo, func() {
			t.unlink(n, len(path))
			t.acls.release(n.acl)
			parent.stat.cversion, parent.stat.pzxid = oldCv, oldPz
		})
	}
	st := t.clientStat(n)
	w.quotaOnCreate(parentPath, name, path, len(data))
	w.fire(&t.dataW, path, jute.EventNodeCreated, t.aclOf(n), false)
	if parentPath == "" {
		parentPath = "/"
	}
	w.fire(&t.childW, parentPath, jute.EventNodeChildrenChanged, t.aclOf(parent), false)
	w.noteWrite(path, len(path)+len(data))
	return path, st, nil
}

// link inserts n (whose path is pathLen bytes long) under its parent and
// indexes it; unlink reverses it. Neither touches ACL references or the
// parent's stat.
func (t *Tree) link(n *node, pathLen int) {
	p := n.parent
	if p.kids == nil {
		p.kids = newKidSet(1)
	}
	p.kids.add(n)
	t.nodes++
	t.dataSize += int64(pathLen + n.dataLen())
	t.index(n)
}

func (t *Tree) unlink(n *node, pathLen int) {
	p := n.parent
	p.kids.remove(n)
	if p.kids.size() == 0 {
		p.kids = nil
	}
	t.nodes--
	t.dataSize -= int64(pathLen + n.dataLen())
	owner := n.stat.ephemeralOwner
	switch t.ephemeralType(owner) {
	case typeContainer:
		delete(t.containers, n)
	case typeTTL:
		delete(t.ttls, n)
	case typeNormal, typeInvalid:
		if set := t.ephemerals[owner]; set != nil {
			delete(set, n)
			if len(set) == 0 {
				delete(t.ephemerals, owner)
			}
		}
	}
}

func (t *Tree) index(n *node) {
	owner := n.stat.ephemeralOwner
	switch t.ephemeralType(owner) {
	case typeContainer:
		t.containers[n] = struct{}{}
	case typeTTL:
		t.ttls[n] = struct{}{}
	case typeNormal, typeInvalid:
		set := t.ephemerals[owner]
		if set == nil {
			set = make(map[*node]struct{}, 1)
			t.ephemerals[owner] = set
		}
		set[n] = struct{}{}
	}
}

func (w *writer) delete(path string, version int32) error {
	t := w.t
	parentPath, _, ok := parentOf(path)
	if !ok || strings.IndexByte(path, 0) >= 0 || isSpecialPath(path) {
		return pathErr(ErrBadArguments, path)
	}
	if err := fencingErr(path, false); err != nil {
		return err
	}
	parent := t.lookup(parentPath)
	if parent == nil {
		return pathErr(ErrNoNode, parentPath)
	}
	if !checkACL(t.aclOf(parent), jute.PermDelete, w.tx.Auth) {
		return pathErr(ErrNoAuth, path)
	}
	n := t.lookup(path)
	if n == nil {
		return pathErr(ErrNoNode, path)
	}
	if version != -1 && version != n.stat.version {
		return pathErr(ErrBadVersion, path)
	}
	if n.kids.size() > 0 {
		return pathErr(ErrNotEmpty, path)
	}
	w.deleteNode(n, path)
	return nil
}

// deleteNode is DataTree.deleteNode: unlink, pzxid, watches. The parent's
// persisted cversion is not touched (its reported cversion still grows, as
// it is derived from the child count).
func (w *writer) deleteNode(n *node, path string) {
	t := w.t
	parent := n.parent
	parentPath, _, _ := parentOf(path)
	oldPz := parent.stat.pzxid
	t.digest -= t.nodeDigest(path, n)
	t.unlink(n, len(path))
	deadline, tomb := t.tombstones[n]
	delete(t.tombstones, n)
	t.digestChange(parentPath, parent, func() {
		if w.tx.Zxid > parent.stat.pzxid {
			parent.stat.pzxid = w.tx.Zxid
		}
	})
	acl, acls := n.acl, t.aclOf(n) // acls outlives the release below
	if w.multi {
		// Keep the reference until the multi commits; the undo step
		// relinks the node, and commit releases below.
		w.undo = append(w.undo, func() {
			parent.stat.pzxid = oldPz
			t.link(n, len(path))
			if tomb {
				t.tombstones[n] = deadline
			}
		})
		w.deferRelease(acl)
	} else {
		t.acls.release(acl)
	}
	w.quotaOnDelete(parentPath, n.name(), path, n.dataLen())
	w.fire(&t.dataW, path, jute.EventNodeDeleted, acls, false)
	w.fire(&t.childW, path, jute.EventNodeDeleted, acls, true)
	w.noteWrite(path, len(path))
	if parentPath == "" {
		parentPath = "/"
	}
	w.fire(&t.childW, parentPath, jute.EventNodeChildrenChanged, t.aclOf(parent), false)
}

func (w *writer) setData(path string, data []byte, version int32) (jute.Stat, error) {
	t := w.t
	if !ValidatePath(path) {
		return jute.Stat{}, pathErr(ErrBadArguments, path)
	}
	if err := fencingErr(path, false); err != nil {
		return jute.Stat{}, err
	}
	n := t.lookup(path)
	if n == nil {
		return jute.Stat{}, pathErr(ErrNoNode, path)
	}
	if !checkACL(t.aclOf(n), jute.PermWrite, w.tx.Auth) {
		return jute.Stat{}, pathErr(ErrNoAuth, path)
	}
	if err := t.checkQuota(path, int64(len(data)-n.dataLen()), 0); err != nil {
		return jute.Stat{}, err
	}
	if version != -1 && version != n.stat.version {
		return jute.Stat{}, pathErr(ErrBadVersion, path)
	}
	oldND, oldLen, oldStat := n.nd, n.dataLen(), n.stat
	before := t.nodeDigest(path, n)
	n.setData(data)
	n.stat.version++
	n.stat.mtime = w.tx.Time
	n.stat.mzxid = w.tx.Zxid
	t.digest += t.nodeDigest(path, n) - before
	t.dataSize += int64(len(data) - oldLen)
	if w.multi {
		w.undo = append(w.undo, func() {
			t.dataSize -= int64(n.dataLen() - oldLen)
			n.nd, n.stat = oldND, oldStat
		})
	}
	st := t.clientStat(n)
	w.quotaOnSetData(path, len(data)-oldLen)
	w.fire(&t.dataW, path, jute.EventNodeDataChanged, t.aclOf(n), false)
	w.noteWrite(path, len(path)+len(data))
	return st, nil
}

func (w *writer) setACL(path string, acl []jute.ACL, aversion int32) (jute.Stat, error) {
	t := w.t
	if !ValidatePath(path) {
		return jute.Stat{}, pathErr(ErrBadArguments, path)
	}
	fixed, ok := t.fixupACL(acl, w.tx.Auth)
	if !ok {
		return jute.Stat{}, pathErr(ErrInvalidACL, path)
	}
	if err := fencingErr(path, false); err != nil {
		return jute.Stat{}, err
	}
	n := t.lookup(path)
	if n == nil {
		return jute.Stat{}, pathErr(ErrNoNode, path)
	}
	if !checkACL(t.aclOf(n), jute.PermAdmin, w.tx.Auth) {
		return jute.Stat{}, pathErr(ErrNoAuth, path)
	}
	if aversion != -1 && aversion != n.aversion {
		return jute.Stat{}, pathErr(ErrBadVersion, path)
	}
	old := n.acl
	n.acl = t.acls.intern(fixed)
	t.acls.release(old)
	t.digestChange(path, n, func() { n.aversion++ })
	return t.clientStat(n), nil
}

func (w *writer) check(path string, version int32) error {
	t := w.t
	if !ValidatePath(path) {
		return pathErr(ErrBadArguments, path)
	}
	n := t.lookup(path)
	if n == nil {
		return pathErr(ErrNoNode, path)
	}
	if !checkACL(t.aclOf(n), jute.PermRead, w.tx.Auth) {
		return pathErr(ErrNoAuth, path)
	}
	if version != -1 && version != n.stat.version {
		return pathErr(ErrBadVersion, path)
	}
	return nil
}

// ConfigPath is the node holding the ensemble's dynamic configuration.
const ConfigPath = "/zookeeper/config"

// SetConfigData replaces the data of /zookeeper/config as ZooKeeper's
// reconfig does (a SetDataTxn with version -1): the node's version becomes
// -1, mzxid and mtime come from tx, and NodeDataChanged fires. With
// checkAuth, tx.Auth needs WRITE on the node (its default ACL is world READ,
// so only a super user may reconfig); without it nothing is checked, for
// the server's own initialisation of the node.
func (t *Tree) SetConfigData(tx *Txn, data []byte, checkAuth bool) (jute.Stat, error) {
	var w writer
	t.begin(&w, tx, false)
	defer w.end()
	n := t.lookup(ConfigPath)
	if n == nil {
		return jute.Stat{}, pathErr(ErrNoNode, ConfigPath)
	}
	if checkAuth && !checkACL(t.aclOf(n), jute.PermWrite, tx.Auth) {
		return jute.Stat{}, pathErr(ErrNoAuth, ConfigPath)
	}
	diff := len(data) - n.dataLen()
	t.dataSize += int64(diff)
	before := t.nodeDigest(ConfigPath, n) // 0: /zookeeper/ is not in the digest
	n.setData(data)
	n.stat.version = -1
	n.stat.mtime = tx.Time
	n.stat.mzxid = tx.Zxid
	t.digest += t.nodeDigest(ConfigPath, n) - before
	w.quotaOnSetData(ConfigPath, diff)
	w.fire(&t.dataW, ConfigPath, jute.EventNodeDataChanged, t.aclOf(n), false)
	return t.clientStat(n), nil
}
