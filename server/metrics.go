package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metric is one value the collector reports, with ZooKeeper's metric name.
type metric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(Stats) float64
}

// collector exports the server's statistics under ZooKeeper's Prometheus
// names, computed at scrape time so that mntr, admin and Prometheus agree.
type collector struct {
	s       *Server
	metrics []metric
	locks   *lockCollector
	raft    *raftCollector
}

// Collector returns a prometheus.Collector for the server's metrics, to be
// registered on a registry the caller owns: ZooKeeper's names, the lock
// view's (lock_paths, lock_waiters, lock_queue_length, lock_wait_time_ms;
// see locks.go) and, when the Backend implements RaftStatsReporter, the
// raft and Pebble figures (raft_*, pebble_*). Each Collector starts a
// lock-wait sampler that stops when the server closes.
func (s *Server) Collector() prometheus.Collector {
	c := &collector{s: s, locks: newLockCollector(s)}
	if r, ok := s.b.(RaftStatsReporter); ok {
		c.raft = &raftCollector{r: r}
	}
	add := func(name, help string, typ prometheus.ValueType, v func(Stats) float64) {
		c.metrics = append(c.metrics, metric{prometheus.NewDesc(name, help, nil, nil), typ, v})
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	tree := func(f func(*Server) float64) func(Stats) float64 {
		return func(Stats) float64 {
			if s.b.Tree() == nil {
				return 0
			}
			return f(s)
		}
	}
	add("znode_count", "Number of znodes.", gauge, func(st Stats) float64 { return float64(st.NodeCount) })
	add("watch_count", "Number of watches.", gauge, tree(func(s *Server) float64 { return float64(s.b.Tree().WatchCount()) }))
	add("ephemerals_count", "Number of ephemeral znodes.", gauge, tree(func(s *Server) float64 { return float64(s.b.Tree().EphemeralCount()) }))
	add("approximate_data_size", "Approximate size of znode paths and data, in bytes.", gauge,
		tree(func(s *Server) float64 { return float64(s.b.Tree().ApproxDataSize()) }))
	add("num_alive_connections", "Number of open client connections.", gauge, func(st Stats) float64 { return float64(st.Connections) })
	add("outstanding_requests", "Requests received and not yet answered.", gauge, func(st Stats) float64 { return float64(st.Outstanding) })
	add("packets_received", "Client packets received.", counter, func(st Stats) float64 { return float64(st.PacketsReceived) })
	add("packets_sent", "Client packets sent.", counter, func(st Stats) float64 { return float64(st.PacketsSent) })
	add("avg_latency", "Mean request latency, in ms.", gauge, func(st Stats) float64 { return st.AvgLatency })
	add("min_latency", "Minimum request latency, in ms.", gauge, func(st Stats) float64 { return float64(st.MinLatency) })
	add("max_latency", "Maximum request latency, in ms.", gauge, func(st Stats) float64 { return float64(st.MaxLatency) })
	add("global_sessions", "Number of sessions.", gauge, func(Stats) float64 { return float64(s.globalSessions()) })
	add("connection_rejected", "Connections refused by maxClientCnxns.", counter,
		func(Stats) float64 { return float64(s.stats.connectionRejected.Load()) })
	add("auth_failed_count", "Failed authentications.", counter, func(Stats) float64 { return float64(s.stats.authFailed.Load()) })
	add("large_requests_rejected", "Frames refused for exceeding jute.maxbuffer.", counter,
		func(Stats) float64 { return float64(s.stats.largeRequestsRejected.Load()) })
	add("bytes_received_count", "Bytes received from clients.", counter, func(Stats) float64 { return float64(s.stats.bytesReceived.Load()) })
	add("uptime", "Time since the server started, in ms.", gauge, func(Stats) float64 { return float64(s.uptimeMs()) })
	return c
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
	ch <- readLatencyDesc
	ch <- updateLatencyDesc
	c.locks.Describe(ch)
	if c.raft != nil {
		c.raft.Describe(ch)
	}
}

// Latency summaries as ZooKeeper names them; count and sum only.
var (
	readLatencyDesc   = prometheus.NewDesc("readlatency", "Latency of requests that are not log entries, in ms.", nil, nil)
	updateLatencyDesc = prometheus.NewDesc("updatelatency", "Latency of writes through the log, in ms.", nil, nil)
)

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(st))
	}
	for desc, l := range map[*prometheus.Desc]*latencyStats{
		readLatencyDesc:   &c.s.stats.readLatency,
		updateLatencyDesc: &c.s.stats.updateLatency,
	} {
		ch <- prometheus.MustNewConstSummary(desc, uint64(l.count.Load()), float64(l.sum.Load()), nil)
	}
	c.locks.Collect(ch)
	if c.raft != nil {
		c.raft.Collect(ch)
	}
}

// MetricsHandler serves /metrics for a registry holding the server's
// collector and the Go runtime and process collectors. Callers that also
// export other packages' metrics should build their own registry with
// Collector instead.
func (s *Server) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// globalSessions counts sessions through the Backend when it can, else the
// sessions connected here.
func (s *Server) globalSessions() int {
	if sc, ok := s.b.(SessionCounter); ok {
		return sc.SessionCount()
	}
	return s.sessionCount()
}
