// Package store keeps hashicorp/raft's durable state for zab in one Pebble
// database: the stable store holding the current term and vote
// (raft.StableStore), and snapshots (raft.SnapshotStore), each under its
// own key prefix. It still implements raft.LogStore: zkd up to 48c1e2d
// kept raft's log here, and zab moves such a log into its segment log
// (zab/wal) at start; a running zkd no longer writes log entries here.
//
// Key layout (one byte prefix, then the suffix):
//
//	'l' + big-endian uint64 index  -> encoded raft.Log
//	's' + key                       -> stable-store value
//	'm' + snapshot id               -> snapshot meta (JSON)
//	'p' + snapshot id               -> marker of a snapshot being written
//	'c' + snapshot id + '/' + be64  -> snapshot chunk
//
// Every write that raft relies on being durable (StoreLogs, StoreLog, Set,
// SetUint64 and a snapshot sink's Close) is committed with pebble.Sync, so
// it is on disk when the call returns. StoreLogs writes its whole batch in
// one Pebble batch: one WAL write and one fsync per raft append, and Pebble's
// commit pipeline further merges the fsyncs of concurrent committers (group
// commit).
//
// Open refuses, with an error matching ErrCorrupt that names the file (and
// the offset where there is one), what Pebble 1.1 would pass over or find
// only later: a changed record in the newest WAL or the MANIFEST that
// Pebble would take for a torn tail, and a table failing a block checksum
// (every live table is read at open); a damaged OPTIONS file, which only
// records the options passed here, is written again. Reads that find
// corruption later (raft's term and vote, a snapshot failing its CRC-64)
// are marked ErrCorrupt too and remembered (Store.Corruption).
//
// The package also adapts zap to the loggers raft (hclog) and Pebble expect.
package store
