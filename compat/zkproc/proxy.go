package zkproc

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of one server address, for
// tests that need a network fault between a client and a server: cut every
// connection, refuse new ones, or blackhole traffic (connections stay open
// but no byte goes through, as with a partition that drops packets).
// Point the client at Proxy.Addr instead of the server's.
type Proxy struct {
	// Addr is the proxy's listening address.
	Addr string

	target    string
	l         net.Listener
	blackhole atomic.Bool
	reject    atomic.Bool
	pairs     atomic.Int32
	wg        sync.WaitGroup

	mu struct {
		sync.Mutex
		conns  map[net.Conn]struct{}
		closed bool
	}
}

// StartProxy listens on a free loopback port and forwards every connection
// to target. t.Cleanup closes it.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("zkproc: proxy: %v", err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: target, l: l}
	p.mu.conns = make(map[net.Conn]struct{})
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.Close)
	return p
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if p.reject.Load() {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// track registers c so that Reset and Close can end it; false if closing.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return false
	}
	p.mu.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.mu.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)
	p.pairs.Add(1)
	defer p.pairs.Add(-1)
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client); done <- struct{}{} }()
	go func() { p.pipe(client, server); done <- struct{}{} }()
	<-done // one side ended: end both
}

// pipe copies src to dst, dropping what it reads while blackholed.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.blackhole.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Blackhole makes the proxy drop every byte in both directions, on current
// and new connections, until Heal. Connections stay open.
func (p *Proxy) Blackhole() { p.blackhole.Store(true) }

// Heal ends Blackhole and Reject: traffic flows again. Bytes dropped while
// blackholed are lost, so a client's stream is usually corrupt afterwards;
// clients notice by timeout and reconnect.
func (p *Proxy) Heal() {
	p.blackhole.Store(false)
	p.reject.Store(false)
}

// Reject makes the proxy close new connections at once, until Heal.
func (p *Proxy) Reject() { p.reject.Store(true) }

// Reset closes every current connection, as a server crash or a network
// reset would; new connections are accepted as before.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.mu.conns {
		c.Close()
	}
}

// Conns returns how many client connections are being proxied.
func (p *Proxy) Conns() int { return int(p.pairs.Load()) }

// Close stops the proxy and closes every connection. It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return
	}
	p.mu.closed = true
	for c := range p.mu.conns {
		c.Close()
	}
	p.mu.Unlock()
	if err := p.l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return
	}
	p.wg.Wait()
}
