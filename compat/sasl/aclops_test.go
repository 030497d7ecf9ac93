package sasl

import (
	"testing"

	"github.com/zkd/zkd/compat/aclops"
	"github.com/zkd/zkd/jute"
)

// TestIntegration_SASLACLOps: on nodes granting all permissions, or one
// alone, only to sasl:bob, every op (reads, writes, multi, multiRead,
// getEphemerals, addWatch, sync) answers bob, an unauthenticated client and another SASL user
// as ZooKeeper 3.8 does (aclops holds the table).
func TestIntegration_SASLACLOps(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			s := start(t, kind, jaasText, nil,
				map[string]string{"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"})
			bob := dial(t, s.Addr)
			if err := authenticate(bob, "bob", "bobsecret"); err != nil {
				t.Fatalf("bob: %v", err)
			}
			root := dial(t, s.Addr) // another sasl user; no zookeeper.superUser here
			if err := authenticate(root, "root", "rootsecret"); err != nil {
				t.Fatalf("root: %v", err)
			}
			aclops.Check(t, "/aclops", jute.Id{Scheme: "sasl", Id: "bob"}, bob,
				aclops.Client{Name: "unauthenticated", C: dial(t, s.Addr)}, aclops.Client{Name: "sasl-root", C: root})
		})
	}
}
