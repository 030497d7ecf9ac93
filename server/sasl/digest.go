package sasl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// ZooKeeper's fixed DIGEST-MD5 parameters (SecurityUtils, ZooKeeperSaslServer).
const (
	// Protocol is the SASL service name, the serv-type of digest-uri.
	Protocol = "zookeeper"
	// Realm is both the server name in digest-uri and the only realm.
	Realm = "zk-sasl-md5"
	// Mechanism is the only mechanism implemented.
	Mechanism = "DIGEST-MD5"
	// QuorumProtocol and QuorumRealm are digest-uri's parts between
	// ZooKeeper members (QuorumAuth: quorum SASL).
	QuorumProtocol = "zookeeper-quorum"
	QuorumRealm    = "zk-quorum-sasl-md5"
)

// ErrNotComplete is returned by AuthorizationID before the exchange ended.
var ErrNotComplete = errors.New("DIGEST-MD5: authentication not completed")

// Server is one connection's DIGEST-MD5 exchange, server side. It is not
// safe for concurrent use; the connection's reader owns it.
type Server struct {
	users      Users
	protocol   string // digest-uri's serv-type
	serverName string // digest-uri's host and the only realm
	rand       io.Reader
	step       int // 0 before the challenge, 1 after it, 2 when complete, 3 failed
	nonce      string
	authz      string
}

// NewServer starts an exchange that authenticates against users. random
// supplies the nonce; nil means crypto/rand.
func NewServer(users Users, random io.Reader) *Server {
	return newServer(Protocol, Realm, users, random)
}

// NewQuorumServer starts an exchange on a member's quorum port, as
// ZooKeeper's SaslQuorumAuthServer runs it: digest-uri
// zookeeper-quorum/zk-quorum-sasl-md5, realm zk-quorum-sasl-md5.
func NewQuorumServer(users Users, random io.Reader) *Server {
	return newServer(QuorumProtocol, QuorumRealm, users, random)
}

func newServer(protocol, serverName string, users Users, random io.Reader) *Server {
	if random == nil {
		random = rand.Reader
	}
	return &Server{users: users, protocol: protocol, serverName: serverName, rand: random}
}

// Complete reports whether a client has authenticated.
func (s *Server) Complete() bool { return s.step == 2 }

// AuthorizationID is the authenticated name: the username of the digest
// response (ZooKeeper's SaslServerCallbackHandler authorizes a DIGEST-MD5
// user as itself, whatever authzid the client asked for).
func (s *Server) AuthorizationID() (string, error) {
	if s.step != 2 {
		return "", ErrNotComplete
	}
	return s.authz, nil
}

// Evaluate takes the client's token and returns the server's next token:
// the digest-challenge for the first token (empty), rspauth for a valid
// digest-response. An error ends the exchange; so does any token after
// the exchange completed.
func (s *Server) Evaluate(token []byte) ([]byte, error) {
	switch s.step {
	case 0:
		// DIGEST-MD5 has no initial response; Java's server ignores one
		// rather than failing, and so does this one.
		if len(token) > maxResponse {
			s.step = 3
			return nil, fmt.Errorf("DIGEST-MD5: invalid digest response length: got %d, expected < %d", len(token), maxResponse)
		}
		var raw [30]byte
		if _, err := io.ReadFull(s.rand, raw[:]); err != nil {
			s.step = 3
			return nil, fmt.Errorf("DIGEST-MD5: generate nonce: %w", err)
		}
		s.nonce = base64.StdEncoding.EncodeToString(raw[:])
		s.step = 1
		return []byte(`realm="` + s.serverName + `",nonce="` + s.nonce + `",charset=utf-8,algorithm=md5-sess`), nil
	case 1:
		rsp, err := s.validate(token)
		if err != nil {
			s.step = 3
			return nil, err
		}
		s.step = 2
		return rsp, nil
	case 2:
		s.step = 3
		return nil, errors.New("DIGEST-MD5: authentication already completed")
	default:
		return nil, errors.New("DIGEST-MD5: server at illegal state: an earlier step failed")
	}
}

// validate checks a digest-response and returns the response-auth token.
func (s *Server) validate(token []byte) ([]byte, error) {
	if len(token) > maxResponse {
		return nil, fmt.Errorf("DIGEST-MD5: invalid digest response length: got %d, expected < %d", len(token), maxResponse)
	}
	if !utf8.Valid(token) {
		return nil, errors.New("DIGEST-MD5: digest response is not UTF-8")
	}
	d, err := parseDirectives(token)
	if err != nil {
		return nil, err
	}
	violation := func(format string, a ...any) error {
		return fmt.Errorf("DIGEST-MD5: digest response format violation. "+format, a...)
	}
	if cs, ok := d["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return nil, violation("Incompatible charset value: %s", cs)
	}
	user, ok := d["username"]
	if !ok {
		return nil, violation("Missing username.")
	}
	if d["realm"] != s.serverName {
		return nil, violation("Nonexistent realm: %q", d["realm"])
	}
	if d["nonce"] != s.nonce {
		return nil, violation("Mismatched nonce.")
	}
	cnonce, ok := d["cnonce"]
	if !ok || cnonce == "" {
		return nil, violation("Missing cnonce.")
	}
	if nc := d["nc"]; nc != "00000001" {
		return nil, violation("Nonce count does not match: %s", nc)
	}
	qop, ok := d["qop"]
	if !ok {
		qop = "auth"
	}
	if qop != "auth" {
		return nil, violation("Invalid QOP: %s", qop)
	}
	uri, ok := d["digest-uri"]
	if !ok {
		return nil, violation("Missing digest-uri.")
	}
	if !validURI(uri, s.protocol, s.serverName) {
		return nil, violation("Mismatched URI: %s; expected: %s/%s", uri, s.protocol, s.serverName)
	}
	got, ok := d["response"]
	if !ok {
		return nil, violation("Missing response.")
	}
	password, ok := s.users.password(user)
	if !ok {
		return nil, fmt.Errorf("DIGEST-MD5: cannot acquire password for %s in realm : %s", user, s.serverName)
	}
	authzid, hasAuthz := d["authzid"]
	p := params{user: user, realm: s.serverName, password: password, nonce: s.nonce, cnonce: cnonce,
		nc: "00000001", qop: qop, uri: uri, authzid: authzid, hasAuthzid: hasAuthz}
	want := p.response("AUTHENTICATE")
	if subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return nil, violation("Mismatched response.")
	}
	s.authz = user
	return []byte("rspauth=" + p.response("")), nil
}

// validURI reports whether a digest-uri is serv-type "/" host ["/" serv-name]
// with the given protocol and server name (case-insensitive, as Java).
func validURI(uri, protocol, serverName string) bool {
	parts := strings.Split(uri, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	return strings.EqualFold(parts[0], protocol) && strings.EqualFold(parts[1], serverName)
}

// params are the inputs of RFC 2831's response-value.
type params struct {
	user, realm, password string
	nonce, cnonce, nc     string
	qop, uri              string
	authzid               string
	hasAuthzid            bool
}

// response computes RFC 2831 section 2.1.2.1's response-value with A2 =
// method ":" digest-uri: method "AUTHENTICATE" for the client's response,
// "" for the server's rspauth.
func (p params) response(method string) string {
	inner := md5.Sum([]byte(latin1OrUTF8(p.user) + ":" + latin1OrUTF8(p.realm) + ":" + latin1OrUTF8(p.password)))
	a1 := string(inner[:]) + ":" + p.nonce + ":" + p.cnonce
	if p.hasAuthzid {
		a1 += ":" + p.authzid
	}
	ha1 := md5.Sum([]byte(a1))
	ha2 := md5.Sum([]byte(method + ":" + p.uri))
	kd := md5.Sum([]byte(hex.EncodeToString(ha1[:]) + ":" + p.nonce + ":" + p.nc + ":" + p.cnonce + ":" + p.qop + ":" + hex.EncodeToString(ha2[:])))
	return hex.EncodeToString(kd[:])
}

// latin1OrUTF8 encodes s as RFC 2831 asks when charset=utf-8 was
// negotiated: ISO 8859-1 if every character fits, UTF-8 otherwise.
func latin1OrUTF8(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return s
		}
		b = append(b, byte(r))
	}
	return string(b)
}
