package sasl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/sasl"
)

const jaasText = `/* the JAAS file of ZooKeeper's SASL guide, with comments */
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="adminsecret"   // matches every sasl ACL entry
    user_root="rootsecret"     // zookeeper.superUser in some tests
    user_bob="bobsecret";
};
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="bob" password="bobsecret";
};
`

// start runs a server of kind with a JAAS file holding jaas (none when
// empty) given through the JVM flags, and extra zoo.cfg lines.
func start(t testing.TB, kind zkproc.Kind, jaas string, jvm []string, cfg map[string]string) *zkproc.Server {
	t.Helper()
	if jaas != "" {
		path := filepath.Join(t.TempDir(), "jaas.conf")
		if err := os.WriteFile(path, []byte(jaas), 0o600); err != nil {
			t.Fatal(err)
		}
		jvm = append([]string{"-Djava.security.auth.login.config=" + path}, jvm...)
	}
	opts := zkproc.Options{ExtraCfg: cfg}
	if kind == zkproc.KindZkd {
		opts.Env = []string{"SERVER_JVMFLAGS=" + strings.Join(jvm, " ")}
		return zkproc.StartZkd(t, opts)
	}
	opts.JVMFlags = jvm
	return zkproc.StartZooKeeper(t, opts)
}

func dial(t *testing.T, addr string) *zkwire.Client {
	t.Helper()
	c, err := zkwire.Dial(addr, zkwire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Abandon)
	return c
}

// authenticate runs a DIGEST-MD5 exchange on c, as the Java client does.
func authenticate(c *zkwire.Client, user, password string) error {
	cl := sasl.NewClient(user, password, nil)
	token := cl.First()
	for !cl.Complete() {
		var resp jute.SetSASLResponse
		if _, err := c.Call(jute.OpSASL, &jute.GetSASLRequest{Token: token}, &resp); err != nil {
			return err
		}
		var err error
		if token, err = cl.Evaluate(resp.Token); err != nil {
			return err
		}
	}
	return nil
}

// closed waits until the server closed c's connection.
func closed(t *testing.T, c *zkwire.Client) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("connection still open 20s after a refused request")
	}
}

var kinds = []zkproc.Kind{zkproc.KindZkd, zkproc.KindZooKeeper}

func saslACL(user string) []jute.ACL {
	return []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "sasl", Id: user}}}
}

// TestIntegration_SASLDigest: users of the JAAS Server section
// authenticate, get a sasl identity that ACLs and whoAmI see, the SASL
// user "super" matches every sasl ACL, zookeeper.superUser passes every
// ACL, and wrong passwords and
// garbage tokens end in AuthFailed and a closed connection while the
// server goes on serving.
func TestIntegration_SASLDigest(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			s := start(t, kind, jaasText, []string{"-Dzookeeper.superUser=root"},
				map[string]string{"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"})

			bob := dial(t, s.Addr)
			if err := authenticate(bob, "bob", "bobsecret"); err != nil {
				t.Fatalf("bob: %v", err)
			}
			var who jute.WhoAmIResponse
			if _, err := bob.Call(jute.OpWhoAmI, nil, &who); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(who.ClientInfo, jute.ClientInfo{AuthScheme: "sasl", User: "bob"}) {
				t.Fatalf("whoAmI = %+v, want sasl bob among them", who.ClientInfo)
			}
			if _, err := bob.Call(jute.OpCreate, &jute.CreateRequest{Path: "/bob", Data: []byte("b"), Acl: saslACL("bob")}, nil); err != nil {
				t.Fatalf("create with sasl ACL: %v", err)
			}
			if _, err := bob.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/bob"}, nil); err != nil {
				t.Fatalf("bob reads his node: %v", err)
			}
			if _, err := bob.Call(jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
				{Type: jute.OpSetData, Req: &jute.SetDataRequest{Path: "/bob", Data: []byte("c"), Version: -1}},
			}}, nil); err != nil {
				t.Fatalf("bob's multi: %v", err)
			}

			anon := dial(t, s.Addr)
			if _, err := anon.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/bob"}, nil); !errors.Is(err, jute.CodeNoAuth) {
				t.Fatalf("unauthenticated read: %v, want NoAuth", err)
			}
			if _, err := anon.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/bob", Version: -1}, nil); !errors.Is(err, jute.CodeNoAuth) {
				t.Fatalf("unauthenticated write: %v, want NoAuth", err)
			}

			// A node only a digest identity may read: the SASL user
			// "super" matches sasl entries only, the zookeeper.superUser
			// passes every ACL.
			digestOnly := []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "digest", Id: "nobody:AAAAAAAAAAAAAAAAAAAAAAAAAAA="}}}
			if _, err := bob.Call(jute.OpCreate, &jute.CreateRequest{Path: "/locked", Data: []byte("l"), Acl: digestOnly}, nil); err != nil {
				t.Fatal(err)
			}
			super := dial(t, s.Addr)
			if err := authenticate(super, "super", "adminsecret"); err != nil {
				t.Fatalf("super: %v", err)
			}
			if _, err := super.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/bob"}, nil); err != nil {
				t.Fatalf("SASL user super reads a sasl:bob node: %v", err)
			}
			if _, err := super.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/locked"}, nil); !errors.Is(err, jute.CodeNoAuth) {
				t.Fatalf("SASL user super reads a digest node: %v, want NoAuth", err)
			}
			root := dial(t, s.Addr)
			if err := authenticate(root, "root", "rootsecret"); err != nil {
				t.Fatalf("root: %v", err)
			}
			if _, err := root.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/locked"}, nil); err != nil {
				t.Fatalf("zookeeper.superUser reads a digest node: %v", err)
			}

			bad := []struct {
				name string
				run  func(c *zkwire.Client) error
			}{
				{"wrong password", func(c *zkwire.Client) error { return authenticate(c, "bob", "wrong") }},
				{"unknown user", func(c *zkwire.Client) error { return authenticate(c, "eve", "x") }},
				{"initial response ignored, then an empty response", func(c *zkwire.Client) error {
					var resp jute.SetSASLResponse
					if _, err := c.Call(jute.OpSASL, &jute.GetSASLRequest{Token: []byte("username=bob")}, &resp); err != nil {
						return err
					}
					if !strings.HasPrefix(string(resp.Token), `realm="zk-sasl-md5",nonce="`) {
						return fmt.Errorf("challenge %q", resp.Token)
					}
					_, err := c.Call(jute.OpSASL, &jute.GetSASLRequest{Token: []byte{}}, nil)
					return err
				}},
				{"garbage response", func(c *zkwire.Client) error {
					if _, err := c.Call(jute.OpSASL, &jute.GetSASLRequest{Token: []byte{}}, nil); err != nil {
						return err
					}
					_, err := c.Call(jute.OpSASL, &jute.GetSASLRequest{Token: []byte("\x00\xff=\"")}, nil)
					return err
				}},
				{"oversize response", func(c *zkwire.Client) error {
					if _, err := c.Call(jute.OpSASL, &jute.GetSASLRequest{Token: []byte{}}, nil); err != nil {
						return err
					}
					_, err := c.Call(jute.OpSASL, &jute.GetSASLRequest{Token: []byte("username=" + strings.Repeat("b", 5000))}, nil)
					return err
				}},
			}
			for _, b := range bad {
				t.Run(b.name, func(t *testing.T) {
					c := dial(t, s.Addr)
					if err := b.run(c); !errors.Is(err, jute.CodeAuthFailed) {
						t.Fatalf("err = %v, want AuthFailed", err)
					}
					closed(t, c)
					if _, err := bob.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, nil); err != nil {
						t.Fatalf("another client is no longer served: %v", err)
					}
				})
			}
		})
	}
}

// TestIntegration_SASLEnforce: with enforce.auth (or the older
// sessionRequireClientSASLAuth) a request before SASL authentication is
// answered SessionClosedRequireSASL and the connection closes; after it,
// requests pass. A failed exchange is answered SessionClosedRequireSASL too.
func TestIntegration_SASLEnforce(t *testing.T) {
	configs := map[string]map[string]string{
		"enforce.auth": {
			"authProvider.1":       "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
			"enforce.auth.enabled": "true",
			"enforce.auth.schemes": "sasl",
		},
		"sessionRequireClientSASLAuth": {
			// Without the provider both ZooKeeper and zkd refuse to start.
			"authProvider.1":               "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
			"sessionRequireClientSASLAuth": "true",
		},
	}
	for _, kind := range kinds {
		for name, cfg := range configs {
			t.Run(string(kind)+"/"+name, func(t *testing.T) {
				s := start(t, kind, jaasText, nil, cfg)
				anon := dial(t, s.Addr)
				if _, err := anon.Call(jute.OpGetChildren, &jute.GetChildrenRequest{Path: "/"}, nil); !errors.Is(err, jute.CodeSessionClosedRequireSASL) {
					t.Fatalf("unauthenticated getChildren: %v, want SessionClosedRequireSASL", err)
				}
				closed(t, anon)

				wrong := dial(t, s.Addr)
				if err := authenticate(wrong, "bob", "nope"); !errors.Is(err, jute.CodeSessionClosedRequireSASL) {
					t.Fatalf("wrong password: %v, want SessionClosedRequireSASL", err)
				}
				closed(t, wrong)

				bob := dial(t, s.Addr)
				if err := authenticate(bob, "bob", "bobsecret"); err != nil {
					t.Fatal(err)
				}
				if _, err := bob.Call(jute.OpGetChildren, &jute.GetChildrenRequest{Path: "/"}, nil); err != nil {
					t.Fatalf("authenticated getChildren: %v", err)
				}
			})
		}
	}
}

// TestIntegration_SASLNotConfigured: without a JAAS file ZooKeeper 3.8
// answers a sasl request OK with no token (Kazoo then resends it forever);
// zkd answers AuthFailed and closes, so every client stops.
func TestIntegration_SASLNotConfigured(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			s := start(t, kind, "", nil, nil)
			c := dial(t, s.Addr)
			var resp jute.SetSASLResponse
			_, err := c.Call(jute.OpSASL, &jute.GetSASLRequest{Token: []byte{}}, &resp)
			if kind == zkproc.KindZooKeeper {
				if err != nil || resp.Token != nil {
					t.Fatalf("ZooKeeper: err %v, token %q; want OK and a null token", err, resp.Token)
				}
				return
			}
			if !errors.Is(err, jute.CodeAuthFailed) {
				t.Fatalf("zkd: %v, want AuthFailed", err)
			}
			closed(t, c)
		})
	}
}

// TestIntegration_SASLEnsemble: on a 3-member zkd ensemble a client
// authenticated on one member writes a node only sasl:bob may read; its
// write is forwarded to the leader with the sasl identity, and the node is
// readable by bob, and by no one else, on every member.
func TestIntegration_SASLEnsemble(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(path, []byte(jaasText), 0o600); err != nil {
		t.Fatal(err)
	}
	members := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{
		Env:      []string{"SERVER_JVMFLAGS=-Djava.security.auth.login.config=" + path},
		ExtraCfg: map[string]string{"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
	})
	writer := dial(t, members[0].Addr)
	if err := authenticate(writer, "bob", "bobsecret"); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Call(jute.OpCreate, &jute.CreateRequest{Path: "/e", Data: []byte("e"), Acl: saslACL("bob")}, nil); err != nil {
		t.Fatalf("create through member 1: %v", err)
	}
	for i, m := range members {
		bob := dial(t, m.Addr)
		if err := authenticate(bob, "bob", "bobsecret"); err != nil {
			t.Fatalf("member %d: %v", i+1, err)
		}
		if _, err := bob.Call(jute.OpSync, &jute.SyncRequest{Path: "/e"}, nil); err != nil {
			t.Fatalf("member %d sync: %v", i+1, err)
		}
		if _, err := bob.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/e", Data: []byte("x"), Version: -1}, nil); err != nil {
			t.Fatalf("member %d: bob's write: %v", i+1, err)
		}
		anon := dial(t, m.Addr)
		if _, err := anon.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/e"}, nil); !errors.Is(err, jute.CodeNoAuth) {
			t.Fatalf("member %d: unauthenticated read: %v, want NoAuth", i+1, err)
		}
		if _, err := anon.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/e", Version: -1}, nil); !errors.Is(err, jute.CodeNoAuth) {
			t.Fatalf("member %d: unauthenticated write: %v, want NoAuth", i+1, err)
		}
	}
}
