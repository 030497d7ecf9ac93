package zkclish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// zkCliPath is Debian's zkCli.sh.
const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// cliTimeout bounds one zkCli invocation.
const cliTimeout = 90 * time.Second

// requireZkCli skips t (fails it under CI=true) unless Debian's zookeeper
// package, with Java and zkCli.sh, is installed.
func requireZkCli(t testing.TB) {
	t.Helper()
	zkproc.RequireZooKeeper(t)
	if _, err := os.Stat(zkCliPath); err != nil {
		msg := fmt.Sprintf("zkclish: %s missing; install it with: apt-get install -y zookeeper", zkCliPath)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// pair is a zkd and a ZooKeeper 3.8 started with the same options.
type pair struct {
	zkd, zk *zkproc.Server
}

// startPair starts a standalone zkd and a standalone ZooKeeper 3.8.
func startPair(t *testing.T, opts zkproc.Options) pair {
	t.Helper()
	requireZkCli(t)
	return pair{zkd: zkproc.StartZkd(t, opts), zk: zkproc.StartZooKeeper(t, opts)}
}

// cliRun is the outcome of one zkCli invocation.
type cliRun struct {
	// Out is stdout and stderr as one stream, in the order written.
	Out string
	// Code is the process's exit code (-1 if it did not exit normally).
	Code int
	// Sessions are the session ids (0x… as the server prints them) that
	// the #session directive read from the server's cons, in order.
	Sessions []string
	// Err reports a harness failure (timeout, a #wait that never matched).
	Err error
}

// runCli runs zkCli.sh -server s.Addr with args and feeds script to its
// stdin, line by line, then closes stdin (zkCli exits at EOF or at quit).
// Lines starting with '#' are directives for the harness, never sent:
//
//	#wait TEXT   wait (up to 20 s) until the output holds TEXT once more
//	             than it did at the previous #wait for the same TEXT
//	#session     read the sids of s's connections from its cons 4lw
//	             and append the new ones to cliRun.Sessions
//	#signal NAME raise the signal NAME in sig (for another zkCli)
//	#await NAME  wait (up to 20 s) until NAME has been raised in sig;
//	             leading #await lines are awaited before zkCli starts,
//	             so that its session is not yet there
//
// "{addr}" anywhere in script stands for s.Addr (for connect).
//
// runCli never calls t: it runs on any goroutine.
func runCli(s *zkproc.Server, script string, args ...string) cliRun {
	return runCliSig(s, nil, script, args...)
}

// runCliSig is runCli with signals shared with other zkCli runs, for
// scripts whose steps depend on each other (#signal and #await).
func runCliSig(s *zkproc.Server, sig *signals, script string, args ...string) cliRun {
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	for sig != nil && strings.HasPrefix(script, "#await ") {
		line, rest, _ := strings.Cut(script, "\n")
		if err := sig.await(ctx, strings.TrimPrefix(line, "#await ")); err != nil {
			return cliRun{Code: -1, Err: err}
		}
		script = rest
	}
	argv := append([]string{"-server", s.Addr}, args...)
	cmd := exec.CommandContext(ctx, zkCliPath, argv...)
	// A small, quick JVM: the client needs neither the C2 compiler nor a
	// parallel collector, and the cores are shared; no hsperfdata file,
	// whose locking between concurrent JVMs prints warnings.
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData")
	out := &zkproc.SyncBuffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return cliRun{Code: -1, Err: err}
	}
	if err := cmd.Start(); err != nil {
		return cliRun{Code: -1, Err: err}
	}
	var res cliRun
	feedErr := feed(ctx, stdin, out, s, sig, script, &res)
	stdin.Close()
	waitErr := cmd.Wait()
	res.Out = out.String()
	res.Code = cmd.ProcessState.ExitCode()
	res.Err = feedErr
	if ctx.Err() != nil {
		res.Err = errors.Join(res.Err, fmt.Errorf("zkclish: zkCli timed out after %v", cliTimeout))
	} else if waitErr != nil && !isExitError(waitErr) {
		res.Err = errors.Join(res.Err, waitErr)
	}
	return res
}

func isExitError(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// feed writes script to w, obeying its directives.
func feed(ctx context.Context, w io.Writer, out *zkproc.SyncBuffer, s *zkproc.Server, sig *signals, script string, res *cliRun) error {
	waits := map[string]int{}
	script = strings.ReplaceAll(script, "{addr}", s.Addr)
	for line := range strings.Lines(script) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "#wait "):
			text := strings.TrimPrefix(line, "#wait ")
			waits[text]++
			if err := waitOutput(ctx, out, text, waits[text]); err != nil {
				return err
			}
		case line == "#session":
			sids, err := sessionsOf(s)
			if err != nil {
				return err
			}
			for _, sid := range sids {
				if !slices.Contains(res.Sessions, sid) {
					res.Sessions = append(res.Sessions, sid)
				}
			}
		case strings.HasPrefix(line, "#signal ") && sig != nil:
			sig.raise(strings.TrimPrefix(line, "#signal "))
		case strings.HasPrefix(line, "#await ") && sig != nil:
			if err := sig.await(ctx, strings.TrimPrefix(line, "#await ")); err != nil {
				return err
			}
		case strings.HasPrefix(line, "#"):
			return fmt.Errorf("zkclish: unknown directive %q", line)
		default:
			if _, err := io.WriteString(w, line+"\n"); err != nil {
				return fmt.Errorf("zkclish: write %q: %w", line, err)
			}
		}
	}
	return nil
}

// signals are named one-shot events shared by concurrent zkCli runs.
type signals struct {
	mu struct {
		sync.Mutex
		ch map[string]chan struct{}
	}
}

// chanLocked returns the channel of name, creating it.
func (s *signals) chanLocked(name string) chan struct{} {
	if s.mu.ch == nil {
		s.mu.ch = map[string]chan struct{}{}
	}
	ch, ok := s.mu.ch[name]
	if !ok {
		ch = make(chan struct{})
		s.mu.ch[name] = ch
	}
	return ch
}

// raise marks name as raised; raising twice is harmless.
func (s *signals) raise(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.chanLocked(name)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// await blocks until name is raised, ctx ends or 20 s pass.
func (s *signals) await(ctx context.Context, name string) error {
	s.mu.Lock()
	ch := s.chanLocked(name)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	case <-time.After(20 * time.Second):
	}
	return fmt.Errorf("zkclish: signal %q never raised", name)
}

// waitOutput waits until out holds text at least n times.
func waitOutput(ctx context.Context, out *zkproc.SyncBuffer, text string, n int) error {
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(out.String(), text) < n {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("zkclish: output never held %q %d times", text, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

var sidRE = regexp.MustCompile(`sid=(0x[0-9a-f]+)`)

// sessionsOf returns the session ids of s's client connections, from cons.
func sessionsOf(s *zkproc.Server) ([]string, error) {
	cons, err := s.FourLetter("cons")
	if err != nil {
		return nil, err
	}
	var sids []string
	for _, m := range sidRE.FindAllStringSubmatch(cons, -1) {
		sids = append(sids, m[1])
	}
	if len(sids) == 0 {
		return nil, fmt.Errorf("zkclish: no session in cons:\n%s", cons)
	}
	return sids, nil
}

// both runs the same script with the same args against zkd and ZooKeeper
// at once and returns the zkd run first.
func both(p pair, script string, args ...string) (zkd, zk cliRun) {
	return bothOn(p.zkd, p.zk, script, args...)
}

// bothOn is both for a given zkd server and ZooKeeper server, e.g. the
// same member of two ensembles.
func bothOn(zkdServer, zkServer *zkproc.Server, script string, args ...string) (zkd, zk cliRun) {
	var wg sync.WaitGroup
	wg.Go(func() { zkd = runCli(zkdServer, script, args...) })
	wg.Go(func() { zk = runCli(zkServer, script, args...) })
	wg.Wait()
	return zkd, zk
}

// dropLines returns out without the lines equal to any of lines (compared
// without their line ends).
func dropLines(out string, lines ...string) string {
	var b strings.Builder
	for line := range strings.Lines(out) {
		if slices.Contains(lines, strings.TrimRight(line, "\r\n")) {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// normalized is a zkCli run's output after normalize.
type normalized struct {
	// Lines are the output lines, masked and filtered.
	Lines []string
	// Events are the WatchedEvent lines other than connection states, in
	// the order the watcher thread printed them.
	Events []string
}

var (
	noiseRE = []*regexp.Regexp{
		regexp.MustCompile(`^SLF4J: `),
		regexp.MustCompile(`^log4j:`),
		regexp.MustCompile(`^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d{3}`), // a log line
		regexp.MustCompile(`^(OpenJDK|Java HotSpot).* VM warning: `),
		regexp.MustCompile(`^\[\d+\.\d+s\]\[(warning|error|info)\s*\]`), // JVM unified logging
		regexp.MustCompile(`^Picked up (JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS): `),
	}
	zxidRE      = regexp.MustCompile(`^([cmp]Zxid) = (0x[0-9a-f]+)$`)
	timeRE      = regexp.MustCompile(`^([cm]time) = (.+)$`)
	ownerRE     = regexp.MustCompile(`^ephemeralOwner = (0x[0-9a-f]+)$`)
	connectRE   = regexp.MustCompile(`^Connecting to \S+$`)
	memberRE    = regexp.MustCompile(`^server\.\d+=`)
	portRE      = regexp.MustCompile(`:\d+`)
	epochString = "Thu Jan 01 00:00:00 UTC 1970"
)

// normalize filters and masks a zkCli run's output (see the package
// comment for what and why). sessions are the ids of the run's own
// sessions, which become <self#N>.
func normalize(out string, sessions []string) normalized {
	var n normalized
	zxids := map[string]string{}
	owners := map[string]string{}
	for i, sid := range sessions {
		owners[canonHex(sid)] = "<self#" + strconv.Itoa(i+1) + ">"
	}
	others := 0
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		if isNoise(line) || line == "WATCHER::" || strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "WatchedEvent ") {
			if !strings.Contains(line, " type:None ") {
				n.Events = append(n.Events, line)
			}
			continue
		}
		switch {
		case connectRE.MatchString(line):
			line = "Connecting to <server>"
		case memberRE.MatchString(line):
			line = portRE.ReplaceAllString(line, ":<port>")
		case zxidRE.MatchString(line):
			m := zxidRE.FindStringSubmatch(line)
			v := canonHex(m[2])
			if v == "0x0" {
				break
			}
			if _, ok := zxids[v]; !ok {
				zxids[v] = "<zxid#" + strconv.Itoa(len(zxids)+1) + ">"
			}
			line = m[1] + " = " + zxids[v]
		case timeRE.MatchString(line):
			m := timeRE.FindStringSubmatch(line)
			if m[2] != epochString {
				line = m[1] + " = <time>"
			}
		case ownerRE.MatchString(line):
			v := canonHex(ownerRE.FindStringSubmatch(line)[1])
			if v == "0x0" {
				break
			}
			if _, ok := owners[v]; !ok {
				others++
				owners[v] = "<session#" + strconv.Itoa(others) + ">"
			}
			line = "ephemeralOwner = " + owners[v]
		}
		n.Lines = append(n.Lines, line)
	}
	n.Lines = sortUnordered(n.Lines)
	return n
}

var (
	ephemeralsRE = regexp.MustCompile(`^\[(/.*)\]$`)
	authIDRE     = regexp.MustCompile(`^[a-z0-9]+: `)
)

// sortUnordered puts in order the two outputs whose order ZooKeeper takes
// from a hash set rather than from its contract: the path list of
// getEphemerals ("[/a, /b]") and the "scheme: user" lines that follow
// whoami's "Auth scheme: User" header.
func sortUnordered(lines []string) []string {
	for i := 0; i < len(lines); i++ {
		if m := ephemeralsRE.FindStringSubmatch(lines[i]); m != nil {
			paths := strings.Split(m[1], ", ")
			slices.Sort(paths)
			lines[i] = "[" + strings.Join(paths, ", ") + "]"
			continue
		}
		if lines[i] != "Auth scheme: User" {
			continue
		}
		j := i + 1
		for j < len(lines) && authIDRE.MatchString(lines[j]) {
			j++
		}
		slices.Sort(lines[i+1 : j])
		i = j - 1
	}
	return lines
}

func isNoise(line string) bool {
	for _, re := range noiseRE {
		if re.MatchString(line) {
			return true
		}
	}
	return false
}

// canonHex returns a 0x-prefixed hex number without leading zeros, so that
// 0x01a2 and 0x1a2 mask alike; anything unparsable is returned unchanged.
func canonHex(s string) string {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		return s
	}
	return "0x" + strconv.FormatUint(v, 16)
}

// compare fails t when the normalized outputs, the watch events or the
// exit codes of the zkd and ZooKeeper runs differ, printing both raw
// outputs and a diff. It returns zkd's normalized output for direct
// assertions.
func compare(t *testing.T, what string, zkd, zk cliRun) normalized {
	t.Helper()
	if zkd.Err != nil {
		t.Errorf("%s: zkd run: %v", what, zkd.Err)
	}
	if zk.Err != nil {
		t.Errorf("%s: ZooKeeper run: %v", what, zk.Err)
	}
	nd, nz := normalize(zkd.Out, zkd.Sessions), normalize(zk.Out, zk.Sessions)
	bad := false
	if d := lineDiff(nz.Lines, nd.Lines); d != "" {
		t.Errorf("%s: zkCli output differs (- ZooKeeper 3.8, + zkd):\n%s", what, clip(d))
		bad = true
	}
	if d := lineDiff(nz.Events, nd.Events); d != "" {
		t.Errorf("%s: watch events differ (- ZooKeeper 3.8, + zkd):\n%s", what, d)
		bad = true
	}
	if zkd.Code != zk.Code {
		t.Errorf("%s: exit code: zkd %d, ZooKeeper %d", what, zkd.Code, zk.Code)
		bad = true
	}
	if bad || testing.Verbose() {
		t.Logf("%s: raw zkd output (exit %d):\n%s", what, zkd.Code, clip(zkd.Out))
		t.Logf("%s: raw ZooKeeper output (exit %d):\n%s", what, zk.Code, clip(zk.Out))
	}
	return nd
}

// clipWidth is the longest line clip keeps whole.
const clipWidth = 300

// clip shortens every line of s longer than clipWidth, for logs.
func clip(s string) string {
	var sb strings.Builder
	for line := range strings.Lines(s) {
		body := strings.TrimRight(line, "\n")
		if len(body) > clipWidth {
			fmt.Fprintf(&sb, "%s… (%d bytes)", body[:clipWidth], len(body))
			if len(body) < len(line) {
				sb.WriteString("\n")
			}
			continue
		}
		sb.WriteString(line)
	}
	return sb.String()
}

// lineDiff returns a minimal diff of a and b (lines from a only prefixed
// "- ", from b only "+ ", common "  "), or "" when they are equal.
func lineDiff(a, b []string) string {
	if slices.Equal(a, b) {
		return ""
	}
	// Longest common subsequence table; outputs are a few hundred lines.
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			sb.WriteString("  " + a[i] + "\n")
			i++
			j++
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			sb.WriteString("+ " + b[j] + "\n")
			j++
		default:
			sb.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return sb.String()
}

// wantInOrder fails t unless lines holds every one of want, in that order
// (other lines may come between).
func wantInOrder(t *testing.T, what string, lines []string, want ...string) {
	t.Helper()
	i := 0
	for _, l := range lines {
		if i < len(want) && l == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Error(clip(fmt.Sprintf("%s: zkd output lacks %q (after %q) in order; output:\n%s",
			what, want[i], want[:i], strings.Join(lines, "\n"))))
	}
}

// statBlock returns the Stat printed after the line equal to after (the
// 11 "key = value" lines of get -s, stat, ls -s, …) as a map, or nil.
func statBlock(lines []string, after string) map[string]string {
	for i, l := range lines {
		if l != after {
			continue
		}
		st := map[string]string{}
		for _, sl := range lines[i+1:] {
			k, v, ok := strings.Cut(sl, " = ")
			if !ok {
				break
			}
			st[k] = v
			if k == "numChildren" {
				break
			}
		}
		if len(st) == 11 {
			return st
		}
	}
	return nil
}
