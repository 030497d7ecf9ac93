package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
)

// The sessions workload opens -clients raw sessions (no go-zk: at 100k
// sessions the client's own memory matters), each setting -watches exists
// watches, and holds them for -duration, pinging each every third of the
// negotiated timeout as ZooKeeper's Java client does. Sessions are spread
// over the source addresses 127.0.0.1 … 127.0.0.K (-source-ips; by default
// one per 25,000 sessions), since one source address has about 28k
// ephemeral ports toward a server port. It reports connects/s, the ping
// latency, the sessions the server closed (disconnects) and, of those, the
// ones it expired, and the longest time it let pass between two pings of a
// session (max_ping_gap_ms: past the timeout, an expiry is zkbench's fault);
// with -pids, the RSS each session added to those processes and their CPU
// time per session-second while holding.
//
// With -reconnect a session the server disconnects is resumed as a client
// library resumes it: on the next server in the list, then the one after,
// with its session id, password and the last zxid it saw, pausing up to a
// second after each full round of the list, until a server takes it back
// or answers that it expired. The report adds how many came back, and how
// long that took. (Watches are not re-set on the new connection.)
// -procs N splits the sessions over N child zkbench processes, each with
// its own descriptor limit: see sessions_procs.go.

// sessionsPerIP is how many sessions -source-ips 0 puts on one address.
const sessionsPerIP = 25000

// rawSession is one held session.
type rawSession struct {
	nc       net.Conn
	id       int64
	passwd   []byte
	server   int          // index in -servers of the server it is on
	lastZxid atomic.Int64 // the highest zxid a reply carried
	expired  atomic.Bool  // a resumption was refused: the session expired
	sentNano atomic.Int64 // when the outstanding ping left, 0 if none
	lastSent atomic.Int64 // when zkbench last wrote to it (connect or ping), UnixNano
	maxGap   atomic.Int64 // longest time between two such writes, ns
	closed   atomic.Bool  // the server closed the connection
	mine     atomic.Bool  // zkbench closed it
}

// sessionStats is what the readers share.
type sessionStats struct {
	mu          sync.Mutex
	hist        *Histogram
	disconnects atomic.Int64
	pings       atomic.Uint64
	// With -reconnect: sessions resumed, and the time each took from its
	// disconnect; the first disconnect and last resumption, UnixNano.
	reconnected atomic.Int64
	refused     atomic.Int64
	reconnHist  *Histogram // under mu
	firstDown   atomic.Int64
	lastUp      atomic.Int64
	errMu       sync.Mutex
	lastErr     error
}

// setErr records err as the last error, or as the first with first set.
func (st *sessionStats) setErr(err error, first bool) {
	st.errMu.Lock()
	if !first || st.lastErr == nil {
		st.lastErr = err
	}
	st.errMu.Unlock()
}

// err returns the recorded error.
func (st *sessionStats) err() error {
	st.errMu.Lock()
	defer st.errMu.Unlock()
	return st.lastErr
}

func (st *sessionStats) record(d time.Duration) {
	st.mu.Lock()
	st.hist.Record(d)
	st.mu.Unlock()
	st.pings.Add(1)
}

// raiseNoFile lifts this process's RLIMIT_NOFILE soft limit to the hard
// one and returns the result.
func raiseNoFile() uint64 {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	return rl.Cur
}

// sourceIP is the source address of session i of n spread over ips
// addresses from 127.0.0.0 plus first.
func sourceIP(i, n, ips, first int) net.IP {
	m := i*ips/n + first // contiguous blocks, so each address holds n/ips
	return net.IPv4(127, byte(m>>16), byte(m>>8), byte(m))
}

// writeRecords writes records as one length-prefixed frame.
func writeRecords(nc net.Conn, recs ...jute.Record) error {
	e := jute.NewEncoder(make([]byte, 4, 64))
	for _, r := range recs {
		r.Encode(e)
	}
	b := e.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := nc.Write(b)
	return err
}

// sessionDialer dials from source address src, leaving the choice of
// local port to connect: see bindNoPort.
func sessionDialer(src net.IP) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 10 * time.Second, Control: bindNoPort}
}

// openSession connects from src, establishes (or, with id, resumes) a
// session and sets watches; the returned session has no reader yet. A
// resumption sends the last zxid the session saw, as a client does.
func openSession(addr string, src net.IP, timeout time.Duration, id int64, passwd []byte, lastZxid int64, watches int, root string) (*rawSession, error) {
	nc, err := sessionDialer(src).Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	req := &jute.ConnectRequest{TimeOut: int32(timeout / time.Millisecond), SessionId: id, Passwd: passwd, LastZxidSeen: lastZxid}
	if err := writeRecords(nc, req); err != nil {
		nc.Close()
		return nil, err
	}
	b, err := zkwire.ReadFrame(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect response: %w", err)
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(b, &resp); err != nil || resp.SessionId == 0 {
		nc.Close()
		return nil, errSessionRefused
	}
	s := &rawSession{nc: nc, id: resp.SessionId, passwd: resp.Passwd}
	s.lastSent.Store(time.Now().UnixNano())
	s.lastZxid.Store(lastZxid)
	for w := range watches {
		hdr := &jute.RequestHeader{Xid: int32(w + 1), Type: jute.OpExists}
		if err := writeRecords(nc, hdr, &jute.ExistsRequest{Path: fmt.Sprintf("%s/w%d", root, w), Watch: true}); err != nil {
			nc.Close()
			return nil, err
		}
		b, err := zkwire.ReadFrame(nc)
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("exists reply: %w", err)
		}
		s.seen(b)
	}
	nc.SetDeadline(time.Time{})
	return s, nil
}

// errSessionRefused is a connect response without a session: a resumed
// session had expired.
var errSessionRefused = errors.New("session refused (expired)")

// seen notes the zxid of reply b, as a client's lastZxidSeen.
func (s *rawSession) seen(b []byte) {
	var hdr jute.ReplyHeader
	if len(b) >= 16 && jute.Decode(b[:16], &hdr) == nil && hdr.Zxid > s.lastZxid.Load() {
		s.lastZxid.Store(hdr.Zxid)
	}
}

// readLoop reads replies until the connection ends, timing ping replies;
// when the server ends it, it calls lost if that is not nil.
func (s *rawSession) readLoop(st *sessionStats, lost func()) {
	var hdr jute.ReplyHeader
	for {
		b, err := zkwire.ReadFrame(s.nc)
		if err != nil {
			if !s.mine.Load() {
				s.closed.Store(true)
				st.disconnects.Add(1)
				st.setErr(err, false)
				if lost != nil {
					lost()
				}
			}
			return
		}
		if len(b) < 16 || jute.Decode(b[:16], &hdr) != nil {
			continue
		}
		if hdr.Zxid > s.lastZxid.Load() {
			s.lastZxid.Store(hdr.Zxid)
		}
		if hdr.Xid == jute.XidPing {
			if t := s.sentNano.Swap(0); t != 0 {
				st.record(time.Duration(time.Now().UnixNano() - t))
			}
		}
	}
}

// procSample is a process's RSS and CPU time.
type procSample struct {
	rss int64         // bytes
	cpu time.Duration // user + system
}

// sampleProc reads /proc/pid/status and /proc/pid/stat.
func sampleProc(pid int) (procSample, error) {
	var ps procSample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ps, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			ps.rss = kb << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ps, err
	}
	// Fields after the command, which is in parentheses: utime and stime
	// are the 12th and 13th of them, in clock ticks (100 a second on Linux).
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) > 12 {
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		stt, _ := strconv.ParseInt(f[12], 10, 64)
		ps.cpu = time.Duration(ut+stt) * 10 * time.Millisecond
	}
	return ps, nil
}

// sampleAll samples every pid; a missing process is an error.
func sampleAll(pids []int) ([]procSample, error) {
	out := make([]procSample, len(pids))
	for i, pid := range pids {
		s, err := sampleProc(pid)
		if err != nil {
			return nil, fmt.Errorf("zkbench: -pids: %w", err)
		}
		out[i] = s
	}
	return out, nil
}

// holder is one process's held sessions.
type holder struct {
	cfg      config
	ips      int
	st       *sessionStats
	sessions []atomic.Pointer[rawSession]
	stop     chan struct{} // closed when the hold ends
	resumes  sync.WaitGroup
}

// lost is called when the server ended session i's connection: with
// -reconnect, it resumes the session elsewhere.
func (h *holder) lost(i int, s *rawSession) func() {
	if !h.cfg.reconnect {
		return nil
	}
	return func() {
		h.resumes.Go(func() { h.resume(i, s) })
	}
}

// resume reconnects session i, lost by old, as a client library does:
// the next server in the list, then the one after, pausing up to a second
// after each full round, until one takes the session back or refuses it
// as expired, or the hold ends.
func (h *holder) resume(i int, old *rawSession) {
	down := time.Now()
	h.st.firstDown.CompareAndSwap(0, down.UnixNano())
	n := len(h.cfg.servers)
	src := sourceIP(i, h.cfg.clients, h.ips, h.cfg.sourceIPFirst)
	for k := 1; ; k++ {
		select {
		case <-h.stop:
			return
		default:
		}
		srv := (old.server + k) % n
		s, err := openSession(h.cfg.servers[srv], src, h.cfg.sessionTimeout, old.id, old.passwd, old.lastZxid.Load(), 0, h.cfg.root)
		if errors.Is(err, errSessionRefused) {
			old.expired.Store(true)
			h.st.refused.Add(1)
			h.st.setErr(fmt.Errorf("session 0x%x: expired, refused by %s", old.id, h.cfg.servers[srv]), false)
			return
		}
		if err == nil {
			s.server = srv
			took := time.Since(down)
			h.sessions[i].Store(s)
			h.st.reconnected.Add(1)
			h.st.mu.Lock()
			h.st.reconnHist.Record(took)
			h.st.mu.Unlock()
			for now := time.Now().UnixNano(); ; {
				last := h.st.lastUp.Load()
				if now <= last || h.st.lastUp.CompareAndSwap(last, now) {
					break
				}
			}
			go s.readLoop(h.st, h.lost(i, s))
			return
		}
		if k%n == 0 {
			select {
			case <-time.After(time.Duration(rand.Int64N(int64(time.Second)))):
			case <-h.stop:
				return
			}
		}
	}
}

// runSessions is the sessions workload.
func runSessions(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
	if cfg.procs > 1 {
		return runSessionProcs(ctx, cfg, logw)
	}
	nofile := raiseNoFile()
	ips := cfg.sourceIPs
	if ips == 0 {
		ips = (cfg.clients + sessionsPerIP - 1) / sessionsPerIP
	}
	fmt.Fprintf(logw, "zkbench: %d sessions from %d source addresses, RLIMIT_NOFILE %d\n", cfg.clients, ips, nofile)
	before, err := sampleAll(cfg.pids)
	if err != nil {
		return nil, err
	}
	st := &sessionStats{hist: NewHistogram(), reconnHist: NewHistogram()}
	h := &holder{cfg: cfg, ips: ips, st: st, sessions: make([]atomic.Pointer[rawSession], cfg.clients), stop: make(chan struct{})}
	sessions := h.sessions
	// Sessions ping from the moment they exist: connecting them all can
	// take longer than their timeout.
	pingDone := make(chan struct{})
	go func() {
		defer close(pingDone)
		pingSessions(ctx, cfg, sessions, h.stop)
	}()
	var once sync.Once
	stopHolding := func() {
		once.Do(func() {
			close(h.stop)
			<-pingDone
			h.resumes.Wait()
		})
	}
	defer func() {
		stopHolding()
		for i := range sessions {
			if s := sessions[i].Load(); s != nil {
				s.mine.Store(true)
				s.nc.Close()
			}
		}
	}()
	var (
		failed   atomic.Int64
		firstErr = &sessionStats{} // only its error
	)
	start := time.Now()
	parallelFor(ctx, cfg.parallel, cfg.clients, func(i int) {
		srv := i % len(cfg.servers)
		addr := cfg.servers[srv]
		s, err := openSession(addr, sourceIP(i, cfg.clients, ips, cfg.sourceIPFirst), cfg.sessionTimeout, 0, nil, 0, cfg.watches, cfg.root)
		if err != nil {
			failed.Add(1)
			firstErr.setErr(fmt.Errorf("session %d via %s: %w", i, addr, err), true)
			return
		}
		s.server = srv
		sessions[i].Store(s)
		go s.readLoop(st, h.lost(i, s))
	})
	connectTime := time.Since(start)
	res := &result{Workload: cfg.workload, Servers: cfg.servers, Clients: cfg.clients, SourceIPs: ips,
		ConnectSeconds: connectTime.Seconds(), ConnectFailures: failed.Load()}
	res.ConnectsPerSec = float64(int64(cfg.clients)-failed.Load()) / connectTime.Seconds()
	res.lastErr = firstErr.err()
	fmt.Fprintf(logw, "zkbench: %d sessions open in %.1fs (%.0f/s, %d failed); holding %v\n",
		int64(cfg.clients)-failed.Load(), connectTime.Seconds(), res.ConnectsPerSec, failed.Load(), cfg.duration)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	// Let the server settle (GC, stacks) before the hold's samples.
	select {
	case <-time.After(cfg.warmup):
	case <-ctx.Done():
	}
	held, err := sampleAll(cfg.pids)
	if err != nil {
		return res, err
	}
	st.mu.Lock()
	st.hist = NewHistogram()
	st.mu.Unlock()
	st.pings.Store(0)
	holdStart := time.Now()
	select {
	case <-time.After(cfg.duration):
	case <-ctx.Done():
	}
	holdTime := time.Since(holdStart)
	after, err := sampleAll(cfg.pids)
	if err != nil {
		return res, err
	}
	res.Seconds = holdTime.Seconds()
	res.Ops = st.pings.Load()
	res.OpsPerSec = float64(res.Ops) / holdTime.Seconds()
	st.mu.Lock()
	res.Latency = summarize(st.hist)
	if cfg.reconnect {
		res.Reconnected = st.reconnected.Load()
		l := summarize(st.reconnHist)
		res.Reconnect = &l
		if up, down := st.lastUp.Load(), st.firstDown.Load(); up > down && down > 0 {
			res.ReconnectSpanMs = float64(up-down) / 1e6
		}
	}
	st.mu.Unlock()
	res.Disconnects = st.disconnects.Load()
	if e := st.err(); e != nil {
		res.lastErr = e
	}
	// No resumption may race countExpired's own.
	stopHolding()
	var gapExpired time.Duration
	res.Expired, gapExpired = countExpired(cfg, h)
	var gap time.Duration
	for i := range sessions {
		if s := sessions[i].Load(); s != nil {
			gap = max(gap, time.Duration(s.maxGap.Load()))
		}
	}
	res.MaxPingGapMs = float64(gap) / float64(time.Millisecond)
	fmt.Fprintf(logw, "zkbench: longest time between two pings of a session %v (of an expired session %v; pinging every %v)\n",
		gap.Round(time.Millisecond), gapExpired.Round(time.Millisecond), cfg.sessionTimeout/3)
	open := int64(cfg.clients) - failed.Load()
	res.serverFigures(before, held, after, open, holdTime)
	return res, nil
}

// pingSessions pings every open session once every third of the session
// timeout, spread evenly over that period, until stop closes.
func pingSessions(ctx context.Context, cfg config, sessions []atomic.Pointer[rawSession], stop <-chan struct{}) {
	period := cfg.sessionTimeout / 3
	ping := &jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing}
	for round := time.Now(); ctx.Err() == nil; round = round.Add(period) {
		for i := range sessions {
			at := round.Add(period * time.Duration(i) / time.Duration(len(sessions)))
			if d := time.Until(at); d > time.Millisecond {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return
				case <-stop:
					return
				}
			}
			s := sessions[i].Load()
			if s == nil || s.closed.Load() {
				continue
			}
			// As ZooKeeper's client, ping even when the last ping is
			// unanswered; its latency counts from the oldest one.
			now := time.Now().UnixNano()
			if gap := now - s.lastSent.Swap(now); gap > s.maxGap.Load() {
				s.maxGap.Store(gap)
			}
			s.sentNano.CompareAndSwap(0, now)
			s.nc.SetWriteDeadline(time.Now().Add(time.Second))
			writeRecords(s.nc, ping)
		}
	}
}

// countExpired counts the sessions that expired: those a resumption found
// expired, and those the server disconnected (and -reconnect did not
// resume) that the first server to answer refuses to resume now. It also
// returns the longest time between two pings zkbench sent an expired
// session.
func countExpired(cfg config, h *holder) (int64, time.Duration) {
	var n int64
	var gap time.Duration
	for i := range h.sessions {
		s := h.sessions[i].Load()
		if s == nil || !s.closed.Load() {
			continue
		}
		expired := s.expired.Load()
		for k := 0; k < len(cfg.servers) && !expired; k++ {
			addr := cfg.servers[(s.server+k)%len(cfg.servers)]
			r, err := openSession(addr, net.IPv4(127, 0, 0, 1), cfg.sessionTimeout, s.id, s.passwd, s.lastZxid.Load(), 0, cfg.root)
			if err == nil {
				r.nc.Close()
				break
			}
			expired = errors.Is(err, errSessionRefused)
		}
		if expired {
			n++
			gap = max(gap, time.Duration(s.maxGap.Load()))
		}
	}
	return n, gap
}

// serverFigures sets the servers' RSS and CPU figures from their samples
// before the sessions, when held, and after the hold of holdTime, with
// open sessions held.
func (res *result) serverFigures(before, held, after []procSample, open int64, holdTime time.Duration) {
	for i := range before {
		res.RSSBefore += before[i].rss
		res.RSSHeld += held[i].rss
		res.CPUHeld += (after[i].cpu - held[i].cpu).Seconds()
	}
	if open > 0 && len(before) > 0 {
		res.RSSPerSession = float64(res.RSSHeld-res.RSSBefore) / float64(open)
		res.CPUPerSessionSecond = res.CPUHeld / float64(open) / holdTime.Seconds() * 1e6
	}
}
