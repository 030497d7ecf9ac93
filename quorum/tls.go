package quorum

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// PeerTLS is the mutual TLS members speak to each other when sslQuorum is
// on (ZooKeeper's ssl.quorum.* keys): the raft transport on the quorum
// port and forwarding on the election port both use it, so a member
// without a certificate the others trust can neither vote nor forward.
// server/tlsconf's Reloader implements it.
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

// serverTLS wraps an accepted connection in TLS; with VerifyPeerNames the
// client certificate must name the remote IP address.
func serverTLS(pt PeerTLS, c net.Conn) *tls.Conn {
	conf := pt.ServerConfig()
	if pt.VerifyPeerNames() {
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
	}
	return tls.Server(c, conf)
}

// peerListener is the election listener behind mutual TLS.
type peerListener struct {
	net.Listener
	tls PeerTLS
}

func (l *peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return serverTLS(l.tls, c), nil
}

// tlsStream is raft's stream layer over mutual TLS.
type tlsStream struct {
	net.Listener
	advertise net.Addr
	tls       PeerTLS
}

// Accept returns the next connection, TLS on top; the handshake runs on
// its first read, in raft's connection goroutine.
func (s *tlsStream) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return serverTLS(s.tls, c), nil
}

// Addr is the address raft advertises: the quorum address.
func (s *tlsStream) Addr() net.Addr { return s.advertise }

// Dial opens a TLS connection to a peer's quorum port.
func (s *tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialTLS(s.tls, string(addr), timeout)
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
		return nil, fmt.Errorf("quorum: TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// dialPeer opens a connection to a peer's election (forwarding) port:
// plain TCP, or mutual TLS with sslQuorum.
func (m *Member) dialPeer(addr string, timeout time.Duration) (net.Conn, error) {
	if m.cfg.PeerTLS == nil {
		return net.DialTimeout("tcp", addr, timeout)
	}
	return dialTLS(m.cfg.PeerTLS, addr, timeout)
}

// transport returns the raft transport on the quorum address: raft's TCP
// transport, or the same protocol over mutual TLS with sslQuorum.
func (m *Member) transport(quorumAddr string, advertise *net.TCPAddr, logger hclog.Logger) (*raft.NetworkTransport, error) {
	if m.cfg.PeerTLS == nil {
		return raft.NewTCPTransportWithLogger(quorumAddr, advertise, 3, m.timing.TransportTimeout, logger)
	}
	ln, err := net.Listen("tcp", quorumAddr)
	if err != nil {
		return nil, err
	}
	return raft.NewNetworkTransportWithLogger(&tlsStream{Listener: ln, advertise: advertise, tls: m.cfg.PeerTLS},
		3, m.timing.TransportTimeout, logger), nil
}

// listenElection listens on the election (forwarding) port, behind
// mutual TLS with sslQuorum.
func (m *Member) listenElection(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || m.cfg.PeerTLS == nil {
		return ln, err
	}
	return &peerListener{Listener: ln, tls: m.cfg.PeerTLS}, nil
}
