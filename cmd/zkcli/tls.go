package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/zkd/zkd/zab/tlsconf"
)

// clientTLS is the TLS configuration of every connection, nil for
// plaintext. run sets it before the first dial.
var clientTLS *tls.Config

// jvmFlagProps returns the -Dkey=value words of JVMFLAGS and
// CLIENT_JVMFLAGS (the latter wins), as zkCli.sh passes them to Java.
func jvmFlagProps(env []string) map[string]string {
	props := map[string]string{}
	for _, name := range []string{"JVMFLAGS", "CLIENT_JVMFLAGS"} {
		for _, e := range env {
			v, ok := strings.CutPrefix(e, name+"=")
			if !ok {
				continue
			}
			for _, w := range strings.Fields(v) {
				if k, val, ok := strings.Cut(strings.TrimPrefix(w, "-D"), "="); ok && strings.HasPrefix(w, "-D") {
					props[k] = val
				}
			}
		}
	}
	return props
}

// clientProps gathers the client properties zkCli.sh users set: -D words of
// JVMFLAGS and CLIENT_JVMFLAGS (the latter wins), then the
// -client-configuration file, which wins over both as ZKClientConfig's file
// does.
func clientProps(env []string, confFile string) (map[string]string, error) {
	props := jvmFlagProps(env)
	if confFile == "" {
		return props, nil
	}
	f, err := os.Open(confFile)
	if err != nil {
		return nil, fmt.Errorf("client configuration: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			props[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return props, sc.Err()
}

// tlsFromProps returns the TLS configuration zookeeper.client.secure=true
// and zookeeper.ssl.* ask for (key store: the client certificate, optional;
// trust store: the CAs, else the system's; hostnameVerification: the server
// name is checked, default on), or nil when TLS is off.
func tlsFromProps(props map[string]string) (*tls.Config, error) {
	if !strings.EqualFold(props["zookeeper.client.secure"], "true") {
		return nil, nil
	}
	get := func(k string) (string, bool) { v, ok := props[k]; return v, ok }
	o, err := tlsconf.FromProps(get, "zookeeper.ssl.")
	if err != nil {
		return nil, err
	}
	var cert *tls.Certificate
	if o.KeyStoreLocation != "" {
		c, err := tlsconf.LoadKeyStore(o.KeyStoreLocation, o.KeyStorePassword, o.KeyStoreType)
		if err != nil {
			return nil, err
		}
		cert = &c
	}
	var roots *x509.CertPool
	if o.TrustStoreLocation != "" {
		if roots, err = tlsconf.LoadTrustStore(o.TrustStoreLocation, o.TrustStorePassword, o.TrustStoreType); err != nil {
			return nil, err
		}
	}
	return tlsconf.ClientConfigFor(o, cert, roots, ""), nil
}

// tlsDial wraps a new connection to addr in TLS when clientTLS is set,
// checking the server's certificate against addr's host.
func tlsDial(c net.Conn, addr string) (net.Conn, error) {
	if clientTLS == nil {
		return c, nil
	}
	conf := clientTLS.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		conf.ServerName = host
	}
	tc := tls.Client(c, conf)
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}
