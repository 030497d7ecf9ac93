package zkfollow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// Quorum SASL, the learner side (ZooKeeper's SaslQuorumAuthLearner): with
// quorum.auth.learnerRequireSasl=true a learner authenticates on the
// leader's quorum port before its first quorum packet. Each message either
// way is a QuorumAuthPacket {long magic; int status; buffer token} with no
// length prefix. The leader peeks at the first 8 bytes to tell an auth
// packet from a learner's first quorum packet.

// quorumAuthMagic is QuorumAuth.QUORUM_AUTH_MAGIC_NUMBER, written in Java
// as -0xa0dbcafecafe1234L: the hex literal is already a negative long, so
// its negation is this positive value.
const quorumAuthMagic int64 = 0x5f2435013501edcc

// Status values of a QuorumAuthPacket (QuorumAuth.Status).
const (
	authInProgress int32 = 0
	authSuccess    int32 = 1
	authError      int32 = -1
)

// maxAuthToken bounds a token read from the leader: a DIGEST-MD5
// challenge is a few hundred bytes, a Kerberos one a few KiB.
const maxAuthToken = 64 << 10

// SASLClient is the client side of one SASL exchange, such as
// server/sasl's DIGEST-MD5 Client (sasl.NewQuorumClient).
type SASLClient interface {
	// First is the initial response (empty when the mechanism has none).
	First() []byte
	// Evaluate answers a token from the server; nil once nothing more
	// is to be sent.
	Evaluate(challenge []byte) ([]byte, error)
	// Complete reports whether the exchange succeeded on this side too.
	Complete() bool
}

// quorumAuthError is a failed quorum SASL exchange with a leader: wrong
// credentials, or a leader that does not take them.
type quorumAuthError struct {
	addr string
	err  error
}

func (e *quorumAuthError) Error() string {
	return fmt.Sprintf("zkfollow: quorum SASL with %s: %v", e.addr, e.err)
}

func (e *quorumAuthError) Unwrap() error { return e.err }

// authenticate runs the exchange on conn as SaslQuorumAuthLearner does:
// send the initial response, then answer IN_PROGRESS tokens until the
// leader says SUCCESS (whose token the client checks) or ERROR.
func authenticate(conn net.Conn, addr string, sc SASLClient) error {
	fail := func(err error) error { return &quorumAuthError{addr: addr, err: err} }
	if err := writeAuthPacket(conn, authInProgress, sc.First()); err != nil {
		return fail(err)
	}
	for !sc.Complete() {
		status, token, err := readAuthPacket(conn)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w (the leader closed the connection: it may have quorum.auth.enableSasl=false, or turned the credentials down)", err)
			}
			return fail(err)
		}
		switch status {
		case authError:
			return fail(errors.New("the leader refused the credentials (status ERROR): check the QuorumLearner section of the JAAS file against the leader's QuorumServer section"))
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
				return fail(errors.New("the leader reported success before the exchange ended"))
			}
			return nil
		}
		if err := writeAuthPacket(conn, authInProgress, resp); err != nil {
			return fail(err)
		}
	}
	return fail(errors.New("the exchange ended on this side before the leader reported success"))
}

// writeAuthPacket writes one QuorumAuthPacket.
func writeAuthPacket(w io.Writer, status int32, token []byte) error {
	b := make([]byte, 16, 16+len(token))
	binary.BigEndian.PutUint64(b[0:], uint64(quorumAuthMagic))
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
	var h [16]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	if magic := int64(binary.BigEndian.Uint64(h[0:])); magic != quorumAuthMagic {
		return 0, nil, fmt.Errorf("not a quorum auth packet (magic %#x)", uint64(magic))
	}
	status = int32(binary.BigEndian.Uint32(h[8:]))
	n := int32(binary.BigEndian.Uint32(h[12:]))
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
