package zab

import (
	"fmt"

	"github.com/zkd/zkd/jute"
)

// entryKind is the first byte of every raft log entry zkd writes. An entry
// of a kind the FSM does not know stops the member (panic): a member that
// skipped it would diverge from the others.
type entryKind byte

const (
	// kindRequest carries one client write (Request) as the client sent it.
	kindRequest entryKind = 1
	// kindExpire closes sessions the leader found expired.
	kindExpire entryKind = 2
	// kindDeleteExpired deletes containers and TTL nodes the leader found
	// due, if they are still due when the entry applies.
	kindDeleteExpired entryKind = 3
	// kindSetConfig replaces the data of /zookeeper/config with the
	// ensemble's membership (ZooKeeper's dynamic-config text).
	kindSetConfig entryKind = 4
	// kindFencingKey installs the ensemble's fencing key (an Ed25519
	// seed the leader drew) unless one is installed already. It is not a
	// ZooKeeper transaction and takes no zxid.
	kindFencingKey entryKind = 5
	// kindDeleteTombstones deletes the lock delay's tombstones the leader
	// found due, if they are still due when the entry applies
	// (docs/fencing.md, "Lock delay").
	kindDeleteTombstones entryKind = 6
	// kindBatch carries several client writes packed by the leader
	// (batch.go); each applies as kindRequest would, with its own zxid,
	// in order. Its origin and seq name the proposing member and the
	// batch; each request carries its own.
	kindBatch entryKind = 7
)

// entry is the decoded form of one log entry. Every field an apply reads is
// here, stamped by the leader: apply never reads a clock.
type entry struct {
	kind entryKind
	// origin and seq identify the pending Future on the member that
	// submitted the request; other members ignore them.
	origin uint64
	seq    uint64
	// time is the leader's wall clock in ms since the epoch, for
	// ctime/mtime and TTL checks.
	time int64
	req  Request
	// sessions lists the sessions to close (kindExpire).
	sessions []int64
	// lockDelay is the leader's zkd.lockDelayMs (kindExpire): when
	// positive, the sessions' lock nodes become tombstones due at time +
	// lockDelay. Zero is not encoded, so entries without a delay keep the
	// format they had before lock delay existed.
	lockDelay int64
	// paths lists the nodes to delete if still expired (kindDeleteExpired)
	// or still due tombstones (kindDeleteTombstones).
	paths []string
	// config is the new /zookeeper/config data (kindSetConfig).
	config []byte
	// fenceSeed is the fencing key seed (kindFencingKey).
	fenceSeed []byte
	// batch is what a kindBatch entry packs when encoded; packed is what
	// a decoded one holds.
	batch  []queued
	packed []packed
	// mark is a kindBatch entry's optional trailer: the proposer's tree
	// digest at an earlier zxid, for divergence detection (digest.go);
	// version 0 when there is none.
	mark digestMark
}

func (e *entry) encode() []byte {
	size := 64 + len(e.req.Body)
	for i := range e.batch {
		size += 64 + len(e.batch[i].req.Body)
	}
	enc := jute.NewEncoder(make([]byte, 0, size))
	enc.WriteInt(int32(e.kind))
	enc.WriteLong(int64(e.origin))
	enc.WriteLong(int64(e.seq))
	enc.WriteLong(e.time)
	switch e.kind {
	case kindRequest:
		e.req.Encode(enc)
	case kindBatch:
		encodeBatch(enc, e.batch)
		if e.mark.version != 0 {
			e.mark.encode(enc)
		}
	case kindExpire:
		enc.WriteInt(int32(len(e.sessions)))
		for _, id := range e.sessions {
			enc.WriteLong(id)
		}
		if e.lockDelay > 0 {
			enc.WriteLong(e.lockDelay)
		}
	case kindDeleteExpired, kindDeleteTombstones:
		enc.WriteStrings(e.paths)
	case kindSetConfig:
		enc.WriteBuffer(e.config)
	case kindFencingKey:
		enc.WriteBuffer(e.fenceSeed)
	default:
		panic(fmt.Sprintf("zab: encoding entry of unknown kind %d", e.kind))
	}
	return enc.Bytes()
}

func decodeEntry(b []byte) (*entry, error) {
	d := jute.NewDecoder(b)
	e := &entry{kind: entryKind(d.ReadInt())}
	e.origin = uint64(d.ReadLong())
	e.seq = uint64(d.ReadLong())
	e.time = d.ReadLong()
	switch e.kind {
	case kindRequest:
		e.req.Decode(d)
	case kindBatch:
		e.packed = decodeBatch(d)
		if d.Err() == nil && d.Remaining() > 0 {
			e.mark = decodeDigestMark(d)
		}
	case kindExpire:
		n := d.VectorLen(8)
		for i := 0; i < n && d.Err() == nil; i++ {
			e.sessions = append(e.sessions, d.ReadLong())
		}
		if d.Err() == nil && d.Remaining() > 0 {
			e.lockDelay = d.ReadLong()
		}
	case kindDeleteExpired, kindDeleteTombstones:
		e.paths = d.ReadStrings()
	case kindSetConfig:
		e.config = d.ReadBuffer()
	case kindFencingKey:
		e.fenceSeed = d.ReadBuffer()
	default:
		return nil, fmt.Errorf("zab: log entry of unknown kind %d", e.kind)
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("zab: corrupt log entry of kind %d: %w", e.kind, err)
	}
	if d.Remaining() != 0 {
		return nil, fmt.Errorf("zab: log entry of kind %d has %d trailing bytes", e.kind, d.Remaining())
	}
	return e, nil
}
