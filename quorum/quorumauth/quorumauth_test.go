package quorumauth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
)

// scriptedClient is a SASL client that answers "response" to the first
// challenge and completes on the token "rspauth".
type scriptedClient struct{ step int }

func (c *scriptedClient) First() []byte  { return []byte{} }
func (c *scriptedClient) Complete() bool { return c.step == 2 }
func (c *scriptedClient) Evaluate(tok []byte) ([]byte, error) {
	switch {
	case c.step == 0 && string(tok) == "challenge":
		c.step = 1
		return []byte("response"), nil
	case c.step == 1 && string(tok) == "rspauth":
		c.step = 2
		return nil, nil
	}
	return nil, errors.New("unexpected token " + string(tok))
}

// TestAuthenticate drives the learner side of quorum SASL against a
// scripted leader, as SaslQuorumAuthServer answers: IN_PROGRESS with a
// challenge, then SUCCESS or ERROR; and against leaders that break the
// protocol.
func TestAuthenticate(t *testing.T) {
	tests := []struct {
		name    string
		leader  func(t *testing.T, c net.Conn)
		wantErr string // "" for success
	}{
		{"success", func(t *testing.T, c net.Conn) {
			expectAuth(t, c, "")
			writeAuthPacket(c, authInProgress, []byte("challenge"))
			expectAuth(t, c, "response")
			writeAuthPacket(c, authSuccess, []byte("rspauth"))
		}, ""},
		{"refused", func(t *testing.T, c net.Conn) {
			expectAuth(t, c, "")
			writeAuthPacket(c, authInProgress, []byte("challenge"))
			expectAuth(t, c, "response")
			writeAuthPacket(c, authError, []byte{})
		}, "refused the credentials"},
		{"leader closes", func(t *testing.T, c net.Conn) {
			expectAuth(t, c, "")
			c.Close()
		}, "closed the connection"},
		{"success too early", func(t *testing.T, c net.Conn) {
			expectAuth(t, c, "")
			writeAuthPacket(c, authSuccess, []byte("challenge"))
		}, "before the exchange ended"},
		{"not an auth packet", func(t *testing.T, c net.Conn) {
			expectAuth(t, c, "")
			c.Write(bytes.Repeat([]byte{0}, 16))
		}, "not a quorum auth packet"},
		{"oversize token", func(t *testing.T, c net.Conn) {
			expectAuth(t, c, "")
			c.Write([]byte{0x5f, 0x24, 0x35, 0x01, 0x35, 0x01, 0xed, 0xcc, 0, 0, 0, 0, 0x7f, 0, 0, 0})
		}, "more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			learner, leader := net.Pipe()
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer leader.Close()
				tc.leader(t, leader)
			}()
			err := Learn(learner, "leader:2888", &scriptedClient{})
			learner.Close()
			<-done
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("authenticate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("authenticate: %v, want an error containing %q", err, tc.wantErr)
			case err != nil && !strings.Contains(err.Error(), "leader:2888"):
				t.Errorf("error %q does not name the leader", err)
			}
		})
	}
}

// expectAuth reads one auth packet from the learner and checks it is an
// IN_PROGRESS one carrying want.
func expectAuth(t *testing.T, c net.Conn, want string) {
	status, tok, err := readAuthPacket(c)
	if err != nil || status != authInProgress || string(tok) != want {
		t.Errorf("learner sent status %d token %q (%v), want IN_PROGRESS %q", status, tok, err, want)
	}
}

// scriptedServer is a SASL server that challenges once and accepts the
// token want.
type scriptedServer struct {
	want string
	step int
}

func (s *scriptedServer) Evaluate(tok []byte) ([]byte, error) {
	switch {
	case s.step == 0:
		s.step = 1
		return []byte("challenge"), nil
	case s.step == 1 && string(tok) == s.want:
		s.step = 2
		return []byte("rspauth"), nil
	}
	return nil, errors.New("bad response " + string(tok))
}
func (s *scriptedServer) Complete() bool { return s.step == 2 }
func (s *scriptedServer) AuthorizationID() (string, error) {
	if s.step != 2 {
		return "", errors.New("not complete")
	}
	return "learner", nil
}

// TestServe runs both sides against each other, as two members do: the
// accepting side reads the magic first (IsAuth), then Serve; a response
// it does not accept fails both sides, the learner with the refusal.
func TestServe(t *testing.T) {
	tests := []struct {
		name     string
		want     string
		learnErr string
		serveErr string
		wantID   string
	}{
		{"accepted", "response", "", "", "learner"},
		{"refused", "something else", "refused the credentials", "bad response", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			learner, server := net.Pipe()
			type result struct {
				id  string
				err error
			}
			served := make(chan result, 1)
			go func() {
				defer server.Close()
				var first [8]byte
				if _, err := io.ReadFull(server, first[:]); err != nil || !IsAuth(first) {
					served <- result{"", fmt.Errorf("first bytes %x: %v", first, err)}
					return
				}
				id, err := Serve(server, "learner:3888", &scriptedServer{want: tc.want})
				served <- result{id, err}
			}()
			lerr := Learn(learner, "server:3888", &scriptedClient{})
			learner.Close()
			r := <-served
			if !matches(lerr, tc.learnErr) {
				t.Errorf("Learn: %v, want %q", lerr, tc.learnErr)
			}
			if !matches(r.err, tc.serveErr) || r.id != tc.wantID {
				t.Errorf("Serve: %q, %v; want %q, %q", r.id, r.err, tc.wantID, tc.serveErr)
			}
		})
	}
}

// matches reports whether err is nil when want is "", or contains want.
func matches(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}
