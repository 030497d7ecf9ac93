package console_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// TestIntegration_ConsoleX509 runs zkd's admin server on HTTPS with
// admin.needClientAuth=true and checks that the console reads as the x509
// identity of the certificate the client presents, with the same ACL
// outcome as a go-zk client presenting that certificate on the secure
// client port: alice reads the znode only she may read, bob does not,
// the X509 super user reads everything, and no certificate gets no page.
func TestIntegration_ConsoleX509(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "zkd console test CA")
	srv := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "localhost"}})
	alice := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "alice", Organization: []string{"zkd test"}}})
	bob := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "bob"}})
	root := ca.Issue(t, tlstest.Options{Subject: pkix.Name{CommonName: "root"}})
	key, trust := srv.WritePEM(t, dir, "server"), ca.WritePEM(t, dir, "ca")
	secure := zkproc.FreePort(t)
	s := zkproc.StartZkd(t, zkproc.Options{AdminServer: true, ExtraCfg: map[string]string{
		"admin.forceHttps":                     "true",
		"admin.needClientAuth":                 "true",
		"ssl.quorum.keyStore.location":         key,
		"ssl.quorum.trustStore.location":       trust,
		"secureClientPort":                     strconv.Itoa(secure),
		"serverCnxnFactory":                    "org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location":                key,
		"ssl.trustStore.location":              trust,
		"authProvider.x509":                    "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
		"X509AuthenticationProvider.superUser": "CN=root",
		"zkd.console.identity":                 "digest:ops:ops-pw", // a certificate takes precedence
	}})
	tlsConf := func(c *tlstest.Cert) *tls.Config {
		conf := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
		if c != nil {
			conf.Certificates = []tls.Certificate{c.TLS()}
		}
		return conf
	}
	zkConn := func(c *tlstest.Cert) *zk.Conn {
		conf := tlsConf(c)
		conn, ev, err := zk.Connect([]string{net.JoinHostPort("127.0.0.1", strconv.Itoa(secure))}, 10*time.Second, zk.WithLogInfo(false),
			zk.WithDialer(func(network, addr string, timeout time.Duration) (net.Conn, error) {
				return tls.DialWithDialer(&net.Dialer{Timeout: 15 * time.Second}, network, addr, conf)
			}))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for range ev {
			}
		}()
		waitFor(t, "a go-zk session over TLS", func() bool { return conn.State() == zk.StateHasSession })
		t.Cleanup(conn.Close)
		return conn
	}

	aliceSubject := "CN=alice,O=zkd test"
	admin := zkConn(alice)
	for path, acl := range map[string][]zk.ACL{
		"/alice-only": {{Perms: zk.PermAll, Scheme: "x509", ID: aliceSubject}},
		"/open":       zk.WorldACL(zk.PermAll),
	} {
		if _, err := admin.Create(path, []byte("data of "+path), 0, acl); err != nil {
			t.Fatalf("create %s: %v", path, err)
		}
	}

	// What the console answers for path to a client presenting c.
	type treeAnswer struct {
		Data       *string `json:"data"`
		DataHidden string  `json:"data_hidden"`
	}
	console := func(c *tlstest.Cert, path string) (string, treeAnswer, error) {
		hc := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf(c)}}
		res, err := hc.Get("https://" + s.AdminAddr + "/console/api/tree?path=" + url.QueryEscape(path))
		if err != nil {
			return "", treeAnswer{}, err
		}
		defer res.Body.Close()
		var a treeAnswer
		if res.StatusCode != http.StatusOK {
			return "", a, fmt.Errorf("status %d", res.StatusCode)
		}
		if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
			return "", a, err
		}
		res2, err := hc.Get("https://" + s.AdminAddr + "/console/api/whoami")
		if err != nil {
			return "", a, err
		}
		defer res2.Body.Close()
		var who struct{ Identity struct{ Scheme, User string } }
		json.NewDecoder(res2.Body).Decode(&who)
		return who.Identity.Scheme + ":" + who.Identity.User, a, nil
	}

	for _, tc := range []struct {
		name    string
		cert    *tlstest.Cert
		subject string
	}{
		{"alice", alice, "x509:" + aliceSubject},
		{"bob", bob, "x509:CN=bob"},
		{"super", root, "x509:CN=root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := zkConn(tc.cert)
			for _, path := range []string{"/alice-only", "/open"} {
				_, _, zkErr := client.Get(path)
				who, a, err := console(tc.cert, path)
				if err != nil {
					t.Fatalf("console %s: %v", path, err)
				}
				if who != tc.subject {
					t.Errorf("whoami %q, want %q", who, tc.subject)
				}
				shown := a.Data != nil && a.DataHidden == ""
				if shown != (zkErr == nil) {
					t.Errorf("%s: the console shows the data: %v (hidden: %q); the client port's getData: %v", path, shown, a.DataHidden, zkErr)
				}
			}
		})
	}
	// Expected outcomes, so the comparison above cannot pass vacuously.
	if _, a, _ := console(alice, "/alice-only"); a.Data == nil {
		t.Error("alice's certificate does not read /alice-only on the console")
	}
	if _, a, _ := console(bob, "/alice-only"); a.Data != nil {
		t.Error("bob's certificate reads /alice-only on the console")
	}
	if _, _, err := console(nil, "/open"); err == nil {
		t.Error("the console answered a client without a certificate under admin.needClientAuth=true")
	}
}
