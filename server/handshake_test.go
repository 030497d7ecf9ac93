package server

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/session"
)

func TestHandshakeReadOnlyByte(t *testing.T) {
	ts := startServer(t, nil)
	for _, tc := range []struct {
		name    string
		hasRO   bool
		wantLen int
	}{
		{"go-zk style, no readOnly byte", false, 36},
		{"java style, readOnly byte", true, 37},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, ts.addr)
			resp, raw := c.connect(jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: tc.hasRO})
			if len(raw) != tc.wantLen {
				t.Fatalf("response is %d bytes, want %d: %x", len(raw), tc.wantLen, raw)
			}
			if resp.HasReadOnly != tc.hasRO || resp.ReadOnly {
				t.Fatalf("readOnly echo = %v/%v, want present=%v false", resp.HasReadOnly, resp.ReadOnly, tc.hasRO)
			}
			if resp.ProtocolVersion != 0 || resp.TimeOut != 30000 || resp.SessionId == 0 {
				t.Fatalf("response %+v", resp)
			}
			if !bytes.Equal(resp.Passwd, session.Password(resp.SessionId)) {
				t.Fatalf("password %x, want session.Password", resp.Passwd)
			}
			if h := c.call(1, jute.OpPing, nil, nil); h.Xid != jute.XidPing || h.Err != 0 {
				t.Fatalf("ping reply %+v", h)
			}
		})
	}
}

func TestHandshakeTimeoutNegotiation(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.TickTime = time.Second
		c.MinSessionTimeout, c.MaxSessionTimeout = 0, 0 // 2s and 20s
	})
	for _, tc := range []struct{ req, want int32 }{
		{100, 2000},
		{5000, 5000},
		{100000, 20000},
	} {
		c := dialRaw(t, ts.addr)
		resp, _ := c.connect(jute.ConnectRequest{TimeOut: tc.req, Passwd: make([]byte, 16)})
		if resp.TimeOut != tc.want {
			t.Errorf("requested %d ms: negotiated %d, want %d", tc.req, resp.TimeOut, tc.want)
		}
		if to, ok := ts.b.SessionTimeout(resp.SessionId); !ok || to != tc.want {
			t.Errorf("backend session timeout %d %v, want %d", to, ok, tc.want)
		}
	}
}

func TestReattach(t *testing.T) {
	ts := startServer(t, nil)
	first := dialRaw(t, ts.addr)
	first.session()
	id, pw := first.id, first.pw

	t.Run("wrong password", func(t *testing.T) {
		c := dialRaw(t, ts.addr)
		bad := bytes.Repeat([]byte{1}, 16)
		resp, raw := c.connect(jute.ConnectRequest{TimeOut: 30000, SessionId: id, Passwd: bad, HasReadOnly: true})
		// protocolVersion 0, timeOut 0, sessionId 0, 16 zero bytes, readOnly false.
		want := append(make([]byte, 16), 0, 0, 0, 16)
		want = append(want, make([]byte, 17)...)
		if !bytes.Equal(raw, want) {
			t.Fatalf("response %x, want %x", raw, want)
		}
		if resp.SessionId != 0 || resp.TimeOut != 0 {
			t.Fatalf("response %+v", resp)
		}
		c.expectClosed()
		// As in ZooKeeper, the attempt closed the session's connection,
		// but the session lives on.
		first.expectClosed()
		if _, ok := ts.b.SessionTimeout(id); !ok {
			t.Fatal("session gone after a wrong-password attempt")
		}
		first = dialRaw(t, ts.addr)
		if resp, _ := first.connect(jute.ConnectRequest{TimeOut: 30000, SessionId: id, Passwd: pw}); resp.SessionId != id {
			t.Fatalf("reattach after a wrong-password attempt: %+v", resp)
		}
	})
	t.Run("unknown session", func(t *testing.T) {
		c := dialRaw(t, ts.addr)
		resp, _ := c.connect(jute.ConnectRequest{TimeOut: 30000, SessionId: id + 1000, Passwd: session.Password(id + 1000)})
		if resp.SessionId != 0 || resp.TimeOut != 0 || !bytes.Equal(resp.Passwd, make([]byte, 16)) {
			t.Fatalf("response %+v", resp)
		}
		c.expectClosed()
	})
	t.Run("right password takes over", func(t *testing.T) {
		c := dialRaw(t, ts.addr)
		resp, _ := c.connect(jute.ConnectRequest{TimeOut: 12000, SessionId: id, Passwd: pw})
		if resp.SessionId != id || resp.TimeOut != 12000 {
			t.Fatalf("response %+v, want session %x", resp, id)
		}
		first.expectClosed()
		if h := c.call(2, jute.OpPing, nil, nil); h.Err != 0 {
			t.Fatalf("ping on new connection: %+v", h)
		}
	})
	t.Run("expired session", func(t *testing.T) {
		c := dialRaw(t, ts.addr)
		c.session()
		ts.b.expire(c.id)
		c.expectClosed()
		d := dialRaw(t, ts.addr)
		resp, _ := d.connect(jute.ConnectRequest{TimeOut: 30000, SessionId: c.id, Passwd: c.pw})
		if resp.SessionId != 0 {
			t.Fatalf("reattach to expired session got %+v", resp)
		}
		d.expectClosed()
	})
}

func TestHandshakeRefused(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxBuffer = 1000 })
	ahead := jute.ConnectRequest{LastZxidSeen: 1 << 40, TimeOut: 30000, Passwd: make([]byte, 16)}
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"lastZxidSeen ahead of the member", frameOf(jute.Encode(&ahead))},
		{"garbage handshake", frameOf([]byte("abcdefgh"))},
		{"frame over MaxBuffer", binary.BigEndian.AppendUint32(nil, 1001)},
		{"negative frame length", binary.BigEndian.AppendUint32(nil, 0xfffffff0)},
		{"request before handshake", frameOf([]byte{0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, '/', 0})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, ts.addr)
			c.write(tc.send)
			c.expectClosed()
		})
	}
	// The server still serves.
	c := dialRaw(t, ts.addr)
	c.session()
}

func TestTruncatedFrameClosesConnection(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.write([]byte{0, 0, 0, 20, 0, 0, 0, 1})
	c.nc.(interface{ CloseWrite() error }).CloseWrite()
	c.expectClosed()
	waitFor(t, "connection removed", func() bool { return len(ts.Conns()) == 0 })
}

func TestMaxClientCnxns(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxClientCnxns = 2 })
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	a.session()
	b.session()
	c := dialRaw(t, ts.addr)
	c.expectClosed()
	if got := ts.stats.connectionRejected.Load(); got != 1 {
		t.Fatalf("connection_rejected = %d, want 1", got)
	}
	a.nc.Close()
	waitFor(t, "slot freed", func() bool { return len(ts.Conns()) == 1 })
	d := dialRaw(t, ts.addr)
	d.session()
}

func TestCloseStopsEverything(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	gate := make(chan struct{})
	ts.b.setGate(gate) // a write that never applies must not hold Close up
	c.send(1, jute.OpCreate, &jute.CreateRequest{Path: "/never", Acl: openACL})
	waitFor(t, "write submitted", func() bool { return ts.b.submitCount() == 2 })
	done := make(chan error, 1)
	go func() { done <- ts.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	c.expectClosed()
	if err := ts.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Serve(ln); err != ErrClosed {
		t.Fatalf("Serve after Close = %v, want ErrClosed", err)
	}
	if ts.goAttach(func() {}) {
		t.Fatal("goAttach ran a goroutine after Close")
	}
	ts.b.setGate(nil)
	close(gate)
}

func TestListenAndServe(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ClientAddr = "127.0.0.1:0"
	b := newFakeBackend()
	defer b.close()
	s, err := New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.ListenAndServe() }()
	waitFor(t, "listener", func() bool { return s.Addr() != nil })
	c := dialRaw(t, s.Addr().String())
	c.session()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("ListenAndServe returned %v after Close, want nil", err)
	}
	c.expectClosed()

	cfg.ClientAddr = "256.0.0.1:0"
	s2, _ := New(cfg, b)
	if err := s2.ListenAndServe(); err == nil || !strings.HasPrefix(err.Error(), "server: listen") {
		t.Fatalf("ListenAndServe on a bad address: %v", err)
	}
}
