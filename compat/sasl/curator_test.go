package sasl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zkd/zkd/compat/curator"
	"github.com/zkd/zkd/compat/zkproc"
)

// curatorJAAS is the server's users and the clients' JAAS sections: the
// application's Client section logs in as bob, the Other section as alice.
const curatorJAAS = `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bobsecret"
    user_alice="alicesecret";
};
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="bob" password="bobsecret";
};
Other {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="alice" password="alicesecret";
};
`

// TestIntegration_SASLCurator: Curator with a JAAS Client section given by
// -Djava.security.auth.login.config, as Kafka or HBase configure it, is
// sasl:bob on zkd as on ZooKeeper 3.8: it takes and releases an
// InterProcessMutex and creates, reads, writes and runs a transaction
// under sasl:bob ACLs, while a Curator client logged in as alice (the
// Other section, zookeeper.sasl.clientconfig) is refused each of them.
func TestIntegration_SASLCurator(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	check := curator.CompileSecurityCheck(t)
	jaas := filepath.Join(t.TempDir(), "client-jaas.conf")
	if err := os.WriteFile(jaas, []byte(curatorJAAS), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			s := start(t, kind, curatorJAAS, nil,
				map[string]string{"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"})
			out, err := check.Run(t, []string{"-Djava.security.auth.login.config=" + jaas}, curator.Args{
				Connect:  s.Addr,
				Scheme:   "sasl",
				Owner:    "bob",
				Other:    "alice",
				OtherCfg: map[string]string{"zookeeper.sasl.clientconfig": "Other"},
			})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}
