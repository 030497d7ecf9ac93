package quorum

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
	"github.com/zkd/zkd/zab/coalesce"
	"github.com/zkd/zkd/zab/fencing"
	"github.com/zkd/zkd/zab/store"
)

// Member is one zkd member of an ensemble (or a standalone member): a
// zab.Node plus the forwarding that lets it take writes while another
// member leads. It implements the server's Backend.
type Member struct {
	cfg    Config
	timing Timing
	log    *zap.Logger
	node   *zab.Node

	// trans is the raft transport when this member owns one.
	trans raft.Transport
	// fwd sends this member's writes, touches and syncs to the leader;
	// nil standalone.
	fwd *forwarder
	// syncs shares the leader round trips of concurrent follower syncs
	// (a reconnect storm resumes thousands of sessions at once).
	syncs *coalesce.Calls[uint64]
	// lead serves other members' forwarded requests; nil standalone.
	lead *leaderSide
	// started is set once start set lead and fwd, for the node's
	// goroutines, which run before (HandoffTargets).
	started atomic.Bool
	// caughtUp is set once the member applied what the leader had
	// committed when it joined (syncAtJoin); it serves clients only then.
	caughtUp atomic.Bool

	// dynamic is the membership last applied from /zookeeper/config; nil
	// until then.
	dynamic atomic.Pointer[membership]
	// reconfigMu admits one reconfig at a time (ReconfigInProgress).
	reconfigMu sync.Mutex
	// reconcileCh wakes the loop that makes raft's membership match
	// /zookeeper/config on the leader.
	reconcileCh chan struct{}
	stop        chan struct{}
	wg          sync.WaitGroup

	// teller holds the newest commit for tellLoop to send the followers
	// (commitnotice.go).
	teller commitTeller

	// leaderProbe is set while leaderStreamEnded probes a leader.
	leaderProbe atomic.Bool

	// refusals limits the log lines about refused member connections.
	refusals refusalLog

	// dataDir is the node's data directory, for log lines.
	dataDir string
	// incMu serialises the incarnation records of other members
	// (rejoin.go).
	incMu sync.Mutex
	// nonce tells this run's incarnation announcements from those of
	// earlier runs (rejoin.go); set in Open, before the member answers
	// or announces.
	nonce uint32

	stopOnce sync.Once
}

// Open starts the member: for an ensemble, the raft TCP transport on this
// member's quorum port and the forwarding listener on its election port,
// then the zab node with nc (whose Transport, Servers and raft timeouts it
// fills in). nc.MyID is set to cfg.MyID.
func Open(cfg Config, nc zab.Config) (*Member, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Member{cfg: cfg, timing: cfg.Timing(), log: cfg.Logger}
	nc.MyID = cfg.MyID
	if cfg.Standalone() {
		node, err := zab.Open(nc)
		if err != nil {
			return nil, err
		}
		m.node = node
		return m, nil
	}
	self, _ := cfg.Self()
	tcpAddr, err := net.ResolveTCPAddr("tcp", self.QuorumAddr())
	if err != nil {
		return nil, fmt.Errorf("quorum: quorum address %s: %w", self.QuorumAddr(), err)
	}
	trans, err := m.transport(self.QuorumAddr(), tcpAddr, store.NewHCLogger(cfg.Logger.Named("transport")))
	if err != nil {
		return nil, fmt.Errorf("quorum: raft transport on %s: %w", self.QuorumAddr(), err)
	}
	ln, err := m.listenElection(self.ElectionAddr())
	if err != nil {
		trans.Close()
		return nil, fmt.Errorf("quorum: listen on election port %s: %w", self.ElectionAddr(), err)
	}
	// Fenced from the start: no vote until rejoin knows that this
	// member's data did not go back (rejoin.go).
	fence := newVoteFence(trans)
	m.trans = fence
	m.node, err = m.openNode(nc, fence)
	if err != nil {
		ln.Close()
		fence.Close()
		return nil, err
	}
	m.nonce = newNonce() // before anything answers or announces
	m.start(ln)
	m.wg.Add(1)
	go m.rejoin(fence)
	return m, nil
}

// RaftServers turns the peers into raft's bootstrap membership; a raft
// server's ID is its myid in decimal and its address the quorum address.
func RaftServers(peers []Peer) []raft.Server {
	out := make([]raft.Server, 0, len(peers))
	for _, p := range peers {
		s := raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(fmt.Sprint(p.ID)), Address: raft.ServerAddress(p.QuorumAddr())}
		if p.Observer {
			s.Suffrage = raft.Nonvoter
		}
		out = append(out, s)
	}
	return out
}

func (m *Member) openNode(nc zab.Config, trans raft.Transport) (*zab.Node, error) {
	cfg, t := m.cfg, m.timing
	m.reconcileCh = make(chan struct{}, 1)
	m.stop = make(chan struct{})
	m.dataDir = nc.Dir
	nc.Reconfig = Reconfig
	nc.OnConfigChanged = m.configChanged
	nc.MyID = cfg.MyID
	nc.TickTime = cfg.TickTime
	nc.Transport = trans
	nc.Servers = RaftServers(cfg.Peers)
	nc.HeartbeatTimeout = t.HeartbeatTimeout
	nc.ElectionTimeout = t.ElectionTimeout
	nc.LeaderLeaseTimeout = t.LeaderLeaseTimeout
	if nc.CommitTimeout == 0 {
		nc.CommitTimeout = t.CommitTimeout
	}
	nc.ConfigData = ConfigData(cfg.Peers, 0)
	nc.HandoffTargets = m.handoffTargets
	nc.Reroute = m.reroute
	m.teller.wake = make(chan struct{}, 1)
	nc.OnCommitted = m.committed
	if cfg.ReconfigEnabled {
		nc.ConfigAt = func(version int64) []byte { return ConfigData(cfg.Peers, version) }
	}
	return zab.Open(nc)
}

// OpenWithTransport is Open for in-process ensembles: raft runs over the
// given transport (e.g. raft's in-memory one, whose address must be the
// peer's QuorumAddr) while forwarding still uses the election port.
func OpenWithTransport(cfg Config, nc zab.Config, trans raft.Transport) (*Member, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Standalone() {
		return nil, errors.New("quorum: OpenWithTransport needs an ensemble")
	}
	m := &Member{cfg: cfg, timing: cfg.Timing(), log: cfg.Logger}
	self, _ := cfg.Self()
	ln, err := net.Listen("tcp", self.ElectionAddr())
	if err != nil {
		return nil, fmt.Errorf("quorum: listen on election port %s: %w", self.ElectionAddr(), err)
	}
	m.node, err = m.openNode(nc, trans)
	if err != nil {
		ln.Close()
		return nil, err
	}
	m.start(ln)
	return m, nil
}

func (m *Member) start(ln net.Listener) {
	m.lead = newLeaderSide(m, ln)
	m.fwd = newForwarder(m)
	m.syncs = coalesce.New(func() (uint64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), syncRoundTimeout)
		defer cancel()
		return m.fwd.sync(ctx)
	})
	m.wg.Add(3)
	go m.reconcileLoop()
	go m.tellLoop()
	go m.syncAtJoin()
	m.started.Store(true)
}

// holdSyncAtJoin, set by tests only, runs before a member's syncAtJoin
// starts: it may block until stop closes.
var holdSyncAtJoin func(myID int64, stop <-chan struct{})

// syncAtJoin marks the member caught up (Serving, WaitReady) once it has
// applied everything the leader had committed when it joined, as a
// ZooKeeper follower serves only once it has synced with its leader. A
// member that restarted hears from the leader before it learns the
// leader's commit index (raft's heartbeats do not carry it) and before it
// applies its own log again: serving then would show new clients the tree
// of a moment far back (a follower restarted after kill -9 answered with
// 5 of 100,000 znodes). So it syncs with the leader, as a client's sync
// does, and waits until it applied that far. It tries again until it
// succeeds or the member closes.
func (m *Member) syncAtJoin() {
	defer m.wg.Done()
	if holdSyncAtJoin != nil {
		holdSyncAtJoin(m.cfg.MyID, m.stop)
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), syncRoundTimeout)
		go func() {
			select {
			case <-m.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := m.node.WaitReady(ctx)
		if err == nil {
			err = m.Sync(ctx)
		}
		cancel()
		if err == nil {
			m.caughtUp.Store(true)
			return
		}
		select {
		case <-m.stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// membership is a parsed /zookeeper/config.
type membership struct {
	peers   []Peer
	version int64
}

// peer returns member id's entry: from the applied /zookeeper/config once
// a reconfig changed it (it may have added the member), otherwise from
// this member's own zoo.cfg (which may name the others by addresses of its
// own, such as proxies).
func (m *Member) peer(id int64) (Peer, bool) {
	if d := m.dynamic.Load(); d != nil && d.version != 0 {
		for _, p := range d.peers {
			if p.ID == id {
				return p, true
			}
		}
	}
	return m.cfg.Peer(id)
}

// membership returns the applied /zookeeper/config, reading the tree
// when no change was applied since start (the config came with a
// snapshot); nil if the node is empty.
func (m *Member) membership() *membership {
	if d := m.dynamic.Load(); d != nil {
		return d
	}
	cur, _, err := m.node.Tree().GetData(datatree.ConfigPath, nil, nil)
	if err != nil || len(cur) == 0 {
		return nil
	}
	peers, version, err := ParseConfigData(cur)
	if err != nil || len(peers) == 0 {
		return nil
	}
	d := &membership{peers: peers, version: version}
	m.dynamic.Store(d)
	return d
}

// configChanged runs on the apply goroutine when /zookeeper/config
// changed: it records the membership and wakes the reconcile loop.
func (m *Member) configChanged(data []byte) {
	peers, version, err := ParseConfigData(data)
	if err != nil || len(peers) == 0 {
		m.log.Warn("unusable /zookeeper/config", zap.Error(err))
		return
	}
	m.dynamic.Store(&membership{peers: peers, version: version})
	select {
	case m.reconcileCh <- struct{}{}:
	default:
	}
}

// reconcileLoop makes raft's membership match /zookeeper/config while
// this member leads: after a reconfig commits, and periodically, so a
// change a previous leader did not finish is completed.
func (m *Member) reconcileLoop() {
	defer m.wg.Done()
	t := time.NewTicker(m.timing.TouchInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-m.reconcileCh:
		case <-t.C:
		}
		if m.node.IsLeader() && m.membershipPending() {
			m.reconcile()
		}
	}
}

// reconcile adds, updates and removes raft servers so that raft's
// configuration is the applied /zookeeper/config. The leader removes
// itself last: raft then steps it down.
func (m *Member) reconcile() {
	d := m.membership()
	if d == nil || d.version == 0 {
		// The static configuration of zoo.cfg is what raft bootstrapped
		// with; each member may name the others by its own addresses
		// (through proxies, NAT), so it is left as it is.
		return
	}
	r := m.node.Raft()
	fut := r.GetConfiguration()
	if fut.Error() != nil {
		return
	}
	current := map[raft.ServerID]raft.Server{}
	for _, s := range fut.Configuration().Servers {
		current[s.ID] = s
	}
	timeout := m.timing.TransportTimeout
	want := map[raft.ServerID]bool{}
	for _, s := range RaftServers(d.peers) {
		want[s.ID] = true
		c, ok := current[s.ID]
		if ok && c.Address == s.Address && c.Suffrage == s.Suffrage {
			continue
		}
		var err error
		switch {
		case s.Suffrage == raft.Nonvoter && ok && c.Suffrage == raft.Voter:
			// A participant made an observer: raft's AddNonvoter leaves
			// a voter a voter (it only updates the address), so demote
			// it first.
			err = r.DemoteVoter(s.ID, 0, timeout).Error()
			m.log.Info("raft membership: demoting to non-voter", zap.String("peer", string(s.ID)), zap.Error(err))
			if err != nil {
				return
			}
			if c.Address == s.Address {
				continue
			}
			err = r.AddNonvoter(s.ID, s.Address, 0, timeout).Error()
		case s.Suffrage == raft.Nonvoter:
			err = r.AddNonvoter(s.ID, s.Address, 0, timeout).Error()
		default:
			// AddVoter also promotes a non-voter.
			err = r.AddVoter(s.ID, s.Address, 0, timeout).Error()
		}
		m.log.Info("raft membership: adding", zap.String("peer", string(s.ID)), zap.String("addr", string(s.Address)),
			zap.Bool("voter", s.Suffrage == raft.Voter), zap.Error(err))
		if err != nil {
			return
		}
	}
	self := raft.ServerID(fmt.Sprint(m.cfg.MyID))
	for id := range current {
		if want[id] || id == self {
			continue
		}
		err := r.RemoveServer(id, 0, timeout).Error()
		m.log.Info("raft membership: removing", zap.String("peer", string(id)), zap.Error(err))
		if err != nil {
			return
		}
	}
	if !want[self] {
		// Hand leadership to a member of the new configuration; it then
		// removes this one.
		for _, s := range RaftServers(d.peers) {
			if s.Suffrage != raft.Voter {
				continue
			}
			err := r.LeadershipTransferToServer(s.ID, s.Address).Error()
			m.log.Info("raft membership: this leader left the configuration, handing over",
				zap.String("to", string(s.ID)), zap.Error(err))
			if err == nil {
				return
			}
		}
		m.log.Info("raft membership: removing this leader")
		r.RemoveServer(self, 0, timeout)
	}
}

// membershipPending reports whether raft's membership does not yet match
// the applied /zookeeper/config: an earlier reconfig is still being
// carried out.
func (m *Member) membershipPending() bool {
	d := m.membership()
	if d == nil || d.version == 0 {
		return false
	}
	fut := m.node.Raft().GetConfiguration()
	if fut.Error() != nil {
		return true
	}
	current := map[raft.ServerID]raft.Server{}
	for _, s := range fut.Configuration().Servers {
		current[s.ID] = s
	}
	want := RaftServers(d.peers)
	if len(want) != len(current) {
		return true
	}
	for _, s := range want {
		if c, ok := current[s.ID]; !ok || c != s {
			return true
		}
	}
	return false
}

// leaderReconfig runs a reconfig request on the leader: one at a time,
// refused with ReconfigInProgress if raft's membership still lags an
// earlier one after awaitMembership, only if a majority of the new voters is in touch
// (NewConfigNoQuorum), then proposed like any write so that its checks
// (BadVersion, BadArguments, NoAuth) and its result are decided on apply,
// and finally raft's membership is changed to match. fail reports an
// error to the request's origin.
func (m *Member) leaderReconfig(origin, seq uint64, r *zab.Request, fail func(error)) {
	m.reconfigMu.Lock()
	defer m.reconfigMu.Unlock()
	if err := m.awaitMembership(); err != nil {
		fail(err)
		return
	}
	var req jute.ReconfigRequest
	if err := jute.Decode(r.Body, &req); err == nil {
		cur, _, _ := m.node.Tree().GetData(datatree.ConfigPath, nil, nil)
		if next, err := Reconfig(cur, &req, 0, func() bool { return true }); err == nil {
			peers, _, _ := ParseConfigData(next)
			ids := voters(peers)
			alive := 0
			for _, id := range ids {
				if m.inTouch(id) {
					alive++
				}
			}
			if 2*alive <= len(ids) {
				m.log.Warn("reconfig refused: no synced quorum in the new configuration",
					zap.Int("voters", len(ids)), zap.Int("inTouch", alive))
				fail(jute.CodeNewConfigNoQuorum)
				return
			}
		}
	}
	if err := m.node.SubmitFor(origin, seq, r)(); err != nil {
		fail(zab.ErrNotLeader)
		return
	}
	// Let the apply reach this member, then change raft's membership.
	ctx, cancel := context.WithTimeout(context.Background(), m.timing.TransportTimeout)
	defer cancel()
	if idx, err := m.node.SyncIndex(ctx); err == nil {
		m.node.WaitApplied(ctx, idx)
	}
	m.reconcile()
}

// awaitMembership waits, for at most HoldTimeout, until raft's membership
// matches the applied /zookeeper/config, carrying out the change itself.
// It answers ReconfigInProgress if the membership still lags, and
// zab.ErrNotLeader if this member stopped leading meanwhile (a leader that
// removed itself steps down; the request is then lost to the client as
// any write in flight to a deposed leader, and retried). An earlier
// reconfig's reply reaches its client once the new configuration applied,
// possibly before raft's membership followed (or on a new leader when the
// old one left): ZooKeeper 3.8 accepts a reconfig sent right after
// another's reply, so zkd finishes the earlier change first rather than
// answer ReconfigInProgress.
func (m *Member) awaitMembership() error {
	deadline := time.Now().Add(m.timing.HoldTimeout)
	for m.membershipPending() {
		if !m.node.IsLeader() {
			return zab.ErrNotLeader
		}
		if time.Now().After(deadline) {
			return jute.CodeReconfigInProgress
		}
		m.reconcile()
		if !m.membershipPending() {
			break
		}
		select {
		case <-m.stop:
			return jute.CodeReconfigInProgress
		case <-time.After(m.timing.HeartbeatTimeout):
		}
	}
	return nil
}

// inTouch reports whether member id is this leader, has talked to it on
// the election port within the serving lease, or (a member joining) is
// listening on its election port.
func (m *Member) inTouch(id int64) bool {
	if id == m.cfg.MyID || m.lead.inTouch(id, m.timing.ServingLease) {
		return true
	}
	p, ok := m.peer(id)
	if !ok {
		return false
	}
	c, err := m.dialPeer(p.ElectionAddr(), m.timing.HeartbeatTimeout)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Node returns the member's zab node.
func (m *Member) Node() *zab.Node { return m.node }

// Config returns the member's configuration.
func (m *Member) Config() Config { return m.cfg }

// WaitReady blocks until the member can serve: standalone, until it leads
// and applied its log; in an ensemble, until a leader is known and this
// member applied what that leader had committed.
func (m *Member) WaitReady(ctx context.Context) error {
	if m.fwd == nil {
		return m.node.WaitReady(ctx)
	}
	for !m.caughtUp.Load() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("quorum: catching up with the leader: %w", ctx.Err())
		case <-m.stop:
			return zab.ErrStopped
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// Submit hands a write to the log: directly on the leader (or standalone),
// otherwise forwarded to the leader. The Future completes when the write
// applied on this member, or fails with zab.ErrNotLeader if it could not
// be forwarded or proposed. Writes submitted in order reach the log in
// that order.
func (m *Member) Submit(r *zab.Request) *zab.Future {
	if m.fwd == nil {
		return m.node.Submit(r)
	}
	if m.fwd.lostWrite(r.Origin) {
		// An earlier write of this connection was lost with a leader:
		// this one must not land after it (the connection is closing).
		seq, f := m.node.Register()
		m.node.Fail(seq, zab.ErrNotLeader)
		return f
	}
	if m.node.HoldsWrites() && r.Op != jute.OpReconfig {
		// This leader is handing leadership away (its disk is slow) and
		// holds its clients' writes: this one queues behind them, and
		// goes with them to the new leader if leadership moves (reroute).
		return m.node.Submit(r)
	}
	// A new leader may still hold writes it queued for the old one (the
	// forwarder submits them locally once this member leads), or a stream
	// to the old leader with writes unanswered (the forwarder fails them
	// when it closes that stream): its own writes go the forwarder's way
	// until both are settled, so no connection's writes are reordered by
	// the change.
	if m.node.IsLeader() && !m.fwd.streamOpen.Load() && m.fwd.awaitQueuedWrites(m.timing.HoldTimeout) {
		if r.Op != jute.OpReconfig {
			return m.node.Submit(r)
		}
		seq, f := m.node.Register()
		go m.leaderReconfig(m.node.BootID(), seq, r, func(err error) { m.node.Fail(seq, err) })
		return f
	}
	seq, f := m.node.Register()
	m.fwd.write(seq, f, r)
	return f
}

// reroute is zab.Config.Reroute: a write this member held while handing
// leadership away goes to the new leader through the forwarder, in order
// with the writes its clients send next.
func (m *Member) reroute(seq uint64, f *zab.Future, r *zab.Request) {
	if !m.started.Load() {
		m.node.Fail(seq, zab.ErrNotLeader)
		return
	}
	m.fwd.write(seq, f, r)
}

// Tree returns the applied tree.
func (m *Member) Tree() *datatree.Tree { return m.node.Tree() }

// FencingSigner returns the signer of fencing tokens (zab.Node.FencingSigner).
func (m *Member) FencingSigner() *fencing.Signer { return m.node.FencingSigner() }

// LastZxid returns the zxid of the last entry applied here.
func (m *Member) LastZxid() int64 { return m.node.LastZxid() }

// SessionTimeout reports whether id is a live session and its timeout.
func (m *Member) SessionTimeout(id int64) (int32, bool) { return m.node.SessionTimeout(id) }

// SessionCount returns the number of live sessions (zk_global_sessions).
func (m *Member) SessionCount() int { return m.node.Stats().Sessions }

// Touch records that session id is alive. On the leader it restarts the
// session's clock; on a follower it queues the id for the next batch of
// touches sent to the leader. It returns false for an unknown session.
func (m *Member) Touch(id int64) bool {
	if m.fwd == nil || m.node.IsLeader() {
		return m.node.Touch(id)
	}
	if _, ok := m.node.SessionTimeout(id); !ok {
		return false
	}
	m.fwd.touch(id)
	return true
}

// Sync returns once this member applied every entry committed before the
// call: the leader commits a barrier; a follower asks the leader for its
// applied index (after the leader's barrier) and waits to reach it.
func (m *Member) Sync(ctx context.Context) error {
	if m.fwd == nil || m.node.IsLeader() {
		return m.node.Sync(ctx)
	}
	idx, err := m.syncs.Do(ctx)
	if err != nil {
		return err
	}
	return m.node.WaitApplied(ctx, idx)
}

// ConnectionClosed implements server.OriginCloser: the writes of client
// connection origin this member still holds for a leader fail instead of
// being sent.
func (m *Member) ConnectionClosed(origin uint64) {
	if m.fwd != nil {
		m.fwd.markLost(origin)
	}
}

// SyncReattach implements server.ReattachSyncer: in an ensemble it syncs
// with the leader (whose barrier settles every entry its log holds, the
// previous term's included), so a client resuming its session here sees
// the final outcome of a write it lost with the old leader. Standalone it
// does nothing.
func (m *Member) SyncReattach(ctx context.Context) error {
	if m.fwd == nil {
		return nil
	}
	// A sync fails at once when the leader is lost under it; clients
	// reconnect exactly then, so try again (the next attempt waits for
	// the new leader) until ctx ends rather than refuse the client.
	for {
		err := m.Sync(ctx)
		if err == nil || !errors.Is(err, zab.ErrNotLeader) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Mode names the member's role: standalone, leader, follower or
// observer; "read-only" (as ZooKeeper's srvr says) while it has no quorum
// and readonlymode.enabled lets it serve read-only clients.
func (m *Member) Mode() string {
	if m.fwd != nil && m.cfg.ReadOnlyMode && !m.Serving() {
		return "read-only"
	}
	return m.node.Mode()
}

// Serving reports whether the member may serve clients: always when
// standalone; in an ensemble, once it caught up with the leader it joined
// (syncAtJoin), and then while leading (raft steps a leader down once it cannot reach
// a majority for LeaderLeaseTimeout); otherwise while a leader was heard
// from within syncLimit ticks, so that a short election (when followers
// are briefly candidates) does not drop every client.
func (m *Member) Serving() bool {
	if m.fwd == nil {
		return true
	}
	return m.caughtUp.Load() && m.inEnsembleTouch()
}

// inEnsembleTouch is Serving for a member of an ensemble: it leads, or
// heard from a leader within the serving lease, or handed leadership away
// (its disk being slow) within the serving lease: it was in touch with a
// majority then, and its raft may take a stall of its disk to hear from
// the new leader (it persists the new term first), during which closing
// its clients would only move them for nothing. The forwarder calls it
// directly (it runs before m.fwd is set).
func (m *Member) inEnsembleTouch() bool {
	r := m.node.Raft()
	if r.State() == raft.Leader {
		return true
	}
	if at := m.node.HandedOffAt(); !at.IsZero() && time.Since(at) < m.timing.ServingLease {
		return true
	}
	last := r.LastContact()
	return !last.IsZero() && time.Since(last) < m.timing.ServingLease
}

// ReadOnlyAllowed reports whether a member that is not Serving may still
// serve read-only clients (readonlymode.enabled).
func (m *Member) ReadOnlyAllowed() bool { return m.cfg.ReadOnlyMode }

// SyncedLag is how many entries a member may trail the leader's commit
// index and still count as a synced follower: what a healthy follower
// applies behind the leader under load within one touch interval.
const SyncedLag = 1000

// syncRoundTimeout bounds one sync round trip to the leader that
// concurrent follower syncs share; a caller gives up sooner on its own
// context.
const syncRoundTimeout = 10 * time.Second

// LeaderStats are mntr's leader-only figures.
type LeaderStats struct {
	// Followers counts the other members, voters and observers, that
	// talked to this leader within the serving lease (zk_followers /
	// zk_learners).
	Followers int
	// SyncedFollowers counts the voters among them that are synced: their
	// last report (sent with the touches, every TouchInterval) came within
	// the serving lease and showed them applied to within SyncedLag
	// entries of the leader's commit index (zk_synced_followers). A member
	// still catching up, from a snapshot or a long log, is not synced.
	SyncedFollowers int
	// Observers counts the synced non-voters (zk_synced_observers).
	Observers int
	// PendingSyncs is the number of follower syncs in progress
	// (zk_pending_syncs).
	PendingSyncs int
}

// LeaderStats returns the leader-only figures; ok is false off the
// leader.
func (m *Member) LeaderStats() (LeaderStats, bool) {
	if m.fwd == nil || !m.node.IsLeader() {
		return LeaderStats{}, false
	}
	var s LeaderStats
	fut := m.node.Raft().GetConfiguration()
	if fut.Error() != nil {
		return s, true
	}
	commit := m.node.Raft().CommitIndex()
	floor := uint64(0)
	if commit > SyncedLag {
		floor = commit - SyncedLag
	}
	for _, srv := range fut.Configuration().Servers {
		var id int64
		if _, err := fmt.Sscan(string(srv.ID), &id); err != nil || id == m.cfg.MyID {
			continue
		}
		if !m.lead.inTouch(id, m.timing.ServingLease) {
			continue
		}
		s.Followers++
		if !m.lead.synced(id, m.timing.ServingLease, floor) {
			continue
		}
		if srv.Suffrage == raft.Nonvoter {
			s.Observers++
		} else {
			s.SyncedFollowers++
		}
	}
	s.PendingSyncs = int(m.lead.pendingSyncs.Load())
	return s, true
}

// Close stops forwarding, the node and the transport.
func (m *Member) Close() error {
	var err error
	m.stopOnce.Do(func() {
		if m.fwd != nil {
			m.fwd.close()
		}
		if m.lead != nil {
			m.lead.close()
		}
		if m.stop != nil {
			close(m.stop)
			m.wg.Wait()
		}
		err = m.node.Close()
		if c, ok := m.trans.(interface{ Close() error }); ok && m.trans != nil {
			c.Close()
		}
	})
	return err
}

// WaitZxid blocks until this member applied zxid (true) or ctx is done
// (false). The server uses it so that a client arriving from a member a
// few entries ahead is served once this one catches up instead of being
// refused at once. Standalone it returns false at once: nothing else can
// be ahead.
func (m *Member) WaitZxid(ctx context.Context, zxid int64) bool {
	if m.fwd == nil {
		return m.node.LastZxid() >= zxid
	}
	for m.node.LastZxid() < zxid {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Millisecond):
		}
	}
	return true
}

// ConfigData renders the membership as /zookeeper/config holds it: one
// server.N line per member, then version=<hex> (0 for the static
// configuration of zoo.cfg, as ZooKeeper 3.8 shows it).
func ConfigData(peers []Peer, version int64) []byte {
	var b []byte
	for _, p := range peers {
		b = append(b, p.String()...)
		b = append(b, '\n')
	}
	return fmt.Appendf(b, "version=%x", version)
}
