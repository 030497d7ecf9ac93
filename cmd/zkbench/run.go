package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/zab/fencing"
)

// acl is the ACL of every node zkbench creates.
var acl = zk.WorldACL(zk.PermAll)

// phases of a benchmark, shared by all clients.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseDone
)

// client is one session and its own counters, so the hot loop shares no
// memory with other clients.
type client struct {
	id     int
	conn   *zk.Conn
	hist   *Histogram
	ops    atomic.Uint64 // read by the -interval reporter
	errors atomic.Uint64
	last   error
}

// run executes cfg's workload and returns its result. Progress and client
// library messages go to logw.
func run(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
	switch cfg.workload {
	case "wait":
		return runWait(ctx, cfg, logw)
	case "ceiling":
		return runCeiling(ctx, cfg, logw)
	}
	if err := checkReachable(ctx, cfg.servers, 5*time.Second, logw); err != nil {
		return nil, err
	}
	switch cfg.workload {
	case "fill":
		return runFill(ctx, cfg, logw)
	case "sessions":
		return runSessions(ctx, cfg, logw)
	case "fleet":
		return runFleet(ctx, cfg, logw)
	}
	return runBench(ctx, cfg, logw)
}

// checkReachable dials each server's TCP port once, in parallel, before a
// workload starts, so that a wrong address ends the run at once with the
// address and the error (connection refused, no route, timeout) rather
// than with every client timing out. No server reachable is an error;
// some unreachable are named on logw and the run goes on with the others
// (go-zk tries each in turn). -workload wait, which waits for a server to
// come up, does not check.
func checkReachable(ctx context.Context, servers []string, timeout time.Duration, logw io.Writer) error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, addr := range servers {
		wg.Go(func() {
			d := net.Dialer{Timeout: timeout}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				errs[i] = err // a *net.OpError: it names the address
				return
			}
			c.Close()
		})
	}
	wg.Wait()
	var down []error
	for _, err := range errs {
		if err != nil {
			down = append(down, err)
		}
	}
	switch {
	case len(down) == len(servers):
		return fmt.Errorf("zkbench: no server reachable: %w", errors.Join(down...))
	case len(down) > 0:
		fmt.Fprintf(logw, "zkbench: warning: %d of %d servers unreachable, going on with the others: %v\n", len(down), len(servers), errors.Join(down...))
	}
	return nil
}

func logger(cfg config, logw io.Writer) zk.Logger {
	if cfg.verbose {
		return log.New(logw, "zk: ", log.LstdFlags|log.Lmicroseconds)
	}
	return log.New(io.Discard, "", 0)
}

// connect opens a session and waits until it is established.
func connect(ctx context.Context, cfg config, logw io.Writer, timeout time.Duration) (*zk.Conn, error) {
	conn, events, err := zk.Connect(cfg.servers, cfg.sessionTimeout, zk.WithLogger(logger(cfg, logw)), zk.WithLogInfo(false), zk.WithDialer(cfg.dialer()))
	if err != nil {
		return nil, fmt.Errorf("zkbench: connect: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, errors.New("zkbench: connect: connection closed")
			}
			if ev.State == zk.StateHasSession {
				go func() {
					for range events { // go-zk drops events on a full channel; drain anyway
					}
				}()
				return conn, nil
			}
			if ev.State == zk.StateExpired || ev.State == zk.StateAuthFailed {
				conn.Close()
				return nil, fmt.Errorf("zkbench: connect: %v", ev.State)
			}
		case <-t.C:
			conn.Close()
			return nil, fmt.Errorf("zkbench: connect to %v: no session after %v", cfg.servers, timeout)
		case <-ctx.Done():
			conn.Close()
			return nil, ctx.Err()
		}
	}
}

// connectAll opens n sessions in parallel.
func connectAll(ctx context.Context, cfg config, logw io.Writer, n int) ([]*zk.Conn, error) {
	conns := make([]*zk.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range conns {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			conns[i], errs[i] = connect(ctx, cfg, logw, 30*time.Second)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll(conns)
		return nil, err
	}
	return conns, nil
}

func closeAll(conns []*zk.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// ensurePath creates p and its missing ancestors as empty persistent nodes.
func ensurePath(c *zk.Conn, p string) error {
	if p == "/" {
		return nil
	}
	if err := ensurePath(c, path.Dir(p)); err != nil {
		return err
	}
	if _, err := c.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("zkbench: create %s: %w", p, err)
	}
	return nil
}

// deleteTree deletes p and everything below it, depth first.
func deleteTree(c *zk.Conn, p string) error {
	children, _, err := c.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("zkbench: list %s: %w", p, err)
	}
	for _, ch := range children {
		if err := deleteTree(c, path.Join(p, ch)); err != nil {
			return err
		}
	}
	if err := c.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zkbench: delete %s: %w", p, err)
	}
	return nil
}

// op is one measured operation of a client, which returns its latency.
type op func(c *client) (time.Duration, error)

// runBench sets up cfg.root, runs the closed loops for warmup plus duration
// and removes cfg.root again. With -client raw, runRaw does.
func runBench(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
	if cfg.client == clientRaw {
		return runRaw(ctx, cfg, logw)
	}
	conns, err := connectAll(ctx, cfg, logw, cfg.clients)
	if err != nil {
		return nil, err
	}
	admin := conns[0]
	clients := make([]*client, cfg.clients)
	for i, c := range conns {
		clients[i] = &client{id: i, conn: c, hist: NewHistogram()}
	}
	data := benchData(cfg.size)

	cleanup := func() error {
		// Closing the sessions removes their ephemerals; then the tree.
		closeAll(conns[1:])
		err := deleteTree(admin, cfg.root)
		admin.Close()
		return err
	}
	var fn op
	switch cfg.workload {
	case "create":
		err = setup(admin, cfg.root, cfg.clients, nil)
		fn = func(c *client) (time.Duration, error) {
			start := time.Now()
			p, err := c.conn.Create(nodePath(cfg.root, c.id)+"/n-", data, zk.FlagEphemeralSequential, acl)
			if err != nil {
				return 0, fmt.Errorf("create: %w", err)
			}
			if err := c.conn.Delete(p, -1); err != nil {
				return 0, fmt.Errorf("delete %s: %w", p, err)
			}
			return time.Since(start), nil
		}
	case "set":
		err = setup(admin, cfg.root, cfg.clients, data)
		fn = func(c *client) (time.Duration, error) {
			start := time.Now()
			_, err := c.conn.Set(nodePath(cfg.root, c.id), data, -1)
			return time.Since(start), err
		}
	case "get":
		err = setup(admin, cfg.root, cfg.clients, data)
		fn = func(c *client) (time.Duration, error) {
			start := time.Now()
			got, _, err := c.conn.Get(nodePath(cfg.root, c.id))
			if err == nil && len(got) != len(data) {
				err = fmt.Errorf("get: %d bytes, want %d", len(got), len(data))
			}
			return time.Since(start), err
		}
	case "token":
		// zkd's fencing tokens (docs/fencing.md): each client holds one
		// lock node and reads its signed token, a getData of a virtual
		// node; compare with -workload get -size 170 (a token's length).
		err = setup(admin, cfg.root, cfg.clients, nil)
		tokenPaths := make([]string, cfg.clients)
		for i := 0; err == nil && i < cfg.clients; i++ {
			var p string
			p, err = conns[i].Create(nodePath(cfg.root, i)+"/lock-", nil, zk.FlagEphemeralSequential, acl)
			tokenPaths[i] = fencing.TokenPathPrefix + p
		}
		fn = func(c *client) (time.Duration, error) {
			start := time.Now()
			got, _, err := c.conn.Get(tokenPaths[c.id])
			if err == nil && !strings.HasPrefix(string(got), fencing.Prefix) {
				err = fmt.Errorf("token: %q is not a fencing token", got)
			}
			return time.Since(start), err
		}
	case "lock":
		err = ensurePath(admin, cfg.root+"/locks")
		for i := 0; err == nil && i < cfg.locks; i++ {
			err = ensurePath(admin, lockPath(cfg.root, i))
		}
		fn = func(c *client) (time.Duration, error) {
			l := zk.NewLock(c.conn, lockPath(cfg.root, c.id%cfg.locks), acl)
			start := time.Now()
			if err := l.Lock(); err != nil {
				return 0, fmt.Errorf("lock: %w", err)
			}
			acquired := time.Since(start)
			if cfg.hold > 0 {
				time.Sleep(cfg.hold)
			}
			if err := l.Unlock(); err != nil {
				return 0, fmt.Errorf("unlock: %w", err)
			}
			return acquired, nil
		}
	case "session":
		fn = func(c *client) (time.Duration, error) {
			start := time.Now()
			err := newSession(cfg.dialer(), cfg.servers[c.id%len(cfg.servers)], cfg.sessionTimeout, cfg.saslUser, cfg.saslPassword)
			return time.Since(start), err
		}
	default:
		err = fmt.Errorf("zkbench: unknown workload %q", cfg.workload)
	}
	if err != nil {
		_ = cleanup()
		return nil, err
	}

	var elapsed time.Duration
	if cfg.rate > 0 {
		elapsed = driveOpen(ctx, clients, fn, cfg.rate, cfg.warmup, cfg.duration, cfg.interval, logw)
	} else {
		elapsed = drive(ctx, clients, fn, cfg.warmup, cfg.duration, cfg.interval, logw)
	}
	res := collect(cfg, clients, elapsed)
	if cfg.workload != "session" { // which speaks the protocol itself
		res.Client = clientGozk
	}
	if err := cleanup(); err != nil {
		return res, err
	}
	if res.Ops == 0 && res.Errors > 0 {
		return res, fmt.Errorf("zkbench: every operation failed, last: %v", res.lastErr)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func nodePath(root string, id int) string { return fmt.Sprintf("%s/c%04d", root, id) }
func lockPath(root string, i int) string  { return fmt.Sprintf("%s/locks/l%04d", root, i) }

// setup creates root and one node per client holding data (nil: empty).
func setup(c *zk.Conn, root string, clients int, data []byte) error {
	if err := ensurePath(c, root); err != nil {
		return err
	}
	for i := range clients {
		if _, err := c.Create(nodePath(root, i), data, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zkbench: create %s: %w", nodePath(root, i), err)
		}
	}
	return nil
}

// errorBackoff is a client's pause after a failed operation.
const errorBackoff = 10 * time.Millisecond

// drive runs fn in a closed loop on every client: warmup unmeasured, then
// duration measured. An operation counts if it started inside the measured
// window. Errors are counted and the client goes on (go-zk reconnects by
// itself), so a run across a server failover shows the outage. With
// interval > 0, a line of throughput and errors per interval goes to
// progress. It returns the measured window's length (shorter if ctx ended
// it).
func drive(ctx context.Context, clients []*client, fn op, warmup, duration, interval time.Duration, progress io.Writer) time.Duration {
	var phase atomic.Int32
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for {
				p := phase.Load()
				if p == phaseDone {
					return
				}
				lat, err := fn(c)
				if err != nil && errors.Is(err, zk.ErrClosing) {
					return // the session was closed under us: shutting down
				}
				if p != phaseMeasure {
					continue
				}
				if err != nil {
					c.errors.Add(1)
					c.last = err
					time.Sleep(errorBackoff) // while disconnected, go-zk fails fast
					continue
				}
				c.ops.Add(1)
				c.hist.Record(lat)
			}
		})
	}
	elapsed := measure(ctx, clients, &phase, warmup, duration, interval, progress)
	wg.Wait()
	return elapsed
}

// measure switches phase to measuring after warmup and to done after
// duration, reporting every interval meanwhile, and returns the measured
// window's length.
func measure(ctx context.Context, clients []*client, phase *atomic.Int32, warmup, duration, interval time.Duration, progress io.Writer) time.Duration {
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var elapsed time.Duration
	if wait(warmup) {
		start := time.Now()
		phase.Store(phaseMeasure)
		stopReport := make(chan struct{})
		reported := make(chan struct{})
		go func() {
			defer close(reported)
			if interval > 0 {
				report(clients, start, interval, progress, stopReport)
			}
		}()
		wait(duration)
		elapsed = time.Since(start)
		close(stopReport)
		<-reported
	}
	phase.Store(phaseDone)
	return elapsed
}

// report prints, every interval until stop, the operations and errors of
// the last interval: "t=2.0s ops/s=1234.5 errors=0".
func report(clients []*client, start time.Time, interval time.Duration, w io.Writer, stop <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var lastOps, lastErrs uint64
	last := start
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			var ops, errs uint64
			for _, c := range clients {
				ops += c.ops.Load()
				errs += c.errors.Load()
			}
			secs := now.Sub(last).Seconds()
			fmt.Fprintf(w, "t=%.1fs ops/s=%.1f errors=%d\n", now.Sub(start).Seconds(), float64(ops-lastOps)/secs, errs-lastErrs)
			lastOps, lastErrs, last = ops, errs, now
		}
	}
}
