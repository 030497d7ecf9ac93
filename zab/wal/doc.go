// Package wal keeps hashicorp/raft's log in preallocated segment files: a
// raft.LogStore (and raft.MonotonicLogStore) in which each StoreLogs call
// is one pwrite of the encoded batch and one fdatasync, with nothing to
// flush, compact or garbage-collect behind it. Raft's stable store and
// snapshots stay in Pebble (zab/store). With Options.Defer (a leader's
// appends) the fdatasync runs on the log's own goroutine after StoreLogs
// returns, and Durable and WaitDurable tell when it landed (deferred.go).
//
// # Files
//
// The directory holds only this log's files:
//
//	%016x.wal      a segment, named by a sequence number that only grows
//	spare          a preallocated segment waiting for the next rotation
//	spare.tmp      a spare being preallocated
//	oversize.tmp   a segment for an oversized batch being preallocated
//	reset          the reset marker (see DeleteRange below)
//	reset.tmp      a reset marker being written
//
// A segment starts with a 32-byte header, all integers little-endian:
//
//	[0:8]   magic "zkdwal01"
//	[8:16]  sequence number (as in the file name)
//	[16:24] base index: the raft index of the segment's first record
//	[24:28] reserved, zero
//	[28:32] CRC-32C (Castagnoli) of bytes 0..27
//
// Records follow the header back to back, index base, base+1, ...; each is
//
//	[length uint32][crc uint32][payload: length bytes]
//
// where crc is the CRC-32C of the segment's sequence number (8 bytes), the
// length (4 bytes) and the payload, so a record copied from any other
// segment never validates here. The payload is the raft.Log: format byte 1,
// flags (AppendedAt set, Data non-nil, Extensions non-nil), uvarint Index,
// uvarint Term, Type byte, varint AppendedAt in Unix nanoseconds if set,
// then Data and Extensions each as uvarint length and bytes if non-nil (the
// encoding zab/store uses). A zero length marks the end: the rest of the
// segment is still the zeros it was preallocated with.
//
// The reset marker is 20 bytes: magic "zkdrst01", a sequence number, and
// the CRC-32C of both. Every segment with a sequence number up to it is
// void.
//
// # Writing
//
// A segment file is created at its full size (Options.SegmentSize, 64 MiB
// by default) by writing zeros and fsyncing it, by a background goroutine
// that keeps one spare ready. Writes into it then replace blocks in place,
// so their fdatasync flushes data only, never a file size or extent map:
// that is what makes the one sync per batch cheap. A batch goes wholly into
// the tail segment if it fits, else into the next: rotation writes the
// header into the spare and fdatasyncs it, renames the spare to the next
// sequence number and fsyncs the directory (so a segment file never exists
// without its header), then the batch is written as always. A batch bigger
// than a segment gets a segment of its own, sized to fit. Records never
// span segments.
//
// Each segment keeps in memory the offset of each of its records, so
// GetLog is a binary search over the segments' base indexes and one pread.
//
// DeleteRange works from the front (compaction after a snapshot: segment
// files wholly below the new first index are removed, oldest first; a
// segment only partly deleted stays, so after a restart FirstIndex goes
// back to its base, which raft tolerates) or from the back (a follower
// truncating a conflicting suffix: later segments are removed, newest
// first, and the rest of the segment holding the new end is overwritten
// with zeros and synced before it is written again). Deleting every entry
// first writes the reset marker, then removes every segment; the next
// StoreLogs may then start at any index, as raft needs after installing a
// snapshot.
//
// # Recovery
//
// Open removes *.tmp files, and any segment the reset marker covers. A
// spare of the right size holding only zeros is kept (one changed at rest
// is removed, with a warning, and made again). Every segment header must be
// valid and match its file name, or Open fails naming the file.
//
// Each segment's records are then read and checked from the header on,
// stopping at a zero length, at a record whose CRC does not match, or at
// one whose length runs past the file. A record that passes its CRC must
// hold the next index. Every segment but the newest must hold exactly the
// records from its base index to the next segment's base index - 1; if one
// is bad, Open fails with a *CorruptError naming the file, the offset and
// the index past which the log cannot be trusted. In the newest segment a
// bad record, or any non-zero byte after the last good one, may be a torn
// write of the last batch (every StoreLogs is synced before raft counts
// it, so only that batch can be torn). What a torn write can leave is
// narrow, because the segment was preallocated with zeros and the batch
// was one pwrite: each 512-byte sector it covers is either written or
// still zero, so a torn record has a sector that is zero from the record's
// offset on, its length field can only have lost bits (it never runs past
// the file), and nothing else changed. Open fails with a *CorruptError
// naming the file, the offset and the index when the damage does not fit:
// a record failing its CRC with no such zero sector (a flipped byte in a
// synced record, wherever it is), a length running past the file, a zero
// length in a sector that holds data after it, Options.MaxBatch good
// records or more after a bad one, or a newest segment shorter than
// Options.SegmentSize whose last record ends at the end of the file (cut).
// What remains indistinguishable: damage that itself looks like an
// unwritten sector (a whole 512-byte run of zeros in one of the last
// MaxBatch records), or a length field changed to reach into the zeros
// after the last record. For a torn write, the records before it are
// kept, the rest of the segment is overwritten with zeros and synced,
// and a warning names the
// file, the offset and the first index dropped. Zeroing matters: otherwise
// a later, shorter write could end exactly where a stale record begins and
// bring it back at the next recovery.
//
// The newest segment may hold no record (a crash after a rotation, before
// its batch reached the disk); it is kept, and receives the next batch. If
// no segment holds a record, they are removed and the log is empty. After
// Open, FirstIndex is the oldest segment's base index and LastIndex the
// index of the last good record.
//
// Any error writing, syncing or removing a file makes the Log refuse
// further writes until it is reopened, since what reached the disk is then
// unknown; recovery sorts it out.
package wal
