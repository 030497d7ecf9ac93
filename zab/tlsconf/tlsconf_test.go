package tlsconf_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/asn1"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/zab/tlsconf"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// props returns a property lookup over m, keys given without the prefix.
func props(prefix string, m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		k, ok := strings.CutPrefix(name, prefix)
		if !ok {
			return "", false
		}
		v, ok := m[k]
		return v, ok
	}
}

// serve runs a TLS echo of one byte per connection on loopback with conf
// and returns its address.
func serve(t *testing.T, wrap func(net.Listener) net.Listener) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln = wrap(ln)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				var b [1]byte
				if _, err := io.ReadFull(c, b[:]); err == nil {
					c.Write(b[:])
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip dials addr with conf (nil: plaintext) and echoes one byte.
func roundTrip(addr string, conf *tls.Config) error {
	var (
		c   net.Conn
		err error
	)
	d := &net.Dialer{Timeout: 5 * time.Second}
	if conf == nil {
		c, err = d.Dial("tcp", addr)
	} else {
		c, err = tls.DialWithDialer(d, "tcp", addr, conf)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte{'x'}); err != nil {
		return err
	}
	var b [1]byte
	_, err = io.ReadFull(c, b[:])
	return err
}

// TestStoresAndClientAuth: a server configured from each store type
// (PEM, PKCS12, JKS, by type or by extension) completes handshakes with
// trusted clients and refuses those ssl.clientAuth, the trust store or
// the validity period rule out.
func TestStoresAndClientAuth(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	other := tlstest.NewCA(t, "other CA")
	srv := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "server"}})
	cli := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "client"}})
	stranger := other.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "stranger"}})
	expired := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "old"}, Expired: true})
	stores := map[string][2]string{ // type → key store, trust store
		"PEM":    {srv.WritePEM(t, dir, "srv"), ca.WritePEM(t, dir, "ca")},
		"PKCS12": {srv.WritePKCS12(t, dir, "srv"), ca.WritePKCS12(t, dir, "ca")},
		"JKS":    {srv.WriteJKS(t, dir, "srv"), ca.WriteJKS(t, dir, "ca")},
	}
	cert := func(c *tlstest.Cert) *tls.Certificate { x := c.TLS(); return &x }
	tests := []struct {
		name, typ, clientAuth string
		byExt                 bool
		client                *tls.Certificate
		ok                    bool
	}{
		{"pem need with cert", "PEM", "", false, cert(cli), true},
		{"pkcs12 need with cert", "PKCS12", "need", false, cert(cli), true},
		{"jks need with cert", "JKS", "need", false, cert(cli), true},
		{"jks by extension", "JKS", "need", true, cert(cli), true},
		{"p12 by extension", "PKCS12", "need", true, cert(cli), true},
		{"need without cert", "PEM", "need", false, nil, false},
		{"want without cert", "PEM", "want", false, nil, true},
		// A client offers only a certificate the server's CAs issued
		// (Go and Java alike), so "want" sees none and lets it in.
		{"want with untrusted cert", "PEM", "want", false, cert(stranger), true},
		{"need with untrusted cert", "JKS", "need", false, cert(stranger), false},
		{"need with expired cert", "PKCS12", "need", false, cert(expired), false},
		{"none with untrusted cert", "PEM", "none", false, cert(stranger), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]string{
				"keyStore.location":   stores[tc.typ][0],
				"keyStore.password":   tlstest.Password,
				"trustStore.location": stores[tc.typ][1],
				"trustStore.password": tlstest.Password,
			}
			if tc.typ == "PEM" {
				delete(m, "keyStore.password") // the key is not encrypted
			}
			if !tc.byExt {
				m["keyStore.type"], m["trustStore.type"] = tc.typ, strings.ToLower(tc.typ)
			}
			if tc.clientAuth != "" {
				m["clientAuth"] = tc.clientAuth
			}
			o, err := tlsconf.FromProps(props("zookeeper.ssl.", m), "zookeeper.ssl.")
			if err != nil {
				t.Fatal(err)
			}
			r, err := tlsconf.NewReloader(o, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			addr := serve(t, func(ln net.Listener) net.Listener { return tlsconf.SecureListener(ln, r.ServerConfig()) })
			err = roundTrip(addr, tlsconf.ClientConfigFor(o, tc.client, ca.Pool(), "127.0.0.1"))
			if (err == nil) != tc.ok {
				t.Fatalf("handshake error %v, want success %v", err, tc.ok)
			}
		})
	}
}

// TestFromPropsRefuses: settings zkd cannot honour fail, naming the key.
func TestFromPropsRefuses(t *testing.T) {
	tests := []struct {
		key, val, want string
	}{
		{"crl", "true", "ssl.crl"},
		{"ocsp", "true", "ssl.ocsp"},
		{"context.supplier.class", "com.example.Supplier", "context.supplier.class"},
		{"clientAuth", "sometimes", "clientAuth"},
		{"protocol", "SSLv3", "SSLv3"},
		{"enabledProtocols", "TLSv1.1,TLSv1.3", "contiguous"},
		{"ciphersuites", "TLS_RSA_WITH_NULL_MD5", "TLS_RSA_WITH_NULL_MD5"},
		{"authProvider", "custom", "authProvider"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			_, err := tlsconf.FromProps(props("zookeeper.ssl.", map[string]string{tc.key: tc.val}), "zookeeper.ssl.")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
	o, err := tlsconf.FromProps(props("zookeeper.ssl.", map[string]string{"crl": "false", "enabledProtocols": "TLSv1.3, TLSv1.2"}), "zookeeper.ssl.")
	if err != nil || o.ClientAuth != "need" || !o.HostnameVerification {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
}

// TestProtocols: ssl.protocol alone enables that one version (TLSv1.2 by
// default); enabledProtocols widens it.
func TestProtocols(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	srv := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "server"}})
	keyStore := srv.WritePEM(t, dir, "srv")
	tests := []struct {
		props     map[string]string
		clientMax uint16
		ok        bool
	}{
		{map[string]string{}, tls.VersionTLS12, true},
		{map[string]string{}, tls.VersionTLS13, true}, // negotiates 1.2
		{map[string]string{"protocol": "TLSv1.3"}, tls.VersionTLS12, false},
		{map[string]string{"enabledProtocols": "TLSv1.2,TLSv1.3"}, tls.VersionTLS12, true},
	}
	for i, tc := range tests {
		tc.props["keyStore.location"], tc.props["clientAuth"] = keyStore, "none"
		o, err := tlsconf.FromProps(props("zookeeper.ssl.", tc.props), "zookeeper.ssl.")
		if err != nil {
			t.Fatal(err)
		}
		r, err := tlsconf.NewReloader(o, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		addr := serve(t, func(ln net.Listener) net.Listener { return tlsconf.SecureListener(ln, r.ServerConfig()) })
		err = roundTrip(addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", MaxVersion: tc.clientMax})
		if (err == nil) != tc.ok {
			t.Errorf("case %d %v: error %v, want success %v", i, tc.props, err, tc.ok)
		}
	}
}

// TestReload: rewriting the key store makes the next handshake present
// the new certificate; a broken file keeps the old one.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	first := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "first"}})
	second := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "second"}})
	path := first.WritePEM(t, dir, "srv")
	o, err := tlsconf.FromProps(props("zookeeper.ssl.", map[string]string{"keyStore.location": path, "clientAuth": "none"}), "zookeeper.ssl.")
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 10)
	r, err := tlsconf.NewReloader(o, time.Millisecond, func(err error) { failed <- err })
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, func(ln net.Listener) net.Listener { return tlsconf.SecureListener(ln, r.ServerConfig()) })
	peer := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := peer(); got != "first" {
		t.Fatalf("before reload: %s", got)
	}
	second.WritePEM(t, dir, "srv")
	deadline := time.Now().Add(10 * time.Second)
	for peer() != "second" {
		if time.Now().After(deadline) {
			t.Fatal("new certificate never served")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	peer() // reloads are checked at handshakes
	select {
	case <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("broken key store not reported")
	}
	if got := peer(); got != "second" {
		t.Fatalf("after a broken file: %s, want the previous certificate", got)
	}
}

// TestUnifiedListener: one port serves a TLS client and a plaintext one.
func TestUnifiedListener(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	srv := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "server"}})
	o, err := tlsconf.FromProps(props("zookeeper.ssl.", map[string]string{"keyStore.location": srv.WritePEM(t, dir, "srv"), "clientAuth": "none"}), "zookeeper.ssl.")
	if err != nil {
		t.Fatal(err)
	}
	r, err := tlsconf.NewReloader(o, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ul := tlsconf.UnifiedListener(ln, r.ServerConfig())
	defer ul.Close()
	secure := make(chan bool, 2)
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				uc := c.(*tlsconf.UnifiedConn)
				ctx, cancel := contextWithTimeout(5 * time.Second)
				defer cancel()
				if err := uc.HandshakeContext(ctx); err != nil {
					return
				}
				secure <- uc.ConnectionState().HandshakeComplete
				var b [1]byte
				if _, err := io.ReadFull(c, b[:]); err == nil {
					c.Write(b[:])
				}
			}()
		}
	}()
	if err := roundTrip(ln.Addr().String(), nil); err != nil {
		t.Fatalf("plaintext: %v", err)
	}
	if s := <-secure; s {
		t.Fatal("plaintext connection reported as TLS")
	}
	if err := roundTrip(ln.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}); err != nil {
		t.Fatalf("TLS: %v", err)
	}
	if s := <-secure; !s {
		t.Fatal("TLS connection reported as plaintext")
	}
}

// TestSubjectName: subjects print as Java's X500Principal.getName().
func TestSubjectName(t *testing.T) {
	oid := func(o ...int) asn1.ObjectIdentifier { return o }
	raw := func(rdns ...[]pkix.AttributeTypeAndValue) []byte {
		var seq pkix.RDNSequence
		for _, r := range rdns {
			seq = append(seq, r)
		}
		b, err := asn1.Marshal(seq)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	atv := func(o asn1.ObjectIdentifier, v any) []pkix.AttributeTypeAndValue {
		return []pkix.AttributeTypeAndValue{{Type: o, Value: v}}
	}
	ca := tlstest.NewCA(t, "ca")
	tests := []struct {
		name    string
		subject []byte
		want    string
	}{
		{"order", raw(atv(oid(2, 5, 4, 6), "US"), atv(oid(2, 5, 4, 10), "Acme"), atv(oid(2, 5, 4, 11), "Eng"), atv(oid(2, 5, 4, 3), "alice")),
			"CN=alice,OU=Eng,O=Acme,C=US"},
		{"escapes", raw(atv(oid(2, 5, 4, 3), `a,b+c="d"<e>;f\g=h#i`)), `CN=a\,b\+c\=\"d\"\<e\>\;f\\g\=h\#i`},
		{"spaces", raw(atv(oid(2, 5, 4, 3), " x ")), `CN=\ x\ `},
		{"dc uid", raw(atv(oid(0, 9, 2342, 19200300, 100, 1, 25), "com"), atv(oid(0, 9, 2342, 19200300, 100, 1, 1), "u1")), "UID=u1,DC=com"},
		{"email as oid", raw(atv(oid(1, 2, 840, 113549, 1, 9, 1), "a@b")), "1.2.840.113549.1.9.1=#0c03614062"},
		{"multi-valued", raw([]pkix.AttributeTypeAndValue{{Type: oid(2, 5, 4, 3), Value: "x"}, {Type: oid(2, 5, 4, 11), Value: "y"}}), "CN=x+OU=y"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ca.Issue(t, tlstest.Options{RawSubject: tc.subject})
			got, err := tlsconf.SubjectName(c.Cert)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
