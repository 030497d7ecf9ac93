package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	krb5client "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"go.uber.org/zap"

	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/quorum/quorumauth"
	"github.com/zkd/zkd/server/sasl"
)

// Quorum SASL (ZooKeeper's quorum.auth.* keys), as ZooKeeper's
// SaslQuorumAuthServer and SaslQuorumAuthLearner read the JAAS file:
//   - the QuorumServer section says what a member accepts: DIGEST-MD5
//     users (user_<name> options), or, with Krb5LoginModule, GSSAPI for
//     the section's service principal, from its keytab;
//   - the QuorumLearner section says how a member authenticates to those
//     it dials: a DIGEST-MD5 username and password, or, with
//     Krb5LoginModule, a Kerberos principal logged in from its keytab,
//     asking a ticket for quorum.auth.kerberos.servicePrincipal.
//
// Each side picks its mechanism from its own section, as in ZooKeeper.

// quorumServicePrincipalKey is the service principal a Kerberos learner
// asks a ticket for (SaslQuorumAuthLearner).
const quorumServicePrincipalKey = "quorum.auth.kerberos.servicePrincipal"

// quorumJAAS reads the JAAS file named by java.security.auth.login.config
// for quorum SASL; what says why it is needed, for the error.
func quorumJAAS(c *zooCfg, what string) (sasl.JAAS, string, error) {
	path, ok := c.Props["java.security.auth.login.config"]
	if !ok {
		return nil, "", fmt.Errorf("%s needs a JAAS file with QuorumServer and QuorumLearner sections: give -Djava.security.auth.login.config=<file> in SERVER_JVMFLAGS or JVMFLAGS, as for ZooKeeper", what)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("%s: java.security.auth.login.config: %w", what, err)
	}
	jaas, err := sasl.ParseJAAS(string(text), c.Props)
	if err != nil {
		return nil, "", fmt.Errorf("%s: java.security.auth.login.config %s: %w", what, path, err)
	}
	return jaas, path, nil
}

// learner is how a member (or `zkd follow`) authenticates to the members
// it dials: DIGEST-MD5 as user, or GSSAPI as the logged-in Kerberos
// client kc, toward servicePrincipal.
type learner struct {
	user, password   string
	kc               *krb5client.Client
	servicePrincipal string // as configured: "_HOST" is the member dialed
}

// client returns the exchange toward the member at host.
func (l *learner) client(host string) (quorumauth.Client, error) {
	if l.kc == nil {
		return sasl.NewQuorumClient(l.user, l.password, nil), nil
	}
	c, err := sasl.NewQuorumGSSAPIClient(l.kc, sasl.QuorumServicePrincipal(l.servicePrincipal, host))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// describe says who the learner authenticates as, for a log line:
// "(DIGEST-MD5) as learner", "(GSSAPI) as learner/h@R toward zkquorum/_HOST".
func (l *learner) describe() string {
	if l.kc == nil {
		return "(DIGEST-MD5) as " + l.user
	}
	return "(GSSAPI) as " + l.kc.Credentials.CName().PrincipalNameString() + "@" + l.kc.Credentials.Realm() +
		" toward " + l.servicePrincipal
}

// learnerLogin reads section, a QuorumLearner section: one
// DigestLoginModule with username and password, or one Krb5LoginModule
// logging a principal in from a keytab (as ZooKeeper's learner Login does
// at start: a KDC that refuses the keys stops zkd).
func learnerLogin(c *zooCfg, jaas sasl.JAAS, path, section, what string) (*learner, error) {
	mods, ok := jaas[section]
	if !ok {
		return nil, fmt.Errorf("%s: JAAS file %s has no %s section", what, path, section)
	}
	if len(mods) != 1 {
		return nil, fmt.Errorf("%s: JAAS file %s, section %s: %d login modules; zkd takes one (%s or %s)", what, path, section, len(mods), sasl.DigestLoginModule, sasl.Krb5LoginModule)
	}
	m := mods[0]
	switch m.Class {
	case sasl.DigestLoginModule:
		u, uok := m.Option("username")
		p, pok := m.Option("password")
		if !uok || !pok {
			return nil, fmt.Errorf("%s: JAAS file %s, section %s: %s needs username and password options", what, path, section, m.Class)
		}
		return &learner{user: u, password: p}, nil
	case sasl.Krb5LoginModule:
		_, krb, err := jaas.ServerLogin(section) // the same keytab options as a server's
		if err != nil {
			return nil, fmt.Errorf("%s: JAAS file %s: %w", what, path, err)
		}
		kt, err := keytab.Load(krb.KeyTab)
		if err != nil {
			return nil, fmt.Errorf("%s: JAAS file %s, section %s: keyTab %s: %w", what, path, section, krb.KeyTab, err)
		}
		kc, conf, confErr := krb5Conf(c)
		principal, err := fullPrincipal(c, kc, krb.Principal)
		if err != nil {
			return nil, fmt.Errorf("%s: JAAS file %s, section %s: %w", what, path, section, err)
		}
		cl, err := kerberosLogin(kc, conf, confErr, principal, krb.KeyTab, kt)
		if err != nil {
			return nil, fmt.Errorf("%s: JAAS file %s, section %s: %w", what, path, section, err)
		}
		sp, ok := c.prop(quorumServicePrincipalKey)
		if !ok || strings.TrimSpace(sp) == "" {
			sp = sasl.DefaultQuorumServicePrincipal
		}
		return &learner{kc: cl, servicePrincipal: strings.TrimSpace(sp)}, nil
	default:
		return nil, fmt.Errorf("%s: JAAS file %s, section %s: login module %s is not implemented for quorum SASL by zkd; only %s (DIGEST-MD5) and %s (Kerberos, from a keytab) are", what, path, section, m.Class, sasl.DigestLoginModule, sasl.Krb5LoginModule)
	}
}

// section returns the JAAS section named by key, def when unset.
func section(c *zooCfg, key, def string) string {
	if s, ok := c.prop(key); ok {
		return s
	}
	return def
}

// followQuorumSASL reads the learner side of quorum SASL for `zkd
// follow`, as a ZooKeeper observer would: with quorum.auth.enableSasl and
// quorum.auth.learnerRequireSasl both true, the follower authenticates to
// the leader as the QuorumLearner section says
// (quorum.auth.learner.saslLoginContext): DIGEST-MD5 or Kerberos.
// Otherwise, as ZooKeeper's learner, it does not authenticate (nil). It
// also returns a line for the operator saying who it authenticates as.
func followQuorumSASL(c *zooCfg) (func(host string) (quorumauth.Client, error), string, error) {
	if !c.propBool("quorum.auth.enableSasl") || !c.propBool("quorum.auth.learnerRequireSasl") {
		return nil, "", nil
	}
	const what = "zkd follow: quorum.auth.learnerRequireSasl=true"
	jaas, path, err := quorumJAAS(c, what)
	if err != nil {
		return nil, "", err
	}
	sec := section(c, "quorum.auth.learner.saslLoginContext", "QuorumLearner")
	l, err := learnerLogin(c, jaas, path, sec, what)
	if err != nil {
		return nil, "", err
	}
	return l.client, fmt.Sprintf("authenticating to the ZooKeeper leader by quorum SASL %s (JAAS %s, section %s)", l.describe(), path, sec), nil
}

// quorumSASL sets qc.PeerAuth from quorum.auth.enableSasl,
// learnerRequireSasl and serverRequireSasl, as ZooKeeper 3.8 reads them:
// without enableSasl the other two do nothing; with it both JAAS sections
// must be there (ZooKeeper logs both in at start), the member
// authenticates what it dials only with learnerRequireSasl, and refuses
// members that do not authenticate only with serverRequireSasl.
func quorumSASL(c *zooCfg, qc *quorum.Config, log *zap.Logger) error {
	learn, require := c.propBool("quorum.auth.learnerRequireSasl"), c.propBool("quorum.auth.serverRequireSasl")
	if !c.propBool("quorum.auth.enableSasl") {
		if learn || require {
			log.Warn("quorum.auth.learnerRequireSasl or serverRequireSasl is set without quorum.auth.enableSasl=true: no quorum SASL, as in ZooKeeper")
		}
		return nil
	}
	const what = "zkd: quorum.auth.enableSasl=true"
	jaas, path, err := quorumJAAS(c, what)
	if err != nil {
		return err
	}
	serverSec := section(c, "quorum.auth.server.saslLoginContext", "QuorumServer")
	users, krb, err := jaas.ServerLogin(serverSec)
	if err != nil {
		return fmt.Errorf("%s: JAAS file %s: %w", what, path, err)
	}
	pa := &peerAuth{users: sasl.Users{Passwords: users}, learn: learn, require: require}
	serverMech := "DIGEST-MD5"
	if krb != nil {
		if pa.krb, err = kerberosConfig(c, krb); err != nil {
			return fmt.Errorf("%s: JAAS file %s, section %s: %w", what, path, serverSec, err)
		}
		pa.authzHosts = serverHosts(c)
		serverMech = "GSSAPI as " + pa.krb.Principal
	}
	learnerSec := section(c, "quorum.auth.learner.saslLoginContext", "QuorumLearner")
	if pa.learner, err = learnerLogin(c, jaas, path, learnerSec, what); err != nil {
		return err
	}
	qc.PeerAuth = pa
	log.Info("quorum SASL between members",
		zap.String("jaas", path), zap.String("server", serverMech), zap.Int("serverUsers", len(users)),
		zap.Strings("authorizedHosts", pa.authzHosts), zap.String("learner", pa.learner.describe()),
		zap.Bool("learnerRequireSasl", learn), zap.Bool("serverRequireSasl", require))
	return nil
}

// serverHosts returns the host of each server.N line (of its last
// address, as ZooKeeper's QuorumServer.hostname): the hosts a Kerberos
// learner principal name/host@REALM may name.
func serverHosts(c *zooCfg) []string {
	var hosts []string
	for _, raw := range c.Servers {
		addrs, _, _ := strings.Cut(raw, ";")
		all := strings.Split(addrs, "|")
		last := strings.TrimSpace(all[len(all)-1])
		host := last
		if strings.HasPrefix(last, "[") {
			if i := strings.Index(last, "]"); i > 0 {
				host = last[1:i]
			}
		} else if i := strings.Index(last, ":"); i >= 0 {
			host = last[:i]
		}
		if host != "" && !slices.Contains(hosts, host) {
			hosts = append(hosts, host)
		}
	}
	slices.Sort(hosts)
	return hosts
}

// peerAuth is quorum.PeerAuth by server/sasl's DIGEST-MD5 or GSSAPI.
type peerAuth struct {
	users          sasl.Users
	krb            *sasl.Kerberos // the QuorumServer section's Kerberos login, or nil
	authzHosts     []string
	learner        *learner
	learn, require bool
}

func (p *peerAuth) Learner(host string) (quorumauth.Client, error) {
	if !p.learn {
		return nil, nil
	}
	return p.learner.client(host)
}

func (p *peerAuth) Server() quorumauth.Server {
	if p.krb != nil {
		return sasl.NewQuorumGSSAPIServer(p.krb, p.authzHosts)
	}
	return sasl.NewQuorumServer(p.users, nil)
}

func (p *peerAuth) Required() bool { return p.require }
