// Package zab is zkd's atomic broadcast: ZooKeeper's ordered, replicated
// log of transactions, built on hashicorp/raft.
//
// A Node holds one member's replicated state: the datatree and the session
// table (the FSM in fsm.go), raft, and raft's storage. The server hands it
// client writes (Submit, or SubmitFor for writes a follower forwarded) and
// reads the tree directly.
//
// # Entries and zxids
//
// A raft log entry is one entryKind byte and a jute body (entry.go): a
// client request as the client sent it (kindRequest), several of them
// packed (kindBatch), or the leader's housekeeping (session expiry,
// container and TTL sweeps, /zookeeper/config, the fencing key). The FSM
// validates and applies each request at apply time, as ZooKeeper's
// PrepRequestProcessor would decide, so validation and application never
// disagree. Every request gets its own zxid, (raft term << 32) | counter,
// counted in apply order, so every member computes the same ones; a failed
// write consumes its zxid, as in ZooKeeper. Nothing in apply reads a
// clock, a random source or map order: the leader stamps the time into
// the entry.
//
// # The write path
//
// The leader packs the writes that wait for the log into one entry
// (batch.go): a batch is proposed at once when none of this member's
// batches is in flight, otherwise the writes wait and go together when one
// lands: when it commits, before its writes apply, the apply goroutine
// proposes them, so their fsync overlaps that apply (or, up to
// Config.MaxInflightBatches, sooner, once as many wait as the last batch
// held: two batches in flight standalone, one in an ensemble, where each
// entry costs every member an AppendEntries and an fdatasync). Under load
// the log holds one entry per group commit,
// and raft's costs per entry (its future, the append, AppendEntries to
// each follower, commit and apply) are paid per batch. When a batch commits
// with nothing behind it, the leader tells its followers at once
// (Config.OnCommitted, commitnotice.go), and each hands its raft the
// AppendEntries that carries that commit, rather than waiting for raft's
// CommitTimeout; nothing more enters the log.
//
// A standalone member, once raft has started it and applied its log,
// writes its log directly (solo.go): one committer goroutine packs what
// waits, appends it in raft's record format with one fdatasync, applies
// it and answers, with one goroutine hand-off per batch where raft has
// two. A batch of 16 requests or more leaves its replies' socket writes
// to a replier goroutine (Later), so the committer appends the next batch
// meanwhile; each reply still claims its connection on the committer, so
// a session's replies and events keep zxid order. Raft still recovers the
// member at start, and the data directory stays one raft reads.
//
// In an ensemble the leader writes its own log while the followers write
// theirs (the Raft thesis, §10.2.1): its append returns once the records
// are written, and the log's goroutine fdatasyncs them at once (wal's
// deferred.go). Raft then counts the leader towards a commit before its
// write is durable, so zkd keeps the rule outside raft: an entry applies,
// here or anywhere, only once it is on the leader's disk too (the FSM
// waits for it; the commit index the leader's AppendEntries carry is
// capped at its durable index; commit notices go out after apply). An
// acknowledged write is thus on the disks of a majority, the leader's
// among them, as before; only the two fdatasyncs no longer run in series.
//
// Raft's log lives in a segment log (package wal) in the data directory's
// wal folder, behind a byte-bounded cache of recent entries (logstore.go):
// one pwrite and one fdatasync per append into preallocated files. Raft's
// stable store and the snapshots live in Pebble (package store). A data
// directory of a zkd that kept the log in Pebble has it moved at start.
//
// A request applies on every member; the member that submitted it
// completes its Future, which the server turns into the reply. Snapshots
// are taken every Config.SnapshotThreshold writes (ZooKeeper's snapCount)
// and at a clean stop; a restart loads the newest and replays the log tail.
//
// # A slow leader disk
//
// hashicorp/raft counts the leader's own log write in every commit, so a
// leader whose fdatasync stalls holds up the whole ensemble. A goroutine
// outside the FSM (handoff.go) watches the segment log's write in
// progress (wal.Log.SyncingSince); once the leader's has run for one
// tickTime (within 0.5-1 s, Config.SyncStallLimit), it asks raft to hand
// leadership to a healthy, up-to-date voter (Config.HandoffTargets), holds
// the writes that arrive meanwhile, and once another member leads passes
// its own clients' writes on (Config.Reroute). One SLOW DISK line and
// Observer.LeadershipHandedOff per hand-off; at most one per member every
// 10 s, and never straight back to the member leadership came from.
//
// # Divergence detection
//
// Members compare ZooKeeper's tree digest (datatree.TreeDigest, digest
// version 2) at the same zxid, through the log, so that apply stays
// deterministic (digest.go). Every member records its digest after each
// entry it applies. The leader writes the newest (zxid, digest) it
// recorded into each kindBatch entry it proposes; that entry lands after
// the one that reached the zxid, so every member applying it recorded its
// own digest at that zxid, and compares before applying. A mismatch is
// counted (Observer.DigestMismatch: digest_mismatches_count) and handed
// to Config.OnDivergence, which stops the member (cmd/zkd: a DIVERGED
// line, status 70). An idle leader proposes an empty batch carrying its
// digest every 10s, so that a member diverged while nobody writes is
// caught too. The leader's digest is the reference, as in ZooKeeper. Config.NoDigest (zookeeper.digest.enabled=false) leaves the
// digest out of the entries.
//
// # Layers
//
// zkd's packages depend one way, cmd → {server, quorum} → zab →
// {datatree, session} → jute; cmd/internal/layers checks it.
// zab imports datatree, session and jute, never server, quorum or cmd.
// It also holds the leaves that server and quorum both use, so that
// neither reaches into the other: zab/fencing (fencing tokens) and
// zab/tlsconf (TLS from ZooKeeper's ssl.* settings).
package zab
