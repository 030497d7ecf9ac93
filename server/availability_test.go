package server

import (
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
	cfg := DefaultConfig()
	cfg.ClientAddr = "127.0.0.1:0"
	cfg.TickTime = 40 * time.Millisecond
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
		b.close()
	})
	return ln.Addr().String()
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
