package wal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"
)

// Sizes of the fixed parts of a segment; see the package documentation.
const (
	headerSize       = 32
	recordHeaderSize = 8
)

// headerMagic opens every segment file.
const headerMagic = "zkdwal01"

// resetMagic opens the reset marker file.
const resetMagic = "zkdrst01"

// File names in the log directory besides the segments.
const (
	spareName    = "spare"        // a preallocated segment ready for rotation
	spareTmpName = "spare.tmp"    // a spare being preallocated
	bigTmpName   = "oversize.tmp" // an oversized segment being preallocated
	resetName    = "reset"        // the reset marker
	resetTmpName = "reset.tmp"    // a reset marker being written
	segmentExt   = ".wal"
)

// castagnoli is the CRC-32C table used for headers and records.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is matched (errors.Is) by every CorruptError and by the errors
// about bad segment headers and reset markers.
var ErrCorrupt = errors.New("wal: corrupt")

// CorruptError reports a record that failed its checks: its file, offset
// and the raft index it should hold, so that an operator can find it. Every
// entry from Index on is untrusted.
type CorruptError struct {
	// Path is the segment file.
	Path string
	// Offset is the record's byte offset in the file.
	Offset int64
	// Index is the raft index the record should hold.
	Index uint64
	// Reason is "crc mismatch", "truncated" (its length runs past the
	// file), "missing" (zeros where a record should be) or what decoding
	// found wrong.
	Reason string
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: %s: record at offset %d (index %d) is corrupt (%s): the log cannot be trusted past index %d",
		e.Path, e.Offset, e.Index, e.Reason, e.Index-1)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// segmentName returns the file name of segment seq.
func segmentName(seq uint64) string { return fmt.Sprintf("%016x%s", seq, segmentExt) }

// parseSegmentName returns the sequence number in a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, segmentExt)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	seq, err := strconv.ParseUint(hex, 16, 64)
	return seq, err == nil
}

// segHeader is the fixed header at the start of a segment.
type segHeader struct {
	seq  uint64 // the segment's sequence number, also in its file name
	base uint64 // raft index of the segment's first record
}

// encode returns the header's bytes: magic, seq, base, 4 reserved zero
// bytes and the CRC-32C of the 28 bytes before it, little-endian.
func (h segHeader) encode() []byte {
	b := make([]byte, headerSize)
	copy(b, headerMagic)
	binary.LittleEndian.PutUint64(b[8:], h.seq)
	binary.LittleEndian.PutUint64(b[16:], h.base)
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

// decodeHeader parses and checks a segment header.
func decodeHeader(b []byte) (segHeader, error) {
	switch {
	case len(b) < headerSize:
		return segHeader{}, fmt.Errorf("%d bytes, want %d", len(b), headerSize)
	case string(b[:8]) != headerMagic:
		return segHeader{}, fmt.Errorf("bad magic %q", b[:8])
	case crc32.Checksum(b[:28], castagnoli) != binary.LittleEndian.Uint32(b[28:]):
		return segHeader{}, errors.New("crc mismatch")
	case binary.LittleEndian.Uint32(b[24:]) != 0:
		return segHeader{}, errors.New("reserved bytes are not zero")
	}
	return segHeader{
		seq:  binary.LittleEndian.Uint64(b[8:]),
		base: binary.LittleEndian.Uint64(b[16:]),
	}, nil
}

// crcSeed returns the CRC-32C of a segment's sequence number, from which
// every record CRC in that segment continues.
func crcSeed(seq uint64) uint32 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seq)
	return crc32.Update(0, castagnoli, b[:])
}

// recordCRC returns the CRC of a record: the segment's sequence (as seed),
// then the 4 length bytes, then the payload.
func recordCRC(seed uint32, length, payload []byte) uint32 {
	return crc32.Update(crc32.Update(seed, castagnoli, length), castagnoli, payload)
}

// putRecordHeader fills the 8 header bytes of the record rec (header and
// payload) for the segment whose CRC seed is seed.
func putRecordHeader(seed uint32, rec []byte) {
	binary.LittleEndian.PutUint32(rec[0:4], uint32(len(rec)-recordHeaderSize))
	binary.LittleEndian.PutUint32(rec[4:8], recordCRC(seed, rec[0:4], rec[recordHeaderSize:]))
}

// checkRecord verifies the record rec (header and payload, exactly as long
// as its length field says) against seed and returns its payload.
func checkRecord(seed uint32, rec []byte) ([]byte, bool) {
	if len(rec) < recordHeaderSize || int64(binary.LittleEndian.Uint32(rec[0:4])) != int64(len(rec)-recordHeaderSize) {
		return nil, false
	}
	if recordCRC(seed, rec[0:4], rec[recordHeaderSize:]) != binary.LittleEndian.Uint32(rec[4:8]) {
		return nil, false
	}
	return rec[recordHeaderSize:], true
}

// stopReason says why a segment scan ended.
type stopReason int

const (
	stopEnd       stopReason = iota // a zero length or the end of the file
	stopCRC                         // a record whose CRC does not match
	stopTruncated                   // a record whose length runs past the file
)

func (r stopReason) String() string {
	switch r {
	case stopCRC:
		return "crc mismatch"
	case stopTruncated:
		return "truncated"
	default:
		return "missing"
	}
}

// scanResult is what scanSegment found in a segment.
type scanResult struct {
	offsets []uint32   // offset of each good record, in index order
	end     int64      // offset after the last good record
	stop    stopReason // why the scan ended at end
}

// scanSegment reads the records of the segment at path (opened as f, size
// bytes long, with header h) from just after the header, checking each
// record's CRC and that it holds the next index from h.base, until a zero
// length, the end of the file, a CRC mismatch or a length running past the
// file. A record that passes its CRC but holds the wrong index is an error:
// no crash produces one.
func scanSegment(f *os.File, path string, size int64, h segHeader) (scanResult, error) {
	res := scanResult{end: headerSize}
	seed := crcSeed(h.seq)
	r := bufio.NewReaderSize(io.NewSectionReader(f, headerSize, size-headerSize), 1<<20)
	var rec []byte
	for {
		if size-res.end < recordHeaderSize {
			// Too short for a record header: the end, unless the bytes
			// left are not zeros.
			rest := make([]byte, size-res.end)
			if _, err := io.ReadFull(r, rest); err != nil {
				return res, fmt.Errorf("wal: read %s at offset %d: %w", path, res.end, err)
			}
			if !isZero(rest) {
				res.stop = stopTruncated
			}
			return res, nil
		}
		if cap(rec) < recordHeaderSize {
			rec = make([]byte, recordHeaderSize, 4096)
		}
		rec = rec[:recordHeaderSize]
		if _, err := io.ReadFull(r, rec); err != nil {
			return res, fmt.Errorf("wal: read %s at offset %d: %w", path, res.end, err)
		}
		length := int64(binary.LittleEndian.Uint32(rec[0:4]))
		if length == 0 {
			res.stop = stopEnd
			return res, nil
		}
		if length > size-res.end-recordHeaderSize {
			res.stop = stopTruncated
			return res, nil
		}
		if need := recordHeaderSize + length; int64(cap(rec)) < need {
			grown := make([]byte, need, 2*need)
			copy(grown, rec)
			rec = grown
		}
		rec = rec[:recordHeaderSize+length]
		if _, err := io.ReadFull(r, rec[recordHeaderSize:]); err != nil {
			return res, fmt.Errorf("wal: read %s at offset %d: %w", path, res.end, err)
		}
		payload, ok := checkRecord(seed, rec)
		if !ok {
			res.stop = stopCRC
			return res, nil
		}
		want := h.base + uint64(len(res.offsets))
		idx, err := decodeIndex(payload)
		if err != nil {
			return res, &CorruptError{Path: path, Offset: res.end, Index: want, Reason: err.Error()}
		}
		if idx != want {
			return res, &CorruptError{Path: path, Offset: res.end, Index: want, Reason: fmt.Sprintf("holds index %d", idx)}
		}
		res.offsets = append(res.offsets, uint32(res.end))
		res.end += recordHeaderSize + length
	}
}

// isZero reports whether b holds only zero bytes.
func isZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeroChunk))
		if !bytes.Equal(b[:n], zeroChunk[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

// zeroChunk is a read-only buffer of zeros for preallocating and wiping.
var zeroChunk = make([]byte, 1<<20)

// allZero reports whether f holds only zeros in [from, to).
func allZero(f *os.File, from, to int64) (bool, error) {
	buf := make([]byte, min(to-from, int64(len(zeroChunk))))
	for off := from; off < to; {
		n := min(to-off, int64(len(buf)))
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return false, fmt.Errorf("wal: read %s at offset %d: %w", f.Name(), off, err)
		}
		if !isZero(buf[:n]) {
			return false, nil
		}
		off += n
	}
	return true, nil
}

// writeZeros overwrites f with zeros in [from, to).
func writeZeros(f *os.File, from, to int64) error {
	for off := from; off < to; {
		n := min(to-off, int64(len(zeroChunk)))
		if _, err := f.WriteAt(zeroChunk[:n], off); err != nil {
			return fmt.Errorf("wal: zero %s at offset %d: %w", f.Name(), off, err)
		}
		off += n
	}
	return nil
}

// encodeReset returns the reset marker's bytes: magic, the sequence number
// at or below which every segment is void, and the CRC-32C of both.
func encodeReset(seq uint64) []byte {
	b := make([]byte, 20)
	copy(b, resetMagic)
	binary.LittleEndian.PutUint64(b[8:], seq)
	binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
	return b
}

// decodeReset parses the reset marker file at path.
func decodeReset(path string, b []byte) (uint64, error) {
	if len(b) != 20 || string(b[:8]) != resetMagic || crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		return 0, fmt.Errorf("%w: %s: bad reset marker", ErrCorrupt, path)
	}
	return binary.LittleEndian.Uint64(b[8:]), nil
}

// syncDir fsyncs the directory dir, making renames and removals in it
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("wal: open directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wal: sync directory %s: %w", dir, err)
	}
	return nil
}
