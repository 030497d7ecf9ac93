package zktls

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestIntegration_X509WithoutProviderLine: with a secure port on Netty, PEM
// stores and no authProvider line, ZooKeeper 3.8 still serves a client
// presenting a CA-signed certificate and gives it the x509 id of its
// subject (QuorumPeerConfig.configureSSLAuth sets authProvider.x509 when
// a secureClientPort is given); zkd must do the same rather than close the
// connection.
func TestIntegration_X509WithoutProviderLine(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			p := newPKI(t)
			cfg := p.storeCfg(t, "PEM")
			cfg["authProvider.x509"] = "" // no authProvider line at all
			s, secure := start(t, kind, cfg)
			alice, err := connect(t, secure, p.clientTLS(p.alice))
			if err != nil {
				t.Fatalf("alice over TLS without the authProvider line: %v\n%s", err, s.Log())
			}
			acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: aliceSubject}}
			if _, err := alice.Create("/mine", []byte("a"), 0, acl); err != nil {
				t.Fatalf("create with x509 ACL: %v", err)
			}
			if data, _, err := alice.Get("/mine"); err != nil || string(data) != "a" {
				t.Fatalf("alice reads her x509 znode: %q, %v (want her certificate's x509 id)", data, err)
			}
			if _, err := alice.Create("/auth", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "auth"}}); err != nil {
				t.Fatalf("create with auth ACL: %v", err)
			}
			if got, _, err := alice.GetACL("/auth"); err != nil || len(got) != 1 || got[0].Scheme != "x509" || got[0].ID != aliceSubject {
				t.Fatalf("auth ACL: %v, %v", got, err)
			}
			bob, err := connect(t, secure, p.clientTLS(p.bob))
			if err != nil {
				t.Fatalf("bob over TLS: %v", err)
			}
			if _, _, err := bob.Get("/mine"); !errors.Is(err, zk.ErrNoAuth) {
				t.Fatalf("bob reads alice's znode: %v, want no auth", err)
			}
			if err := alice.AddAuth("x509", nil); err != nil {
				t.Fatalf("addauth x509 with a certificate: %v", err)
			}
		})
	}
}
