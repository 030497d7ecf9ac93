// Package zkmetrics holds ZooKeeper 3.8's monitoring figures as zkd
// measures them: counters, summaries (avg, min, max, count and sum, and for
// the detailed ones the p50, p95, p99 and p999 of a recent window) and
// summary sets keyed by a label, each under ZooKeeper's name and type. One
// Registry renders both mntr's zk_* lines, in the order they were
// registered, and the Prometheus exposition ZooKeeper's
// PrometheusMetricsProvider gives the same names (a summary becomes
// name{quantile=…}, name_count and name_sum; a set adds the label key).
//
// Only figures zkd can measure are registered; the ZooKeeper keys zkd has
// no counterpart for are listed, with the reason, in docs/monitor.md.
// Every method is safe for concurrent use and none blocks on I/O.
package zkmetrics
