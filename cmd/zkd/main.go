// Command zkd is the zkd server: `zkd zoo.cfg` starts it from a ZooKeeper
// configuration file as `zkServer.sh start-foreground zoo.cfg` would, and
// `zkd` alone starts a standalone member on :2181 with data in ./zkd-data.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/server"
	"github.com/zkd/zkd/server/console"
	"github.com/zkd/zkd/server/lockview"
	"github.com/zkd/zkd/zab"
	"github.com/zkd/zkd/zab/store"
	"github.com/zkd/zkd/zab/wal"
)

// version is zkd's own version; the ZooKeeper line it answers to clients
// (srvr, stat, envi) is zkVersion.
const (
	version   = "0.1.0"
	zkVersion = "3.8.4-zkd-" + version
)

// hashHistory is how many digests the admin hash command lists (the
// newest; ZooKeeper's digest log keeps a like number).
const hashHistory = 64

// pprofAddr is the -pprof flag: where to serve the profiling handlers
// ("" for nowhere).
var pprofAddr string

// pprofContention is the -pprof-contention flag: sample blocking and mutex
// contention for the block and mutex profiles of -pprof.
var pprofContention bool

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "import" || os.Args[1] == "export") {
		os.Exit(migrateMain(os.Args[1], os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "rebuild" {
		os.Exit(rebuildMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "follow" {
		os.Exit(followMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	logLevel := flag.String("log-level", "info", "log level: debug, info, warn, error (overrides zoo.cfg zkd.log.level)")
	logFormat := flag.String("log-format", "console", "log format: console or json (overrides zoo.cfg zkd.log.format)")
	flag.BoolVar(&pprofContention, "pprof-contention", false, "with -pprof: also sample blocking and mutex contention (/debug/pprof/block, /debug/pprof/mutex); it slows the request path")
	flag.StringVar(&pprofAddr, "pprof", "", "serve Go's pprof handlers (/debug/pprof/) on this address, e.g. 127.0.0.1:6060, for profiling; off by default")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: zkd [flags] [zoo.cfg]\n       zkd import -from ZK_DATADIR [-from-log ZK_DATALOGDIR] zoo.cfg\n       zkd export -to DIR zoo.cfg\n"+
			"       zkd follow -zk HOST:QUORUMPORT,... [-sid N] zoo.cfg\n"+
			"       zkd rebuild zoo.cfg\n"+
			"       zkd version\n       zkd status [zoo.cfg]\n\n"+
			"Without zoo.cfg, zkd runs standalone on :2181 with data in ./zkd-data.\n"+
			"status prints the member's mode as zkServer.sh status does.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if code, ok := subcommand(flag.Args(), os.Stdout, os.Stderr); ok {
		os.Exit(code)
	}
	var (
		cfg *zooCfg
		err error
	)
	switch flag.NArg() {
	case 0:
		cfg = defaultZooCfg()
		cfg.DataDir = "zkd-data"
	case 1:
		if cfg, err = parseZooCfg(flag.Arg(0), os.Environ()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	default:
		flag.Usage()
		os.Exit(2)
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	level, format := logSettings(cfg, *logLevel, *logFormat, set["log-level"], set["log-format"])
	log, err := newLogger(level, format)
	if err == nil {
		log, err = toLogFile(log, cfg, level, format)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkd:", err)
		os.Exit(2)
	}
	if err := run(cfg, log); err != nil {
		if errors.Is(err, wal.ErrCorrupt) || errors.Is(err, store.ErrCorrupt) {
			log.Error(corruptMessage(cfg.DataDir, cfgPathOr(flag.Arg(0)), err), zap.String("dataDir", cfg.DataDir), zap.Error(err), zap.Int("exit", exitCorrupt))
			_ = log.Sync()
			os.Exit(exitCorrupt)
		}
		if de := (*divergedError)(nil); errors.As(err, &de) {
			log.Error(de.msg, zap.String("dataDir", cfg.DataDir), zap.Int("exit", exitDiverged))
			_ = log.Sync()
			os.Exit(exitDiverged)
		}
		if errors.Is(err, syscall.ENOSPC) {
			log.Error(diskFullMessage(cfg.DataDir, err), zap.String("dataDir", cfg.DataDir), zap.Error(err), zap.Int("exit", exitDiskFailure))
			_ = log.Sync()
			os.Exit(exitDiskFailure)
		}
		log.Error("zkd stopped", zap.Error(err))
		os.Exit(1)
	}
}

// logSettings picks the log level and format: a flag given on the command
// line wins, then zoo.cfg's zkd.log.level / zkd.log.format (or the
// -Dzookeeper.zkd.log.* JVM-style properties), then the flag's default.
func logSettings(c *zooCfg, flagLevel, flagFormat string, levelSet, formatSet bool) (level, format string) {
	level, format = flagLevel, flagFormat
	if v, ok := c.prop("zkd.log.level"); ok && !levelSet {
		level = strings.TrimSpace(v)
	}
	if v, ok := c.prop("zkd.log.format"); ok && !formatSet {
		format = strings.TrimSpace(v)
	}
	return level, format
}

func newLogger(level, format string) (*zap.Logger, error) {
	zc, err := zapConfig(level, format)
	if err != nil {
		return nil, err
	}
	return zc.Build()
}

// zapConfig is the logger configuration for a level and format.
func zapConfig(level, format string) (zap.Config, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return zap.Config{}, fmt.Errorf("log level %q: %w", level, err)
	}
	var zc zap.Config
	switch format {
	case "json":
		zc = zap.NewProductionConfig()
	case "console":
		zc = zap.NewDevelopmentConfig()
		zc.Development = false
		zc.DisableStacktrace = true
		zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	default:
		return zap.Config{}, fmt.Errorf("log format %q: want console or json", format)
	}
	// Readable at 3 a.m. in both formats: ISO 8601 times and durations
	// as "12.5ms" rather than float seconds.
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	zc.EncoderConfig.EncodeDuration = zapcore.StringDurationEncoder
	zc.Level = zap.NewAtomicLevelAt(lvl)
	return zc, nil
}

// configs turns a zoo.cfg into the ensemble's, the node's and the
// server's configurations.
func configs(c *zooCfg, log *zap.Logger) (qc quorum.Config, nc zab.Config, sc server.Config, err error) {
	nc = zab.DefaultConfig()
	sc = server.DefaultConfig()
	qc = quorum.DefaultConfig()
	if qc.Peers, err = quorum.ParsePeers(c.Servers); err != nil {
		return qc, nc, sc, err
	}
	qc.MyID = c.MyID
	if qc.MyID == 0 && len(qc.Peers) <= 1 {
		qc.MyID = 1
	}
	if qc.MyID == 0 {
		if err := checkMyID(c, &qc); err != nil {
			return qc, nc, sc, err // no myid file
		}
		return qc, nc, sc, fmt.Errorf("zkd: %s holds no member id: a member of an ensemble reads its server.N number there (one line, e.g. 1); restore it", filepath.Join(c.DataDir, "myid"))
	}
	qc.TickTime, qc.InitLimit, qc.SyncLimit = c.TickTime, c.InitLimit, c.SyncLimit
	qc.ReadOnlyMode = c.propBool("readonlymode.enabled")
	qc.ReconfigEnabled = c.ReconfigEnabled
	if err = quorumTLS(c, &qc, log); err != nil {
		return qc, nc, sc, err
	}
	if err = quorumSASL(c, &qc, log); err != nil {
		return qc, nc, sc, err
	}
	qc.Logger = log.Named("quorum")
	if err := qc.Validate(); err != nil {
		return qc, nc, sc, fmt.Errorf("zkd: %w", err)
	}
	dataDir, err := filepath.Abs(c.DataDir)
	if err != nil {
		return qc, nc, sc, fmt.Errorf("zkd: dataDir %q: %w", c.DataDir, err)
	}
	logDir := dataDir
	if c.DataLogDir != "" {
		if logDir, err = filepath.Abs(c.DataLogDir); err != nil {
			return qc, nc, sc, fmt.Errorf("zkd: dataLogDir %q: %w", c.DataLogDir, err)
		}
	}
	nc.Dir = filepath.Join(logDir, "zkd")
	nc.MyID = qc.MyID
	nc.TickTime = c.TickTime
	nc.Logger = log.Named("zab")
	nc.OnDiskFailure = diskFailure(log, c.DataDir)
	nc.OnDivergence = divergence(log, nc.Dir, qc.Standalone())
	// ZooKeeper 3.6+ has zookeeper.digest.enabled on by default.
	if v, ok := c.prop("zookeeper.digest.enabled"); ok && strings.EqualFold(strings.TrimSpace(v), "false") {
		nc.NoDigest = true
	}
	nc.Tree = datatree.DefaultConfig()
	nc.Tree.ExtendedTypes = c.propBool("zookeeper.extendedTypesEnabled")
	nc.Tree.EnforceQuota = c.propBool("zookeeper.enforceQuota")
	saslScheme := false
	if sc.SASL, saslScheme, err = saslConfig(c, log); err != nil {
		return qc, nc, sc, err
	}
	if saslScheme {
		nc.Tree.ExtraAuthSchemes = append(nc.Tree.ExtraAuthSchemes, "sasl")
	}
	// ZooKeeper reads these two without the "zookeeper." prefix (so only
	// -D flags reach it); zkd takes the bare -D name and the zoo.cfg key.
	interval, err := c.propInt("znode.container.checkIntervalMs", 60000)
	if err != nil {
		return qc, nc, sc, err
	}
	nc.ContainerCheckInterval = time.Duration(interval) * time.Millisecond
	perMinute, err := c.propInt("znode.container.maxPerMinute", 10000)
	if err != nil {
		return qc, nc, sc, err
	}
	nc.ContainerMaxPerMinute = int(perMinute)
	nc.LockDelayMs, nc.LockName = c.LockDelay.Milliseconds(), lockview.IsLockName
	nc.NoBootstrap = c.NoBootstrap
	if c.SnapCount > 0 {
		nc.SnapshotThreshold = uint64(c.SnapCount)
	}
	if c.SnapRetainCount > 0 {
		nc.SnapshotRetain = c.SnapRetainCount
	}

	host := c.ClientPortAddress
	sc.ClientAddr = net.JoinHostPort(host, strconv.Itoa(c.ClientPort))
	if self, ok := qc.Self(); ok && self.ClientAddr != "" && !qc.Standalone() {
		// server.N=...;[addr:]clientPort names this member's client address.
		sc.ClientAddr = self.ClientAddr
	}
	sc.TickTime = c.TickTime
	sc.MinSessionTimeout = c.MinSessionTimeout
	if sc.MinSessionTimeout == 0 {
		sc.MinSessionTimeout = 2 * c.TickTime
	}
	sc.MaxSessionTimeout = c.MaxSessionTimeout
	if sc.MaxSessionTimeout == 0 {
		sc.MaxSessionTimeout = 20 * c.TickTime
	}
	sc.MaxClientCnxns = c.MaxClientCnxns
	if err := limitConfig(c, &sc); err != nil {
		return qc, nc, sc, err
	}
	maxBuf, err := c.propInt("jute.maxbuffer", 0xfffff)
	if err != nil {
		return qc, nc, sc, err
	}
	sc.MaxBuffer = int(maxBuf)
	sc.FourLetterWhitelist = c.FourLetterWords
	sc.SuperDigest, _ = c.prop("zookeeper.DigestAuthenticationProvider.superDigest")
	sc.ReconfigEnabled = c.ReconfigEnabled
	sc.Version = zkVersion
	sc.DataDir = dataDir
	sc.DataLogDir = logDir
	sc.ServerID = c.MyID
	sc.ClientPort = c.ClientPort
	slowMs, err := c.propInt("zkd.slowRequestMs", sc.SlowRequestThreshold.Milliseconds())
	if err != nil {
		return qc, nc, sc, err
	}
	sc.SlowRequestThreshold = time.Duration(slowMs) * time.Millisecond
	sc.Logger = log.Named("server")
	extra, err := securityConfig(c, &sc)
	if err != nil {
		return qc, nc, sc, err
	}
	nc.Tree.ExtraAuthSchemes = append(nc.Tree.ExtraAuthSchemes, extra...)
	if err := sc.Validate(); err != nil {
		return qc, nc, sc, err
	}
	return qc, nc, sc, nil
}

// run starts the node and the client listener and serves until SIGTERM or
// SIGINT.
func run(c *zooCfg, log *zap.Logger) error {
	for _, k := range c.UnknownKeys {
		log.Warn("zoo.cfg: "+unknownKeyMessage(k), zap.String("key", k))
	}
	qc, nc, sc, err := configs(c, log)
	if err != nil {
		return err
	}
	adminWrap, err := adminTLS(c, log)
	if err != nil {
		return err
	}
	if len(c.NoEffect) > 0 {
		log.Info("zoo.cfg keys accepted without effect", zap.Strings("keys", c.NoEffect))
	}
	raiseFileLimit(log)
	if err := refuseZooKeeperData(sc.DataDir, sc.DataLogDir, nc.Dir); err != nil {
		return err
	}
	if err := checkDiverged(nc.Dir, qc.Standalone()); err != nil {
		return err
	}
	if err := os.MkdirAll(nc.Dir, 0o755); err != nil {
		return fmt.Errorf("zkd: create data dir: %w", err)
	}
	// The node may close sessions (log replay, expiry) before the server
	// exists; srv is published once it does.
	var srv atomic.Pointer[server.Server]
	nc.OnSessionClosed = func(id int64) {
		if s := srv.Load(); s != nil {
			s.SessionClosed(id)
		}
	}
	zm := server.NewZKMetrics()
	nc.Observer, nc.Tree.Observer, sc.Metrics = zm.Observer(), zm.TreeObserver(), zm
	start := time.Now()
	node, err := quorum.Open(qc, nc)
	if err != nil {
		return err
	}
	if qc.Standalone() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		err = node.WaitReady(ctx)
		cancel()
		if err != nil {
			node.Close()
			return err
		}
	}
	// An ensemble member listens at once; until it is in touch with a
	// leader it refuses clients (Serving), as ZooKeeper does.
	s, err := server.New(sc, backend{Member: node, zoo: c})
	if err != nil {
		node.Close()
		return err
	}
	srv.Store(s)
	ln, err := clientListener(c, sc, log)
	if err != nil {
		node.Close()
		return err
	}
	// The readiness line: standalone, now; an ensemble member once it
	// caught up with a leader (it listens before, refusing clients).
	ready := func() {
		log.Info(readyMessage, append(readyFields(node.Mode(), node.Node().Recovery()),
			zap.String("version", zkVersion),
			zap.Int("members", max(1, len(qc.Peers))),
			zap.String("client", ln.Addr().String()),
			zap.String("data", nc.Dir),
			zap.Int("znodes", node.Tree().NodeCount()),
			zap.String("zxid", fmt.Sprintf("0x%x", node.LastZxid())),
			zap.Duration("startup", time.Since(start)))...)
	}
	readyCtx, readyCancel := context.WithCancel(context.Background())
	defer readyCancel()
	if qc.Standalone() {
		ready()
	} else {
		log.Info("zkd listening, waiting for a leader before serving clients", zap.String("client", ln.Addr().String()))
		go func() {
			if node.WaitReady(readyCtx) == nil {
				ready()
			}
		}()
	}

	var https []*http.Server
	if c.AdminEnable {
		h, cons, err := adminHandler(c, s, log)
		if err != nil {
			s.Close()
			node.Close()
			return err
		}
		if cons != nil {
			defer cons.Close()
		}
		https = append(https, startHTTPWrapped(log, "admin", net.JoinHostPort(c.AdminAddress, strconv.Itoa(c.AdminPort)), h, adminWrap))
	}
	if pprofAddr != "" {
		if pprofContention {
			// Block and mutex sampling show the contention on the request
			// path, but cost the request path itself: sampling every
			// blocking event cost a fifth of a standalone create's throughput, so
			// it is asked for apart from the CPU profile and the trace.
			runtime.SetBlockProfileRate(100_000)
			runtime.SetMutexProfileFraction(100)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		https = append(https, startHTTP(log, "pprof", pprofAddr, mux))
	}
	if c.MetricsEnabled {
		mux := http.NewServeMux()
		mux.Handle("/metrics", s.MetricsHandler())
		https = append(https, startHTTP(log, "metrics", net.JoinHostPort(c.MetricsHost, strconv.Itoa(c.MetricsPort)), mux))
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- s.Serve(ln) }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sigs:
		log.Info("shutting down", zap.String("signal", s.String()))
	case err = <-serveErr:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			log.Error("client listener failed", zap.Error(err))
		}
	}
	for _, h := range https {
		if h != nil {
			h.Close()
		}
	}
	s.Close()
	if cerr := node.Close(); cerr != nil {
		log.Warn("closing the log", zap.Error(cerr))
	}
	log.Info("zkd stopped")
	return nil
}

// backend adds the leader's mntr figures to a quorum.Member for the
// server (quorum cannot name server's types).
type backend struct {
	*quorum.Member
	zoo *zooCfg // for system_properties and initial_configuration
}

// EnsembleStats implements server.EnsembleReporter: ZooKeeper's
// zk_peer_state and zk_quorum_size, and on the leader its learner counts.
func (b backend) EnsembleStats() (server.EnsembleStats, bool) {
	cfg := b.Config()
	if cfg.Standalone() {
		return server.EnsembleStats{}, false
	}
	es := server.EnsembleStats{PeerState: "looking - election"}
	for _, p := range cfg.Peers {
		if !p.Observer {
			es.QuorumSize++
		}
	}
	if b.Node().Leader() != "" {
		es.PeerState = map[string]string{"leader": "leading", "observer": "observing"}[b.Node().Mode()]
		if es.PeerState == "" {
			es.PeerState = "following"
		}
		es.PeerState += " - broadcast"
	}
	if ls, ok := b.LeaderStats(); ok {
		es.Leader = true
		es.Learners, es.SyncedFollowers = ls.Followers, ls.SyncedFollowers
		es.SyncedObservers, es.PendingSyncs = ls.Observers, ls.PendingSyncs
	}
	return es, true
}

// QuorumConf implements server.QuorumConfReporter: the ensemble lines of
// conf, as ZooKeeper 3.8 prints them after serverId. electionAlg is always
// 3 (ZooKeeper's only one; zkd elects through raft) and peerType is
// ZooKeeper's LearnerType ordinal (0 participant, 1 observer). The
// membership is /zookeeper/config as applied here, so it follows reconfig;
// this member's ports come from that membership too once it names it.
func (b backend) QuorumConf() ([]string, bool) {
	cfg := b.Config()
	if cfg.Standalone() {
		return nil, false
	}
	data, _, err := b.Tree().GetData(datatree.ConfigPath, nil, nil)
	if err != nil || len(data) == 0 {
		data = quorum.ConfigData(cfg.Peers, 0)
	}
	self, _ := cfg.Peer(cfg.MyID)
	if peers, _, err := quorum.ParseConfigData(data); err == nil {
		for _, p := range peers {
			if p.ID == cfg.MyID {
				self = p
			}
		}
	}
	peerType := 0
	if self.Observer {
		peerType = 1
	}
	lines := []string{
		"initLimit=" + strconv.Itoa(cfg.InitLimit),
		"syncLimit=" + strconv.Itoa(cfg.SyncLimit),
		"electionAlg=3",
		"electionPort=" + strconv.Itoa(self.ElectionPort),
		"quorumPort=" + strconv.Itoa(self.QuorumPort),
		"peerType=" + strconv.Itoa(peerType),
		"membership: ",
	}
	return append(lines, strings.Split(string(data), "\n")...), true
}

// AdminCommand implements server.AdminCommander for the admin commands the
// server cannot answer, with ZooKeeper's fields: system_properties (the
// properties zoo.cfg and -D flags set: zkd has no JVM's), and for ensembles
// initial_configuration, leader (is_leader, leader_id, leader_ip),
// voting_view (current_config: id → server spec, voters only), zabstate and
// observers, and zkd's own replication (every member's applied index and
// zxid, lag and readiness, from the leader's progress table). A standalone member leaves the ensemble ones unknown.
func (b backend) AdminCommand(name string) (map[string]any, bool) {
	cfg := b.Config()
	switch name {
	case "last_snapshot":
		// As ZooKeeper: the zxid in hex, the time in ms; -1 for none.
		zxid, ts := b.Node().LastSnapshotZxid(), int64(-1)
		if m := b.Node().Stats().Store; m.Snapshots > 0 {
			ts = time.Now().Add(-m.LastSnapshotAge).UnixMilli()
		}
		return map[string]any{"zxid": strconv.FormatInt(zxid, 16), "timestamp": ts}, true
	case "hash":
		// ZooKeeper's tree digest after the last entries applied,
		// oldest first, as its DataTree.getDigestLog.
		h := b.Node().DigestHistory()
		h = h[:min(len(h), hashHistory)]
		digests := make([]map[string]any, 0, len(h))
		for i := len(h) - 1; i >= 0; i-- {
			digests = append(digests, map[string]any{"zxid": h[i].Zxid, "digestVersion": datatree.DigestVersion, "digest": h[i].Digest})
		}
		return map[string]any{"digests": digests}, true
	}
	if name == "system_properties" {
		return systemProperties(b.zoo), true
	}
	if cfg.Standalone() {
		return nil, false
	}
	switch name {
	case "initial_configuration":
		lines := make([]string, 0, len(cfg.Peers))
		for _, p := range cfg.Peers {
			lines = append(lines, p.String())
		}
		return map[string]any{"initial_configuration": strings.Join(lines, "\n")}, true
	case "zabstate":
		self, _ := cfg.Peer(cfg.MyID)
		state := "election"
		if b.Node().Leader() != "" {
			state = "broadcast"
		}
		return map[string]any{
			"myid": cfg.MyID, "is_leader": b.Node().IsLeader(),
			"quorum_address": self.QuorumAddr(), "election_address": self.ElectionAddr(),
			"client_address": self.ClientAddr, "voting": !self.Observer, "zabstate": state,
		}, true
	case "observers":
		n := 0
		if ls, ok := b.LeaderStats(); ok {
			n = ls.Observers
		}
		return map[string]any{"synced_observers": n, "observers": []any{}}, true
	case "replication":
		// zkd's own: each member's applied index and zxid, lag and
		// readiness as the leader knows them (quorum.Progress).
		p, ok := b.Progress()
		if !ok {
			return map[string]any{"known": false}, true
		}
		members := make([]map[string]any, 0, len(p.Members))
		for _, mp := range p.Members {
			members = append(members, map[string]any{
				"id": mp.ID, "leader": mp.Leader, "observer": mp.Observer, "known": mp.Known,
				"applied_index": mp.AppliedIndex, "zxid": "0x" + strconv.FormatInt(mp.Zxid, 16),
				"lag": mp.Lag, "serving": mp.Serving, "in_touch": mp.InTouch, "ready": mp.Ready,
				"report_age_ms": mp.Age.Milliseconds(),
			})
		}
		return map[string]any{"known": true, "leader_id": p.LeaderID, "commit_index": p.CommitIndex,
			"age_ms": p.Age.Milliseconds(), "members": members}, true
	case "leader":
		m := map[string]any{"is_leader": b.Node().IsLeader()}
		id, err := strconv.ParseInt(string(b.Node().Leader()), 10, 64)
		if err != nil {
			return m, true
		}
		m["leader_id"] = id
		if p, ok := cfg.Peer(id); ok {
			m["leader_ip"] = p.Host
		}
		return m, true
	case "voting_view":
		view := map[string]any{}
		for _, p := range cfg.Peers {
			if !p.Observer {
				_, spec, _ := strings.Cut(p.String(), "=")
				view[strconv.FormatInt(p.ID, 10)] = spec
			}
		}
		return map[string]any{"current_config": view}, true
	}
	return nil, false
}

// RaftStats implements server.RaftStatsReporter from the node's raft and
// Pebble figures, for /metrics.
func (b backend) RaftStats() server.RaftStats {
	st := b.Node().Stats()
	num := func(k string) uint64 {
		n, _ := strconv.ParseUint(st.Raft[k], 10, 64)
		return n
	}
	m := st.Store
	return server.RaftStats{
		Term:              num("term"),
		Leader:            st.Raft["state"] == "Leader",
		LastLogIndex:      num("last_log_index"),
		CommitIndex:       num("commit_index"),
		AppliedIndex:      num("applied_index"),
		LogEntries:        m.LogEntries,
		LogBytes:          m.LogDiskBytes,
		Appends:           m.Appends,
		AppendedEntries:   m.AppendedEntries,
		WALSyncs:          m.WALSyncs,
		LastCommitLatency: m.LastCommitLatency,
		LastFsyncLatency:  m.LastWALSyncLatency,
		DiskBytes:         m.DiskBytes,
		Snapshots:         m.Snapshots,
		LastSnapshotIndex: m.LastSnapshotIndex,
		LastSnapshotSize:  m.LastSnapshotSize,
		LastSnapshotAge:   m.LastSnapshotAge,
	}
}

// startHTTP serves h on addr in the background. As in ZooKeeper, a port
// that cannot be bound is logged and the member runs on without it.
func startHTTP(log *zap.Logger, what, addr string, h http.Handler) *http.Server {
	return startHTTPWrapped(log, what, addr, h, nil)
}

// adminHandler is the admin server's handler: ZooKeeper's commands under
// /commands and, unless zkd.console.enabled=false, the web console under
// /console with the identity zkd.console.identity names, sampling its
// plots every zkd.console.sampleIntervalMs (default 5000) and keeping the
// elections it saw in dataDir/console-elections.json.
func adminHandler(c *zooCfg, s *server.Server, log *zap.Logger) (http.Handler, *console.Console, error) {
	enabled, _ := c.prop("zkd.console.enabled")
	if strings.EqualFold(strings.TrimSpace(enabled), "false") {
		return s.AdminHandler(), nil, nil
	}
	ident, _ := c.prop("zkd.console.identity")
	sampleMs, err := c.propInt("zkd.console.sampleIntervalMs", 5000)
	if err != nil {
		return nil, nil, err
	}
	if sampleMs <= 0 {
		return nil, nil, fmt.Errorf("zkd: zkd.console.sampleIntervalMs=%d must be positive", sampleMs)
	}
	cons, err := console.New(s, console.Config{Identity: strings.TrimSpace(ident),
		SampleInterval: time.Duration(sampleMs) * time.Millisecond, Logger: log.Named("console"),
		ElectionsFile: filepath.Join(c.DataDir, "console-elections.json")})
	if err != nil {
		return nil, nil, fmt.Errorf("zkd: zkd.console.identity: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", s.AdminHandler())
	mux.Handle("/console", cons.Handler())
	mux.Handle("/console/", cons.Handler())
	return mux, cons, nil
}

// startHTTPWrapped is startHTTP with the listener wrapped by wrap (TLS)
// unless wrap is nil.
func startHTTPWrapped(log *zap.Logger, what, addr string, h http.Handler, wrap func(net.Listener) net.Listener) *http.Server {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn("http server not started", zap.String("server", what), zap.String("addr", addr), zap.Error(err))
		return nil
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("http server stopped", zap.String("server", what), zap.Error(err))
		}
	}()
	log.Info("http server listening", zap.String("server", what), zap.String("addr", ln.Addr().String()))
	return hs
}
