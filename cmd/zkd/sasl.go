package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	krb5client "github.com/jcmturner/gokrb5/v8/client"
	krb5config "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
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
// whether the sasl ACL scheme has a provider. A Server section with
// Krb5LoginModule makes it GSSAPI (kerberosConfig). Keys zkd cannot
// honour stop it with an error naming them:
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
			users, krb, err := jaas.ServerLogin(section)
			if err != nil {
				return sc, false, fmt.Errorf("zkd: java.security.auth.login.config %s: %w", path, err)
			}
			if krb != nil {
				if sc.Kerberos, err = kerberosConfig(c, krb); err != nil {
					return sc, false, fmt.Errorf("zkd: java.security.auth.login.config %s, section %s: %w", path, section, err)
				}
				if len(users) > 0 {
					log.Warn("JAAS server section logs a Kerberos principal in: SASL is GSSAPI only, its DIGEST-MD5 users are not served (as ZooKeeper)",
						zap.String("jaas", path), zap.String("section", section))
				}
				log.Info("SASL GSSAPI (Kerberos) enabled", zap.String("jaas", path), zap.String("section", section),
					zap.String("principal", sc.Kerberos.Principal), zap.String("keytab", krb.KeyTab),
					zap.String("defaultRealm", sc.Kerberos.DefaultRealm),
					zap.Bool("removeHostFromPrincipal", sc.Kerberos.RemoveHost), zap.Bool("removeRealmFromPrincipal", sc.Kerberos.RemoveRealm))
			} else {
				sc.Users = &sasl.Users{Passwords: users, SuperPassword: c.Props["zookeeper.SASLAuthenticationProvider.superPassword"]}
				log.Info("SASL DIGEST-MD5 enabled", zap.String("jaas", path), zap.String("section", section), zap.Int("users", sc.Users.Len()))
			}
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

// kerberosConfig loads the keytab of a JAAS server section's
// Krb5LoginModule and the settings that map principals to names:
// zookeeper.kerberos.removeHostFromPrincipal and
// removeRealmFromPrincipal ("true" exactly, as ZooKeeper reads them), and
// the default realm of KerberosName's DEFAULT rule, from
// java.security.krb5.realm or the krb5.conf Java would read
// (java.security.krb5.conf, else /etc/krb5.conf).
func kerberosConfig(c *zooCfg, login *sasl.Krb5Login) (*sasl.Kerberos, error) {
	if v, ok := c.prop("security.auth_to_local"); ok && strings.TrimSpace(v) != "DEFAULT" {
		return nil, fmt.Errorf("zookeeper.security.auth_to_local=%s: zkd implements the DEFAULT rule only", v)
	}
	kt, err := keytab.Load(login.KeyTab)
	if err != nil {
		return nil, fmt.Errorf("keyTab %s: %w", login.KeyTab, err)
	}
	k := &sasl.Kerberos{Principal: login.Principal, Keytab: kt}
	kc, conf, confErr := krb5Conf(c)
	if _, set := c.Props["java.security.krb5.conf"]; confErr != nil && set {
		return nil, confErr
	}
	if k.Principal, err = fullPrincipal(c, kc, login.Principal); err != nil {
		return nil, err
	}
	k.DefaultRealm = defaultRealm(c, kc)
	if k.DefaultRealm == "" {
		_, k.DefaultRealm, _ = strings.Cut(k.Principal, "@")
	}
	v, _ := c.prop("kerberos.removeHostFromPrincipal")
	k.RemoveHost = v == "true"
	v, _ = c.prop("kerberos.removeRealmFromPrincipal")
	k.RemoveRealm = v == "true"
	if err := k.Validate(); err != nil {
		return nil, fmt.Errorf("keyTab %s: %w", login.KeyTab, err)
	}
	if login.IsInitiator {
		// As Krb5LoginModule (isInitiator defaults to true): log the
		// service principal in at the KDC, so a keytab of stale keys
		// stops the server here rather than failing every client.
		if confErr != nil {
			return nil, fmt.Errorf("Kerberos login of %s needs a krb5.conf to find the KDC (-Djava.security.krb5.conf, or isInitiator=false): %w", k.Principal, confErr)
		}
		cl, err := kerberosLogin(kc, conf, confErr, k.Principal, login.KeyTab, kt)
		if err != nil {
			return nil, err
		}
		cl.Destroy()
	}
	return k, nil
}

// krb5Conf loads the krb5.conf Java would read: java.security.krb5.conf,
// else /etc/krb5.conf. It returns the path read, and an error naming it
// (kc is nil then).
func krb5Conf(c *zooCfg) (kc *krb5config.Config, path string, err error) {
	path, set := c.Props["java.security.krb5.conf"]
	if !set {
		path = "/etc/krb5.conf"
	}
	kc, err = krb5config.Load(path)
	if err != nil {
		if set {
			return nil, path, fmt.Errorf("java.security.krb5.conf %s: %w", path, err)
		}
		return nil, path, fmt.Errorf("%s: %w", path, err)
	}
	return kc, path, nil
}

// defaultRealm is java.security.krb5.realm, else krb5.conf's
// default_realm (kc may be nil), else "".
func defaultRealm(c *zooCfg, kc *krb5config.Config) string {
	if r := c.Props["java.security.krb5.realm"]; r != "" {
		return r
	}
	if kc != nil {
		return kc.LibDefaults.DefaultRealm
	}
	return ""
}

// fullPrincipal completes a JAAS principal option without a realm with
// the default realm, as Krb5LoginModule does.
func fullPrincipal(c *zooCfg, kc *krb5config.Config, principal string) (string, error) {
	if strings.Contains(principal, "@") {
		return principal, nil
	}
	realm := defaultRealm(c, kc)
	if realm == "" {
		return "", fmt.Errorf("principal %s has no realm, and no default realm is configured (java.security.krb5.conf)", principal)
	}
	return principal + "@" + realm, nil
}

// kerberosLogin logs principal (name@REALM) in at the KDC with the keys
// of keytab kt (read from path ktPath), as Krb5LoginModule with
// useKeyTab=true does at start; confErr is krb5Conf's error for conf.
func kerberosLogin(kc *krb5config.Config, conf string, confErr error, principal, ktPath string, kt *keytab.Keytab) (*krb5client.Client, error) {
	if confErr != nil {
		return nil, fmt.Errorf("Kerberos login of %s needs a krb5.conf to find the KDC (-Djava.security.krb5.conf): %w", principal, confErr)
	}
	name, realm, _ := strings.Cut(principal, "@")
	cl := krb5client.NewWithKeytab(name, realm, kt, kc, krb5client.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		cl.Destroy()
		return nil, fmt.Errorf("Kerberos login of %s with keyTab %s failed (the KDC refused the keytab's keys, or cannot be reached; ZooKeeper refuses to start the same way): %w", principal, ktPath, err)
	}
	return cl, nil
}

// refuseSASLKeys stops zkd on SASL settings it does not implement.
func refuseSASLKeys(c *zooCfg) error {
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
