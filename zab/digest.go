package zab

import (
	"fmt"
	"sync"
	"time"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

// Divergence detection: members compare ZooKeeper's tree digest
// (datatree.TreeDigest, digest version 2) at the same zxid.
//
// Apply may not read anything but the entry and the state, so the
// comparison goes through the log. Every member records its tree digest
// after each entry it applies, with the zxid reached (digestLog: the
// last digestLogSize entries). The leader puts the newest pair it has
// recorded, (zxid Z, digest D), into each entry of packed client
// requests it proposes (a trailer after the requests). That entry lands
// in the log after the one that reached Z, so every member applying it
// has applied Z already, at an entry boundary it recorded too; before
// applying the entry, it looks up its own digest at Z and compares. A
// member that has no record of Z (it loaded a snapshot taken after Z,
// or Z fell out of its window) skips the check, as ZooKeeper skips
// digests it cannot compare. Entries written without the trailer (before
// zkd had it, or with zookeeper.digest.enabled=false) are not checked.
//
// On a mismatch the member counts it (Observer.DigestMismatch, ZooKeeper's
// digest_mismatches_count) and calls Config.OnDivergence before applying
// the entry; cmd/zkd logs one line and exits, and the member must be
// rebuilt from its peers. As in ZooKeeper, the leader's digest is the
// reference: a follower that disagrees with its leader stops. Were the
// leader the diverged member, its followers would stop instead (the
// ensemble then stops serving rather than serve the leader's tree).
//
// The digest rides on client writes. So that a member that diverged while
// the ensemble is idle (one restarted on a changed disk) is caught too, a
// leader of an ensemble that proposed no digest for digestIdleInterval
// proposes an empty kindBatch carrying one: it takes no zxid and changes
// nothing, and costs one small entry per interval while idle.
//
// A member replaying its own log at start checks the digests its leader
// recorded then against the tree it rebuilds from its snapshot, so a
// snapshot changed at rest is caught by the first checked entry after it.

// digestLogSize is how many entry boundaries a member remembers the
// digest of. The leader's pair trails the entry carrying it by the
// entries in flight (a few batches and housekeeping entries), far fewer.
const digestLogSize = 1024

// ZxidDigest is the tree digest after the entry that reached Zxid.
type ZxidDigest struct {
	Zxid   int64
	Digest uint64
}

// digestLog is a member's recent digests, oldest first in a ring. The
// apply goroutine records; the proposer reads the newest.
type digestLog struct {
	mu   sync.Mutex
	ring [digestLogSize]ZxidDigest
	n    int // entries held, up to digestLogSize
	next int // ring index of the next record
}

// record notes the digest after an entry reaching zxid. An entry that
// took no zxid (the fencing key) repeats the last zxid with the same
// digest, and is not recorded twice.
func (l *digestLog) record(zxid int64, digest uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last := &l.ring[(l.next+digestLogSize-1)%digestLogSize]; l.n > 0 && last.Zxid == zxid {
		last.Digest = digest
		return
	}
	l.ring[l.next] = ZxidDigest{zxid, digest}
	l.next = (l.next + 1) % digestLogSize
	l.n = min(l.n+1, digestLogSize)
}

// reset forgets everything but the digest of a restored snapshot.
func (l *digestLog) reset(zxid int64, digest uint64) {
	l.mu.Lock()
	l.n, l.next = 0, 0
	l.mu.Unlock()
	l.record(zxid, digest)
}

// newest returns the last pair recorded.
func (l *digestLog) newest() (ZxidDigest, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return ZxidDigest{}, false
	}
	return l.ring[(l.next+digestLogSize-1)%digestLogSize], true
}

// at returns the digest recorded at zxid, newest first.
func (l *digestLog) at(zxid int64) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 1; i <= l.n; i++ {
		e := l.ring[(l.next+digestLogSize-i)%digestLogSize]
		if e.Zxid == zxid {
			return e.Digest, true
		}
		if e.Zxid < zxid {
			return 0, false
		}
	}
	return 0, false
}

// history returns the recorded pairs, newest first, for the admin hash
// command.
func (l *digestLog) history() []ZxidDigest {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ZxidDigest, 0, l.n)
	for i := 1; i <= l.n; i++ {
		out = append(out, l.ring[(l.next+digestLogSize-i)%digestLogSize])
	}
	return out
}

// digestIdleInterval is how long an ensemble's leader goes without
// proposing its digest before it proposes an empty batch carrying it.
const digestIdleInterval = 10 * time.Second

// markDigest gives e, a kindBatch entry this member proposes, its newest
// recorded digest (unless Config.NoDigest).
func (n *Node) markDigest(e *entry) {
	if d, ok := n.fsm.digests.newest(); ok && !n.cfg.NoDigest {
		e.mark = digestMark{version: datatree.DigestVersion, zxid: d.Zxid, digest: d.Digest}
		n.lastMark.Store(time.Now().UnixNano())
	}
}

// proposeIdleDigest proposes an empty batch carrying the leader's digest
// when none went out for digestIdleInterval; the leader's tick calls it.
// A standalone member has no one to compare with.
func (n *Node) proposeIdleDigest() {
	if n.standalone || n.cfg.NoDigest || time.Since(time.Unix(0, n.lastMark.Load())) < digestIdleInterval {
		return
	}
	e := &entry{kind: kindBatch}
	n.markDigest(e)
	n.propose(e)
}

// digestMark is the trailer of a kindBatch entry: the proposer's tree
// digest (of version) after the entry that reached zxid, as ZooKeeper's
// TxnDigest carries a version and a digest.
type digestMark struct {
	version int32
	zxid    int64
	digest  uint64
}

func (m *digestMark) encode(enc *jute.Encoder) {
	enc.WriteInt(m.version)
	enc.WriteLong(m.zxid)
	enc.WriteLong(int64(m.digest))
}

func decodeDigestMark(d *jute.Decoder) digestMark {
	return digestMark{version: d.ReadInt(), zxid: d.ReadLong(), digest: uint64(d.ReadLong())}
}

// Divergence is a digest mismatch: after the entry that reached Zxid this
// member's tree digest was Mine, where the member that proposed entry
// Index (the leader) had Leader. LeaderID is the current leader's member
// id when known ("" otherwise; on a replay at start there may be none
// yet).
type Divergence struct {
	Zxid         int64
	Mine, Leader uint64
	Index        uint64
	LeaderID     string
}

func (d Divergence) String() string {
	return fmt.Sprintf("tree digest %016x at zxid 0x%x, the leader's %016x (checked at log index %d)", d.Mine, d.Zxid, d.Leader, d.Index)
}

// checkDigest compares this member's digest at m's zxid with m's, before
// the entry at index applies. A mismatch is counted and handed to
// OnDivergence, which does not return; without one, the member panics,
// as on an entry it cannot apply.
func (f *fsm) checkDigest(m digestMark, index uint64) {
	if m.version != datatree.DigestVersion {
		return
	}
	mine, ok := f.digests.at(m.zxid)
	if !ok || mine == m.digest {
		return
	}
	d := Divergence{Zxid: m.zxid, Mine: mine, Leader: m.digest, Index: index}
	if f.observer.DigestMismatch != nil {
		f.observer.DigestMismatch()
	}
	if f.onDivergence != nil {
		f.onDivergence(d)
	}
	panic(fmt.Sprintf("zab: this member's tree diverged from the leader's: %v", d))
}

// noteDigest records the tree digest after an entry.
func (f *fsm) noteDigest() {
	tree := f.tree.Load()
	f.digests.record(tree.LastZxid(), tree.TreeDigest())
}

// DigestHistory returns the digests this member recorded after the last
// entries it applied (up to 1024), newest first: what the admin hash
// command shows, ZooKeeper's DataTree.getDigestLog.
func (n *Node) DigestHistory() []ZxidDigest {
	return n.fsm.digests.history()
}
