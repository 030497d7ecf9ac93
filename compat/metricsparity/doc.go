// Package metricsparity pins zkd's monitoring output to ZooKeeper 3.8's.
//
// testdata holds what Debian's ZooKeeper 3.8 answered to mntr (standalone,
// and the leader and a follower of a 3-member ensemble) and to the admin
// monitor command after a fixed workload, recorded from the real server
// with
//
//	go test ./compat/metricsparity -run TestZooKeeperKeysMatchRecording -record
//
// TestZooKeeperKeysMatchRecording checks that the installed ZooKeeper still
// answers the recorded key set, so the list cannot drift;
// TestZkdReportsZooKeeperKeys runs zkd through the same workload and checks
// that every recorded key, and the Prometheus metric ZooKeeper's
// PrometheusMetricsProvider derives from it, is either reported by zkd or
// listed in docs/monitor.md as one zkd has no counterpart for (never
// both). Debian's package lacks the Prometheus provider's jar
// (zookeeper-prometheus-metrics), so ZooKeeper's Prometheus names are
// derived from the mntr keys as that provider derives them: one metric per
// counter, gauge or summary, the summary's avg/min/max/cnt/sum and
// percentile lines becoming name{quantile=…}, name_count and name_sum.
package metricsparity
