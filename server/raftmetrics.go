package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RaftStats are the replication log's figures exported on /metrics beside
// ZooKeeper's: raft's indexes and role, and the Pebble store's log size,
// commit and fsync latencies and snapshots.
type RaftStats struct {
	// Term is the current raft term; Leader reports whether this member
	// leads it.
	Term   uint64
	Leader bool
	// LastLogIndex, CommitIndex and AppliedIndex are raft's indexes.
	LastLogIndex, CommitIndex, AppliedIndex uint64
	// LogEntries and LogBytes measure the retained log (bytes on disk,
	// entries still only in the memtable excluded).
	LogEntries, LogBytes uint64
	// Appends counts log batch appends, AppendedEntries their entries and
	// WALSyncs the raft log's fdatasyncs, all since start.
	Appends, AppendedEntries, WALSyncs uint64
	// LastCommitLatency is how long the last log batch commit took, fsync
	// included; LastFsyncLatency the last log fdatasync alone.
	LastCommitLatency, LastFsyncLatency time.Duration
	// DiskBytes is the store's total disk use.
	DiskBytes uint64
	// Snapshots counts stored snapshots; the LastSnapshot fields describe
	// the newest (zero when there is none).
	Snapshots         int
	LastSnapshotIndex uint64
	LastSnapshotSize  int64
	LastSnapshotAge   time.Duration
}

// RaftStatsReporter is an optional Backend extension giving the raft and
// Pebble figures for /metrics. RaftStats is called at each scrape, from
// the scraping goroutine; it must not block on the log.
type RaftStatsReporter interface {
	RaftStats() RaftStats
}

// raftCollector exports RaftStats under raft_* names.
type raftCollector struct {
	r RaftStatsReporter
}

// raftMetric is one exported RaftStats figure.
type raftMetric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(RaftStats) float64
}

var raftMetrics = func() []raftMetric {
	var out []raftMetric
	add := func(name, help string, typ prometheus.ValueType, v func(RaftStats) float64) {
		out = append(out, raftMetric{prometheus.NewDesc(name, help, nil, nil), typ, v})
	}
	g, c := prometheus.GaugeValue, prometheus.CounterValue
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	add("raft_term", "Current raft term.", g, func(r RaftStats) float64 { return float64(r.Term) })
	add("raft_is_leader", "1 if this member is the raft leader, else 0.", g, func(r RaftStats) float64 {
		if r.Leader {
			return 1
		}
		return 0
	})
	add("raft_last_log_index", "Index of the last raft log entry.", g, func(r RaftStats) float64 { return float64(r.LastLogIndex) })
	add("raft_commit_index", "Raft commit index.", g, func(r RaftStats) float64 { return float64(r.CommitIndex) })
	add("raft_applied_index", "Index of the last entry applied to the tree.", g, func(r RaftStats) float64 { return float64(r.AppliedIndex) })
	add("raft_log_entries", "Entries retained in the raft log.", g, func(r RaftStats) float64 { return float64(r.LogEntries) })
	add("raft_log_bytes", "On-disk bytes of the raft log (its segment files, preallocated).", g, func(r RaftStats) float64 { return float64(r.LogBytes) })
	add("raft_log_appends", "Raft log batch appends since start.", c, func(r RaftStats) float64 { return float64(r.Appends) })
	add("raft_log_appended_entries", "Raft log entries appended since start.", c, func(r RaftStats) float64 { return float64(r.AppendedEntries) })
	add("raft_log_commit_latency_ms", "Duration of the last raft log append, fdatasync included, in ms.", g,
		func(r RaftStats) float64 { return ms(r.LastCommitLatency) })
	add("raft_log_fsyncs", "Fdatasyncs of the raft log's segment files since start.", c, func(r RaftStats) float64 { return float64(r.WALSyncs) })
	add("raft_log_fsync_latency_ms", "Duration of the last fdatasync of the raft log, in ms.", g,
		func(r RaftStats) float64 { return ms(r.LastFsyncLatency) })
	add("raft_store_disk_bytes", "Disk space used by the raft log and the Pebble store (stable store and snapshots).", g, func(r RaftStats) float64 { return float64(r.DiskBytes) })
	add("raft_snapshots", "Snapshots stored.", g, func(r RaftStats) float64 { return float64(r.Snapshots) })
	add("raft_last_snapshot_index", "Raft index of the newest snapshot (0: none).", g, func(r RaftStats) float64 { return float64(r.LastSnapshotIndex) })
	add("raft_last_snapshot_size_bytes", "Size of the newest snapshot (0: none).", g, func(r RaftStats) float64 { return float64(r.LastSnapshotSize) })
	add("raft_last_snapshot_age_seconds", "Time since the newest snapshot was written (0: none).", g,
		func(r RaftStats) float64 { return r.LastSnapshotAge.Seconds() })
	return out
}()

// Describe implements prometheus.Collector.
func (rc *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range raftMetrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (rc *raftCollector) Collect(ch chan<- prometheus.Metric) {
	st := rc.r.RaftStats()
	for _, m := range raftMetrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(st))
	}
}
