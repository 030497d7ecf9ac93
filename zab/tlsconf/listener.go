package tlsconf

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"
)

// recordTypeHandshake is the first byte of every TLS connection (a
// handshake record). A plaintext ZooKeeper client starts with a frame
// length, whose first byte is 0 for any frame under 16 MiB, or a 4-letter
// word in ASCII letters, so one byte tells them apart.
const recordTypeHandshake = 0x16

// SecureListener returns a listener whose connections speak TLS with conf
// (secureClientPort). The handshake runs on the connection's first read or
// on HandshakeContext, not in Accept, so one slow client holds up no other.
func SecureListener(ln net.Listener, conf *tls.Config) net.Listener {
	return tls.NewListener(ln, conf)
}

// UnifiedListener returns a listener serving TLS and plaintext on one port
// (client.portUnification=true): each connection is a *UnifiedConn that
// decides from the client's first byte.
func UnifiedListener(ln net.Listener, conf *tls.Config) net.Listener {
	return &unifiedListener{Listener: ln, conf: conf}
}

type unifiedListener struct {
	net.Listener
	conf *tls.Config
}

func (l *unifiedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &UnifiedConn{raw: c, conf: l.conf, Conn: c}, nil
}

// UnifiedConn is a connection of a UnifiedListener. Until HandshakeContext
// returns it must not be read or written; Close may be called at any time.
type UnifiedConn struct {
	net.Conn // the transport after HandshakeContext: *tls.Conn or the raw conn

	raw  net.Conn
	conf *tls.Config
	tc   *tls.Conn
}

// HandshakeContext reads the client's first byte and, for TLS, completes
// the handshake; ctx bounds both.
func (c *UnifiedConn) HandshakeContext(ctx context.Context) error {
	if dl, ok := ctx.Deadline(); ok {
		c.raw.SetReadDeadline(dl)
		defer c.raw.SetReadDeadline(time.Time{})
	}
	pc, isTLS, err := Sniff(c.raw)
	if err != nil {
		return err
	}
	if !isTLS {
		c.Conn = pc
		return nil
	}
	c.tc = tls.Server(pc, c.conf)
	c.Conn = c.tc
	return c.tc.HandshakeContext(ctx)
}

// ConnectionState returns the TLS state; HandshakeComplete is false for a
// plaintext connection.
func (c *UnifiedConn) ConnectionState() tls.ConnectionState {
	if c.tc == nil {
		return tls.ConnectionState{}
	}
	return c.tc.ConnectionState()
}

// Close closes the underlying connection, which also ends a handshake in
// progress.
func (c *UnifiedConn) Close() error { return c.raw.Close() }

// Sniff reads c's first byte and reports whether it opens a TLS
// handshake; conn gives that byte back on its first Read, so a caller
// passes conn on (to tls.Server, or as plaintext). Deadlines are the
// caller's: Sniff blocks until a byte comes or c's read deadline passes.
// Members' ports use it for ZooKeeper's quorum portUnification.
func Sniff(c net.Conn) (conn net.Conn, isTLS bool, err error) {
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		return nil, false, err
	}
	return &prefixConn{Conn: c, prefix: b[:]}, b[0] == recordTypeHandshake, nil
}

// WithPrefix returns c reading prefix first: for a connection whose
// first bytes a caller read to tell what it speaks.
func WithPrefix(c net.Conn, prefix []byte) net.Conn { return &prefixConn{Conn: c, prefix: prefix} }

// prefixConn is a connection whose first bytes were already read.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// Merge returns one listener accepting from all of lns (clientPort beside
// secureClientPort). Its Addr is the first's; Close closes them all.
func Merge(lns ...net.Listener) net.Listener {
	if len(lns) == 1 {
		return lns[0]
	}
	m := &merged{lns: lns, conns: make(chan net.Conn), quit: make(chan struct{}), errs: make(chan error, len(lns))}
	for _, ln := range lns {
		go m.accept(ln)
	}
	return m
}

type merged struct {
	lns   []net.Listener
	conns chan net.Conn
	errs  chan error
	quit  chan struct{}
	once  sync.Once
}

func (m *merged) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			select {
			case m.errs <- err:
			case <-m.quit:
			}
			return
		}
		select {
		case m.conns <- c:
		case <-m.quit:
			c.Close()
			return
		}
	}
}

// Accept returns the next connection of any listener, or the first error
// one of them returned (the others keep accepting).
func (m *merged) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case err := <-m.errs:
		return nil, err
	case <-m.quit:
		return nil, net.ErrClosed
	}
}

func (m *merged) Close() error {
	var err error
	m.once.Do(func() {
		close(m.quit)
		for _, ln := range m.lns {
			err = errors.Join(err, ln.Close())
		}
	})
	return err
}

func (m *merged) Addr() net.Addr { return m.lns[0].Addr() }

// DetectingListener returns a listener serving TLS and plaintext on one
// port for servers that need a *tls.Conn to know a connection is TLS
// (net/http): each accepted connection's first byte is read in its own
// goroutine, within timeout, and Accept returns a *tls.Conn (handshake
// still to come) or the plaintext connection. ZooKeeper's admin server
// does this with admin.portUnification.
func DetectingListener(ln net.Listener, conf *tls.Config, timeout time.Duration) net.Listener {
	d := &detecting{Listener: ln, conf: conf, timeout: timeout, ready: make(chan net.Conn), quit: make(chan struct{}), errc: make(chan error, 1)}
	go d.acceptLoop()
	return d
}

type detecting struct {
	net.Listener
	conf    *tls.Config
	timeout time.Duration
	ready   chan net.Conn
	errc    chan error
	quit    chan struct{}
	once    sync.Once
}

func (d *detecting) acceptLoop() {
	for {
		c, err := d.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			select {
			case d.errc <- err:
			case <-d.quit:
			}
			return
		}
		go d.detect(c)
	}
}

// detect reads c's first byte and hands the connection to Accept.
func (d *detecting) detect(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(d.timeout))
	out, isTLS, err := Sniff(c)
	if err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	if isTLS {
		out = tls.Server(out, d.conf)
	}
	select {
	case d.ready <- out:
	case <-d.quit:
		c.Close()
	}
}

func (d *detecting) Accept() (net.Conn, error) {
	select {
	case c := <-d.ready:
		return c, nil
	case err := <-d.errc:
		return nil, err
	case <-d.quit:
		return nil, net.ErrClosed
	}
}

func (d *detecting) Close() error {
	var err error
	d.once.Do(func() {
		close(d.quit)
		err = d.Listener.Close()
	})
	return err
}
