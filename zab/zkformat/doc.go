// Package zkformat reads and writes Apache ZooKeeper's on-disk database
// (the version-2 directory of a dataDir) so that zkd can take over a
// ZooKeeper database and hand one back to ZooKeeper 3.8. It is tested
// against files of the real ZooKeeper 3.8; it also reads what 3.4 (create
// records without parentCVersion) and 3.9 (a sealed last processed zxid
// after the digest) write differently, from their sources, untested
// against those versions.
//
// Reading follows ZooKeeper's FileTxnSnapLog.restore: the newest snapshot
// that reads intact (FileSnap: header "ZKSN", session table, ACL cache,
// nodes, Adler32 seal, optionally the 3.6+ zxid digest and a second seal),
// then every later transaction from the log files (FileTxnLog: header
// "ZKLG", records of Adler32, length, TxnHeader + txn [+ TxnDigest], 'B'),
// applied with DataTree.processTxn's rules, which are idempotent over the
// fuzzy window a snapshot taken under load covers. The 3.6+ digests are
// recomputed (DigestCalculator: CRC32 of path, data and persisted stat,
// summed over the tree outside /zookeeper/) and checked, so a replay that
// does not reproduce ZooKeeper's tree is refused rather than imported.
//
// Damage is handled as ZooKeeper handles it, and always reported: a
// snapshot that does not read intact is skipped for an older one; a log
// file ending in a partly written record (a crash while appending, never
// acknowledged) ends there; a record whose checksum does not match, a
// transaction missing between two others, or a digest that disagrees is an
// error naming the file and the offset or zxid.
//
// Writing produces one snapshot file ZooKeeper 3.8 loads (no digest, which
// ZooKeeper treats as optional), from zkd's tree and session table.
package zkformat
