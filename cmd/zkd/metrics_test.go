package main

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zkd/zkd/compat/zkproc"
)

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// TestIntegration_MetricsScrape scrapes /metrics of a real zkd, parses it
// with Prometheus's text parser and checks ZooKeeper's names beside the
// raft, Pebble and lock-view ones.
func TestIntegration_MetricsScrape(t *testing.T) {
	port := zkproc.FreePort(t)
	srv := zkproc.StartZkd(t, zkproc.Options{ExtraCfg: map[string]string{
		"metricsProvider.className": "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider",
		"metricsProvider.httpHost":  "127.0.0.1",
		"metricsProvider.httpPort":  strconv.Itoa(port),
	}})
	c, _, err := zk.Connect([]string{srv.Addr}, 10*time.Second, zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/locks", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if _, err := c.Create("/n", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	l := zk.NewLock(c, "/locks/a", zk.WorldACL(zk.PermAll))
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	scrape := func() map[string]*dto.MetricFamily {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
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
	value := func(mfs map[string]*dto.MetricFamily, name string) (float64, bool) {
		mf, ok := mfs[name]
		if !ok || len(mf.GetMetric()) == 0 {
			return 0, false
		}
		m := mf.GetMetric()[0]
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Summary != nil:
			return float64(m.GetSummary().GetSampleCount()), true
		}
		return m.GetUntyped().GetValue(), true
	}
	mfs := scrape()
	checks := []struct {
		name string
		ok   func(float64) bool
		want string
	}{
		{"znode_count", func(v float64) bool { return v >= 45 }, ">= 45"},
		{"num_alive_connections", func(v float64) bool { return v == 1 }, "1"},
		{"ephemerals_count", func(v float64) bool { return v == 1 }, "1"},
		{"packets_received", func(v float64) bool { return v >= 40 }, ">= 40"},
		{"packets_sent", func(v float64) bool { return v >= 40 }, ">= 40"},
		{"outstanding_requests", func(v float64) bool { return v == 0 }, "0"},
		{"approximate_data_size", func(v float64) bool { return v > 0 }, "> 0"},
		{"watch_count", func(v float64) bool { return v >= 0 }, "present"},
		{"global_sessions", func(v float64) bool { return v == 1 }, "1"},
		{"updatelatency", func(v float64) bool { return v >= 40 }, ">= 40 observations"},
		{"readlatency", func(v float64) bool { return v >= 0 }, "present"},
		{"raft_term", func(v float64) bool { return v >= 1 }, ">= 1"},
		{"raft_is_leader", func(v float64) bool { return v == 1 }, "1 (standalone leads)"},
		{"raft_commit_index", func(v float64) bool { return v >= 40 }, ">= 40"},
		{"raft_applied_index", func(v float64) bool { return v >= 40 }, ">= 40"},
		{"raft_last_log_index", func(v float64) bool { return v >= 40 }, ">= 40"},
		{"raft_log_entries", func(v float64) bool { return v >= 1 }, ">= 1"},
		{"raft_log_bytes", func(v float64) bool { return v >= 0 }, "present"},
		{"raft_log_appends", func(v float64) bool { return v >= 40 }, ">= 40"},
		{"raft_log_commit_latency_ms", func(v float64) bool { return v > 0 }, "> 0"},
		{"raft_log_fsyncs", func(v float64) bool { return v >= 1 }, ">= 1"},
		{"raft_log_fsync_latency_ms", func(v float64) bool { return v >= 0 }, "present"},
		{"raft_store_disk_bytes", func(v float64) bool { return v > 0 }, "> 0"},

		{"lock_paths", func(v float64) bool { return v == 1 }, "1"},
		{"lock_waiters", func(v float64) bool { return v == 0 }, "0"},
		{"lock_queue_length", func(v float64) bool { return v == 1 }, "1"},
		{"lock_wait_time_ms", func(v float64) bool { return v >= 0 }, "present"},
		{"go_goroutines", func(v float64) bool { return v > 0 }, "> 0"},
	}
	// Raft checks whether to snapshot every 30-60 s, longer than this test
	// runs, so the snapshot figures are checked for consistency: all zero
	// without a snapshot, all set with one.
	snaps, _ := value(mfs, "raft_snapshots")
	idx, _ := value(mfs, "raft_last_snapshot_index")
	size, _ := value(mfs, "raft_last_snapshot_size_bytes")
	age, ageOK := value(mfs, "raft_last_snapshot_age_seconds")
	if !ageOK || (snaps == 0) != (idx == 0 && size == 0 && age == 0) || (snaps > 0 && (idx < 1 || size <= 0 || age < 0)) {
		t.Errorf("snapshot figures: snapshots %v, index %v, size %v, age %v (present %v)", snaps, idx, size, age, ageOK)
	}
	for _, ck := range checks {
		v, ok := value(mfs, ck.name)
		if !ok || !ck.ok(v) {
			t.Errorf("%s = %v (present %v), want %s", ck.name, v, ok, ck.want)
		}
	}
}
