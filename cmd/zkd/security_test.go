package main

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// cfgFrom parses zoo.cfg text (dataDir added) with the given environment.
func cfgFrom(t *testing.T, text string, env ...string) (*zooCfg, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(path, []byte("dataDir="+dir+"\n"+text), 0o644); err != nil {
		t.Fatal(err)
	}
	return parseZooCfg(path, env)
}

// TestSecurityKeys: security settings zkd does not implement stop it at
// start with an error naming the key, in zoo.cfg or as -D flags; their
// "off" values and the implemented keys pass.
func TestSecurityKeys(t *testing.T) {
	tests := []struct {
		name, cfg string
		env       []string
		want      string // "" : accepted
	}{
		{"sslQuorum without stores", "sslQuorum=true\n", nil, "ssl.quorum.keyStore.location"},
		{"sslQuorum off", "sslQuorum=false\n", nil, ""},
		{"quorum sasl without a JAAS file", "quorum.auth.enableSasl=true\n", nil, "quorum.auth.enableSasl=true needs a JAAS file"},
		{"quorum sasl learner flag without enableSasl", "", []string{"SERVER_JVMFLAGS=-Dzookeeper.quorum.auth.learnerRequireSasl=true"}, ""},
		{"quorum portUnification without stores", "portUnification=true\n", nil, "portUnification=true needs ssl.quorum.keyStore.location"},
		{"quorum portUnification off", "portUnification=false\n", nil, ""},
		{"admin https without key store", "admin.forceHttps=true\n", nil, "ssl.quorum.keyStore.location"},
		{"admin client auth without https", "admin.needClientAuth=true\n", nil, "admin.forceHttps=true"},
		{"admin client auth without x509 provider", "admin.needClientAuth=true\nadmin.forceHttps=true\n", nil, "authProvider.x509"},
		{"ssl.quorum crl", "sslQuorum=true\nssl.quorum.crl=true\n", nil, "ssl.quorum.crl"},
		{"ssl.quorum want", "sslQuorum=true\nssl.quorum.keyStore.location=/k.pem\nssl.quorum.trustStore.location=/t.pem\nssl.quorum.clientAuth=want\n", nil, "clientAuth=need"},
		{"crl", "ssl.crl=true\n", nil, "ssl.crl"},
		{"ocsp flag", "", []string{"JVMFLAGS=-Dzookeeper.ssl.ocsp=true"}, "ssl.ocsp"},
		{"bad clientAuth", "ssl.clientAuth=maybe\n", nil, "clientAuth"},
		{"bad sessionless timeout", "", []string{"JVMFLAGS=-Dzookeeper.nio.sessionlessCnxnTimeout=0"}, "sessionlessCnxnTimeout"},
		{"client tls keys", "secureClientPort=2281\nssl.clientAuth=want\nssl.hostnameVerification=false\nssl.protocol=TLSv1.3\n", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := cfgFrom(t, tc.cfg, tc.env...)
			if err == nil {
				_, _, _, err = configs(c, zap.NewNop())
			}
			if err == nil {
				_, err = adminTLS(c, zap.NewNop())
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestSecureKeysParsed: secureClientPort is no longer "accepted without
// effect", and the x509 keys reach the server's config.
func TestSecureKeysParsed(t *testing.T) {
	c, err := cfgFrom(t, "secureClientPort=2281\nsecureClientPortAddress=127.0.0.2\nauthProvider.1=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n",
		"SERVER_JVMFLAGS=-Dzookeeper.X509AuthenticationProvider.superUser=CN=admin -Dzookeeper.nio.sessionlessCnxnTimeout=3000")
	if err != nil {
		t.Fatal(err)
	}
	if c.SecureClientPort != 2281 || c.SecureClientPortAddress != "127.0.0.2" || c.ClientPortSet {
		t.Fatalf("parsed %+v", c)
	}
	for _, k := range c.NoEffect {
		if strings.Contains(k, "secure") {
			t.Fatalf("%s accepted without effect", k)
		}
	}
	_, nc, sc, err := configs(c, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if !sc.X509Auth || sc.X509SuperUser != "CN=admin" || sc.SessionlessTimeout.Milliseconds() != 3000 || sc.SecureClientPort != 2281 {
		t.Fatalf("server config %+v", sc)
	}
	if len(nc.Tree.ExtraAuthSchemes) != 1 || nc.Tree.ExtraAuthSchemes[0] != "x509" {
		t.Fatalf("tree schemes %v", nc.Tree.ExtraAuthSchemes)
	}
}

// TestX509ProviderImplied: as ZooKeeper 3.8's configureSSLAuth, a
// secureClientPort or client.portUnification turns the x509 provider on
// without an authProvider line; a plaintext-only zoo.cfg leaves it off.
func TestX509ProviderImplied(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		want bool
	}{
		{"secureClientPort=2281\n", true},
		{"client.portUnification=true\n", true},
		{"clientPort=2181\n", false},
	} {
		c, err := cfgFrom(t, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, nc, sc, err := configs(c, zap.NewNop())
		if err != nil {
			t.Fatalf("%q: %v", tc.cfg, err)
		}
		if sc.X509Auth != tc.want || slices.Contains(nc.Tree.ExtraAuthSchemes, "x509") != tc.want {
			t.Errorf("%q: X509Auth %v, schemes %v; want x509 %v", tc.cfg, sc.X509Auth, nc.Tree.ExtraAuthSchemes, tc.want)
		}
	}
}

// TestSecureOnlyListener: with secureClientPort and no clientPort, zkd
// listens for TLS only; with both, on both.
func TestSecureOnlyListener(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	key := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "localhost"}}).WritePEM(t, dir, "srv")
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		_, p, _ := net.SplitHostPort(ln.Addr().String())
		return p
	}
	for _, withPlain := range []bool{false, true} {
		plainPort, securePort := free(), free()
		text := "secureClientPort=" + securePort + "\nclientPortAddress=127.0.0.1\nssl.keyStore.location=" + key + "\nssl.clientAuth=none\n"
		if withPlain {
			text += "clientPort=" + plainPort + "\n"
		}
		c, err := cfgFrom(t, text)
		if err != nil {
			t.Fatal(err)
		}
		_, _, sc, err := configs(c, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		ln, err := clientListener(c, sc, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				if tc, ok := c.(*tls.Conn); ok {
					tc.Handshake()
				}
				c.Close()
			}
		}()
		conn, err := tls.Dial("tcp", "127.0.0.1:"+securePort, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
		if err != nil {
			t.Fatalf("TLS on secureClientPort: %v", err)
		}
		conn.Close()
		pc, err := net.Dial("tcp", "127.0.0.1:"+plainPort)
		if withPlain != (err == nil) {
			t.Fatalf("clientPort set %v: dial plain port: %v", withPlain, err)
		}
		if pc != nil {
			pc.Close()
		}
		ln.Close()
	}
}

// TestQuorumTLSModes: sslQuorum and the quorum portUnification, the keys of
// ZooKeeper's three-step rolling upgrade, set how the member ports take and
// dial members.
func TestQuorumTLSModes(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	stores := "ssl.quorum.keyStore.location=" + ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "member"}}).WritePEM(t, dir, "member") +
		"\nssl.quorum.trustStore.location=" + ca.WritePEM(t, dir, "ca") + "\n"
	tests := []struct {
		name                        string
		cfg                         string
		peerTLS, unified, dialPlain bool
		env                         string
	}{
		{"plaintext", "", false, false, false, ""},
		{"stores alone", stores, false, false, false, ""},
		{"step 1: portUnification", stores + "portUnification=true\n", true, true, true, ""},
		{"step 2: and sslQuorum", stores + "portUnification=true\nsslQuorum=true\n", true, true, false, ""},
		{"step 3: sslQuorum alone", stores + "portUnification=false\nsslQuorum=true\n", true, false, false, ""},
		// ZooKeeper reads portUnification from zoo.cfg only.
		{"system property is not the key", stores, false, false, false, "SERVER_JVMFLAGS=-Dzookeeper.portUnification=true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var env []string
			if tc.env != "" {
				env = append(env, tc.env)
			}
			c, err := cfgFrom(t, tc.cfg, env...)
			if err != nil {
				t.Fatal(err)
			}
			qc, _, _, err := configs(c, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			if (qc.PeerTLS != nil) != tc.peerTLS || qc.PortUnification != tc.unified || qc.DialPlaintext != tc.dialPlain {
				t.Fatalf("PeerTLS set %v, PortUnification %v, DialPlaintext %v; want %v, %v, %v",
					qc.PeerTLS != nil, qc.PortUnification, qc.DialPlaintext, tc.peerTLS, tc.unified, tc.dialPlain)
			}
		})
	}
}

// TestQuorumSASLConfig: quorum.auth.enableSasl reads the JAAS file's
// QuorumServer users and QuorumLearner credentials (or the sections the
// saslLoginContext keys name) into the member's PeerAuth, with
// learnerRequireSasl and serverRequireSasl; a missing section, a learner
// without a password and a Kerberos section whose keytab is missing stop
// zkd with an error naming them.
func TestQuorumSASLConfig(t *testing.T) {
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	if err := os.WriteFile(jaas, []byte(`QuorumServer { org.apache.zookeeper.server.auth.DigestLoginModule required user_learner="s3cret" user_other="x"; };
QuorumLearner { org.apache.zookeeper.server.auth.DigestLoginModule required username="learner" password="s3cret"; };
NoPassword { org.apache.zookeeper.server.auth.DigestLoginModule required username="learner"; };
KrbServer { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="/none.keytab" principal="zkquorum/localhost@R"; };
`), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := "SERVER_JVMFLAGS=-Djava.security.auth.login.config=" + jaas
	tests := []struct {
		name, cfg      string
		wantErr        string
		learn, require bool
	}{
		{"enabled", "quorum.auth.enableSasl=true\n", "", false, false},
		{"learner", "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\n", "", true, false},
		{"required", "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=true\n", "", true, true},
		{"missing section", "quorum.auth.enableSasl=true\nquorum.auth.learner.saslLoginContext=Nope\n", "has no Nope section", false, false},
		{"no password", "quorum.auth.enableSasl=true\nquorum.auth.learner.saslLoginContext=NoPassword\n", "needs username and password", false, false},
		{"kerberos keytab missing", "quorum.auth.enableSasl=true\nquorum.auth.server.saslLoginContext=KrbServer\n", "keyTab /none.keytab", false, false},
		{"kerberos learner keytab missing", "quorum.auth.enableSasl=true\nquorum.auth.learner.saslLoginContext=KrbServer\n", "section KrbServer: keyTab /none.keytab", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := cfgFrom(t, tc.cfg, flags)
			if err != nil {
				t.Fatal(err)
			}
			var qc quorum.Config
			err = quorumSASL(c, &qc, zap.NewNop())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pa, ok := qc.PeerAuth.(*peerAuth)
			if !ok {
				t.Fatalf("PeerAuth = %T", qc.PeerAuth)
			}
			if pa.learner.user != "learner" || pa.learner.password != "s3cret" || pa.users.Passwords["other"] != "x" || pa.learn != tc.learn || pa.require != tc.require {
				t.Errorf("PeerAuth = %+v", pa)
			}
			if lc, err := pa.Learner("127.0.0.1"); err != nil || (lc != nil) != tc.learn {
				t.Errorf("Learner() = %v, %v with learnerRequireSasl=%v", lc, err, tc.learn)
			}
		})
	}
}
