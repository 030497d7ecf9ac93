package zkproc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Kind names the server implementation a Server runs.
type Kind string

const (
	// KindZkd is zkd, built from ./cmd/zkd.
	KindZkd Kind = "zkd"
	// KindZooKeeper is Apache ZooKeeper 3.8 from Debian's zookeeper package.
	KindZooKeeper Kind = "zookeeper"
)

// Paths of Debian's ZooKeeper 3.8. zookeeper.jar's manifest names its own
// dependencies (netty, jute, jetty, …) except the servlet API its admin
// server needs; slf4j-simple is added so that the server logs to stderr
// without a log4j configuration.
const (
	zooKeeperJar = "/usr/share/java/zookeeper.jar"
	slf4jJar     = "/usr/share/java/slf4j-simple.jar"
	servletJar   = "/usr/share/java/servlet-api.jar" // for the admin server (Jetty)
	// nettyCodecJar is missing from the manifest too; NettyServerCnxnFactory
	// (serverCnxnFactory, needed for secureClientPort) fails without it.
	nettyCodecJar = "/usr/share/java/netty-codec.jar"
)

// AptCommand is the command that installs every peer the test suites use.
const AptCommand = "sudo apt-get update && sudo apt-get install -y zookeeper python3-kazoo python3-cryptography libcurator-recipes-java"

// Options configure a server started by StartZkd or StartZooKeeper. The zero
// value is a standalone server with ZooKeeper's defaults, all 4-letter words
// allowed and the admin HTTP server off.
type Options struct {
	// ExtraCfg holds extra zoo.cfg lines, key to value. They are written
	// after, and so override, the lines zkproc writes itself.
	ExtraCfg map[string]string
	// TickTime is zoo.cfg's tickTime in milliseconds; default 2000.
	TickTime int
	// Env is appended to the test process's environment for the server.
	Env []string
	// AdminServer turns on the admin HTTP server (admin.enableServer) on a
	// free loopback port, reported in Server.AdminAddr. Default off.
	AdminServer bool
	// adminPort is the admin server's port an ensemble drew with its
	// members' other ports; 0 has newServer draw one.
	adminPort int
	// Dir is the server's directory (zoo.cfg, data/, the log). Default: a
	// fresh t.TempDir(). An existing Dir is reused, data included.
	Dir string
	// Port is the client port; default a free one.
	Port int
	// MemberDirs, for an ensemble, are the members' directories in myid
	// order (as Dir is a standalone server's), e.g. on a test file system;
	// default fresh directories.
	MemberDirs []string
	// Binary is the zkd binary to run; default BuildZkd. Ignored for
	// ZooKeeper.
	Binary string
	// JVMFlags are extra java flags for ZooKeeper, placed after zkproc's
	// own (so a later -D wins). Ignored for zkd.
	JVMFlags []string
	// StartTimeout bounds the wait for readiness; default 60s.
	StartTimeout time.Duration
	// Observers makes the last Observers members of an ensemble
	// non-voting observers (peerType=observer in their zoo.cfg, and
	// ":observer" on their server.N line in every member's). Ignored for a
	// standalone server.
	Observers int
}

// Server is one running (or stopped) server process. Its methods may be
// called from any goroutine; Cmd is replaced by Restart, so read it only
// from the test goroutine.
type Server struct {
	// Kind is the implementation this server runs.
	Kind Kind
	// Addr is the client address, 127.0.0.1:Port.
	Addr string
	// Port is the client port.
	Port int
	// AdminAddr is the admin HTTP server's address, or "" when it is off.
	AdminAddr string
	// Dir holds zoo.cfg, the data directory and the log.
	Dir string
	// DataDir is zoo.cfg's dataDir, Dir/data.
	DataDir string
	// CfgPath is the zoo.cfg the server was started with.
	CfgPath string
	// LogPath receives the server's stdout and stderr, across restarts.
	LogPath string
	// Cmd is the current process.
	Cmd *exec.Cmd

	argv    []string
	env     []string
	timeout time.Duration

	mu struct {
		sync.Mutex
		cmd  *exec.Cmd
		done chan struct{} // closed when cmd has been waited for
		err  error         // cmd.Wait's result
	}
}

// StartZkd starts a standalone zkd: it writes Dir/zoo.cfg (tickTime,
// dataDir, clientPort on a free port, clientPortAddress=127.0.0.1,
// admin.enableServer=false unless Options.AdminServer,
// 4lw.commands.whitelist=*), runs `zkd Dir/zoo.cfg` with its output in
// Dir/zkd.log, waits until a client handshake succeeds, and registers
// t.Cleanup to stop it and, if t failed, print the log's tail.
func StartZkd(t testing.TB, opts Options) *Server {
	t.Helper()
	return startStandalone(t, KindZkd, opts)
}

// StartZooKeeper starts Debian's ZooKeeper 3.8 the same way StartZkd starts
// zkd (org.apache.zookeeper.server.ZooKeeperServerMain Dir/zoo.cfg, output in
// Dir/zookeeper.log). When the package is not installed the test is skipped,
// or fails when the environment has CI=true, naming the apt-get command.
func StartZooKeeper(t testing.TB, opts Options) *Server {
	t.Helper()
	RequireZooKeeper(t)
	return startStandalone(t, KindZooKeeper, opts)
}

// RequireZooKeeper skips t (fails it under CI=true) unless Java and Debian's
// ZooKeeper 3.8 jars are installed.
func RequireZooKeeper(t testing.TB) {
	t.Helper()
	var missing []string
	if _, err := os.Stat(zooKeeperJar); err != nil {
		missing = append(missing, zooKeeperJar)
	}
	if javaPath() == "" {
		missing = append(missing, "java")
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("zkproc: ZooKeeper 3.8 not installed (missing %s); install it with: %s",
		strings.Join(missing, ", "), AptCommand)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// StartZkdEnsemble starts n zkd members that know each other through
// server.N=127.0.0.1:quorumPort:electionPort;127.0.0.1:clientPort lines and
// a myid file in each data directory, and waits until every member serves
// clients. Options apply to every member; Dir and Port must be unset. With
// Options.Observers, the last members are observers.
func StartZkdEnsemble(t testing.TB, n int, opts Options) []*Server {
	t.Helper()
	return startEnsemble(t, KindZkd, n, opts)
}

// StartZooKeeperEnsemble is StartZkdEnsemble for ZooKeeper 3.8 (run with
// QuorumPeerMain).
func StartZooKeeperEnsemble(t testing.TB, n int, opts Options) []*Server {
	t.Helper()
	RequireZooKeeper(t)
	return startEnsemble(t, KindZooKeeper, n, opts)
}

// Addrs returns the client addresses of servers, as a client's server list.
func Addrs(servers []*Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr
	}
	return out
}

func startStandalone(t testing.TB, kind Kind, opts Options) *Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	fixedPort := opts.Port != 0
	// A free port can be taken by another process between FreePort and the
	// server's bind; retry with a new one when that happens.
	for attempt := 0; ; attempt++ {
		s := newServer(t, kind, opts)
		if err := writeConfig(s, opts, nil, 0); err != nil {
			t.Fatalf("zkproc: %v", err)
		}
		if err := s.prepare(t, opts); err != nil {
			t.Fatalf("zkproc: %v", err)
		}
		err := s.start()
		if err == nil {
			err = s.waitReady()
		}
		// zkd serves on without its admin server when that one's port is
		// taken (as ZooKeeper does); a test that asked for it gets new
		// ports instead.
		adminLost := err == nil && opts.AdminServer && kind == KindZkd && strings.Contains(s.lastStartLog(), "http server not started")
		if err == nil && !adminLost {
			s.registerCleanup(t)
			return s
		}
		if adminLost {
			err = fmt.Errorf("admin server on %s not started", s.AdminAddr)
		}
		inUse := s.logContains("address already in use")
		s.Kill()
		if (inUse && !fixedPort || adminLost) && attempt < 3 {
			continue // newServer draws the ports not fixed again
		}
		t.Fatalf("zkproc: %s on %s did not start: %v\n%s", kind, s.Addr, err, s.logTail(8<<10))
	}
}

// StartRefused starts a standalone server of kind that must refuse to
// start: it fails the test if the server comes up, and returns its log
// once the process has exited.
func StartRefused(t testing.TB, kind Kind, opts Options) string {
	t.Helper()
	if kind == KindZooKeeper {
		RequireZooKeeper(t)
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s := newServer(t, kind, opts)
	if err := writeConfig(s, opts, nil, 0); err != nil {
		t.Fatalf("zkproc: %v", err)
	}
	if err := s.prepare(t, opts); err != nil {
		t.Fatalf("zkproc: %v", err)
	}
	if err := s.start(); err != nil {
		t.Fatalf("zkproc: %v", err)
	}
	err := s.waitReady()
	if err == nil || !strings.HasPrefix(err.Error(), "process exited") {
		s.Kill()
		t.Fatalf("zkproc: %s on %s started (%v), want a refusal:\n%s", kind, s.Addr, err, s.logTail(8<<10))
	}
	return s.Log()
}

func startEnsemble(t testing.TB, kind Kind, n int, opts Options) []*Server {
	t.Helper()
	if n < 1 {
		t.Fatalf("zkproc: ensemble of %d members", n)
	}
	if opts.Dir != "" || opts.Port != 0 {
		t.Fatalf("zkproc: Options.Dir and Options.Port must be unset for an ensemble")
	}
	if opts.Observers < 0 || opts.Observers >= n {
		t.Fatalf("zkproc: %d observers in an ensemble of %d: want 0 to %d", opts.Observers, n, n-1)
	}
	base := t.TempDir()
	// A port drawn free can be taken by another process before the member
	// binds it (tests run side by side): a fresh ensemble then starts
	// again on new ports, in new directories. One started on given
	// directories (MemberDirs) keeps its ports' failure.
	for attempt := 0; ; attempt++ {
		dir := base
		if attempt > 0 {
			dir = filepath.Join(base, fmt.Sprintf("attempt%d", attempt+1))
		}
		servers, errs := tryEnsemble(t, kind, n, opts, dir)
		failed := -1
		for i, err := range errs {
			if err != nil {
				failed = i
				break
			}
		}
		if failed < 0 {
			for _, s := range servers {
				s.registerCleanup(t)
			}
			return servers
		}
		inUse := false
		for _, s := range servers {
			inUse = inUse || strings.Contains(strings.ToLower(s.lastStartLog()), "address already in use")
			s.Kill()
		}
		if inUse && len(opts.MemberDirs) == 0 && attempt < 3 {
			continue
		}
		s := servers[failed]
		t.Fatalf("zkproc: %s member %d on %s did not start: %v\n%s", s.Kind, failed+1, s.Addr, errs[failed], s.logTail(8<<10))
	}
}

// pickEnsemblePorts draws an ensemble's ports; tests replace it to force a
// port collision.
var pickEnsemblePorts = FreePorts

// tryEnsemble starts an ensemble of n members under base and waits until
// each serves, or fails; errs says how each did.
func tryEnsemble(t testing.TB, kind Kind, n int, opts Options, base string) (servers []*Server, errs []error) {
	t.Helper()
	per := 3 // client, quorum, election; and the admin server's
	if opts.AdminServer {
		per = 4
	}
	ports := pickEnsemblePorts(t, per*n)
	members := make([]member, n)
	for i := range members {
		members[i] = member{id: i + 1, client: ports[per*i], quorum: ports[per*i+1], election: ports[per*i+2],
			observer: i >= n-opts.Observers}
	}
	servers = make([]*Server, n)
	for i, m := range members {
		o := opts
		o.Dir = filepath.Join(base, fmt.Sprintf("member%d", m.id))
		if i < len(opts.MemberDirs) {
			o.Dir = opts.MemberDirs[i]
		}
		o.MemberDirs = nil
		o.Port = m.client
		if opts.AdminServer {
			o.adminPort = ports[per*i+3]
		}
		s := newServer(t, kind, o)
		if err := writeConfig(s, o, members, m.id); err != nil {
			t.Fatalf("zkproc: %v", err)
		}
		if err := s.prepare(t, o); err != nil {
			t.Fatalf("zkproc: %v", err)
		}
		servers[i] = s
	}
	errs = make([]error, n)
	for i, s := range servers {
		if err := s.start(); err != nil {
			for _, started := range servers[:i] {
				started.Kill()
			}
			t.Fatalf("zkproc: %v", err)
		}
	}
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { errs[i] = s.waitReady() })
	}
	wg.Wait()
	return servers, errs
}

// member is one ensemble member's identity and ports.
type member struct {
	id                       int
	client, quorum, election int
	observer                 bool
}

func newServer(t testing.TB, kind Kind, opts Options) *Server {
	t.Helper()
	port := opts.Port
	if port == 0 {
		var err error
		if port, err = pickPort(); err != nil {
			t.Fatalf("zkproc: %v", err)
		}
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	s := &Server{
		Kind:    kind,
		Addr:    "127.0.0.1:" + strconv.Itoa(port),
		Port:    port,
		Dir:     opts.Dir,
		DataDir: filepath.Join(opts.Dir, "data"),
		CfgPath: filepath.Join(opts.Dir, "zoo.cfg"),
		LogPath: filepath.Join(opts.Dir, string(kind)+".log"),
		timeout: timeout,
	}
	if opts.AdminServer {
		// Drawn apart from the client port: two draws of a free port can
		// return the same one.
		admin, err := opts.adminPort, error(nil)
		for err == nil && (admin == 0 || admin == port) {
			admin, err = pickAdminPort()
		}
		if err != nil {
			t.Fatalf("zkproc: %v", err)
		}
		s.AdminAddr = "127.0.0.1:" + strconv.Itoa(admin)
	}
	return s
}

// writeConfig writes s.CfgPath, and for an ensemble member (myid > 0) the
// server.N lines and the myid file.
func writeConfig(s *Server, opts Options, members []member, myid int) error {
	if err := os.MkdirAll(s.DataDir, 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	tick := opts.TickTime
	if tick <= 0 {
		tick = 2000
	}
	cfg := [][2]string{
		{"tickTime", strconv.Itoa(tick)},
		{"dataDir", s.DataDir},
		{"clientPort", strconv.Itoa(s.Port)},
		{"clientPortAddress", "127.0.0.1"},
		{"4lw.commands.whitelist", "*"},
	}
	if s.AdminAddr != "" {
		_, port, _ := strings.Cut(s.AdminAddr, ":")
		cfg = append(cfg, [2]string{"admin.enableServer", "true"},
			[2]string{"admin.serverAddress", "127.0.0.1"},
			[2]string{"admin.serverPort", port})
	} else {
		cfg = append(cfg, [2]string{"admin.enableServer", "false"})
	}
	if myid > 0 {
		cfg = append(cfg, [2]string{"initLimit", "10"}, [2]string{"syncLimit", "5"})
		for _, m := range members {
			role := ""
			if m.observer {
				role = ":observer"
			}
			cfg = append(cfg, [2]string{
				"server." + strconv.Itoa(m.id),
				fmt.Sprintf("127.0.0.1:%d:%d%s;127.0.0.1:%d", m.quorum, m.election, role, m.client),
			})
			if m.observer && m.id == myid {
				cfg = append(cfg, [2]string{"peerType", "observer"})
			}
		}
		if err := os.WriteFile(filepath.Join(s.DataDir, "myid"), []byte(strconv.Itoa(myid)+"\n"), 0o644); err != nil {
			return fmt.Errorf("write myid: %w", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(opts.ExtraCfg)) {
		cfg = append(cfg, [2]string{k, opts.ExtraCfg[k]})
	}
	var b bytes.Buffer
	for _, kv := range cfg {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	if err := os.WriteFile(s.CfgPath, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write zoo.cfg: %w", err)
	}
	return nil
}

// prepare sets the command line and environment for s's process.
func (s *Server) prepare(t testing.TB, opts Options) error {
	t.Helper()
	s.env = append(os.Environ(), opts.Env...)
	switch s.Kind {
	case KindZkd:
		bin := opts.Binary
		if bin == "" {
			bin = BuildZkd(t)
		}
		s.argv = []string{bin, s.CfgPath}
	case KindZooKeeper:
		java := javaPath()
		if java == "" {
			return errors.New("java not found")
		}
		main := "org.apache.zookeeper.server.ZooKeeperServerMain"
		if hasServerLines(s.CfgPath) {
			main = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
		}
		s.argv = []string{java,
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
			// How a learner synced with its leader (DIFF, SNAP, TRUNC) at
			// info: a few lines per election, read by tests that explain
			// what a member had on disk.
			"-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.server.quorum.Learner=info",
			"-Dorg.slf4j.simpleLogger.showDateTime=true",
			"-Dzookeeper.jmx.log4j.disable=true",
		}
		s.argv = append(s.argv, opts.JVMFlags...)
		s.argv = append(s.argv, "-cp", zooKeeperJar+":"+slf4jJar+":"+servletJar+":"+nettyCodecJar, main, s.CfgPath)
	default:
		return fmt.Errorf("unknown kind %q", s.Kind)
	}
	return nil
}

// Command returns the command that runs kind on the zoo.cfg at cfgPath
// in the foreground, as the Start functions run it, for a test that
// expects the server to refuse to start: the caller runs it and reads its
// output and exit status. Nothing is cleaned up for it.
func Command(t testing.TB, kind Kind, cfgPath string) *exec.Cmd {
	t.Helper()
	s := &Server{Kind: kind, CfgPath: cfgPath}
	if err := s.prepare(t, Options{}); err != nil {
		t.Fatalf("zkproc: %s: %v", kind, err)
	}
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Env = s.env
	return cmd
}

func hasServerLines(cfgPath string) bool {
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "server.") {
			return true
		}
	}
	return false
}

// start launches the process without waiting for readiness.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.cmd != nil {
		select {
		case <-s.mu.done:
		default:
			return fmt.Errorf("%s on %s is already running", s.Kind, s.Addr)
		}
	}
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	fmt.Fprintf(logf, startMarker+" %s at %s: %s\n", s.Kind, time.Now().Format(time.RFC3339Nano), strings.Join(s.argv, " "))
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = s.env
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", s.argv[0], err)
	}
	done := make(chan struct{})
	s.mu.cmd, s.mu.done, s.mu.err = cmd, done, nil
	s.Cmd = cmd
	go func() {
		err := cmd.Wait()
		logf.Close()
		s.mu.Lock()
		if s.mu.cmd == cmd {
			s.mu.err = err
		}
		s.mu.Unlock()
		close(done)
	}()
	return nil
}

// waitReady polls until a client handshake succeeds, the process exits, or
// the start timeout passes.
func (s *Server) waitReady() error {
	s.mu.Lock()
	done := s.mu.done
	s.mu.Unlock()
	deadline := time.Now().Add(s.timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			s.mu.Lock()
			err := s.mu.err
			s.mu.Unlock()
			return fmt.Errorf("process exited: %v", err)
		default:
		}
		if last = Handshake(s.Addr, time.Second); last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v: %v", s.timeout, last)
}

func (s *Server) registerCleanup(t testing.TB) {
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("zkproc: %s on %s, tail of %s:\n%s", s.Kind, s.Addr, s.LogPath, s.logTail(16<<10))
		}
	})
}

// PID returns the current process id, or 0 if the server never started.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.cmd == nil || s.mu.cmd.Process == nil {
		return 0
	}
	return s.mu.cmd.Process.Pid
}

// Running reports whether the process is alive (paused counts as alive).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.cmd == nil {
		return false
	}
	select {
	case <-s.mu.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM (and SIGCONT, in case the server is paused) and waits
// for the process to exit; after 10 seconds it sends SIGKILL. Stopping a
// stopped server does nothing.
func (s *Server) Stop() { s.terminate(syscall.SIGTERM, 10*time.Second) }

// Kill sends SIGKILL and waits for the process to exit, as a crash would
// end it.
func (s *Server) Kill() { s.terminate(syscall.SIGKILL, 0) }

func (s *Server) terminate(sig syscall.Signal, grace time.Duration) {
	s.mu.Lock()
	cmd, done := s.mu.cmd, s.mu.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	if sig != syscall.SIGKILL {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		select {
		case <-done:
			return
		case <-time.After(grace):
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}
	<-done
}

// Restart starts the server again on the same directory, configuration and
// port, after stopping it with SIGTERM if it still runs, and waits until it
// serves clients. It fails t if the server does not come back.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatalf("zkproc: restart %s on %s: %v", s.Kind, s.Addr, err)
	}
	if err := s.waitReady(); err != nil {
		t.Fatalf("zkproc: restart %s on %s: %v\n%s", s.Kind, s.Addr, err, s.logTail(8<<10))
	}
}

// Start starts a stopped server again on the same directory,
// configuration and port without waiting for it to serve (a member that
// should stay out of its ensemble never will).
func (s *Server) Start() error { return s.start() }

// Pause stops the process with SIGSTOP: its sockets stay open but nothing
// answers, as with a long GC pause or a hung machine.
func (s *Server) Pause() {
	s.signal(syscall.SIGSTOP)
	// SIGSTOP is delivered asynchronously: wait (at most a second) until
	// the kernel reports the process stopped, so the caller's next step
	// really meets a paused server.
	pid := s.PID()
	for deadline := time.Now().Add(time.Second); pid > 0 && time.Now().Before(deadline); {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return // not Linux, or gone
		}
		// The state follows the parenthesised command name.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.cmd != nil && s.mu.cmd.Process != nil {
		_ = s.mu.cmd.Process.Signal(sig)
	}
}

// FourLetter sends a 4-letter word (ruok, srvr, mntr, …) to the server and
// returns the whole reply.
func (s *Server) FourLetter(cmd string) (string, error) {
	return FourLetter(s.Addr, cmd, 5*time.Second)
}

// Log returns everything the server has written to its log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.LogPath)
	return string(b)
}

// AwaitLog waits until the server's log contains sub, polling until
// timeout, and fails the test with the log's tail if it never does. A
// server may write a line after the event a test observes (a refusal is
// logged after the connection is closed), so a test reads the log this
// way rather than once right after the event.
func (s *Server) AwaitLog(t testing.TB, sub string, timeout time.Duration) {
	t.Helper()
	s.AwaitLogCount(t, sub, 1, timeout)
}

// AwaitLogCount is AwaitLog for the n-th time sub appears in the log,
// which spans the server's restarts.
func (s *Server) AwaitLogCount(t testing.TB, sub string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for strings.Count(s.Log(), sub) < n {
		if time.Now().After(deadline) {
			t.Fatalf("zkproc: %s on %s did not log %q %d times within %v; log tail:\n%s", s.Kind, s.Addr, sub, n, timeout, s.logTail(4096))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) logContains(sub string) bool {
	return strings.Contains(strings.ToLower(s.Log()), strings.ToLower(sub))
}

// startMarker begins the line zkproc writes into a server's log at each
// start.
const startMarker = "=== zkproc: starting"

// lastStartLog returns the log from the server's latest start on.
func (s *Server) lastStartLog() string {
	l := s.Log()
	if i := strings.LastIndex(l, startMarker); i >= 0 {
		return l[i:]
	}
	return l
}

// logTail returns at most n bytes from the end of the log.
func (s *Server) logTail(n int64) string {
	f, err := os.Open(s.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(fi.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

func javaPath() string {
	if p, err := exec.LookPath("java"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/java"); err == nil {
		return "/usr/bin/java"
	}
	return ""
}

// Mode returns the member's srvr Mode (leader, follower, observer,
// standalone, read-only), or "" if it does not answer.
func (s *Server) Mode() string {
	out, err := s.FourLetter("srvr")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(out) {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// LeaderOf polls the running servers until one says it leads and returns
// its index, or fails t after timeout.
func LeaderOf(t testing.TB, servers []*Server, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for i, s := range servers {
			if s.Running() && s.Mode() == "leader" {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("zkproc: no leader among %v within %v", Addrs(servers), timeout)
	return -1
}
