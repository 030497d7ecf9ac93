// Package quorumauth is ZooKeeper's quorum SASL exchange (QuorumAuth,
// SaslQuorumAuthLearner, SaslQuorumAuthServer) on a member connection:
// with quorum.auth.enableSasl, the member that dials (the learner) may
// authenticate before its first quorum packet, and the member that
// accepts (the server) checks it, requiring it with
// quorum.auth.serverRequireSasl. zkd members use it on their quorum and
// election ports, and `zkd follow` toward a ZooKeeper leader. The SASL
// mechanism itself (DIGEST-MD5 or GSSAPI) is the caller's, behind Client
// and Server.
package quorumauth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Each message either way is a QuorumAuthPacket {long magic; int status;
// buffer token} with no length prefix. The accepting member peeks at the
// first 8 bytes to tell an auth packet from the first quorum packet.

// Magic is QuorumAuth.QUORUM_AUTH_MAGIC_NUMBER, written in Java as
// -0xa0dbcafecafe1234L: the hex literal is already a negative long, so its
// negation is this positive value.
const Magic int64 = 0x5f2435013501edcc

// IsAuth reports whether the first 8 bytes of a connection begin a
// QuorumAuthPacket.
func IsAuth(first [8]byte) bool { return int64(binary.BigEndian.Uint64(first[:])) == Magic }

// Status values of a QuorumAuthPacket (QuorumAuth.Status).
const (
	authInProgress int32 = 0
	authSuccess    int32 = 1
	authError      int32 = -1
)

// maxAuthToken bounds a token read from the other member: a DIGEST-MD5
// challenge is a few hundred bytes, a Kerberos one a few KiB.
const maxAuthToken = 64 << 10

// Client is the client side of one SASL exchange, such as server/sasl's
// DIGEST-MD5 Client (sasl.NewQuorumClient) or QuorumGSSAPIClient.
type Client interface {
	// First is the initial response (empty when the mechanism has none).
	First() []byte
	// Evaluate answers a token from the server; nil once nothing more
	// is to be sent.
	Evaluate(challenge []byte) ([]byte, error)
	// Complete reports whether the exchange succeeded on this side too.
	Complete() bool
}

// Server is the server side of one SASL exchange, such as server/sasl's
// DIGEST-MD5 Server (sasl.NewQuorumServer) or GSSAPIServer
// (sasl.NewQuorumGSSAPIServer).
type Server interface {
	// Evaluate takes the client's token and returns the next one to send.
	Evaluate(token []byte) ([]byte, error)
	// Complete reports whether the client has authenticated.
	Complete() bool
	// AuthorizationID is the authenticated name once complete.
	AuthorizationID() (string, error)
}

// Error is a failed quorum SASL exchange with the member at Addr: wrong
// credentials, or a member that does not take them.
type Error struct {
	Addr string
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("quorum SASL with %s: %v", e.Addr, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Learn runs the learner side on conn as SaslQuorumAuthLearner does: send
// the initial response, then answer IN_PROGRESS tokens until the member
// at addr says SUCCESS (whose token the client checks) or ERROR.
func Learn(conn io.ReadWriter, addr string, sc Client) error {
	fail := func(err error) error { return &Error{Addr: addr, Err: err} }
	if err := writeAuthPacket(conn, authInProgress, sc.First()); err != nil {
		return fail(err)
	}
	for !sc.Complete() {
		status, token, err := readAuthPacket(conn)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w (the member closed the connection: it may have quorum.auth.enableSasl=false, or turned the credentials down)", err)
			}
			return fail(err)
		}
		switch status {
		case authError:
			return fail(errors.New("the member refused the credentials (status ERROR): check this member's JAAS QuorumLearner section against its QuorumServer section"))
		case authSuccess, authInProgress:
		default:
			return fail(fmt.Errorf("unknown status %d", status))
		}
		resp, err := sc.Evaluate(token)
		if err != nil {
			return fail(err)
		}
		if status == authSuccess {
			if resp != nil || !sc.Complete() {
				return fail(errors.New("the member reported success before the exchange ended"))
			}
			return nil
		}
		if err := writeAuthPacket(conn, authInProgress, resp); err != nil {
			return fail(err)
		}
	}
	return fail(errors.New("the exchange ended on this side before the member reported success"))
}

// maxServerRounds bounds the tokens a server takes before giving up, as
// SaslQuorumAuthServer's MAX_RETRIES.
const maxServerRounds = 5

// Serve runs the server side on conn as SaslQuorumAuthServer does, once
// the first 8 bytes read from conn were the magic (IsAuth): evaluate each
// token, answering IN_PROGRESS with the challenge, until the client has
// authenticated (answered SUCCESS) or failed (answered ERROR). It returns
// the authenticated name.
func Serve(conn io.ReadWriter, addr string, ss Server) (string, error) {
	fail := func(err error) (string, error) {
		writeAuthPacket(conn, authError, []byte{})
		return "", &Error{Addr: addr, Err: err}
	}
	_, token, err := readAfterMagic(conn)
	if err != nil {
		return "", &Error{Addr: addr, Err: err}
	}
	for rounds := 1; ; rounds++ {
		challenge, err := ss.Evaluate(token)
		if err != nil {
			return fail(err)
		}
		if ss.Complete() {
			if err := writeAuthPacket(conn, authSuccess, challenge); err != nil {
				return "", &Error{Addr: addr, Err: err}
			}
			return ss.AuthorizationID()
		}
		if rounds >= maxServerRounds {
			return fail(fmt.Errorf("not authenticated after %d tokens", rounds))
		}
		if err := writeAuthPacket(conn, authInProgress, challenge); err != nil {
			return "", &Error{Addr: addr, Err: err}
		}
		if _, token, err = readAuthPacket(conn); err != nil {
			return "", &Error{Addr: addr, Err: err}
		}
	}
}

// writeAuthPacket writes one QuorumAuthPacket.
func writeAuthPacket(w io.Writer, status int32, token []byte) error {
	b := make([]byte, 16, 16+len(token))
	binary.BigEndian.PutUint64(b[0:], uint64(Magic))
	binary.BigEndian.PutUint32(b[8:], uint32(status))
	n := int32(len(token))
	if token == nil {
		n = -1
	}
	binary.BigEndian.PutUint32(b[12:], uint32(n))
	_, err := w.Write(append(b, token...))
	return err
}

// readAuthPacket reads one QuorumAuthPacket; a null token reads as empty.
func readAuthPacket(r io.Reader) (status int32, token []byte, err error) {
	var m [8]byte
	if _, err := io.ReadFull(r, m[:]); err != nil {
		return 0, nil, err
	}
	if !IsAuth(m) {
		return 0, nil, fmt.Errorf("not a quorum auth packet (magic %#x)", binary.BigEndian.Uint64(m[:]))
	}
	return readAfterMagic(r)
}

// readAfterMagic reads the rest of a QuorumAuthPacket whose magic was
// read.
func readAfterMagic(r io.Reader) (status int32, token []byte, err error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	status = int32(binary.BigEndian.Uint32(h[0:]))
	n := int32(binary.BigEndian.Uint32(h[4:]))
	if n < 0 {
		return status, []byte{}, nil
	}
	if n > maxAuthToken {
		return 0, nil, fmt.Errorf("auth token of %d bytes, more than %d", n, maxAuthToken)
	}
	token = make([]byte, n)
	if _, err := io.ReadFull(r, token); err != nil {
		return 0, nil, err
	}
	return status, token, nil
}
