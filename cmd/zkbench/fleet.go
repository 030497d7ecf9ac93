package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// The fleet workload is the lock service's day (issue 19): -clients
// go-zk sessions held on the -servers members (session i starts on member
// i mod the number of members and fails over to the next ones, as a
// client library does), over -procs processes and their source addresses
// (one per 25,000 sessions: fleet_procs.go), take go-zk's lock recipe
// (zk.NewLock) on random paths of a tree of -paths lock directories at an
// open-loop -rate over the whole fleet, holding each lock -hold. Open
// loop: acquisition k is scheduled at start + k/rate whatever the server
// does, and its latency counts from that scheduled time, so a slow server
// shows as latency, not as a lower offered rate.
//
// Pings: go-zk pings by itself, every third of the session timeout, from
// inside its connection. zkbench wraps each connection go-zk dials
// (fleetConn) and times the frames that carry the ping xid (-2) on the
// wire: a ping's round trip is from its write to the first ping reply read
// after it, and the ping gap is the time between two ping writes of one
// session, across reconnections (past the session timeout, the server may
// expire it). That costs the server nothing, unlike an extra exists per
// session.
//
// Expiries and disconnects are go-zk's session events (StateExpired,
// StateDisconnected) outside of zkbench's own close.

// fleetPathsPerDir is how many lock paths share one directory of the tree.
const fleetPathsPerDir = 1000

// fleetPath is lock path i under root: root/dNNNN/pNNNNNNN.
func fleetPath(root string, i int) string {
	return fmt.Sprintf("%s/d%04d/p%07d", root, i/fleetPathsPerDir, i)
}

// fleetSession is one held session and its ping figures, kept across
// go-zk's reconnections.
type fleetSession struct {
	conn      *zk.Conn
	w         *fleetWorker
	pingSent  atomic.Int64 // the outstanding ping's write, UnixNano, 0 if none
	lastPing  atomic.Int64 // the last ping write, UnixNano
	maxGap    atomic.Int64 // longest time between two ping writes in the phase, ns
	closing   atomic.Bool  // zkbench is closing it: its events are not counted
	connected atomic.Bool
}

// fleetConn wraps a go-zk connection to time its pings: go-zk writes each
// frame in one Write, and the first frame each way is the connect request
// and response (no xid).
type fleetConn struct {
	net.Conn
	s       *fleetSession
	wFrames int
	// The read side is parsed as a stream: the 4-byte length, then the
	// first 4 bytes of the body (the xid), then the rest is skipped.
	rFrames int
	hdr     [8]byte
	hdrN    int
	skip    int
}

func (c *fleetConn) Write(b []byte) (int, error) {
	if c.wFrames > 0 && len(b) >= 8 && int32(binary.BigEndian.Uint32(b[4:8])) == -2 {
		now := time.Now().UnixNano()
		if last := c.s.lastPing.Swap(now); last != 0 && now-last > c.s.maxGap.Load() {
			c.s.maxGap.Store(now - last)
		}
		c.s.pingSent.CompareAndSwap(0, now)
	}
	c.wFrames++
	return c.Conn.Write(b)
}

func (c *fleetConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	for p := b[:n]; len(p) > 0; {
		if c.skip > 0 {
			k := min(c.skip, len(p))
			c.skip -= k
			p = p[k:]
			continue
		}
		k := copy(c.hdr[c.hdrN:], p)
		c.hdrN += k
		p = p[k:]
		if c.hdrN < 8 {
			continue
		}
		size := int(binary.BigEndian.Uint32(c.hdr[:4]))
		c.skip = max(size-4, 0)
		if c.rFrames > 0 && int32(binary.BigEndian.Uint32(c.hdr[4:8])) == -2 {
			if t := c.s.pingSent.Swap(0); t != 0 {
				c.s.w.recordPing(time.Duration(time.Now().UnixNano() - t))
			}
		}
		c.rFrames++
		c.hdrN = 0
	}
	return n, err
}

// fleetHosts is a go-zk HostProvider that starts at member first and then
// goes round the list, so sessions spread evenly over the members.
type fleetHosts struct {
	servers []string
	next    int
	tried   int
}

func (h *fleetHosts) Init(servers []string) error { return nil }
func (h *fleetHosts) Len() int                    { return len(h.servers) }
func (h *fleetHosts) Connected()                  { h.tried = 0 }
func (h *fleetHosts) Next() (string, bool) {
	s := h.servers[h.next%len(h.servers)]
	h.next++
	h.tried++
	retry := h.tried > len(h.servers)
	if retry {
		h.tried = 1
	}
	return s, retry
}

// fleetWorker holds one process's share of the fleet's sessions.
type fleetWorker struct {
	cfg      config
	sessions []*fleetSession
	pingMu   sync.Mutex
	pingHist *Histogram
	discon   atomic.Int64
	expired  atomic.Int64
	errMu    sync.Mutex
	lastErr  error
}

func (w *fleetWorker) recordPing(d time.Duration) {
	w.pingMu.Lock()
	w.pingHist.Record(d)
	w.pingMu.Unlock()
}

func (w *fleetWorker) setErr(err error) {
	w.errMu.Lock()
	w.lastErr = err
	w.errMu.Unlock()
}

// openFleet opens n sessions, global indexes first…first+n-1, from ips
// source addresses starting at 127.0.0.0 plus ipFirst, cfg.parallel at a
// time, and waits until each has its session (or ctx ends).
func openFleet(ctx context.Context, cfg config, n, first, ips, ipFirst int, logw io.Writer) (*fleetWorker, error) {
	w := &fleetWorker{cfg: cfg, pingHist: NewHistogram(), sessions: make([]*fleetSession, n)}
	var failed atomic.Int64
	start := time.Now()
	// One session that cannot open fails the fleet: stop opening the rest
	// (each would wait out its own timeout, e.g. on a maxClientCnxns limit).
	openCtx, stop := context.WithCancel(ctx)
	defer stop()
	parallelFor(openCtx, cfg.parallel, n, func(i int) {
		s, err := w.open(openCtx, first+i, sourceIP(i, n, ips, ipFirst))
		if err != nil {
			if failed.Add(1) == 1 {
				w.setErr(fmt.Errorf("fleet session %d: %w", first+i, err))
			}
			stop()
			return
		}
		w.sessions[i] = s
	})
	fmt.Fprintf(logw, "zkbench: fleet: %d sessions open in %.1fs (%d failed)\n", int64(n)-failed.Load(), time.Since(start).Seconds(), failed.Load())
	if ctx.Err() != nil {
		w.close()
		return nil, ctx.Err()
	}
	if f := failed.Load(); f > 0 {
		w.close()
		return nil, fmt.Errorf("zkbench: fleet: stopped opening %d sessions at a failure: %v (a server's maxClientCnxns, default 60 per address, allows too few?)", n, w.lastErr)
	}
	return w, nil
}

// open opens global session idx from src and waits for its session.
func (w *fleetWorker) open(ctx context.Context, idx int, src net.IP) (*fleetSession, error) {
	s := &fleetSession{w: w}
	has := make(chan struct{})
	var once sync.Once
	d := sessionDialer(src)
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		nc, err := d.Dial(network, addr)
		if err != nil {
			return nil, err
		}
		return &fleetConn{Conn: nc, s: s}, nil
	}
	cb := func(ev zk.Event) {
		if ev.Type != zk.EventSession {
			return
		}
		switch ev.State {
		case zk.StateHasSession:
			s.connected.Store(true)
			once.Do(func() { close(has) })
		case zk.StateDisconnected:
			if s.connected.Swap(false) && !s.closing.Load() {
				w.discon.Add(1)
			}
		case zk.StateExpired:
			if !s.closing.Load() {
				w.expired.Add(1)
				w.setErr(fmt.Errorf("fleet session %d (0x%x) expired", idx, s.conn.SessionID()))
			}
		}
	}
	servers := w.cfg.servers
	conn, events, err := zk.Connect(servers, w.cfg.sessionTimeout, zk.WithDialer(dial),
		zk.WithHostProvider(&fleetHosts{servers: servers, next: idx % len(servers)}),
		zk.WithEventCallback(cb), zk.WithLogger(discardLogger{}), zk.WithLogInfo(false),
		zk.WithMaxBufferSize(256<<10))
	if err != nil {
		return nil, err
	}
	go func() {
		for range events { // the callback counts them; drain the channel
		}
	}()
	s.conn = conn
	t := time.NewTimer(2 * w.cfg.sessionTimeout)
	defer t.Stop()
	select {
	case <-has:
		return s, nil
	case <-t.C:
		conn.Close()
		return nil, fmt.Errorf("no session from %s within %v", servers[idx%len(servers)], 2*w.cfg.sessionTimeout)
	case <-ctx.Done():
		conn.Close()
		return nil, ctx.Err()
	}
}

// discardLogger drops go-zk's messages.
type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// close closes every session.
func (w *fleetWorker) close() {
	var wg sync.WaitGroup
	for _, s := range w.sessions {
		if s == nil {
			continue
		}
		s.closing.Store(true)
		wg.Go(s.conn.Close)
	}
	wg.Wait()
}

// fleetPhaseCmd is one measured phase: acquisitions at Rate a second (this
// process's share) for Duration, each held Hold. With FaultAt (UnixNano)
// set, acquisitions scheduled in the 10 s from it are also counted apart.
type fleetPhaseCmd struct {
	Rate     float64       `json:"rate"`
	Duration time.Duration `json:"duration"`
	Hold     time.Duration `json:"hold"`
	FaultAt  int64         `json:"fault_at,omitempty"`
}

// fleetFaultWindow is how long after a fault acquisitions are counted apart.
const fleetFaultWindow = 10 * time.Second

// fleetDrain is how long a phase waits past its end for late acquisitions;
// those still waiting then count as unfinished.
const fleetDrain = 20 * time.Second

// fleetPhase is what a phase measured, in a form children send to the
// parent and the parent merges.
type fleetPhase struct {
	Offered    uint64     `json:"offered"`     // acquisitions scheduled
	InWindow   uint64     `json:"in_window"`   // acquired before the phase's end
	Acquired   uint64     `json:"acquired"`    // acquired at all (before the drain ended)
	Errors     uint64     `json:"errors"`      // lock failed, or unlock failed for fleetDrain
	Unfinished uint64     `json:"unfinished"`  // still waiting at the drain's end
	Acquire    sparseHist `json:"acquire"`     // from the scheduled time
	AfterFault sparseHist `json:"after_fault"` // scheduled within fleetFaultWindow of FaultAt
	Ping       sparseHist `json:"ping"`
	MaxPingGap int64      `json:"max_ping_gap_ns"`
	Discon     int64      `json:"disconnects"`
	Expired    int64      `json:"expired"`
	Seconds    float64    `json:"seconds"`
	LastErr    string     `json:"last_error,omitempty"`
	Stuck      []string   `json:"stuck,omitempty"` // paths of some unfinished acquisitions
}

// sparseHist is a Histogram as its non-zero buckets, for JSON.
type sparseHist struct {
	Buckets map[int]uint64 `json:"b,omitempty"`
	N       uint64         `json:"n"`
	Min     int64          `json:"min"`
	Max     int64          `json:"max"`
	Sum     float64        `json:"sum"`
}

func toSparse(h *Histogram) sparseHist {
	s := sparseHist{Buckets: map[int]uint64{}, N: h.n, Min: h.min, Max: h.max, Sum: h.sum}
	for i, c := range h.counts {
		if c != 0 {
			s.Buckets[i] = c
		}
	}
	return s
}

func (s sparseHist) hist() *Histogram {
	h := NewHistogram()
	if s.N == 0 {
		return h
	}
	for i, c := range s.Buckets {
		if i >= 0 && i < len(h.counts) {
			h.counts[i] = c
		}
	}
	h.n, h.min, h.max, h.sum = s.N, s.Min, s.Max, s.Sum
	return h
}

// merge adds o to p.
func (p *fleetPhase) merge(o fleetPhase) {
	p.Offered += o.Offered
	p.InWindow += o.InWindow
	p.Acquired += o.Acquired
	p.Errors += o.Errors
	p.Unfinished += o.Unfinished
	for _, x := range []struct{ a, b *sparseHist }{{&p.Acquire, &o.Acquire}, {&p.AfterFault, &o.AfterFault}, {&p.Ping, &o.Ping}} {
		h := x.a.hist()
		h.Merge(x.b.hist())
		*x.a = toSparse(h)
	}
	p.MaxPingGap = max(p.MaxPingGap, o.MaxPingGap)
	p.Discon += o.Discon
	p.Expired += o.Expired
	p.Seconds = max(p.Seconds, o.Seconds)
	if o.LastErr != "" {
		p.LastErr = o.LastErr
	}
	if len(p.Stuck) < 5 {
		p.Stuck = append(p.Stuck, o.Stuck[:min(len(o.Stuck), 5-len(p.Stuck))]...)
	}
}

// phase runs one measured phase on w's sessions.
func (w *fleetWorker) phase(ctx context.Context, cmd fleetPhaseCmd) fleetPhase {
	w.pingMu.Lock()
	w.pingHist = NewHistogram()
	w.pingMu.Unlock()
	for _, s := range w.sessions {
		s.maxGap.Store(0)
	}
	discon0, expired0 := w.discon.Load(), w.expired.Load()
	var (
		mu                  sync.Mutex
		acq, after          = NewHistogram(), NewHistogram()
		inWindow, acquired  atomic.Uint64
		errs, unlockErrs    atomic.Uint64
		wg                  sync.WaitGroup
		offered             uint64
		faultLo, faultHi    = cmd.FaultAt, cmd.FaultAt + int64(fleetFaultWindow)
		paths               = w.cfg.paths
		lastErr             atomic.Value
		stuck               []string // under mu
		start               = time.Now()
		end                 = start.Add(cmd.Duration)
		drainCtx, drainStop = context.WithDeadline(ctx, end.Add(fleetDrain+cmd.Hold))
	)
	defer drainStop()
	acquire := func(at time.Time) {
		defer wg.Done()
		s := w.sessions[rand.IntN(len(w.sessions))]
		path := fleetPath(w.cfg.root, rand.IntN(paths))
		l := zk.NewLock(s.conn, path, acl)
		done := make(chan error, 1)
		go func() { done <- l.Lock() }()
		var err error
		select {
		case err = <-done:
		case <-drainCtx.Done():
			mu.Lock()
			if len(stuck) < 5 {
				stuck = append(stuck, describeLock(s.conn, path))
			}
			mu.Unlock()
			go func() {
				if <-done == nil {
					l.Unlock()
				}
			}()
			return
		}
		now := time.Now()
		if err != nil {
			errs.Add(1)
			lastErr.Store(fmt.Sprintf("lock %s: %v", path, err))
			return
		}
		acquired.Add(1)
		if now.Before(end) {
			inWindow.Add(1)
		}
		d := now.Sub(at)
		mu.Lock()
		acq.Record(d)
		if t := at.UnixNano(); faultLo != 0 && t >= faultLo && t < faultHi {
			after.Record(d)
		}
		mu.Unlock()
		if cmd.Hold > 0 {
			time.Sleep(cmd.Hold)
		}
		if err := unlockRetrying(l, fleetDrain); err != nil {
			unlockErrs.Add(1)
			lastErr.Store(fmt.Sprintf("unlock %s: %v", path, err))
		}
	}
	if cmd.Rate > 0 {
		interval := float64(time.Second) / cmd.Rate
	sched:
		for k := uint64(0); ; {
			now := time.Now()
			if !now.Before(end) || ctx.Err() != nil {
				break
			}
			for {
				at := start.Add(time.Duration(float64(k) * interval))
				if at.After(now) {
					break
				}
				if !at.Before(end) {
					break sched
				}
				k++
				offered++
				wg.Add(1)
				go acquire(at)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for time.Now().Before(end) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	wg.Wait()
	var gap int64
	for _, s := range w.sessions {
		gap = max(gap, s.maxGap.Load())
	}
	w.pingMu.Lock()
	ping := toSparse(w.pingHist)
	w.pingMu.Unlock()
	p := fleetPhase{Offered: offered, InWindow: inWindow.Load(), Acquired: acquired.Load(), Errors: errs.Load() + unlockErrs.Load(),
		Acquire: toSparse(acq), AfterFault: toSparse(after), Ping: ping, MaxPingGap: gap,
		Discon: w.discon.Load() - discon0, Expired: w.expired.Load() - expired0, Seconds: elapsed.Seconds()}
	p.Unfinished = p.Offered - p.Acquired - errs.Load()
	mu.Lock()
	p.Stuck = stuck
	mu.Unlock()
	if e, ok := lastErr.Load().(string); ok {
		p.LastErr = e
	}
	w.errMu.Lock()
	if p.LastErr == "" && w.lastErr != nil && (p.Expired > 0 || p.Discon > 0) {
		p.LastErr = w.lastErr.Error()
	}
	w.errMu.Unlock()
	return p
}

// describeLock says who holds and waits for lock path, as seen by the
// waiting session conn: each lock node and its session.
func describeLock(conn *zk.Conn, path string) string {
	kids, _, err := conn.Children(path)
	if err != nil {
		return fmt.Sprintf("%s (waiter 0x%x; children: %v)", path, conn.SessionID(), err)
	}
	slices.Sort(kids)
	var b strings.Builder
	fmt.Fprintf(&b, "%s (waiter 0x%x;", path, conn.SessionID())
	for _, k := range kids {
		if ok, st, err := conn.Exists(path + "/" + k); err == nil && ok {
			fmt.Fprintf(&b, " %s of 0x%x", k[strings.LastIndex(k, "-")+1:], st.EphemeralOwner)
		}
	}
	b.WriteString(")")
	return b.String()
}

// unlockRetrying releases l, retrying for up to limit while the session's
// connection is lost (the lock node, ephemeral, stays while the session
// lives, and would block that path's next acquirers). A lock node already
// gone (its session expired) counts as released.
func unlockRetrying(l *zk.Lock, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := l.Unlock()
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// makeFleetTree creates root, its directories and its cfg.paths lock paths
// where missing, in pipelined multi batches, and marks the tree complete
// with root/ready-<count> so the next run skips it.
func makeFleetTree(ctx context.Context, cfg config, logw io.Writer) error {
	conn, err := connect(ctx, cfg, logw, 30*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	marker := fmt.Sprintf("%s/ready-%d", cfg.root, cfg.paths)
	if ok, _, err := conn.Exists(marker); err != nil {
		return fmt.Errorf("zkbench: fleet: exists %s: %w", marker, err)
	} else if ok {
		fmt.Fprintf(logw, "zkbench: fleet: %d lock paths under %s already there\n", cfg.paths, cfg.root)
		return nil
	}
	start := time.Now()
	if _, err := conn.Create(cfg.root, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("zkbench: fleet: create %s: %w", cfg.root, err)
	}
	dirs := (cfg.paths + fleetPathsPerDir - 1) / fleetPathsPerDir
	var paths []string
	for d := range dirs {
		paths = append(paths, fmt.Sprintf("%s/d%04d", cfg.root, d))
	}
	if err := createAll(ctx, conn, paths); err != nil {
		return err
	}
	paths = paths[:0]
	for i := range cfg.paths {
		paths = append(paths, fleetPath(cfg.root, i))
	}
	if err := createAll(ctx, conn, paths); err != nil {
		return err
	}
	if _, err := conn.Create(marker, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("zkbench: fleet: create %s: %w", marker, err)
	}
	fmt.Fprintf(logw, "zkbench: fleet: %d lock paths in %d directories under %s made in %.1fs\n", cfg.paths, dirs, cfg.root, time.Since(start).Seconds())
	return nil
}

// createAll creates the persistent nodes paths (parents first in the
// list's order within a batch) in multi batches of fleetBatch, fleetPipe
// in flight; a batch that meets an existing node is redone one create at a
// time, skipping the existing ones.
func createAll(ctx context.Context, conn *zk.Conn, paths []string) error {
	const fleetBatch, fleetPipe = 500, 16
	var (
		mu   sync.Mutex
		ferr error
	)
	batches := (len(paths) + fleetBatch - 1) / fleetBatch
	parallelFor(ctx, fleetPipe, batches, func(b int) {
		part := paths[b*fleetBatch : min((b+1)*fleetBatch, len(paths))]
		ops := make([]any, len(part))
		for i, p := range part {
			ops[i] = &zk.CreateRequest{Path: p, Acl: acl}
		}
		if _, err := conn.Multi(ops...); err == nil {
			return
		}
		for _, p := range part {
			if _, err := conn.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				mu.Lock()
				ferr = fmt.Errorf("zkbench: fleet: create %s: %w", p, err)
				mu.Unlock()
				return
			}
		}
	})
	if ferr == nil {
		ferr = ctx.Err()
	}
	return ferr
}

// trimErr shortens an error for one report line.
func trimErr(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return strings.TrimSpace(s)
}

// encodeLine writes v as one JSON line.
func encodeLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
