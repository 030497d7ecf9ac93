package zkmetrics

import (
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

func TestLines(t *testing.T) {
	tests := []struct {
		name    string
		observe func(r *Registry)
		want    string
	}{
		{
			name: "empty summary prints zeros",
			observe: func(r *Registry) {
				r.Summary("fsynctime", "", false)
			},
			want: "zk_avg_fsynctime\t0.0\nzk_min_fsynctime\t0\nzk_max_fsynctime\t0\nzk_cnt_fsynctime\t0\nzk_sum_fsynctime\t0\n",
		},
		{
			name: "detailed summary adds nearest-rank percentiles",
			observe: func(r *Registry) {
				s := r.Summary("readlatency", "", true)
				for v := int64(1); v <= 100; v++ {
					s.Observe(v)
				}
			},
			want: "zk_avg_readlatency\t50.5\nzk_min_readlatency\t1\nzk_max_readlatency\t100\nzk_cnt_readlatency\t100\nzk_sum_readlatency\t5050\n" +
				"zk_p50_readlatency\t50\nzk_p95_readlatency\t95\nzk_p99_readlatency\t99\nzk_p999_readlatency\t100\n",
		},
		{
			name: "kinds come in ZooKeeper's order, sets by key",
			observe: func(r *Registry) {
				ss := r.SummarySet("write_per_namespace", "", false)
				ss.Observe("b", 3)
				ss.Observe("a", 1)
				r.Counter("commit_count", "").Add(7)
				r.Gauge("avg_latency", "", false, func() (float64, bool) { return 2, true })
				r.Gauge("learners", "", true, func() (float64, bool) { return 0, false })
				r.Info("server_state", func() (string, bool) { return "standalone", true })
			},
			want: "zk_server_state\tstandalone\nzk_avg_latency\t2.0\nzk_commit_count\t7\n" +
				"zk_avg_a_write_per_namespace\t1.0\nzk_min_a_write_per_namespace\t1\nzk_max_a_write_per_namespace\t1\nzk_cnt_a_write_per_namespace\t1\nzk_sum_a_write_per_namespace\t1\n" +
				"zk_avg_b_write_per_namespace\t3.0\nzk_min_b_write_per_namespace\t3\nzk_max_b_write_per_namespace\t3\nzk_cnt_b_write_per_namespace\t1\nzk_sum_b_write_per_namespace\t3\n",
		},
		{
			name: "the window keeps the last 1028 values",
			observe: func(r *Registry) {
				s := r.Summary("lat", "", true)
				for i := 0; i < window; i++ {
					s.Observe(1000)
				}
				for i := 0; i < window; i++ {
					s.Observe(1)
				}
			},
			want: "zk_avg_lat\t500.5\nzk_min_lat\t1\nzk_max_lat\t1000\nzk_cnt_lat\t2056\nzk_sum_lat\t1029028\n" +
				"zk_p50_lat\t1\nzk_p95_lat\t1\nzk_p99_lat\t1\nzk_p999_lat\t1\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			tc.observe(r)
			var b strings.Builder
			for _, l := range r.Lines() {
				b.WriteString(l.Key + "\t" + l.Value + "\n")
			}
			if b.String() != tc.want {
				t.Errorf("lines:\n%s\nwant:\n%s", b.String(), tc.want)
			}
		})
	}
}

func TestReset(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("c", "")
	s := r.Summary("s", "", true)
	ss := r.SummarySet("set", "", false)
	c.Add(3)
	s.Observe(5)
	ss.Observe("k", 1)
	r.Reset()
	if c.Get() != 0 || s.Snapshot().Count != 0 || len(ss.keys()) != 0 {
		t.Errorf("after Reset: counter %d, summary count %d, set keys %v", c.Get(), s.Snapshot().Count, ss.keys())
	}
}

func TestPrometheus(t *testing.T) {
	r := NewRegistry()
	s := r.Summary("updatelatency", "Latency.", true)
	for v := int64(1); v <= 10; v++ {
		s.Observe(v)
	}
	r.Summary("fsynctime", "Fsync.", false).Observe(4)
	r.SummarySet("read_per_namespace", "Reads.", false).Observe("app", 90)
	r.CounterFunc("bytes_received_count", "Bytes.", func() int64 { return 42 })
	r.Gauge("learners", "Learners.", true, func() (float64, bool) { return 0, false })
	r.Info("version", func() (string, bool) { return "x", true })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r)
	want := `# HELP bytes_received_count Bytes.
# TYPE bytes_received_count counter
bytes_received_count 42
# HELP fsynctime Fsync.
# TYPE fsynctime summary
fsynctime{quantile="0.5"} 4
fsynctime_sum 4
fsynctime_count 1
# HELP read_per_namespace Reads.
# TYPE read_per_namespace summary
read_per_namespace{key="app",quantile="0.5"} 90
read_per_namespace_sum{key="app"} 90
read_per_namespace_count{key="app"} 1
# HELP updatelatency Latency.
# TYPE updatelatency summary
updatelatency{quantile="0.5"} 5
updatelatency{quantile="0.9"} 9
updatelatency{quantile="0.99"} 10
updatelatency_sum 55
updatelatency_count 10
`
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	if b.String() != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestSummaryConcurrent: observations from many goroutines at once are
// all counted, with the exact sum, min, max and a full window.
func TestSummaryConcurrent(t *testing.T) {
	r := NewRegistry()
	s := r.Summary("x", "", true)
	const workers, each = 8, 1000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				s.Observe(int64(w*each + i + 1))
			}
		}()
	}
	wg.Wait()
	const n = workers * each
	sn := s.Snapshot()
	if sn.Count != n || sn.Sum != n*(n+1)/2 || sn.Min != 1 || sn.Max != n {
		t.Errorf("snapshot %+v, want count %d sum %d min 1 max %d", sn, n, n*(n+1)/2, n)
	}
	if got := len(s.window()); got != window {
		t.Errorf("window holds %d values, want %d", got, window)
	}
	s.Reset()
	if sn := s.Snapshot(); sn.Count != 0 || sn.Min != 0 || sn.Max != 0 || len(s.window()) != 0 {
		t.Errorf("after Reset: %+v, window %d", sn, len(s.window()))
	}
}
