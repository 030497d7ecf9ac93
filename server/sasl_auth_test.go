package server

import (
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/sasl"
)

var saslUsers = &sasl.Users{Passwords: map[string]string{"bob": "bobsecret", "root": "rootpw"}}

// saslExchange authenticates c as user by DIGEST-MD5 and returns the reply
// header of the last step and the client's verdict on the server's tokens.
func saslExchange(t *testing.T, c *rawClient, user, password string) (jute.ReplyHeader, error) {
	t.Helper()
	cl := sasl.NewClient(user, password, nil)
	token := cl.First()
	for xid := int32(1); ; xid++ {
		var resp jute.SetSASLResponse
		h := c.call(xid, jute.OpSASL, &jute.GetSASLRequest{Token: token}, &resp)
		if h.Err != 0 {
			return h, nil
		}
		var err error
		if token, err = cl.Evaluate(resp.Token); err != nil || cl.Complete() {
			return h, err
		}
	}
}

func TestSASL(t *testing.T) {
	tests := []struct {
		name      string
		cfg       SASLConfig
		user, pw  string
		code      jute.Code
		closed    bool
		wantIDs   []jute.Id // must be among whoAmI's
		notSuper  bool
		noToken   bool // the server answers OK with no token: the client fails
		enforceOp bool // a getData before SASL is refused with -124
	}{
		{name: "user", cfg: SASLConfig{Users: saslUsers}, user: "bob", pw: "bobsecret",
			wantIDs: []jute.Id{{Scheme: "sasl", Id: "bob"}}, notSuper: true},
		{name: "super user", cfg: SASLConfig{Users: saslUsers, SuperUser: "root"}, user: "root", pw: "rootpw",
			wantIDs: []jute.Id{{Scheme: "sasl", Id: "root"}, {Scheme: "super", Id: ""}}},
		{name: "wrong password", cfg: SASLConfig{Users: saslUsers}, user: "bob", pw: "x", code: jute.CodeAuthFailed, closed: true},
		{name: "wrong password, failed clients allowed", cfg: SASLConfig{Users: saslUsers, AllowFailedClients: true}, user: "bob", pw: "x",
			noToken: true, notSuper: true},
		{name: "wrong password, SASL required", cfg: SASLConfig{Users: saslUsers, AllowFailedClients: true, EnforceAuthSchemes: []string{"sasl"}},
			user: "bob", pw: "x", code: jute.CodeSessionClosedRequireSASL, closed: true, enforceOp: true},
		{name: "not configured", cfg: SASLConfig{}, user: "bob", pw: "bobsecret", code: jute.CodeAuthFailed, closed: true},
		{name: "not configured, failed clients allowed", cfg: SASLConfig{AllowFailedClients: true}, user: "bob", pw: "bobsecret", code: jute.CodeAuthFailed, closed: true},
		{name: "enforced then authenticated", cfg: SASLConfig{Users: saslUsers, EnforceAuthSchemes: []string{"digest", "sasl"}}, user: "bob", pw: "bobsecret",
			wantIDs: []jute.Id{{Scheme: "sasl", Id: "bob"}}, notSuper: true, enforceOp: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, func(c *Config) { c.SASL = tt.cfg })
			if tt.enforceOp {
				c := dialRaw(t, ts.addr)
				c.session()
				h := c.call(5, jute.OpPing, nil, nil)
				if want := (jute.ReplyHeader{Xid: 5, Err: jute.CodeSessionClosedRequireSASL}); h != want {
					t.Fatalf("ping before auth: %+v, want %+v", h, want)
				}
				c.expectClosed()
			}
			c := dialRaw(t, ts.addr)
			c.session()
			h, clientErr := saslExchange(t, c, tt.user, tt.pw)
			if h.Err != tt.code || (clientErr != nil) != tt.noToken {
				t.Fatalf("exchange ended with %v, client %v; want %v, client failing %v", h.Err, clientErr, tt.code, tt.noToken)
			}
			if tt.closed {
				c.expectClosed()
				return
			}
			var who jute.WhoAmIResponse
			if h := c.call(50, jute.OpWhoAmI, nil, &who); h.Err != 0 {
				t.Fatalf("whoAmI: %v", h.Err)
			}
			for _, id := range tt.wantIDs {
				if !slices.Contains(who.ClientInfo, jute.ClientInfo{AuthScheme: id.Scheme, User: id.Id}) {
					t.Errorf("whoAmI %+v lacks %+v", who.ClientInfo, id)
				}
			}
			has := func(scheme string) bool {
				return slices.ContainsFunc(who.ClientInfo, func(ci jute.ClientInfo) bool { return ci.AuthScheme == scheme })
			}
			if tt.notSuper && has("super") {
				t.Errorf("whoAmI %+v holds super", who.ClientInfo)
			}
			if tt.noToken && has("sasl") {
				t.Errorf("whoAmI %+v holds sasl after a failed exchange", who.ClientInfo)
			}
		})
	}
}

// TestSASLMalformedRequest: a sasl body that does not decode closes the
// connection without a reply, as ZooKeeper's failed deserialization does.
func TestSASLMalformedRequest(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.SASL.Users = saslUsers })
	for _, body := range []jute.Record{nil, &jute.GetSASLRequest{Token: nil}} {
		c := dialRaw(t, ts.addr)
		c.session()
		c.send(1, jute.OpSASL, body)
		c.expectClosed()
	}
}

// FuzzSASLToken sends an arbitrary second token. Whatever it is, the
// exchange fails (it cannot know the password), the connection closes
// after AuthFailed, and the server keeps serving.
func FuzzSASLToken(f *testing.F) {
	f.Add([]byte(`username="bob",realm="zk-sasl-md5",nonce="x",cnonce="y",nc=00000001,qop=auth,digest-uri="zookeeper/zk-sasl-md5",response=00`))
	f.Add([]byte{})
	f.Add([]byte("\xff\"="))
	ts := startServer(f, func(c *Config) { c.SASL.Users = saslUsers })
	f.Fuzz(func(t *testing.T, token []byte) {
		c := dialRaw(t, ts.addr)
		c.session()
		if h := c.call(1, jute.OpSASL, &jute.GetSASLRequest{Token: []byte{}}, nil); h.Err != 0 {
			t.Fatalf("challenge: %v", h.Err)
		}
		if h := c.call(2, jute.OpSASL, &jute.GetSASLRequest{Token: token}, nil); h.Err != jute.CodeAuthFailed {
			t.Fatalf("token %q: %v, want AuthFailed", token, h.Err)
		}
		c.expectClosed()
		other := dialRaw(t, ts.addr)
		other.session()
		if h := other.call(1, jute.OpExists, &jute.ExistsRequest{Path: "/"}, nil); h.Err != 0 {
			t.Fatalf("another client not served: %v", h.Err)
		}
		other.nc.Close()
	})
}
