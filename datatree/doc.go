// Package datatree is zkd's znode tree: nodes and their Stat bookkeeping,
// ACLs, ephemerals by session, container and TTL expiry candidates,
// sequential naming, watch registration and triggering, snapshots and
// tree digests: ZooKeeper's (TreeDigest, digest version 2, kept up to
// date by every write, as members compare it; see digest.go) and zkd's
// own hash of the whole encoding (Digest, computed on demand).
//
// The tree is deterministic: it does no I/O, reads no clock and no random
// source, and nothing it encodes or hashes depends on map iteration order,
// so the same transactions applied in the same order give the same tree,
// byte for byte, on every member. Writes are driven by the replicated log
// (package zab) and carry their zxid, time and requester in a [Txn]; reads
// and watch registrations come from client connections (package server).
//
// Semantics follow ZooKeeper 3.8.0 as shipped by Debian (checked against the
// running server and its bytecode):
//
//   - Every write validates exactly as PrepRequestProcessor does, in the same
//     order, and fails with a sentinel [Error] without changing anything. A
//     failed write still consumes its zxid (LastZxid).
//   - A node keeps ZooKeeper's persisted cversion, which counts child
//     creates only; clients see cversion*2-numChildren (creates plus
//     deletes), and sequential suffixes use the persisted value.
//   - Containers and TTL nodes keep their special ephemeralOwner encoding
//     internally (0x8000000000000000, 0xFF<<56|ttl) and report 0 to clients.
//     The create opcode, not the mode, decides the kind (see CreateOp.Type).
//   - Watches follow WatchManager: a data and a child table, one event per
//     watcher per trigger, persistent and persistent-recursive modes
//     (registered in both tables, as 3.8.0 does; a later registration on the
//     same path replaces the mode), and delivery only to watchers that may
//     READ the node when they expose their identities ([AuthWatcher]).
//   - Multi applies ops one by one with an undo log; watch triggers are
//     queued and run only when the multi commits. Its creates take their
//     kind and result type from the mode, as ZooKeeper's multi decoding
//     does.
//   - Quota statistics (/zookeeper/quota/<path>/zookeeper_stats) are kept
//     up to date as in DataTree; quotas are not enforced (ZooKeeper's
//     default).
//
// Deliberate differences: child and ephemeral lists are sorted (ZooKeeper
// returns hash order); a createTTL request with a non-TTL mode fails with
// ErrBadArguments (ZooKeeper 3.8.0 breaks its request pipeline on a
// negative TTL there); DeleteExpired re-checks that the node is still an
// expired container or TTL node at apply time; CheckWatches looks at the
// calling watcher only (3.8.0's containsWatcher answers yes when any
// connection watches the path, and fails with MarshallingError on a
// relative path once recursive watches exist); malformed quota statistics,
// on which ZooKeeper's apply throws, are left unchanged; a snapshot load
// does not recount quota statistics (ZooKeeper's setupQuota does), so that
// restored members agree with the others.
//
// Memory: a znode is one 96-byte node (parent pointer, a pointer to its
// name and data, which share one allocation, with their two 4-byte
// lengths, a 4-byte reference into the interned ACL lists, the persisted
// stat) plus that allocation; a node's full path is derived from its
// parents, and its children are a kidSet (a list up to eight, then an
// open-addressing table of node pointers) rather than a map. Watches live
// in the watch tables, never in nodes. BenchmarkZnodeMemory measures the
// heap per znode after a snapshot load.
//
// Locking: one RWMutex guards the nodes and a second mutex guards the watch
// tables (order: tree lock, then watch lock). Watchers are notified after
// both are released, on the goroutine that made the change.
//
// # Layers
//
// zkd's packages depend one way, cmd → {server, quorum} → zab →
// {datatree, session} → jute; cmd/internal/layers checks it.
// datatree imports jute only, and not session, its sibling.
package datatree
