package zktls

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/aclops"
	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
)

// TestIntegration_X509ACLOps: on nodes granting all permissions, or one
// alone, only to alice's x509 subject, every op (reads, writes, multi,
// multiRead, getEphemerals, addWatch, sync) answers alice over TLS, a
// plaintext client and bob over TLS (no super user here) as ZooKeeper
// 3.8 does (aclops holds the table).
func TestIntegration_X509ACLOps(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			p := newPKI(t)
			s, secure := start(t, kind, p.storeCfg(t, "PEM"))
			alice, bob := dialTLS(t, secure, p.clientTLS(p.alice)), dialTLS(t, secure, p.clientTLS(p.bob))
			plain, err := zkwire.Dial(s.Addr, zkwire.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(plain.Abandon)
			aclops.Check(t, "/aclops", jute.Id{Scheme: "x509", Id: aliceSubject}, alice,
				aclops.Client{Name: "plaintext", C: plain}, aclops.Client{Name: "x509-bob", C: bob})
		})
	}
}

// dialTLS opens a zkwire session over TLS with conf.
func dialTLS(t *testing.T, addr string, conf *tls.Config) *zkwire.Client {
	t.Helper()
	c, err := zkwire.Dial(addr, zkwire.Options{DialConn: func(addr string) (net.Conn, error) {
		// A busy ZooKeeper builds an SSL context per connection.
		return tls.DialWithDialer(&net.Dialer{Timeout: 45 * time.Second}, "tcp", addr, conf)
	}})
	if err != nil {
		t.Fatalf("TLS session with %s: %v", addr, err)
	}
	t.Cleanup(c.Abandon)
	return c
}
