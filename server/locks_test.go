package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/lockview"
)

func TestLockTracker(t *testing.T) {
	lock := func(holders ...LockNode) []LockInfo { return []LockInfo{{Path: "/l", Holders: holders}} }
	a := LockNode{Name: "lock-0000000000", Ctime: 1000}
	b := LockNode{Name: "lock-0000000001", Ctime: 1500}
	c := LockNode{Name: "lock-0000000002", Ctime: 1600}
	var lt lockTracker
	steps := []struct {
		locks []LockInfo
		now   int64
		count uint64
		sum   float64
	}{
		{lock(a), 2000, 0, 0},    // first sample: learns a, records nothing
		{lock(a), 3000, 0, 0},    // a still holds
		{lock(b), 4000, 1, 2500}, // b took over: waited 4000-1500
		{nil, 5000, 1, 2500},     // released
		{lock(c), 6000, 2, 2500 + 4400},
		{lock(c), 7000, 2, 2500 + 4400},
	}
	for i, s := range steps {
		lt.sample(s.locks, s.now)
		if n, sum := lt.snapshot(); n != s.count || sum != s.sum {
			t.Errorf("step %d: count %d sum %v, want %d %v", i, n, sum, s.count, s.sum)
		}
	}
}

// raftBackend adds RaftStats to the fake backend.
type raftBackend struct {
	*fakeBackend
	st RaftStats
}

func (b raftBackend) RaftStats() RaftStats { return b.st }

// TestLocksGoZk takes go-zk locks against the server and checks the lock
// view, the locks admin command and the lock metrics.
func TestLocksGoZk(t *testing.T) {
	ts := startServer(t, nil)
	connect := func() *zk.Conn {
		zc, _, err := zk.Connect([]string{ts.addr}, 10*time.Second, zk.WithLogger(nopLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(zc.Close)
		waitFor(t, "session", func() bool { return zc.SessionID() != 0 })
		return zc
	}
	c1, c2, c3 := connect(), connect(), connect()
	for _, p := range []string{"/app", "/app/locks"} {
		if _, err := c1.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	l1 := zk.NewLock(c1, "/app/locks/a", zk.WorldACL(zk.PermAll))
	if err := l1.Lock(); err != nil {
		t.Fatal(err)
	}
	acquired := make(chan error, 2)
	l2 := zk.NewLock(c2, "/app/locks/a", zk.WorldACL(zk.PermAll))
	go func() { acquired <- l2.Lock() }()
	waitFor(t, "second contender", func() bool { l := ts.Locks("/app"); return len(l) == 1 && len(l[0].Waiters) == 1 })
	l3 := zk.NewLock(c3, "/app/locks/a", zk.WorldACL(zk.PermAll))
	go func() { acquired <- l3.Lock() }()
	waitFor(t, "third contender", func() bool { l := ts.Locks("/app"); return len(l) == 1 && len(l[0].Waiters) == 2 })

	locks := ts.Locks("/app/locks/a")
	if len(locks) != 1 || locks[0].Path != "/app/locks/a" || locks[0].Kind != lockview.KindMutex || len(locks[0].Holders) != 1 {
		t.Fatalf("Locks = %+v", locks)
	}
	h, w := locks[0].Holders[0], locks[0].Waiters
	if h.SessionID != c1.SessionID() || w[0].SessionID != c2.SessionID() || w[1].SessionID != c3.SessionID() {
		t.Errorf("sessions: holder %x, waiters %x %x; want %x, %x %x", h.SessionID, w[0].SessionID, w[1].SessionID,
			c1.SessionID(), c2.SessionID(), c3.SessionID())
	}
	if !strings.HasPrefix(h.Client, "127.0.0.1:") || h.Mode != lockview.LockExclusive {
		t.Errorf("holder client %q mode %q", h.Client, h.Mode)
	}
	if !(h.Sequence < w[0].Sequence && w[0].Sequence < w[1].Sequence && h.Czxid < w[0].Czxid && w[0].Czxid < w[1].Czxid) {
		t.Errorf("fencing tokens do not grow in queue order: %+v %+v", h, w)
	}
	if other := ts.Locks("/other"); len(other) != 0 {
		t.Errorf("Locks(/other) = %+v", other)
	}

	// The metrics handler's lock-wait sampler starts now and learns the
	// holder at its first sample.
	srv := httptest.NewServer(ts.MetricsHandler())
	defer srv.Close()

	// Admin command with and without the path filter.
	admin := httptest.NewServer(ts.AdminHandler())
	defer admin.Close()
	for _, tc := range []struct {
		query string
		n     int
	}{{"", 1}, {"?path=/app", 1}, {"?path=/nope", 0}} {
		resp, err := http.Get(admin.URL + "/commands/locks" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Locks   []LockInfo `json:"locks"`
			Command string     `json:"command"`
			Error   any        `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || out.Command != "locks" || out.Error != nil || len(out.Locks) != tc.n {
			t.Fatalf("locks%s: %+v, %v", tc.query, out, err)
		}
		if tc.n == 1 && !reflect.DeepEqual(out.Locks[0].Waiters[0].Name, w[0].Name) {
			t.Errorf("locks%s: first waiter %q, want %q", tc.query, out.Locks[0].Waiters[0].Name, w[0].Name)
		}
	}

	// Release in turn: each waiter takes over in order.
	if err := l1.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-acquired; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "handover", func() bool {
		l := ts.Locks("")
		return len(l) == 1 && l[0].Holders[0].SessionID == c2.SessionID() && len(l[0].Waiters) == 1
	})

	// The sampler sees the new holder within a second or two.
	waitFor(t, "lock wait sample", func() bool {
		mfs := scrape(t, srv.URL)
		return mfs["lock_wait_time_ms"].GetMetric()[0].GetSummary().GetSampleCount() >= 1
	})
	mfs := scrape(t, srv.URL)
	if v := mfs["lock_paths"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("lock_paths = %v", v)
	}
	if v := mfs["lock_waiters"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("lock_waiters = %v", v)
	}
	q := mfs["lock_queue_length"].GetMetric()
	if len(q) != 1 || q[0].GetLabel()[0].GetValue() != "/app/locks/a" || q[0].GetGauge().GetValue() != 2 {
		t.Errorf("lock_queue_length = %v", q)
	}
}

// scrape fetches and parses a /metrics page with Prometheus's text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// TestRaftMetrics scrapes /metrics from a server whose Backend reports
// RaftStats and checks ZooKeeper's names and the raft/Pebble ones.
func TestRaftMetrics(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ClientAddr = "127.0.0.1:0"
	fb := newFakeBackend()
	defer fb.close()
	rb := raftBackend{fakeBackend: fb, st: RaftStats{
		Term: 3, Leader: true, LastLogIndex: 42, CommitIndex: 41, AppliedIndex: 40,
		LogEntries: 30, LogBytes: 4096, Appends: 7, AppendedEntries: 30, WALSyncs: 8,
		LastCommitLatency: 1500 * time.Microsecond, LastFsyncLatency: 2 * time.Millisecond,
		DiskBytes: 1 << 20, Snapshots: 1, LastSnapshotIndex: 12, LastSnapshotSize: 777, LastSnapshotAge: 90 * time.Second,
	}}
	s, err := New(cfg, rb)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.MetricsHandler())
	defer srv.Close()
	mfs := scrape(t, srv.URL)
	want := map[string]float64{
		"raft_term": 3, "raft_is_leader": 1, "raft_last_log_index": 42, "raft_commit_index": 41, "raft_applied_index": 40,
		"raft_log_entries": 30, "raft_log_bytes": 4096, "raft_log_appends": 7, "raft_log_appended_entries": 30,
		"raft_log_commit_latency_ms": 1.5, "raft_log_fsyncs": 8, "raft_log_fsync_latency_ms": 2,
		"raft_store_disk_bytes": 1 << 20, "raft_snapshots": 1, "raft_last_snapshot_index": 12,
		"raft_last_snapshot_size_bytes": 777, "raft_last_snapshot_age_seconds": 90,
		"znode_count": 5, "num_alive_connections": 0, "outstanding_requests": 0, "lock_paths": 0,
	}
	for name, v := range want {
		mf, ok := mfs[name]
		if !ok {
			t.Errorf("/metrics lacks %s", name)
			continue
		}
		m := mf.GetMetric()[0]
		got := m.GetGauge().GetValue() + m.GetCounter().GetValue()
		if got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	for _, name := range []string{"packets_received", "packets_sent", "watch_count", "ephemerals_count", "approximate_data_size",
		"readlatency", "updatelatency", "lock_wait_time_ms", "go_goroutines"} {
		if _, ok := mfs[name]; !ok {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// BenchmarkLockView measures one lock-view pass (what the sampler does
// every second) over a tree whose ephemerals are mostly not lock nodes.
func BenchmarkLockView(b *testing.B) {
	for _, n := range []struct{ ephemerals, lockNodes int }{{10000, 100}, {100000, 1000}} {
		b.Run(fmt.Sprintf("ephemerals=%d/lockNodes=%d", n.ephemerals, n.lockNodes), func(b *testing.B) {
			tr := datatree.New(datatree.DefaultConfig())
			zxid := int64(0)
			create := func(session int64, path string, mode int32) {
				zxid++
				if _, _, err := tr.Create(&datatree.Txn{Zxid: zxid, Time: zxid, SessionID: session},
					datatree.CreateOp{Path: path, ACL: datatree.OpenACLUnsafe, Mode: mode}); err != nil {
					b.Fatal(err)
				}
			}
			create(1, "/svc", jute.ModePersistent)
			create(1, "/locks", jute.ModePersistent)
			for i := 0; i < n.lockNodes/10; i++ {
				create(1, fmt.Sprintf("/locks/l%d", i), jute.ModePersistent)
			}
			for i := 0; i < n.lockNodes; i++ {
				create(int64(i+2), fmt.Sprintf("/locks/l%d/lock-", i/10), jute.ModeEphemeralSequential)
			}
			for i := n.lockNodes; i < n.ephemerals; i++ {
				create(int64(i+2), fmt.Sprintf("/svc/member%d", i), jute.ModeEphemeral)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				locks := lockview.Build(tr.EphemeralsByParent("", lockview.IsLockName), func(int64) string { return "" }, 0)
				if len(locks) != n.lockNodes/10 {
					b.Fatalf("%d locks", len(locks))
				}
			}
		})
	}
}
