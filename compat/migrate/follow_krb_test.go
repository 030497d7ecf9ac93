package migrate

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/krb5kdc"
	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_FollowQuorumSASLKerberos follows a three-member
// ZooKeeper 3.8 ensemble that requires Kerberos quorum SASL of its
// learners (Krb5LoginModule QuorumServer zkquorum/localhost and
// QuorumLearner learner/127.0.0.1, a real MIT KDC) with `zkd follow` as
// observer server.4:
//   - with the ensemble's QuorumLearner keytab it authenticates by GSSAPI,
//     syncs and follows a write made after the sync;
//   - with a learner principal of a host no server.N line names, the
//     leader refuses it (ZooKeeper's authorized-hosts check), and it says
//     so in a line naming quorum SASL;
//   - with a service principal the KDC does not know, it gets no ticket,
//     and says so naming the principal.
func TestIntegration_FollowQuorumSASLKerberos(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	bin := zkproc.BuildZkd(t)
	const realm = "ZKD.TEST"
	kdc := krb5kdc.Start(t, realm)
	svc := kdc.NewPrincipal("zkquorum/localhost")
	learner := kdc.NewPrincipal("learner/127.0.0.1")
	stranger := kdc.NewPrincipal("learner/10.9.9.9")
	dir := t.TempDir()
	section := func(name, keytab, principal string) string {
		return krb5kdc.JAASSection(name, principal+"@"+realm, keytab, "")
	}
	jaas := func(name, learnerKeytab, learnerPrincipal string) string {
		p := filepath.Join(dir, name+".jaas")
		must(t, os.WriteFile(p, []byte(section("QuorumServer", svc, "zkquorum/localhost")+
			section("QuorumLearner", learnerKeytab, learnerPrincipal)), 0o600))
		return p
	}
	quorumSASL := map[string]string{
		"quorum.auth.enableSasl":         "true",
		"quorum.auth.learnerRequireSasl": "true",
		"quorum.auth.serverRequireSasl":  "true",
	}
	ports, quorum, c := startObserved(t, zkproc.Options{ExtraCfg: maps.Clone(quorumSASL),
		JVMFlags: []string{"-Djava.security.auth.login.config=" + jaas("ensemble", learner, "learner/127.0.0.1"),
			"-Djava.security.krb5.conf=" + kdc.Conf}})
	jvmFlags := func(path string) string {
		return "SERVER_JVMFLAGS=-Djava.security.auth.login.config=" + path + " -Djava.security.krb5.conf=" + kdc.Conf
	}

	t.Run("host not authorized", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followZooCfg(t, ports[2], quorumSASL), jvmFlags(jaas("stranger", stranger, "learner/10.9.9.9")))
		f.waitOutput(t, regexp.MustCompile(`quorum SASL with the ZooKeeper leader failed.*refused the credentials`), time.Minute)
		if strings.Contains(f.out.String(), "synced by") {
			t.Fatalf("a follower of an unauthorized host synced:\n%s", f.out.String())
		}
	})
	t.Run("unknown service principal", func(t *testing.T) {
		cfg := maps.Clone(quorumSASL)
		cfg["quorum.auth.kerberos.servicePrincipal"] = "zkquorum/nowhere"
		f := startFollow(t, bin, quorum, 4, followZooCfg(t, ports[2], cfg), jvmFlags(jaas("learner", learner, "learner/127.0.0.1")))
		f.waitOutput(t, regexp.MustCompile(`quorum SASL with the ZooKeeper leader failed.*service ticket for zkquorum/nowhere`), time.Minute)
		if strings.Contains(f.out.String(), "synced by") {
			t.Fatalf("a follower without a service ticket synced:\n%s", f.out.String())
		}
	})
	t.Run("the ensemble's keytab", func(t *testing.T) {
		f := startFollow(t, bin, quorum, 4, followZooCfg(t, ports[2], quorumSASL), jvmFlags(jaas("learner", learner, "learner/127.0.0.1")))
		f.waitOutput(t, regexp.MustCompile(`authenticating to the ZooKeeper leader by quorum SASL \(GSSAPI\) as learner/127\.0\.0\.1@`+realm+` toward zkquorum/localhost`), 10*time.Second)
		f.waitOutput(t, regexp.MustCompile(`authenticated to the ZooKeeper leader by quorum SASL`), time.Minute)
		f.waitOutput(t, regexp.MustCompile(`synced by \w+ with \S+`), time.Minute)
		st, err := c.Set("/before", []byte("followed"), -1)
		must(t, err)
		f.waitOutput(t, regexp.MustCompile(fmt.Sprintf(`zxid 0x0*%x\b`, st.Mzxid)), time.Minute)
	})
}
