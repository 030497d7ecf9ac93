package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// collector exports the server's figures under ZooKeeper's Prometheus
// names (ZKMetrics, computed at scrape time so that mntr, admin and
// Prometheus agree), beside the lock view's and the log's.
type collector struct {
	s     *Server
	locks *lockCollector
	raft  *raftCollector
}

// Collector returns a prometheus.Collector for the server's metrics, to be
// registered on a registry the caller owns: ZooKeeper's names (ZKMetrics),
// the lock view's (lock_paths, lock_waiters, lock_queue_length,
// lock_wait_time_ms; see locks.go) and, when the Backend implements
// RaftStatsReporter, the raft log and store figures (raft_*). Each
// Collector starts a lock-wait sampler that stops when the server closes.
func (s *Server) Collector() prometheus.Collector {
	c := &collector{s: s, locks: newLockCollector(s)}
	if r, ok := s.b.(RaftStatsReporter); ok {
		c.raft = &raftCollector{r: r}
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	c.s.zm.reg.Describe(ch)
	c.locks.Describe(ch)
	if c.raft != nil {
		c.raft.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.s.zm.reg.Collect(ch)
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
