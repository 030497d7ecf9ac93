package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/zkd/zkd/server"
	"github.com/zkd/zkd/server/sasl"
)

// ZooKeeper's authentication provider classes (zookeeper.authProvider.N).
const (
	saslProvider   = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
	digestProvider = "org.apache.zookeeper.server.auth.DigestAuthenticationProvider"
	ipProvider     = "org.apache.zookeeper.server.auth.IPAuthenticationProvider"
	x509Provider   = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"
)

// saslConfig reads the SASL side of ZooKeeper's security settings: the
// JAAS file (java.security.auth.login.config) and its Server section
// (zookeeper.sasl.serverconfig), zookeeper.authProvider.N,
// zookeeper.superUser, zookeeper.allowSaslFailedClients,
// zookeeper.SASLAuthenticationProvider.superPassword, enforce.auth and
// sessionRequireClientSASLAuth. It returns the server's SASLConfig and
// whether the sasl ACL scheme has a provider. Keys zkd cannot honour stop
// it with an error naming them: Kerberos, quorum SASL,
// zookeeper.letAnySaslUserDoX, unknown providers.
func saslConfig(c *zooCfg, log *zap.Logger) (sc server.SASLConfig, saslScheme bool, err error) {
	if err := refuseSASLKeys(c); err != nil {
		return sc, false, err
	}
	providers := map[string]bool{"digest": true, "ip": true}
	for _, name := range c.propNames() {
		if !strings.HasPrefix(name, "zookeeper.authProvider.") {
			continue
		}
		switch class := strings.TrimSpace(c.Props[name]); class {
		case saslProvider:
			providers["sasl"] = true
		case digestProvider, ipProvider:
		case x509Provider:
			providers["x509"] = true // configured with TLS (ssl.* keys)
		default:
			return sc, false, fmt.Errorf("zkd: %s=%s: authentication provider not implemented by zkd (it has digest, ip, sasl and x509)", name, class)
		}
	}
	if path, ok := c.Props["java.security.auth.login.config"]; ok {
		section := "Server"
		if s, ok := c.Props["zookeeper.sasl.serverconfig"]; ok {
			section = s
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return sc, false, fmt.Errorf("zkd: java.security.auth.login.config: %w", err)
		}
		jaas, err := sasl.ParseJAAS(string(text), c.Props)
		if err != nil {
			return sc, false, fmt.Errorf("zkd: java.security.auth.login.config %s: %w", path, err)
		}
		if _, ok := jaas[section]; ok {
			users, err := jaas.DigestUsers(section)
			if err != nil {
				return sc, false, fmt.Errorf("zkd: java.security.auth.login.config %s: %w", path, err)
			}
			sc.Users = &sasl.Users{Passwords: users, SuperPassword: c.Props["zookeeper.SASLAuthenticationProvider.superPassword"]}
			log.Info("SASL DIGEST-MD5 enabled", zap.String("jaas", path), zap.String("section", section), zap.Int("users", sc.Users.Len()))
		} else {
			// As ZooKeeper: a readable file without the section leaves
			// SASL off (every sasl request fails), it does not stop the
			// server.
			log.Warn("JAAS file has no server section: SASL is off, sasl requests fail",
				zap.String("jaas", path), zap.String("section", section), zap.Strings("sections", sortedKeys(jaas)))
		}
	}
	sc.SuperUser = c.Props["zookeeper.superUser"]
	sc.AllowFailedClients = c.propBool("zookeeper.allowSaslFailedClients")
	switch {
	case c.propBool("zookeeper.sessionRequireClientSASLAuth"):
		sc.EnforceAuthSchemes = []string{"sasl"}
	case c.propBool("zookeeper.enforce.auth.enabled"):
		v, _ := c.prop("zookeeper.enforce.auth.schemes")
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				sc.EnforceAuthSchemes = append(sc.EnforceAuthSchemes, s)
			}
		}
		if len(sc.EnforceAuthSchemes) == 0 {
			return sc, false, fmt.Errorf("zkd: zookeeper.enforce.auth.enabled is true: zookeeper.enforce.auth.schemes must be configured")
		}
	}
	for _, s := range sc.EnforceAuthSchemes {
		if !providers[s] {
			return sc, false, fmt.Errorf("zkd: zookeeper.enforce.auth.schemes: authentication scheme %s is not available (add its zookeeper.authProvider.N)", s)
		}
	}
	return sc, providers["sasl"], nil
}

// refuseSASLKeys stops zkd on SASL settings it does not implement.
func refuseSASLKeys(c *zooCfg) error {
	for _, k := range []string{"quorum.auth.enableSasl", "quorum.auth.learnerRequireSasl", "quorum.auth.serverRequireSasl"} {
		if c.propBool(k) {
			return fmt.Errorf("zkd: %s=true: SASL between ensemble members is not implemented by zkd (members authenticate with sslQuorum)", k)
		}
	}
	if v, ok := c.prop("zookeeper.letAnySaslUserDoX"); ok {
		return fmt.Errorf("zkd: zookeeper.letAnySaslUserDoX=%s is not implemented by zkd", v)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
