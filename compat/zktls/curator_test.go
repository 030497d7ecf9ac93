package zktls

import (
	"testing"

	"github.com/zkd/zkd/compat/curator"
	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// TestIntegration_CuratorTLS: Curator with zookeeper.client.secure=true
// over ClientCnxnSocketNetty, its key and trust stores given as
// zookeeper.ssl.* system properties in each of PEM, PKCS12 and JKS, is
// x509:<alice's subject> on zkd as on ZooKeeper 3.8: it takes and releases
// an InterProcessMutex and creates, reads, writes and runs a transaction
// under x509 ACLs naming alice, while a Curator client presenting bob's
// certificate (its own ZKClientConfig) is refused each of them.
func TestIntegration_CuratorTLS(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	check := curator.CompileSecurityCheck(t)
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			p := newPKI(t)
			_, secure := start(t, kind, p.storeCfg(t, "JKS"))
			for _, typ := range []string{"PEM", "PKCS12", "JKS"} {
				var alice, bob, ca string
				switch typ {
				case "PEM":
					alice, bob, ca = p.alice.WritePEM(t, p.dir, "curator-alice"), p.bob.WritePEM(t, p.dir, "curator-bob"), p.ca.WritePEM(t, p.dir, "curator-ca")
				case "PKCS12":
					alice, bob, ca = p.alice.WritePKCS12(t, p.dir, "curator-alice"), p.bob.WritePKCS12(t, p.dir, "curator-bob"), p.ca.WritePKCS12(t, p.dir, "curator-ca")
				case "JKS":
					alice, bob, ca = p.alice.WriteJKS(t, p.dir, "curator-alice"), p.bob.WriteJKS(t, p.dir, "curator-bob"), p.ca.WriteJKS(t, p.dir, "curator-ca")
				}
				flags := []string{
					"-Dzookeeper.client.secure=true",
					"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
					"-Dzookeeper.ssl.keyStore.location=" + alice,
					"-Dzookeeper.ssl.keyStore.type=" + typ,
					"-Dzookeeper.ssl.trustStore.location=" + ca,
					"-Dzookeeper.ssl.trustStore.type=" + typ,
				}
				if typ != "PEM" {
					flags = append(flags, "-Dzookeeper.ssl.keyStore.password="+tlstest.Password,
						"-Dzookeeper.ssl.trustStore.password="+tlstest.Password)
				}
				out, err := check.Run(t, flags, curator.Args{
					Connect:  secure,
					Scheme:   "x509",
					Owner:    aliceSubject,
					Other:    "CN=bob",
					OtherCfg: map[string]string{"zookeeper.ssl.keyStore.location": bob},
				})
				if err != nil {
					t.Fatalf("%s stores: %v\n%s", typ, err, out)
				}
			}
		})
	}
}
