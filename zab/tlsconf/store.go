package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Store types, as ZooKeeper's KeyStoreFileType names them.
const (
	TypePEM    = "PEM"
	TypePKCS12 = "PKCS12"
	TypeJKS    = "JKS"
)

// storeType returns the store type of path: typ when given (any case), else
// the one its extension names (.pem, .p12/.pfx, .jks), as ZooKeeper's
// KeyStoreFileType.fromPropertyValueOrFileName does.
func storeType(typ, path string) (string, error) {
	if typ != "" {
		switch t := strings.ToUpper(strings.TrimSpace(typ)); t {
		case TypePEM, TypePKCS12, TypeJKS:
			return t, nil
		default:
			return "", fmt.Errorf("tlsconf: %s: store type %q is not supported (want PEM, PKCS12 or JKS)", path, typ)
		}
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".pem":
		return TypePEM, nil
	case ".p12", ".pfx":
		return TypePKCS12, nil
	case ".jks":
		return TypeJKS, nil
	}
	return "", fmt.Errorf("tlsconf: %s: cannot tell the store type from the file name; set its type (PEM, PKCS12 or JKS)", path)
}

// LoadKeyStore reads the key and certificate chain a TLS endpoint presents
// from a PEM, PKCS12 or JKS file (typ "" means: by extension). The password
// opens the store and, as in ZooKeeper, the key inside it.
func LoadKeyStore(path, password, typ string) (tls.Certificate, error) {
	t, err := storeType(typ, path)
	if err != nil {
		return tls.Certificate{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconf: key store: %w", err)
	}
	var (
		key   crypto.PrivateKey
		chain []*x509.Certificate
	)
	switch t {
	case TypePEM:
		key, chain, err = pemKeyStore(data, password)
	case TypePKCS12:
		var leaf *x509.Certificate
		var cas []*x509.Certificate
		key, leaf, cas, err = pkcs12.DecodeChain(data, password)
		chain = append([]*x509.Certificate{leaf}, cas...)
	case TypeJKS:
		key, chain, err = jksKeyStore(data, password)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconf: key store %s (%s): %w", path, t, err)
	}
	cert := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	if pub, ok := key.(interface{ Public() crypto.PublicKey }); !ok ||
		!pub.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(chain[0].PublicKey) {
		return tls.Certificate{}, fmt.Errorf("tlsconf: key store %s (%s): the private key does not match the first certificate", path, t)
	}
	return cert, nil
}

// LoadTrustStore reads the CA certificates a peer's chain must lead to from
// a PEM, PKCS12 or JKS file.
func LoadTrustStore(path, password, typ string) (*x509.CertPool, error) {
	t, err := storeType(typ, path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: trust store: %w", err)
	}
	var certs []*x509.Certificate
	switch t {
	case TypePEM:
		_, certs, err = pemBlocks(data, "")
	case TypePKCS12:
		certs, err = pkcs12.DecodeTrustStore(data, password)
		if err == nil && len(certs) == 0 {
			// A key store used as trust store: trust its chain.
			var leaf *x509.Certificate
			var cas []*x509.Certificate
			if _, leaf, cas, err = pkcs12.DecodeChain(data, password); err == nil {
				certs = append([]*x509.Certificate{leaf}, cas...)
			}
		}
	case TypeJKS:
		certs, err = jksTrustStore(data, password)
	}
	if err == nil && len(certs) == 0 {
		err = errors.New("no certificates")
	}
	if err != nil {
		return nil, fmt.Errorf("tlsconf: trust store %s (%s): %w", path, t, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// pemKeyStore reads a PEM key store: one private key and its chain.
func pemKeyStore(data []byte, password string) (crypto.PrivateKey, []*x509.Certificate, error) {
	key, certs, err := pemBlocks(data, password)
	if err != nil {
		return nil, nil, err
	}
	if key == nil {
		return nil, nil, errors.New("no private key")
	}
	if len(certs) == 0 {
		return nil, nil, errors.New("no certificate")
	}
	return key, certs, nil
}

// pemBlocks parses the private key (if any) and certificates of PEM text.
func pemBlocks(data []byte, password string) (crypto.PrivateKey, []*x509.Certificate, error) {
	var (
		key   crypto.PrivateKey
		certs []*x509.Certificate
	)
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, err
			}
			certs = append(certs, c)
		case b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "":
			return nil, nil, errors.New("encrypted PEM private keys are not supported: store the key unencrypted (file mode 0600) or use PKCS12 or JKS")
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			k, err := parseKey(b.Bytes)
			if err != nil {
				return nil, nil, err
			}
			key = k
		}
	}
	if key != nil && password != "" {
		// ZooKeeper then reads the key as encrypted and fails every
		// handshake; zkd says so at start.
		return nil, nil, errors.New("a password is set but the PEM private key is not encrypted: remove the password")
	}
	return key, certs, nil
}

// parseKey parses a PKCS#8, PKCS#1 or SEC 1 private key.
func parseKey(der []byte) (crypto.PrivateKey, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("private key is not PKCS#8, PKCS#1 or SEC 1")
}

// jksKeyStore reads the one private key entry of a JKS store.
func jksKeyStore(data []byte, password string) (crypto.PrivateKey, []*x509.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return nil, nil, err
	}
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(password))
		if err != nil {
			return nil, nil, fmt.Errorf("key %q: %w", alias, err)
		}
		key, err := parseKey(e.PrivateKey)
		if err != nil {
			return nil, nil, fmt.Errorf("key %q: %w", alias, err)
		}
		var chain []*x509.Certificate
		for _, c := range e.CertificateChain {
			cert, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return nil, nil, fmt.Errorf("key %q: %w", alias, err)
			}
			chain = append(chain, cert)
		}
		if len(chain) == 0 {
			return nil, nil, fmt.Errorf("key %q has no certificate", alias)
		}
		return key, chain, nil
	}
	return nil, nil, errors.New("no private key entry")
}

// jksTrustStore reads every certificate of a JKS store: trusted entries and
// the chains of key entries.
func jksTrustStore(data []byte, password string) ([]*x509.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, alias := range ks.Aliases() {
		var raw []keystore.Certificate
		if ks.IsTrustedCertificateEntry(alias) {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, fmt.Errorf("certificate %q: %w", alias, err)
			}
			raw = append(raw, e.Certificate)
		} else if ks.IsPrivateKeyEntry(alias) {
			chain, err := ks.GetPrivateKeyEntryCertificateChain(alias)
			if err != nil {
				return nil, fmt.Errorf("certificate %q: %w", alias, err)
			}
			raw = chain
		}
		for _, r := range raw {
			c, err := x509.ParseCertificate(r.Content)
			if err != nil {
				return nil, fmt.Errorf("certificate %q: %w", alias, err)
			}
			certs = append(certs, c)
		}
	}
	return certs, nil
}
