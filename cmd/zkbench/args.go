package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// errHelp is returned by parseArgs for -h: usage was printed, exit 0.
var errHelp = flag.ErrHelp

// maxSize keeps a node's data under ZooKeeper's default jute.maxbuffer
// (1,048,575 bytes) with room for the request's header and path.
const maxSize = 1<<20 - 4096

// workloads lists the -workload values.
var workloads = []string{"create", "set", "get", "token", "lock", "session", "sessions", "fill", "wait", "ceiling", "fleet"}

// config is zkbench's parsed command line.
type config struct {
	servers        []string
	workload       string
	clients        int
	duration       time.Duration
	warmup         time.Duration
	locks          int
	size           int
	hold           time.Duration
	interval       time.Duration
	json           bool
	sessionTimeout time.Duration
	root           string
	count          int
	path           string
	timeout        time.Duration
	verbose        bool
	saslUser       string
	saslPassword   string
	sourceIPs      int           // sessions: source addresses, 0 for one per sessionsPerIP
	pids           []int         // sessions: server processes to sample
	watches        int           // sessions: exists watches per session
	parallel       int           // sessions: concurrent connects
	rate           float64       // create, set, get: open loop at this many ops/s in all; 0 closed loop
	procs          int           // sessions: zkbench processes sharing the sessions
	sourceIPFirst  int           // sessions: the first source address is 127.0.0.0 plus this
	reconnect      bool          // sessions: resume a disconnected session on the next server
	dial           zk.Dialer     // plain TCP, or TLS with -tls-ca
	ceiling        string        // ceiling: answer or append
	ceilingDir     string        // ceiling append: where the log file goes
	client         string        // create, set, get: gozk, or raw (raw_client.go)
	paths          int           // fleet: lock paths in the tree
	fleetSearch    bool          // fleet: search the highest rate with p99 under searchP99
	searchStep     float64       // fleet search: rate factor per step
	searchP99      time.Duration // fleet search: the p99 bound
	fault          string        // fleet: kill-leader, kill-observer or fd-limit mid-phase
	faultAfter     time.Duration // fleet: when, into the measured phase
	fleetChild     bool          // fleet: this is a -procs child (fleet_run.go)
	fleetFirst     int           // fleet child: global index of its first session
}

// parseArgs parses and validates zkbench's flags. Usage and flag errors go
// to stderr.
func parseArgs(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("zkbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	servers := fs.String("servers", "127.0.0.1:2181", "comma-separated `host:port` list of the servers")
	fs.StringVar(&c.workload, "workload", "set", "one of "+strings.Join(workloads, ", "))
	fs.IntVar(&c.clients, "clients", 8, "concurrent clients, one session each")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured time before -duration")
	fs.IntVar(&c.locks, "locks", 1, "lock paths for -workload lock (equal to -clients: uncontended)")
	fs.IntVar(&c.size, "size", 1024, "data bytes per node (create, set, get, fill)")
	fs.DurationVar(&c.hold, "hold", 0, "time a lock is held before release")
	fs.DurationVar(&c.interval, "interval", 0, "if set, print ops/s and errors to stderr every `interval` while measuring")
	fs.BoolVar(&c.json, "json", false, "print the result as one JSON object")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 10*time.Second, "requested session timeout")
	fs.StringVar(&c.root, "root", "", "parent of every node zkbench creates (default /zkbench-<pid>, /zkbench-fill for fill)")
	fs.IntVar(&c.count, "count", 100000, "nodes to create for -workload fill")
	fs.StringVar(&c.path, "path", "", "node to read for -workload wait")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "longest wait for -workload wait")
	fs.BoolVar(&c.verbose, "v", false, "log the client library's messages to stderr")
	fs.StringVar(&c.saslUser, "sasl-user", "", "for -workload session: authenticate each new session by SASL DIGEST-MD5 as this `user`")
	fs.StringVar(&c.saslPassword, "sasl-password", "", "the -sasl-user's password")
	fs.IntVar(&c.sourceIPs, "source-ips", 0, "sessions: spread sessions over 127.0.0.1…127.0.0.`K` (0: one per 25,000 sessions)")
	pids := fs.String("pids", "", "sessions: comma-separated `pids` of the servers, for RSS per session and idle CPU")
	fs.IntVar(&c.watches, "watches", 2, "sessions: exists watches each session sets")
	fs.IntVar(&c.parallel, "connect-parallel", 64, "sessions: concurrent connection attempts")
	fs.Float64Var(&c.rate, "rate", 0, "create, set, get: start this many operations per second in all, without waiting for replies (open loop); 0: each client waits for its reply")
	fs.IntVar(&c.procs, "procs", 1, "sessions: split the sessions over `N` zkbench processes (each has its own fd limit)")
	fs.IntVar(&c.sourceIPFirst, "source-ip-first", 1, "sessions: the first source address is 127.0.0.0 plus `M`")
	fs.BoolVar(&c.reconnect, "reconnect", false, "sessions: resume a disconnected session on the next server, as a client library does")
	fs.StringVar(&c.ceiling, "ceiling", "append", "for -workload ceiling: the minimal server, "+strings.Join(ceilingModes, " or "))
	fs.StringVar(&c.ceilingDir, "ceiling-dir", os.TempDir(), "for -workload ceiling -ceiling append: the `directory` (disk) of the log")
	fs.StringVar(&c.client, "client", clientGozk, "create, set, get: the client, gozk (go-zookeeper) or raw (minimal, one goroutine per session, on zkd's jute codec; closed loop only)")
	fs.IntVar(&c.paths, "paths", 10000, "fleet: lock paths in the tree under -root (made where missing)")
	fs.BoolVar(&c.fleetSearch, "fleet-search", false, "fleet: step the rate up from -rate until acquire p99 reaches -search-p99; report the last good rate and p99 at half of it")
	fs.Float64Var(&c.searchStep, "search-step", 1.5, "fleet search: rate factor per step")
	fs.DurationVar(&c.searchP99, "search-p99", 5*time.Millisecond, "fleet search: acquire p99 bound")
	fs.StringVar(&c.fault, "fault", "", "fleet: kill-leader or kill-observer: kill -9 that member (a local process) -fault-after into the measured phase; fd-limit: lower an observer's (else a follower's) RLIMIT_NOFILE to its open descriptors plus 16, fill them with sessions until one is refused, hold them 5s, close them")
	fs.DurationVar(&c.faultAfter, "fault-after", 10*time.Second, "fleet: when -fault strikes, into the measured phase")
	fs.BoolVar(&c.fleetChild, "fleet-child", false, "fleet: internal, a -procs child")
	fs.IntVar(&c.fleetFirst, "fleet-first", 0, "fleet child: internal, global index of its first session")
	var tf tlsFlags
	fs.StringVar(&tf.ca, "tls-ca", "", "connect over TLS, trusting the CA certificate in this PEM `file`")
	fs.StringVar(&tf.cert, "tls-cert", "", "client certificate PEM `file` for TLS (with -tls-key)")
	fs.StringVar(&tf.key, "tls-key", "", "client private key PEM `file` for TLS (with -tls-cert)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: zkbench -servers host:port[,...] -workload %s -clients N -duration D [flags]\n",
			strings.Join(workloads, "|"))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	var err error
	if c.dial, err = tf.dialer(); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("zkbench: unexpected argument %q", fs.Arg(0))
	}
	for p := range strings.SplitSeq(*pids, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return config{}, fmt.Errorf("zkbench: -pids: %q is not a process id", p)
		}
		c.pids = append(c.pids, n)
	}
	if c.sourceIPs < 0 || c.sourceIPs > 1<<24-2 || c.watches < 0 || c.parallel < 1 {
		return config{}, fmt.Errorf("zkbench: -source-ips, -watches and -connect-parallel must not be negative (-connect-parallel at least 1)")
	}
	if c.procs < 1 || c.procs > c.clients || c.sourceIPFirst < 1 || c.sourceIPFirst+max(c.sourceIPs, 1) > 1<<24-1 {
		return config{}, fmt.Errorf("zkbench: -procs %d (want 1 to -clients) or -source-ip-first %d (want at least 1) out of range", c.procs, c.sourceIPFirst)
	}
	if c.procs > 1 && c.workload != "sessions" && c.workload != "fleet" {
		return config{}, fmt.Errorf("zkbench: -procs applies to -workload sessions and fleet only")
	}
	if c.reconnect && c.workload != "sessions" {
		return config{}, fmt.Errorf("zkbench: -reconnect applies to -workload sessions only")
	}
	for s := range strings.SplitSeq(*servers, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" {
			return config{}, fmt.Errorf("zkbench: -servers: %q is not host:port", s)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return config{}, fmt.Errorf("zkbench: -servers: bad port in %q", s)
		}
		c.servers = append(c.servers, s)
	}
	switch {
	case len(c.servers) == 0:
		return config{}, errors.New("zkbench: -servers is empty")
	case !slices.Contains(workloads, c.workload):
		return config{}, fmt.Errorf("zkbench: -workload %q: want one of %s", c.workload, strings.Join(workloads, ", "))
	case c.clients < 1:
		return config{}, fmt.Errorf("zkbench: -clients %d: want at least 1", c.clients)
	case c.duration <= 0:
		return config{}, fmt.Errorf("zkbench: -duration %v: want more than 0", c.duration)
	case c.warmup < 0:
		return config{}, fmt.Errorf("zkbench: -warmup %v: want 0 or more", c.warmup)
	case c.size < 0 || c.size > maxSize:
		return config{}, fmt.Errorf("zkbench: -size %d: want 0 to %d", c.size, maxSize)
	case c.hold < 0:
		return config{}, fmt.Errorf("zkbench: -hold %v: want 0 or more", c.hold)
	case c.interval < 0:
		return config{}, fmt.Errorf("zkbench: -interval %v: want 0 or more", c.interval)
	case c.sessionTimeout <= 0:
		return config{}, fmt.Errorf("zkbench: -session-timeout %v: want more than 0", c.sessionTimeout)
	}
	if c.workload == "lock" && (c.locks < 1 || c.locks > c.clients) {
		return config{}, fmt.Errorf("zkbench: -locks %d: want 1 to -clients (%d)", c.locks, c.clients)
	}
	if c.rate < 0 || (c.rate > 0 && !slices.Contains([]string{"create", "set", "get", "fleet"}, c.workload)) {
		return config{}, fmt.Errorf("zkbench: -rate %v: want 0, or more with -workload create, set, get or fleet", c.rate)
	}
	if c.workload == "fleet" {
		switch {
		case c.paths < 1:
			return config{}, fmt.Errorf("zkbench: -paths %d: want at least 1", c.paths)
		case c.fault != "" && c.fault != "kill-leader" && c.fault != "kill-observer" && c.fault != "fd-limit":
			return config{}, errFleetFault
		case c.fleetSearch && (c.rate <= 0 || c.searchStep <= 1 || c.searchP99 <= 0):
			return config{}, fmt.Errorf("zkbench: -fleet-search needs -rate > 0 to start from, -search-step > 1 and -search-p99 > 0")
		case c.fleetSearch && c.fault != "":
			return config{}, fmt.Errorf("zkbench: -fault and -fleet-search do not go together")
		case c.fault != "" && (c.faultAfter < 0 || c.faultAfter >= c.duration):
			return config{}, fmt.Errorf("zkbench: -fault-after %v: want 0 to -duration (%v)", c.faultAfter, c.duration)
		}
	}
	if !slices.Contains(clientKinds, c.client) {
		return config{}, fmt.Errorf("zkbench: -client %q: want one of %s", c.client, strings.Join(clientKinds, ", "))
	}
	if c.client == clientRaw && !slices.Contains(rawWorkloads, c.workload) {
		return config{}, fmt.Errorf("zkbench: -client raw runs -workload %s only, not %s", strings.Join(rawWorkloads, ", "), c.workload)
	}
	if c.client == clientRaw && c.rate > 0 {
		return config{}, fmt.Errorf("zkbench: -client raw runs closed loops only: drop -rate or use -client gozk")
	}
	if c.workload == "ceiling" && !slices.Contains(ceilingModes, c.ceiling) {
		return config{}, fmt.Errorf("zkbench: -ceiling %q: want one of %s", c.ceiling, strings.Join(ceilingModes, ", "))
	}
	if c.saslUser != "" && c.workload != "session" {
		return config{}, fmt.Errorf("zkbench: -sasl-user applies to -workload session only")
	}
	if c.workload == "fill" && c.count < 1 {
		return config{}, fmt.Errorf("zkbench: -count %d: want at least 1", c.count)
	}
	if c.workload == "wait" {
		if !validPath(c.path) {
			return config{}, fmt.Errorf("zkbench: -workload wait needs -path, an absolute znode path (got %q)", c.path)
		}
		if c.timeout <= 0 {
			return config{}, fmt.Errorf("zkbench: -timeout %v: want more than 0", c.timeout)
		}
	}
	if c.root == "" {
		c.root = fmt.Sprintf("/zkbench-%d", os.Getpid())
		if c.workload == "fill" {
			c.root = "/zkbench-fill"
		}
	}
	if !validPath(c.root) || c.root == "/" || strings.HasPrefix(c.root, "/zookeeper") {
		return config{}, fmt.Errorf("zkbench: -root %q: want an absolute path outside /zookeeper", c.root)
	}
	return c, nil
}

// validPath reports whether p is an absolute znode path without empty,
// "." or ".." components and without a trailing slash.
func validPath(p string) bool {
	if p == "/" {
		return true
	}
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return false
	}
	for part := range strings.SplitSeq(p[1:], "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}
