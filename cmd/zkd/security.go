package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/server"
	"github.com/zkd/zkd/zab/tlsconf"
)

// x509ProviderClass is ZooKeeper's X509AuthenticationProvider, which an
// authProvider.N key must name for client certificates to become x509
// identities.
const x509ProviderClass = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"

// hasX509Provider reports whether ZooKeeper's X509AuthenticationProvider
// is on: an authProvider.N key names it, or clients may speak TLS. ZooKeeper
// 3.8 installs the provider itself whenever they may
// (QuorumPeerConfig.configureSSLAuth, run for a secureClientPort and for
// client.portUnification): without an authProvider line it sets
// authProvider.x509 to X509AuthenticationProvider, so a verified client
// certificate gives its x509 id all the same. (ssl.authProvider naming
// another scheme is refused by tlsconf.)
func hasX509Provider(c *zooCfg) bool {
	for _, k := range c.propNames() {
		if strings.HasPrefix(k, "zookeeper.authProvider.") && strings.TrimSpace(c.Props[k]) == x509ProviderClass {
			return true
		}
	}
	return c.SecureClientPort > 0 || c.propBool("zookeeper.client.portUnification")
}

// securityConfig sets the server's x509 and connection settings from the
// zoo.cfg keys and system properties ZooKeeper 3.8 reads.
func securityConfig(c *zooCfg, sc *server.Config) (extraSchemes []string, err error) {
	sc.X509Auth = hasX509Provider(c)
	if sc.X509Auth {
		extraSchemes = append(extraSchemes, "x509")
	}
	sc.X509SuperUser, _ = c.prop("zookeeper.X509AuthenticationProvider.superUser")
	ms, err := c.propInt("zookeeper.nio.sessionlessCnxnTimeout", 10000)
	if err != nil {
		return nil, err
	}
	if ms <= 0 {
		return nil, fmt.Errorf("zkd: zookeeper.nio.sessionlessCnxnTimeout=%d must be positive", ms)
	}
	sc.SessionlessTimeout = time.Duration(ms) * time.Millisecond
	sc.SecureClientPort = c.SecureClientPort
	// Validate the client TLS settings even when no port uses them, so a
	// refused setting (ssl.crl, ssl.ocsp…) never passes unnoticed.
	if _, err := tlsconf.FromProps(c.prop, "zookeeper.ssl."); err != nil {
		return nil, fmt.Errorf("zkd: %w", err)
	}
	return extraSchemes, nil
}

// clientListener opens the client port(s) as zoo.cfg asks: clientPort
// (plaintext, or TLS and plaintext with client.portUnification=true) and
// secureClientPort (TLS only), alone or both.
func clientListener(c *zooCfg, sc server.Config, log *zap.Logger) (net.Listener, error) {
	unified := c.propBool("zookeeper.client.portUnification")
	secure := c.SecureClientPort > 0
	var reloader *tlsconf.Reloader
	if secure || unified {
		opts, err := tlsconf.FromProps(c.prop, "zookeeper.ssl.")
		if err != nil {
			return nil, fmt.Errorf("zkd: %w", err)
		}
		if !opts.Enabled() {
			return nil, fmt.Errorf("zkd: secureClientPort or client.portUnification needs ssl.keyStore.location")
		}
		reloader, err = tlsconf.NewReloader(opts, time.Second, func(err error) {
			log.Warn("TLS key or trust store changed but could not be reloaded; still using the previous one", zap.Error(err))
		})
		if err != nil {
			return nil, fmt.Errorf("zkd: %w", err)
		}
		if f, ok := c.prop("zookeeper.serverCnxnFactory"); !ok || !strings.Contains(f, "Netty") {
			log.Info("serverCnxnFactory is not NettyServerCnxnFactory: ZooKeeper would refuse TLS with it; zkd serves TLS regardless")
		}
	}
	var lns []net.Listener
	closeAll := func() {
		for _, l := range lns {
			l.Close()
		}
	}
	if !secure || c.ClientPortSet {
		ln, err := net.Listen("tcp", sc.ClientAddr)
		if err != nil {
			return nil, fmt.Errorf("zkd: listen on %s: %w", sc.ClientAddr, err)
		}
		if unified {
			ln = tlsconf.UnifiedListener(ln, reloader.ServerConfig())
			log.Info("client port serves TLS and plaintext (client.portUnification)", zap.String("addr", ln.Addr().String()))
		}
		lns = append(lns, ln)
	}
	if secure {
		host := c.SecureClientPortAddress
		if host == "" {
			host = c.ClientPortAddress
		}
		addr := net.JoinHostPort(host, strconv.Itoa(c.SecureClientPort))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("zkd: listen on secureClientPort %s: %w", addr, err)
		}
		lns = append(lns, tlsconf.SecureListener(ln, reloader.ServerConfig()))
		log.Info("secure client port listening", zap.String("addr", ln.Addr().String()))
	}
	return tlsconf.Merge(lns...), nil
}

// quorumTLS sets the members' TLS from sslQuorum, the quorum
// portUnification and the ssl.quorum.* keys: the stores (reloaded when the
// files change, which is what sslQuorumReloadCertFiles asks for), whether
// the member ports also take plaintext members, and whether this member
// dials the others in plaintext. Neither key set: plaintext.
func quorumTLS(c *zooCfg, qc *quorum.Config, log *zap.Logger) error {
	ssl := c.propBool("zookeeper.sslQuorum")
	unified := c.QuorumPortUnification
	if !ssl && !unified {
		return nil
	}
	asked := "sslQuorum=true"
	if !ssl {
		asked = "portUnification=true"
	}
	const prefix = "zookeeper.ssl.quorum."
	opts, err := tlsconf.FromProps(c.prop, prefix)
	if err != nil {
		return fmt.Errorf("zkd: %w", err)
	}
	if !opts.Enabled() || opts.TrustStoreLocation == "" {
		return fmt.Errorf("zkd: %s needs ssl.quorum.keyStore.location and ssl.quorum.trustStore.location", asked)
	}
	if opts.ClientAuth != tlsconf.ClientAuthNeed {
		return fmt.Errorf("zkd: %s needs ssl.quorum.clientAuth=need (got %s): members authenticate each other", asked, opts.ClientAuth)
	}
	r, err := tlsconf.NewReloader(opts, time.Second, func(err error) {
		log.Warn("quorum TLS key or trust store changed but could not be reloaded; still using the previous one", zap.Error(err))
	})
	if err != nil {
		return fmt.Errorf("zkd: %w", err)
	}
	qc.PeerTLS, qc.PortUnification, qc.DialPlaintext = r, unified, !ssl
	if unified {
		log.Warn("portUnification=true: the quorum and election ports accept plaintext members beside TLS ones (a rolling upgrade's window); set portUnification=false once every member has sslQuorum=true",
			zap.Bool("sslQuorum", ssl))
	}
	return nil
}

// adminTLS returns how the admin server's listener is wrapped, as ZooKeeper
// 3.8's JettyAdminServer does with the ssl.quorum.* stores:
// admin.forceHttps=true serves HTTPS only, admin.portUnification=true HTTP
// and HTTPS on one port; otherwise nil (plain HTTP). admin.needClientAuth=true
// (ZooKeeper 3.9's key) requires, with admin.forceHttps, a client
// certificate verified by the quorum trust store: the web console reads as
// its x509 identity, which needs the x509 provider (authProvider.x509) as
// on the client port.
func adminTLS(c *zooCfg, log *zap.Logger) (func(net.Listener) net.Listener, error) {
	force := c.propBool("zookeeper.admin.forceHttps")
	unified := c.propBool("zookeeper.admin.portUnification")
	needClient := c.propBool("zookeeper.admin.needClientAuth")
	if needClient && !force {
		return nil, fmt.Errorf("zkd: admin.needClientAuth=true needs admin.forceHttps=true (a plain HTTP request carries no certificate)")
	}
	if needClient && !hasX509Provider(c) {
		return nil, fmt.Errorf("zkd: admin.needClientAuth=true needs the x509 auth provider (authProvider.x509=%s): the console reads as the certificate's x509 identity", x509ProviderClass)
	}
	if !force && !unified {
		return nil, nil
	}
	opts, err := tlsconf.FromProps(c.prop, "zookeeper.ssl.quorum.")
	if err != nil {
		return nil, fmt.Errorf("zkd: admin server: %w", err)
	}
	if !opts.Enabled() || opts.TrustStoreLocation == "" {
		// ZooKeeper 3.8 loads both and, without them, runs with no admin
		// server; zkd says so at start.
		return nil, fmt.Errorf("zkd: admin.forceHttps or admin.portUnification needs ssl.quorum.keyStore.location and ssl.quorum.trustStore.location (ZooKeeper's admin server uses the quorum stores)")
	}
	// As Jetty's SslContextFactory there: no client certificate asked for,
	// unless admin.needClientAuth (ZooKeeper 3.9) requires one.
	opts.ClientAuth = tlsconf.ClientAuthNone
	if needClient {
		opts.ClientAuth = tlsconf.ClientAuthNeed
	}
	r, err := tlsconf.NewReloader(opts, time.Second, func(err error) {
		log.Warn("admin server key store changed but could not be reloaded; still using the previous one", zap.Error(err))
	})
	if err != nil {
		return nil, fmt.Errorf("zkd: admin server: %w", err)
	}
	if force {
		return func(ln net.Listener) net.Listener { return tlsconf.SecureListener(ln, r.ServerConfig()) }, nil
	}
	return func(ln net.Listener) net.Listener {
		return tlsconf.DetectingListener(ln, r.ServerConfig(), 5*time.Second)
	}, nil
}
