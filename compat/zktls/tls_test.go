package zktls

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// pki is one test's certificates and store files.
type pki struct {
	ca, other                   *tlstest.CA
	server, alice, bob, expired *tlstest.Cert
	stranger                    *tlstest.Cert
	dir                         string
}

// aliceSubject is alice's subject as ZooKeeper prints it (RFC 2253).
const aliceSubject = "CN=alice,OU=dev,O=zkd test"

func newPKI(t *testing.T) *pki {
	p := &pki{dir: t.TempDir()}
	p.ca = tlstest.NewCA(t, "zkd test CA")
	p.other = tlstest.NewCA(t, "someone else's CA")
	p.server = p.ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "localhost"}})
	p.alice = p.ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"dev"}, Organization: []string{"zkd test"}}})
	p.bob = p.ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "bob"}})
	p.expired = p.ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "alice"}, Expired: true})
	p.stranger = p.other.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "alice"}})
	return p
}

// storeCfg returns zoo.cfg lines naming the server's key store and the CA
// trust store in the given format.
func (p *pki) storeCfg(t *testing.T, typ string) map[string]string {
	var key, trust string
	switch typ {
	case "PEM":
		key, trust = p.server.WritePEM(t, p.dir, "server"), p.ca.WritePEM(t, p.dir, "ca")
	case "PKCS12":
		key, trust = p.server.WritePKCS12(t, p.dir, "server"), p.ca.WritePKCS12(t, p.dir, "ca")
	case "JKS":
		key, trust = p.server.WriteJKS(t, p.dir, "server"), p.ca.WriteJKS(t, p.dir, "ca")
	}
	cfg := map[string]string{
		"ssl.keyStore.location":   key,
		"ssl.keyStore.password":   tlstest.Password,
		"ssl.keyStore.type":       typ,
		"ssl.trustStore.location": trust,
		"ssl.trustStore.password": tlstest.Password,
		"ssl.trustStore.type":     typ,
	}
	if typ == "PEM" {
		// PEM keys here are not encrypted: no password (ZooKeeper would
		// try to decrypt the key with it).
		delete(cfg, "ssl.keyStore.password")
		delete(cfg, "ssl.trustStore.password")
	}
	return cfg
}

// clientTLS returns a client config presenting cert (nil: none) and
// trusting the test CA.
func (p *pki) clientTLS(cert *tlstest.Cert) *tls.Config {
	c := &tls.Config{RootCAs: p.ca.Pool(), ServerName: "127.0.0.1"}
	if cert != nil {
		c.Certificates = []tls.Certificate{cert.TLS()}
	}
	return c
}

// dialer is a go-zk Dialer speaking TLS with conf.
func dialer(conf *tls.Config) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		// go-zk's connect timeout (1s) bounds the dial; the handshake
		// with a busy ZooKeeper may take longer.
		return tls.DialWithDialer(&net.Dialer{Timeout: max(timeout, 15*time.Second)}, network, addr, conf)
	}
}

type testLogger struct{ t *testing.T }

func (l testLogger) Printf(format string, args ...any) { l.t.Logf("go-zk: "+format, args...) }

// connect opens a go-zk session over TLS (conf nil: plaintext) and waits
// for it, or returns an error when none comes within 45s.
func connect(t *testing.T, addr string, conf *tls.Config) (*zk.Conn, error) {
	var (
		c      *zk.Conn
		events <-chan zk.Event
		err    error
	)
	if conf != nil {
		c, events, err = zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(testLogger{t}), zk.WithDialer(dialer(conf)))
	} else {
		c, events, err = zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(testLogger{t}))
	}
	if err != nil {
		return nil, err
	}
	timeout := time.After(45 * time.Second) // ZooKeeper builds an SSL context per connection: slow on a busy machine
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				t.Cleanup(c.Close)
				return c, nil
			}
		case <-timeout:
			c.Close()
			return nil, errors.New("no session within 45s")
		}
	}
}

// start starts kind with cfg, plus the lines every test here needs: a
// secure port beside the plaintext one (zkproc checks readiness on the
// latter), Netty (ZooKeeper serves TLS only with it) and the x509
// provider. A key given an empty value in cfg is left out of zoo.cfg.
func start(t *testing.T, kind zkproc.Kind, cfg map[string]string, env ...string) (s *zkproc.Server, secureAddr string) {
	t.Helper()
	port := zkproc.FreePort(t)
	extra := map[string]string{
		"secureClientPort":  strconv.Itoa(port),
		"serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
		"authProvider.x509": "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
	}
	for k, v := range cfg {
		if v == "" {
			delete(extra, k)
			continue
		}
		extra[k] = v
	}
	opts := zkproc.Options{ExtraCfg: extra, Env: env}
	if kind == zkproc.KindZooKeeper {
		for _, e := range env {
			if v, ok := strings.CutPrefix(e, "SERVER_JVMFLAGS="); ok {
				opts.JVMFlags = strings.Fields(v)
			}
		}
		s = zkproc.StartZooKeeper(t, opts)
	} else {
		s = zkproc.StartZkd(t, opts)
	}
	return s, "127.0.0.1:" + strconv.Itoa(port)
}

var kinds = []zkproc.Kind{zkproc.KindZkd, zkproc.KindZooKeeper}

// TestIntegration_TLSStoresAndX509: for each store type, a client with a
// trusted certificate gets a session over TLS and the x509 identity of its
// subject: a znode with ACL x509:<subject> is hers, not bob's, nor a
// plaintext client's; the X509 super user reads it anyway.
func TestIntegration_TLSStoresAndX509(t *testing.T) {
	for _, kind := range kinds {
		for _, typ := range []string{"PEM", "PKCS12", "JKS"} {
			t.Run(string(kind)+"/"+typ, func(t *testing.T) {
				p := newPKI(t)
				cfg := p.storeCfg(t, typ)
				var env []string
				if typ == "JKS" {
					// The -D form, as SERVER_JVMFLAGS in zkServer.sh.
					env = []string{"SERVER_JVMFLAGS=-Dzookeeper.X509AuthenticationProvider.superUser=CN=bob"}
				} else {
					cfg["X509AuthenticationProvider.superUser"] = "CN=bob"
				}
				s, secure := start(t, kind, cfg, env...)
				alice, err := connect(t, secure, p.clientTLS(p.alice))
				if err != nil {
					t.Fatalf("alice over TLS: %v", err)
				}
				acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: aliceSubject}}
				if _, err := alice.Create("/mine", []byte("a"), 0, acl); err != nil {
					t.Fatalf("create with x509 ACL: %v", err)
				}
				if data, _, err := alice.Get("/mine"); err != nil || string(data) != "a" {
					t.Fatalf("alice reads her znode: %q, %v", data, err)
				}
				got, _, err := alice.GetACL("/mine")
				if err != nil || len(got) != 1 || got[0] != acl[0] {
					t.Fatalf("getACL: %v, %v", got, err)
				}
				// "auth" expands to the connection's x509 id.
				if _, err := alice.Create("/auth", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "auth"}}); err != nil {
					t.Fatalf("create with auth ACL: %v", err)
				}
				if got, _, err := alice.GetACL("/auth"); err != nil || len(got) != 1 || got[0].Scheme != "x509" || got[0].ID != aliceSubject {
					t.Fatalf("auth ACL: %v, %v", got, err)
				}
				plain, err := connect(t, s.Addr, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := plain.Get("/mine"); !errors.Is(err, zk.ErrNoAuth) {
					t.Fatalf("plaintext client reads alice's znode: %v, want no auth", err)
				}
				// multi: all or nothing under the x509 ACL.
				if _, err := plain.Multi(&zk.SetDataRequest{Path: "/mine", Data: []byte("p"), Version: -1}); !errors.Is(err, zk.ErrNoAuth) {
					t.Fatalf("plaintext multi on alice's znode: %v, want no auth", err)
				}
				if _, err := alice.Multi(&zk.SetDataRequest{Path: "/mine", Data: []byte("a"), Version: -1},
					&zk.CreateRequest{Path: "/mine/child", Data: nil, Acl: acl}); err != nil {
					t.Fatalf("alice's multi: %v", err)
				}
				if err := plain.AddAuth("x509", nil); err == nil {
					t.Fatal("addauth x509 without a certificate succeeded")
				}
				// bob is the super user by his certificate.
				bob, err := connect(t, secure, p.clientTLS(p.bob))
				if err != nil {
					t.Fatalf("bob over TLS: %v", err)
				}
				if data, _, err := bob.Get("/mine"); err != nil || string(data) != "a" {
					t.Fatalf("super user bob reads alice's znode: %q, %v", data, err)
				}
				if err := alice.AddAuth("x509", []byte("ignored")); err != nil {
					t.Fatalf("addauth x509 with a certificate: %v", err)
				}
			})
		}
	}
}

// TestIntegration_TLSRefusals: an untrusted, expired or missing client
// certificate (ssl.clientAuth=need, ZooKeeper's default), a plaintext
// client on the TLS port and a client that never completes its handshake
// are each refused or closed, while a good client keeps being served.
func TestIntegration_TLSRefusals(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			p := newPKI(t)
			s, secure := start(t, kind, p.storeCfg(t, "PKCS12"))
			_, port, _ := net.SplitHostPort(secure)
			if conf, err := s.FourLetter("conf"); err != nil || !strings.Contains(conf, "secureClientPort="+port+"\n") {
				t.Fatalf("conf does not report secureClientPort=%s: %v\n%s", port, err, conf)
			}
			good, err := connect(t, secure, p.clientTLS(p.alice))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := good.Create("/n", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			// A client stuck before its handshake: it must not hold up others,
			// and the server must close it.
			idle, err := net.Dial("tcp", secure)
			if err != nil {
				t.Fatal(err)
			}
			defer idle.Close()
			bad := map[string]*tls.Config{
				"no certificate":        p.clientTLS(nil),
				"expired certificate":   p.clientTLS(p.expired),
				"untrusted certificate": p.clientTLS(p.stranger),
				"untrusted server":      {RootCAs: p.other.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{p.alice.TLS()}},
			}
			for name, conf := range bad {
				if err := tlsRoundTrip(secure, conf); err == nil {
					t.Errorf("%s: TLS connection served", name)
				}
				if _, err := good.Set("/n", []byte(name), -1); err != nil {
					t.Fatalf("good client after %s: %v", name, err)
				}
			}
			// Each refused handshake is counted, by ZooKeeper 3.8 as a
			// failed authentication too, and none is left outstanding
			// but the idle client's.
			awaitMntr(t, s, "zk_unsuccessful_handshake", func(n int64) bool { return n >= int64(len(bad)) })
			awaitMntr(t, s, "zk_auth_failed_count", func(n int64) bool { return n >= int64(len(bad)) })
			awaitMntr(t, s, "zk_outstanding_tls_handshake", func(n int64) bool { return n <= 1 })
			// Plaintext on the TLS port: a ConnectRequest frame gets no answer.
			if err := zkproc.Handshake(secure, 5*time.Second); err == nil {
				t.Error("plaintext handshake on the secure port succeeded")
			}
			idle.SetReadDeadline(time.Now().Add(60 * time.Second))
			if _, err := io.Copy(io.Discard, idle); err != nil {
				t.Errorf("idle connection: %v, want closed by the server", err)
			}
			if _, _, err := good.Get("/n"); err != nil {
				t.Fatalf("good client at the end: %v", err)
			}
		})
	}
}

// awaitMntr waits until mntr's key on s satisfies ok, and fails the test
// with the last value if it does not within 30s (the server counts a
// refused handshake after the client has seen it fail).
func awaitMntr(t *testing.T, s *zkproc.Server, key string, ok func(int64) bool) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, err := s.FourLetter("mntr")
		if err != nil {
			t.Fatalf("mntr: %v", err)
		}
		last = ""
		for _, l := range strings.Split(out, "\n") {
			if k, v, found := strings.Cut(l, "\t"); found && k == key {
				last = v
			}
		}
		if n, err := strconv.ParseInt(last, 10, 64); err == nil && ok(n) {
			return
		}
	}
	t.Errorf("%s: mntr %s = %q", s.Kind, key, last)
}

// tlsRoundTrip dials with conf and reads, returning the first error: a
// refused handshake shows at the dial (TLS 1.2) or the first read.
func tlsRoundTrip(addr string, conf *tls.Config) error {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, conf)
	if err != nil {
		return err
	}
	defer c.Close()
	// A ConnectRequest with protocol 0, timeout 30s, no session.
	req := []byte{0, 0, 0, 44, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x75, 0x30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16}
	req = append(req, make([]byte, 16)...)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req); err != nil {
		return err
	}
	var hdr [4]byte
	_, err = io.ReadFull(c, hdr[:])
	return err
}

// TestIntegration_TLSPortUnification: with client.portUnification=true the
// client port serves a TLS client and a plaintext one side by side.
func TestIntegration_TLSPortUnification(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			p := newPKI(t)
			cfg := p.storeCfg(t, "JKS")
			cfg["client.portUnification"] = "true"
			s, _ := start(t, kind, cfg)
			secure, err := connect(t, s.Addr, p.clientTLS(p.alice))
			if err != nil {
				t.Fatalf("TLS on the unified port: %v", err)
			}
			plain, err := connect(t, s.Addr, nil)
			if err != nil {
				t.Fatalf("plaintext on the unified port: %v", err)
			}
			if _, err := secure.Create("/u", []byte("tls"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: aliceSubject}}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := plain.Get("/u"); !errors.Is(err, zk.ErrNoAuth) {
				t.Fatalf("plaintext client reads an x509 znode: %v", err)
			}
			if data, _, err := secure.Get("/u"); err != nil || string(data) != "tls" {
				t.Fatalf("TLS client: %q, %v", data, err)
			}
		})
	}
}

// TestIntegration_TLSReload: replacing the key store file makes new
// handshakes present the new certificate while an established session
// carries on, on the same connection.
func TestIntegration_TLSReload(t *testing.T) {
	p := newPKI(t)
	cfg := p.storeCfg(t, "PEM")
	_, secure := start(t, zkproc.KindZkd, cfg)
	sess, err := connect(t, secure, p.clientTLS(p.alice))
	if err != nil {
		t.Fatal(err)
	}
	id := sess.SessionID()
	peerCN := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", secure, p.clientTLS(p.alice))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := peerCN(); cn != "localhost" {
		t.Fatalf("first certificate: %s", cn)
	}
	renewed := p.ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "renewed"}})
	renewed.WritePEM(t, p.dir, "server") // same path as storeCfg's
	deadline := time.Now().Add(30 * time.Second)
	for peerCN() != "renewed" {
		if time.Now().After(deadline) {
			t.Fatal("the renewed certificate was never presented")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := sess.Create("/after-reload", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("session after reload: %v", err)
	}
	if sess.SessionID() != id || sess.State() != zk.StateHasSession {
		t.Fatalf("session changed: %x → %x, %v", id, sess.SessionID(), sess.State())
	}
}

// TestIntegration_SessionlessTimeout: a plaintext connection that sends
// nothing is closed after zookeeper.nio.sessionlessCnxnTimeout (set to 1s
// here); ZooKeeper's NIO factory does the same.
func TestIntegration_SessionlessTimeout(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			env := []string{"SERVER_JVMFLAGS=-Dzookeeper.nio.sessionlessCnxnTimeout=1000"}
			var s *zkproc.Server
			if kind == zkproc.KindZooKeeper {
				s = zkproc.StartZooKeeper(t, zkproc.Options{JVMFlags: []string{"-Dzookeeper.nio.sessionlessCnxnTimeout=1000"}})
			} else {
				s = zkproc.StartZkd(t, zkproc.Options{Env: env})
			}
			c, err := net.Dial("tcp", s.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Far beyond the 1s asked for, far below zkd's former 40s.
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.Copy(io.Discard, c); err != nil {
				t.Fatalf("silent connection: %v, want closed by the server", err)
			}
		})
	}
}

// TestIntegration_SSLQuorum: a 3-member ensemble with sslQuorum=true
// replicates and forwards over mutual TLS; restarted with a certificate
// from a CA the others do not trust, a member is kept out (it never
// serves) while the other two go on taking writes. zkd and ZooKeeper 3.8
// alike.
func TestIntegration_SSLQuorum(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) { testSSLQuorum(t, kind) })
	}
}

func testSSLQuorum(t *testing.T, kind zkproc.Kind) {
	p := newPKI(t)
	quorumKS := p.server.WriteJKS(t, p.dir, "quorum")
	cfg := map[string]string{
		"sslQuorum":                      "true",
		"ssl.quorum.keyStore.location":   quorumKS,
		"ssl.quorum.keyStore.password":   tlstest.Password,
		"ssl.quorum.trustStore.location": p.ca.WritePEM(t, p.dir, "quorum-ca"),
	}
	var members []*zkproc.Server
	if kind == zkproc.KindZooKeeper {
		members = zkproc.StartZooKeeperEnsemble(t, 3, zkproc.Options{ExtraCfg: cfg, TickTime: 200})
	} else {
		members = zkproc.StartZkdEnsemble(t, 3, zkproc.Options{ExtraCfg: cfg, TickTime: 200})
	}
	conns := make([]*zk.Conn, 3)
	for i, m := range members {
		c, err := connect(t, m.Addr, nil)
		if err != nil {
			t.Fatalf("member %d: %v", i+1, err)
		}
		conns[i] = c
	}
	// Writes through every member: the followers forward over TLS.
	for i, c := range conns {
		if _, err := c.Create("/q"+strconv.Itoa(i), []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create through member %d: %v", i+1, err)
		}
	}
	for i, c := range conns {
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for j := range conns {
			if _, _, err := c.Get("/q" + strconv.Itoa(j)); err != nil {
				t.Fatalf("member %d reads /q%d: %v", i+1, j, err)
			}
		}
	}

	// Member 3 comes back with an untrusted certificate.
	out := members[2]
	out.Stop()
	cfgText, err := os.ReadFile(out.CfgPath)
	if err != nil {
		t.Fatal(err)
	}
	strangerKS := p.stranger.WriteJKS(t, p.dir, "stranger")
	if err := os.WriteFile(out.CfgPath, []byte(strings.ReplaceAll(string(cfgText), quorumKS, strangerKS)), 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(out.Log())
	if err := out.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until it has tried the others and failed (zkd: "TLS handshake
	// … bad certificate"; ZooKeeper: "Cannot open channel" with an
	// SSLHandshakeException) and says it is not serving.
	refused := func() bool {
		log := out.Log()[before:]
		if !strings.Contains(log, "certificat") && !strings.Contains(log, "Cannot open channel") {
			return false
		}
		srvr, err := out.FourLetter("srvr")
		return err == nil && strings.Contains(srvr, "not currently serving")
	}
	deadline := time.Now().Add(120 * time.Second)
	for !refused() {
		if time.Now().After(deadline) {
			t.Fatalf("member 3 never reported a refused handshake:\n%s", out.Log()[before:])
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := zkproc.Handshake(out.Addr, 2*time.Second); err == nil {
		t.Fatal("the member with an untrusted certificate serves clients")
	}
	if _, err := conns[0].Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("the two trusted members stopped taking writes: %v", err)
	}
	if _, err := conns[1].Set("/after", []byte("x"), -1); err != nil {
		t.Fatalf("forwarded write on member 2: %v", err)
	}
}

// zkCliPath is Debian's zkCli.sh: ZooKeeper 3.8's Java client.
const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// TestIntegration_JavaClientTLS: ZooKeeper's own Java client (zkCli.sh)
// with zookeeper.client.secure=true over ClientCnxnSocketNetty, its key
// and trust stores in each of PEM, PKCS12 and JKS, reaches the secure
// port and acts as the x509 identity of its certificate.
func TestIntegration_JavaClientTLS(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			p := newPKI(t)
			_, secure := start(t, kind, p.storeCfg(t, "JKS"))
			stores := map[string][2]string{
				"PEM":    {p.alice.WritePEM(t, p.dir, "java-client"), p.ca.WritePEM(t, p.dir, "java-ca")},
				"PKCS12": {p.alice.WritePKCS12(t, p.dir, "java-client"), p.ca.WritePKCS12(t, p.dir, "java-ca")},
				"JKS":    {p.alice.WriteJKS(t, p.dir, "java-client"), p.ca.WriteJKS(t, p.dir, "java-ca")},
			}
			for _, typ := range []string{"PEM", "PKCS12", "JKS"} {
				flags := []string{
					"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
					// Debian's zkCli.sh classpath lacks netty-codec, which the
					// Netty client needs; the jars it uses must then come from
					// the same class loader.
					"-Xbootclasspath/a:" + nettyJars(),
					"-Dzookeeper.client.secure=true",
					"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
					"-Dzookeeper.ssl.keyStore.location=" + stores[typ][0],
					"-Dzookeeper.ssl.keyStore.type=" + typ,
					"-Dzookeeper.ssl.trustStore.location=" + stores[typ][1],
					"-Dzookeeper.ssl.trustStore.type=" + typ,
				}
				if typ != "PEM" {
					flags = append(flags, "-Dzookeeper.ssl.keyStore.password="+tlstest.Password,
						"-Dzookeeper.ssl.trustStore.password="+tlstest.Password)
				}
				node := "/java-" + typ
				script := "create " + node + " v auth::cdrwa\nget " + node + "\ngetAcl " + node + "\nwhoami\nquit\n"
				cmd := exec.Command(zkCliPath, "-server", secure)
				cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+strings.Join(flags, " "))
				cmd.Stdin = strings.NewReader(script)
				out, err := cmd.CombinedOutput()
				text := string(out)
				if err != nil || !strings.Contains(text, "Created "+node) || !strings.Contains(text, "\nv\n") ||
					!strings.Contains(text, "'x509,'"+strings.ReplaceAll(aliceSubject, ",", "%2C")) || !strings.Contains(text, "x509: "+aliceSubject) {
					t.Fatalf("%s stores: zkCli.sh over TLS: %v\n%s", typ, err, text)
				}
			}
		})
	}
}

// nettyJars is the boot class path the Java client's Netty socket needs.
func nettyJars() string {
	var jars []string
	for _, j := range []string{"buffer", "codec", "common", "handler", "resolver", "transport",
		"transport-native-epoll", "transport-native-unix-common"} {
		jars = append(jars, "/usr/share/java/netty-"+j+".jar")
	}
	return strings.Join(jars, ":")
}

// TestIntegration_AdminHTTPS: admin.forceHttps serves the admin commands
// over HTTPS only, with the ssl.quorum.* key store, and
// admin.portUnification serves HTTP and HTTPS on one port, as ZooKeeper
// 3.8's Jetty admin server does.
func TestIntegration_AdminHTTPS(t *testing.T) {
	for _, kind := range kinds {
		for _, mode := range []string{"forceHttps", "portUnification"} {
			t.Run(string(kind)+"/"+mode, func(t *testing.T) {
				p := newPKI(t)
				opts := zkproc.Options{AdminServer: true, ExtraCfg: map[string]string{
					"admin." + mode:                "true",
					"ssl.quorum.keyStore.location": p.server.WritePKCS12(t, p.dir, "admin"),
					"ssl.quorum.keyStore.password": tlstest.Password,
					// ZooKeeper's admin server will not start without one.
					"ssl.quorum.trustStore.location": p.ca.WritePEM(t, p.dir, "admin-ca"),
				}}
				var s *zkproc.Server
				if kind == zkproc.KindZooKeeper {
					s = zkproc.StartZooKeeper(t, opts)
				} else {
					s = zkproc.StartZkd(t, opts)
				}
				get := func(scheme string) error {
					c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: p.clientTLS(nil)}}
					resp, err := c.Get(scheme + "://" + s.AdminAddr + "/commands/ruok")
					if err != nil {
						return err
					}
					defer resp.Body.Close()
					body, _ := io.ReadAll(resp.Body)
					if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"command"`) {
						return fmt.Errorf("status %d: %s", resp.StatusCode, body)
					}
					return nil
				}
				var err error
				deadline := time.Now().Add(30 * time.Second)
				for err = get("https"); err != nil && time.Now().Before(deadline); err = get("https") {
					time.Sleep(200 * time.Millisecond) // ZooKeeper starts its admin server last
				}
				if err != nil {
					t.Fatalf("https: %v\n%s", err, s.Log())
				}
				err = get("http")
				if mode == "forceHttps" && err == nil {
					t.Fatal("plain http served with admin.forceHttps")
				}
				if mode == "portUnification" && err != nil {
					t.Fatalf("plain http with admin.portUnification: %v", err)
				}
			})
		}
	}
}
