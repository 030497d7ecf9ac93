package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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

// sessionsPerIP is how many sessions -source-ips 0 puts on one address.
const sessionsPerIP = 25000

// rawSession is one held session.
type rawSession struct {
	nc       net.Conn
	id       int64
	passwd   []byte
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

// sourceIP is the source address of session i.
func sourceIP(i, n, ips int) net.IP {
	m := i*ips/n + 1 // contiguous blocks, so each address holds n/ips
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
// session and sets watches; the returned session has no reader yet.
func openSession(addr string, src net.IP, timeout time.Duration, id int64, passwd []byte, watches int, root string) (*rawSession, error) {
	nc, err := sessionDialer(src).Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	req := &jute.ConnectRequest{TimeOut: int32(timeout / time.Millisecond), SessionId: id, Passwd: passwd}
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
	for w := range watches {
		hdr := &jute.RequestHeader{Xid: int32(w + 1), Type: jute.OpExists}
		if err := writeRecords(nc, hdr, &jute.ExistsRequest{Path: fmt.Sprintf("%s/w%d", root, w), Watch: true}); err != nil {
			nc.Close()
			return nil, err
		}
		if _, err := zkwire.ReadFrame(nc); err != nil {
			nc.Close()
			return nil, fmt.Errorf("exists reply: %w", err)
		}
	}
	nc.SetDeadline(time.Time{})
	return s, nil
}

// errSessionRefused is a connect response without a session: a resumed
// session had expired.
var errSessionRefused = errors.New("session refused (expired)")

// readLoop reads replies until the connection ends, timing ping replies.
func (s *rawSession) readLoop(st *sessionStats) {
	var hdr jute.ReplyHeader
	for {
		b, err := zkwire.ReadFrame(s.nc)
		if err != nil {
			if !s.mine.Load() {
				s.closed.Store(true)
				st.disconnects.Add(1)
				st.setErr(err, false)
			}
			return
		}
		if jute.Decode(b[:16], &hdr) == nil && hdr.Xid == jute.XidPing {
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

// runSessions is the sessions workload.
func runSessions(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
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
	st := &sessionStats{hist: NewHistogram()}
	sessions := make([]atomic.Pointer[rawSession], cfg.clients)
	// Sessions ping from the moment they exist: connecting them all can
	// take longer than their timeout.
	stopPings := make(chan struct{})
	pingDone := make(chan struct{})
	go func() {
		defer close(pingDone)
		pingSessions(ctx, cfg, sessions, stopPings)
	}()
	defer func() {
		close(stopPings)
		<-pingDone
		for i := range sessions {
			if s := sessions[i].Load(); s != nil {
				s.mine.Store(true)
				s.nc.Close()
			}
		}
	}()
	var (
		next     atomic.Int64
		failed   atomic.Int64
		firstErr = &sessionStats{} // only its error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range cfg.parallel {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= cfg.clients {
					return
				}
				addr := cfg.servers[i%len(cfg.servers)]
				s, err := openSession(addr, sourceIP(i, cfg.clients, ips), cfg.sessionTimeout, 0, nil, cfg.watches, cfg.root)
				if err != nil {
					failed.Add(1)
					firstErr.setErr(fmt.Errorf("session %d via %s: %w", i, addr, err), true)
					continue
				}
				sessions[i].Store(s)
				go s.readLoop(st)
			}
		})
	}
	wg.Wait()
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
	time.Sleep(cfg.warmup)
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
	st.mu.Unlock()
	res.Disconnects = st.disconnects.Load()
	if e := st.err(); e != nil {
		res.lastErr = e
	}
	var gapExpired time.Duration
	res.Expired, gapExpired = countExpired(cfg, sessions)
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
	for i := range cfg.pids {
		res.RSSBefore += before[i].rss
		res.RSSHeld += held[i].rss
		res.CPUHeld += (after[i].cpu - held[i].cpu).Seconds()
	}
	if open > 0 && len(cfg.pids) > 0 {
		res.RSSPerSession = float64(res.RSSHeld-res.RSSBefore) / float64(open)
		res.CPUPerSessionSecond = res.CPUHeld / float64(open) / holdTime.Seconds() * 1e6
	}
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

// countExpired resumes each session the server disconnected: a refused
// resumption is an expired session. It also returns the longest time
// between two pings zkbench sent an expired session.
func countExpired(cfg config, sessions []atomic.Pointer[rawSession]) (int64, time.Duration) {
	var n int64
	var gap time.Duration
	for i := range sessions {
		s := sessions[i].Load()
		if s == nil || !s.closed.Load() {
			continue
		}
		addr := cfg.servers[i%len(cfg.servers)]
		r, err := openSession(addr, net.IPv4(127, 0, 0, 1), cfg.sessionTimeout, s.id, s.passwd, 0, cfg.root)
		if errors.Is(err, errSessionRefused) {
			n++
			gap = max(gap, time.Duration(s.maxGap.Load()))
		} else if err == nil {
			r.nc.Close()
		}
	}
	return n, gap
}
