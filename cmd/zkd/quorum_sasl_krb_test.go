package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/compat/krb5kdc"
	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/quorum/quorumauth"
)

// TestQuorumSASLKerberos runs quorum SASL by GSSAPI between two members'
// configurations (zoo.cfg, JAAS file, krb5.conf) with a real MIT KDC: the
// learner member's PeerAuth dials, the other's accepts, over a pipe.
// A learner principal of a server.N host, toward zkquorum/localhost or
// zkquorum/_HOST, is accepted as its principal; a host no server.N line
// names, a server keytab of old keys, and a service principal the KDC
// does not know fail with errors naming why on the side that knows; a
// learner keytab of old keys stops the member at start.
func TestQuorumSASLKerberos(t *testing.T) {
	const realm = "ZKD.TEST"
	kdc := krb5kdc.Start(t, realm)
	oldSvc, svc := kdc.RekeyedPrincipal("zkquorum/localhost")
	hostSvc := kdc.NewPrincipal("zkquorum/127.0.0.1")
	learnerKT := kdc.NewPrincipal("learner/127.0.0.1")
	strangerKT := kdc.NewPrincipal("learner/10.9.9.9")
	staleKT, _ := kdc.RekeyedPrincipal("learner/127.0.0.3")

	dir := t.TempDir()
	servers := "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\nserver.3=127.0.0.3:2890:3890\n"
	member := func(t *testing.T, name, server, learner, cfg string) (*peerAuth, error) {
		jaas := filepath.Join(dir, name+".jaas")
		if err := os.WriteFile(jaas, []byte(server+learner), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := cfgFrom(t, servers+"quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\n"+cfg,
			"SERVER_JVMFLAGS=-Djava.security.auth.login.config="+jaas+" -Djava.security.krb5.conf="+kdc.Conf)
		if err != nil {
			t.Fatal(err)
		}
		var qc quorum.Config
		if err := quorumSASL(c, &qc, zap.NewNop()); err != nil {
			return nil, err
		}
		return qc.PeerAuth.(*peerAuth), nil
	}
	okServer := krb5kdc.JAASSection("QuorumServer", "zkquorum/localhost@"+realm, svc, "")
	okLearner := krb5kdc.JAASSection("QuorumLearner", "learner/127.0.0.1@"+realm, learnerKT, "")
	tests := []struct {
		name            string
		server, learner string // JAAS sections of the accepting and the dialing member
		cfg             string // zoo.cfg lines of both
		startErr        string // the dialing member does not start
		learnErr        string // the dialing member's ticket or exchange fails
		serveErr        string // the accepting member refuses
		id              string // the authenticated learner
	}{
		{name: "default service principal", server: okServer, learner: okLearner, id: "learner/127.0.0.1@" + realm},
		{name: "_HOST", server: krb5kdc.JAASSection("QuorumServer", "zkquorum/127.0.0.1@"+realm, hostSvc, ""), learner: okLearner,
			cfg: "quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST\n", id: "learner/127.0.0.1@" + realm},
		{name: "host in no server.N line", server: okServer, learner: krb5kdc.JAASSection("QuorumLearner", "learner/10.9.9.9@"+realm, strangerKT, ""),
			learnErr: "refused the credentials", serveErr: "host 10.9.9.9 is in no server.N line"},
		{name: "server keytab of old keys", server: krb5kdc.JAASSection("QuorumServer", "zkquorum/localhost@"+realm, oldSvc, "isInitiator=false"), learner: okLearner,
			learnErr: "refused the credentials", serveErr: "AP-REQ for zkquorum/localhost@" + realm + " rejected"},
		{name: "unknown service principal", server: okServer, learner: okLearner,
			cfg: "quorum.auth.kerberos.servicePrincipal=zkquorum/nowhere\n", learnErr: "service ticket for zkquorum/nowhere"},
		{name: "learner keytab of old keys", server: okServer, learner: krb5kdc.JAASSection("QuorumLearner", "learner/127.0.0.3@"+realm, staleKT, ""),
			startErr: "Kerberos login of learner/127.0.0.3@" + realm + " with keyTab " + staleKT + " failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := member(t, "server", tt.server, okLearner, tt.cfg)
			if err != nil {
				t.Fatalf("accepting member: %v", err)
			}
			lrn, err := member(t, "learner", okServer, tt.learner, tt.cfg)
			if tt.startErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.startErr) {
					t.Fatalf("dialing member starts with %v, want %q", err, tt.startErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("dialing member: %v", err)
			}
			lc, err := lrn.Learner("127.0.0.1")
			if err != nil {
				if tt.learnErr == "" || !strings.Contains(err.Error(), tt.learnErr) {
					t.Fatalf("Learner: %v, want %q", err, tt.learnErr)
				}
				return
			}
			a, b := net.Pipe()
			deadline := time.Now().Add(10 * time.Second)
			a.SetDeadline(deadline)
			b.SetDeadline(deadline)
			type result struct {
				id  string
				err error
			}
			served := make(chan result, 1)
			go func() {
				var first [8]byte
				if _, err := io.ReadFull(b, first[:]); err != nil || !quorumauth.IsAuth(first) {
					served <- result{"", err}
					return
				}
				id, err := quorumauth.Serve(b, "learner", srv.Server())
				b.Close()
				served <- result{id, err}
			}()
			lerr := quorumauth.Learn(a, "server", lc)
			a.Close()
			r := <-served
			check := func(side string, err error, want string) {
				t.Helper()
				if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
					t.Errorf("%s: %v, want %q", side, err, want)
				}
			}
			check("learner", lerr, tt.learnErr)
			check("server", r.err, tt.serveErr)
			if r.id != tt.id {
				t.Errorf("authenticated as %q, want %q", r.id, tt.id)
			}
		})
	}
}

// TestServerHosts: the hosts a Kerberos learner principal may name are
// those of the server.N lines, of the last address of a multi-address
// line (as ZooKeeper's QuorumServer.hostname), IPv6 without brackets.
func TestServerHosts(t *testing.T) {
	c, err := cfgFrom(t, "server.1=zk1.example:2888:3888;2181\n"+
		"server.2=10.0.0.2:2888:3888|zk2.example:2888:3888:participant;0.0.0.0:2181\n"+
		"server.3=[fd00::3]:2888:3888:observer\n"+
		"server.4=zk1.example:2889:3889\n")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(serverHosts(c), " ")
	if want := "fd00::3 zk1.example zk2.example"; got != want {
		t.Fatalf("serverHosts = %q, want %q", got, want)
	}
}
