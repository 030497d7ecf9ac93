package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab/tlsconf"
)

// schemeX509 is ZooKeeper's X509AuthenticationProvider scheme: the id is
// the verified client certificate's subject in RFC 2253 form.
const schemeX509 = "x509"

// tlsConn is a client connection that may carry TLS: *tls.Conn on a
// secure port, *tlsconf.UnifiedConn on a unified one (where
// HandshakeComplete stays false for a plaintext client).
type tlsConn interface {
	HandshakeContext(ctx context.Context) error
	ConnectionState() tls.ConnectionState
}

// secureHandshake completes the TLS handshake of a TLS connection within
// the sessionless timeout and takes the client certificate's identity, as
// ZooKeeper's NettyServerCnxnFactory does on a secure port: a verified
// certificate needs the x509 provider (else the connection is closed, as
// ZooKeeper closes it) and gives the x509 id, and super when it names the
// X509 super user. It returns false when the connection must close. A
// plaintext connection returns true at once.
func (c *conn) secureHandshake() bool {
	tc, ok := c.nc.(tlsConn)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.sessionlessTimeout())
	defer cancel()
	c.s.zm.outstandingHandshakes.Add(1)
	err := tc.HandshakeContext(ctx)
	c.s.zm.outstandingHandshakes.Add(-1)
	if err != nil {
		// As ZooKeeper's, a failed handshake also counts as a failed
		// authentication.
		c.s.zm.unsuccessfulHandshake.Inc()
		c.s.stats.authFailed.Add(1)
		c.logger().Warn("TLS handshake failed, closing connection", zap.Error(err))
		return false
	}
	st := tc.ConnectionState()
	if !st.HandshakeComplete {
		return true // plaintext client on a unified port
	}
	c.secure.Store(true)
	if len(st.VerifiedChains) == 0 {
		return true // ssl.clientAuth=none, or want and no certificate
	}
	if !c.s.cfg.X509Auth {
		c.s.stats.authFailed.Add(1)
		c.logger().Error("client certificate received but the x509 auth provider is not configured (authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider), closing connection")
		return false
	}
	return c.addX509(st.VerifiedChains[0][0])
}

// addX509 adds the identities of a verified client certificate.
func (c *conn) addX509(cert *x509.Certificate) bool {
	subject, ids, err := c.s.x509IDs(cert)
	if err != nil {
		c.s.stats.authFailed.Add(1)
		c.logger().Warn("x509 authentication failed, closing connection", zap.Error(err))
		return false
	}
	c.x509Subject = subject
	for _, id := range ids {
		c.addAuth(id)
	}
	if len(ids) > 1 {
		c.logger().Info("client authenticated as superuser by its certificate", zap.String("subject", subject))
	}
	c.logger().Debug("client authenticated by certificate", zap.String("subject", subject))
	return true
}

// addAuthX509 answers `addauth x509 …` as ZooKeeper's
// X509AuthenticationProvider: the certificate, not the packet, is the
// credential, so it succeeds (adding nothing new) on a connection whose
// certificate was verified and fails on any other.
func (c *conn) addAuthX509() bool {
	return c.s.cfg.X509Auth && c.x509Subject != ""
}

// x509IDs are the identities a verified client certificate gives, as
// ZooKeeper's X509AuthenticationProvider maps it: x509:<subject in RFC
// 2253 form>, and super when the subject is
// X509AuthenticationProvider.superUser.
func (s *Server) x509IDs(cert *x509.Certificate) (string, []jute.Id, error) {
	subject, err := tlsconf.SubjectName(cert)
	if err != nil {
		return "", nil, err
	}
	ids := []jute.Id{{Scheme: schemeX509, Id: subject}}
	if su := s.cfg.X509SuperUser; su != "" && su == subject {
		ids = append(ids, jute.Id{Scheme: schemeSuper, Id: subject})
	}
	return subject, ids, nil
}

// X509Identity returns the identities a client connection would carry
// after presenting cert (verified by the caller's TLS handshake) on a
// secure client port, for checking ACLs on its behalf, as the web console
// does for a browser's certificate over HTTPS. It fails, as the client
// port closes such a connection, when the x509 provider is not configured
// (authProvider.x509).
func (s *Server) X509Identity(cert *x509.Certificate) (subject string, ids []jute.Id, err error) {
	if !s.cfg.X509Auth {
		return "", nil, errors.New("server: client certificate received but the x509 auth provider is not configured (authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider)")
	}
	subject, ids, err = s.x509IDs(cert)
	if err != nil {
		return "", nil, fmt.Errorf("server: x509 identity: %w", err)
	}
	javaSetOrder(ids)
	return subject, ids, nil
}
