package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The fleet's parent: it makes the lock tree, holds the sessions itself
// (-procs 1) or over -procs children of its own binary, each with its own
// fd limit and block of source addresses, and drives measured phases. A
// child (-fleet-child) opens its sessions, prints one JSON line when they
// are open, then runs each phase command (fleetPhaseCmd, one JSON line on
// its stdin) and answers with its fleetPhase as one JSON line; it closes
// its sessions and exits at the end of its stdin. The parent samples the
// members (RSS, CPU) around each phase, kills one with -fault (or drives
// one to its fd limit: fleet_fdlimit.go), and merges.
//
// -fleet-search steps the rate up from -rate by -search-step per phase
// until acquire p99 reaches -search-p99 (or the fleet acquires less than
// 95% of the offered rate, or some fail), then runs once more at half the
// last good rate.

// fleetRunner runs phases on the fleet's sessions.
type fleetRunner interface {
	phase(ctx context.Context, cmd fleetPhaseCmd) (fleetPhase, error)
	close()
}

// localFleet is the -procs 1 runner.
type localFleet struct{ w *fleetWorker }

func (l localFleet) phase(ctx context.Context, cmd fleetPhaseCmd) (fleetPhase, error) {
	return l.w.phase(ctx, cmd), nil
}
func (l localFleet) close() { l.w.close() }

// fleetChild is one child process of the fleet.
type fleetChild struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	n     int
	share float64 // its share of the rate
}

// childFleet runs phases over children.
type childFleet struct{ children []*fleetChild }

func (c childFleet) phase(ctx context.Context, cmd fleetPhaseCmd) (fleetPhase, error) {
	for _, ch := range c.children {
		sub := cmd
		sub.Rate = cmd.Rate * ch.share
		if err := encodeLine(ch.in, sub); err != nil {
			return fleetPhase{}, fmt.Errorf("zkbench: fleet: child %d: %w", ch.cmd.Process.Pid, err)
		}
	}
	var all fleetPhase
	for _, ch := range c.children {
		if !ch.out.Scan() {
			return all, fmt.Errorf("zkbench: fleet: child %d ended during a phase: %v", ch.cmd.Process.Pid, ch.out.Err())
		}
		var p fleetPhase
		if err := json.Unmarshal(ch.out.Bytes(), &p); err != nil {
			return all, fmt.Errorf("zkbench: fleet: child %d: bad phase line %q: %w", ch.cmd.Process.Pid, ch.out.Text(), err)
		}
		all.merge(p)
	}
	return all, nil
}

func (c childFleet) close() {
	for _, ch := range c.children {
		ch.in.Close()
	}
	for _, ch := range c.children {
		done := make(chan struct{})
		go func() { ch.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			ch.cmd.Process.Kill()
			<-done
		}
	}
}

// startFleetChildren starts cfg.procs children and waits until each has
// its sessions open.
func startFleetChildren(ctx context.Context, cfg config, ips int, logw io.Writer) (childFleet, error) {
	exe, err := os.Executable()
	if err != nil {
		return childFleet{}, fmt.Errorf("zkbench: fleet: own binary: %w", err)
	}
	perChild := max(1, (ips+cfg.procs-1)/cfg.procs)
	var fleet childFleet
	var logMu sync.Mutex
	for k := range cfg.procs {
		lo, hi := cfg.clients*k/cfg.procs, cfg.clients*(k+1)/cfg.procs
		args := []string{"-servers", strings.Join(cfg.servers, ","), "-workload", "fleet", "-fleet-child",
			"-clients", strconv.Itoa(hi - lo), "-fleet-first", strconv.Itoa(lo), "-paths", strconv.Itoa(cfg.paths),
			"-session-timeout", cfg.sessionTimeout.String(), "-root", cfg.root,
			"-connect-parallel", strconv.Itoa(max(1, cfg.parallel/cfg.procs)),
			"-source-ips", strconv.Itoa(perChild), "-source-ip-first", strconv.Itoa(cfg.sourceIPFirst + k*perChild)}
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), childEnv+"=1")
		cmd.SysProcAttr = childProcAttr()
		in, err := cmd.StdinPipe()
		if err != nil {
			fleet.close()
			return childFleet{}, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			fleet.close()
			return childFleet{}, err
		}
		errp, err := cmd.StderrPipe()
		if err != nil {
			fleet.close()
			return childFleet{}, err
		}
		if err := cmd.Start(); err != nil {
			fleet.close()
			return childFleet{}, fmt.Errorf("zkbench: fleet: start child %d: %w", k, err)
		}
		go func() {
			sc := bufio.NewScanner(errp)
			for sc.Scan() {
				logMu.Lock()
				fmt.Fprintf(logw, "[%d] %s\n", k, sc.Text())
				logMu.Unlock()
			}
		}()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		fleet.children = append(fleet.children, &fleetChild{cmd: cmd, in: in, out: sc, n: hi - lo,
			share: float64(hi-lo) / float64(cfg.clients)})
	}
	for k, ch := range fleet.children {
		ready := make(chan bool, 1)
		go func() { ready <- ch.out.Scan() }()
		select {
		case ok := <-ready:
			if !ok || !strings.Contains(ch.out.Text(), `"ready"`) {
				fleet.close()
				return childFleet{}, fmt.Errorf("zkbench: fleet: child %d failed to open its %d sessions (see its log above)", k, ch.n)
			}
		case <-ctx.Done():
			fleet.close()
			return childFleet{}, ctx.Err()
		}
	}
	return fleet, nil
}

// runFleetChild is a child's life: open, say ready, run phases from stdin.
func runFleetChild(ctx context.Context, cfg config, logw io.Writer) error {
	raiseNoFile()
	w, err := openFleet(ctx, cfg, cfg.clients, cfg.fleetFirst, max(cfg.sourceIPs, 1), cfg.sourceIPFirst, logw)
	if err != nil {
		return err
	}
	defer w.close()
	if err := encodeLine(os.Stdout, map[string]bool{"ready": true}); err != nil {
		return err
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var cmd fleetPhaseCmd
		if err := json.Unmarshal(sc.Bytes(), &cmd); err != nil {
			return fmt.Errorf("zkbench: fleet child: bad phase command %q: %w", sc.Text(), err)
		}
		if err := encodeLine(os.Stdout, w.phase(ctx, cmd)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// fleetStep is one measured phase as reported.
type fleetStep struct {
	Rate          float64        `json:"offered_per_sec"`
	Achieved      float64        `json:"achieved_per_sec"`
	Acquire       latency        `json:"acquire_us"`
	AfterFault    *latency       `json:"after_fault_us,omitempty"`
	Errors        uint64         `json:"errors"`
	Unfinished    uint64         `json:"unfinished"`
	PingP99       float64        `json:"ping_p99_us"`
	PingMax       float64        `json:"ping_max_us"`
	MaxPingGapMs  float64        `json:"max_ping_gap_ms"`
	Disconnects   int64          `json:"disconnects"`
	Expired       int64          `json:"expired"`
	Members       []member       `json:"members,omitempty"`
	Fault         string         `json:"fault,omitempty"`
	FdLimit       *fdLimitReport `json:"fd_limit,omitempty"` // -fault fd-limit
	LastErr       string         `json:"last_error,omitempty"`
	Seconds       float64        `json:"seconds"`
	SearchVerdict string         `json:"search,omitempty"`
	Stuck         []string       `json:"stuck,omitempty"`
}

// member is one server's figures over a phase.
type member struct {
	Addr  string  `json:"addr"`
	Mode  string  `json:"mode,omitempty"`
	PID   int     `json:"pid,omitempty"`
	RSS   int64   `json:"rss,omitempty"`
	CPU   float64 `json:"cpu_percent,omitempty"`
	Conns int     `json:"connections"` // client connections, from srvr
	// RSSPerSession is (RSS - RSS before the fleet's sessions opened) /
	// Conns, in bytes: what a session costs this member with the lock
	// tree already in memory; 0 when unknown (the member restarted).
	RSSPerSession float64 `json:"rss_per_session,omitempty"`
}

// fleetReport is the fleet workload's result.
type fleetReport struct {
	Sessions int         `json:"sessions"`
	Paths    int         `json:"paths"`
	Hold     float64     `json:"hold_ms"`
	OpenSecs float64     `json:"open_seconds"`
	Steps    []fleetStep `json:"steps"`
	// Before is each member with the lock tree made and before the
	// fleet's sessions opened: the base of RSSPerSession.
	Before    []member `json:"members_before_sessions,omitempty"`
	BestRate  float64  `json:"best_rate,omitempty"`     // -fleet-search: last rate with p99 under -search-p99
	BestP99   float64  `json:"best_p99_us,omitempty"`   // its p99
	HalfP99   float64  `json:"half_p99_us,omitempty"`   // p99 at half of BestRate
	SearchP99 float64  `json:"search_p99_us,omitempty"` // the bound
}

// runFleet is the fleet workload.
func runFleet(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
	if cfg.fleetChild {
		return nil, runFleetChild(ctx, cfg, logw)
	}
	raiseNoFile()
	if err := makeFleetTree(ctx, cfg, logw); err != nil {
		return nil, err
	}
	base := sampleMembers(cfg)
	ips := cfg.sourceIPs
	if ips == 0 {
		ips = (cfg.clients + sessionsPerIP - 1) / sessionsPerIP
	}
	start := time.Now()
	var fleet fleetRunner
	if cfg.procs > 1 {
		cf, err := startFleetChildren(ctx, cfg, ips, logw)
		if err != nil {
			return nil, err
		}
		fleet = cf
	} else {
		w, err := openFleet(ctx, cfg, cfg.clients, 0, ips, cfg.sourceIPFirst, logw)
		if err != nil {
			return nil, err
		}
		fleet = localFleet{w}
	}
	defer fleet.close()
	rep := &fleetReport{Sessions: cfg.clients, Paths: cfg.paths, Hold: float64(cfg.hold) / 1e6, OpenSecs: time.Since(start).Seconds(), Before: base}
	res := &result{Workload: "fleet", Servers: cfg.servers, Clients: cfg.clients, Procs: cfg.procs, Fleet: rep}
	fmt.Fprintf(logw, "zkbench: fleet: %d sessions open on %d members in %.1fs\n", cfg.clients, len(cfg.servers), rep.OpenSecs)
	if cfg.warmup > 0 {
		if _, err := fleet.phase(ctx, fleetPhaseCmd{Rate: cfg.rate, Duration: cfg.warmup, Hold: cfg.hold}); err != nil {
			return res, err
		}
	}
	step := func(rate float64, fault string) (fleetStep, error) {
		cmd := fleetPhaseCmd{Rate: rate, Duration: cfg.duration, Hold: cfg.hold}
		before := sampleMembers(cfg)
		var faultDone chan string
		var fdLimit *fdLimitReport
		if fault != "" {
			at := time.Now().Add(cfg.faultAfter)
			cmd.FaultAt = at.UnixNano()
			faultDone = make(chan string, 1)
			go func() {
				select {
				case <-time.After(time.Until(at)):
					if fault == "fd-limit" {
						fdLimit = fdLimitFault(ctx, cfg)
						faultDone <- fdLimit.String()
						return
					}
					faultDone <- killMember(cfg, fault)
				case <-ctx.Done():
					faultDone <- "not done: interrupted"
				}
			}()
		}
		p, err := fleet.phase(ctx, cmd)
		after := sampleMembers(cfg)
		st := fleetStep{Rate: rate, Achieved: float64(p.InWindow) / cfg.duration.Seconds(),
			Acquire: summarize(p.Acquire.hist()), Errors: p.Errors, Unfinished: p.Unfinished,
			MaxPingGapMs: float64(p.MaxPingGap) / 1e6, Disconnects: p.Discon, Expired: p.Expired,
			LastErr: trimErr(p.LastErr), Seconds: p.Seconds, Stuck: p.Stuck}
		ping := summarize(p.Ping.hist())
		st.PingP99, st.PingMax = ping.P99, ping.Max
		for i := range after {
			m := after[i]
			if i < len(before) && before[i].PID == m.PID && m.PID != 0 && p.Seconds > 0 {
				m.CPU = (m.CPU - before[i].CPU) / p.Seconds * 100
			} else {
				m.CPU = 0
			}
			if i < len(base) && base[i].PID == m.PID && m.PID != 0 && m.Conns > 0 {
				m.RSSPerSession = float64(m.RSS-base[i].RSS) / float64(m.Conns)
			}
			st.Members = append(st.Members, m)
		}
		if faultDone != nil {
			st.Fault = <-faultDone
			st.FdLimit = fdLimit
			l := summarize(p.AfterFault.hist())
			st.AfterFault = &l
		}
		fmt.Fprintf(logw, "zkbench: fleet: offered %.0f/s achieved %.0f/s acquire p99 %s, %d errors, %d unfinished, %d disconnects, %d expired\n",
			rate, st.Achieved, fmtMicros(st.Acquire.P99), st.Errors, st.Unfinished, st.Disconnects, st.Expired)
		return st, err
	}
	if !cfg.fleetSearch {
		st, err := step(cfg.rate, cfg.fault)
		rep.Steps = append(rep.Steps, st)
		return res, err
	}
	bound := float64(cfg.searchP99) / 1e3
	rep.SearchP99 = bound
	for rate := cfg.rate; ctx.Err() == nil; rate *= cfg.searchStep {
		st, err := step(rate, "")
		good := st.Acquire.P99 < bound && st.Achieved >= 0.95*rate && st.Errors == 0 && st.Unfinished == 0
		st.SearchVerdict = map[bool]string{true: "good", false: "broken"}[good]
		rep.Steps = append(rep.Steps, st)
		if err != nil {
			return res, err
		}
		if !good {
			break
		}
		rep.BestRate, rep.BestP99 = rate, st.Acquire.P99
	}
	if rep.BestRate > 0 && ctx.Err() == nil {
		st, err := step(rep.BestRate/2, "")
		st.SearchVerdict = "half"
		rep.Steps = append(rep.Steps, st)
		rep.HalfP99 = st.Acquire.P99
		if err != nil {
			return res, err
		}
	}
	return res, ctx.Err()
}

// cpuSeconds is carried in member.CPU between the samples of a phase.
// sampleMembers reads each member's mode (srvr) and, for the process
// listening on its port (or the -pids given in the same order), RSS and
// CPU seconds so far.
func sampleMembers(cfg config) []member {
	out := make([]member, len(cfg.servers))
	for i, addr := range cfg.servers {
		m := member{Addr: addr}
		m.Mode, m.Conns = memberStatus(addr)
		if i < len(cfg.pids) {
			m.PID = cfg.pids[i]
		} else {
			m.PID = pidListening(addr)
		}
		if m.PID != 0 {
			if ps, err := sampleProc(m.PID); err == nil {
				m.RSS, m.CPU = ps.rss, ps.cpu.Seconds()
			} else {
				m.PID = 0
			}
		}
		out[i] = m
	}
	return out
}

// memberMode asks addr "srvr" and returns its Mode (leader, follower,
// observer, standalone), or "down".
func memberMode(addr string) string {
	mode, _ := memberStatus(addr)
	return mode
}

// memberStatus asks addr "srvr" and returns its Mode ("down" when it
// does not answer, "unknown" without the line) and its count of client
// connections (the srvr connection itself not counted).
func memberStatus(addr string) (mode string, conns int) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "down", 0
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := nc.Write([]byte("srvr")); err != nil {
		return "down", 0
	}
	b, _ := io.ReadAll(nc)
	mode = "unknown"
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Mode:"); ok {
			mode = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "Connections:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				conns = max(n-1, 0)
			}
		}
	}
	return mode, conns
}

// pidListening returns the process listening on addr's TCP port, from
// /proc/net/tcp{,6} and the processes' fd tables; 0 if none is found
// (another user's process, or a remote member).
func pidListening(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	p, _ := strconv.Atoi(port)
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "0A" { // LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			if n, err := strconv.ParseInt(hexPort, 16, 32); ok && err == nil && int(n) == p {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd")
	for _, dir := range procs {
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && inodes[l] {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
				return pid
			}
		}
	}
	return 0
}

// killMember kills with SIGKILL the member in mode ("leader" or
// "observer"; the first observer of -servers) and says which.
func killMember(cfg config, fault string) string {
	mode := strings.TrimPrefix(fault, "kill-")
	for i, addr := range cfg.servers {
		if memberMode(addr) != mode {
			continue
		}
		pid := pidListening(addr)
		if i < len(cfg.pids) {
			pid = cfg.pids[i]
		}
		if pid == 0 {
			return fmt.Sprintf("not done: no local process found for %s %s", mode, addr)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Sprintf("not done: kill -9 %d (%s %s): %v", pid, mode, addr, err)
		}
		return fmt.Sprintf("kill -9 %s %s (pid %d) at +%v", mode, addr, pid, cfg.faultAfter)
	}
	return "not done: no member answered srvr with Mode: " + mode
}

// errFleetFault is returned for a bad -fault.
var errFleetFault = errors.New("zkbench: -fault: want kill-leader, kill-observer or fd-limit")

// write prints the fleet report: one line per phase, then the members.
func (f *fleetReport) write(b *strings.Builder, r *result) {
	fmt.Fprintf(b, "workload=fleet sessions=%d paths=%d hold=%.0fms procs=%d servers=%s (open in %.1fs)\n",
		f.Sessions, f.Paths, f.Hold, r.Procs, strings.Join(r.Servers, ","), f.OpenSecs)
	fmt.Fprintf(b, "%-8s %9s %9s %9s %9s %9s %6s %6s %9s %8s %6s %6s %s\n", "phase", "offered/s", "achieved", "acq p50",
		"acq p99", "acq p999", "errors", "unfin", "ping p99", "ping gap", "discon", "expire", "")
	for _, st := range f.Steps {
		name := st.SearchVerdict
		if name == "" {
			name = "run"
		}
		fmt.Fprintf(b, "%-8s %9.0f %9.0f %9s %9s %9s %6d %6d %9s %7.0fms %6d %6d\n", name, st.Rate, st.Achieved,
			fmtMicros(st.Acquire.P50), fmtMicros(st.Acquire.P99), fmtMicros(st.Acquire.P999), st.Errors, st.Unfinished,
			fmtMicros(st.PingP99), st.MaxPingGapMs, st.Disconnects, st.Expired)
		if st.Fault != "" {
			l := st.AfterFault
			fmt.Fprintf(b, "  fault: %s; acquisitions scheduled in the next %v: p50=%s p99=%s max=%s\n", st.Fault, fleetFaultWindow,
				fmtMicros(l.P50), fmtMicros(l.P99), fmtMicros(l.Max))
		}
		for _, m := range st.Members {
			fmt.Fprintf(b, "  member %-21s %-10s pid %-7d RSS %7.1f MiB  CPU %5.1f%%  %6d sessions", m.Addr, m.Mode, m.PID, float64(m.RSS)/(1<<20), m.CPU, m.Conns)
			if m.RSSPerSession > 0 {
				fmt.Fprintf(b, "  %5.1f KiB each over the tree alone", m.RSSPerSession/1024)
			}
			fmt.Fprintln(b)
		}
		if st.LastErr != "" {
			fmt.Fprintf(b, "  last error: %s\n", st.LastErr)
		}
		if len(st.Stuck) > 0 {
			fmt.Fprintf(b, "  unfinished acquisitions on: %s\n", strings.Join(st.Stuck, " "))
		}
	}
	if f.SearchP99 > 0 {
		if f.BestRate > 0 {
			fmt.Fprintf(b, "search: highest rate with acquire p99 < %s: %.0f/s (p99 %s); at half that, %.0f/s: p99 %s\n",
				fmtMicros(f.SearchP99), f.BestRate, fmtMicros(f.BestP99), f.BestRate/2, fmtMicros(f.HalfP99))
		} else {
			fmt.Fprintf(b, "search: no rate met acquire p99 < %s, not even the first\n", fmtMicros(f.SearchP99))
		}
	}
}
