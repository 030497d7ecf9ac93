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
	serving atomic.Bool
}

func (b *quorumBackend) Serving() bool { return b.serving.Load() }

// TestNotServingRefusesAndCloses: a member that stops serving closes its
// client connections and refuses new ones until it serves again.
func TestNotServingRefusesAndCloses(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ClientAddr = "127.0.0.1:0"
	cfg.TickTime = 40 * time.Millisecond
	b := &quorumBackend{fakeBackend: newFakeBackend()}
	b.serving.Store(true)
	defer b.close()
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
	defer func() {
		s.Close()
		if err := <-served; err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	addr := ln.Addr().String()
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
