// Package quorum makes zkd members an ensemble: membership from zoo.cfg's
// server.N lines, raft traffic between members, and forwarding of writes,
// session touches and syncs from followers and observers to the leader.
//
// # Ports
//
// Each server.N line names host:quorumPort:electionPort. Raft's
// NetworkTransport (hashicorp/raft's TCP protocol, over zkd's own stream
// layer) listens on the quorum port and carries AppendEntries, votes and
// snapshot installs; participants
// are raft voters and observers raft non-voters. The election port carries
// zkd's forwarding protocol: each follower keeps one ordered TCP stream to
// the leader's election port, so the writes of one client connection reach
// the log in the order the client sent them.
//
// Both ports are plaintext, mutual TLS (Config.PeerTLS, sslQuorum=true), or
// both (Config.PortUnification, ZooKeeper's quorum portUnification=true,
// the window of a rolling upgrade): each accepted connection's first byte
// tells TLS from plaintext (tlsconf.Sniff), and a connection the member's
// mode does not take is closed with a WARN line naming the two members'
// disagreement. What a member dials follows sslQuorum alone
// (Config.DialPlaintext), so a member asked for TLS never dials plaintext.
//
// # Forwarding
//
// A follower registers a pending future with its zab.Node, then sends the
// request with its own BootID and sequence number; the leader proposes it
// with that origin, and the follower completes its own future when the
// entry applies locally, so a client's reply always reflects the member it
// talks to. If the stream breaks, or the leader answers that it could not
// propose (it lost leadership), the future fails with zab.ErrNotLeader and
// the server closes the client's connection (ConnectionLoss), so the
// client retries elsewhere. When a batch commits with nothing behind it,
// the leader tells every member streaming to it (msgCommitted), which
// hands its raft the commit at once (commitnotice.go), so a forwarded
// write is answered one hop after it commits. While no leader is known
// (an election), a
// follower holds unsent requests for up to the hold timeout, retrying with
// jitter, as consul's RPC forwarding does.
//
// One connection's writes keep their order across a leader change. When a
// forwarded write is lost (its stream broke, or it could not be proposed),
// the writes queued behind it fail too, and the forwarder refuses every
// later write of the same client connection (zab.Request.Origin) — the
// server closes that connection after answering the lost write with
// ConnectionLoss, so nothing the client sent afterwards can land without
// it. A member that has just become leader sends its own clients' writes
// through the forwarder until its stream to the old leader is closed and
// the writes queued for it are in the log. A client that resumes its
// session on any member waits for a sync with the leader first (see
// SyncReattach): the new leader's barrier settles every entry of the old
// term, so the client reads the final outcome of the write it lost, as
// Curator's protected creates require.
//
// Followers batch the sessions that sent packets and send them to the
// leader every half tick, with how far they applied (raft index and zxid)
// and whether they serve; the leader sends back, at most once a second,
// its table of every member's progress (Member.Progress, the web
// console's Ensemble page); only the leader expires sessions, and a new
// leader restarts every session's clock, as does a leader that did not
// run for longer than two ticks and a second (stopped, or starved): the
// touches sent to it meanwhile still wait unread in its sockets. A follower's sync asks the leader
// to commit a barrier (which proves it still leads and that everything
// committed earlier applied there) and to return its applied index; the
// follower answers the client once it has applied that far.
//
// # Timing
//
// Raft's timeouts derive from zoo.cfg's tickTime (ms), initLimit and
// syncLimit (ticks):
//
//	HeartbeatTimeout   = syncLimit × tickTime / 5   (min 20ms)
//	ElectionTimeout    = HeartbeatTimeout
//	LeaderLeaseTimeout = HeartbeatTimeout
//	serving lease      = syncLimit × tickTime
//	transport timeout  = initLimit × tickTime      (per raft RPC, snapshots scale up)
//	forward hold       = syncLimit × tickTime
//	CommitTimeout      = 10ms                       (commit index to followers, when no notice tells them)
//
// With tickTime=200 and syncLimit=5, followers notice a silent leader
// within 200–400ms and a new one is elected some 200–400ms later: about a
// second from leader loss to the next acknowledged write. A leader whose
// process ended (kill -9, a crash) is not left to these timeouts: its
// followers' streams to it end and its election port refuses, and the
// voters left campaign at once, in turn by server id, as ZooKeeper's
// followers elect when their socket to the leader ends (leadergone.go).
// That failover takes tens of milliseconds whatever tickTime is. A leader that cannot
// reach a majority steps down after LeaderLeaseTimeout; a follower that
// has heard from no leader for the serving lease (syncLimit ticks, as in
// ZooKeeper) stops serving: Serving reports false and the server closes
// client connections and refuses new ones, so clients move to the
// majority side (CP). With readonlymode.enabled it keeps serving clients
// that asked for a read-only session.
//
// Stopping serving does not depend on the raft state alone: during an
// election followers are briefly candidates, and dropping every client
// then would make each failover worse. A member serves while it leads or
// while its last contact with a leader is younger than the serving lease,
// or for the serving lease after it handed leadership away because its
// disk was slow (zab's hand-off: its raft hears from the new leader only
// after writing the new term to that disk). Such a leader hands off to
// the voters its progress table shows ready, the least behind first, and
// the writes of its clients that it held meanwhile go to the new leader
// through the forwarder, in order with their next ones.
//
// # Read-only mode
//
// With readonlymode.enabled, a member that is not serving still accepts
// connections whose ConnectRequest asks for read-only: it answers reads
// from its tree, refuses writes with NotReadOnly (−119), reports Mode
// "read-only" (srvr, stat, isro "ro") and, once the quorum is back, closes
// those connections so that clients reconnect read-write. Read-only
// sessions never enter the log (their ids use server id 0).
//
// # Membership and reconfig
//
// Every member bootstraps raft with the server.N lines of its own zoo.cfg
// when it has no raft state, and a new leader writes that membership into
// /zookeeper/config (ZooKeeper's text, ending in version=0, or with
// reconfigEnabled version=<its term>00000000 as ZooKeeper 3.8 versions a
// static configuration with its first epoch's zxid) through the log when
// the node is empty. Each member dials the others by the
// addresses of its own zoo.cfg, so members may reach each other through
// proxies or NAT. Dynamic reconfig (op 16, gated by reconfigEnabled and,
// through the node's ACL, the super user) is a log entry decided on apply
// by Reconfig, as ZooKeeper's PrepRequestProcessor decides it (BadVersion,
// BadArguments, NoAuth); the new text carries version=<hex zxid of the
// entry>. Before proposing, the leader first finishes carrying out the
// previous change in raft's membership, waiting up to the hold timeout
// (syncLimit ticks), so that a reconfig sent right after another's reply
// is accepted as in ZooKeeper; it refuses a change while the membership
// still lags after that (ReconfigInProgress) and a change
// whose new voters are not mostly in touch with it (NewConfigNoQuorum:
// members that talked to it on the election port within the serving lease,
// or joiners listening on their election port). After the entry applies,
// the leader adds, updates and removes raft servers to match; a leader that
// leaves hands leadership to a remaining voter, which finishes the change.
// A removed member keeps running and can be added back. Standalone, the
// reconfig op answers Unimplemented (ReconfigDisabled without
// reconfigEnabled), as ZooKeeper 3.8 does.
//
// # Members whose data went back
//
// A member of an ensemble starts behind a vote fence around raft's
// transport (rejoin.go): it grants no vote or pre-vote, asks for none and
// refuses leadership transfers. It announces its incarnation (a counter
// raised at each start and every second, synced before it is sent, with
// a random nonce of the run) on every peer's election port; each peer
// keeps the highest it has seen of each member and answers with it and
// its whole table, which the announcer merges. When a majority of the
// voters answered and none had seen it from another run, the fence
// lifts. A peer that had seen it proves the data directory
// went back (restored from an old backup, emptied): the member logs DATA
// WENT BACK and stays fenced until a sync with the leader has applied
// here, as does a member emptied by `zkd rebuild` (zab.RebuildMarker).
//
// A single server.N line (or none) is a standalone member: a one-voter
// raft cluster on an in-memory transport, the same code path.
//
// # Layers
//
// zkd's packages depend one way, cmd → {server, quorum} → zab →
// {datatree, session} → jute; cmd/internal/layers checks it.
// quorum imports zab (with zab/tlsconf for the members' TLS), datatree
// and jute, never server: cmd/zkd wires the two side by side.
package quorum
