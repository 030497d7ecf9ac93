package server

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/zkmetrics"
	"github.com/zkd/zkd/zab"
)

// ZKMetrics holds ZooKeeper 3.8's monitoring figures (mntr, the admin
// monitor command and /metrics): those the server measures itself and
// those fed from the replicated log through Observer. Create it with
// NewZKMetrics before opening the log, hand Observer to zab.Config and
// set Config.Metrics; a Server given none makes its own, whose log
// figures then stay empty.
type ZKMetrics struct {
	reg *zkmetrics.Registry

	// From the log (Observer).
	fsync, snapshot, election *zkmetrics.Summary
	commits, proposals, snaps *zkmetrics.Counter
	looking                   *zkmetrics.Counter

	// From the server.
	readLatency, updateLatency *zkmetrics.Summary
	connectionRequests         *zkmetrics.Counter
	responseBytes              *zkmetrics.Counter
	readPerNS, writePerNS      *zkmetrics.SummarySet
	// Sizes of replies sent, without their length prefix, as ZooKeeper's
	// BufferStats: -1 until the first.
	lastResponse, minResponse, maxResponse atomic.Int64
}

// NewZKMetrics returns empty figures.
func NewZKMetrics() *ZKMetrics {
	r := zkmetrics.NewRegistry()
	m := &ZKMetrics{reg: r}
	m.lastResponse.Store(-1)
	m.minResponse.Store(-1)
	m.maxResponse.Store(-1)
	m.commits = r.Counter("commit_count", "Log entries committed and applied on this member, log replay at start included.")
	m.proposals = r.Counter("proposal_count", "Entries this member proposed to the log as leader.")
	m.snaps = r.Counter("snap_count", "Snapshots written.")
	m.looking = r.Counter("looking_count", "Times this ensemble member went looking for a leader.")
	m.connectionRequests = r.Counter("connection_request_count", "Client connections accepted.")
	m.responseBytes = r.Counter("response_bytes", "Bytes of replies and events sent to clients, length prefixes included.")
	m.fsync = r.Summary("fsynctime", "Duration of each fsync of the log's write-ahead log, in ms.", false)
	m.snapshot = r.Summary("snapshottime", "Duration of each snapshot, in ms.", false)
	m.election = r.Summary("election_time", "Time an ensemble member went without a leader, in ms.", false)
	m.readLatency = r.Summary("readlatency", "Latency of requests that are not log entries, in ms.", true)
	m.updateLatency = r.Summary("updatelatency", "Latency of writes through the log, in ms.", true)
	m.readPerNS = r.SummarySet("read_per_namespace", "Bytes (path and data) read per top-level znode.", false)
	m.writePerNS = r.SummarySet("write_per_namespace", "Bytes (path and data) written per top-level znode, on the member the client is connected to.", false)
	return m
}

// Observer returns the zab.Observer that feeds the log's figures.
func (m *ZKMetrics) Observer() zab.Observer {
	return zab.Observer{
		WALSync: func(d time.Duration) { m.fsync.Observe(d.Milliseconds()) },
		Snapshot: func(d time.Duration) {
			m.snaps.Inc()
			m.snapshot.Observe(d.Milliseconds())
		},
		Committed:       m.commits.Inc,
		Proposed:        m.proposals.Inc,
		ElectionStarted: m.looking.Inc,
		ElectionDone:    func(d time.Duration) { m.election.Observe(d.Milliseconds()) },
	}
}

// reset clears the registry's counters and summaries and the reply sizes.
func (m *ZKMetrics) reset() {
	m.reg.Reset()
	m.lastResponse.Store(-1)
	m.minResponse.Store(-1)
	m.maxResponse.Store(-1)
}

// noteResponse records one frame of n bytes, length prefix included.
func (m *ZKMetrics) noteResponse(n int) {
	m.responseBytes.Add(int64(n))
	size := int64(n - 4)
	m.lastResponse.Store(size)
	for {
		cur := m.minResponse.Load()
		if (cur >= 0 && cur <= size) || m.minResponse.CompareAndSwap(cur, size) {
			break
		}
	}
	for {
		cur := m.maxResponse.Load()
		if cur >= size || m.maxResponse.CompareAndSwap(cur, size) {
			break
		}
	}
}

// notePath records n bytes read or written under path's top-level znode,
// as ZooKeeper's read_per_namespace and write_per_namespace; the root
// itself belongs to no namespace.
func notePath(set *zkmetrics.SummarySet, path string, n int) {
	ns := strings.TrimPrefix(path, "/")
	if ns == "" {
		return
	}
	if i := strings.IndexByte(ns, '/'); i >= 0 {
		ns = ns[:i]
	}
	set.Observe(ns, int64(n))
}

// writeBytes is what ZooKeeper counts in write_per_namespace for a write
// request, its path and data; 0 for other writes, which it does not count.
func writeBytes(rec any) int {
	switch r := rec.(type) {
	case *jute.CreateRequest:
		return len(r.Path) + len(r.Data)
	case *jute.CreateTTLRequest:
		return len(r.Path) + len(r.Data)
	case *jute.SetDataRequest:
		return len(r.Path) + len(r.Data)
	}
	return 0
}

// EnsembleReporter is an optional Backend extension for an ensemble
// member's mntr figures; ok is false on a standalone server.
type EnsembleReporter interface {
	EnsembleStats() (EnsembleStats, bool)
}

// EnsembleStats are ZooKeeper's ensemble-only monitoring figures.
type EnsembleStats struct {
	// PeerState is ZooKeeper's zk_peer_state: "leading - broadcast",
	// "following - broadcast", "observing - broadcast", or "looking -
	// election" while no leader is known.
	PeerState string
	// QuorumSize is the number of voters.
	QuorumSize int
	// Leader reports whether the rest apply (the leader's keys).
	Leader bool
	// Learners, SyncedFollowers, SyncedObservers and PendingSyncs are as
	// in quorum.LeaderStats.
	Learners, SyncedFollowers, SyncedObservers, PendingSyncs int
}

// registerMonitor adds the figures read from the server and its Backend
// at scrape time: ZooKeeper's gauges, in its order, and the counters the
// server keeps itself.
func (s *Server) registerMonitor() {
	r := s.zm.reg
	r.Info("version", func() (string, bool) { return s.fullVersion(), true })
	r.Info("server_state", func() (string, bool) { return s.b.Mode(), true })
	ens := func() (EnsembleStats, bool) {
		if er, ok := s.b.(EnsembleReporter); ok {
			return er.EnsembleStats()
		}
		return EnsembleStats{}, false
	}
	r.Info("peer_state", func() (string, bool) {
		e, ok := ens()
		return e.PeerState, ok
	})
	always := func(f func() float64) func() (float64, bool) { return func() (float64, bool) { return f(), true } }
	treeInt := func(f func() int64) func() (float64, bool) {
		return func() (float64, bool) {
			if s.b.Tree() == nil {
				return 0, true
			}
			return float64(f()), true
		}
	}
	g := func(name, help string, f func() (float64, bool)) { r.Gauge(name, help, true, f) }
	g("ephemerals_count", "Number of ephemeral znodes.", treeInt(func() int64 { return int64(s.b.Tree().EphemeralCount()) }))
	g("num_alive_connections", "Number of open client connections.", always(func() float64 { return float64(len(s.connections())) }))
	r.Gauge("avg_latency", "Mean request latency, in ms.", false, always(func() float64 {
		_, avg, _, _ := s.stats.latency.snapshot()
		return avg
	}))
	g("outstanding_requests", "Requests received and not yet answered.", always(func() float64 { return float64(max(s.stats.outstanding.Load(), 0)) }))
	g("znode_count", "Number of znodes.", treeInt(func() int64 { return int64(s.b.Tree().NodeCount()) }))
	g("global_sessions", "Number of sessions.", always(func() float64 { return float64(s.globalSessions()) }))
	g("local_sessions", "Number of local sessions: always 0, zkd has none (ZooKeeper's localSessionsEnabled off).", always(func() float64 { return 0 }))
	g("packets_sent", "Client packets sent.", always(func() float64 { return float64(s.stats.packetsSent.Load()) }))
	g("packets_received", "Client packets received.", always(func() float64 { return float64(s.stats.packetsReceived.Load()) }))
	g("last_client_response_size", "Size of the last reply, in bytes (-1: none yet).", always(func() float64 { return float64(s.zm.lastResponse.Load()) }))
	g("max_client_response_size", "Largest reply, in bytes (-1: none yet).", always(func() float64 { return float64(s.zm.maxResponse.Load()) }))
	g("min_client_response_size", "Smallest reply, in bytes (-1: none yet).", always(func() float64 { return float64(s.zm.minResponse.Load()) }))
	g("watch_count", "Number of watches.", treeInt(func() int64 { return int64(s.b.Tree().WatchCount()) }))
	g("auth_failed_count", "Failed authentications.", always(func() float64 { return float64(s.stats.authFailed.Load()) }))
	g("min_latency", "Minimum request latency, in ms.", always(func() float64 {
		lo, _, _, _ := s.stats.latency.snapshot()
		return float64(lo)
	}))
	fd := func(open bool) func() (float64, bool) {
		return func() (float64, bool) {
			maxFD, openFD, ok := fileDescriptors()
			if open {
				return float64(openFD), ok
			}
			return float64(maxFD), ok
		}
	}
	g("max_file_descriptor_count", "Limit on open file descriptors.", fd(false))
	g("approximate_data_size", "Approximate size of znode paths and data, in bytes.", treeInt(func() int64 { return s.b.Tree().ApproxDataSize() }))
	g("open_file_descriptor_count", "Open file descriptors.", fd(true))
	g("uptime", "Time since the server started, in ms.", always(func() float64 { return float64(s.uptimeMs()) }))
	g("max_latency", "Maximum request latency, in ms.", always(func() float64 {
		_, _, hi, _ := s.stats.latency.snapshot()
		return float64(hi)
	}))
	g("quorum_size", "Number of voters in the ensemble.", func() (float64, bool) {
		e, ok := ens()
		return float64(e.QuorumSize), ok
	})
	leader := func(f func(EnsembleStats) float64) func() (float64, bool) {
		return func() (float64, bool) {
			e, ok := ens()
			if !ok || !e.Leader {
				return 0, false
			}
			return f(e), true
		}
	}
	g("learners", "Members, followers and observers, in touch with this leader.", leader(func(e EnsembleStats) float64 { return float64(e.Learners) }))
	g("synced_followers", "Voters in touch with this leader and caught up.", leader(func(e EnsembleStats) float64 { return float64(e.SyncedFollowers) }))
	g("synced_non_voting_followers", "Non-voting followers: always 0, zkd has none besides observers.", leader(func(EnsembleStats) float64 { return 0 }))
	g("synced_observers", "Observers in touch with this leader and caught up.", leader(func(e EnsembleStats) float64 { return float64(e.SyncedObservers) }))
	g("pending_syncs", "Follower syncs in progress.", leader(func(e EnsembleStats) float64 { return float64(e.PendingSyncs) }))
	r.CounterFunc("large_requests_rejected", "Frames refused for exceeding jute.maxbuffer.", s.stats.largeRequestsRejected.Load)
	r.CounterFunc("connection_rejected", "Connections refused by maxClientCnxns.", s.stats.connectionRejected.Load)
	r.CounterFunc("bytes_received_count", "Bytes received from clients.", s.stats.bytesReceived.Load)
}
