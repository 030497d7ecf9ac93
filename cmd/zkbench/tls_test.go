package main

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// TestTLSFlags: -tls-* flags give a dialer that speaks TLS to a server the
// CA vouches for, presenting the client certificate; inconsistent flags are
// refused.
func TestTLSFlags(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	srv := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "localhost"}})
	cli := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "bench"}})
	caFile := ca.WritePEM(t, dir, "ca")
	cliFile := cli.WritePEM(t, dir, "cli") // key and certificate in one file
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"-tls-cert", cliFile, "-tls-key", cliFile}, "need -tls-ca"},
		{[]string{"-tls-ca", caFile, "-tls-cert", cliFile}, "both"},
		{[]string{"-tls-ca", dir + "/missing.pem"}, "-tls-ca"},
		{[]string{"-tls-ca", cliFile + "x"}, "-tls-ca"},
	}
	for _, tc := range bad {
		if _, err := parseArgs(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{srv.TLS()}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if tc.Handshake() == nil {
			peer <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
		}
	}()
	cfg, err := parseArgs([]string{"-tls-ca", caFile, "-tls-cert", cliFile, "-tls-key", cliFile}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.dial("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("TLS dial: %v", err)
	}
	defer c.Close()
	if _, ok := c.(*tls.Conn); !ok {
		t.Fatalf("dialer returned %T", c)
	}
	c.(*tls.Conn).Handshake()
	if got := <-peer; got != "bench" {
		t.Fatalf("server saw client certificate %q", got)
	}
	plain, err := parseArgs(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := plain.dial("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, ok := pc.(*net.TCPConn); !ok {
		t.Fatalf("plain dialer returned %T", pc)
	}
}
