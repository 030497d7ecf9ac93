package server

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab/tlsconf"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// processCPU is the user and system CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGetDataTLS is BenchmarkGetData over plaintext and over TLS
// (TLS 1.2, ZooKeeper's default ssl.protocol, with a client certificate
// as ssl.clientAuth=need asks) side by side, in one process, so that the
// TLS path's own cost shows without a load generator's: compare the
// tls=false and tls=true lines.
func BenchmarkGetDataTLS(b *testing.B) {
	ca := tlstest.NewCA(b, "bench CA")
	srvCert := ca.Issue(b, tlstest.Options{Subject: pkix.Name{CommonName: "localhost"}})
	cliCert := ca.Issue(b, tlstest.Options{Subject: pkix.Name{CommonName: "bench"}})
	serverConf := &tls.Config{
		Certificates: []tls.Certificate{srvCert.TLS()},
		ClientCAs:    ca.Pool(),
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
		MaxVersion:   tls.VersionTLS12,
	}
	clientConf := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{cliCert.TLS()}}
	for _, size := range []int{16, 1024} {
		for _, depth := range []int{1, 32} {
			for _, secure := range []bool{false, true} {
				b.Run(fmt.Sprintf("size=%dB/depth=%d/tls=%v", size, depth, secure), func(b *testing.B) {
					var wrap func(net.Listener) net.Listener
					if secure {
						wrap = func(ln net.Listener) net.Listener { return tlsconf.SecureListener(ln, serverConf) }
					}
					ts := startServerOn(b, func(c *Config) { c.X509Auth = true }, wrap)
					var c *rawClient
					if secure {
						nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ts.addr, clientConf)
						if err != nil {
							b.Fatal(err)
						}
						b.Cleanup(func() { nc.Close() })
						c = &rawClient{t: b, nc: nc}
					} else {
						c = dialRaw(b, ts.addr)
					}
					c.session()
					c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/bench", Data: make([]byte, size), Acl: openACL}, &jute.CreateResponse{})
					b.SetBytes(int64(size))
					cpu0 := processCPU()
					benchGetData(b, c, "/bench", depth)
					// CPU time (client and server: one process) is far less
					// disturbed than ns/op by other load on the machine.
					b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}
