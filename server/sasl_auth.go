package server

import (
	"fmt"
	"net"
	"slices"

	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/sasl"
)

// schemeSASL is the auth scheme of SASL identities ("sasl:<user>").
const schemeSASL = "sasl"

// SASLConfig configures SASL authentication (opcode sasl) and ZooKeeper's
// enforce.auth.
type SASLConfig struct {
	// Users are the DIGEST-MD5 users of the JAAS Server section; nil (with
	// Kerberos nil) means SASL is not configured, and every sasl request
	// ends in AuthFailed.
	Users *sasl.Users
	// Kerberos, when set, is the Server section's Krb5LoginModule: the
	// server speaks GSSAPI, and only GSSAPI, as ZooKeeper does when its
	// Server section logs a Kerberos principal in.
	Kerberos *sasl.Kerberos
	// SuperUser is zookeeper.superUser: a client that authenticates by
	// SASL under this name also gets the super identity. "" disables it.
	SuperUser string
	// AllowFailedClients is zookeeper.allowSaslFailedClients: a failed SASL
	// exchange leaves the connection open (unless SASL is required by
	// EnforceAuthSchemes, or Users is nil). Default false.
	AllowFailedClients bool
	// EnforceAuthSchemes, when not empty, is enforce.auth: every request
	// other than auth and sasl of a connection that holds no identity of
	// one of these schemes is answered SessionClosedRequireSASL, and the
	// connection closes (zookeeper.enforce.auth.enabled with
	// zookeeper.enforce.auth.schemes, or sessionRequireClientSASLAuth,
	// which means ["sasl"]). Default none.
	EnforceAuthSchemes []string
}

// saslRequired is ZooKeeper's isSaslAuthRequired.
func (c *SASLConfig) saslRequired() bool {
	return slices.Contains(c.EnforceAuthSchemes, schemeSASL)
}

// validate reports a bad field.
func (c *SASLConfig) validate() error {
	for _, s := range c.EnforceAuthSchemes {
		if s == "" {
			return fmt.Errorf("server: SASL.EnforceAuthSchemes holds an empty scheme")
		}
	}
	return nil
}

// handleSASL runs one step of the connection's SASL exchange, as
// ZooKeeperServer.processSasl does, and returns the reply frame; closeAfter
// says the connection must close after it. A nil frame means the request
// did not decode: close without a reply.
func (c *conn) handleSASL(xid int32, body []byte) (frame []byte, closeAfter bool) {
	var req jute.GetSASLRequest
	d := jute.NewDecoder(body)
	req.Decode(d)
	if d.Err() != nil || req.Token == nil {
		c.logger().Warn("malformed sasl request, closing connection", zap.Error(d.Err()))
		return nil, true
	}
	cfg := &c.s.cfg.SASL
	fail := func(err error, allow bool) ([]byte, bool) {
		if allow && !cfg.saslRequired() {
			c.logger().Warn("SASL authentication failed, connection kept (zookeeper.allowSaslFailedClients)", zap.Error(err))
			return encodeReply(jute.ReplyHeader{Xid: xid}, &jute.SetSASLResponse{}), false
		}
		// Not counted in auth_failed_count, as in ZooKeeper.
		code := jute.CodeAuthFailed
		if cfg.saslRequired() {
			code = jute.CodeSessionClosedRequireSASL
		}
		c.logger().Warn("SASL authentication failed, closing connection", zap.Error(err))
		return encodeReply(jute.ReplyHeader{Xid: xid, Err: code}, &jute.SetSASLResponse{}), true
	}
	if cfg.Users == nil && cfg.Kerberos == nil {
		// ZooKeeper 3.8 answers OK with no token here, which Kazoo
		// resends at once, forever; fail the way a refused exchange does,
		// so every client ends in AuthFailed instead, whatever
		// allowSaslFailedClients says.
		return fail(fmt.Errorf("SASL is not configured on this server (no JAAS Server section)"), false)
	}
	if c.sasl == nil {
		if cfg.Kerberos != nil {
			var ip net.IP
			if host, _, err := net.SplitHostPort(c.remote); err == nil {
				ip = net.ParseIP(host)
			}
			c.sasl = sasl.NewGSSAPIServer(cfg.Kerberos, ip)
		} else {
			c.sasl = sasl.NewServer(*cfg.Users, nil)
		}
	}
	token, err := c.sasl.Evaluate(req.Token)
	if err != nil {
		return fail(err, cfg.AllowFailedClients)
	}
	if c.sasl.Complete() {
		id, _ := c.sasl.AuthorizationID()
		c.addAuth(jute.Id{Scheme: schemeSASL, Id: id})
		if g, ok := c.sasl.(*sasl.GSSAPIServer); ok {
			c.logger().Info("client authenticated by SASL GSSAPI", zap.String("principal", g.Principal()), zap.String("user", id))
		} else {
			c.logger().Info("client authenticated by SASL", zap.String("user", id))
		}
		if cfg.SuperUser != "" && id == cfg.SuperUser {
			c.addAuth(jute.Id{Scheme: schemeSuper, Id: ""})
			c.logger().Info("client authenticated as superuser", zap.String("user", id))
		}
	}
	return encodeReply(jute.ReplyHeader{Xid: xid}, &jute.SetSASLResponse{Token: token}), false
}

// authEnforced reports whether a request of type op may go on under
// enforce.auth: auth and sasl always may, others only once the connection
// holds an identity of an enforced scheme (ZooKeeper's
// AuthenticationHelper.enforceAuthentication, which pings and
// closeSession do not escape either).
func (c *conn) authEnforced(op int32) bool {
	schemes := c.s.cfg.SASL.EnforceAuthSchemes
	if len(schemes) == 0 || op == jute.OpAuth || op == jute.OpSASL {
		return true
	}
	for _, id := range c.authIDs() {
		if slices.Contains(schemes, id.Scheme) {
			return true
		}
	}
	c.logger().Warn("request before authentication with an enforced scheme, closing connection",
		zap.String("op", opName(op)), zap.Strings("schemes", schemes))
	return false
}
