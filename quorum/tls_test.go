package quorum

import (
	"crypto/x509/pkix"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zkd/zkd/server/tlsconf"
	"github.com/zkd/zkd/server/tlsconf/tlstest"
)

// TestPeerTLS: the election listener takes a member whose certificate the
// CA signed and, with hostname verification, names the address it comes
// from; it refuses one that does not (ssl.quorum.hostnameVerification) and
// one from another CA.
func TestPeerTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	other := tlstest.NewCA(t, "other")
	member := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "member"}})
	elsewhere := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "elsewhere"}, DNSNames: []string{"zk9.example"}})
	stranger := other.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "stranger"}})
	trust := ca.WritePEM(t, dir, "ca")
	peerTLS := func(cert *tlstest.Cert, verifyNames bool) PeerTLS {
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
		r, err := tlsconf.NewReloader(o, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		name        string
		client      *tlstest.Cert
		verifyNames bool
		ok          bool
	}{
		{"trusted, names its address", member, true, true},
		{"trusted, names another host", elsewhere, true, false},
		{"trusted, names another host, no verification", elsewhere, false, true},
		{"other CA", stranger, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := &peerListener{Listener: raw, tls: peerTLS(member, tc.verifyNames)}
			defer ln.Close()
			go func() {
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
			}()
			c, err := dialTLS(peerTLS(tc.client, true), ln.Addr().String(), 5*time.Second)
			if err == nil {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err = c.Write([]byte{1}); err == nil {
					var b [1]byte
					_, err = io.ReadFull(c, b[:])
				}
			}
			if (err == nil) != tc.ok {
				t.Fatalf("error %v, want success %v", err, tc.ok)
			}
		})
	}
}
