package server

import (
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"

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
		ids := c.s.digestIDs(string(ap.Auth))
		for _, id := range ids {
			c.addAuth(id)
		}
		if len(ids) > 1 {
			c.logger().Info("client authenticated as superuser")
		}
	case schemeIP:
		// The ip identity is always present (see authIDs).
	case schemeX509:
		if !c.addAuthX509() {
			c.s.stats.authFailed.Add(1)
			c.logger().Warn("x509 authentication failed: no verified client certificate, closing connection")
			return encodeReply(jute.ReplyHeader{Xid: xid, Err: jute.CodeAuthFailed}, nil), false
		}
	default:
		c.s.stats.authFailed.Add(1)
		c.logger().Warn("authentication failed: unknown scheme, closing connection", zap.String("scheme", ap.Scheme))
		return encodeReply(jute.ReplyHeader{Xid: xid, Err: jute.CodeAuthFailed}, nil), false
	}
	return encodeReply(jute.ReplyHeader{Xid: xid}, nil), true
}

// digestIDs returns the identities an addauth of the digest scheme with
// "user:password" gives, as DigestAuthenticationProvider: the digest id,
// then super when it matches the configured super digest.
func (s *Server) digestIDs(userPassword string) []jute.Id {
	id := Digest(userPassword)
	ids := []jute.Id{{Scheme: schemeDigest, Id: id}}
	if s.cfg.SuperDigest != "" && id == s.cfg.SuperDigest {
		ids = append(ids, jute.Id{Scheme: schemeSuper, Id: ""})
	}
	return ids
}

// Identity returns the identities a client connection would carry after
// authenticating with scheme and credential (zkCli's "addauth scheme
// credential"), for checking ACLs on its behalf with the server's own
// rules, as the web console does. Only the digest scheme is accepted
// ("user:password"): ip is a property of a connection and x509 of a
// TLS handshake, neither of which a configured identity has.
func (s *Server) Identity(scheme, credential string) ([]jute.Id, error) {
	if scheme != schemeDigest {
		return nil, fmt.Errorf("server: identity scheme %q is not supported (only digest)", scheme)
	}
	if user, _, ok := strings.Cut(credential, ":"); !ok || user == "" {
		return nil, fmt.Errorf("server: digest identity must be user:password")
	}
	ids := s.digestIDs(credential)
	javaSetOrder(ids)
	return ids, nil
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
	ids = append(ids, jute.Id{Scheme: schemeIP, Id: c.ip})
	ids = append(ids, c.auth.ids...)
	javaSetOrder(ids)
	c.auth.all.Store(&ids)
}

// javaSetOrder sorts ids, given in the order they were added, into the
// order ZooKeeper's authInfo set iterates them: a ConcurrentHashMap keyed by
// jute's Id.hashCode, walked bucket by bucket, insertion order within a
// bucket. That order decides the ACL entries an "auth" ACL expands to and
// the order of whoAmI's answer, so clients see ZooKeeper's bytes. (For
// sets past the table's first resize, Java's bucket splitting may reorder
// a bucket; connections rarely hold more than a few ids.)
func javaSetOrder(ids []jute.Id) {
	n := 16 // ConcurrentHashMap's default capacity, doubled at 3/4 full
	for len(ids) >= n-n/4 {
		n *= 2
	}
	bucket := func(id jute.Id) int32 {
		h := 37*(37*17+javaStringHash(id.Scheme)) + javaStringHash(id.Id)
		spread := (h ^ int32(uint32(h)>>16)) & 0x7fffffff
		return spread & int32(n-1)
	}
	slices.SortStableFunc(ids, func(a, b jute.Id) int { return cmp.Compare(bucket(a), bucket(b)) })
}

// javaStringHash is java.lang.String.hashCode: over UTF-16 code units,
// s[0]*31^(n-1) + … + s[n-1], in int32 arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// authIDs returns the identities requests of this connection act as:
// ("ip", remote address) and the authenticated ids, in ZooKeeper's
// iteration order (javaSetOrder). The slice is shared and must not be
// modified.
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
