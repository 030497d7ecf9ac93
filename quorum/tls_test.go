package quorum

import (
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/zkd/zkd/zab/tlsconf"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// testPeerTLS returns the quorum stores of a member presenting cert and
// trusting the certificates in the PEM file trust.
func testPeerTLS(t *testing.T, dir string, cert *tlstest.Cert, trust string, verifyNames bool, reload time.Duration) *tlsconf.Reloader {
	t.Helper()
	props := map[string]string{
		"zookeeper.ssl.quorum.keyStore.location":   cert.WritePEM(t, dir, cert.Cert.Subject.CommonName),
		"zookeeper.ssl.quorum.trustStore.location": trust,
	}
	if !verifyNames {
		props["zookeeper.ssl.quorum.hostnameVerification"] = "false"
	}
	o, err := tlsconf.FromProps(func(k string) (string, bool) { v, ok := props[k]; return v, ok }, "zookeeper.ssl.quorum.")
	if err != nil {
		t.Fatal(err)
	}
	r, err := tlsconf.NewReloader(o, reload, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testMember is a Member with just what its ports need, logging to an
// observer.
func testMember(cfg Config) (*Member, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.InfoLevel)
	cfg.TickTime, cfg.InitLimit, cfg.SyncLimit = 100*time.Millisecond, 10, 5
	return &Member{cfg: cfg, timing: cfg.Timing(), log: zap.New(core)}, logs
}

// echoOnce serves one connection of ln: it echoes one byte.
func echoOnce(ln net.Listener) {
	c, err := ln.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err == nil {
		c.Write(b[:])
	}
}

// roundTrip dials addr as dialer and sends one byte, which must come back.
func roundTrip(dialer *Member, addr string) error {
	c, err := dialer.dialPeer(addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err = c.Write([]byte{1}); err != nil {
		return err
	}
	var b [1]byte
	_, err = io.ReadFull(c, b[:])
	return err
}

// TestPeerPorts: a member port admits or refuses a dialing member by the
// two members' sslQuorum and portUnification (ZooKeeper's three-step
// rolling upgrade), by its certificate and, with hostname verification,
// by the address the certificate names; each refusal leaves a WARN line
// naming the disagreement.
func TestPeerPorts(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	other := tlstest.NewCA(t, "other")
	member := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "member"}})
	elsewhere := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "elsewhere"}, DNSNames: []string{"zk9.example"}})
	stranger := other.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "stranger"}})
	trust := ca.WritePEM(t, dir, "ca")
	stores := func(c *tlstest.Cert, verify bool) PeerTLS { return testPeerTLS(t, dir, c, trust, verify, 0) }

	plaintext := Config{}
	tlsOnly := Config{PeerTLS: stores(member, true)}
	unifiedPlainDial := Config{PeerTLS: stores(member, true), PortUnification: true, DialPlaintext: true}
	unifiedTLSDial := Config{PeerTLS: stores(member, true), PortUnification: true}
	tests := []struct {
		name     string
		listener Config
		dialer   Config
		ok       bool
		warn     string // in the listener's WARN line when refused
	}{
		{"plaintext to plaintext", plaintext, plaintext, true, ""},
		{"TLS to plaintext-only", plaintext, tlsOnly, false, "portUnification=true"},
		{"step 1: plaintext to unified", unifiedPlainDial, plaintext, true, ""},
		{"step 1: unified to unified, plaintext", unifiedPlainDial, unifiedPlainDial, true, ""},
		{"step 2: TLS to unified", unifiedPlainDial, unifiedTLSDial, true, ""},
		{"step 2: plaintext to unified", unifiedTLSDial, unifiedPlainDial, true, ""},
		{"step 3: TLS to TLS-only", tlsOnly, unifiedTLSDial, true, ""},
		{"step 3: plaintext to TLS-only", tlsOnly, unifiedPlainDial, false, "sslQuorum=true and portUnification=false"},
		{"untrusted certificate to unified", unifiedTLSDial, Config{PeerTLS: stores(stranger, false)}, false, "TLS handshake failed"},
		{"untrusted certificate to TLS-only", tlsOnly, Config{PeerTLS: stores(stranger, false)}, false, "TLS handshake failed"},
		{"names another host", tlsOnly, Config{PeerTLS: stores(elsewhere, false)}, false, "does not name"},
		{"names another host, no verification", Config{PeerTLS: stores(member, false)}, Config{PeerTLS: stores(elsewhere, false)}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, logs := testMember(tc.listener)
			ln, err := m.listenElection("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			served := make(chan struct{})
			go func() { defer close(served); echoOnce(ln) }()
			d, _ := testMember(tc.dialer)
			err = roundTrip(d, ln.Addr().String())
			<-served
			if (err == nil) != tc.ok {
				t.Fatalf("error %v, want success %v", err, tc.ok)
			}
			warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
			if tc.ok {
				if len(warns) > 0 {
					t.Fatalf("admitted with a warning: %s", warns[0].Message)
				}
				return
			}
			if len(warns) != 1 {
				t.Fatalf("warnings %v, want one naming %q", warns, tc.warn)
			}
			if text := fmt.Sprint(warns[0].Message, warns[0].ContextMap()); !strings.Contains(text, tc.warn) {
				t.Fatalf("warning %s, want one naming %q", text, tc.warn)
			}
		})
	}
}

// TestPeerTLSReload: the quorum trust store and key store are re-read
// when their files change (what sslQuorumReloadCertFiles asks of
// ZooKeeper), with no restart: a member from a CA the listener does not
// trust yet is refused, then admitted once the trust store names that CA,
// and the listener then presents its renewed certificate.
func TestPeerTLSReload(t *testing.T) {
	dir := t.TempDir()
	oldCA := tlstest.NewCA(t, "old")
	newCA := tlstest.NewCA(t, "new")
	listenerCert := oldCA.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "listener"}})
	// The dialer trusts both CAs and holds a certificate from the new one.
	both := newCA.WritePEM(t, dir, "both")
	oldPEM, err := os.ReadFile(oldCA.WritePEM(t, dir, "old"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(both, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(oldPEM)
	f.Close()
	dialer, _ := testMember(Config{PeerTLS: testPeerTLS(t, dir, newCA.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "dialer"}}), both, true, 0)})

	trust := oldCA.WritePEM(t, dir, "listener-trust")
	m, _ := testMember(Config{PeerTLS: testPeerTLS(t, dir, listenerCert, trust, true, time.Millisecond)})
	ln, err := m.listenElection("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go echoOnce(&oneConn{c: c})
		}
	}()
	if err := roundTrip(dialer, ln.Addr().String()); err == nil {
		t.Fatal("a member from an untrusted CA was admitted")
	}
	if err := os.WriteFile(trust, []byte(mustRead(t, both)), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new trust store", func() bool { return roundTrip(dialer, ln.Addr().String()) == nil })

	newCA.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "listener"}, DNSNames: []string{"renewed.example"}}).WritePEM(t, dir, "listener")
	// The renewed certificate no longer names 127.0.0.1: the dialer's
	// hostname check now fails, which shows it was presented.
	waitFor(t, "the renewed key store", func() bool { return roundTrip(dialer, ln.Addr().String()) != nil })
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// oneConn is a listener that yields c once.
type oneConn struct {
	c    net.Conn
	done bool
}

func (o *oneConn) Accept() (net.Conn, error) {
	if o.done {
		return nil, net.ErrClosed
	}
	o.done = true
	return o.c, nil
}
func (o *oneConn) Close() error   { return nil }
func (o *oneConn) Addr() net.Addr { return o.c.LocalAddr() }

// TestRefusalLogLimited: a member redialing many times a second leaves one
// WARN line per host, port and reason, not one per connection.
func TestRefusalLogLimited(t *testing.T) {
	m, logs := testMember(Config{})
	for i := range 50 {
		m.refuse("127.0.0.2:"+fmt.Sprint(40000+i), "quorum", "plaintext member refused", nil)
	}
	m.refuse("127.0.0.2:1", "election", "plaintext member refused", nil)
	m.refuse("127.0.0.3:1", "quorum", "plaintext member refused", nil)
	m.refuse("127.0.0.2:1", "quorum", "TLS handshake failed", io.EOF)
	if n := logs.FilterLevelExact(zapcore.WarnLevel).Len(); n != 4 {
		t.Fatalf("%d WARN lines, want 4 (one per host, port and reason)", n)
	}
}
