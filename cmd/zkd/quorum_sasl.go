package main

import (
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/quorum/quorumauth"
	"github.com/zkd/zkd/server/sasl"
)

// Quorum SASL (ZooKeeper's quorum.auth.* keys): DIGEST-MD5 between
// members, from the JAAS file's QuorumServer section (the users a member
// accepts, user_<name> options) and QuorumLearner section (the username
// and password a member presents), as ZooKeeper's SaslQuorumAuthServer
// and SaslQuorumAuthLearner read them. Kerberos there is refused.

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

// learnerLogin returns the username and password of section, a
// QuorumLearner section: one DigestLoginModule with both options.
func learnerLogin(jaas sasl.JAAS, path, section, what string) (user, password string, err error) {
	mods, ok := jaas[section]
	if !ok {
		return "", "", fmt.Errorf("%s: JAAS file %s has no %s section", what, path, section)
	}
	for _, m := range mods {
		if m.Class != sasl.DigestLoginModule {
			return "", "", fmt.Errorf("%s: JAAS file %s, section %s: login module %s is not implemented for quorum SASL by zkd; only %s (DIGEST-MD5) is", what, path, section, m.Class, sasl.DigestLoginModule)
		}
		u, uok := m.Option("username")
		p, pok := m.Option("password")
		if !uok || !pok {
			return "", "", fmt.Errorf("%s: JAAS file %s, section %s: %s needs username and password options", what, path, section, m.Class)
		}
		user, password = u, p
	}
	if user == "" {
		return "", "", fmt.Errorf("%s: JAAS file %s, section %s names no login module", what, path, section)
	}
	return user, password, nil
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
// the leader by DIGEST-MD5 as the QuorumLearner section's user
// (quorum.auth.learner.saslLoginContext). Otherwise, as ZooKeeper's
// learner, it does not authenticate (nil). It also returns a line for the
// operator saying who it authenticates as.
func followQuorumSASL(c *zooCfg) (func() quorumauth.Client, string, error) {
	if !c.propBool("quorum.auth.enableSasl") || !c.propBool("quorum.auth.learnerRequireSasl") {
		return nil, "", nil
	}
	const what = "zkd follow: quorum.auth.learnerRequireSasl=true"
	jaas, path, err := quorumJAAS(c, what)
	if err != nil {
		return nil, "", err
	}
	sec := section(c, "quorum.auth.learner.saslLoginContext", "QuorumLearner")
	user, password, err := learnerLogin(jaas, path, sec, what)
	if err != nil {
		return nil, "", err
	}
	return func() quorumauth.Client { return sasl.NewQuorumClient(user, password, nil) },
		fmt.Sprintf("authenticating to the ZooKeeper leader by quorum SASL (DIGEST-MD5) as %s (JAAS %s, section %s)", user, path, sec), nil
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
	if krb != nil {
		return fmt.Errorf("%s: JAAS file %s, section %s: Kerberos quorum SASL is not implemented by zkd; use %s (DIGEST-MD5)", what, path, serverSec, sasl.DigestLoginModule)
	}
	learnerSec := section(c, "quorum.auth.learner.saslLoginContext", "QuorumLearner")
	user, password, err := learnerLogin(jaas, path, learnerSec, what)
	if err != nil {
		return err
	}
	qc.PeerAuth = &peerAuth{users: sasl.Users{Passwords: users}, user: user, password: password, learn: learn, require: require}
	log.Info("quorum SASL (DIGEST-MD5) between members",
		zap.String("jaas", path), zap.String("learnerAs", user), zap.Int("serverUsers", len(users)),
		zap.Bool("learnerRequireSasl", learn), zap.Bool("serverRequireSasl", require))
	return nil
}

// peerAuth is quorum.PeerAuth by server/sasl's DIGEST-MD5.
type peerAuth struct {
	users          sasl.Users
	user, password string
	learn, require bool
}

func (p *peerAuth) Learner() quorumauth.Client {
	if !p.learn {
		return nil
	}
	return sasl.NewQuorumClient(p.user, p.password, nil)
}

func (p *peerAuth) Server() quorumauth.Server { return sasl.NewQuorumServer(p.users, nil) }

func (p *peerAuth) Required() bool { return p.require }
