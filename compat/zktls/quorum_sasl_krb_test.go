package zktls

import (
	"os"
	"testing"

	"github.com/zkd/zkd/compat/krb5kdc"
)

const krbRealm = "ZKD.TEST"

// kerberosMech starts a KDC with the quorum service principal
// zkquorum/127.0.0.1, which learners ask for as
// quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST (the host of the
// member dialed), and a learner principal of the members' host,
// learner/127.0.0.1. Member 3 is kept out with keytabs that do not
// fit: its QuorumServer keytab holds zkquorum/127.0.0.1's keys from
// before a rekey (isInitiator=false, so it starts, as a member whose
// keytab went stale while it ran), and its QuorumLearner principal names
// a host no server.N line has (learner/10.9.9.9, a keytab made for
// another machine). Its stale JAAS file has a QuorumLearner keytab of
// learner/127.0.0.2's keys from before a rekey.
func kerberosMech(t *testing.T) quorumMech {
	kdc := krb5kdc.Start(t, krbRealm)
	oldSvc, svc := kdc.RekeyedPrincipal("zkquorum/127.0.0.1")
	learner := kdc.NewPrincipal("learner/127.0.0.1")
	stranger := kdc.NewPrincipal("learner/10.9.9.9")
	stale, _ := kdc.RekeyedPrincipal("learner/127.0.0.2")
	section := func(name, principal, keytab, extra string) string {
		return krb5kdc.JAASSection(name, principal+"@"+krbRealm, keytab, extra)
	}
	write := func(t *testing.T, path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return quorumMech{
		jaas: func(t *testing.T, path string, good bool) {
			if good {
				write(t, path, section("QuorumServer", "zkquorum/127.0.0.1", svc, "")+section("QuorumLearner", "learner/127.0.0.1", learner, ""))
			} else {
				write(t, path, section("QuorumServer", "zkquorum/127.0.0.1", oldSvc, "isInitiator=false")+section("QuorumLearner", "learner/10.9.9.9", stranger, ""))
			}
		},
		flags:      []string{"-Djava.security.krb5.conf=" + kdc.Conf},
		cfg:        map[string]string{"quorum.auth.kerberos.servicePrincipal": "zkquorum/_HOST"},
		zkdRefusal: "learner learner/10.9.9.9@" + krbRealm + " is not authorized to connect",
		zkRefusal:  "SASL authorization completed, learner/10.9.9.9@" + krbRealm + " is not authorized to connect",
		zkdOutside: "quorum SASL to the member on its",
		// Its stale keytab cannot decrypt the others' tickets.
		zkdOutsideRefusal: "AP-REQ for zkquorum/127.0.0.1@" + krbRealm + " rejected",
		stale: func(t *testing.T, path string) {
			write(t, path, section("QuorumServer", "zkquorum/127.0.0.1", svc, "")+section("QuorumLearner", "learner/127.0.0.2", stale, ""))
		},
		zkdStale: "Kerberos login of learner/127.0.0.2@" + krbRealm + " with keyTab " + stale + " failed",
		zkStale:  "Failed to initialize authentication mechanism using SASL",
	}
}

// TestIntegration_QuorumSASLKerberos: the rolling enablement of
// TestIntegration_QuorumSASL with Kerberos (GSSAPI) QuorumServer and
// QuorumLearner sections and a real MIT KDC, on zkd and ZooKeeper 3.8
// with the same JAAS file and krb5.conf: clients write throughout, and
// member 3 with keytabs that do not fit (kerberosMech) stays out, the
// others logging that its principal's host is not authorized. Member 3
// with a QuorumLearner keytab of keys from before a rekey does not start
// at all, on both: the KDC refuses its login.
func TestIntegration_QuorumSASLKerberos(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) { testQuorumSASL(t, kind, kerberosMech(t)) })
	}
}
