package migrate

import (
	"crypto/x509/pkix"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// TestIntegration_FollowSSLQuorum follows a three-member ZooKeeper 3.8
// ensemble with sslQuorum=true (mutual TLS on the quorum ports, no
// plaintext) with `zkd follow`, as observer server.4:
//   - with the ensemble's ssl.quorum.* stores in zkd's zoo.cfg it syncs
//     over TLS and follows a write made after the sync;
//   - with a certificate from a CA the ensemble does not trust it is
//     refused, and says so in a line that names the handshake;
//   - with no TLS settings at all it is refused too, and the error says
//     to set sslQuorum=true.
func TestIntegration_FollowSSLQuorum(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	bin := zkproc.BuildZkd(t)
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "zkd test CA")
	other := tlstest.NewCA(t, "someone else's CA")
	member := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "localhost"}})
	stranger := other.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "localhost"}})
	stores := func(ks string) map[string]string {
		return map[string]string{
			"sslQuorum":                      "true",
			"ssl.quorum.keyStore.location":   ks,
			"ssl.quorum.keyStore.password":   tlstest.Password,
			"ssl.quorum.trustStore.location": ca.WritePEM(t, dir, "quorum-ca"),
		}
	}
	memberKS := member.WriteJKS(t, dir, "member")
	ports, quorum, c := startObserved(t, zkproc.Options{ExtraCfg: stores(memberKS)})

	t.Run("untrusted certificate", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followZooCfg(t, ports[2], stores(stranger.WriteJKS(t, dir, "stranger"))))
		f.waitOutput(t, regexp.MustCompile(`TLS handshake with a ZooKeeper member failed.*certificate`), time.Minute)
		if strings.Contains(f.out.String(), "synced by") {
			t.Fatalf("a follower with an untrusted certificate synced:\n%s", f.out.String())
		}
	})
	t.Run("no TLS settings", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followZooCfg(t, ports[2], nil))
		f.waitOutput(t, regexp.MustCompile(`did not take this observer.*set sslQuorum=true`), time.Minute)
		if strings.Contains(f.out.String(), "synced by") {
			t.Fatalf("a plaintext follower synced with a TLS-only ensemble:\n%s", f.out.String())
		}
	})
	t.Run("the ensemble's stores", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followZooCfg(t, ports[2], stores(memberKS)))
		f.waitOutput(t, regexp.MustCompile(`dialing the ZooKeeper leader over TLS`), 10*time.Second)
		f.waitOutput(t, regexp.MustCompile(`synced by \w+ with \S+`), time.Minute)
		st, err := c.Set("/before", []byte("followed"), -1)
		must(t, err)
		f.waitOutput(t, regexp.MustCompile(fmt.Sprintf(`zxid 0x0*%x\b`, st.Mzxid)), time.Minute)
	})
}

// TestIntegration_FollowQuorumSASL follows a three-member ZooKeeper 3.8
// ensemble that requires quorum SASL of its learners
// (quorum.auth.enableSasl, learnerRequireSasl and serverRequireSasl, with
// DIGEST-MD5 QuorumServer and QuorumLearner JAAS sections) with `zkd
// follow`, as observer server.4:
//   - with the ensemble's QuorumLearner credentials it authenticates,
//     syncs and follows a write made after the sync;
//   - with a wrong password the leader refuses it, and it says so in a
//     line naming quorum SASL;
//   - with no quorum SASL settings the leader drops it, and the error says
//     which keys to set.
func TestIntegration_FollowQuorumSASL(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	bin := zkproc.BuildZkd(t)
	dir := t.TempDir()
	jaas := func(name, password string) string {
		p := filepath.Join(dir, name+".jaas")
		must(t, os.WriteFile(p, []byte(`QuorumServer {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_learner="quorum-secret";
};
QuorumLearner {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="learner"
    password="`+password+`";
};
`), 0o600))
		return p
	}
	quorumSASL := map[string]string{
		"quorum.auth.enableSasl":         "true",
		"quorum.auth.learnerRequireSasl": "true",
		"quorum.auth.serverRequireSasl":  "true",
	}
	ports, quorum, c := startObserved(t, zkproc.Options{ExtraCfg: maps.Clone(quorumSASL),
		JVMFlags: []string{"-Djava.security.auth.login.config=" + jaas("ensemble", "quorum-secret")}})
	// As for ZooKeeper, the JAAS file is a JVM flag.
	jvmFlags := func(path string) string { return "SERVER_JVMFLAGS=-Djava.security.auth.login.config=" + path }

	t.Run("wrong password", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followZooCfg(t, ports[2], quorumSASL), jvmFlags(jaas("wrong", "not-the-secret")))
		f.waitOutput(t, regexp.MustCompile(`quorum SASL with the ZooKeeper leader failed.*refused the credentials`), time.Minute)
		if strings.Contains(f.out.String(), "synced by") {
			t.Fatalf("a follower with a wrong password synced:\n%s", f.out.String())
		}
	})
	t.Run("no quorum SASL settings", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followZooCfg(t, ports[2], nil))
		f.waitOutput(t, regexp.MustCompile(`did not take this observer.*quorum.auth.learnerRequireSasl=true`), time.Minute)
		if strings.Contains(f.out.String(), "synced by") {
			t.Fatalf("a follower without quorum SASL synced:\n%s", f.out.String())
		}
	})
	t.Run("the ensemble's credentials", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followZooCfg(t, ports[2], quorumSASL), jvmFlags(jaas("learner", "quorum-secret")))
		f.waitOutput(t, regexp.MustCompile(`authenticating to the ZooKeeper leader by quorum SASL \(DIGEST-MD5\) as learner`), 10*time.Second)
		f.waitOutput(t, regexp.MustCompile(`authenticated to the ZooKeeper leader by quorum SASL`), time.Minute)
		f.waitOutput(t, regexp.MustCompile(`synced by \w+ with \S+`), time.Minute)
		st, err := c.Set("/before", []byte("followed"), -1)
		must(t, err)
		f.waitOutput(t, regexp.MustCompile(fmt.Sprintf(`zxid 0x0*%x\b`, st.Mzxid)), time.Minute)
	})
}

// startObserved starts a three-member ZooKeeper ensemble with opts (and
// tickTime 200) and a server.4 observer line for `zkd follow`, and creates
// /before through a client it returns. ports are the observer's quorum and
// election ports and zkd's client port; quorum the members' quorum
// addresses.
func startObserved(t *testing.T, opts zkproc.Options) (ports []int, quorum []string, c *zk.Conn) {
	ports = zkproc.FreePorts(t, 3)
	opts.ExtraCfg["server.4"] = fmt.Sprintf("127.0.0.1:%d:%d:observer;127.0.0.1:%d", ports[0], ports[1], ports[2])
	opts.TickTime = 200
	zs := zkproc.StartZooKeeperEnsemble(t, 3, opts)
	c, _, err := zk.Connect(zkproc.Addrs(zs), sessionTimeout, zk.WithLogger(quiet{}))
	must(t, err)
	t.Cleanup(c.Close)
	waitSession(t, c)
	_, err = c.Create("/before", []byte("synced"), 0, open)
	must(t, err)
	return ports, quorumAddrs(t, zs), c
}

// followZooCfg writes a zoo.cfg for `zkd follow` in a folder of its own,
// serving on port, with extra lines.
func followZooCfg(t *testing.T, port int, extra map[string]string) string {
	p := writeZooCfg(t, t.TempDir(), port)
	var b strings.Builder
	for k, v := range extra {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(b.String())
	must(t, err)
	must(t, f.Close())
	return p
}
