package server

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
)

// newFuture returns a pending zab.Future and the function completing it.
func newFuture() (*zab.Future, func(zab.Result)) { return zab.NewFuture() }

// fakeBackend applies writes straight to a datatree.Tree on one apply
// goroutine, in submission order, as zab does on a single member.
type fakeBackend struct {
	cur   atomic.Pointer[datatree.Tree]
	queue chan pendingWrite
	stop  chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	zxid     int64
	nextID   int64
	sessions map[int64]int32
	submits  int
	gate     chan struct{} // when set, each apply waits for a token
	syncErr  error
	writeErr error  // when set, every write fails with it at once
	panicOn  string // "sync": Sync panics

	onClose func(id int64) // the server's SessionClosed
}

type pendingWrite struct {
	req      *zab.Request
	complete func(zab.Result)
}

func newFakeBackend() *fakeBackend {
	b := &fakeBackend{
		queue:    make(chan pendingWrite, 1<<16),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		nextID:   0x100000000,
		sessions: map[int64]int32{},
	}
	b.cur.Store(datatree.New(datatree.DefaultConfig()))
	go b.applyLoop()
	return b
}

func (b *fakeBackend) close() {
	close(b.stop)
	<-b.done
}

func (b *fakeBackend) Submit(r *zab.Request) *zab.Future {
	f, complete := newFuture()
	b.mu.Lock()
	werr := b.writeErr
	b.mu.Unlock()
	if werr != nil {
		complete(zab.Result{Err: werr})
		return f
	}
	b.queue <- pendingWrite{r, complete}
	b.mu.Lock()
	b.submits++ // once queued: a later barrier is behind it
	b.mu.Unlock()
	return f
}

func (b *fakeBackend) submitCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.submits
}

// barrier returns once every write submitted before it is applied, as a
// zab sync does: it queues a marker behind them that the apply loop
// completes, ungated, when it reaches it.
func (b *fakeBackend) barrier(ctx context.Context) error {
	f, complete := newFuture()
	b.queue <- pendingWrite{complete: complete}
	select {
	case <-f.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.stop:
		return zab.ErrStopped
	}
}

func (b *fakeBackend) setGate(g chan struct{}) {
	b.mu.Lock()
	b.gate = g
	b.mu.Unlock()
}

func (b *fakeBackend) applyLoop() {
	defer close(b.done)
	for {
		select {
		case w := <-b.queue:
			if w.req == nil { // a barrier: everything before it is applied
				w.complete(zab.Result{})
				continue
			}
			b.mu.Lock()
			gate := b.gate
			b.mu.Unlock()
			if gate != nil {
				select {
				case <-gate:
				case <-b.stop:
					w.complete(zab.Result{Err: zab.ErrStopped})
					return
				}
			}
			w.complete(b.apply(w.req))
		case <-b.stop:
			return
		}
	}
}

func (b *fakeBackend) apply(r *zab.Request) zab.Result {
	b.mu.Lock()
	b.zxid++
	zxid := b.zxid
	b.mu.Unlock()
	tx := &datatree.Txn{Zxid: zxid, Time: time.Now().UnixMilli(), SessionID: r.SessionID, Auth: r.Auth}
	switch r.Op {
	case jute.OpCreateSession:
		b.mu.Lock()
		b.nextID++
		id := b.nextID
		b.sessions[id] = r.Timeout
		b.mu.Unlock()
		b.Tree().NoteZxid(zxid)
		return zab.Result{Zxid: zxid, SessionID: id}
	case jute.OpCloseSession:
		b.mu.Lock()
		_, ok := b.sessions[r.SessionID]
		delete(b.sessions, r.SessionID)
		b.mu.Unlock()
		if !ok {
			b.Tree().NoteZxid(zxid)
			return zab.Result{Zxid: zxid, Err: zab.ErrUnknownSession}
		}
		b.Tree().CloseSession(tx, r.SessionID)
		if b.onClose != nil {
			b.onClose(r.SessionID)
		}
		return zab.Result{Zxid: zxid}
	}
	if r.Reject != 0 {
		b.Tree().NoteZxid(zxid)
		return zab.Result{Zxid: zxid, Err: r.Reject}
	}
	rec, err := jute.DecodeRequest(r.Op, r.Body)
	if rec == nil || err != nil {
		b.Tree().NoteZxid(zxid)
		return zab.Result{Zxid: zxid, Err: jute.CodeMarshallingError}
	}
	resp, err := b.applyRecord(tx, r.Op, rec)
	if err != nil {
		b.Tree().NoteZxid(zxid)
		return zab.Result{Zxid: zxid, Err: err}
	}
	return zab.Result{Zxid: zxid, Resp: resp}
}

func (b *fakeBackend) applyRecord(tx *datatree.Txn, op int32, rec jute.Record) (jute.Record, error) {
	switch q := rec.(type) {
	case *jute.CreateRequest:
		path, st, err := b.Tree().Create(tx, datatree.CreateOp{Path: q.Path, Data: q.Data, ACL: q.Acl, Mode: q.Flags, Type: op})
		if err != nil {
			return nil, err
		}
		if op == jute.OpCreate {
			return &jute.CreateResponse{Path: path}, nil
		}
		return &jute.Create2Response{Path: path, Stat: st}, nil
	case *jute.DeleteRequest:
		return nil, b.Tree().Delete(tx, q.Path, q.Version)
	case *jute.SetDataRequest:
		st, err := b.Tree().SetData(tx, q.Path, q.Data, q.Version)
		if err != nil {
			return nil, err
		}
		return &jute.SetDataResponse{Stat: st}, nil
	case *jute.SetACLRequest:
		st, err := b.Tree().SetACL(tx, q.Path, q.Acl, q.Version)
		if err != nil {
			return nil, err
		}
		return &jute.SetACLResponse{Stat: st}, nil
	case *jute.MultiRequest:
		return b.applyMulti(tx, q)
	}
	return nil, jute.CodeUnimplemented
}

func (b *fakeBackend) applyMulti(tx *datatree.Txn, q *jute.MultiRequest) (jute.Record, error) {
	ops := make([]datatree.Op, 0, len(q.Ops))
	for _, m := range q.Ops {
		op := datatree.Op{Type: m.Type}
		switch r := m.Req.(type) {
		case *jute.CreateRequest:
			op.Create = datatree.CreateOp{Path: r.Path, Data: r.Data, ACL: r.Acl, Mode: r.Flags}
		case *jute.DeleteRequest:
			op.Path, op.Version = r.Path, r.Version
		case *jute.SetDataRequest:
			op.Path, op.Data, op.Version = r.Path, r.Data, r.Version
		case *jute.CheckVersionRequest:
			op.Path, op.Version = r.Path, r.Version
		default:
			return nil, jute.CodeBadArguments
		}
		ops = append(ops, op)
	}
	results, _ := b.Tree().Multi(tx, ops)
	resp := &jute.MultiResponse{}
	for _, r := range results {
		mr := jute.MultiResult{Type: r.Type}
		switch {
		case r.Type == jute.OpError:
			mr.Err, _, _ = errorCode(r.Err)
		case r.Type == jute.OpCreate:
			mr.Resp = &jute.CreateResponse{Path: r.Path}
		case r.Type == jute.OpCreate2:
			mr.Resp = &jute.Create2Response{Path: r.Path, Stat: r.Stat}
		case r.Type == jute.OpSetData:
			mr.Resp = &jute.SetDataResponse{Stat: r.Stat}
		}
		resp.Results = append(resp.Results, mr)
	}
	return resp, nil
}

func (b *fakeBackend) Tree() *datatree.Tree { return b.cur.Load() }
func (b *fakeBackend) LastZxid() int64      { return b.Tree().LastZxid() }

func (b *fakeBackend) SessionTimeout(id int64) (int32, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	to, ok := b.sessions[id]
	return to, ok
}

func (b *fakeBackend) Touch(id int64) bool {
	_, ok := b.SessionTimeout(id)
	return ok
}

func (b *fakeBackend) Sync(ctx context.Context) error {
	b.mu.Lock()
	err, p := b.syncErr, b.panicOn
	b.mu.Unlock()
	if p == "sync" {
		panic("fake backend: sync panics")
	}
	return err
}

func (b *fakeBackend) Mode() string { return "standalone" }

// expire drops a session as zab would on expiry, and tells the server.
func (b *fakeBackend) expire(id int64) {
	f := b.Submit(&zab.Request{Op: jute.OpCloseSession, SessionID: id})
	<-f.Done()
}

// testServer is a Server on a loopback port over a fakeBackend.
type testServer struct {
	*Server
	b    *fakeBackend
	addr string
}

func startServer(t testing.TB, mod func(*Config)) *testServer {
	t.Helper()
	return startServerOn(t, mod, nil)
}

// startServerOn is startServer serving on wrap(listener) when wrap is not
// nil (a TLS listener).
func startServerOn(t testing.TB, mod func(*Config), wrap func(net.Listener) net.Listener) *testServer {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ClientAddr = "127.0.0.1:0"
	cfg.FourLetterWhitelist = []string{"*"}
	if tt, ok := t.(*testing.T); ok {
		cfg.Logger = zaptest.NewLogger(tt, zaptest.Level(zap.WarnLevel))
	}
	if mod != nil {
		mod(&cfg)
	}
	b := newFakeBackend()
	s, err := New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	b.onClose = s.SessionClosed
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
		b.close()
	})
	return &testServer{Server: s, b: b, addr: ln.Addr().String()}
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
