package server

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

func TestIdentity(t *testing.T) {
	super := Digest("super:secret")
	s := startServer(t, func(c *Config) { c.SuperDigest = super })
	tests := []struct {
		scheme, cred string
		want         []jute.Id
		wantErr      bool
	}{
		{"digest", "alice:pw", []jute.Id{{Scheme: "digest", Id: Digest("alice:pw")}}, false},
		{"digest", "super:secret", nil, false}, // checked below: digest and super
		{"digest", "nopassword", nil, true},
		{"digest", ":pw", nil, true},
		{"ip", "127.0.0.1", nil, true},
		{"x509", "CN=a", nil, true},
		{"sasl", "bob", nil, true},
	}
	for _, tc := range tests {
		got, err := s.Identity(tc.scheme, tc.cred)
		if (err != nil) != tc.wantErr {
			t.Errorf("Identity(%s, %s): err = %v, want error %v", tc.scheme, tc.cred, err, tc.wantErr)
			continue
		}
		if tc.want != nil && !slices.Equal(got, tc.want) {
			t.Errorf("Identity(%s, %s) = %v, want %v", tc.scheme, tc.cred, got, tc.want)
		}
	}
	ids, _ := s.Identity("digest", "super:secret")
	if !slices.Contains(ids, jute.Id{Scheme: "super"}) || !slices.Contains(ids, jute.Id{Scheme: "digest", Id: super}) {
		t.Errorf("super identity = %v, want digest and super", ids)
	}
}

// TestX509Identity: a certificate maps as on the secure client port
// (x509:<RFC 2253 subject>, and super for X509AuthenticationProvider's
// superUser), and not at all without the x509 provider.
func TestX509Identity(t *testing.T) {
	ca := tlstest.NewCA(t, "identity test CA")
	alice := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "alice", Organization: []string{"zkd"}}})
	root := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "root"}})
	leaf := func(c *tlstest.Cert) *x509.Certificate {
		cert, err := x509.ParseCertificate(c.TLS().Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	off := startServer(t, nil)
	if _, _, err := off.X509Identity(leaf(alice)); err == nil {
		t.Error("X509Identity without the x509 provider: no error")
	}
	s := startServer(t, func(c *Config) { c.X509Auth, c.X509SuperUser = true, "CN=root" })
	subject, ids, err := s.X509Identity(leaf(alice))
	if err != nil || subject != "CN=alice,O=zkd" || !slices.Equal(ids, []jute.Id{{Scheme: "x509", Id: "CN=alice,O=zkd"}}) {
		t.Errorf("alice: %q %v %v", subject, ids, err)
	}
	_, ids, err = s.X509Identity(leaf(root))
	if err != nil || !slices.Contains(ids, jute.Id{Scheme: "super", Id: "CN=root"}) || !slices.Contains(ids, jute.Id{Scheme: "x509", Id: "CN=root"}) {
		t.Errorf("root: %v %v, want x509 and super", ids, err)
	}
}
