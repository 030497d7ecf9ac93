package main

import (
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// TestIntegration_TLS: zkcli reaches a secure client port with the TLS
// keys zkCli.sh takes, from a -client-configuration file or from
// CLIENT_JVMFLAGS, and fails clearly when it cannot trust the server.
func TestIntegration_TLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	srv := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "localhost"}})
	cli := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "cli"}})
	port := zkproc.FreePort(t)
	zkproc.StartZkd(t, zkproc.Options{ExtraCfg: map[string]string{
		"secureClientPort":        strconv.Itoa(port),
		"authProvider.x509":       "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
		"ssl.keyStore.location":   srv.WritePKCS12(t, dir, "server"),
		"ssl.keyStore.password":   tlstest.Password,
		"ssl.trustStore.location": ca.WriteJKS(t, dir, "ca"),
		"ssl.trustStore.password": tlstest.Password,
	}})
	secure := "127.0.0.1:" + strconv.Itoa(port)
	clientKS := cli.WriteJKS(t, dir, "client")
	trust := ca.WritePEM(t, dir, "trust")
	props := filepath.Join(dir, "client.properties")
	err := os.WriteFile(props, []byte("zookeeper.client.secure=true\n"+
		"zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"+
		"zookeeper.ssl.keyStore.location="+clientKS+"\nzookeeper.ssl.keyStore.password="+tlstest.Password+"\n"+
		"zookeeper.ssl.trustStore.location="+trust+"\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, secure, nil, "-client-configuration", props, "create", "/t", "x")
	if r.code != 0 || !strings.Contains(r.out+r.err, "Created /t") {
		t.Fatalf("create over TLS: %+v", r)
	}
	r = runCLI(t, secure, nil, "-client-configuration", props, "whoami")
	if r.code != 0 || !strings.Contains(r.out+r.err, "x509") || !strings.Contains(r.out+r.err, "CN=cli") {
		t.Fatalf("whoami over TLS: %+v", r)
	}
	t.Setenv("CLIENT_JVMFLAGS", "-Dzookeeper.client.secure=true -Dzookeeper.ssl.keyStore.location="+clientKS+
		" -Dzookeeper.ssl.keyStore.password="+tlstest.Password+" -Dzookeeper.ssl.trustStore.location="+trust)
	r = runCLI(t, secure, nil, "get", "/t")
	if r.code != 0 || !strings.Contains(r.out, "x") {
		t.Fatalf("get over TLS from CLIENT_JVMFLAGS: %+v", r)
	}
	// Without the trust store the server's certificate is not trusted.
	t.Setenv("CLIENT_JVMFLAGS", "-Dzookeeper.client.secure=true -Dzookeeper.ssl.keyStore.location="+clientKS+
		" -Dzookeeper.ssl.keyStore.password="+tlstest.Password)
	r = runCLI(t, secure, nil, "-timeout", "3000", "get", "/t")
	if r.code == 0 {
		t.Fatalf("get with an untrusted server succeeded: %+v", r)
	}
}
