package server

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
)

// quorumBackend is a fakeBackend that can lose its quorum.
type quorumBackend struct {
	*fakeBackend
	serving  atomic.Bool
	readOnly bool
}

func (b *quorumBackend) Serving() bool         { return b.serving.Load() }
func (b *quorumBackend) ReadOnlyAllowed() bool { return b.readOnly }

func startQuorumServer(t *testing.T, b *quorumBackend) string {
	t.Helper()
	return startBackendServer(t, b, b.close)
}

// startBackendServer serves b on a loopback port until the test ends, then
// calls closeBackend.
func startBackendServer(t testing.TB, b Backend, closeBackend func()) string {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ClientAddr = "127.0.0.1:0"
	cfg.TickTime = 40 * time.Millisecond
	cfg.FourLetterWhitelist = []string{"*"}
	s, err := New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
		closeBackend()
	})
	return ln.Addr().String()
}

// settlingBackend is an ensemble member whose log may hold a write that is
// not applied yet; SyncReattach (a sync with the leader) lets it apply.
type settlingBackend struct {
	*quorumBackend
	gate  chan struct{}
	syncs atomic.Int32
	fail  atomic.Bool
}

func (b *settlingBackend) SyncReattach(ctx context.Context) error {
	b.syncs.Add(1)
	if b.fail.Load() {
		return errors.New("no leader")
	}
	select {
	case b.gate <- struct{}{}:
	default:
	}
	return b.barrier(ctx)
}

// TestReattachSyncsFirst: a client whose write was still pending when its
// connection broke resumes its session only after the member synced, so
// its first read shows the write; new sessions do not sync; a member that
// cannot sync refuses the reattach.
func TestReattachSyncsFirst(t *testing.T) {
	b := &settlingBackend{quorumBackend: &quorumBackend{fakeBackend: newFakeBackend()}, gate: make(chan struct{}, 1)}
	b.serving.Store(true)
	addr := startBackendServer(t, b, b.close)
	a := dialRaw(t, addr)
	resp, _ := a.connect(jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	if resp.SessionId == 0 || b.syncs.Load() != 0 {
		t.Fatalf("new session: %+v, %d syncs", resp, b.syncs.Load())
	}
	b.setGate(b.gate)         // writes stay in the "log" until a sync
	before := b.submitCount() // the session's creation was submitted too
	a.send(1, jute.OpCreate, &jute.CreateRequest{Path: "/lost", Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}})
	for b.submitCount() == before {
		time.Sleep(time.Millisecond)
	}
	a.nc.Close()

	again := dialRaw(t, addr)
	if r, _ := again.connect(jute.ConnectRequest{SessionId: resp.SessionId, Passwd: resp.Passwd, TimeOut: 30000}); r.SessionId != resp.SessionId {
		t.Fatalf("reattach: %+v", r)
	}
	if b.syncs.Load() != 1 {
		t.Fatalf("%d syncs for one reattach", b.syncs.Load())
	}
	if h := again.call(2, jute.OpExists, &jute.ExistsRequest{Path: "/lost"}, &jute.SetDataResponse{}); h.Err != 0 {
		t.Fatalf("exists /lost after the reattach: err %d: the pending write was not settled first", h.Err)
	}
	again.nc.Close()
	b.setGate(nil)

	b.fail.Store(true)
	refused := dialRaw(t, addr)
	refused.write(frameOf(jute.Encode(&jute.ConnectRequest{SessionId: resp.SessionId, Passwd: resp.Passwd, TimeOut: 30000})))
	refused.expectClosed()
	fresh := dialRaw(t, addr)
	if r, _ := fresh.connect(jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}); r.SessionId == 0 {
		t.Fatal("a new session was refused while the member cannot sync")
	}
}

// TestReadOnlyMode: without quorum and with readonlymode.enabled, a client
// that asks for read-only gets a read-only session: reads answered,
// writes refused with NotReadOnly; a read-write client is refused; when
// the quorum is back the read-only connection is closed.
func TestReadOnlyMode(t *testing.T) {
	b := &quorumBackend{fakeBackend: newFakeBackend(), readOnly: true}
	b.serving.Store(true)
	addr := startQuorumServer(t, b)
	rw := dialRaw(t, addr)
	if resp, _ := rw.connect(jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true}); resp.SessionId == 0 {
		t.Fatal("no session while serving")
	}
	if h := rw.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/a", Data: []byte("x"), Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}}, &jute.CreateResponse{}); h.Err != 0 {
		t.Fatalf("create: %+v", h)
	}
	b.serving.Store(false)
	rw.expectClosed()

	refused := dialRaw(t, addr)
	refused.write(frameOf(jute.Encode(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})))
	refused.expectClosed()

	ro := dialRaw(t, addr)
	resp, _ := ro.connect(jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true, ReadOnly: true})
	if resp.SessionId == 0 || !resp.ReadOnly {
		t.Fatalf("read-only connect response %+v", resp)
	}
	var gd jute.GetDataResponse
	if h := ro.call(2, jute.OpGetData, &jute.GetDataRequest{Path: "/a"}, &gd); h.Err != 0 || string(gd.Data) != "x" {
		t.Fatalf("read-only getData: %+v %q", h, gd.Data)
	}
	if h := ro.call(3, jute.OpSetData, &jute.SetDataRequest{Path: "/a", Data: []byte("y"), Version: -1}, nil); h.Err != jute.CodeNotReadOnly {
		t.Fatalf("read-only setData: err %d, want NotReadOnly", h.Err)
	}
	if h := ro.call(4, jute.OpPing, nil, nil); h.Xid != jute.XidPing || h.Err != 0 {
		t.Fatalf("read-only ping: %+v", h)
	}
	b.serving.Store(true)
	ro.expectClosed()
}

// TestNotServingRefusesAndCloses: a member that stops serving closes its
// client connections and refuses new ones until it serves again.
func TestNotServingRefusesAndCloses(t *testing.T) {
	b := &quorumBackend{fakeBackend: newFakeBackend()}
	b.serving.Store(true)
	addr := startQuorumServer(t, b)
	req := jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}

	open := dialRaw(t, addr)
	if resp, _ := open.connect(req); resp.SessionId == 0 {
		t.Fatal("no session while serving")
	}
	b.serving.Store(false)
	open.expectClosed()

	refused := dialRaw(t, addr)
	refused.write(frameOf(jute.Encode(&req)))
	refused.expectClosed()

	b.serving.Store(true)
	back := dialRaw(t, addr)
	if resp, _ := back.connect(req); resp.SessionId == 0 {
		t.Fatal("no session once serving again")
	}
	if h := back.call(1, jute.OpPing, nil, nil); h.Err != 0 {
		t.Fatalf("ping after recovery: %+v", h)
	}
}
