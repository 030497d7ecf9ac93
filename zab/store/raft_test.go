package store

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// listFSM records every command applied, in order.
type listFSM struct {
	mu   sync.Mutex
	cmds []string
}

func (f *listFSM) Apply(l *raft.Log) interface{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmds = append(f.cmds, string(l.Data))
	return len(f.cmds)
}

func (f *listFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return listSnapshot(append([]string(nil), f.cmds...)), nil
}

func (f *listFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var cmds []string
	if err := json.NewDecoder(rc).Decode(&cmds); err != nil {
		return err
	}
	f.mu.Lock()
	f.cmds = cmds
	f.mu.Unlock()
	return nil
}

func (f *listFSM) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cmds...)
}

type listSnapshot []string

func (s listSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode([]string(s)); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (listSnapshot) Release() {}

// startRaft runs a single-voter raft node on the store, bootstrapping it
// when the store is fresh, and waits until it leads.
func startRaft(t *testing.T, s *Store, fsm raft.FSM) *raft.Raft {
	t.Helper()
	conf := raft.DefaultConfig()
	conf.LocalID = "1"
	conf.HeartbeatTimeout = 50 * time.Millisecond
	conf.ElectionTimeout = 50 * time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	conf.TrailingLogs = 10
	conf.SnapshotThreshold = 1 << 30 // snapshots only when asked
	conf.SnapshotInterval = time.Hour
	conf.Logger = NewHCLogger(zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	snaps := s.SnapshotStore(2)
	_, trans := raft.NewInmemTransport("1")
	has, err := raft.HasExistingState(s, s, snaps)
	if err != nil {
		t.Fatal(err)
	}
	r, err := raft.NewRaft(conf, fsm, s, s, snaps, trans)
	if err != nil {
		t.Fatalf("NewRaft: %v", err)
	}
	if !has {
		cfg := raft.Configuration{Servers: []raft.Server{{ID: "1", Address: trans.LocalAddr()}}}
		if err := r.BootstrapCluster(cfg).Error(); err != nil {
			t.Fatalf("bootstrap: %v", err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.State() != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatal("no leader after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r
}

// TestRaftRestart runs hashicorp/raft on the store, snapshots, trims the
// log, restarts from disk and checks the FSM is rebuilt from the snapshot
// plus the log tail.
func TestRaftRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	fsm := &listFSM{}
	r := startRaft(t, s, fsm)
	apply := func(r *raft.Raft, from, to int) {
		for i := from; i < to; i++ {
			if err := r.Apply([]byte{byte('a' + i%26), byte(i)}, time.Second).Error(); err != nil {
				t.Fatalf("Apply %d: %v", i, err)
			}
		}
	}
	apply(r, 0, 60)
	if err := r.Snapshot().Error(); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	apply(r, 60, 100)
	want := fsm.list()
	if len(want) != 100 {
		t.Fatalf("FSM has %d commands", len(want))
	}
	if first, _ := s.FirstIndex(); first <= 1 {
		t.Fatalf("log not trimmed after snapshot: first index %d", first)
	}
	term, _ := s.GetUint64([]byte("CurrentTerm"))
	if term == 0 {
		t.Fatal("raft stored no CurrentTerm")
	}
	if err := r.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fsm2 := &listFSM{}
	r2 := startRaft(t, s, fsm2)
	defer r2.Shutdown()
	if err := r2.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	got := fsm2.list()
	if len(got) != len(want) {
		t.Fatalf("after restart FSM has %d commands, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("command %d = %q, want %q", i, got[i], want[i])
		}
	}
	if term2, _ := s.GetUint64([]byte("CurrentTerm")); term2 <= term {
		t.Fatalf("term after restart %d, before %d", term2, term)
	}
}

// TestRaftClusterInstallSnapshot runs three raft nodes, each on its own
// Store, cuts one off while the leader snapshots and trims its log, then
// reconnects it: the follower must catch up through InstallSnapshot
// (written into its snapshot store by raft) plus the log tail, and end with
// the same FSM as the others.
func TestRaftClusterInstallSnapshot(t *testing.T) {
	const n = 3
	type node struct {
		s     *Store
		fsm   *listFSM
		r     *raft.Raft
		trans *raft.InmemTransport
	}
	nodes := make([]*node, n)
	var servers []raft.Server
	for i := range nodes {
		s, _ := openTest(t, true)
		addr, trans := raft.NewInmemTransport("")
		nodes[i] = &node{s: s, fsm: &listFSM{}, trans: trans}
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(fmt.Sprint(i)), Address: addr})
	}
	connect := func(i int) {
		for j := range nodes {
			if i != j {
				nodes[i].trans.Connect(nodes[j].trans.LocalAddr(), nodes[j].trans)
				nodes[j].trans.Connect(nodes[i].trans.LocalAddr(), nodes[i].trans)
			}
		}
	}
	for i := range nodes {
		connect(i)
	}
	for i, nd := range nodes {
		conf := raft.DefaultConfig()
		conf.LocalID = servers[i].ID
		conf.HeartbeatTimeout = 100 * time.Millisecond
		conf.ElectionTimeout = 100 * time.Millisecond
		conf.LeaderLeaseTimeout = 100 * time.Millisecond
		conf.CommitTimeout = 5 * time.Millisecond
		conf.TrailingLogs = 5
		conf.SnapshotThreshold = 1 << 30
		conf.SnapshotInterval = time.Hour
		conf.Logger = NewHCLogger(zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel)))
		snaps := nd.s.SnapshotStore(2)
		if err := raft.BootstrapCluster(conf, nd.s, nd.s, snaps, nd.trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(conf, nd.fsm, nd.s, nd.s, snaps, nd.trans)
		if err != nil {
			t.Fatal(err)
		}
		nd.r = r
		t.Cleanup(func() { _ = r.Shutdown().Error() })
	}
	leader := func() *node {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			for _, nd := range nodes {
				if nd.r.State() == raft.Leader {
					return nd
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("no leader")
		return nil
	}
	l := leader()
	var lagger *node
	for _, nd := range nodes {
		if nd != l {
			lagger = nd
			break
		}
	}
	lagger.trans.DisconnectAll()
	for _, nd := range nodes {
		if nd != lagger {
			nd.trans.Disconnect(lagger.trans.LocalAddr())
		}
	}
	for i := 0; i < 200; i++ {
		if err := l.r.Apply([]byte(fmt.Sprintf("cmd-%03d", i)), 2*time.Second).Error(); err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
	}
	if err := l.r.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	for i := 200; i < 210; i++ {
		if err := l.r.Apply([]byte(fmt.Sprintf("cmd-%03d", i)), 2*time.Second).Error(); err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
	}
	if first, _ := l.s.FirstIndex(); first < 100 {
		t.Fatalf("leader log not trimmed: first index %d", first)
	}
	connect(indexOf(nodes, lagger, func(a, b *node) bool { return a == b }))
	want := l.fsm.list()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := lagger.fsm.list()
		if len(got) == len(want) {
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("lagger command %d = %q, want %q", i, got[i], want[i])
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lagger has %d of %d commands", len(got), len(want))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := lagger.s.Metrics(); m.Snapshots != 1 || m.LastSnapshotIndex < 200 {
		t.Fatalf("lagger did not install a snapshot: %+v", m)
	}
}

func indexOf[T any](xs []T, x T, eq func(a, b T) bool) int {
	for i := range xs {
		if eq(xs[i], x) {
			return i
		}
	}
	return -1
}
