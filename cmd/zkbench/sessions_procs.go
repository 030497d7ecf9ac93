package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// -procs N: one process holds at most its RLIMIT_NOFILE hard limit of
// sessions, so the sessions workload can split them over N children of
// its own binary, each holding a share from its own block of source
// addresses. The parent samples the servers (-pids) itself: it waits until
// every child has its sessions open, lets -warmup pass, measures over
// -duration, then interrupts the children, which count their disconnects
// and expiries and print their results as JSON, and merges those.

// childEnv marks a child: a test binary (see TestMain) runs main for it.
const childEnv = "ZKBENCH_CHILD"

// childHold is how long a child holds unless interrupted first.
const childHold = 24 * time.Hour

// childArgs is the command line of child k of cfg.procs, holding n
// sessions from ips addresses starting at first.
func childArgs(cfg config, n, ips, first int) []string {
	args := []string{"-servers", strings.Join(cfg.servers, ","), "-workload", "sessions",
		"-clients", strconv.Itoa(n), "-session-timeout", cfg.sessionTimeout.String(),
		"-watches", strconv.Itoa(cfg.watches), "-root", cfg.root,
		"-connect-parallel", strconv.Itoa(max(1, cfg.parallel/cfg.procs)),
		"-source-ips", strconv.Itoa(ips), "-source-ip-first", strconv.Itoa(first),
		"-duration", childHold.String(), "-warmup", "0s", "-json"}
	if cfg.reconnect {
		args = append(args, "-reconnect")
	}
	return args
}

// procChild is one running child.
type procChild struct {
	cmd    *exec.Cmd
	out    strings.Builder // its JSON result
	failed int64           // connects it reported failed
	done   chan struct{}   // closed when it has exited
	err    error           // its exit status
}

// runSessionProcs runs the sessions workload over cfg.procs children.
func runSessionProcs(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("zkbench: -procs: own binary: %w", err)
	}
	ips := cfg.sourceIPs
	if ips == 0 {
		ips = (cfg.clients + sessionsPerIP - 1) / sessionsPerIP
	}
	perChild := max(1, (ips+cfg.procs-1)/cfg.procs)
	fmt.Fprintf(logw, "zkbench: %d sessions over %d processes, %d source addresses each\n", cfg.clients, cfg.procs, perChild)
	before, err := sampleAll(cfg.pids)
	if err != nil {
		return nil, err
	}
	var logMu sync.Mutex
	opened := make(chan int, cfg.procs)
	children := make([]*procChild, cfg.procs)
	start := time.Now()
	for k := range children {
		n := cfg.clients*(k+1)/cfg.procs - cfg.clients*k/cfg.procs
		c := &procChild{done: make(chan struct{})}
		c.cmd = exec.Command(exe, childArgs(cfg, n, perChild, cfg.sourceIPFirst+k*perChild)...)
		c.cmd.Env = append(os.Environ(), childEnv+"=1")
		c.cmd.SysProcAttr = childProcAttr()
		c.cmd.Stdout = &c.out
		pr, pw := io.Pipe()
		c.cmd.Stderr = pw
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				line := sc.Text()
				logMu.Lock()
				fmt.Fprintf(logw, "[%d] %s\n", k, line)
				logMu.Unlock()
				var nOpen int
				var secs, rate float64
				if _, err := fmt.Sscanf(line, "zkbench: %d sessions open in %fs (%f/s, %d failed)", &nOpen, &secs, &rate, &c.failed); err == nil {
					opened <- k
				}
			}
			io.Copy(io.Discard, pr)
		}()
		if err := c.cmd.Start(); err != nil {
			stopChildren(children[:k])
			return nil, fmt.Errorf("zkbench: -procs: start child %d: %w", k, err)
		}
		children[k] = c
		go func() {
			c.err = c.cmd.Wait()
			pw.Close()
			close(c.done)
		}()
	}
	exited := make(chan int, cfg.procs)
	for k, c := range children {
		go func() { <-c.done; exited <- k }()
	}
	for range cfg.procs {
		select {
		case <-opened:
		case k := <-exited:
			stopChildren(children)
			return nil, fmt.Errorf("zkbench: -procs: child %d exited while connecting: %v", k, children[k].err)
		case <-ctx.Done():
			stopChildren(children)
			return nil, ctx.Err()
		}
	}
	connectTime := time.Since(start)
	var failed int64
	for _, c := range children {
		failed += c.failed
	}
	res := &result{Workload: cfg.workload, Servers: cfg.servers, Clients: cfg.clients, SourceIPs: perChild * cfg.procs,
		Procs: cfg.procs, ConnectSeconds: connectTime.Seconds(), ConnectFailures: failed,
		ConnectsPerSec: float64(int64(cfg.clients)-failed) / connectTime.Seconds()}
	fmt.Fprintf(logw, "zkbench: %d sessions open in %.1fs (%.0f/s, %d failed); holding %v\n",
		int64(cfg.clients)-failed, connectTime.Seconds(), res.ConnectsPerSec, failed, cfg.duration)
	wait := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-ctx.Done():
		case k := <-exited:
			fmt.Fprintf(logw, "zkbench: -procs: child %d exited while holding: %v\n", k, children[k].err)
		}
		return false
	}
	ok := wait(cfg.warmup)
	held, err := sampleAll(cfg.pids)
	if err != nil {
		stopChildren(children)
		return res, err
	}
	holdStart := time.Now()
	ok = ok && wait(cfg.duration)
	holdTime := time.Since(holdStart)
	after, err := sampleAll(cfg.pids)
	stopChildren(children)
	if err != nil {
		return res, err
	}
	var parts []*result
	for k, c := range children {
		var r result
		if jerr := json.Unmarshal([]byte(c.out.String()), &r); jerr != nil {
			return res, fmt.Errorf("zkbench: -procs: child %d printed no result (%v, exit %v)", k, jerr, c.err)
		}
		parts = append(parts, &r)
	}
	mergeResults(res, parts)
	res.Seconds = holdTime.Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	open := int64(cfg.clients) - failed
	res.serverFigures(before, held, after, open, holdTime)
	if !ok && ctx.Err() == nil {
		return res, errors.New("zkbench: -procs: a child ended before the hold did")
	}
	return res, nil
}

// mergeResults adds the children's counts into res. A quantile cannot be
// merged from quantiles: each latency figure is the largest of the
// children's (their mean, the mean weighted by their pings), and the
// reconnect span the longest of theirs.
func mergeResults(res *result, parts []*result) {
	var meanSum float64
	for _, r := range parts {
		res.Ops += r.Ops
		res.Disconnects += r.Disconnects
		res.Expired += r.Expired
		res.Reconnected += r.Reconnected
		res.MaxPingGapMs = max(res.MaxPingGapMs, r.MaxPingGapMs)
		res.ReconnectSpanMs = max(res.ReconnectSpanMs, r.ReconnectSpanMs)
		maxLatency(&res.Latency, r.Latency)
		meanSum += r.Latency.Mean * float64(r.Ops)
		if r.Reconnect != nil {
			if res.Reconnect == nil {
				res.Reconnect = &latency{}
			}
			maxLatency(res.Reconnect, *r.Reconnect)
		}
	}
	res.Latency.Mean = 0
	if res.Ops > 0 {
		res.Latency.Mean = meanSum / float64(res.Ops)
	}
}

// maxLatency raises each quantile of l to r's where r's is larger.
func maxLatency(l *latency, r latency) {
	l.Mean = max(l.Mean, r.Mean)
	l.P50 = max(l.P50, r.P50)
	l.P90 = max(l.P90, r.P90)
	l.P99 = max(l.P99, r.P99)
	l.P999 = max(l.P999, r.P999)
	l.Max = max(l.Max, r.Max)
}

// stopChildren interrupts the running children, as ^C would, and waits
// for them to report and exit; one still running after a minute is
// killed.
func stopChildren(children []*procChild) {
	for _, c := range children {
		if c != nil {
			c.cmd.Process.Signal(os.Interrupt)
		}
	}
	for _, c := range children {
		if c == nil {
			continue
		}
		select {
		case <-c.done:
		case <-time.After(time.Minute):
			c.cmd.Process.Kill()
			<-c.done
		}
	}
}
