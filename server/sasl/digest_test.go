package sasl

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestResponseVectors checks response-value and rspauth against RFC 2831's
// example (section 4) and against exchanges captured between Kazoo
// (puresasl) and ZooKeeper 3.8, which accepted the first and refused the
// second.
func TestResponseVectors(t *testing.T) {
	tests := []struct {
		name          string
		p             params
		response, rsp string
	}{
		{
			name: "RFC 2831 section 4",
			p: params{user: "chris", realm: "elwood.innosoft.com", password: "secret", nonce: "OA6MG9tEQGm2hh",
				cnonce: "OA6MHXh6VqTrRk", nc: "00000001", qop: "auth", uri: "imap/elwood.innosoft.com"},
			response: "d388dad90d4bbd760a152321f2143af7",
			rsp:      "ea40f60335c427b5527b84dbabcdfffd",
		},
		{
			name: "kazoo to zookeeper 3.8, accepted",
			p: params{user: "bob", realm: Realm, password: "bobsecret", nonce: "H4EdBkJ8UB/NGitJXASZEK47za/du+HP3h4zfr4f",
				cnonce: "5290711368247566", nc: "00000001", qop: "auth", uri: "zookeeper/zk-sasl-md5"},
			response: "2b5e1f17c1cfbd87c5a4af59f54324d4",
		},
		{
			name: "kazoo to zookeeper 3.8 with password wrong, refused",
			p: params{user: "bob", realm: Realm, password: "wrong", nonce: "4uVGRvi/BublHpScFSNwo69Z10r5heaYuQYAtqJR",
				cnonce: "8434758850346724", nc: "00000001", qop: "auth", uri: "zookeeper/zk-sasl-md5"},
			response: "e1fcc60af00c0e360c44051c38dedd20",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.response("AUTHENTICATE"); got != tt.response {
				t.Errorf("response = %s, want %s", got, tt.response)
			}
			if tt.rsp != "" {
				if got := tt.p.response(""); got != tt.rsp {
					t.Errorf("rspauth = %s, want %s", got, tt.rsp)
				}
			}
		})
	}
}

// fixedRand yields the same byte forever, so nonces are predictable.
type fixedRand byte

func (f fixedRand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(f)
	}
	return len(p), nil
}

var testUsers = Users{Passwords: map[string]string{"bob": "bobsecret", "zoë": "pässword"}, SuperPassword: "supersecret"}

// TestExchange runs Client against Server, as ZooKeeper's client and
// server do, for users that exist and with wrong passwords.
func TestExchange(t *testing.T) {
	tests := []struct {
		user, password string
		ok             bool
		err            string
	}{
		{"bob", "bobsecret", true, ""},
		{"zoë", "pässword", true, ""},
		{"super", "supersecret", true, ""},
		{"bob", "wrong", false, "Mismatched response"},
		{"alice", "x", false, "cannot acquire password for alice"},
		{"", "", false, "cannot acquire password"},
	}
	for _, tt := range tests {
		t.Run(tt.user+"/"+tt.password, func(t *testing.T) {
			srv := NewServer(testUsers, fixedRand(7))
			cl := NewClient(tt.user, tt.password, fixedRand(9))
			challenge, err := srv.Evaluate(cl.First())
			if err != nil {
				t.Fatalf("first step: %v", err)
			}
			if !bytes.HasPrefix(challenge, []byte(`realm="zk-sasl-md5",nonce="`)) || !bytes.HasSuffix(challenge, []byte(`",charset=utf-8,algorithm=md5-sess`)) {
				t.Fatalf("challenge %q is not ZooKeeper's", challenge)
			}
			resp, err := cl.Evaluate(challenge)
			if err != nil {
				t.Fatalf("client response: %v", err)
			}
			rsp, err := srv.Evaluate(resp)
			if !tt.ok {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("server accepted or failed wrongly: %v, want %q", err, tt.err)
				}
				if srv.Complete() {
					t.Fatal("server complete after a failure")
				}
				if _, err := srv.Evaluate(resp); err == nil {
					t.Fatal("a failed exchange accepted another token")
				}
				return
			}
			if err != nil {
				t.Fatalf("server refused: %v", err)
			}
			if last, err := cl.Evaluate(rsp); err != nil || last != nil {
				t.Fatalf("client refused rspauth %q: %v", rsp, err)
			}
			id, err := srv.AuthorizationID()
			if !srv.Complete() || !cl.Complete() || err != nil || id != tt.user {
				t.Fatalf("complete %v/%v, id %q %v", srv.Complete(), cl.Complete(), id, err)
			}
			if _, err := srv.Evaluate(nil); err == nil {
				t.Fatal("a token after completion was accepted")
			}
		})
	}
}

// TestServerRejects covers digest-responses that must fail, each with the
// reason in the error.
func TestServerRejects(t *testing.T) {
	srvNonce := strings.Repeat("BwcH", 10) // base64 of 30 bytes of 7
	valid := params{user: "bob", realm: Realm, password: "bobsecret", nonce: srvNonce, cnonce: "abc", nc: "00000001", qop: "auth", uri: "zookeeper/zk-sasl-md5"}
	good := `username="bob",realm="zk-sasl-md5",nonce="` + srvNonce + `",cnonce="abc",nc=00000001,qop=auth,digest-uri="zookeeper/zk-sasl-md5",response=` + valid.response("AUTHENTICATE")
	tests := []struct {
		name, token, err string
	}{
		{"valid", good, ""},
		{"valid with spaces and empty elements", " ,, " + strings.ReplaceAll(good, ",", " ,\t") + " , ", ""},
		{"charset", good + ",charset=latin1", "Incompatible charset"},
		{"no username", strings.Replace(good, `username="bob",`, "", 1), "Missing username"},
		{"realm", strings.Replace(good, `realm="zk-sasl-md5"`, `realm="other"`, 1), "Nonexistent realm"},
		{"nonce", strings.Replace(good, srvNonce, "x", 1), "Mismatched nonce"},
		{"no cnonce", strings.Replace(good, `cnonce="abc",`, "", 1), "Missing cnonce"},
		{"nc", strings.Replace(good, "nc=00000001", "nc=00000002", 1), "Nonce count"},
		{"qop", strings.Replace(good, "qop=auth", "qop=auth-conf", 1), "Invalid QOP"},
		{"uri", strings.Replace(good, "zookeeper/zk-sasl-md5", "imap/zk-sasl-md5", 1), "Mismatched URI"},
		{"no uri", strings.Replace(good, `digest-uri="zookeeper/zk-sasl-md5",`, "", 1), "Missing digest-uri"},
		{"no response", good[:strings.LastIndex(good, ",")], "Missing response"},
		{"duplicate", good + `,username="eve"`, "more than one username"},
		{"unterminated", `username="bob`, "unterminated"},
		{"no value", `username`, "no value"},
		{"garbage", "\x00\x01\x02", "directive name expected"},
		{"not utf-8", "username=\xff", "not UTF-8"},
		{"oversize", "username=" + strings.Repeat("a", maxResponse), "length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(testUsers, fixedRand(7))
			if _, err := srv.Evaluate(nil); err != nil {
				t.Fatal(err)
			}
			_, err := srv.Evaluate([]byte(tt.token))
			if tt.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "DIGEST-MD5: ") {
				t.Fatalf("err = %v, want one containing %q", err, tt.err)
			}
		})
	}
}

// TestInitialResponse: a first token that is not empty is ignored, as by
// Java's DigestMD5Server (checked against ZooKeeper 3.8), unless it is
// longer than any valid response.
func TestInitialResponse(t *testing.T) {
	srv := NewServer(testUsers, nil)
	if c, err := srv.Evaluate([]byte("username=bob")); err != nil || !bytes.HasPrefix(c, []byte("realm=")) {
		t.Fatalf("initial response: %q, %v; want the challenge", c, err)
	}
	srv = NewServer(testUsers, nil)
	if _, err := srv.Evaluate(make([]byte, maxResponse+1)); err == nil {
		t.Fatal("oversize initial response accepted")
	}
}

// FuzzServer feeds arbitrary second tokens to a server: it must never
// panic nor complete without the password.
func FuzzServer(f *testing.F) {
	srvNonce := strings.Repeat("BwcH", 10)
	f.Add([]byte(`username="bob",realm="zk-sasl-md5",nonce="` + srvNonce + `",cnonce="abc",nc=00000001,qop=auth,digest-uri="zookeeper/zk-sasl-md5",response=0123`))
	f.Add([]byte(`a="\"\\",b=c,,`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, token []byte) {
		srv := NewServer(testUsers, fixedRand(7))
		if _, err := srv.Evaluate(nil); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Evaluate(token); err == nil {
			t.Fatalf("token %q authenticated", token)
		}
	})
}

// FuzzDirectives: the parser never panics, and what it accepts survives a
// round trip through quote.
func FuzzDirectives(f *testing.F) {
	f.Add([]byte(`realm="zk-sasl-md5",nonce="x",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(`a = "b\"c" , d=e`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseDirectives(b)
		if err != nil {
			return
		}
		var parts []string
		for k, v := range d {
			parts = append(parts, k+"="+quote(v))
		}
		again, err := parseDirectives([]byte(strings.Join(parts, ",")))
		if err != nil || len(again) != len(d) {
			t.Fatalf("round trip of %q: %v %v", b, again, err)
		}
		for k, v := range d {
			if again[k] != v {
				t.Fatalf("round trip of %q: %s=%q, want %q", b, k, again[k], v)
			}
		}
	})
}

// TestQuorumDigest: the quorum client and server (digest-uri
// zookeeper-quorum/zk-quorum-sasl-md5) authenticate each other, and
// neither is taken for its client-port counterpart.
func TestQuorumDigest(t *testing.T) {
	users := Users{Passwords: map[string]string{"learner": "quorum-secret"}}
	exchange := func(c *Client, s *Server) error {
		ch, err := s.Evaluate(c.First())
		if err != nil {
			return err
		}
		rsp, err := c.Evaluate(ch)
		if err != nil {
			return err
		}
		auth, err := s.Evaluate(rsp)
		if err != nil {
			return err
		}
		if _, err := c.Evaluate(auth); err != nil {
			return err
		}
		if !c.Complete() || !s.Complete() {
			return errors.New("not complete")
		}
		return nil
	}
	tests := []struct {
		name    string
		c       *Client
		s       *Server
		wantErr string
	}{
		{"quorum", NewQuorumClient("learner", "quorum-secret", nil), NewQuorumServer(users, nil), ""},
		{"wrong password", NewQuorumClient("learner", "other", nil), NewQuorumServer(users, nil), "Mismatched response"},
		{"client-port client", NewClient("learner", "quorum-secret", nil), NewQuorumServer(users, nil), "Mismatched URI"},
		{"client-port server", NewQuorumClient("learner", "quorum-secret", nil), NewServer(users, nil), "Mismatched URI"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := exchange(tc.c, tc.s)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
