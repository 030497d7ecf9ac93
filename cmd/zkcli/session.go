package main

import (
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/jute"
)

// errNotConnected reports a command run on a session that is closed or
// whose authentication failed; the shell prints zkCli's "Not connected".
var errNotConnected = errors.New("zkcli: not connected")

// Client states as ZooKeeper's Java client names them (ZooKeeper.States),
// shown in the prompt.
const (
	stateConnecting = "CONNECTING"
	stateConnected  = "CONNECTED"
	stateClosed     = "CLOSED"
	stateAuthFailed = "AUTH_FAILED"
)

// Session is one ZooKeeper session. go-zk owns it: the handshake, pings,
// reconnection and re-sending of credentials. Requests go through Call,
// which writes them as raw Jute frames on go-zk's own connection (see
// wireConn), so every opcode is available and every error code and null
// buffer reaches the shell exactly as the server sent it.
//
// Watch notifications and session state changes are handed to the event
// function given to Dial, from go-zk's goroutines, filtered as the Java
// client filters them: a node event is delivered only if a watch this
// session registered covers it.
type Session struct {
	zkc     atomic.Pointer[zk.Conn]
	host    string
	root    chroot
	timeout time.Duration
	onEvent func(jute.WatcherEvent)
	sasl    *saslCreds // nil: no SASL

	// Watches are the watches this session registered, tracked as the Java
	// client's ZKWatchManager does.
	Watches *watchSet

	xid      atomic.Int32
	lastZxid atomic.Int64

	mu struct {
		sync.Mutex
		wire      *wireConn
		state     string
		closing   bool
		sessionID int64
		// authing is set while addauth waits for its reply: a server that
		// refuses the credential closes the connection right after
		// replying, and that disconnect is reported as AuthFailed alone.
		authing          bool
		heldDisconnected bool
		// saslPending holds requests back while the connection's SASL
		// exchange runs (authenticateSASL).
		saslPending bool
	}
	changed chan struct{} // closed and replaced on every state change
}

// nopLogger silences go-zk's connection log lines, which zkCli does not print.
type nopLogger struct{}

// Printf discards the message.
func (nopLogger) Printf(string, ...any) {}

// Dial starts a session with the servers of the connection string host
// ("h1:p1,h2:p2", optionally followed by a chroot path "/app" that the
// session then sees as "/"). It returns at once; the session is
// established in the background and Call waits for it. onEvent receives
// watch and session events; it must not call back into the session.
func Dial(host string, timeout time.Duration, onEvent func(jute.WatcherEvent), creds *saslCreds) (*Session, error) {
	serverList, root, err := splitChroot(host)
	if err != nil {
		return nil, err
	}
	s := &Session{
		host:    host,
		root:    chroot(root),
		timeout: timeout,
		onEvent: onEvent,
		sasl:    creds,
		Watches: newWatchSet(),
		changed: make(chan struct{}),
	}
	s.mu.state = stateConnecting
	s.xid.Store(rawXidBase)
	servers := strings.Split(serverList, ",")
	conn, _, err := zk.Connect(servers, timeout,
		zk.WithLogger(nopLogger{}),
		zk.WithLogInfo(false),
		zk.WithDialer(s.dial),
		zk.WithHostProvider(&namedHosts{}),
		zk.WithEventCallback(s.event))
	if err != nil {
		return nil, err
	}
	s.zkc.Store(conn)
	return s, nil
}

// conn returns go-zk's connection. go-zk may report the first events before
// Connect has returned it, so callers spin briefly until it is stored.
func (s *Session) conn() *zk.Conn {
	for {
		if c := s.zkc.Load(); c != nil {
			return c
		}
		time.Sleep(time.Millisecond)
	}
}

// dial opens one TCP connection for go-zk, wrapped so that Call can use it.
func (s *Session) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(timeout))
	if c, err = tlsDial(c, addr); err != nil {
		return nil, err
	}
	c.SetDeadline(time.Time{})
	w := newWireConn(c, s.noteZxid)
	w.addr = addr
	s.mu.Lock()
	s.mu.wire = w
	s.mu.Unlock()
	return w, nil
}

// noteZxid remembers the highest zxid seen in a reply, for re-registering
// watches after a reconnect.
func (s *Session) noteZxid(z int64) {
	for {
		old := s.lastZxid.Load()
		if z <= old || s.lastZxid.CompareAndSwap(old, z) {
			return
		}
	}
}

// setStateLocked records a new state and wakes waiters.
func (s *Session) setStateLocked(state string) {
	s.mu.state = state
	close(s.changed)
	s.changed = make(chan struct{})
}

// event is go-zk's event callback: it runs on go-zk's goroutines and must not
// block on the connection.
func (s *Session) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		we := jute.WatcherEvent{Type: int32(ev.Type), State: int32(ev.State), Path: s.root.toClient(ev.Path)}
		if s.Watches.fire(we) {
			s.onEvent(we)
		}
		return
	}
	s.mu.Lock()
	if s.mu.closing || s.mu.state == stateAuthFailed || s.mu.state == stateClosed {
		s.mu.Unlock()
		return
	}
	var report int32
	deliver := true
	switch ev.State {
	case zk.StateHasSession:
		id := s.conn().SessionID()
		reconnected := s.mu.sessionID == id
		s.mu.sessionID = id
		s.setStateLocked(stateConnected)
		report = jute.StateSyncConnected
		if s.sasl != nil {
			s.mu.saslPending, s.mu.authing = true, true
			go s.authenticateSASL(s.mu.wire)
		}
		if reconnected {
			go s.restoreWatches()
		}
	case zk.StateDisconnected:
		wasConnected := s.mu.state == stateConnected
		s.setStateLocked(stateConnecting)
		report, deliver = jute.StateDisconnected, wasConnected
		if deliver && s.mu.authing {
			s.mu.heldDisconnected, deliver = true, false
		}
	case zk.StateExpired:
		s.setStateLocked(stateClosed)
		report = jute.StateExpired
		go s.conn().Close()
	case zk.StateAuthFailed:
		s.setStateLocked(stateAuthFailed)
		report = jute.StateAuthFailed
		go s.conn().Close()
	default:
		deliver = false
	}
	if deliver {
		// Reported before waiters wake, so that a command waiting for the
		// session prints after the SyncConnected event. onEvent never
		// calls back into the session.
		s.onEvent(jute.WatcherEvent{Type: jute.EventNone, State: report})
	}
	s.mu.Unlock()
}

// restoreWatches re-registers the session's watches after go-zk reconnected
// to the same session, as the Java client's setWatches does; go-zk only
// knows the watches set through its own API, and the shell sets none there.
func (s *Session) restoreWatches() {
	req := s.Watches.setWatches(s.lastZxid.Load())
	if req == nil {
		return
	}
	_ = s.Call(jute.OpSetWatches2, req, nil)
}

// State returns the session state as the Java client names it.
func (s *Session) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.state
}

// Alive reports whether the session can still run commands (Java's
// States.isAlive: not closed and not failed authentication).
func (s *Session) Alive() bool {
	st := s.State()
	return st != stateClosed && st != stateAuthFailed
}

// SessionID returns the server-assigned session id, 0 before the first
// handshake.
func (s *Session) SessionID() int64 { return s.conn().SessionID() }

// Host returns the connection string the session was dialed with.
func (s *Session) Host() string { return s.host }

// ready waits until the session is connected, for at most the session
// timeout, and returns the connection to write on.
func (s *Session) ready() (*wireConn, error) {
	deadline := time.NewTimer(s.timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		state, w, changed, pending := s.mu.state, s.mu.wire, s.changed, s.mu.saslPending
		s.mu.Unlock()
		switch state {
		case stateConnected:
			if !pending {
				return w, nil
			}
		case stateClosed, stateAuthFailed:
			return nil, errNotConnected
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil, jute.CodeConnectionLoss
		}
	}
}

// Call sends one request on the session and decodes the reply body into resp
// (which may be nil for replies without a body). Paths in req and resp are
// the shell's: Call maps them through the chroot, rewriting req in place. A server error comes back
// as its jute.Code; a lost connection as jute.CodeConnectionLoss; no reply
// within the session timeout as jute.CodeOperationTimeout.
func (s *Session) Call(op int32, req, resp jute.Record) error {
	w, err := s.ready()
	if err != nil {
		return err
	}
	xid := s.xid.Add(1)
	if xid < rawXidBase { // wrapped: start the shell's range again
		s.xid.Store(rawXidBase)
		xid = s.xid.Add(1)
	}
	if req != nil {
		s.root.request(req)
	}
	ch, err := w.send(xid, op, req)
	if err != nil {
		return jute.CodeConnectionLoss
	}
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case r, ok := <-ch:
		if !ok {
			return jute.CodeConnectionLoss
		}
		if r.hdr.Err != 0 {
			return jute.Code(r.hdr.Err)
		}
		if resp != nil {
			if err := jute.Decode(r.body, resp); err != nil {
				return jute.CodeMarshallingError
			}
			s.root.response(resp)
		}
		return nil
	case <-timer.C:
		return jute.CodeOperationTimeout
	}
}

// AddAuth adds credentials to the session through go-zk, which re-sends them
// after every reconnect. A refused credential fails the session, as in
// ZooKeeper (the server closes the connection).
func (s *Session) AddAuth(scheme string, auth []byte) error {
	if _, err := s.ready(); err != nil {
		return err
	}
	s.mu.Lock()
	s.mu.authing = true
	s.mu.Unlock()
	err := s.conn().AddAuth(scheme, auth)
	s.mu.Lock()
	held := s.mu.heldDisconnected
	s.mu.authing, s.mu.heldDisconnected = false, false
	s.mu.Unlock()
	if held && !errors.Is(err, zk.ErrAuthFailed) {
		s.onEvent(jute.WatcherEvent{Type: jute.EventNone, State: jute.StateDisconnected})
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, zk.ErrAuthFailed) {
		s.mu.Lock()
		deliver := s.mu.state != stateAuthFailed
		if deliver {
			s.setStateLocked(stateAuthFailed)
		}
		s.mu.Unlock()
		if deliver {
			s.onEvent(jute.WatcherEvent{Type: jute.EventNone, State: jute.StateAuthFailed})
		}
		go s.conn().Close()
		return jute.CodeAuthFailed
	}
	return jute.CodeConnectionLoss
}

// Close ends the session (closeSession) and reports the Closed state event,
// as the Java client does.
func (s *Session) Close() {
	s.mu.Lock()
	if s.mu.closing {
		s.mu.Unlock()
		return
	}
	s.mu.closing = true
	wasAlive := s.mu.state != stateClosed && s.mu.state != stateAuthFailed
	s.setStateLocked(stateClosed)
	s.mu.Unlock()
	s.conn().Close()
	if wasAlive {
		s.onEvent(jute.WatcherEvent{Type: jute.EventNone, State: jute.StateClosed})
	}
}
