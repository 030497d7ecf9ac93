package server

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"

	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
)

// Auth schemes the server knows, as ZooKeeper's default providers.
const (
	schemeDigest = "digest"
	schemeIP     = "ip"
	schemeSuper  = "super"
)

// Digest returns ZooKeeper's digest id for "user:password":
// user:base64(sha1("user:password")). A string without a colon is its own
// user name, as in ZooKeeper.
func Digest(userPassword string) string {
	sum := sha1.Sum([]byte(userPassword))
	user, _, _ := strings.Cut(userPassword, ":")
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// handleAuth applies an auth packet (xid -4) at once, so later requests of
// the connection carry the new identity, and returns the reply frame. ok is
// false for an unknown scheme: the reply is AuthFailed and the connection
// must close. A nil frame means the packet did not decode: close without a
// reply.
func (c *conn) handleAuth(xid int32, body []byte) (frame []byte, ok bool) {
	var ap jute.AuthPacket
	d := jute.NewDecoder(body)
	ap.Decode(d)
	if d.Err() != nil {
		c.logger().Warn("malformed auth packet, closing connection", zap.Error(d.Err()))
		return nil, false
	}
	switch ap.Scheme {
	case schemeDigest:
		id := Digest(string(ap.Auth))
		if c.s.cfg.SuperDigest != "" && id == c.s.cfg.SuperDigest {
			c.addAuth(jute.Id{Scheme: schemeSuper, Id: ""})
			c.logger().Info("client authenticated as superuser")
		}
		c.addAuth(jute.Id{Scheme: schemeDigest, Id: id})
	case schemeIP:
		// The ip identity is always present (see authIDs).
	default:
		c.s.stats.authFailed.Add(1)
		c.logger().Warn("authentication failed: unknown scheme, closing connection", zap.String("scheme", ap.Scheme))
		return encodeReply(jute.ReplyHeader{Xid: xid, Err: jute.CodeAuthFailed}, nil), false
	}
	return encodeReply(jute.ReplyHeader{Xid: xid}, nil), true
}

// addAuth adds id to the connection's identities unless already present.
func (c *conn) addAuth(id jute.Id) {
	c.auth.Lock()
	defer c.auth.Unlock()
	for _, have := range c.auth.ids {
		if have == id {
			return
		}
	}
	c.auth.ids = append(c.auth.ids, id)
	ids := make([]jute.Id, 0, len(c.auth.ids)+1)
	ids = append(ids, c.auth.ids...)
	ids = append(ids, jute.Id{Scheme: schemeIP, Id: c.ip})
	c.auth.all.Store(&ids)
}

// authIDs returns the identities requests of this connection act as: the
// authenticated ids, then ("ip", remote address). The slice is shared and
// must not be modified.
func (c *conn) authIDs() []jute.Id {
	if p := c.auth.all.Load(); p != nil {
		return *p
	}
	return c.ipOnly
}

// whoAmI lists the identities as ZooKeeper's whoAmI does: the provider's
// scheme and the user name (the part of a digest id before the colon).
func (c *conn) whoAmI() *jute.WhoAmIResponse {
	ids := c.authIDs()
	resp := &jute.WhoAmIResponse{ClientInfo: make([]jute.ClientInfo, 0, len(ids))}
	for _, id := range ids {
		user := id.Id
		if id.Scheme == schemeDigest {
			user, _, _ = strings.Cut(id.Id, ":")
		}
		resp.ClientInfo = append(resp.ClientInfo, jute.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	return resp
}
