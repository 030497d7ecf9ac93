package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/session"
)

// ErrClosed is returned by Serve when it is called after Close.
var ErrClosed = errors.New("server: closed")

// Server accepts ZooKeeper client connections and serves them from a
// Backend. Create it with New, run Serve (or ListenAndServe), stop it with
// Close.
type Server struct {
	cfg       Config
	b         Backend
	log       *zap.Logger
	whitelist map[string]bool // nil: every word is allowed
	start     time.Time
	traceMask atomic.Int64 // gtmk / stmk

	wg   sync.WaitGroup // every goroutine started through goAttach
	quit chan struct{}  // closed once by Close

	mu struct {
		sync.Mutex
		closed   bool
		ln       net.Listener
		conns    map[*conn]struct{}
		sessions map[int64]*conn // established connection of each session
		perIP    map[string]int
	}

	stats    serverStats
	zm       *ZKMetrics // mntr, monitor and /metrics (monitor.go)
	connSeq  atomic.Uint64
	reserve  fdReserve   // see refuseOutOfFiles
	throttle requestGate // see admit
	slow     slowLimiter // see noteSlow
	fdLog    slowLimiter // see overFDHeadroom
	fdBase   int         // descriptors open when Serve began (see overFDHeadroom)
	// connThrottle is ZooKeeper's connection throttle (connthrottle.go).
	connThrottle *connThrottle
}

// New checks cfg and returns a Server that serves clients from b.
func New(cfg Config, b Backend) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if b == nil {
		return nil, errors.New("server: nil Backend")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Version == "" {
		cfg.Version = DefaultConfig().Version
	}
	if cfg.BuiltOn == "" {
		cfg.BuiltOn = builtOn()
	}
	s := &Server{
		cfg:   cfg,
		b:     b,
		log:   cfg.Logger,
		start: time.Now(),
		quit:  make(chan struct{}),
	}
	s.traceMask.Store(defaultTraceMask)

	s.whitelist = map[string]bool{}
	for _, w := range cfg.FourLetterWhitelist {
		w = strings.TrimSpace(w)
		if w == "*" {
			s.whitelist = nil
			break
		}
		s.whitelist[w] = true
	}
	s.mu.conns = map[*conn]struct{}{}
	s.mu.sessions = map[int64]*conn{}
	s.mu.perIP = map[string]int{}
	s.stats.reset()
	s.zm = cfg.Metrics
	if s.zm == nil {
		s.zm = NewZKMetrics()
	}
	s.connThrottle = newConnThrottle(cfg.ConnThrottle)
	s.registerMonitor()
	return s, nil
}

// ListenAndServe listens on Config.ClientAddr and serves until Close.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.ClientAddr)
	if err != nil {
		return fmt.Errorf("server: listen %s: %w", s.cfg.ClientAddr, err)
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln until Close, then returns nil. It takes
// ownership of ln.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	if s.mu.ln != nil {
		s.mu.Unlock()
		return errors.New("server: Serve called twice")
	}
	s.mu.ln = ln
	s.mu.Unlock()
	s.log.Info("serving clients", zap.String("addr", ln.Addr().String()))
	s.reserve.hold()
	s.mu.Lock()
	s.fdBase = openFDs()
	s.mu.Unlock()
	if av, ok := s.b.(Availability); ok {
		was := av.Serving() // before the first accept: its connections follow this state
		s.goAttach(func() { s.watchAvailability(av, was) })
	}

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.quit:
				return nil
			default:
			}
			if s.refuseOutOfFiles(ln, err) {
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed, retrying", zap.Error(err), zap.Duration("backoff", backoff))
				select {
				case <-time.After(backoff):
				case <-s.quit:
					return nil
				}
				continue
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		backoff = 0
		s.accept(nc)
	}
}

// isTemporary reports accept errors worth retrying, such as running out
// of file descriptors.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// accept registers a new connection, enforcing MaxClientCnxns, and starts
// its goroutines.
func (s *Server) accept(nc net.Conn) {
	ip := remoteIP(nc.RemoteAddr())
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if s.overMaxCnxns(nc) || s.overFDHeadroom(nc) {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if limit := s.cfg.MaxClientCnxns; limit > 0 && s.mu.perIP[ip] >= limit {
		s.mu.Unlock()
		s.stats.connectionRejected.Add(1)
		s.log.Warn("connection refused: too many connections from this address",
			zap.String("remote", nc.RemoteAddr().String()), zap.Int("maxClientCnxns", limit))
		nc.Close()
		return
	}
	c := newConn(s, nc, ip)
	s.mu.perIP[ip]++
	s.mu.conns[c] = struct{}{}
	s.mu.Unlock()
	if !s.goAttach(c.serve) {
		c.close("server closing")
		s.removeConn(c)
	}
}

// removeConn forgets c: its address slot and, if c still holds it, its
// session's registration.
func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mu.conns[c]; !ok {
		return
	}
	delete(s.mu.conns, c)
	if s.mu.perIP[c.ip]--; s.mu.perIP[c.ip] <= 0 {
		delete(s.mu.perIP, c.ip)
	}
	if id := c.sessionID.Load(); id != 0 && s.mu.sessions[id] == c {
		delete(s.mu.sessions, id)
	}
}

// registerSession makes c the connection of session id, closing the
// connection it replaces, if any.
func (s *Server) registerSession(id int64, c *conn) {
	s.mu.Lock()
	old := s.mu.sessions[id]
	s.mu.sessions[id] = c
	s.mu.Unlock()
	if old != nil && old != c {
		s.log.Info("session moved to a new connection, closing the old one", zap.String("session", hexID(id)),
			zap.String("remote", c.remote), zap.String("old", old.remote))
		old.close("session moved to a new connection")
	}
}

// closeSessionConn closes the connection that holds session id, if any, for
// a new connection (by) that asks to resume the session.
func (s *Server) closeSessionConn(id int64, by *conn) {
	s.mu.Lock()
	old := s.mu.sessions[id]
	if old != nil {
		delete(s.mu.sessions, id)
	}
	s.mu.Unlock()
	if old != nil && old != by {
		s.log.Info("client resumes the session elsewhere, closing its connection", zap.String("session", hexID(id)),
			zap.String("remote", old.remote), zap.String("by", by.remote))
		old.close("session resumed on another connection")
	}
}

// goAttach runs f in a goroutine counted by the server's WaitGroup. It
// returns false, without running f, once Close has begun.
func (s *Server) goAttach(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// Close stops accepting, closes every connection and waits for every
// goroutine of the server. Sessions stay alive in the Backend: clients
// reconnect elsewhere. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.mu.closed = true
	close(s.quit)
	s.reserve.free()
	var err error
	if s.mu.ln != nil {
		err = s.mu.ln.Close()
	}
	conns := make([]*conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close("server closing")
	}
	s.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("server: close listener: %w", err)
	}
	return nil
}

// SessionClosed closes the connection of session id, if this server holds
// one, because the session was closed or expired. zab calls it from its
// apply goroutine; it does not block. A connection that itself asked to
// close the session is left to send its reply first.
func (s *Server) SessionClosed(id int64) {
	s.mu.Lock()
	c := s.mu.sessions[id]
	s.mu.Unlock()
	if c == nil || c.closingSession.Load() {
		return
	}
	s.log.Info("session closed", zap.String("session", hexID(id)),
		zap.String("remote", c.remote), zap.String("reason", "closed or expired"))
	c.close("session closed or expired")
}

// CloseConnections closes every client connection and keeps serving: the
// sessions stay alive in the Backend and their clients reconnect, here or
// elsewhere, re-registering their watches. A Backend that replaces its tree
// (installing a snapshot) or stops being able to serve should call it;
// connections also notice a replaced tree at their next packet. It does not
// block.
func (s *Server) CloseConnections(reason string) {
	for _, c := range s.connections() {
		c.close(reason)
	}
	s.log.Info("closed every client connection", zap.String("reason", reason))
}

// serving reports whether the Backend serves clients now.
func (s *Server) serving() bool {
	av, ok := s.b.(Availability)
	return !ok || av.Serving()
}

// readOnlyAllowed reports whether read-only clients are served while the
// Backend is not serving (readonlymode.enabled).
func (s *Server) readOnlyAllowed() bool {
	av, ok := s.b.(Availability)
	return ok && av.ReadOnlyAllowed()
}

// localSessionID returns a session id for a read-only session, which the
// log never sees: ZooKeeper's id layout with server id 0, which no
// ensemble member has, so it cannot collide with a leader-assigned id.
func (s *Server) localSessionID() int64 {
	return session.InitialID(0, time.Now().UnixMilli()) + int64(s.connSeq.Add(1))
}

// waitZxid gives an ensemble member up to five ticks (ZooKeeper's default
// syncLimit, about one leader election), at most 2s, to apply zxid before
// a client that has seen it is refused.
func (s *Server) waitZxid(zxid int64) bool {
	w, ok := s.b.(ZxidWaiter)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(5*s.cfg.TickTime, 2*time.Second))
	defer cancel()
	return w.WaitZxid(ctx, zxid)
}

// syncReattach syncs an ensemble member with the leader before a session
// resumes on it (see ReattachSyncer); true on a standalone server. It
// waits as long as waitZxid, or a third of the session's timeout if that
// is longer: a leader whose disk is slow (fsyncs of seconds) takes longer
// than 2 s to sync, and a refused client only tries the next member,
// which must sync with the same leader, until its session expires. A
// third leaves the client two thirds to reconnect elsewhere should this
// member be the one cut off.
func (s *Server) syncReattach(sessionTimeout time.Duration) bool {
	rs, ok := s.b.(ReattachSyncer)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(min(5*s.cfg.TickTime, 2*time.Second), sessionTimeout/3))
	defer cancel()
	return rs.SyncReattach(ctx) == nil
}

// watchAvailability closes every connection when the Backend stops
// serving (it lost its quorum), checking a few times per tick. was is
// whether it served when Serve began: a member that starts without its
// quorum has lost nothing, and its connections so far (4-letter words,
// read-only sessions) stay open.
func (s *Server) watchAvailability(av Availability, was bool) {
	every := s.cfg.TickTime / 4
	if every <= 0 || every > 100*time.Millisecond {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		now := av.Serving()
		if was && !now {
			s.log.Warn("lost the quorum: closing client connections until it is back")
			s.CloseConnections("member not serving")
		} else if !was && now {
			s.log.Info("quorum is back: serving clients")
			// Read-only sessions end: their clients reconnect read-write.
			for _, c := range s.connections() {
				if c.readOnly.Load() {
					c.close("quorum is back")
				}
			}
		}
		was = now
	}
}

// Addr returns the listener's address, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ln == nil {
		return nil
	}
	return s.mu.ln.Addr()
}

// connections returns a snapshot of the open connections.
func (s *Server) connections() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := make([]*conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		cs = append(cs, c)
	}
	return cs
}

// remoteIP returns the IP part of a remote address.
func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// hexID formats a session id or zxid as ZooKeeper logs it: 0x and lower
// case hex.
func hexID(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }

// serverStats are the server-wide counters behind srvr, stat and mntr.
type serverStats struct {
	packetsReceived       atomic.Int64
	packetsSent           atomic.Int64
	bytesReceived         atomic.Int64
	connectionRejected    atomic.Int64
	authFailed            atomic.Int64
	largeRequestsRejected atomic.Int64
	outstanding           atomic.Int64
	panics                atomic.Int64 // recovered panics of connection goroutines
	latency               latencyStats // every request
	readLatency           latencyStats // requests that are not log entries (reads, pings, …)
	updateLatency         latencyStats // writes that went through the log
}

// reset clears the counters srst clears.
func (st *serverStats) reset() {
	st.packetsReceived.Store(0)
	st.packetsSent.Store(0)
	st.latency.reset()
	st.readLatency.reset()
	st.updateLatency.reset()
}

// latencyStats tracks min, max and mean of request latencies in ms. It is
// lock-free: every request of every connection updates the server's one.
type latencyStats struct {
	min   atomic.Int64 // valid when count > 0
	max   atomic.Int64
	sum   atomic.Int64
	count atomic.Int64
}

func (l *latencyStats) reset() {
	l.count.Store(0)
	l.sum.Store(0)
	l.min.Store(0)
	l.max.Store(0)
}

func (l *latencyStats) add(ms int64) {
	if l.count.Add(1) == 1 {
		l.min.Store(ms)
	}
	l.sum.Add(ms)
	for {
		lo := l.min.Load()
		if ms >= lo || l.min.CompareAndSwap(lo, ms) {
			break
		}
	}
	for {
		hi := l.max.Load()
		if ms <= hi || l.max.CompareAndSwap(hi, ms) {
			break
		}
	}
}

// snapshot returns min, mean and max (0 when nothing was recorded).
func (l *latencyStats) snapshot() (lo int64, avg float64, hi int64, n int64) {
	n = l.count.Load()
	if n == 0 {
		return 0, 0, 0, 0
	}
	return l.min.Load(), float64(l.sum.Load()) / float64(n), l.max.Load(), n
}
