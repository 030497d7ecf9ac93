// Package datatree is zkd's znode tree: nodes and their Stat bookkeeping,
// ACLs, ephemerals by session, container and TTL expiry candidates,
// sequential naming, watch registration and triggering, snapshots and a
// tree digest.
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
//     order, and fails with a sentinel [Error] without changing anything.
//   - A node keeps ZooKeeper's persisted cversion, which counts child
//     creates only; clients see cversion*2-numChildren (creates plus
//     deletes), and sequential names use the persisted value.
//   - Containers and TTL nodes keep their special ephemeralOwner encoding
//     internally (0x8000000000000000, 0xFF<<56|ttl) and report 0 to clients.
//   - Watches follow WatchManager: one event per watcher per trigger, data
//     and child watch tables, persistent and persistent-recursive modes
//     (registered in both tables, as 3.8.0 does), and delivery only to
//     watchers that may READ the node when they expose their identities
//     (see [AuthWatcher]).
//
// Locking: one RWMutex guards the nodes and a second mutex guards the watch
// tables (order: tree lock, then watch lock). Watchers are notified after
// both are released.
package datatree
