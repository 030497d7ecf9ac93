// Package zkfollow makes a zkd member follow a running Apache ZooKeeper
// 3.8 ensemble as a ZooKeeper observer, so that the ensemble's state —
// tree, zxid, sessions — can move to zkd without a stop of the service.
//
// It speaks the learner side of ZooKeeper's quorum protocol (Learner,
// Observer and LearnerHandler in ZooKeeper's sources) on the leader's
// quorum port, which only the leader listens on, so the follower tries
// each configured address until one answers:
//
//   - OBSERVERINFO with a LearnerInfo (sid, protocol version 0x10000,
//     config version 0); the leader answers LEADERINFO with its new epoch,
//     and the follower sends ACKEPOCH with its last zxid.
//   - The leader syncs it by DIFF (PROPOSAL/COMMIT pairs), TRUNC (only to
//     the follower's own zxid: an observer is only sent committed
//     transactions, so it never holds one to drop) or SNAP (the leader's
//     database streamed after the packet, read by zkformat), then sends
//     NEWLEADER (acknowledged with ACK) and UPTODATE (acknowledged too).
//   - From then on it applies every INFORM (and INFORMANDACTIVATE) in zxid
//     order and answers each PING. The touch table it sends is empty: no
//     client holds a ZooKeeper session through the follower.
//
// Transactions are applied with zkformat's replay rules (ZooKeeper's
// DataTree.processTxn), so the followed state is ZooKeeper's own: every
// Stat field, the sequence counters, the zxid and the session table. When
// the leader sends 3.6+ digests, the tree's digest is compared with each
// one once it has matched after a sync; a mismatch then stops the
// follower rather than let it carry a tree ZooKeeper does not have.
//
// The package lives under quorum because it is ensemble membership and
// peer networking (the ZooKeeper ensemble's quorum port), feeding zab's
// zkformat tree; package cmd/zkd turns the followed state into a zkd data
// directory at cutover (zab.Seed).
package zkfollow
