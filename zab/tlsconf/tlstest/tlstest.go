// Package tlstest makes certificates and key stores for tests at test time:
// a CA, certificates it signs, and the PEM, PKCS12 and JKS files ZooKeeper
// configurations name. No private key is ever committed.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Password protects every PKCS12 and JKS store this package writes.
const Password = "testpass"

// CA is a certificate authority made for one test.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// Cert is a certificate with its key, signed by a CA.
type Cert struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	CA   *CA
}

// nextSerial returns a random 120-bit serial number.
func nextSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err)
	}
	return n
}

// NewCA makes a self-signed CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"zkd test"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, Key: key}
}

// Options shape a certificate made by Issue.
type Options struct {
	// Subject is the certificate's subject; RawSubject, if set, wins.
	Subject    pkix.Name
	RawSubject []byte
	// Expired makes a certificate whose validity ended an hour ago.
	Expired bool
	// DNSNames, if set, replace the default names (127.0.0.1 and
	// localhost): the certificate then names no IP address.
	DNSNames []string
}

// Issue makes a certificate for 127.0.0.1 and localhost, usable by both
// servers and clients.
func (ca *CA) Issue(t testing.TB, o Options) *Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      o.Subject,
		RawSubject:   o.RawSubject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if len(o.DNSNames) > 0 {
		tmpl.DNSNames, tmpl.IPAddresses = o.DNSNames, nil
	}
	if o.Expired {
		tmpl.NotBefore = time.Now().Add(-48 * time.Hour)
		tmpl.NotAfter = time.Now().Add(-time.Hour)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &Cert{Cert: cert, Key: key, CA: ca}
}

// TLS returns the certificate for a tls.Config.
func (c *Cert) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{c.Cert.Raw}, PrivateKey: c.Key, Leaf: c.Cert}
}

// Pool returns a pool trusting the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// WritePEM writes the key and certificate to dir/name.pem (mode 0600).
func (c *Cert) WritePEM(t testing.TB, dir, name string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Cert.Raw})...)
	return write(t, dir, name+".pem", data)
}

// WritePKCS12 writes the key and certificate to dir/name.p12.
func (c *Cert) WritePKCS12(t testing.TB, dir, name string) string {
	t.Helper()
	data, err := pkcs12.Modern2023.Encode(c.Key, c.Cert, nil, Password)
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name+".p12", data)
}

// WriteJKS writes the key and certificate to dir/name.jks.
func (c *Cert) WriteJKS(t testing.TB, dir, name string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	ks := keystore.New()
	err = ks.SetPrivateKeyEntry(name, keystore.PrivateKeyEntry{
		CreationTime:     time.Now(),
		PrivateKey:       der,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: c.Cert.Raw}},
	}, []byte(Password))
	if err != nil {
		t.Fatal(err)
	}
	return writeJKS(t, dir, name, ks)
}

// WritePEM writes the CA certificate to dir/name.pem.
func (ca *CA) WritePEM(t testing.TB, dir, name string) string {
	t.Helper()
	return write(t, dir, name+".pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}))
}

// WritePKCS12 writes a PKCS12 trust store holding the CA to dir/name.p12.
func (ca *CA) WritePKCS12(t testing.TB, dir, name string) string {
	t.Helper()
	data, err := pkcs12.Modern2023.EncodeTrustStore([]*x509.Certificate{ca.Cert}, Password)
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name+".p12", data)
}

// WriteJKS writes a JKS trust store holding the CA to dir/name.jks.
func (ca *CA) WriteJKS(t testing.TB, dir, name string) string {
	t.Helper()
	ks := keystore.New()
	err := ks.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{
		CreationTime: time.Now(),
		Certificate:  keystore.Certificate{Type: "X509", Content: ca.Cert.Raw},
	})
	if err != nil {
		t.Fatal(err)
	}
	return writeJKS(t, dir, name, ks)
}

func writeJKS(t testing.TB, dir, name string, ks keystore.KeyStore) string {
	t.Helper()
	path := filepath.Join(dir, name+".jks")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ks.Store(f, []byte(Password)); err != nil {
		t.Fatal(err)
	}
	return path
}

func write(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	// Write then rename, so a reloading reader never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}
