package main

import (
	"fmt"
	"os"

	"github.com/zkd/zkd/quorum/zkfollow"
	"github.com/zkd/zkd/server/sasl"
)

// followQuorumSASL reads the learner side of ZooKeeper's quorum SASL from
// zoo.cfg for `zkd follow`, as a ZooKeeper observer would: with
// quorum.auth.enableSasl and quorum.auth.learnerRequireSasl both true, the
// follower authenticates to the leader by DIGEST-MD5 as the username and
// password of the JAAS file's QuorumLearner section
// (quorum.auth.learner.saslLoginContext). Otherwise, as ZooKeeper's
// learner, it does not authenticate (nil). It also returns a line for the
// operator saying who it authenticates as.
func followQuorumSASL(c *zooCfg) (func() zkfollow.SASLClient, string, error) {
	if !c.propBool("quorum.auth.enableSasl") || !c.propBool("quorum.auth.learnerRequireSasl") {
		return nil, "", nil
	}
	path, ok := c.Props["java.security.auth.login.config"]
	if !ok {
		return nil, "", fmt.Errorf("zkd follow: quorum.auth.learnerRequireSasl=true needs a JAAS file with a QuorumLearner section: give -Djava.security.auth.login.config=<file> in SERVER_JVMFLAGS or JVMFLAGS, as for ZooKeeper")
	}
	section := "QuorumLearner"
	if s, ok := c.Props["quorum.auth.learner.saslLoginContext"]; ok {
		section = s
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("zkd follow: java.security.auth.login.config: %w", err)
	}
	jaas, err := sasl.ParseJAAS(string(text), c.Props)
	if err != nil {
		return nil, "", fmt.Errorf("zkd follow: java.security.auth.login.config %s: %w", path, err)
	}
	mods, ok := jaas[section]
	if !ok {
		return nil, "", fmt.Errorf("zkd follow: JAAS file %s has no %s section, which quorum.auth.learnerRequireSasl=true needs", path, section)
	}
	var user, password string
	for _, m := range mods {
		if m.Class != sasl.DigestLoginModule {
			return nil, "", fmt.Errorf("zkd follow: JAAS file %s, section %s: login module %s is not implemented for quorum SASL by zkd follow; only %s (DIGEST-MD5) is", path, section, m.Class, sasl.DigestLoginModule)
		}
		u, uok := m.Option("username")
		p, pok := m.Option("password")
		if !uok || !pok {
			return nil, "", fmt.Errorf("zkd follow: JAAS file %s, section %s: %s needs username and password options", path, section, m.Class)
		}
		user, password = u, p
	}
	if user == "" {
		return nil, "", fmt.Errorf("zkd follow: JAAS file %s, section %s names no login module", path, section)
	}
	return func() zkfollow.SASLClient { return sasl.NewQuorumClient(user, password, nil) },
		fmt.Sprintf("authenticating to the ZooKeeper leader by quorum SASL (DIGEST-MD5) as %s (JAAS %s, section %s)", user, path, section), nil
}
