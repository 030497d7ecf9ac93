package migrate

import (
	"crypto/x509/pkix"
	"fmt"
	"os"
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
	ports := zkproc.FreePorts(t, 3) // observer quorum and election ports, zkd's client port
	cfg := stores(memberKS)
	cfg["server.4"] = fmt.Sprintf("127.0.0.1:%d:%d:observer;127.0.0.1:%d", ports[0], ports[1], ports[2])
	zs := zkproc.StartZooKeeperEnsemble(t, 3, zkproc.Options{ExtraCfg: cfg, TickTime: 200})
	c, _, err := zk.Connect(zkproc.Addrs(zs), sessionTimeout, zk.WithLogger(quiet{}))
	must(t, err)
	t.Cleanup(c.Close)
	waitSession(t, c)
	_, err = c.Create("/before", []byte("synced"), 0, open)
	must(t, err)
	quorum := quorumAddrs(t, zs)

	// followCfg writes zkd's zoo.cfg in its own folder, with extra lines.
	followCfg := func(name string, extra map[string]string) string {
		p := writeZooCfg(t, t.TempDir(), ports[2])
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

	t.Run("untrusted certificate", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followCfg("stranger", stores(stranger.WriteJKS(t, dir, "stranger"))))
		f.waitOutput(t, regexp.MustCompile(`TLS handshake with a ZooKeeper member failed.*certificate`), time.Minute)
		if strings.Contains(f.out.String(), "synced by") {
			t.Fatalf("a follower with an untrusted certificate synced:\n%s", f.out.String())
		}
	})
	t.Run("no TLS settings", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followCfg("plain", nil))
		f.waitOutput(t, regexp.MustCompile(`did not take this observer.*set sslQuorum=true`), time.Minute)
		if strings.Contains(f.out.String(), "synced by") {
			t.Fatalf("a plaintext follower synced with a TLS-only ensemble:\n%s", f.out.String())
		}
	})
	t.Run("the ensemble's stores", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followCfg("member", stores(memberKS)))
		f.waitOutput(t, regexp.MustCompile(`dialing the ZooKeeper leader over TLS`), 10*time.Second)
		f.waitOutput(t, regexp.MustCompile(`synced by \w+ with \S+`), time.Minute)
		st, err := c.Set("/before", []byte("followed"), -1)
		must(t, err)
		f.waitOutput(t, regexp.MustCompile(fmt.Sprintf(`zxid 0x0*%x\b`, st.Mzxid)), time.Minute)
	})
}
