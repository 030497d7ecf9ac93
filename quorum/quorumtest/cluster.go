// Package quorumtest runs in-process zkd ensembles for tests: raft over
// hashicorp/raft's in-memory transport (so a member can be cut off and
// healed deterministically), forwarding over loopback TCP, Pebble without
// fsync in temporary directories.
package quorumtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/zab"
)

// Cluster is an in-process ensemble.
type Cluster struct {
	t       testing.TB
	cfg     quorum.Config
	dirs    []string
	trans   []*raft.InmemTransport
	members []*quorum.Member
	cut     []bool
	spares  int
	// NodeConfig is applied to every member's zab.Config before it opens.
	NodeConfig func(i int, nc *zab.Config)
}

// Options tune a Cluster.
type Options struct {
	// Members is the ensemble size. Default 3.
	Members int
	// Observers makes the last Observers members raft non-voters.
	Observers int
	// TickTime is the tick. Default 50ms.
	TickTime time.Duration
	// SyncLimit is in ticks. Default 20: raft's heartbeat, election and
	// leader-lease timeouts are a fifth of SyncLimit*TickTime (see
	// quorum.Config.Timing), and at 5 ticks of 50ms those are 50ms, which
	// a -race run on a loaded 2-core CI machine misses often enough for
	// leaders to step down mid-test. 20 ticks give 200ms.
	SyncLimit int
	// Logger receives every member's logs. Default: none.
	Logger *zap.Logger
	// NodeConfig, if set, adjusts each member's zab.Config.
	NodeConfig func(i int, nc *zab.Config)
	// ReadOnlyMode sets readonlymode.enabled on every member.
	ReadOnlyMode bool
	// Spares are extra members, counted in Members, that are neither in
	// the initial configuration nor started: a test starts them with
	// Start (their own configuration lists everyone) and adds them with
	// reconfig.
	Spares int
}

// New starts an ensemble and waits for a leader; it is closed when the
// test ends.
func New(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Members == 0 {
		o.Members = 3
	}
	if o.TickTime == 0 {
		o.TickTime = 50 * time.Millisecond
	}
	if o.SyncLimit == 0 {
		o.SyncLimit = 20
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	cfg := quorum.DefaultConfig()
	cfg.TickTime, cfg.SyncLimit, cfg.InitLimit, cfg.Logger = o.TickTime, o.SyncLimit, 10, o.Logger
	cfg.ReadOnlyMode = o.ReadOnlyMode
	// Below the ephemeral range, so a restarted member finds its ports
	// free (zkproc.FreePorts).
	ports := zkproc.FreePorts(t, 2*o.Members)
	for i := 0; i < o.Members; i++ {
		cfg.Peers = append(cfg.Peers, quorum.Peer{
			ID: int64(i + 1), Host: "127.0.0.1", QuorumPort: ports[2*i], ElectionPort: ports[2*i+1],
			Observer: i >= o.Members-o.Observers,
		})
	}
	c := &Cluster{t: t, cfg: cfg, NodeConfig: o.NodeConfig, spares: o.Spares}
	c.dirs = make([]string, o.Members)
	c.trans = make([]*raft.InmemTransport, o.Members)
	c.members = make([]*quorum.Member, o.Members)
	c.cut = make([]bool, o.Members)
	for i := range c.dirs {
		c.dirs[i] = t.TempDir()
	}
	for i := 0; i < o.Members-o.Spares; i++ {
		c.Start(i)
	}
	t.Cleanup(c.Close)
	c.WaitLeader(10 * time.Second)
	return c
}

// Config returns the ensemble's configuration (MyID 0), spares included.
func (c *Cluster) Config() quorum.Config { return c.cfg }

// Len is the number of members.
func (c *Cluster) Len() int { return len(c.members) }

// Member returns member i (0-based; its myid is i+1), nil while stopped.
func (c *Cluster) Member(i int) *quorum.Member { return c.members[i] }

// Start (re)starts member i on its data directory.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	if c.members[i] != nil {
		c.t.Fatalf("quorumtest: member %d already running", i)
	}
	addr := raft.ServerAddress(c.cfg.Peers[i].QuorumAddr())
	_, tr := raft.NewInmemTransport(addr)
	c.trans[i] = tr
	c.cut[i] = false
	c.connect(i)
	cfg := c.cfg
	cfg.MyID = int64(i + 1)
	if i < len(c.members)-c.spares {
		cfg.Peers = c.cfg.Peers[:len(c.members)-c.spares]
	}
	cfg.Logger = c.cfg.Logger.With(zap.Int("member", i+1))
	nc := zab.DefaultConfig()
	nc.Dir = c.dirs[i]
	nc.NoSync = true
	nc.Logger = cfg.Logger
	if c.NodeConfig != nil {
		c.NodeConfig(i, &nc)
	}
	var m *quorum.Member
	var err error
	for try := 0; try < 50; try++ {
		if m, err = quorum.OpenWithTransport(cfg, nc, tr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond) // the election port may linger
	}
	if err != nil {
		c.t.Fatalf("quorumtest: start member %d: %v", i+1, err)
	}
	c.members[i] = m
}

// connect wires member i's transport to every running, uncut member.
func (c *Cluster) connect(i int) {
	for j, tr := range c.trans {
		if j == i || tr == nil || c.cut[j] {
			continue
		}
		c.trans[i].Connect(tr.LocalAddr(), tr)
		tr.Connect(c.trans[i].LocalAddr(), c.trans[i])
	}
}

// Stop closes member i (as a crash would, minus fsync: its store is
// closed cleanly).
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	m := c.members[i]
	if m == nil {
		return
	}
	c.members[i] = nil
	for j, tr := range c.trans {
		if j != i && tr != nil {
			tr.Disconnect(c.trans[i].LocalAddr())
		}
	}
	c.trans[i].DisconnectAll()
	if err := m.Close(); err != nil {
		c.t.Logf("quorumtest: close member %d: %v", i+1, err)
	}
	c.trans[i] = nil
}

// Cut disconnects member i's raft traffic from every other member.
func (c *Cluster) Cut(i int) {
	c.cut[i] = true
	c.trans[i].DisconnectAll()
	for j, tr := range c.trans {
		if j != i && tr != nil {
			tr.Disconnect(c.trans[i].LocalAddr())
		}
	}
}

// Heal reconnects every cut member.
func (c *Cluster) Heal() {
	for i := range c.cut {
		c.cut[i] = false
	}
	for i, tr := range c.trans {
		if tr != nil {
			c.connect(i)
		}
	}
}

// Leader waits for a running, uncut member that leads and returns its
// index.
func (c *Cluster) WaitLeader(timeout time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for i, m := range c.members {
			if m != nil && !c.cut[i] && m.Node().IsLeader() && m.Serving() {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("quorumtest: no leader within %v", timeout)
	return -1
}

// WaitFor polls cond every few ms until it holds or timeout passes.
func (c *Cluster) WaitFor(what string, timeout time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("quorumtest: %s: not within %v", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitConverged waits until every running member applied the same index
// and has the same tree digest, and returns that digest.
func (c *Cluster) WaitConverged(timeout time.Duration) uint64 {
	c.t.Helper()
	var digest uint64
	c.WaitFor("members converge", timeout, func() bool {
		var idx uint64
		first := true
		for _, m := range c.members {
			if m == nil {
				continue
			}
			d, ix := m.Tree().Digest(), m.Node().AppliedIndex()
			if first {
				digest, idx, first = d, ix, false
				continue
			}
			if d != digest || ix != idx {
				return false
			}
		}
		return true
	})
	return digest
}

// Close stops every member.
func (c *Cluster) Close() {
	for i := range c.members {
		c.Stop(i)
	}
}

// Describe names each member's role, for failure messages.
func (c *Cluster) Describe() string {
	s := ""
	for i, m := range c.members {
		if m == nil {
			s += fmt.Sprintf("%d:stopped ", i+1)
			continue
		}
		s += fmt.Sprintf("%d:%s(serving=%v,applied=%d) ", i+1, m.Mode(), m.Serving(), m.Node().AppliedIndex())
	}
	return s
}

// Ready waits for every running member to be ready.
func (c *Cluster) Ready(timeout time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i, m := range c.members {
		if m != nil {
			if err := m.WaitReady(ctx); err != nil {
				c.t.Fatalf("quorumtest: member %d not ready: %v", i+1, err)
			}
		}
	}
}
