package server

import (
	"encoding/binary"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkd/zkd/datatree"
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
	fsync, snapshot, election    *zkmetrics.Summary
	commits, proposals, snaps    *zkmetrics.Counter
	looking                      *zkmetrics.Counter
	commitsRecv, proposalsRecv   *zkmetrics.Counter
	quorumAck                    *zkmetrics.Summary
	batchSize, flushTime         *zkmetrics.Summary
	packed                       *zkmetrics.Summary
	propagation, snapLoad        *zkmetrics.Summary
	dbInit, txnsLoad, txnsLoaded *zkmetrics.Summary
	unavailable, leaderUnavail   *zkmetrics.Summary
	syncQueued                   *zkmetrics.Counter
	digestMismatches             *zkmetrics.Counter
	slowDiskHandoffs             *zkmetrics.Counter
	writeFinal                   *zkmetrics.Summary
	// Leader figures: proposal sizes (-1 until the first, as ZooKeeper's
	// BufferStats) and when leadership began (unix ns; 0: not leading).
	lastProposal, minProposal, maxProposal atomic.Int64
	leadingSince                           atomic.Int64

	// From the server.
	readLatency, updateLatency *zkmetrics.Summary
	connectionRequests         *zkmetrics.Counter
	responseBytes              *zkmetrics.Counter
	connectionDrops            *zkmetrics.Counter
	watchBytes                 *zkmetrics.Counter
	sessionlessExpired         *zkmetrics.Counter
	sessionsExpired            *zkmetrics.Counter
	readPerNS, writePerNS      *zkmetrics.SummarySet
	watchFired                 map[int32]*zkmetrics.Summary // by event type
	// Sizes of replies sent, without their length prefix, as ZooKeeper's
	// BufferStats: -1 until the first.
	lastResponse, minResponse, maxResponse atomic.Int64

	// The pipeline's stages under ZooKeeper's processor names: the
	// reader (prep), a read's execution (final); and the TLS handshakes.
	prepQueued            *zkmetrics.Counter
	prepTime, readFinal   *zkmetrics.Summary
	unsuccessfulHandshake *zkmetrics.Counter
	outstandingHandshakes atomic.Int64
}

// NewZKMetrics returns empty figures.
func NewZKMetrics() *ZKMetrics {
	r := zkmetrics.NewRegistry()
	m := &ZKMetrics{reg: r}
	m.reset()
	m.commits = r.Counter("commit_count", "Log entries applied while leading an ensemble, log replay at start included.")
	m.proposals = r.Counter("proposal_count", "Requests this member proposed to the log as an ensemble's leader.")
	m.commitsRecv = r.Counter("learner_commit_received_count", "Log entries applied while following, log replay at start included.")
	m.proposalsRecv = r.Counter("learner_proposal_received_count", "Command entries received from the leader and stored while following.")
	m.snaps = r.Counter("snap_count", "Snapshots written.")
	m.looking = r.Counter("looking_count", "Times this ensemble member went looking for a leader.")
	m.connectionRequests = r.Counter("connection_request_count", "Connect requests let through by the connection throttle (4-letter words are not counted).")
	m.responseBytes = r.Counter("response_bytes", "Bytes of replies sent to clients, without length prefixes or watch events.")
	m.watchBytes = r.Counter("watch_bytes", "Bytes of watch events sent to clients, without length prefixes.")
	m.connectionDrops = r.Counter("connection_drop_count", "Connections the client closed (end of stream on read).")
	m.sessionlessExpired = r.Counter("sessionless_connections_expired", "Connections closed for sending no connect request within the session timeout.")
	m.sessionsExpired = r.Counter("stale_sessions_expired", "Sessions this member expired as leader (or standalone) for missing their timeout.")
	m.prepQueued = r.Counter("prep_processor_request_queued", "Requests read from clients and handed to the pipeline (connect requests and pings included).")
	m.syncQueued = r.Counter("sync_processor_request_queued", "Log entries of the node's own (requests, session expiries, housekeeping) stored in this member's log.")
	m.digestMismatches = r.Counter("digest_mismatches_count", "Times this member's tree digest differed from the leader's at the same zxid (the member then stops).")
	m.slowDiskHandoffs = r.Counter("leader_slow_disk_handoffs", "Times this member, leading, handed leadership to another member because its raft log write to disk stalled past the limit (zkd only; the SLOW DISK log line says how long).")
	m.unsuccessfulHandshake = r.Counter("unsuccessful_handshake", "TLS handshakes with clients that failed.")
	m.fsync = r.Summary("fsynctime", "Duration of each fsync of the log's write-ahead log, in ms.", false)
	m.snapshot = r.Summary("snapshottime", "Duration of each snapshot, in ms.", false)
	m.election = r.Summary("election_time", "Time an ensemble member went without a leader, in ms.", false)
	m.batchSize = r.Summary("sync_processor_batch_size", "Log entries stored per fsynced batch (group commit).", false)
	m.packed = r.Summary("packed_writes", "Client writes the leader packed into one log entry (zkd only).", false)
	m.flushTime = r.Summary("sync_processor_queue_flush_time_ms", "Time to commit one batch of log entries, fsync included, in ms.", true)
	m.propagation = r.Summary("propagation_latency", "Time from the leader stamping a request to its apply here, in ms (clocks compared across members).", true)
	m.snapLoad = r.Summary("startup_snap_load_time", "Time to load the snapshot at start, in ms.", false)
	m.dbInit = r.Summary("dbinittime", "Time from opening the log at start until every entry it held was applied, in ms.", false)
	m.txnsLoad = r.Summary("startup_txns_load_time", "Time from loading the snapshot at start until the log it held was applied, in ms.", false)
	m.txnsLoaded = r.Summary("startup_txns_loaded", "Log entries replayed at start on top of the snapshot.", false)
	m.quorumAck = r.Summary("quorum_ack_latency", "Time from the leader proposing a request to its commit and apply, in ms.", true)
	m.prepTime = r.Summary("prep_process_time", "Time from reading a request to handing it to the pipeline (decoded, checked, a write given to the log), in ms.", false)
	m.unavailable = r.Summary("unavailable_time", "Time an ensemble member went without a leader, in ms.", false)
	m.leaderUnavail = r.Summary("leader_unavailable_time", "Time without a leader that ended with this member leading, in ms.", false)
	m.readFinal = r.Summary("read_final_proc_time_ms", "Time to execute a read against the tree and queue its reply, in ms.", true)
	m.writeFinal = r.Summary("write_final_proc_time_ms", "Time to apply a request entry to the tree and wake its waiter, in ms.", true)
	m.readLatency = r.Summary("readlatency", "Latency of requests that are not log entries, in ms.", true)
	m.updateLatency = r.Summary("updatelatency", "Latency of writes through the log, in ms.", true)
	m.watchFired = map[int32]*zkmetrics.Summary{
		jute.EventNodeCreated:         r.Summary("node_created_watch_count", "Watchers notified per node-created trigger.", false),
		jute.EventNodeDeleted:         r.Summary("node_deleted_watch_count", "Watchers notified per node-deleted trigger.", false),
		jute.EventNodeDataChanged:     r.Summary("node_changed_watch_count", "Watchers notified per data-changed trigger.", false),
		jute.EventNodeChildrenChanged: r.Summary("node_children_watch_count", "Watchers notified per children-changed trigger.", false),
	}
	m.readPerNS = r.SummarySet("read_per_namespace", "Bytes read per top-level znode: path, data or child names, and 68 for the Stat, as ZooKeeper counts them.", false)
	m.writePerNS = r.SummarySet("write_per_namespace", "Bytes written per top-level znode: path and data of each node created, set or deleted.", false)
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
		Committed: func(leader bool) {
			if leader {
				m.commits.Inc()
			} else {
				m.commitsRecv.Inc()
			}
		},
		Packed: func(requests int) { m.packed.Observe(int64(requests)) },
		Proposed: func(size, requests int) {
			// As ZooKeeper's, one proposal per request: a packed entry
			// counts its requests.
			m.proposals.Add(int64(max(requests, 1)))
			noteSize(&m.lastProposal, &m.minProposal, &m.maxProposal, int64(size))
		},
		ProposalReceived: func(n int) { m.proposalsRecv.Add(int64(n)) },
		SessionsExpired:  func(n int) { m.sessionsExpired.Add(int64(n)) },
		Appended: func(n int, d time.Duration) {
			m.batchSize.Observe(int64(n))
			m.flushTime.Observe(d.Milliseconds())
		},
		Propagated: func(d time.Duration) { m.propagation.Observe(d.Milliseconds()) },
		Loaded: func(total, replay time.Duration, entries uint64) {
			m.dbInit.Observe(total.Milliseconds())
			m.txnsLoad.Observe(replay.Milliseconds())
			m.txnsLoaded.Observe(int64(entries))
		},
		Restored: func(d time.Duration, atStart bool) {
			if atStart {
				m.snapLoad.Observe(d.Milliseconds())
			}
		},
		QuorumAcked: func(d time.Duration) { m.quorumAck.Observe(d.Milliseconds()) },
		Leading: func(l bool) {
			var since int64
			if l {
				since = time.Now().UnixNano()
			}
			m.leadingSince.Store(since)
		},
		ElectionStarted: m.looking.Inc,
		ElectionDone:    func(d time.Duration) { m.election.Observe(d.Milliseconds()) },
		Unavailable: func(d time.Duration, leading bool) {
			m.unavailable.Observe(d.Milliseconds())
			if leading {
				m.leaderUnavail.Observe(d.Milliseconds())
			}
		},
		CommandsStored:      func(n int) { m.syncQueued.Add(int64(n)) },
		RequestApplied:      func(d time.Duration) { m.writeFinal.Observe(d.Milliseconds()) },
		DigestMismatch:      m.digestMismatches.Inc,
		LeadershipHandedOff: m.slowDiskHandoffs.Inc,
	}
}

// notePrepared records one request handed to the pipeline, read at
// start: prep_processor_request_queued and prep_process_time.
func (m *ZKMetrics) notePrepared(start time.Time) {
	m.prepQueued.Inc()
	m.prepTime.ObserveSince(start)
}

// reset clears the registry's counters and summaries and the reply sizes.
func (m *ZKMetrics) reset() {
	if m.reg != nil {
		m.reg.Reset()
	}
	for _, v := range []*atomic.Int64{&m.lastResponse, &m.minResponse, &m.maxResponse, &m.lastProposal, &m.minProposal, &m.maxProposal} {
		v.Store(-1)
	}
}

// noteResponse records one frame sent, length prefix included: its size
// without the prefix, and for a reply (not a watch event, which
// watch_bytes counts) the bytes, as ZooKeeper's response_bytes.
func (m *ZKMetrics) noteResponse(frame []byte) {
	size := int64(len(frame) - 4)
	if len(frame) < 8 || int32(binary.BigEndian.Uint32(frame[4:8])) != jute.XidNotification {
		m.responseBytes.Add(size)
	}
	noteSize(&m.lastResponse, &m.minResponse, &m.maxResponse, size)
}

// noteSize records size in ZooKeeper's BufferStats: the last, the
// smallest and the largest (-1: none yet).
func noteSize(last, lo, hi *atomic.Int64, size int64) {
	last.Store(size)
	for {
		cur := lo.Load()
		if (cur >= 0 && cur <= size) || lo.CompareAndSwap(cur, size) {
			break
		}
	}
	for {
		cur := hi.Load()
		if cur >= size || hi.CompareAndSwap(cur, size) {
			break
		}
	}
}

// statOverhead is what ZooKeeper adds to every read in
// read_per_namespace for the Stat (DataTree.STAT_OVERHEAD_BYTES).
const statOverhead = 68

// noteRead records a getData, exists or getChildren of path that returned
// n bytes of data or child names, as ZooKeeper's DataTree.updateReadStat.
func (m *ZKMetrics) noteRead(path string, n int) {
	if ns, ok := topNamespace(path); ok {
		m.readPerNS.Observe(ns, int64(len(path)+n+statOverhead))
	}
}

// topNamespace is path's first component; the root has none.
func topNamespace(path string) (string, bool) {
	ns := strings.TrimPrefix(path, "/")
	if i := strings.IndexByte(ns, '/'); i >= 0 {
		ns = ns[:i]
	}
	return ns, ns != ""
}

// namesLen is the total length of child names.
func namesLen(kids []string) int {
	n := 0
	for _, k := range kids {
		n += len(k)
	}
	return n
}

// TreeObserver returns the datatree.Observer that feeds
// write_per_namespace and the node_*_watch_count summaries, for
// zab.Config.Tree.
func (m *ZKMetrics) TreeObserver() datatree.Observer {
	return datatree.Observer{
		Wrote: func(path string, n int) {
			if ns, ok := topNamespace(path); ok {
				m.writePerNS.Observe(ns, int64(n))
			}
		},
		WatchesFired: func(typ int32, n int) {
			if s := m.watchFired[typ]; s != nil {
				s.Observe(int64(n))
			}
		},
	}
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
	g("outstanding_tls_handshake", "TLS handshakes with clients in progress.", always(func() float64 { return float64(s.zm.outstandingHandshakes.Load()) }))
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
	g("leader_uptime", "Time this member has led, in ms.", leader(func(EnsembleStats) float64 {
		if since := s.zm.leadingSince.Load(); since != 0 {
			return float64(time.Since(time.Unix(0, since)).Milliseconds())
		}
		return 0
	}))
	g("last_proposal_size", "Size of the last entry proposed, in bytes (-1: none yet).", leader(func(EnsembleStats) float64 { return float64(s.zm.lastProposal.Load()) }))
	g("max_proposal_size", "Largest entry proposed, in bytes (-1: none yet).", leader(func(EnsembleStats) float64 { return float64(s.zm.maxProposal.Load()) }))
	g("min_proposal_size", "Smallest entry proposed, in bytes (-1: none yet).", leader(func(EnsembleStats) float64 { return float64(s.zm.minProposal.Load()) }))
	r.CounterFunc("large_requests_rejected", "Frames refused for exceeding jute.maxbuffer.", s.stats.largeRequestsRejected.Load)
	r.CounterFunc("connection_rejected", "Connections refused by maxClientCnxns, maxCnxns, the connection throttle or a lack of file descriptors.", s.stats.connectionRejected.Load)
	r.CounterFunc("bytes_received_count", "Bytes received from clients.", s.stats.bytesReceived.Load)
	r.CounterFunc("throttled_ops", "Requests answered ThrottledOp after waiting past zookeeper.throttled_op_wait_time.", s.throttle.throttledOps.Load)
	r.CounterFunc("stale_requests_dropped", "Requests dropped at the request throttle because their connection closed.", s.throttle.stale.Load)
	s.registerConnThrottle(r)
}
