package quorum

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/quorum/quorumauth"
	"github.com/zkd/zkd/zab/tlsconf"
)

// PeerAuth is quorum SASL between members (ZooKeeper's quorum.auth.*
// keys, package quorumauth's exchange); package cmd/zkd implements it with
// server/sasl's DIGEST-MD5 and GSSAPI (Kerberos).
type PeerAuth interface {
	// Learner returns the client for a connection this member dials to
	// the member at host (the host of its server.N line: Kerberos names
	// the service by it), or nil when it does not authenticate
	// (learnerRequireSasl=false). An error (such as a KDC that gives no
	// ticket) means the member is not dialed.
	Learner(host string) (quorumauth.Client, error)
	// Server returns the server for a connection that authenticates to
	// this member.
	Server() quorumauth.Server
	// Required reports whether a member that does not authenticate, or
	// fails to, is refused (serverRequireSasl=true); otherwise it is let
	// through, as in ZooKeeper's rolling enablement.
	Required() bool
}

// PeerTLS is the mutual TLS members speak to each other when sslQuorum is
// on (ZooKeeper's ssl.quorum.* keys): the raft transport on the quorum
// port and forwarding on the election port both use it, so a member
// without a certificate the others trust can neither vote nor forward.
// zab/tlsconf's Reloader implements it.
type PeerTLS interface {
	// ServerConfig is the configuration of the quorum and election
	// listeners; it must require and verify client certificates.
	ServerConfig() *tls.Config
	// ClientConfig is the configuration for dialing the member at
	// serverName (a host name or IP), presenting this member's
	// certificate.
	ClientConfig(serverName string) *tls.Config
	// VerifyPeerNames reports whether a listener also checks that a
	// connecting member's certificate names the address it connects from
	// (ssl.quorum.hostnameVerification, on by default in ZooKeeper).
	VerifyPeerNames() bool
}

// serverConfig is the TLS configuration for a member connecting from c;
// with VerifyPeerNames its certificate must name c's remote IP address.
func serverConfig(pt PeerTLS, c net.Conn) *tls.Config {
	conf := pt.ServerConfig()
	if !pt.VerifyPeerNames() {
		return conf
	}
	ip, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	conf = conf.Clone()
	base := conf.GetConfigForClient
	conf.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		cc := conf
		if base != nil {
			var err error
			if cc, err = base(hello); err != nil || cc == nil {
				return cc, err
			}
		}
		cc = cc.Clone()
		cc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("quorum: member at %s sent no certificate", ip)
			}
			if err := cs.PeerCertificates[0].VerifyHostname(ip); err != nil {
				return fmt.Errorf("quorum: member certificate does not name %s: %w", ip, err)
			}
			return nil
		}
		return cc, nil
	}
	return conf
}

// peerMode names how this member's ports work, for its start log line.
func (c *Config) peerMode() string {
	switch {
	case c.PeerTLS == nil:
		return "plaintext only (sslQuorum=false)"
	case !c.PortUnification:
		return "mutual TLS only (sslQuorum=true)"
	case c.DialPlaintext:
		return "TLS and plaintext accepted, dialing plaintext (portUnification=true, sslQuorum=false)"
	default:
		return "TLS and plaintext accepted, dialing TLS (portUnification=true, sslQuorum=true)"
	}
}

// peerListener is a member port's listener: every accepted connection is
// a peerConn, admitted or refused by its first byte.
type peerListener struct {
	net.Listener
	m    *Member
	port string // "quorum" or "election", for logs
}

func (l *peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &peerConn{Conn: c, m: l.m, port: l.port}, nil
}

// peerConn is an accepted member connection. Its first Read or Write
// reads the peer's first byte (tlsconf.Sniff) and, by this member's mode,
// runs the TLS handshake, passes plaintext through, or refuses it; the
// caller (raft's or the leader side's goroutine for this connection)
// blocks meanwhile, so no other connection waits.
type peerConn struct {
	net.Conn // the TCP connection: addresses, deadlines, Close
	m        *Member
	port     string

	once sync.Once
	conn net.Conn // after admit: the TLS or plaintext stream
	err  error
}

func (c *peerConn) admitted() error {
	c.once.Do(func() { c.conn, c.err = c.m.admit(c.Conn, c.port) })
	return c.err
}

func (c *peerConn) Read(b []byte) (int, error) {
	if err := c.admitted(); err != nil {
		return 0, err
	}
	return c.conn.Read(b)
}

func (c *peerConn) Write(b []byte) (int, error) {
	if err := c.admitted(); err != nil {
		return 0, err
	}
	return c.conn.Write(b)
}

// errRefused is returned by a refused member connection's Read and Write.
var errRefused = errors.New("quorum: member connection refused")

// admit decides what raw, accepted on this member's port, may speak:
//
//   - TLS, when this member has the stores (sslQuorum or portUnification):
//     the handshake must succeed, the peer's certificate trusted;
//   - plaintext, when this member has no stores, or has portUnification;
//   - anything else is closed with a WARN line saying which step of the
//     rolling upgrade the two members disagree on.
func (m *Member) admit(raw net.Conn, port string) (net.Conn, error) {
	from := raw.RemoteAddr().String()
	conn, isTLS, err := tlsconf.Sniff(raw)
	if err != nil {
		// Closed before its first byte: a liveness probe (inTouch) or a
		// dial given up. Nothing to report.
		return nil, err
	}
	pt := m.cfg.PeerTLS
	switch {
	case isTLS && pt == nil:
		m.refuse(from, port, "member dialed with TLS (sslQuorum=true there), but this member has sslQuorum=false and portUnification=false; "+
			"to move to TLS, first restart every member with portUnification=true and the ssl.quorum.* stores", nil)
		raw.Close()
		return nil, errRefused
	case isTLS:
		tc := tls.Server(conn, serverConfig(pt, raw))
		ctx, cancel := context.WithTimeout(context.Background(), max(m.timing.TransportTimeout, 10*time.Second))
		defer cancel()
		if err := tc.HandshakeContext(ctx); err != nil {
			m.refuse(from, port, "TLS handshake failed (untrusted or missing certificate?)", err)
			raw.Close()
			return nil, fmt.Errorf("quorum: TLS handshake with member at %s: %w", from, err)
		}
		return tc, nil
	case pt != nil && !m.cfg.PortUnification:
		m.refuse(from, port, "plaintext member refused: this member has sslQuorum=true and portUnification=false (TLS only); "+
			"the other member still has sslQuorum=false: restart it with sslQuorum=true before turning portUnification off here", nil)
		raw.Close()
		return nil, errRefused
	case pt != nil:
		m.log.Info("accepted plaintext member connection (portUnification=true)", zap.String("from", from), zap.String("port", port))
	}
	if m.cfg.PeerAuth != nil {
		return m.checkAuth(raw, conn, from, port)
	}
	return conn, nil
}

// checkAuth runs the server side of quorum SASL on conn, accepted from a
// member on port: a member that authenticates is checked, one that fails
// is refused; one that does not try is let through unless
// PeerAuth.Required. raw is the TCP connection, for its deadline.
func (m *Member) checkAuth(raw, conn net.Conn, from, port string) (net.Conn, error) {
	pa := m.cfg.PeerAuth
	raw.SetDeadline(time.Now().Add(max(m.timing.TransportTimeout, 10*time.Second)))
	defer raw.SetDeadline(time.Time{})
	var first [8]byte
	if _, err := io.ReadFull(conn, first[:]); err != nil {
		raw.Close()
		return nil, err // a liveness probe, or a dial given up
	}
	if !quorumauth.IsAuth(first) {
		if pa.Required() {
			m.refuse(from, port, "the member did not authenticate by quorum SASL, and quorum.auth.serverRequireSasl=true here: "+
				"give it quorum.auth.enableSasl=true and quorum.auth.learnerRequireSasl=true", nil)
			raw.Close()
			return nil, errRefused
		}
		return tlsconf.WithPrefix(conn, first[:]), nil
	}
	id, err := quorumauth.Serve(conn, from, pa.Server())
	if err != nil {
		m.refuse(from, port, "quorum SASL failed: this member's JAAS QuorumServer section does not accept the member's QuorumLearner login", err)
		raw.Close()
		return nil, errRefused
	}
	m.log.Debug("member authenticated by quorum SASL", zap.String("from", from), zap.String("port", port), zap.String("id", id))
	return conn, nil
}

// refusalLog keeps one WARN line per remote host, port and reason every
// refusalEvery: a refused member redials many times a second.
type refusalLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

const refusalEvery = 10 * time.Second

// refuse logs that a connection from a member was refused on port, for
// why (a fixed text) and err (its detail, may be nil).
func (m *Member) refuse(from, port, why string, err error) {
	m.warnPeer(from, port, "refused a member connection on the "+port+" port: "+why, err)
}

// warnPeer logs msg about the member at addr on port at warn, once per
// host, port and msg every refusalEvery.
func (m *Member) warnPeer(from, port, msg string, err error) {
	host, _, _ := net.SplitHostPort(from)
	key := host + "\x00" + port + "\x00" + msg
	now := time.Now()
	r := &m.refusals
	r.mu.Lock()
	if r.last == nil {
		r.last = map[string]time.Time{}
	}
	if t, ok := r.last[key]; ok && now.Sub(t) < refusalEvery {
		r.mu.Unlock()
		return
	}
	if len(r.last) >= 1024 {
		for k, t := range r.last {
			if now.Sub(t) >= refusalEvery {
				delete(r.last, k)
			}
		}
	}
	r.last[key] = now
	r.mu.Unlock()
	fields := []zap.Field{zap.String("member", from)}
	if err != nil {
		fields = append(fields, zap.Error(err))
	}
	m.log.Warn(msg, fields...)
}

// peerStream is raft's stream layer on the quorum port: accepted
// connections go through admit, dialed ones through dialPeer.
type peerStream struct {
	*peerListener
	advertise net.Addr
}

// Addr is the address raft advertises: the quorum address.
func (s *peerStream) Addr() net.Addr { return s.advertise }

// Dial opens a connection to a peer's quorum port.
func (s *peerStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.m.dialMember(string(addr), "quorum", timeout)
}

// dialTLS dials addr and completes the handshake within timeout, so a
// peer that does not trust us (or that we do not trust) fails here.
func dialTLS(pt PeerTLS, addr string, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("quorum: peer address %s: %w", addr, err)
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(c, pt.ClientConfig(host))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil, fmt.Errorf("quorum: TLS handshake with %s: %w (closed by the member: it may still have sslQuorum=false and portUnification=false, or not trust this certificate)", addr, err)
		}
		return nil, fmt.Errorf("quorum: TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// dialPeer opens a connection to a peer's quorum or election port: mutual
// TLS with sslQuorum, plain TCP otherwise.
func (m *Member) dialPeer(addr string, timeout time.Duration) (net.Conn, error) {
	if m.cfg.PeerTLS == nil || m.cfg.DialPlaintext {
		return net.DialTimeout("tcp", addr, timeout)
	}
	return dialTLS(m.cfg.PeerTLS, addr, timeout)
}

// dialMember opens a member connection to addr on port ("quorum" or
// "election"): dialPeer, then quorum SASL when PeerAuth asks this member
// to authenticate. A failed exchange is logged once per refusalEvery.
func (m *Member) dialMember(addr, port string, timeout time.Duration) (net.Conn, error) {
	if m.cfg.PeerAuth == nil {
		return m.dialPeer(addr, timeout)
	}
	host, _, _ := net.SplitHostPort(addr)
	lc, err := m.cfg.PeerAuth.Learner(host)
	if err != nil {
		m.warnPeer(addr, port, "quorum SASL to the member on its "+port+" port not started: this member's JAAS QuorumLearner login got no credentials for it", err)
		return nil, err
	}
	c, err := m.dialPeer(addr, timeout)
	if err != nil || lc == nil {
		return c, err
	}
	c.SetDeadline(time.Now().Add(timeout))
	if err := quorumauth.Learn(c, addr, lc); err != nil {
		c.Close()
		m.warnPeer(addr, port, "quorum SASL to the member on its "+port+" port failed: it refused this member's JAAS QuorumLearner login, or does not take quorum SASL", err)
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// transport returns the raft transport on the quorum address: raft's
// network transport over peerStream.
func (m *Member) transport(quorumAddr string, advertise *net.TCPAddr, logger hclog.Logger) (*raft.NetworkTransport, error) {
	if advertise.IP.IsUnspecified() {
		return nil, fmt.Errorf("quorum: quorum address %s is not advertisable", quorumAddr)
	}
	ln, err := net.Listen("tcp", quorumAddr)
	if err != nil {
		return nil, err
	}
	m.log.Info("member ports: "+m.cfg.peerMode(), zap.String("quorum", quorumAddr))
	return raft.NewNetworkTransportWithLogger(&peerStream{peerListener: &peerListener{Listener: ln, m: m, port: "quorum"}, advertise: advertise},
		3, m.timing.TransportTimeout, logger), nil
}

// listenElection listens on the election (forwarding) port.
func (m *Member) listenElection(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &peerListener{Listener: ln, m: m, port: "election"}, nil
}
