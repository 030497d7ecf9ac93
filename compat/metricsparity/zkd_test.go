package metricsparity

import (
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestZkdReportsZooKeeperKeys runs zkd through the workload, standalone
// and as an ensemble's leader and follower, and checks each key ZooKeeper
// 3.8 answered (testdata): zkd reports it under the same name, or
// docs/monitor.md lists its metric with the reason zkd has none. It
// also checks the admin monitor command and the Prometheus names the same
// way, and that the figures zkd reports follow the workload.
func TestZkdReportsZooKeeperKeys(t *testing.T) {
	absent := absentInDocs(t)
	port := zkproc.FreePort(t)
	got, sa := byRole(t, zkproc.KindZkd, zkproc.Options{AdminServer: true, ExtraCfg: prometheusCfg(port)})
	reported := map[string]bool{} // metrics zkd reported in some role
	for _, role := range roles {
		want := readRecorded(t, role)
		have := keys(got[role])
		zkMetrics, zkdMetrics := map[string]bool{}, map[string]bool{}
		for _, k := range want {
			metric := metricOf(strings.TrimPrefix(k, "zk_"), want)
			zkMetrics[metric] = true
			switch _, listed := absent[metric]; {
			case slices.Contains(have, k):
				reported[metric] = true
				zkdMetrics[metric] = true
			case !listed:
				t.Errorf("%s: zkd lacks %s (metric %s), and docs/monitor.md does not list it", role, k, metric)
			}
		}
		t.Logf("%s: ZooKeeper 3.8 answers %d keys (%d metrics), zkd %d keys; of ZooKeeper's, zkd answers %d keys (%d metrics); the other metrics are documented",
			role, len(want), len(zkMetrics), len(have), countIn(want, have), len(zkdMetrics))
	}
	for metric := range absent {
		if reported[metric] {
			t.Errorf("docs/monitor.md lists %s as not reported, but zkd reports it", metric)
		}
	}
	checkValues(t, got)
	checkAdmin(t, sa, absent)
	checkPrometheus(t, port, absent)
}

// prometheusCfg turns on the Prometheus endpoint on 127.0.0.1:port.
func prometheusCfg(port int) map[string]string {
	return map[string]string{
		"metricsProvider.className": "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider",
		"metricsProvider.httpHost":  "127.0.0.1",
		"metricsProvider.httpPort":  strconv.Itoa(port),
	}
}

func countIn(want, have []string) int {
	n := 0
	for _, k := range want {
		if slices.Contains(have, k) {
			n++
		}
	}
	return n
}

// sameAsZooKeeper are keys whose values the workload fixes: zkd must
// answer what ZooKeeper 3.8 answered (testdata), in every role.
var sameAsZooKeeper = []string{
	"zk_cnt_" + namespace + "_write_per_namespace", "zk_sum_" + namespace + "_write_per_namespace",
	"zk_cnt_" + namespace + "_read_per_namespace", "zk_sum_" + namespace + "_read_per_namespace",
	"zk_cnt_node_changed_watch_count", "zk_sum_node_changed_watch_count",
	"zk_cnt_node_children_watch_count", "zk_sum_node_children_watch_count",
	"zk_cnt_node_created_watch_count", "zk_cnt_node_deleted_watch_count",
	"zk_local_sessions", "zk_quorum_size", "zk_cnt_dbinittime", "zk_watch_bytes",
	"zk_max_client_response_size", "zk_min_client_response_size", "zk_last_client_response_size",
	"zk_peer_state", "zk_server_state", "zk_ephemerals_count", "zk_watch_count",
}

// sameAsZooKeeperStandalone are traffic figures the workload fixes on a
// standalone server. An ensemble's members also carry the harness's
// readiness probes, which differ between zkproc's zkd and ZooKeeper
// starts, so they are not compared there.
var sameAsZooKeeperStandalone = []string{
	"zk_response_bytes", "zk_bytes_received_count", "zk_packets_received", "zk_packets_sent",
}

// checkValues checks that figures zkd reports follow the workload: those
// the workload fixes equal ZooKeeper's, the others at least what the
// workload did (23 writes and 22 reads under /parity, through the
// standalone server and a follower).
func checkValues(t *testing.T, got map[string]string) {
	t.Helper()
	for _, role := range roles {
		b, err := os.ReadFile(mntrFile(role))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range sameAsZooKeeper {
			zk, zkd := value(string(b), k), value(got[role], k)
			if zk != zkd {
				t.Errorf("%s: %s = %q, ZooKeeper 3.8 answered %q", role, k, zkd, zk)
			}
		}
	}
	if b, err := os.ReadFile(mntrFile("standalone")); err == nil {
		for _, k := range sameAsZooKeeperStandalone {
			if zk, zkd := value(string(b), k), value(got["standalone"], k); zk != zkd {
				t.Errorf("standalone: %s = %q, ZooKeeper 3.8 answered %q", k, zkd, zk)
			}
		}
	}
	num := func(role, key string) int64 {
		v := value(got[role], key)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Errorf("%s: %s = %q, not an integer", role, key, v)
		}
		return n
	}
	type atLeast struct {
		role, key string
		min       int64
	}
	var checks []atLeast
	for _, role := range []string{"standalone", "follower"} {
		checks = append(checks,
			atLeast{role, "zk_cnt_updatelatency", 23},
			atLeast{role, "zk_cnt_readlatency", 22},
			atLeast{role, "zk_connection_request_count", 1},
			atLeast{role, "zk_max_client_response_size", 16}, // a reply header at least
			atLeast{role, "zk_response_bytes", 45 * 20},
			// The workload's connect, 23 writes and 22 reads pass the
			// reader (prep); its 22 reads are executed here (final).
			atLeast{role, "zk_prep_processor_request_queued", 46},
			atLeast{role, "zk_cnt_prep_process_time", 46},
			atLeast{role, "zk_cnt_read_final_proc_time_ms", 22},
		)
	}
	for _, role := range roles {
		checks = append(checks,
			atLeast{role, "zk_cnt_fsynctime", 1}, // every write is synced
			atLeast{role, "zk_znode_count", 23},
			atLeast{role, "zk_cnt_sync_processor_batch_size", 1},
			atLeast{role, "zk_cnt_propagation_latency", 23},
			// Every member logs and applies the 23 writes.
			atLeast{role, "zk_sync_processor_request_queued", 23},
			atLeast{role, "zk_cnt_write_final_proc_time_ms", 23},
		)
	}
	checks = append(checks,
		atLeast{"leader", "zk_cnt_quorum_ack_latency", 23},
		atLeast{"leader", "zk_commit_count", 23},
		atLeast{"leader", "zk_proposal_count", 23},
		atLeast{"leader", "zk_min_proposal_size", 1},
		atLeast{"leader", "zk_leader_uptime", 1},
		atLeast{"follower", "zk_learner_commit_received_count", 23},
		atLeast{"follower", "zk_learner_proposal_received_count", 23},
		atLeast{"follower", "zk_cnt_election_time", 1},
		atLeast{"follower", "zk_looking_count", 1},
		atLeast{"leader", "zk_cnt_unavailable_time", 1},
		atLeast{"leader", "zk_cnt_leader_unavailable_time", 1},
		atLeast{"follower", "zk_cnt_unavailable_time", 1},
	)
	for _, c := range checks {
		if n := num(c.role, c.key); n < c.min {
			t.Errorf("%s: %s = %d, want at least %d", c.role, c.key, n, c.min)
		}
	}
	for _, k := range []string{"zk_commit_count", "zk_proposal_count", "zk_learner_commit_received_count"} {
		if n := num("standalone", k); n != 0 {
			t.Errorf("standalone: %s = %d; standalone ZooKeeper makes no proposals and reports 0", k, n)
		}
	}
	// ZooKeeper 3.8 counts a period without a leader on every member that
	// went looking, as leader_unavailable_time only on the one elected;
	// a standalone server never looks.
	for _, c := range []struct{ role, key string }{
		{"standalone", "zk_cnt_unavailable_time"}, {"standalone", "zk_cnt_leader_unavailable_time"},
		{"follower", "zk_cnt_leader_unavailable_time"},
	} {
		if n := num(c.role, c.key); n != 0 {
			t.Errorf("%s: %s = %d, ZooKeeper 3.8 answers 0", c.role, c.key, n)
		}
	}
	if p50, p999 := num("standalone", "zk_p50_updatelatency"), num("standalone", "zk_p999_updatelatency"); p50 > p999 {
		t.Errorf("standalone: p50 updatelatency %d > p999 %d", p50, p999)
	}
}

// checkAdmin checks the admin monitor command against ZooKeeper's
// recorded keys.
func checkAdmin(t *testing.T, s *zkproc.Server, absent map[string]string) {
	t.Helper()
	want, have := recordedAdmin(t), adminMonitorKeys(t, s)
	for _, k := range want {
		metric := metricOf(k, prefixed(want))
		if _, listed := absent[metric]; !listed && !slices.Contains(have, k) {
			t.Errorf("admin monitor: zkd lacks %s (metric %s), and docs/monitor.md does not list it", k, metric)
		}
	}
}

func prefixed(ks []string) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = "zk_" + k
	}
	return out
}

// checkPrometheus scrapes the standalone zkd's /metrics and checks that
// every metric ZooKeeper's Prometheus provider would export for the
// recorded keys is there with ZooKeeper's type, unless documented absent.
func checkPrometheus(t *testing.T, port int, absent map[string]string) {
	t.Helper()
	fams := scrape(t, port)
	want := map[string]dto.MetricType{}
	for _, role := range roles {
		all := readRecorded(t, role)
		for _, k := range all {
			key := strings.TrimPrefix(k, "zk_")
			metric := metricOf(key, all)
			if slices.Contains(infoKeys, metric) {
				continue
			}
			typ := dto.MetricType_GAUGE
			if metric != key {
				typ = dto.MetricType_SUMMARY
			}
			if role == "standalone" || want[metric] == 0 {
				want[metric] = typ
			}
		}
	}
	exported := 0
	for metric, typ := range want {
		if _, listed := absent[metric]; listed {
			continue
		}
		f, ok := fams[metric]
		if ok {
			exported++
		}
		if !ok {
			if !leaderOnly(metric) && metric != "quorum_size" {
				t.Errorf("/metrics lacks %s, and docs/monitor.md does not list it", metric)
			}
			continue
		}
		// ZooKeeper's counters and gauges both look like plain numbers in
		// mntr; only summaries are told apart there.
		if got := f.GetType(); (typ == dto.MetricType_SUMMARY) != (got == dto.MetricType_SUMMARY) {
			t.Errorf("/metrics: %s is a %v, ZooKeeper's is a %v", metric, got, typ)
		}
	}
	t.Logf("Prometheus: ZooKeeper's provider derives %d metrics from the recorded keys; %d are documented as absent; a standalone zkd exports %d (the ensemble-only ones are checked on mntr)",
		len(want), len(absent), exported)
}

// leaderOnly reports whether metric is one only an ensemble's leader
// exports (checked through mntr; the scraped server is standalone).
func leaderOnly(metric string) bool {
	switch metric {
	case "learners", "synced_followers", "synced_non_voting_followers", "synced_observers", "pending_syncs",
		"leader_uptime", "last_proposal_size", "min_proposal_size", "max_proposal_size":
		return true
	}
	return false
}

func scrape(t *testing.T, port int) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}
