package zab

import (
	"time"

	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab/fencing"
)

// fsm is the raft state machine: the datatree plus the session table. It
// applies committed entries in log order. Everything it computes depends
// only on the entry and its own state, so every member reaches the same
// tree: it reads no clock, no random source and iterates no map in an
// order that matters.
type fsm struct {
	log     *zap.Logger
	treeCfg datatree.Config

	// tree is replaced wholesale by Restore; readers load it.
	tree atomic.Pointer[datatree.Tree]

	// snapZxid is the last zxid in the newest snapshot taken or restored
	// (-1: none), for the last_snapshot admin command. Not replicated
	// state: apply never reads it.
	snapZxid atomic.Int64

	// fence signs fencing tokens with the key the log installed
	// (kindFencingKey); nil until then. Set on the apply goroutine and
	// by Restore, read by any.
	fence atomic.Pointer[fencing.Signer]
	// fenceSeed is the seed fence was made from, for snapshots. Touched
	// only by the apply goroutine.
	fenceSeed []byte

	// lastTerm and counter make zxids: (term << 32) | counter, the counter
	// restarting at 1 in each new term. Touched only by the apply goroutine.
	lastTerm uint64
	counter  uint32

	// applied is the raft index of the last command entry applied (or of
	// the snapshot restored); appliedCh is closed and replaced each time it
	// grows, so WaitApplied can block without polling.
	applied   atomic.Uint64
	appliedMu sync.Mutex
	appliedCh chan struct{}

	mu struct {
		sync.RWMutex
		// sessions maps a live session to its negotiated timeout in ms.
		sessions map[int64]int32
	}

	// hooks run on the apply goroutine; they must not block.
	onApplied       func(origin, seq uint64, res Result)
	onSessionOpen   func(id int64, timeout int32)
	onSessionClosed func(id int64)
	onConfigChanged func(data []byte)
	// snapEvery is Config.SnapshotThreshold: once that many zxids were
	// handed out since the last snapshot, onSnapDue is called (on the
	// apply goroutine; it must not block). Monitoring of the log's size
	// only: it never changes what is applied.
	snapEvery uint64
	onSnapDue func()
	sinceSnap uint64
	// onBatch is called when a kindBatch entry is committed, before its
	// requests apply, with the entry's origin and batch id: the leader
	// proposes the next batch then, so that its fsync overlaps this
	// batch's apply and replies, and tells followers of the commit. Also
	// given the entry's raft index and term. Called on the apply
	// goroutine.
	onBatch func(origin, id, index, term uint64)
	// waitDurable, when set, waits until the log holds index on disk:
	// the leader defers its fdatasyncs (wal's deferred.go), and nothing
	// applies before it is durable here too.
	waitDurable func(index uint64) error
	// lockName tells a lock recipe's node name (Config.LockName): those
	// of an expired session become tombstones under a lock delay.
	lockName func(name string) bool
	// reconfig computes reconfig results (Config.Reconfig); nil answers
	// Unimplemented.
	reconfig func(cur []byte, req *jute.ReconfigRequest, zxid int64, authorized func() bool) ([]byte, error)
	// observer gets Committed for each entry applied and Snapshot for
	// each snapshot written (Config.Observer). Monitoring only: it never
	// influences what is applied.
	observer Observer
	// leading is the node's leadership flag, for observer.Committed.
	leading *atomic.Bool
	// digests holds this member's tree digest after each recent entry,
	// for divergence detection (digest.go); onDivergence is
	// Config.OnDivergence.
	digests      digestLog
	onDivergence func(Divergence)
	// soloActive is set once a standalone member's direct log took over
	// (solo.go); soloMu orders it with raft's Snapshot calls.
	soloActive atomic.Bool
	soloMu     sync.Mutex
	// confIndex is the index of the newest membership entry applied.
	confIndex atomic.Uint64
	// started is set once raft is running: a Restore after it installs a
	// leader's snapshot rather than loading the node's own at start.
	started atomic.Bool
}

func newFSM(cfg datatree.Config, log *zap.Logger) *fsm {
	f := &fsm{log: log, treeCfg: cfg}
	f.tree.Store(datatree.New(cfg))
	f.digests.reset(0, f.tree.Load().TreeDigest())
	f.snapZxid.Store(-1)
	f.mu.sessions = make(map[int64]int32)
	f.appliedCh = make(chan struct{})
	return f
}

// setApplied records that every command entry up to index applied and
// wakes the waiters.
func (f *fsm) setApplied(index uint64) {
	f.applied.Store(index)
	f.appliedMu.Lock()
	close(f.appliedCh)
	f.appliedCh = make(chan struct{})
	f.appliedMu.Unlock()
}

// appliedWait returns the applied index and a channel closed when it next
// grows.
func (f *fsm) appliedWait() (uint64, <-chan struct{}) {
	f.appliedMu.Lock()
	defer f.appliedMu.Unlock()
	return f.applied.Load(), f.appliedCh
}

// sessionTimeout reports whether id is a live session, and its timeout.
func (f *fsm) sessionTimeout(id int64) (int32, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t, ok := f.mu.sessions[id]
	return t, ok
}

// sessionList returns every live session and its timeout, sorted by id.
func (f *fsm) sessionList() (ids []int64, timeouts []int32) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ids = make([]int64, 0, len(f.mu.sessions))
	for id := range f.mu.sessions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	timeouts = make([]int32, len(ids))
	for i, id := range ids {
		timeouts[i] = f.mu.sessions[id]
	}
	return ids, timeouts
}

// nextZxid derives the zxid of the entry at term from the apply order.
func (f *fsm) nextZxid(term uint64) int64 {
	if term != f.lastTerm {
		f.lastTerm = term
		f.counter = 0
	}
	f.counter++
	if f.sinceSnap++; f.snapEvery > 0 && f.sinceSnap%f.snapEvery == 0 && f.onSnapDue != nil {
		f.onSnapDue()
	}
	return int64(term<<32 | uint64(f.counter))
}

// Apply implements raft.FSM. It returns a Result for request entries.
func (f *fsm) Apply(l *raft.Log) interface{} { return f.apply(l, true) }

// apply applies one log entry; viaRaft tells whether raft delivers it (a
// batch's onBatch then runs) or the standalone direct log does (solo.go),
// which paces its batches itself.
func (f *fsm) apply(l *raft.Log, viaRaft bool) interface{} {
	if f.waitDurable != nil {
		if err := f.waitDurable(l.Index); err != nil {
			// A failed fdatasync stops the member (OnDiskFailure); an
			// entry it cannot vouch for is never applied.
			panic(fmt.Sprintf("zab: log index %d committed but not on this member's disk: %v", l.Index, err))
		}
	}
	e, err := decodeEntry(l.Data)
	if err != nil {
		// A corrupt or unknown entry: this member cannot stay consistent.
		panic(fmt.Sprintf("zab: cannot apply log index %d: %v", l.Index, err))
	}
	defer f.noteDigest()
	if e.kind == kindFencingKey {
		// Not a ZooKeeper transaction: it takes no zxid, so that zxids
		// stay what ZooKeeper's would be for the same writes.
		f.installFencingKey(e.fenceSeed, f.tree.Load().LastZxid())
		f.setApplied(l.Index)
		return nil
	}
	if e.kind == kindBatch {
		f.checkDigest(e.mark, l.Index)
		if f.onBatch != nil && viaRaft {
			f.onBatch(e.origin, e.seq, l.Index, l.Term)
		}
		tree := f.tree.Load()
		for i := range e.packed {
			p := &e.packed[i]
			one := entry{kind: kindRequest, origin: p.origin, seq: p.seq, time: e.time, req: p.req}
			f.applyOne(tree, f.nextZxid(l.Term), &one)
		}
		f.setApplied(l.Index)
		return nil
	}
	zxid := f.nextZxid(l.Term)
	tree := f.tree.Load()
	if e.kind == kindRequest {
		f.applyOne(tree, zxid, e)
		f.setApplied(l.Index)
		return nil
	}
	if f.observer.Committed != nil {
		defer f.observer.Committed(f.leading.Load())
	}
	defer f.setApplied(l.Index)
	defer tree.NoteZxid(zxid)
	switch e.kind {
	case kindExpire:
		for _, id := range e.sessions {
			f.closeSession(tree, &datatree.Txn{Zxid: zxid, Time: e.time, SessionID: id}, id, e.lockDelay)
		}
	case kindSetConfig:
		// As ZooKeeper's initConfigInZKDatabase, the node's mzxid is the
		// config's version, not the entry's zxid.
		if _, err := tree.SetConfigData(&datatree.Txn{Zxid: configVersion(e.config), Time: e.time}, e.config, false); err != nil {
			f.log.Warn("/zookeeper/config not updated", zap.Error(err))
		} else if f.onConfigChanged != nil {
			f.onConfigChanged(e.config)
		}
	case kindDeleteExpired:
		tx := &datatree.Txn{Zxid: zxid, Time: e.time}
		for _, p := range e.paths {
			if err := tree.DeleteExpired(tx, p); err != nil {
				f.log.Debug("expired node not deleted", zap.String("path", p), zap.Error(err))
			}
		}
	case kindDeleteTombstones:
		tx := &datatree.Txn{Zxid: zxid, Time: e.time}
		for _, p := range e.paths {
			if err := tree.DeleteTombstone(tx, p); err != nil {
				f.log.Debug("lock tombstone not deleted", zap.String("path", p), zap.Error(err))
			} else {
				f.log.Info("lock tombstone removed", zap.String("path", p), zap.String("zxid", fmt.Sprintf("0x%x", zxid)))
			}
		}
	}
	return nil
}

// applyOne applies one client request (a kindRequest entry, or one of a
// kindBatch) with its zxid and wakes its waiter.
func (f *fsm) applyOne(tree *datatree.Tree, zxid int64, e *entry) {
	if f.observer.Propagated != nil {
		f.observer.Propagated(time.Since(time.UnixMilli(e.time)))
	}
	var began time.Time
	if f.observer.RequestApplied != nil {
		began = time.Now()
	}
	res := f.applyRequest(tree, zxid, e)
	tree.NoteZxid(zxid)
	if f.onApplied != nil {
		f.onApplied(e.origin, e.seq, res)
	}
	if f.observer.RequestApplied != nil {
		f.observer.RequestApplied(time.Since(began))
	}
	if f.observer.Committed != nil {
		f.observer.Committed(f.leading.Load())
	}
}

// installFencingKey makes seed the fencing key unless one is installed: the
// first key entry in the log wins, so two leaders that each proposed one
// still agree. A seed of the wrong size is ignored alike on every member.
func (f *fsm) installFencingKey(seed []byte, zxid int64) {
	if f.fenceSeed != nil {
		f.log.Debug("fencing key already installed; later key ignored", zap.String("zxid", fmt.Sprintf("0x%x", zxid)))
		return
	}
	s, err := fencing.NewSigner(seed)
	if err != nil {
		f.log.Warn("fencing key entry ignored", zap.String("zxid", fmt.Sprintf("0x%x", zxid)), zap.Error(err))
		return
	}
	f.fenceSeed = append([]byte{}, seed...)
	f.fence.Store(s)
	f.log.Info("fencing key installed", zap.String("key_id", s.KeyID().String()), zap.String("zxid", fmt.Sprintf("0x%x", zxid)))
}

// closeSession ends session id and deletes its ephemerals; with lockDelay
// > 0 (an expiry under zkd.lockDelayMs) its lock nodes become tombstones
// due at tx.Time + lockDelay instead. It reports whether id was live.
func (f *fsm) closeSession(tree *datatree.Tree, tx *datatree.Txn, id int64, lockDelay int64) bool {
	f.mu.Lock()
	_, ok := f.mu.sessions[id]
	delete(f.mu.sessions, id)
	f.mu.Unlock()
	if !ok {
		return false
	}
	if lockDelay > 0 && f.lockName != nil {
		for _, p := range tree.CloseSessionDelayed(tx, id, f.lockName, tx.Time+lockDelay) {
			f.log.Info("lock node kept as tombstone", zap.String("path", p), zap.String("session", fmt.Sprintf("0x%x", id)),
				zap.Int64("delay_ms", lockDelay), zap.String("zxid", fmt.Sprintf("0x%x", tx.Zxid)))
		}
	} else {
		tree.CloseSession(tx, id)
	}
	if f.onSessionClosed != nil {
		f.onSessionClosed(id)
	}
	return true
}

func (f *fsm) applyRequest(tree *datatree.Tree, zxid int64, e *entry) Result {
	r := &e.req
	res := Result{Zxid: zxid}
	tx := &datatree.Txn{Zxid: zxid, Time: e.time, SessionID: r.SessionID, Auth: r.Auth}
	switch r.Op {
	case jute.OpCreateSession:
		f.mu.Lock()
		_, dup := f.mu.sessions[r.SessionID]
		if !dup {
			f.mu.sessions[r.SessionID] = r.Timeout
		}
		f.mu.Unlock()
		if dup {
			res.Err = fmt.Errorf("zab: session 0x%x already exists", r.SessionID)
			return res
		}
		res.SessionID = r.SessionID
		if f.onSessionOpen != nil {
			f.onSessionOpen(r.SessionID, r.Timeout)
		}
		return res
	case jute.OpCloseSession:
		if !f.closeSession(tree, tx, r.SessionID, 0) {
			res.Err = ErrUnknownSession
		}
		return res
	}
	if _, ok := f.sessionTimeout(r.SessionID); !ok {
		res.Err = ErrUnknownSession
		return res
	}
	if r.Reject != 0 {
		res.Err = r.Reject
		return res
	}
	if r.Op == jute.OpReconfig {
		res.Resp, res.Err = f.applyReconfig(tree, tx, r.Body)
		return res
	}
	res.Resp, res.Err = applyWrite(tree, tx, r.Op, r.Body)
	return res
}

// applyReconfig applies a reconfig request: the new membership text
// replaces /zookeeper/config (WRITE on it needed: in practice the super
// user) and the reply is the new data with the node's Stat.
func (f *fsm) applyReconfig(tree *datatree.Tree, tx *datatree.Txn, body []byte) (jute.Record, error) {
	if f.reconfig == nil {
		return nil, jute.CodeUnimplemented
	}
	rec, err := jute.DecodeRequest(jute.OpReconfig, body)
	if err != nil {
		return nil, errMalformed
	}
	req := *rec.(*jute.ReconfigRequest)
	cur, _, err := tree.GetData(datatree.ConfigPath, nil, nil)
	if err != nil {
		return nil, err
	}
	data, err := f.reconfig(cur, &req, tx.Zxid, func() bool {
		return tree.Permits(datatree.ConfigPath, jute.PermWrite, tx.Auth)
	})
	if err != nil {
		return nil, err
	}
	st, err := tree.SetConfigData(tx, data, true)
	if err != nil {
		return nil, err
	}
	if f.onConfigChanged != nil {
		f.onConfigChanged(data)
	}
	return &jute.GetDataResponse{Data: data, Stat: st}, nil
}

// poisonOp is an op type no multi carries: the tree fails it with
// BadArguments where it stands (see applyMulti).
const poisonOp int32 = -1000

// errMalformed answers a body that does not decode; the server checks
// bodies before submitting, so this only guards the log.
var errMalformed = jute.CodeMarshallingError

// applyWrite decodes a client write and applies it to the tree.
func applyWrite(tree *datatree.Tree, tx *datatree.Txn, op int32, body []byte) (jute.Record, error) {
	// Decode as ZooKeeper's PrepRequestProcessor does: trailing bytes are
	// ignored, and a body that does not decode (or a multi of op 14 with
	// reads in it) is a MarshallingError that still consumes its zxid.
	req, err := jute.DecodeRequest(op, body)
	switch {
	case errors.Is(err, jute.ErrUnknownOp) || err == nil && req == nil:
		return nil, jute.CodeUnimplemented
	case err != nil:
		return nil, errMalformed
	}
	switch q := req.(type) {
	case *jute.CreateRequest:
		path, st, err := tree.Create(tx, datatree.CreateOp{Path: q.Path, Data: q.Data, ACL: q.Acl, Mode: q.Flags, Type: op})
		return createResponse(op, path, st, err)
	case *jute.CreateTTLRequest:
		path, st, err := tree.Create(tx, datatree.CreateOp{Path: q.Path, Data: q.Data, ACL: q.Acl, Mode: q.Flags, TTL: q.Ttl, Type: op})
		return createResponse(op, path, st, err)
	case *jute.DeleteRequest:
		return nil, tree.Delete(tx, q.Path, q.Version)
	case *jute.SetDataRequest:
		st, err := tree.SetData(tx, q.Path, q.Data, q.Version)
		if err != nil {
			return nil, err
		}
		return &jute.SetDataResponse{Stat: st}, nil
	case *jute.SetACLRequest:
		st, err := tree.SetACL(tx, q.Path, q.Acl, q.Version)
		if err != nil {
			return nil, err
		}
		return &jute.SetACLResponse{Stat: st}, nil
	case *jute.MultiRequest:
		return applyMulti(tree, tx, q)
	}
	return nil, jute.CodeUnimplemented
}

func createResponse(op int32, path string, st jute.Stat, err error) (jute.Record, error) {
	if err != nil {
		return nil, err
	}
	if op == jute.OpCreate {
		return &jute.CreateResponse{Path: path}, nil
	}
	return &jute.Create2Response{Path: path, Stat: st}, nil
}

func applyMulti(tree *datatree.Tree, tx *datatree.Txn, q *jute.MultiRequest) (jute.Record, error) {
	ops := make([]datatree.Op, 0, len(q.Ops))
	poison := -1
	for i, m := range q.Ops {
		if r, ok := m.Req.(*jute.CreateRequest); ok && (r.Flags == jute.ModePersistentWithTTL || r.Flags == jute.ModePersistentSequentialWithTTL) {
			// ZooKeeper takes a TTL mode's record as a CreateTTLRequest
			// and, when it is not one, fails the whole multi with
			// MarshallingError once it reaches that op (an earlier
			// failing op makes it a plain -2). An op type the tree does
			// not know fails right there, so the tree tells which.
			if poison < 0 {
				poison = i
			}
			ops = append(ops, datatree.Op{Type: poisonOp, Path: r.Path})
			continue
		}
		op := datatree.Op{Type: m.Type}
		switch r := m.Req.(type) {
		case *jute.CreateRequest:
			op.Create = datatree.CreateOp{Path: r.Path, Data: r.Data, ACL: r.Acl, Mode: r.Flags}
		case *jute.CreateTTLRequest:
			op.Create = datatree.CreateOp{Path: r.Path, Data: r.Data, ACL: r.Acl, Mode: r.Flags, TTL: r.Ttl}
		case *jute.DeleteRequest:
			op.Path, op.Version = r.Path, r.Version
		case *jute.SetDataRequest:
			op.Path, op.Data, op.Version = r.Path, r.Data, r.Version
		case *jute.CheckVersionRequest:
			op.Path, op.Version = r.Path, r.Version
		default:
			// DecodeRequest refuses reads inside a write multi.
			return nil, errMalformed
		}
		ops = append(ops, op)
	}
	results, failed := tree.Multi(tx, ops)
	if failed && poison >= 0 && errors.Is(results[poison].Err, datatree.ErrBadArguments) {
		return nil, errMalformed
	}
	resp := &jute.MultiResponse{Results: make([]jute.MultiResult, len(results))}
	for i, r := range results {
		mr := &resp.Results[i]
		if r.Type == jute.OpError {
			code := codeOf(r.Err)
			mr.Type, mr.Err = jute.OpError, code
			mr.Resp = &jute.ErrorResponse{Err: code}
			continue
		}
		mr.Type = r.Type
		switch r.Type {
		case jute.OpCreate:
			mr.Resp = &jute.CreateResponse{Path: r.Path}
		case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
			// ZooKeeper reports every create variant of a multi as
			// create2; Java clients decode nothing else.
			mr.Type = jute.OpCreate2
			mr.Resp = &jute.Create2Response{Path: r.Path, Stat: r.Stat}
		case jute.OpSetData:
			mr.Resp = &jute.SetDataResponse{Stat: r.Stat}
		}
	}
	return resp, nil
}

// codeOf turns an apply error into the code a multi result carries. nil
// is OK, as for the ops before the failing one.
func codeOf(err error) jute.Code {
	if err == nil {
		return jute.CodeOK
	}
	var c interface{ Code() jute.Code }
	if errors.As(err, &c) {
		return c.Code()
	}
	var code jute.Code
	if errors.As(err, &code) {
		return code
	}
	return jute.CodeSystemError
}

// snapshotMagicTombs opens a snapshot taken while lock delay tombstones
// existed: a version 3 snapshot whose fencing key is followed by the
// tombstones (a jute int count, then per tombstone its path and deadline),
// their deadlines being state the tree image does not carry. Snapshots
// without tombstones keep version 3, so they stay what they were before
// lock delay existed.
const snapshotMagicTombs = "zkdsnap4"

// snapshotMagic opens every zkd FSM snapshot; snapshotMagicV2 opened those
// written before the fencing key was recorded (after the applied index: a
// jute buffer, -1 for none), snapshotMagicV1 those written before the
// applied index was.
const (
	snapshotMagic   = "zkdsnap3"
	snapshotMagicV2 = "zkdsnap2"
	snapshotMagicV1 = "zkdsnap1"
)

// readSnapshotSeed reads the fencing key seed of a version 3 snapshot: a
// jute buffer (length -1 when the ensemble had no key yet).
func readSnapshotSeed(br *bufio.Reader) ([]byte, error) {
	var lb [4]byte
	if _, err := io.ReadFull(br, lb[:]); err != nil {
		return nil, fmt.Errorf("zab: snapshot fencing key: %w", err)
	}
	n := jute.NewDecoder(lb[:]).ReadInt()
	if n < 0 {
		return nil, nil
	}
	if n != fencing.SeedLen {
		return nil, fmt.Errorf("zab: snapshot fencing key of %d bytes, want %d", n, fencing.SeedLen)
	}
	seed := make([]byte, n)
	if _, err := io.ReadFull(br, seed); err != nil {
		return nil, fmt.Errorf("zab: snapshot fencing key: %w", err)
	}
	return seed, nil
}

// readSnapshotTombstones reads the tombstones of a version 4 snapshot
// (snapshotMagicTombs): their paths and deadlines.
func readSnapshotTombstones(br *bufio.Reader) ([]datatree.Tombstone, error) {
	var b [8]byte
	if _, err := io.ReadFull(br, b[:4]); err != nil {
		return nil, fmt.Errorf("zab: snapshot tombstones: %w", err)
	}
	n := jute.NewDecoder(b[:4]).ReadInt()
	if n < 0 || n > 1<<24 {
		return nil, fmt.Errorf("zab: snapshot tombstone count %d", n)
	}
	out := make([]datatree.Tombstone, 0, n)
	for i := int32(0); i < n; i++ {
		if _, err := io.ReadFull(br, b[:4]); err != nil {
			return nil, fmt.Errorf("zab: snapshot tombstones: %w", err)
		}
		l := jute.NewDecoder(b[:4]).ReadInt()
		if l < 0 || l > 1<<20 {
			return nil, fmt.Errorf("zab: snapshot tombstone path of %d bytes", l)
		}
		p := make([]byte, l)
		if _, err := io.ReadFull(br, p); err != nil {
			return nil, fmt.Errorf("zab: snapshot tombstones: %w", err)
		}
		if _, err := io.ReadFull(br, b[:8]); err != nil {
			return nil, fmt.Errorf("zab: snapshot tombstones: %w", err)
		}
		out = append(out, datatree.Tombstone{Path: string(p), Deadline: jute.NewDecoder(b[:8]).ReadLong()})
	}
	return out, nil
}

// Snapshot implements raft.FSM. It encodes the session table and the tree
// on the apply goroutine, so the image is consistent; Persist only copies
// bytes. Once a standalone member's direct log took over (solo.go) it
// refuses: raft would label the image with its own last index, which
// stopped at the takeover.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.soloMu.Lock()
	defer f.soloMu.Unlock()
	if f.soloActive.Load() {
		return nil, errSoloSnapshot
	}
	return f.snapshot()
}

// StoreConfiguration implements raft.ConfigurationStore: raft calls it on
// the apply goroutine for each membership entry it applies. The direct log
// records the newest one's index in its snapshots (solo.go).
func (f *fsm) StoreConfiguration(index uint64, _ raft.Configuration) {
	f.confIndex.Store(max(f.confIndex.Load(), index))
}

// setSoloActive records that the direct log took over: raft's snapshots
// are refused from now on, and one under way has taken its image.
func (f *fsm) setSoloActive() {
	f.soloMu.Lock()
	f.soloActive.Store(true)
	f.soloMu.Unlock()
}

// snapshot is Snapshot for raft and for the direct log, whose committer
// holds its commit lock so that nothing applies meanwhile.
func (f *fsm) snapshot() (raft.FSMSnapshot, error) {
	start := time.Now()
	f.sinceSnap = 0
	f.snapZxid.Store(f.tree.Load().LastZxid())
	var buf bytes.Buffer
	tombs := f.tree.Load().Tombstones()
	if len(tombs) > 0 {
		buf.WriteString(snapshotMagicTombs)
	} else {
		buf.WriteString(snapshotMagic)
	}
	enc := jute.NewEncoder(nil)
	enc.WriteLong(int64(f.applied.Load()))
	enc.WriteBuffer(f.fenceSeed)
	if len(tombs) > 0 {
		enc.WriteInt(int32(len(tombs)))
		for _, tb := range tombs {
			enc.WriteString(tb.Path)
			enc.WriteLong(tb.Deadline)
		}
	}
	enc.WriteLong(int64(f.lastTerm))
	enc.WriteInt(int32(f.counter))
	ids, timeouts := f.sessionList()
	enc.WriteInt(int32(len(ids)))
	for i, id := range ids {
		enc.WriteLong(id)
		enc.WriteInt(timeouts[i])
	}
	buf.Write(enc.Bytes())
	if err := f.tree.Load().WriteSnapshot(&buf); err != nil {
		return nil, fmt.Errorf("zab: snapshot of the tree: %w", err)
	}
	return &fsmSnapshot{data: buf.Bytes(), start: start, done: f.observer.Snapshot}, nil
}

// Restore implements raft.FSM: it replaces the state with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	start := time.Now()
	br := bufio.NewReaderSize(rc, 1<<16)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil {
		return fmt.Errorf("zab: snapshot header: %w", err)
	}
	var (
		applied uint64
		seed    []byte
		tombs   []datatree.Tombstone
	)
	switch string(magic) {
	case snapshotMagic, snapshotMagicV2, snapshotMagicTombs:
		var ib [8]byte
		if _, err := io.ReadFull(br, ib[:]); err != nil {
			return fmt.Errorf("zab: snapshot header: %w", err)
		}
		applied = uint64(jute.NewDecoder(ib[:]).ReadLong())
		if string(magic) != snapshotMagicV2 {
			var err error
			if seed, err = readSnapshotSeed(br); err != nil {
				return err
			}
		}
		if string(magic) == snapshotMagicTombs {
			var err error
			if tombs, err = readSnapshotTombstones(br); err != nil {
				return err
			}
		}
	case snapshotMagicV1:
	default:
		return fmt.Errorf("zab: not a zkd snapshot (magic %q)", magic)
	}
	head := make([]byte, 8+4+4)
	if _, err := io.ReadFull(br, head); err != nil {
		return fmt.Errorf("zab: snapshot header: %w", err)
	}
	d := jute.NewDecoder(head)
	lastTerm := uint64(d.ReadLong())
	counter := uint32(d.ReadInt())
	n := int(d.ReadInt())
	if n < 0 {
		return fmt.Errorf("zab: snapshot session count %d", n)
	}
	sessions := make(map[int64]int32, n)
	rec := make([]byte, 12)
	for i := 0; i < n; i++ {
		if _, err := io.ReadFull(br, rec); err != nil {
			return fmt.Errorf("zab: snapshot session table: %w", err)
		}
		sd := jute.NewDecoder(rec)
		id := sd.ReadLong()
		sessions[id] = sd.ReadInt()
	}
	if !f.started.Load() {
		// At start nothing else allocates yet, and the tree being built
		// is all live: a collection during the load would only mark it
		// again (GOGC=100 re-marks about the final heap over the load).
		// So collect nothing until it is built; the next allocation after
		// the restore starts one collection in the background, which sets
		// the usual target.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
	}
	tree, err := datatree.ReadSnapshot(br, f.treeCfg)
	if err != nil {
		return fmt.Errorf("zab: snapshot tree: %w", err)
	}
	// Read to the end: the store checks the snapshot's size and checksum
	// there, and a changed byte must fail the restore, not be served.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return fmt.Errorf("zab: snapshot: %w", err)
	}
	for _, tb := range tombs {
		if err := tree.SetTombstone(tb.Path, tb.Deadline); err != nil {
			return fmt.Errorf("zab: snapshot tombstone: %w", err)
		}
	}
	f.lastTerm, f.counter = lastTerm, counter
	f.sinceSnap = 0
	f.fenceSeed = nil
	f.fence.Store(nil)
	if seed != nil {
		f.installFencingKey(seed, tree.LastZxid())
	}
	f.mu.Lock()
	f.mu.sessions = sessions
	f.mu.Unlock()
	f.tree.Store(tree)
	f.digests.reset(tree.LastZxid(), tree.TreeDigest())
	f.snapZxid.Store(tree.LastZxid())
	f.setApplied(applied)
	if f.observer.Restored != nil {
		f.observer.Restored(time.Since(start), !f.started.Load())
	}
	if f.onConfigChanged != nil {
		if data, _, err := tree.GetData(datatree.ConfigPath, nil, nil); err == nil && len(data) > 0 {
			f.onConfigChanged(data)
		}
	}
	return nil
}

// fsmSnapshot is an encoded image; done, when set, gets the time from
// the start of encoding to the end of a successful Persist.
type fsmSnapshot struct {
	data  []byte
	start time.Time
	done  func(time.Duration)
}

// Persist implements raft.FSMSnapshot.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s.data); err != nil {
		sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return err
	}
	if s.done != nil {
		s.done(time.Since(s.start))
	}
	return nil
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {}

// configVersion reads the version=<hex> line of a /zookeeper/config text;
// 0 when there is none.
func configVersion(data []byte) int64 {
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "version="); ok {
			n, err := strconv.ParseInt(v, 16, 64)
			if err == nil {
				return n
			}
		}
	}
	return 0
}
