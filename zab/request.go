package zab

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/zkd/zkd/jute"
)

// Errors a Future can carry besides the datatree's validation errors.
var (
	// ErrNotLeader means the member could not get the request into the log
	// because it is not (or no longer) the leader.
	ErrNotLeader = errors.New("zab: not leader")
	// ErrStopped means the node shut down before the request applied.
	ErrStopped = errors.New("zab: node stopped")
	// ErrUnknownSession means the request names a session the table does
	// not hold (it expired or was closed).
	ErrUnknownSession = errors.New("zab: unknown session")
)

// Request is one client write on its way into the log. The body is the
// request record exactly as the client sent it (the bytes after the
// RequestHeader), so the FSM validates and applies the request itself at
// apply time: replicate the request, not a precomputed diff.
type Request struct {
	// Op is the jute opcode: OpCreate, OpCreate2, OpCreateContainer,
	// OpCreateTTL, OpDelete, OpSetData, OpSetACL, OpMulti, OpCloseSession,
	// OpCreateSession.
	Op int32
	// SessionID is the requesting session; zero for OpCreateSession.
	SessionID int64
	// Auth holds the connection's identities, checked against ACLs when the
	// entry applies. An Id with scheme "super" is the superuser.
	Auth []jute.Id
	// Body is the jute body of the request; empty for OpCloseSession and
	// OpCreateSession.
	Body []byte
	// Timeout is the negotiated session timeout in ms, OpCreateSession only.
	Timeout int32
	// Reject, when not 0, makes the entry apply as a failed write with
	// this code: nothing changes but the write consumes its zxid, as
	// ZooKeeper's error txns do (a reconfig while reconfigEnabled is false).
	Reject jute.Code
	// Origin names the client connection that sent the request (unique
	// within this process; 0 for none). It is not logged: a member uses
	// it to keep one connection's writes in order across a leader change
	// (a write is refused once an earlier write of its connection was
	// lost).
	Origin uint64
}

// Result is the outcome of a Request once its entry applied on this member.
type Result struct {
	// Zxid is the zxid the entry was given; failed writes consume one too.
	Zxid int64
	// Err is nil on success; otherwise a datatree error (with a Code
	// method), a jute.Code, or one of this package's errors.
	Err error
	// Resp is the reply record: *jute.CreateResponse (create),
	// *jute.Create2Response (create2, createContainer, createTTL),
	// *jute.SetDataResponse, *jute.SetACLResponse, *jute.MultiResponse
	// (multi, also when an op failed: the header error stays 0), or nil
	// (delete, closeSession, createSession, and any error).
	Resp jute.Record
	// SessionID is the new session's id, OpCreateSession only; its
	// password is session.Password(SessionID).
	SessionID int64
}

// Future completes when its Request has applied on this member (or failed
// to enter the log).
type Future struct {
	done chan struct{}
	res  Result
	// state is futurePending, futureHooked once OnComplete set hook, or
	// futureDone once complete ran.
	state atomic.Uint32
	hook  func()
	// later is set while the standalone committer completes the future
	// (solo.go); see Later.
	later *Later
}

// Later holds work that completion hooks leave for after their batch. The
// standalone direct log's committer completes a batch's futures as the
// batch applies, and so runs their hooks; a hook may put the slow part of
// its work (the reply's socket write) here. Once the batch has applied,
// the committer hands it to its replier goroutine, which runs it in the
// order it was put, while the committer goes on to the next batch's
// append. A hook that puts work here must keep its own ordering (the
// server claims the connection's output before it defers the write, so
// that anything queued after the reply waits behind it).
type Later struct{ fns []func() }

// Defer queues fn to run after the batch has applied.
func (l *Later) Defer(fn func()) { l.fns = append(l.fns, fn) }

// Later returns where the completion hook may defer work: non-nil only
// inside the hook, when the standalone committer completes f.
func (f *Future) Later() *Later { return f.later }

// Future states.
const (
	futurePending = iota
	futureHooked
	futureDone
)

func newFuture() *Future { return &Future{done: make(chan struct{})} }

// FailedFuture returns a completed Future whose Result carries err: what
// a backend that takes no writes (a follower of ZooKeeper serving
// read-only clients) answers a write with.
func FailedFuture(err error) *Future {
	f := newFuture()
	f.complete(Result{Err: err})
	return f
}

// NewFuture returns a pending Future and the function that completes it
// (once), for a Backend that is not a Node: a test's, or one that answers
// writes itself.
func NewFuture() (*Future, func(Result)) {
	f := newFuture()
	return f, f.complete
}

// Done is closed once Result may be read.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result returns the outcome; call it only after Done is closed.
func (f *Future) Result() Result { return f.res }

// complete records res, wakes the waiter and runs the hook set by
// OnComplete. It must be called once.
func (f *Future) complete(res Result) {
	f.res = res
	close(f.done)
	if f.state.Swap(futureDone) == futureHooked {
		f.hook()
	}
}

// OnComplete makes fn run on the goroutine that completes the future (the
// apply goroutine, for a write that applied), right after Done closes,
// so that a caller with no goroutine waiting can finish the request
// there; fn must not block. It returns false, and never calls fn, if the
// future already completed. Call it at most once.
func (f *Future) OnComplete(fn func()) bool {
	f.hook = fn
	return f.state.CompareAndSwap(futurePending, futureHooked)
}

// pendingFutures holds this member's requests that have not completed,
// by seq. A map under a mutex rather than a sync.Map: every write adds
// and removes one entry, and sync.Map allocates on each of those.
type pendingFutures struct {
	mu sync.Mutex
	m  map[uint64]*Future
}

// add records f as the future of request seq.
func (p *pendingFutures) add(seq uint64, f *Future) {
	p.mu.Lock()
	if p.m == nil {
		p.m = make(map[uint64]*Future)
	}
	p.m[seq] = f
	p.mu.Unlock()
}

// take removes and returns the future of request seq, nil if none waits
// (another member's request, or one already completed).
func (p *pendingFutures) take(seq uint64) *Future {
	p.mu.Lock()
	f := p.m[seq]
	if f != nil {
		delete(p.m, seq)
	}
	p.mu.Unlock()
	return f
}

// get returns the future of request seq without removing it, nil if none
// waits.
func (p *pendingFutures) get(seq uint64) *Future {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[seq]
}

// takeAll removes and returns every future still waiting.
func (p *pendingFutures) takeAll() []*Future {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*Future, 0, len(p.m))
	for _, f := range p.m {
		out = append(out, f)
	}
	clear(p.m)
	return out
}

// Wait blocks until the future completes and returns its result.
func (f *Future) Wait() Result {
	<-f.done
	return f.res
}

// Encode writes the request in the form log entries and forwarded
// requests carry: op, session id, timeout, auth ids, body.
func (r *Request) Encode(enc *jute.Encoder) {
	enc.WriteInt(r.Op)
	enc.WriteLong(r.SessionID)
	enc.WriteInt(r.Timeout)
	enc.WriteInt(int32(len(r.Auth)))
	for i := range r.Auth {
		r.Auth[i].Encode(enc)
	}
	enc.WriteBuffer(r.Body)
	enc.WriteInt(int32(r.Reject))
}

// Decode reads what Encode wrote; errors stick in d.
func (r *Request) Decode(d *jute.Decoder) {
	r.decodeFields(d)
	// Entries written before Reject existed end after Body; a Request is
	// always the last thing in its entry or message.
	r.Reject = 0
	if d.Remaining() >= 4 {
		r.Reject = jute.Code(d.ReadInt())
	}
}

// decodeIn reads a Request followed by more data (inside a batch entry,
// which always carries Reject).
func (r *Request) decodeIn(d *jute.Decoder) {
	r.decodeFields(d)
	r.Reject = jute.Code(d.ReadInt())
}

// decodeFields reads the fields before Reject.
func (r *Request) decodeFields(d *jute.Decoder) {
	r.Op = d.ReadInt()
	r.SessionID = d.ReadLong()
	r.Timeout = d.ReadInt()
	n := d.VectorLen(8)
	r.Auth = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		var id jute.Id
		id.Decode(d)
		r.Auth = append(r.Auth, id)
	}
	r.Body = d.ReadBuffer()
}
