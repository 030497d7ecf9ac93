package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/sasl"
)

// stateSaslAuthenticated is Watcher.Event.KeeperState.SaslAuthenticated.
const stateSaslAuthenticated int32 = 6

// saslCreds are the credentials of a JAAS Client section: DIGEST-MD5's
// username and password, or (krb set) a Kerberos login for GSSAPI.
type saslCreds struct {
	user, password string
	krb            *krbLogin
	// errOut, if set, receives the reason an exchange failed.
	errOut io.Writer
}

// saslFromEnv reads the SASL settings zkCli.sh takes from CLIENT_JVMFLAGS
// and JVMFLAGS: -Djava.security.auth.login.config names a JAAS file whose
// section -Dzookeeper.sasl.clientconfig (default "Client") holds a
// DigestLoginModule with username and password options, or a
// Krb5LoginModule (see krbFromModule); -Dzookeeper.sasl.client=false
// turns SASL off. It returns nil when SASL is not configured, and a
// warning to print when the file has no such section (the Java client
// then connects without SASL, and so does zkcli).
func saslFromEnv(env []string) (creds *saslCreds, warning string, err error) {
	props := jvmFlagProps(env)
	path, ok := props["java.security.auth.login.config"]
	if !ok || strings.EqualFold(props["zookeeper.sasl.client"], "false") {
		return nil, "", nil
	}
	section := "Client"
	if s, ok := props["zookeeper.sasl.clientconfig"]; ok {
		section = s
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("zkcli: java.security.auth.login.config: %w", err)
	}
	jaas, err := sasl.ParseJAAS(string(text), props)
	if err != nil {
		return nil, "", fmt.Errorf("zkcli: %s: %w", path, err)
	}
	mods, ok := jaas[section]
	if !ok {
		return nil, fmt.Sprintf("JAAS file %s has no section %q: connecting without SASL", path, section), nil
	}
	for _, m := range mods {
		switch m.Class {
		case sasl.DigestLoginModule:
			user, _ := m.Option("username")
			password, _ := m.Option("password")
			if user != "" {
				return &saslCreds{user: user, password: password}, "", nil
			}
		case sasl.Krb5LoginModule:
			krb, err := krbFromModule(m, props, env)
			if err != nil {
				return nil, "", fmt.Errorf("zkcli: %s: section %s: %w", path, section, err)
			}
			return &saslCreds{krb: krb}, "", nil
		default:
			return nil, "", fmt.Errorf("zkcli: %s: section %s uses %s; zkcli speaks DIGEST-MD5 (%s) and Kerberos (%s) only", path, section, m.Class, sasl.DigestLoginModule, sasl.Krb5LoginModule)
		}
	}
	return nil, "", fmt.Errorf("zkcli: %s: section %s has no username option", path, section)
}

// saslMechanism is one connection's client exchange: sasl.Client
// (DIGEST-MD5) or sasl.GSSAPIClient.
type saslMechanism interface {
	Evaluate(challenge []byte) ([]byte, error)
	Complete() bool
}

// start begins an exchange with the server dialled at addr, connected at
// ip, and returns its first token.
func (c *saslCreds) start(addr string, ip net.IP) (saslMechanism, []byte, error) {
	if c.krb == nil {
		cl := sasl.NewClient(c.user, c.password, nil)
		return cl, cl.First(), nil
	}
	cl, err := c.krb.exchange(addr, ip)
	if err != nil {
		return nil, nil, err
	}
	first, err := cl.First()
	return cl, first, err
}

// authenticateSASL runs the SASL exchange on a new connection w, as
// the Java client does after every handshake; other requests wait for it
// (ready). Success reports SaslAuthenticated; a refusal reports AuthFailed
// and ends the session. A connection lost meanwhile leaves it to the next
// handshake.
func (s *Session) authenticateSASL(w *wireConn) {
	lost := false
	var ip net.IP
	if a, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		ip = a.IP
	}
	cl, token, failure := s.sasl.start(w.addr, ip)
	for failure == nil && !cl.Complete() {
		ch, err := w.send(s.xid.Add(1), jute.OpSASL, &jute.GetSASLRequest{Token: token})
		if err != nil {
			lost = true
			break
		}
		r, ok := <-ch
		if !ok {
			lost = true
			break
		}
		if r.hdr.Err != 0 {
			failure = fmt.Errorf("server %s refused the SASL exchange: %w", w.addr, jute.Code(r.hdr.Err))
			break
		}
		var resp jute.SetSASLResponse
		if err := jute.Decode(r.body, &resp); err != nil {
			failure = err
			break
		}
		token, failure = cl.Evaluate(resp.Token)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closing || s.mu.wire != w {
		return
	}
	// A refusing server closes the connection after its reply: that
	// disconnect was held back (authing) and is reported as AuthFailed
	// alone, as the Java client does.
	held := s.mu.heldDisconnected
	s.mu.saslPending, s.mu.authing, s.mu.heldDisconnected = false, false, false
	if lost && failure == nil {
		if held {
			s.onEvent(jute.WatcherEvent{Type: jute.EventNone, State: jute.StateDisconnected})
		}
		return
	}
	if failure != nil {
		if s.sasl.errOut != nil {
			fmt.Fprintf(s.sasl.errOut, "zkcli: SASL authentication to %s failed: %v\n", w.addr, failure)
		}
		s.setStateLocked(stateAuthFailed)
		s.onEvent(jute.WatcherEvent{Type: jute.EventNone, State: jute.StateAuthFailed})
		go s.conn().Close()
		return
	}
	if held {
		s.onEvent(jute.WatcherEvent{Type: jute.EventNone, State: jute.StateDisconnected})
		return
	}
	s.setStateLocked(stateConnected) // wakes the requests waiting in ready
	s.onEvent(jute.WatcherEvent{Type: jute.EventNone, State: stateSaslAuthenticated})
}
