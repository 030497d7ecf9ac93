package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/sasl"
)

// stateSaslAuthenticated is Watcher.Event.KeeperState.SaslAuthenticated.
const stateSaslAuthenticated int32 = 6

// saslCreds are the DIGEST-MD5 credentials of a JAAS Client section.
type saslCreds struct {
	user, password string
}

// saslFromEnv reads the SASL settings zkCli.sh takes from CLIENT_JVMFLAGS
// and JVMFLAGS: -Djava.security.auth.login.config names a JAAS file whose
// section -Dzookeeper.sasl.clientconfig (default "Client") holds a
// DigestLoginModule with username and password options;
// -Dzookeeper.sasl.client=false turns SASL off. It returns nil when SASL
// is not configured, and a warning to print when the file has no such
// section (the Java client then connects without SASL, and so does zkcli).
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
		if m.Class != sasl.DigestLoginModule {
			return nil, "", fmt.Errorf("zkcli: %s: section %s uses %s; zkcli speaks DIGEST-MD5 only (%s)", path, section, m.Class, sasl.DigestLoginModule)
		}
		user, _ := m.Option("username")
		password, _ := m.Option("password")
		if user != "" {
			return &saslCreds{user: user, password: password}, "", nil
		}
	}
	return nil, "", fmt.Errorf("zkcli: %s: section %s has no username option", path, section)
}

// authenticateSASL runs the DIGEST-MD5 exchange on a new connection w, as
// the Java client does after every handshake; other requests wait for it
// (ready). Success reports SaslAuthenticated; a refusal reports AuthFailed
// and ends the session. A connection lost meanwhile leaves it to the next
// handshake.
func (s *Session) authenticateSASL(w *wireConn) {
	cl := sasl.NewClient(s.sasl.user, s.sasl.password, nil)
	token := cl.First()
	var failure error
	lost := false
	for !cl.Complete() {
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
			failure = jute.Code(r.hdr.Err)
			break
		}
		var resp jute.SetSASLResponse
		if err := jute.Decode(r.body, &resp); err != nil {
			failure = err
			break
		}
		if token, failure = cl.Evaluate(resp.Token); failure != nil {
			break
		}
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
	if lost {
		if held {
			s.onEvent(jute.WatcherEvent{Type: jute.EventNone, State: jute.StateDisconnected})
		}
		return
	}
	if failure != nil {
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
