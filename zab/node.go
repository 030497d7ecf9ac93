package zab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/session"
	"github.com/zkd/zkd/zab/coalesce"
	"github.com/zkd/zkd/zab/fencing"
	"github.com/zkd/zkd/zab/store"
	"github.com/zkd/zkd/zab/wal"
)

// Config is what a Node needs; cmd builds it from zoo.cfg.
type Config struct {
	// Dir holds the Pebble store (raft's stable store and snapshots) and,
	// in its wal folder, raft's log.
	Dir string
	// MyID is this member's id (zoo.cfg myid); 1 for standalone. It seeds
	// session ids as in ZooKeeper.
	MyID int64
	// TickTime is ZooKeeper's tick: session expiry is checked once a tick.
	// Default 2s.
	TickTime time.Duration
	// Tree configures the datatree.
	Tree datatree.Config
	// ContainerCheckInterval is how often the leader looks for empty
	// containers and expired TTL nodes
	// (zookeeper.znode.container.checkIntervalMs). Default 60s.
	ContainerCheckInterval time.Duration
	// ContainerMaxPerMinute bounds the deletes of one sweep per minute
	// (zookeeper.znode.container.maxPerMinute). Default 10000.
	ContainerMaxPerMinute int
	// SnapshotThreshold is how many client writes and other log entries
	// since the last snapshot make the next one (ZooKeeper's snapCount):
	// packed writes count one each, not one per entry. Default 100000.
	SnapshotThreshold uint64
	// SnapshotInterval is how often raft checks whether to snapshot.
	// Default 30s.
	SnapshotInterval time.Duration
	// SnapshotRetain is how many snapshots are kept
	// (autopurge.snapRetainCount). Default 3.
	SnapshotRetain int
	// TrailingLogs is how many log entries a snapshot leaves behind for
	// slow followers; one further behind gets the snapshot installed.
	// Default 10240.
	TrailingLogs uint64
	// LockDelayMs is zkd.lockDelayMs (docs/fencing.md, "Lock delay"): when
	// positive, the leader's session expiry entries carry it, and every
	// member keeps the expired sessions' lock nodes (LockName) as
	// tombstones for that long; the leader removes them once due, checked
	// every TickTime. Zero (the default) deletes them at once, as
	// ZooKeeper does. The leader's value is the one applied.
	LockDelayMs int64
	// LockName tells a lock recipe's node name (lockview.IsLockName). It
	// is code, the same on every member; it must be set when LockDelayMs
	// is, and on every member of an ensemble whose leader may have it.
	LockName func(name string) bool
	// NoBootstrap leaves a member with an empty data directory without a
	// raft configuration (zoo.cfg zkd.bootstrap=false). It never starts an
	// election on its own: it waits until a member that has state — one
	// seeded by zkd import or zkd follow — wins its vote and installs that
	// state by raft. Without it, empty members bootstrap the zoo.cfg
	// membership and two of them could elect a leader without the seeded
	// state. Ignored once the directory holds state.
	NoBootstrap bool
	// NoSync skips fsync: tests only, never in production.
	NoSync bool
	// OnDiskFailure, when set, is called once when an fsync of the raft
	// log or of Pebble fails, with the file (or Pebble's directory) and
	// the error, and must not return: after a failed fsync the page cache
	// can no longer be trusted to hold what the disk holds (PostgreSQL's
	// "fsyncgate"), so the member must stop and recover from what was
	// synced. cmd/zkd logs one line and exits. Unset, the failure is only
	// returned (the log) or panics (Pebble), as tests of those packages
	// expect.
	OnDiskFailure func(file string, err error)
	// OnDivergence, when set, is called on the apply goroutine when this
	// member's tree digest differs from the one its leader recorded at
	// the same zxid (digest.go), after Observer.DigestMismatch, and must
	// not return: the member's tree is not the ensemble's, and it must be
	// rebuilt from its peers. cmd/zkd logs one line and exits. Unset, the
	// member panics.
	OnDivergence func(Divergence)
	// NoDigest leaves the tree digest out of the entries this member
	// proposes (ZooKeeper's zookeeper.digest.enabled=false): nothing is
	// then checked against it. Entries that carry one are still checked.
	NoDigest bool
	// Logger receives the node's, raft's and Pebble's logs.
	Logger *zap.Logger
	// OnSessionClosed is called on the apply goroutine when a session is
	// closed or expires, so the server can drop its connection. It must
	// not block.
	OnSessionClosed func(id int64)

	// Transport carries raft traffic between members; nil runs a
	// standalone member on an in-memory transport of its own.
	Transport raft.Transport
	// Servers is the membership every member bootstraps with when it has
	// no raft state yet (observers are raft non-voters). Empty means this
	// member alone, as a voter.
	Servers []raft.Server
	// HeartbeatTimeout, ElectionTimeout and LeaderLeaseTimeout are raft's
	// (see raft.Config); zero keeps the standalone values of 50ms, which
	// let a one-voter cluster elect itself at once. quorum derives them
	// from tickTime and syncLimit for ensembles.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is how often the leader sends followers an append
	// (empty if need be) carrying its commit index: followers apply, and
	// so answer their clients, that much after the leader commits, unless
	// a commit notice tells them sooner (Config.OnCommitted). Zero means
	// 5ms here; quorum uses 10ms.
	CommitTimeout time.Duration
	// ConfigData is what /zookeeper/config must hold (ZooKeeper's
	// membership text ending in version=…); a newly elected leader whose
	// tree holds something else proposes it. Nil leaves the node alone, as
	// standalone ZooKeeper does.
	ConfigData []byte
	// ConfigAt, when set, renders ConfigData with another version: the
	// leader that fills an empty /zookeeper/config then proposes
	// ConfigAt(term<<32), the zxid its term starts at, as ZooKeeper 3.8's
	// first leader versions a static configuration with its epoch's
	// first zxid when reconfig is enabled (ZOOKEEPER-1783).
	ConfigAt func(version int64) []byte
	// Reconfig computes the new /zookeeper/config data of a reconfig
	// request (op 16) from the current data, with the entry's zxid as the
	// version. It runs on the apply goroutine of every member and must be
	// deterministic. authorized reports whether the request's client may
	// write /zookeeper/config; Reconfig calls it where ZooKeeper checks
	// that ACL (after the arguments are parsed) and answers NoAuth when it
	// is false. Nil answers reconfig with Unimplemented, as standalone
	// ZooKeeper does.
	Reconfig func(cur []byte, req *jute.ReconfigRequest, zxid int64, authorized func() bool) ([]byte, error)
	// OnConfigChanged is called on the apply goroutine whenever
	// /zookeeper/config changes through the log. It must not block.
	OnConfigChanged func(data []byte)
	// Observer receives the node's events for monitoring; its zero value
	// observes nothing.
	Observer Observer
	// clock is the time of session expiry (the tracker's deadlines and
	// the leader's tick gaps); nil means the real clock. Tests move it.
	clock session.Clock
	// SyncStallLimit is how long this member's raft log write may run
	// while it leads before it hands leadership to another voter
	// (handoff.go). Zero derives it from TickTime (one tick, within 500
	// ms..1 s); negative never hands off.
	SyncStallLimit time.Duration
	// HandoffTargets, when set, lists the voters (raft ids) a leader whose
	// disk stalls may hand leadership to, best first: those in touch and
	// up to date. quorum fills it from the followers' progress reports.
	// Unset, raft picks the follower its replication has furthest along.
	// It must not block.
	HandoffTargets func() []raft.ServerID
	// Reroute, when set, takes the writes of this member's own clients
	// that waited here, never proposed, while it handed leadership away
	// because of a slow disk (handoff.go), in order, each with its seq and
	// the Future Submit returned; then every write Submit gets until this
	// member leads again. Its caller must get them to the new leader as
	// this member's requests (origin BootID, seq), as quorum's forwarding
	// does; their Futures complete when they apply here. Unset, such
	// writes fail with ErrNotLeader. Called with the node's submit lock
	// held: it must not block for long, nor call back into the node.
	Reroute func(seq uint64, f *Future, r *Request)
	// MaxInflightBatches is how many entries of packed client requests
	// (batch.go) this member keeps in flight, proposed but not yet applied
	// here; requests arriving meanwhile wait and go as one entry. Zero
	// means DefaultMaxInflightBatches standalone and
	// DefaultEnsembleMaxInflightBatches in an ensemble.
	MaxInflightBatches int
	// OnCommitted, when set, is how the leader tells its followers at
	// once that an entry it proposed committed (commitnotice.go): it is
	// called, and must not block, when a batch of client requests
	// commits with nothing proposed behind it, with the entry's term and
	// index; a follower passes them to LeaderCommitted. Unset, the leader
	// appends a raft barrier instead after its followers' requests
	// commit (one more fsync on every member).
	OnCommitted func(term, index uint64)

	// beforeSync is wal.Options.BeforeSync: tests stall the log's
	// fdatasyncs with it.
	beforeSync func(path string)
	// raftLog keeps a standalone member's writes going through raft
	// instead of its direct log (solo.go): tests write data directories
	// both ways with it.
	raftLog bool
	// takeoverErr, when set, fails a standalone member's takeover as if
	// raft's barrier had returned it: tests of the fallback to raft.
	takeoverErr error
}

// DefaultConfig returns a standalone configuration with ZooKeeper's
// defaults; the caller sets Dir.
func DefaultConfig() Config {
	return Config{
		MyID:                   1,
		TickTime:               2 * time.Second,
		Tree:                   datatree.DefaultConfig(),
		ContainerCheckInterval: time.Minute,
		ContainerMaxPerMinute:  10000,
		SnapshotThreshold:      100000,
		SnapshotInterval:       30 * time.Second,
		SnapshotRetain:         3,
		Logger:                 zap.NewNop(),
	}
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("zab: config: Dir is empty")
	case c.MyID < 0 || c.MyID > 254:
		return fmt.Errorf("zab: config: MyID %d out of range 0..254", c.MyID)
	case c.TickTime <= 0:
		return fmt.Errorf("zab: config: TickTime %v must be positive", c.TickTime)
	case c.ContainerCheckInterval <= 0:
		return fmt.Errorf("zab: config: ContainerCheckInterval %v must be positive", c.ContainerCheckInterval)
	case c.LockDelayMs < 0:
		return fmt.Errorf("zab: config: LockDelayMs %d must not be negative", c.LockDelayMs)
	case c.LockDelayMs > 0 && c.LockName == nil:
		return errors.New("zab: config: LockDelayMs is set but LockName is nil")
	case c.MaxInflightBatches < 0:
		return fmt.Errorf("zab: config: MaxInflightBatches %d must not be negative", c.MaxInflightBatches)
	case c.SnapshotRetain < 1:
		return fmt.Errorf("zab: config: SnapshotRetain %d must be at least 1", c.SnapshotRetain)
	case c.Logger == nil:
		return errors.New("zab: config: Logger is nil")
	}
	return nil
}

// Node is one zkd member's replicated state: raft over its stores, the FSM
// holding the datatree and session table, and (while leader) session
// expiry and the container/TTL sweep. The server reads the tree directly
// and hands writes to Submit.
type Node struct {
	cfg   Config
	log   *zap.Logger
	store *store.Store
	wal   *wal.Log // raft's log; store keeps the stable store and snapshots
	logs  *logCache
	raft  *raft.Raft
	// transport and addr are raft's transport and this member's address
	// on it (CampaignNow sends itself a TimeoutNow through them).
	transport raft.Transport
	addr      raft.ServerAddress
	// inject hands raft RPCs of this member's making (commit notices);
	// nil without Config.OnCommitted.
	inject  rpcInjector
	notices noticeState
	// deferWrites: as leader, this member's log appends do not wait for
	// their fdatasync (deferNow).
	deferWrites bool
	// commitTimeout is raft's CommitTimeout: the longest a follower waits
	// to hear of a commit without a poke (batch.go).
	commitTimeout time.Duration
	// electionTimeout is raft's ElectionTimeout (handoff.go).
	electionTimeout time.Duration
	// heartbeatTimeout is raft's HeartbeatTimeout (commitnotice.go).
	heartbeatTimeout time.Duration
	// raftReady is raft once NewRaft returned, for the apply goroutine,
	// which may run before n.raft is set (divergence reports).
	raftReady atomic.Pointer[raft.Raft]
	// lastMark is when this member last proposed an entry carrying its
	// tree digest (unix ns), for the idle check (digest.go).
	lastMark atomic.Int64
	fsm      *fsm

	// bootID tells this process's entries from those of earlier runs and
	// other members, so that only its own pending futures are completed.
	bootID uint64
	// opened is when Open started, the start of the first election.
	opened time.Time
	// leading mirrors raft's leadership for the observer (Observer).
	leading atomic.Bool
	// holding mirrors batch.holding for HoldsWrites, which reads it
	// without the submit lock.
	holding atomic.Bool
	// handedOffAt is when this member last began handing leadership away
	// because its disk was slow (unix ns; 0: never), for HandedOffAt.
	handedOffAt atomic.Int64
	// seq numbers this member's requests; pending maps them to futures
	// until their entry applies (requests forwarded to the leader
	// included: the leader proposes them with this member's bootID).
	seq     atomic.Uint64
	pending pendingFutures
	// standalone is true when this member is the whole cluster.
	standalone bool
	// solo is the standalone direct log (solo.go); snaps and trailingLogs
	// are what its snapshots need of raft's set-up.
	solo         soloState
	snaps        raft.SnapshotStore
	trailingLogs uint64
	// recovery is what Open found on disk; set once in Open.
	recovery Recovery
	// applyq feeds completeLoop the raft futures in submit order.
	applyq chan pendingApply
	// completeDone is closed when completeLoop returns. Close waits for
	// it apart from wg, and only for a while: see Close.
	completeDone chan struct{}

	// submitMu keeps raft.Apply calls in Submit order and guards batch.
	submitMu sync.Mutex
	// barriers issues raft barriers for barrier's callers, shared.
	barriers *coalesce.Calls[struct{}]
	// batch holds the requests waiting to be packed and the batches in
	// flight (batch.go); maxInflight bounds those; proposeWake wakes
	// proposeLoop when a batch lands with requests waiting.
	batch       batchState
	maxInflight int
	proposeWake chan struct{}
	// snapDue is signalled by the FSM when SnapshotThreshold writes
	// applied since the last snapshot (snapshotLoop takes one).
	snapDue chan struct{}

	tracker *session.Tracker
	// clock is cfg.clock, or the real clock.
	clock session.Clock
	// nextSession is the next session id this member hands out while
	// leader; guarded by submitMu.
	nextSession int64

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Open starts a node on cfg.Dir, restoring the latest snapshot: a
// standalone member (a one-voter raft cluster on an in-memory transport)
// when cfg.Transport is nil, or one member of an ensemble otherwise. A
// member without raft state bootstraps with cfg.Servers; every member of
// an ensemble bootstraps with the same list, so they agree. The log tail
// applies once a leader is elected. Call WaitReady before serving clients.
func Open(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.clock == nil {
		cfg.clock = realClock{}
	}
	n := &Node{
		cfg:     cfg,
		log:     cfg.Logger,
		fsm:     newFSM(cfg.Tree, cfg.Logger),
		clock:   cfg.clock,
		tracker: session.NewTracker(cfg.TickTime.Milliseconds(), cfg.clock),
		stop:    make(chan struct{}),
		applyq:  make(chan pendingApply, 8192),
		bootID:  newBootID(),
		opened:  time.Now(),

		proposeWake: make(chan struct{}, 1),
		snapDue:     make(chan struct{}, 1),
	}
	st, err := store.Open(store.Options{Dir: cfg.Dir, NoSync: cfg.NoSync, Logger: cfg.Logger.Named("pebble"), OnDiskFailure: cfg.OnDiskFailure})
	if err != nil {
		return nil, fmt.Errorf("zab: open store in %s: %w", cfg.Dir, err)
	}
	wl, err := openLog(cfg, st, n.deferNow, n.noteAppended, cfg.Observer.WALSync)
	if err != nil {
		st.Close()
		return nil, err
	}
	logs := newLogCache(wl)
	closeStores := func() {
		wl.Close()
		st.Close()
	}
	n.store, n.wal, n.logs = st, wl, logs
	n.batch.inflight = make(map[uint64]bool)
	n.batch.flushed = sync.NewCond(&n.submitMu)
	n.barriers = coalesce.New(func() (struct{}, error) { return struct{}{}, n.barrierOnce(time.Minute) })
	n.nextSession = session.InitialID(cfg.MyID, time.Now().UnixMilli())
	n.fsm.onSessionOpen = func(id int64, timeout int32) { n.tracker.Add(id, timeout) }
	n.fsm.onApplied = n.applied
	n.fsm.reconfig = cfg.Reconfig
	n.fsm.lockName = cfg.LockName
	n.fsm.onConfigChanged = cfg.OnConfigChanged
	n.fsm.leading = &n.leading
	n.fsm.snapEvery = cfg.SnapshotThreshold
	n.fsm.onSnapDue = func() {
		select {
		case n.snapDue <- struct{}{}:
		default:
		}
	}
	n.fsm.onBatch = func(origin, id, index, term uint64) {
		if origin == n.bootID {
			n.batchLanded(id, true, index, term)
		}
	}
	n.fsm.onSessionClosed = func(id int64) {
		n.tracker.Remove(id)
		if cfg.OnSessionClosed != nil {
			cfg.OnSessionClosed(id)
		}
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(fmt.Sprint(cfg.MyID))
	rc.Logger = store.NewHCLogger(cfg.Logger.Named("raft"))
	if cfg.Transport == nil && len(cfg.Servers) <= 1 {
		rc.Logger = store.NewQuietHCLogger(cfg.Logger.Named("raft"), standaloneElection...)
	}
	// One voter: it may elect itself quickly.
	rc.HeartbeatTimeout = 50 * time.Millisecond
	rc.ElectionTimeout = 50 * time.Millisecond
	rc.LeaderLeaseTimeout = 50 * time.Millisecond
	if cfg.HeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	}
	if cfg.ElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.ElectionTimeout
	}
	if cfg.LeaderLeaseTimeout > 0 {
		rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	}
	rc.CommitTimeout = 5 * time.Millisecond
	if cfg.CommitTimeout > 0 {
		rc.CommitTimeout = cfg.CommitTimeout
	}
	rc.BatchApplyCh = true
	n.commitTimeout = rc.CommitTimeout
	n.electionTimeout = rc.ElectionTimeout
	n.heartbeatTimeout = rc.HeartbeatTimeout
	// Client writes are packed (batch.go), so few entries wait at once;
	// raft allocates a slice of this many pointers for every commit.
	rc.MaxAppendEntries = maxAppendEntries
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = 10240
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	rc.NoSnapshotRestoreOnStart = false
	// A member removed by reconfig keeps running (as ZooKeeper's does), so
	// that it can be added back.
	rc.ShutdownOnRemove = false

	var transport raft.Transport
	var addr raft.ServerAddress
	if cfg.Transport == nil {
		addr, transport = raft.NewInmemTransport(raft.ServerAddress(fmt.Sprintf("zkd-%d", cfg.MyID)))
	} else {
		transport, addr = cfg.Transport, cfg.Transport.LocalAddr()
		if cfg.OnCommitted != nil {
			if w, ok := wrapTransport(transport, n.wal.Durable); ok {
				transport, n.inject = w, w
				logs.afterStore = n.noticeStored
				// A leader writes its log while the followers write
				// theirs (wal's deferred.go): nothing applies here, and
				// no follower hears of a commit (the transport's cap,
				// commit notices sent after apply), before it is on
				// this member's disk too.
				n.deferWrites = true
				n.fsm.waitDurable = n.wal.WaitDurable
			}
		}
	}
	n.transport, n.addr = transport, addr
	servers := cfg.Servers
	if len(servers) == 0 {
		servers = []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: addr}}
	}
	n.standalone = len(servers) == 1
	n.maxInflight = cfg.MaxInflightBatches
	if n.maxInflight == 0 {
		n.maxInflight = DefaultEnsembleMaxInflightBatches
		if n.standalone {
			n.maxInflight = DefaultMaxInflightBatches
		}
	}
	n.fsm.observer = cfg.Observer
	if cfg.OnDivergence != nil {
		n.fsm.onDivergence = func(d Divergence) {
			if r := n.raftReady.Load(); r != nil {
				_, id := r.LeaderWithID()
				d.LeaderID = string(id)
			}
			cfg.OnDivergence(d)
		}
	}
	if n.standalone {
		// Standalone ZooKeeper makes no proposals: it counts no commits.
		n.fsm.observer.Committed = nil
	}
	snaps := st.SnapshotStore(cfg.SnapshotRetain)
	n.snaps, n.trailingLogs = snaps, rc.TrailingLogs
	has, err := raft.HasExistingState(logs, st, snaps)
	if err != nil {
		closeStores()
		return nil, fmt.Errorf("zab: inspect state in %s: %w", cfg.Dir, err)
	}
	_, rebuildErr := os.Stat(filepath.Join(cfg.Dir, RebuildMarker))
	switch {
	case !has && rebuildErr == nil && !n.standalone:
		cfg.Logger.Info("data directory emptied by zkd rebuild: waiting for the leader to send the state by raft; this member neither votes nor stands for election until it has caught up",
			zap.String("dir", cfg.Dir))
	case !has && cfg.NoBootstrap && !n.standalone:
		cfg.Logger.Info("empty data directory and zkd.bootstrap=false: waiting for a member with state to send it by raft; this member starts no election until then",
			zap.String("dir", cfg.Dir))
	case !has:
		conf := raft.Configuration{Servers: servers}
		if err := raft.BootstrapCluster(rc, logs, st, snaps, transport, conf); err != nil {
			closeStores()
			return nil, fmt.Errorf("zab: bootstrap in %s: %w", cfg.Dir, err)
		}
	}
	lastAtOpen, err := logs.LastIndex()
	if err != nil {
		closeStores()
		return nil, fmt.Errorf("zab: read the log in %s: %w", cfg.Dir, err)
	}
	r, err := raft.NewRaft(rc, n.fsm, logs, st, snaps, transport)
	if cerr := st.Corruption(); cerr != nil {
		// Raft read corrupt data at start: its term or vote, or the newest
		// snapshot (raft would then go on from an older one, or none).
		// Refuse rather than serve a tree this member cannot vouch for.
		if err == nil {
			_ = r.Shutdown().Error()
		}
		closeStores()
		return nil, fmt.Errorf("zab: start raft in %s: %w", cfg.Dir, cerr)
	}
	if err != nil {
		closeStores()
		return nil, fmt.Errorf("zab: start raft in %s: %w", cfg.Dir, err)
	}
	n.raft = r
	n.raftReady.Store(r)
	n.fsm.started.Store(true)
	if !n.standalone {
		n.observeElections()
	}
	n.observeLoad(logs, lastAtOpen)
	n.recovery = Recovery{Fresh: !has, SnapshotZxid: n.fsm.snapZxid.Load()}
	if n.recovery.SnapshotZxid >= 0 {
		n.recovery.SnapshotIndex, _ = strconv.ParseUint(r.Stats()["last_snapshot_index"], 10, 64)
	}
	if last := r.LastIndex(); last > n.recovery.SnapshotIndex {
		n.recovery.LogEntries = last - n.recovery.SnapshotIndex
	}
	n.wg.Add(3)
	n.completeDone = make(chan struct{})
	go n.leaderLoop()
	go n.completeLoop()
	go n.proposeLoop()
	go n.snapshotLoop()
	if limit := stallLimit(cfg); limit > 0 {
		n.wg.Add(1)
		go n.diskWatch(limit)
	}
	if n.standalone && !cfg.raftLog {
		n.solo.wake = make(chan struct{}, 1)
		n.solo.ready = make(chan struct{})
		n.solo.replies = make(chan *Later, 64)
		n.solo.repliesDone = make(chan struct{})
		n.wg.Add(2)
		go n.takeOver()
		go n.soloLoop()
		go n.soloReplier()
	}
	return n, nil
}

// standaloneElection lists the messages of hashicorp/raft's election that
// a standalone member logs at Debug (it elects itself on every start).
var standaloneElection = []string{
	"initial configuration",
	"entering follower state",
	"heartbeat timeout reached, starting election",
	"entering candidate state",
	"pre-vote successful, starting election",
	"election won",
	"entering leader state",
}

// Recovery describes how a node's state was rebuilt at Open, for the
// readiness log line: the snapshot restored (SnapshotZxid -1 and index 0
// for none; its raft index otherwise) and the raft log entries after it
// (client writes, session entries and raft's own) that raft replays.
type Recovery struct {
	Fresh         bool // no raft state on disk: bootstrapped anew
	SnapshotZxid  int64
	SnapshotIndex uint64
	LogEntries    uint64
}

// Recovery returns what Open found on disk.
func (n *Node) Recovery() Recovery { return n.recovery }

// WaitReady blocks until this node leads and has applied every entry of
// its log, so reads see everything acknowledged before a restart. In an
// ensemble it blocks until some member leads and this one has applied
// what that leader had committed.
func (n *Node) WaitReady(ctx context.Context) error {
	if !n.standalone {
		for {
			if _, id := n.raft.LeaderWithID(); id != "" {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("zab: waiting for a leader: %w", ctx.Err())
			case <-n.stop:
				return ErrStopped
			case <-time.After(10 * time.Millisecond):
			}
		}
		if n.IsLeader() {
			return n.barrier(ctx)
		}
		// Raft's applied index counts no-op and configuration entries the
		// FSM never sees, so wait on raft's own figure here; but raft
		// counts an entry applied once it is handed to the FSM, which may
		// then still hold most of a log replay at start (a follower that
		// recovered 1M lock paths after kill -9 was ready at 32k znodes).
		// So wait, too, for the FSM to apply the last command up to it.
		target := n.raft.CommitIndex()
		for n.raft.AppliedIndex() < target {
			select {
			case <-ctx.Done():
				return fmt.Errorf("zab: catching up to index %d: %w", target, ctx.Err())
			case <-n.stop:
				return ErrStopped
			case <-time.After(5 * time.Millisecond):
			}
		}
		if last := lastCommand(n.logs, n.fsm.applied.Load(), target); last > 0 {
			return n.WaitApplied(ctx, last)
		}
		return nil
	}
	for n.raft.State() != raft.Leader {
		select {
		case <-ctx.Done():
			return fmt.Errorf("zab: waiting for leadership: %w", ctx.Err())
		case <-n.stop:
			return ErrStopped
		case <-time.After(10 * time.Millisecond):
		}
	}
	if n.solo.ready != nil {
		// The direct log takes over once raft applied its log.
		select {
		case <-n.solo.ready:
		case <-ctx.Done():
			return fmt.Errorf("zab: waiting for the direct log: %w", ctx.Err())
		case <-n.stop:
			return ErrStopped
		}
	}
	return n.barrier(ctx)
}

// barrier returns once a raft barrier entry placed after every write this
// leader had taken when it was called has applied, so a sync answers for
// every write received before it, as ZooKeeper's does.
//
// Concurrent callers share barriers (coalesce.Calls): one at a time, each
// covering every caller that arrived before it was issued. A connection
// storm's reattach syncs are thousands at once; each put into raft's log
// on its own under submitMu, they filled raft's FSM channel while the FSM
// waited for submitMu in batchLanded, and the leader deadlocked (100,000
// sessions on 3 voters + 3 observers).
func (n *Node) barrier(ctx context.Context) error {
	_, err := n.barriers.Do(ctx)
	if ctx.Err() != nil && err == ctx.Err() {
		return fmt.Errorf("zab: barrier: %w", err)
	}
	return err
}

// unansweredGrace is how long Close waits for completeLoop once raft has
// stopped; it is only reached when raft left a future unanswered.
const unansweredGrace = 2 * time.Second

// awaitRaft waits for f's outcome, or gives up with raft.ErrRaftShutdown
// once the node stops. hashicorp/raft never answers a future that is still
// in its apply queue when it shuts down (BatchApplyCh buffers that queue),
// so a goroutine that Close waits for must not wait on f.Error alone. A
// member hung at shutdown that way: SIGTERM arrived as it won an election,
// and the new leader's barriers (ensureConfig, ensureFencingKey) were still
// queued when raft stopped. The goroutine left waiting on such a future
// ends with the process.
func (n *Node) awaitRaft(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-n.stop:
		return raft.ErrRaftShutdown
	}
}

// barrierOnce puts one barrier into raft's log after every request queued
// so far and waits for it to apply.
func (n *Node) barrierOnce(timeout time.Duration) error {
	// The writes this leader has taken but not yet proposed (waiting in
	// the batch queue for a batch in flight to land) enter the log
	// first: a client that lost its connection during a leader change,
	// while its create waited here, resumed elsewhere and synced must
	// see the create, or it makes it again (two lock nodes of one
	// session). The barrier waits for the pacing to propose them rather
	// than proposing them itself, which would put more entries in
	// raft's apply path than the pacing allows (see batchLanded).
	n.submitMu.Lock()
	target := n.batch.queuedTotal
	for n.batch.proposedTotal < target && !n.batch.closed {
		n.batch.flushed.Wait()
	}
	if n.solo.active {
		err := n.soloBarrierLocked()
		n.submitMu.Unlock()
		return err
	}
	if n.batch.closed {
		n.submitMu.Unlock()
		return ErrStopped
	}
	f := n.raft.Barrier(timeout) // only queued: in log order with the batches
	n.submitMu.Unlock()
	if err := n.awaitRaft(f); err != nil {
		if e := raftErr(err); errors.Is(e, ErrNotLeader) || errors.Is(e, ErrStopped) {
			return e
		}
		return fmt.Errorf("zab: barrier: %w", err)
	}
	return nil
}

// Tree returns the current datatree. Reads may use it directly.
func (n *Node) Tree() *datatree.Tree { return n.fsm.tree.Load() }

// LastZxid returns the zxid of the last entry applied on this member.
func (n *Node) LastZxid() int64 { return n.Tree().LastZxid() }

// SessionTimeout reports whether id is a live session and its timeout.
func (n *Node) SessionTimeout(id int64) (int32, bool) { return n.fsm.sessionTimeout(id) }

// Touch records that session id is alive (a packet arrived for it). It
// returns false if the session is unknown.
func (n *Node) Touch(id int64) bool { return n.tracker.Touch(id) }

// Sync returns once this member has applied everything committed before
// the call, after confirming it still leads.
func (n *Node) Sync(ctx context.Context) error { return n.barrier(ctx) }

// Mode names this member's role for srvr/stat/mntr: "standalone" for a
// one-member cluster, otherwise "leader", "follower" or "observer" (a raft
// non-voter).
func (n *Node) Mode() string {
	if n.standalone {
		return "standalone"
	}
	if n.raft.State() == raft.Leader {
		return "leader"
	}
	if fut := n.raft.GetConfiguration(); fut.Error() == nil {
		for _, s := range fut.Configuration().Servers {
			if s.ID == raft.ServerID(fmt.Sprint(n.cfg.MyID)) && s.Suffrage == raft.Nonvoter {
				return "observer"
			}
		}
	}
	return "follower"
}

// Standalone reports whether this member is the whole cluster.
func (n *Node) Standalone() bool { return n.standalone }

// IsLeader reports whether this member is the raft leader now.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// HoldsWrites reports whether this member, leading, is handing leadership
// away because its disk is slow and holds the writes it gets meanwhile
// (handoff.go). Its clients' writes must then go to Submit even once it no
// longer leads: they queue behind the held ones, and go with them to
// Config.Reroute, so one connection's writes keep their order.
func (n *Node) HoldsWrites() bool { return n.holding.Load() }

// HandedOffAt returns when this member last began handing leadership away
// because its disk was slow (handoff.go); the zero time if it never did.
// A deposed leader whose disk is slow may take seconds to hear from its
// successor (raft's main loop persists the new term first, on that
// disk); quorum keeps it serving meanwhile, as it knows a healthy member
// is taking over.
func (n *Node) HandedOffAt() time.Time {
	if ns := n.handedOffAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Leader returns the id of the member this one believes leads ("" when
// none is known).
func (n *Node) Leader() raft.ServerID {
	_, id := n.raft.LeaderWithID()
	return id
}

// IsVoter reports whether this member votes in the raft configuration
// it knows (false for an observer, and for a member not in it).
func (n *Node) IsVoter() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	self := raft.ServerID(fmt.Sprint(n.cfg.MyID))
	for _, s := range f.Configuration().Servers {
		if s.ID == self {
			return s.Suffrage == raft.Voter
		}
	}
	return false
}

// CampaignNow makes this member a candidate at once, as the target of a
// leadership transfer becomes one: it sends itself raft's TimeoutNow
// through the transport, so its vote requests carry the transfer flag and
// the other voters grant them despite still knowing the old leader (if
// this member's log is as up to date as theirs, as raft always requires).
// It is for a follower that knows its leader's process is gone (quorum's
// leader watch), which would otherwise wait raft's heartbeat timeout. An
// election started early costs a term, never safety.
func (n *Node) CampaignNow() error {
	if n.standalone {
		return errors.New("zab: campaign: a standalone member leads already")
	}
	self := fmt.Sprint(n.cfg.MyID)
	req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(self), Addr: []byte(n.addr)}}
	var resp raft.TimeoutNowResponse
	if err := n.transport.TimeoutNow(raft.ServerID(self), n.addr, req, &resp); err != nil {
		return fmt.Errorf("zab: campaign: TimeoutNow to this member (%s): %w", n.addr, err)
	}
	return nil
}

// Raft exposes the raft instance for figures (LastContact, Stats) and
// tests; callers must not apply entries through it.
func (n *Node) Raft() *raft.Raft { return n.raft }

// BootID identifies this process's requests in the log: the leader
// proposes a forwarded request with the origin member's BootID so that the
// origin completes its Future when the entry applies there.
func (n *Node) BootID() uint64 { return n.bootID }

// Register creates a pending Future for a request this member forwards
// to the leader instead of submitting it; the leader proposes it with
// (BootID, seq) and the Future completes when the entry applies here.
// If forwarding fails, the caller must call Fail(seq, err).
func (n *Node) Register() (seq uint64, f *Future) {
	f = newFuture()
	select {
	case <-n.stop:
		f.complete(Result{Err: ErrStopped})
		return 0, f
	default:
	}
	seq = n.seq.Add(1)
	n.pending.add(seq, f)
	return seq, f
}

// Fail completes the pending request seq with err unless it already
// completed. Safe for concurrent use.
func (n *Node) Fail(seq uint64, err error) { n.fail(seq, err) }

// SubmitFor proposes a request forwarded by the member whose BootID is
// origin, as that member's request seq. It returns at once; the returned
// function blocks until raft committed the entry (nil) or failed to
// (ErrNotLeader, ErrStopped, …). Forwarded requests proposed one after
// another enter the log in that order.
func (n *Node) SubmitFor(origin, seq uint64, r *Request) func() error {
	select {
	case <-n.stop:
		return func() error { return ErrStopped }
	default:
	}
	done := make(chan error, 1)
	n.submitMu.Lock()
	n.enqueueLocked(queued{origin: origin, seq: seq, req: *r, forwarded: done})
	n.submitMu.Unlock()
	return n.forwardedWait(done)
}

// forwardedWait is SubmitFor's wait for a forwarded request's outcome on
// done: nil once it committed, the error otherwise, or ErrStopped once the
// member stops without one (the request was in a batch raft never
// answered; see Close).
func (n *Node) forwardedWait(done <-chan error) func() error {
	return func() error {
		select {
		case err := <-done:
			return err
		case <-n.stop:
		}
		select {
		case err := <-done:
			return err
		default:
			return ErrStopped
		}
	}
}

// AppliedIndex returns the raft index of the last entry applied here.
func (n *Node) AppliedIndex() uint64 { return n.fsm.applied.Load() }

// WaitApplied blocks until this member applied the entry at index (or a
// later one), ctx is done or the node stops.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	for {
		cur, ch := n.fsm.appliedWait()
		if cur >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("zab: waiting for index %d (applied %d): %w", index, cur, ctx.Err())
		case <-n.stop:
			return ErrStopped
		}
	}
}

// SyncIndex is the leader's half of a follower's sync: it confirms
// leadership by committing a barrier, so every entry committed before the
// call has applied here, and returns the index a follower must apply
// through to see them all. It fails with ErrNotLeader off the leader.
func (n *Node) SyncIndex(ctx context.Context) (uint64, error) {
	if !n.IsLeader() {
		return 0, ErrNotLeader
	}
	if err := n.barrier(ctx); err != nil {
		return 0, err
	}
	idx := n.AppliedIndex()
	n.noticeApplied(idx)
	return idx, nil
}

// Stats returns figures of the node for 4lw, admin and metrics.
func (n *Node) Stats() Stats {
	m := logStats(n.store.Metrics(), n.wal.Metrics())
	m.LastWALSyncLatency = n.wal.LastSync()
	rs := n.raft.Stats()
	n.soloStats(rs)
	return Stats{Sessions: n.tracker.Len(), Raft: rs, Store: m, CommitNotices: n.notices.injected.Load()}
}

// Stats are a node's figures.
type Stats struct {
	Sessions int
	Raft     map[string]string
	Store    store.Metrics
	// CommitNotices counts the leader's commit notices this member
	// handed its raft (commitnotice.go).
	CommitNotices uint64
}

// pendingApply pairs a raft future with the batch it carries: this
// member's own requests in it and the outcomes of the forwarded ones.
type pendingApply struct {
	af        raft.ApplyFuture
	batch     uint64
	own       []ownReq
	forwarded []chan error
	at        time.Time // when it was proposed, for Observer.QuorumAcked
	// data is the encoded entry, decoded again only if raft refuses it
	// during a hand-off (requeue); nil standalone, which never hands off.
	data []byte
}

// ownReq is one of this member's own requests in a batch: its seq, and
// the client connection it came from (Request.Origin, which the entry
// does not carry).
type ownReq struct {
	seq, origin uint64
}

// newBootID returns a process-unique id for this run's entries. It is not
// part of the replicated state: the FSM only compares it to decide whether
// to wake a local waiter.
func newBootID() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return uint64(time.Now().UnixNano())
	}
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// Submit hands a client write to the log and returns its Future. It does
// not wait for the write to apply. Requests submitted one after another
// (from one goroutine, or serialised by the caller) enter the log in that
// order. The leader stamps the entry with its clock; for OpCreateSession
// it also assigns the session id.
func (n *Node) Submit(r *Request) *Future {
	f := newFuture()
	select {
	case <-n.stop:
		f.complete(Result{Err: ErrStopped})
		return f
	default:
	}
	seq := n.seq.Add(1)
	n.pending.add(seq, f)
	n.submitMu.Lock()
	n.enqueueLocked(queued{origin: n.bootID, seq: seq, req: *r})
	n.submitMu.Unlock()
	return f
}

// applied runs on the apply goroutine for every request entry: it wakes
// the waiter if the request was submitted by this process.
func (n *Node) applied(origin, seq uint64, res Result) {
	if origin != n.bootID {
		return
	}
	if f := n.pending.take(seq); f != nil {
		f.later = n.solo.later.Load()
		f.complete(res)
		f.later = nil
	}
}

// fail completes a pending request that never applied.
func (n *Node) fail(seq uint64, err error) {
	if f := n.pending.take(seq); f != nil {
		f.complete(Result{Err: err})
	}
}

// completeLoop waits on raft's futures in submit order and fails the
// requests raft could not commit (lost leadership, shutdown); successful
// ones were already completed by the FSM. It answers the forwarded
// requests either way, and ends the batch's flight if the FSM did not.
func (n *Node) completeLoop() {
	defer close(n.completeDone)
	for {
		select {
		case p := <-n.applyq:
			err := p.af.Error()
			if errors.Is(err, raft.ErrLeadershipTransferInProgress) && n.requeue(p) {
				n.batchLanded(p.batch, false, 0, 0)
				continue
			}
			if err != nil {
				err = raftErr(err)
				for _, o := range p.own {
					n.fail(o.seq, err)
				}
			} else {
				for range len(p.own) + len(p.forwarded) {
					n.noteAcked(p.at)
				}
			}
			for _, ch := range p.forwarded {
				ch <- err
			}
			n.batchLanded(p.batch, false, 0, 0)
		case <-n.stop:
			n.drainApplyq(ErrStopped)
			return
		}
	}
}

// raftErr maps raft's errors onto this package's.
func raftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrStopped
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNotLeader
	}
	return fmt.Errorf("zab: log append failed: %w", err)
}

// leaderLoop runs what only the leader does: on election it restarts every
// session's clock; each tick it expires sessions; each container interval
// it proposes deletes of empty containers and expired TTL nodes.
//
// A leader whose ticks stopped for longer than tickStallLimit (the process
// was stopped, SIGSTOP or a frozen VM, or starved) restarts every
// session's clock instead of expiring: it could not hear from the
// sessions meanwhile (the touches sent to it wait unread in its sockets),
// so their silence is its own. Otherwise a leader continued after a pause
// longer than the session timeout would propose every session's expiry at
// once: while it is still leader (the whole ensemble was stopped) that
// commits, and a deposed one's proposal fails but its log claims the
// sessions expired.
func (n *Node) leaderLoop() {
	defer n.wg.Done()
	tick := time.NewTicker(n.cfg.TickTime)
	defer tick.Stop()
	sweep := time.NewTicker(n.cfg.ContainerCheckInterval)
	defer sweep.Stop()
	leading := false
	lastTick := n.clock.Now()
	stall := tickStallLimit(n.cfg.TickTime)
	for {
		select {
		case <-n.stop:
			return
		case l := <-n.raft.LeaderCh():
			leading = l
			n.leading.Store(l)
			if l {
				n.submitMu.Lock()
				n.batch.rerouting = false
				n.submitMu.Unlock()
			}
			if n.cfg.Observer.Leading != nil {
				n.cfg.Observer.Leading(l)
			}
			if l {
				ids, timeouts := n.fsm.sessionList()
				for i, id := range ids {
					n.tracker.Add(id, timeouts[i])
				}
				n.log.Info("leading: session clocks restarted", zap.Int("sessions", len(ids)))
				n.lastMark.Store(time.Now().UnixNano()) // the idle digest check counts from here
				n.ensureConfig()
				n.ensureFencingKey()
			}
		case <-tick.C:
			now := n.clock.Now()
			gap := now.Sub(lastTick)
			lastTick = now
			if !leading {
				continue
			}
			if gap > stall {
				n.tracker.ResetAll()
				n.log.Warn("leader did not run for longer than the stall limit (the process was stopped or starved): session clocks restarted, no session expires for the time it missed",
					zap.Duration("gap", gap.Round(time.Millisecond)), zap.Duration("stallLimit", stall), zap.Int("sessions", n.tracker.Len()))
				continue
			}
			if n.holding.Load() || !n.IsLeader() {
				// Handing leadership away (a slow disk), or raft
				// stepped down and this loop has not heard yet: the
				// members' touches go to the new leader from the
				// moment it is elected, so this member's session
				// clocks are going stale (handoff.go).
				continue
			}
			if ids := n.tracker.Expired(); len(ids) > 0 {
				if n.cfg.Observer.SessionsExpired != nil {
					n.cfg.Observer.SessionsExpired(len(ids))
				}
				for _, id := range ids {
					n.log.Info("session expired", zap.String("session", fmt.Sprintf("0x%x", id)))
				}
				n.propose(&entry{kind: kindExpire, sessions: ids, lockDelay: n.cfg.LockDelayMs})
			}
			n.proposeIdleDigest()
			// Tombstones are few and short-lived: looked for every
			// tick, so a lock delay overruns by at most a tick.
			if paths := n.Tree().DueTombstones(time.Now().UnixMilli()); len(paths) > 0 {
				n.propose(&entry{kind: kindDeleteTombstones, paths: paths})
			}
		case <-sweep.C:
			if !leading {
				continue
			}
			max := int(int64(n.cfg.ContainerMaxPerMinute) * int64(n.cfg.ContainerCheckInterval) / int64(time.Minute))
			if max < 1 {
				max = 1
			}
			now := time.Now().UnixMilli()
			if paths := n.Tree().ExpiryCandidates(now, max); len(paths) > 0 {
				n.propose(&entry{kind: kindDeleteExpired, paths: paths})
			}
		}
	}
}

// tickStallLimit is how long a leader's expiry ticks may stop before it
// treats the gap as its own absence (leaderLoop): two ticks, the shortest
// session timeout ZooKeeper negotiates, and at least a second, so that a
// busy machine's late ticks still expire sessions on time.
func tickStallLimit(tick time.Duration) time.Duration { return max(2*tick, time.Second) }

// ensureConfig proposes cfg.ConfigData for /zookeeper/config if the tree
// holds something else once this new leader applied the log.
func (n *Node) ensureConfig() {
	if n.cfg.ConfigData == nil {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if n.barrierOnce(time.Minute) != nil {
			return
		}
		// Only an empty node is filled in: once set, /zookeeper/config
		// changes through reconfig alone.
		cur, _, err := n.Tree().GetData(datatree.ConfigPath, nil, nil)
		if err != nil || len(cur) > 0 || bytes.Equal(cur, n.cfg.ConfigData) {
			return
		}
		data := n.cfg.ConfigData
		if n.cfg.ConfigAt != nil {
			term, err := strconv.ParseUint(n.raft.Stats()["term"], 10, 32)
			if err != nil {
				n.log.Warn("/zookeeper/config not versioned: raft term unknown", zap.Error(err))
			} else {
				data = n.cfg.ConfigAt(int64(term << 32))
			}
		}
		n.propose(&entry{kind: kindSetConfig, config: data})
	}()
}

// ensureFencingKey proposes a fresh fencing key if the ensemble has none
// once this new leader applied the log. The seed is drawn here, on the
// leader, and reaches every member in the entry: apply draws nothing.
func (n *Node) ensureFencingKey() {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if n.barrierOnce(time.Minute) != nil || n.fsm.fence.Load() != nil {
			return
		}
		seed := make([]byte, fencing.SeedLen)
		if _, err := rand.Read(seed); err != nil {
			n.log.Error("no fencing key: random source failed", zap.Error(err))
			return
		}
		n.propose(&entry{kind: kindFencingKey, fenceSeed: seed})
	}()
}

// FencingSigner returns the signer of fencing tokens, or nil while the log
// installed no key yet (a new ensemble's first leader proposes one as soon
// as it leads).
func (n *Node) FencingSigner() *fencing.Signer { return n.fsm.fence.Load() }

// propose appends a leader-generated entry; nobody waits for it.
func (n *Node) propose(e *entry) {
	n.submitMu.Lock()
	if n.solo.active {
		n.soloProposeLocked(e)
		n.submitMu.Unlock()
		return
	}
	e.origin = n.bootID
	e.time = time.Now().UnixMilli()
	data := e.encode()
	af := n.raft.Apply(data, 0)
	n.noteProposed(len(data), 0)
	n.submitMu.Unlock()
	go func() {
		err := af.Error()
		switch {
		case err == nil:
		case errors.Is(err, raft.ErrLeadershipLost):
			// The entry is in this member's log: a later leader whose
			// log holds it commits it (the stall restart in leaderLoop
			// exists because an expiry once did).
			n.log.Warn("leader entry's outcome unknown: leadership lost before it committed, a later leader may still commit it",
				zap.Int("kind", int(e.kind)), zap.Error(err))
		default:
			n.log.Warn("leader entry not committed", zap.Int("kind", int(e.kind)), zap.Error(err))
		}
	}()
}

// Close shuts raft down, fails requests still pending and closes the
// store. It is safe to call more than once.
func (n *Node) Close() error {
	var err error
	n.once.Do(func() {
		// A clean stop snapshots first, so the next start loads the image
		// instead of replaying the log tail (a kill -9 still replays).
		start := time.Now()
		if serr := n.takeSnapshot(); serr == nil {
			n.log.Info("snapshot taken at shutdown", zap.Duration("took", time.Since(start)))
		} else if !errors.Is(serr, raft.ErrNothingNewToSnapshot) {
			n.log.Warn("no snapshot at shutdown", zap.Error(serr))
		}
		err = n.raft.Shutdown().Error()
		close(n.stop)
		n.wg.Wait()
		// completeLoop waits on each batch's future itself (a hand-off
		// per batch to a waiting goroutine, as awaitRaft makes, would
		// sit on every forwarded write's path). Raft has stopped: a
		// future it answered returns at once, so one that keeps
		// completeLoop waiting was never answered and never will be.
		select {
		case <-n.completeDone:
		case <-time.After(unansweredGrace):
			n.log.Warn("raft shut down without answering a batch it had taken; the batch's requests fail as stopped",
				zap.Duration("waited", unansweredGrace))
			n.drainApplyq(ErrStopped)
		}
		if n.solo.replies != nil {
			// The committer has stopped: the replies it deferred are
			// written before the connections' futures fail below.
			close(n.solo.replies)
			<-n.solo.repliesDone
		}
		n.failQueued(ErrStopped)
		for _, f := range n.pending.takeAll() {
			f.complete(Result{Err: ErrStopped})
		}
		if cerr := n.wal.Close(); err == nil {
			err = cerr
		}
		if cerr := n.store.Close(); err == nil {
			err = cerr
		}
	})
	return err
}

// Snapshot takes a snapshot of the FSM now and lets raft trim the log
// behind it (keeping the trailing entries raft is configured to keep).
// Raft also snapshots by itself every SnapshotThreshold entries.
func (n *Node) Snapshot() error {
	if err := n.takeSnapshot(); err != nil {
		return fmt.Errorf("zab: snapshot: %w", err)
	}
	return nil
}

// snapshotLoop takes a snapshot whenever the FSM says SnapshotThreshold
// writes applied since the last one. Raft's own threshold counts log
// entries, and a packed entry holds many writes.
func (n *Node) snapshotLoop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case <-n.snapDue:
		}
		start := time.Now()
		if err := n.takeSnapshot(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			n.log.Warn("snapshot after snapCount writes failed", zap.Error(err))
			continue
		}
		n.log.Info("snapshot taken after snapCount writes", zap.Uint64("snapCount", n.cfg.SnapshotThreshold), zap.Duration("took", time.Since(start)))
	}
}

// LastSnapshotZxid returns the last zxid contained in the newest snapshot
// this member took or restored, or -1 when it has none, for the
// last_snapshot admin command.
func (n *Node) LastSnapshotZxid() int64 { return n.fsm.snapZxid.Load() }
