package wal

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// listFSM records every command applied, in order.
type listFSM struct {
	mu      sync.Mutex
	cmds    []string
	waiters map[int]chan struct{} // closed once len(cmds) reaches the key
}

func (f *listFSM) Apply(l *raft.Log) interface{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmds = append(f.cmds, string(l.Data))
	f.wakeLocked()
	return len(f.cmds)
}

// waitFor returns a channel closed once the FSM holds n commands.
func (f *listFSM) waitFor(n int) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiters == nil {
		f.waiters = make(map[int]chan struct{})
	}
	ch := make(chan struct{})
	f.waiters[n] = ch
	f.wakeLocked()
	return ch
}

func (f *listFSM) wakeLocked() {
	for n, ch := range f.waiters {
		if len(f.cmds) >= n {
			close(ch)
			delete(f.waiters, n)
		}
	}
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
	f.wakeLocked()
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

// startRaft runs a single-voter raft node with the log in logs,
// bootstrapping it when there is no state yet, and waits until it leads.
func startRaft(t *testing.T, logs *Log, stable *raft.InmemStore, snaps raft.SnapshotStore, fsm raft.FSM) *raft.Raft {
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
	conf.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Error})
	_, trans := raft.NewInmemTransport("1")
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		t.Fatal(err)
	}
	r, err := raft.NewRaft(conf, fsm, logs, stable, snaps, trans)
	if err != nil {
		t.Fatalf("NewRaft: %v", err)
	}
	if !has {
		cfg := raft.Configuration{Servers: []raft.Server{{ID: "1", Address: trans.LocalAddr()}}}
		if err := r.BootstrapCluster(cfg).Error(); err != nil {
			t.Fatalf("bootstrap: %v", err)
		}
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case leader := <-r.LeaderCh():
			if leader {
				return r
			}
		case <-timeout:
			t.Fatal("no leader after 10s")
		}
	}
}

// TestRaftRestart runs hashicorp/raft on the WAL, snapshots (so raft
// compacts the log, removing segments), shuts down, restarts on the same
// directory and checks the FSM is rebuilt from the snapshot plus the log.
func TestRaftRestart(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, NoSync: true, SegmentSize: MinSegmentSize}
	l := openLog(t, opts)
	stable, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	fsm := &listFSM{}
	r := startRaft(t, l, stable, snaps, fsm)
	apply := func(r *raft.Raft, from, to int) {
		for i := from; i < to; i++ {
			if err := r.Apply(fmt.Appendf(nil, "cmd-%03d", i), 5*time.Second).Error(); err != nil {
				t.Fatalf("Apply %d: %v", i, err)
			}
		}
	}
	apply(r, 0, 120)
	oldest := segmentFiles(t, dir)[0]
	if err := r.Snapshot().Error(); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	apply(r, 120, 200)
	want := fsm.list()
	if len(want) != 200 {
		t.Fatalf("FSM has %d commands", len(want))
	}
	if first, _ := l.FirstIndex(); first <= 100 {
		t.Fatalf("log not compacted after the snapshot: first index %d", first)
	}
	if files := segmentFiles(t, dir); files[0] == oldest {
		t.Fatalf("compaction removed no segment: %v", files)
	}
	last, _ := l.LastIndex()
	if err := r.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}

	l = reopen(t, l, opts)
	if last2, _ := l.LastIndex(); last2 != last {
		t.Fatalf("last index %d after reopen, want %d", last2, last)
	}
	fsm2 := &listFSM{}
	r2 := startRaft(t, l, stable, snaps, fsm2)
	defer func() { _ = r2.Shutdown().Error() }()
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
	apply(r2, 200, 210)
	if n := len(fsm2.list()); n != 210 {
		t.Fatalf("FSM has %d commands after more applies", n)
	}
}

// TestRaftInstallSnapshot runs three raft nodes on WALs, cuts one off while
// the leader snapshots and compacts past it, then reconnects it: raft
// installs the snapshot on it and, the WAL being monotonic, deletes its
// whole log, whose next entry then starts past the snapshot. The follower
// must end with the leader's FSM, and its log must survive a reopen.
func TestRaftInstallSnapshot(t *testing.T) {
	const n = 3
	type node struct {
		dir   string
		wal   *Log
		fsm   *listFSM
		r     *raft.Raft
		trans *raft.InmemTransport
	}
	nodes := make([]*node, n)
	var servers []raft.Server
	for i := range nodes {
		dir := t.TempDir()
		addr, trans := raft.NewInmemTransport("")
		nodes[i] = &node{dir: dir, wal: openLog(t, Options{Dir: dir, NoSync: true, SegmentSize: MinSegmentSize}),
			fsm: &listFSM{}, trans: trans}
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(fmt.Sprint(i)), Address: addr})
	}
	for i := range nodes {
		for j := range nodes {
			if i != j {
				nodes[i].trans.Connect(nodes[j].trans.LocalAddr(), nodes[j].trans)
			}
		}
	}
	var leaderChs []reflect.SelectCase
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
		conf.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Off})
		stable, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(conf, nd.wal, stable, snaps, nd.trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(conf, nd.fsm, nd.wal, stable, snaps, nd.trans)
		if err != nil {
			t.Fatal(err)
		}
		nd.r = r
		t.Cleanup(func() { _ = r.Shutdown().Error() })
		leaderChs = append(leaderChs, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.LeaderCh())})
	}
	leaderChs = append(leaderChs, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(10 * time.Second))})
	var leader *node
	for leader == nil {
		i, v, _ := reflect.Select(leaderChs)
		if i == n {
			t.Fatal("no leader after 10s")
		}
		if v.Bool() {
			leader = nodes[i]
		}
	}
	var lagger *node
	for _, nd := range nodes {
		if nd != leader {
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
	for i := range 200 {
		if err := leader.r.Apply(fmt.Appendf(nil, "cmd-%03d", i), 5*time.Second).Error(); err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
	}
	if err := leader.r.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	for i := 200; i < 210; i++ {
		if err := leader.r.Apply(fmt.Appendf(nil, "cmd-%03d", i), 5*time.Second).Error(); err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
	}
	if first, _ := leader.wal.FirstIndex(); first < 100 {
		t.Fatalf("leader log not compacted: first index %d", first)
	}
	laggerFirst, _ := lagger.wal.FirstIndex()
	for _, nd := range nodes {
		if nd != lagger {
			lagger.trans.Connect(nd.trans.LocalAddr(), nd.trans)
			nd.trans.Connect(lagger.trans.LocalAddr(), lagger.trans)
		}
	}
	select {
	case <-lagger.fsm.waitFor(210):
	case <-time.After(20 * time.Second):
		t.Fatalf("lagging follower has %d commands, want 210", len(lagger.fsm.list()))
	}
	if got, want := lagger.fsm.list(), leader.fsm.list(); !reflect.DeepEqual(got, want) {
		t.Fatalf("follower FSM differs from the leader's")
	}
	first, _ := lagger.wal.FirstIndex()
	last, _ := lagger.wal.LastIndex()
	if first <= laggerFirst || first < 200 {
		t.Fatalf("follower log %d-%d was not reset past the snapshot (first was %d)", first, last, laggerFirst)
	}
	if _, err := os.Stat(filepath.Join(lagger.dir, resetName)); err != nil {
		t.Fatalf("no reset marker after the follower's log was emptied: %v", err)
	}
	if err := lagger.r.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	l := reopen(t, lagger.wal, Options{Dir: lagger.dir, NoSync: true, SegmentSize: MinSegmentSize})
	checkBounds(t, l, first, last)
}
