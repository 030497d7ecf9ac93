package sasl

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Client is the client side of a DIGEST-MD5 exchange with a ZooKeeper
// server, for zkd's tools and tests. Drive it as ZooKeeper's Java client
// does: send First(), then pass each server token to Evaluate and send
// what it returns until Complete.
type Client struct {
	user, password string
	protocol       string // digest-uri's serv-type
	serverName     string // digest-uri's host, and the realm if the server names none
	rand           io.Reader
	step           int
	rspauth        string
}

// NewClient returns a client authenticating as user to a ZooKeeper
// server's client port. random supplies the cnonce; nil means
// crypto/rand.
func NewClient(user, password string, random io.Reader) *Client {
	return newClient(Protocol, Realm, user, password, random)
}

// NewQuorumClient returns a client authenticating as user to a ZooKeeper
// leader's quorum port, as a learner with quorum.auth.learnerRequireSasl
// does (SaslQuorumAuthLearner: digest-uri
// zookeeper-quorum/zk-quorum-sasl-md5).
func NewQuorumClient(user, password string, random io.Reader) *Client {
	return newClient(QuorumProtocol, QuorumRealm, user, password, random)
}

func newClient(protocol, serverName, user, password string, random io.Reader) *Client {
	if random == nil {
		random = rand.Reader
	}
	return &Client{user: user, password: password, protocol: protocol, serverName: serverName, rand: random}
}

// First is the initial token: DIGEST-MD5 has no initial response.
func (c *Client) First() []byte { return []byte{} }

// Complete reports whether the server proved it knows the password too.
func (c *Client) Complete() bool { return c.step == 2 }

// Evaluate answers a server token: the digest-response to the challenge,
// then nil after checking rspauth.
func (c *Client) Evaluate(challenge []byte) ([]byte, error) {
	if len(challenge) > maxChallenge {
		return nil, fmt.Errorf("DIGEST-MD5: invalid digest challenge length: got %d", len(challenge))
	}
	d, err := parseDirectives(challenge)
	if err != nil {
		return nil, err
	}
	switch c.step {
	case 0:
		nonce, ok := d["nonce"]
		if !ok {
			return nil, errors.New("DIGEST-MD5: digest challenge format violation: missing nonce")
		}
		if alg := d["algorithm"]; alg != "md5-sess" {
			return nil, fmt.Errorf("DIGEST-MD5: digest challenge format violation: algorithm %q", alg)
		}
		if q, ok := d["qop"]; ok && !strings.Contains(","+strings.ReplaceAll(q, " ", "")+",", ",auth,") {
			return nil, fmt.Errorf("DIGEST-MD5: server does not offer qop auth: %q", q)
		}
		realm, ok := d["realm"]
		if !ok {
			realm = c.serverName
		}
		var raw [24]byte
		if _, err := io.ReadFull(c.rand, raw[:]); err != nil {
			return nil, fmt.Errorf("DIGEST-MD5: generate cnonce: %w", err)
		}
		p := params{user: c.user, realm: realm, password: c.password, nonce: nonce,
			cnonce: base64.StdEncoding.EncodeToString(raw[:]), nc: "00000001", qop: "auth",
			uri: c.protocol + "/" + c.serverName}
		c.rspauth = p.response("")
		c.step = 1
		return []byte("charset=utf-8,username=" + quote(c.user) + ",realm=" + quote(realm) +
			",nonce=" + quote(nonce) + ",nc=00000001,cnonce=" + quote(p.cnonce) +
			",digest-uri=" + quote(p.uri) + ",maxbuf=65536,response=" + p.response("AUTHENTICATE") +
			",qop=auth"), nil
	case 1:
		got := d["rspauth"]
		if subtle.ConstantTimeCompare([]byte(got), []byte(c.rspauth)) != 1 {
			return nil, errors.New("DIGEST-MD5: server's rspauth does not match: the server does not know the password")
		}
		c.step = 2
		return nil, nil
	default:
		return nil, errors.New("DIGEST-MD5: authentication already completed")
	}
}
