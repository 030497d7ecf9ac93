package zab

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/zkd/zkd/jute"
)

// trio is three nodes of one ensemble on raft's in-memory transport, each
// with a switch that makes every fdatasync of its raft log take stall.
type trio struct {
	nodes   []*Node
	slow    []atomic.Bool
	handoff []atomic.Int64           // LeadershipHandedOff calls per node
	warns   []*observer.ObservedLogs // each node's warnings
}

// openTrio starts three voters with the given stall of a slow disk and
// stall limit, each config then changed by opts (i is the member's index),
// and waits for a leader.
func openTrio(t *testing.T, stall, limit time.Duration, opts ...func(i int, c *Config)) *trio {
	t.Helper()
	tr := &trio{slow: make([]atomic.Bool, 3), handoff: make([]atomic.Int64, 3)}
	var (
		addrs  []raft.ServerAddress
		transp []*raft.InmemTransport
	)
	for i := range 3 {
		a, x := raft.NewInmemTransport(raft.ServerAddress(fmt.Sprintf("m%d", i+1)))
		addrs, transp = append(addrs, a), append(transp, x)
	}
	var servers []raft.Server
	for i := range 3 {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(fmt.Sprint(i + 1)), Address: addrs[i]})
		for j := range 3 {
			if i != j {
				transp[i].Connect(addrs[j], transp[j])
			}
		}
	}
	for i := range 3 {
		cfg := DefaultConfig()
		cfg.Dir = t.TempDir()
		cfg.MyID = int64(i + 1)
		cfg.TickTime = 100 * time.Millisecond
		core, warns := observer.New(zapcore.WarnLevel)
		tr.warns = append(tr.warns, warns)
		cfg.Logger = zaptest.NewLogger(t, zaptest.Level(zapcore.InfoLevel), zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
			return zapcore.NewTee(c, core)
		}))).Named(fmt.Sprint(i + 1))
		cfg.Transport, cfg.Servers = transp[i], servers
		// Generous for a loaded 2-core CI machine under -race.
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = time.Second, time.Second, time.Second
		cfg.SyncStallLimit = limit
		cfg.beforeSync = func(string) {
			if tr.slow[i].Load() {
				time.Sleep(stall) // the slow disk itself
			}
		}
		cfg.Observer.LeadershipHandedOff = func() { tr.handoff[i].Add(1) }
		// As quorum forwards them: to the leader, as this member's.
		cfg.Reroute = func(seq uint64, _ *Future, r *Request) {
			self := tr.nodes[i]
			_, id := self.raft.LeaderWithID()
			var to *Node
			for _, n := range tr.nodes {
				if raft.ServerID(fmt.Sprint(n.cfg.MyID)) == id && n != self {
					to = n
				}
			}
			if to == nil {
				self.Fail(seq, ErrNotLeader)
				return
			}
			wait := to.SubmitFor(self.BootID(), seq, r)
			go func() {
				if err := wait(); err != nil {
					self.Fail(seq, err)
				}
			}()
		}
		for _, o := range opts {
			o(i, &cfg)
		}
		n, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		tr.nodes = append(tr.nodes, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, n := range tr.nodes {
		if err := n.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// leader waits for a leader other than not (-1: any) and returns its index.
func (tr *trio) leader(t *testing.T, not int, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for i, n := range tr.nodes {
			if i != not && n.IsLeader() {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no leader other than member %d within %v", not+1, within)
	return -1
}

// waitUntil polls cond until it holds, failing the test with what after
// within.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSlowLeaderDiskHandsOff: every fdatasync of the leader's raft log
// takes 1.5 s; once its write has run past the 200 ms limit the leader
// hands leadership to another member, which then commits writes without
// waiting for the slow disk, and the write that was stalled commits too.
func TestSlowLeaderDiskHandsOff(t *testing.T) {
	const stall = 1500 * time.Millisecond
	tr := openTrio(t, stall, 200*time.Millisecond)
	l := tr.leader(t, -1, 10*time.Second)
	old := tr.nodes[l]
	s := openSession(t, old)
	create := func(n *Node, path string) *Future {
		return n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody(path)})
	}
	if r := create(old, "/before").Wait(); r.Err != nil {
		t.Fatal(r.Err)
	}

	tr.slow[l].Store(true)
	start := time.Now()
	stalled := create(old, "/stalled")
	// Writes sent while its write is stalled: the first goes as a batch
	// of its own into raft, which takes it or the transfer first once the
	// stalled write returns (refused then, it is held with the rest); the
	// others wait in the queue and are held.
	waitUntil(t, 5*time.Second, "the slow leader's log write starts", func() bool { return !old.wal.SyncingSince().IsZero() })
	var early []*Future
	for i := range 3 {
		early = append(early, create(old, fmt.Sprintf("/early-%d", i)))
	}
	// Writes that reach the slow leader once it holds them for the
	// hand-off go to the new leader (Config.Reroute) and commit.
	waitUntil(t, 5*time.Second, "the slow leader holds writes for a hand-off", old.HoldsWrites)
	var held []*Future
	for i := range 5 {
		held = append(held, create(old, fmt.Sprintf("/held-%d", i)))
	}
	nl := tr.leader(t, l, 10*time.Second)
	moved := time.Since(start)
	t.Logf("leadership moved from member %d to member %d %v after the stall began", l+1, nl+1, moved)
	// The old leader counts the hand-off once it sees the new leader.
	waitUntil(t, 5*time.Second, "the slow leader counts its hand-off", func() bool { return tr.handoff[l].Load() > 0 })
	if got := tr.handoff[l].Load(); got != 1 {
		t.Errorf("LeadershipHandedOff called %d times on the slow leader, want 1", got)
	}
	// The write stalled on the old leader: once its fsync returns, the
	// followers ack it, as a rule before raft hands leadership over, so
	// it commits and its caller hears so. If the election beat the commit
	// its caller hears ErrNotLeader (ConnectionLoss to a client); the
	// write still commits in the new term, checked below.
	if r := stalled.Wait(); r.Err != nil && !errors.Is(r.Err, ErrNotLeader) {
		t.Errorf("the stalled write's caller on the old leader got: %v", r.Err)
	} else if r.Err != nil {
		t.Logf("the stalled write's caller on the old leader got: %v", r.Err)
	}

	for i, f := range early {
		if r := f.Wait(); r.Err != nil {
			t.Errorf("write /early-%d, sent to the slow leader during its stalled write: %v", i, r.Err)
		}
	}
	for i, f := range held {
		if r := f.Wait(); r.Err != nil {
			t.Errorf("write /held-%d, held by the slow leader during the hand-off: %v", i, r.Err)
		}
	}

	// Writes on the new leader commit without the slow member's disk.
	for i := range 5 {
		begin := time.Now()
		if r := create(tr.nodes[nl], fmt.Sprintf("/after-%d", i)).Wait(); r.Err != nil {
			t.Fatalf("write %d on the new leader: %v", i, r.Err)
		}
		if took := time.Since(begin); took >= stall/2 {
			t.Fatalf("write %d on the new leader took %v: it waited for the slow disk (%v)", i, took, stall)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.nodes[nl].Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/stalled", "/early-0", "/early-2", "/held-0", "/held-4"} {
		if _, _, err := tr.nodes[nl].Tree().GetData(p, nil, nil); err != nil {
			t.Errorf("%s, written through the old leader, is not on the new one: %v", p, err)
		}
	}
	if tr.nodes[l].IsLeader() {
		t.Error("the slow member leads again")
	}
	tr.slow[l].Store(false) // a quick Close
	if got := tr.handoff[nl].Load(); got != 0 {
		t.Errorf("the new leader, whose disk is healthy, handed off %d times", got)
	}
}

// TestHandoffTarget: the target is the first healthy candidate the hook
// names that is another voter and not the member to avoid; without the
// hook raft picks (the zero Server), unless a member is to be avoided.
func TestHandoffTarget(t *testing.T) {
	voters := []raft.Server{{ID: "1", Address: "a"}, {ID: "2", Address: "b"}, {ID: "3", Address: "c"}}
	tests := []struct {
		name    string
		targets []raft.ServerID // nil: no hook
		hook    bool
		avoid   raft.ServerID
		want    raft.ServerID
		ok      bool
	}{
		{name: "no hook: raft picks", ok: true},
		{name: "no hook, avoid 2", avoid: "2", want: "3", ok: true},
		{name: "hook order", hook: true, targets: []raft.ServerID{"3", "2"}, want: "3", ok: true},
		{name: "hook skips self and avoid", hook: true, targets: []raft.ServerID{"1", "3", "2"}, avoid: "3", want: "2", ok: true},
		{name: "hook names none healthy", hook: true, targets: nil, ok: false},
		{name: "hook names only the avoided", hook: true, targets: []raft.ServerID{"2"}, avoid: "2", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &Node{}
			if tt.hook {
				n.cfg.HandoffTargets = func() []raft.ServerID { return tt.targets }
			}
			got, ok := n.handoffTarget(voters, "1", tt.avoid)
			if ok != tt.ok || got.ID != tt.want {
				t.Fatalf("target %q ok %v, want %q ok %v", got.ID, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestStallLimit: one tick within 500 ms..1 s unless set.
func TestStallLimit(t *testing.T) {
	tests := []struct {
		tick, set, want time.Duration
	}{
		{tick: 2 * time.Second, want: time.Second},
		{tick: 500 * time.Millisecond, want: 500 * time.Millisecond},
		{tick: 700 * time.Millisecond, want: 700 * time.Millisecond},
		{tick: 200 * time.Millisecond, want: 500 * time.Millisecond},
		{tick: 2 * time.Second, set: 3 * time.Second, want: 3 * time.Second},
		{tick: 2 * time.Second, set: -1, want: -1},
	}
	for _, tt := range tests {
		if got := stallLimit(Config{TickTime: tt.tick, SyncStallLimit: tt.set}); got != tt.want {
			t.Errorf("tickTime %v, SyncStallLimit %v: limit %v, want %v", tt.tick, tt.set, got, tt.want)
		}
	}
}

// TestSlowDiskStandaloneSaysSoOnce: a standalone member cannot hand off;
// it says so in one line however long its disk stays slow.
func TestSlowDiskStandaloneSaysSoOnce(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	var slow atomic.Bool
	n := openNode(t, t.TempDir(), func(c *Config) {
		c.Logger = zap.New(core)
		c.SyncStallLimit = 50 * time.Millisecond
		c.beforeSync = func(string) {
			if slow.Load() {
				time.Sleep(300 * time.Millisecond) // the slow disk itself
			}
		}
	})
	defer n.Close()
	s := openSession(t, n)
	slow.Store(true)
	for i := range 3 {
		if r := n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody(fmt.Sprintf("/s%d", i))}).Wait(); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	got := logs.FilterMessageSnippet("it is the only voter").Len()
	if got != 1 {
		t.Fatalf("%d lines say the standalone member cannot hand off, want 1; warnings: %v", got, logs.All())
	}
}

// TestSlowDiskNoHandBack: when the member that took leadership from a
// slow one finds its own disk slow too, it hands leadership to the third
// member, not back to the one it took it from, even though that one is
// healthy again and the first healthy member HandoffTargets names.
func TestSlowDiskNoHandBack(t *testing.T) {
	const stall = time.Second
	var first atomic.Int64 // the first leader's index + 1, once known
	tr := openTrio(t, stall, 200*time.Millisecond, func(i int, c *Config) {
		c.HandoffTargets = func() []raft.ServerID {
			// The first leader, when it is not the caller, then the rest.
			var out []raft.ServerID
			if f := int(first.Load()) - 1; f >= 0 && f != i {
				out = append(out, raft.ServerID(fmt.Sprint(f+1)))
			}
			for j := range 3 {
				if j != i && int64(j+1) != first.Load() {
					out = append(out, raft.ServerID(fmt.Sprint(j+1)))
				}
			}
			return out
		}
	})
	a := tr.leader(t, -1, 10*time.Second)
	first.Store(int64(a + 1))
	s := openSession(t, tr.nodes[a])
	create := func(n *Node, path string) Result {
		return n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody(path)}).Wait()
	}
	tr.slow[a].Store(true)
	create(tr.nodes[a], "/a")
	b := tr.leader(t, a, 10*time.Second)
	waitUntil(t, 10*time.Second, "the first hand-off counted", func() bool { return tr.handoff[a].Load() > 0 })
	tr.slow[a].Store(false) // healthy again, and named first by the hook
	if r := create(tr.nodes[b], "/b-fast"); r.Err != nil {
		t.Fatal(r.Err)
	}
	tr.slow[b].Store(true)
	create(tr.nodes[b], "/b-slow")
	c := tr.leader(t, b, 10*time.Second)
	if c == a {
		t.Fatalf("member %d, slow, handed leadership back to member %d, which it took it from within %v", b+1, a+1, handoffCooldown)
	}
	t.Logf("leadership went from member %d to %d to %d", a+1, b+1, c+1)
	tr.slow[b].Store(false)
}

// TestSlowDiskHandoffCooldown: leadership goes round the three members,
// each handing it on as its disk stalls; back on the first within 10 s of
// its own hand-off, with its disk still slow, it keeps leading and says
// why, rather than pass leadership round again.
func TestSlowDiskHandoffCooldown(t *testing.T) {
	const stall = 700 * time.Millisecond
	tr := openTrio(t, stall, 150*time.Millisecond, func(i int, c *Config) {
		c.HandoffTargets = func() []raft.ServerID {
			return []raft.ServerID{raft.ServerID(fmt.Sprint((i+1)%3 + 1)), raft.ServerID(fmt.Sprint((i+2)%3 + 1))}
		}
	})
	a := tr.leader(t, -1, 10*time.Second)
	s := openSession(t, tr.nodes[a])
	create := func(n *Node, path string) *Future {
		return n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody(path)})
	}
	start := time.Now()
	cur := a
	for hop := range 3 {
		tr.slow[cur].Store(true)
		create(tr.nodes[cur], fmt.Sprintf("/hop-%d", hop)).Wait()
		next := tr.leader(t, cur, 10*time.Second)
		waitUntil(t, 10*time.Second, fmt.Sprintf("hand-off %d, from member %d, counted", hop+1, cur+1), func() bool { return tr.handoff[cur].Load() > 0 })
		tr.slow[cur].Store(false)
		cur = next
	}
	if cur != a {
		t.Fatalf("leadership went round to member %d, want back on member %d", cur+1, a+1)
	}
	tr.slow[a].Store(true)
	create(tr.nodes[a], "/again")
	waitUntil(t, 10*time.Second, fmt.Sprintf("a line says member %d keeps leading within the cooldown", a+1), func() bool {
		return tr.warns[a].FilterMessageSnippet("but it handed leadership away").Len() > 0
	})
	if elapsed := time.Since(start); elapsed >= handoffCooldown {
		t.Fatalf("the round took %v, past the %v cooldown: the test cannot tell a cooldown from its absence", elapsed, handoffCooldown)
	}
	if got := tr.handoff[a].Load(); got != 1 || !tr.nodes[a].IsLeader() {
		t.Fatalf("member %d handed off %d times and leads %v, want 1 hand-off and still leading within the cooldown", a+1, got, tr.nodes[a].IsLeader())
	}
	tr.slow[a].Store(false)
}
