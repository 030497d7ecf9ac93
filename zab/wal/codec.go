package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// logFormatV1 is the first byte of every encoded raft.Log payload.
const logFormatV1 = 1

// Flags of an encoded raft.Log payload.
const (
	flagAppendedAt = 1 << iota // AppendedAt is set (not the zero time)
	flagData                   // Data is non-nil
	flagExtensions             // Extensions is non-nil
)

// errPayload is wrapped by the errors of decodeLog and decodeIndex; callers
// turn it into a CorruptError naming the file and offset.
var errPayload = errors.New("bad payload")

// AppendLog appends the encoding of l to buf, as the segment log stores it
// (and zab/store stored it in Pebble).
func AppendLog(buf []byte, l *raft.Log) []byte { return appendLog(buf, l) }

// DecodeLog fills l from what AppendLog wrote. Data and Extensions alias b,
// which the caller must not reuse. An error wraps ErrBadPayload.
func DecodeLog(b []byte, l *raft.Log) error { return decodeLog(b, l) }

// ErrBadPayload is wrapped by DecodeLog's errors.
var ErrBadPayload = errPayload

// appendLog appends the payload encoding of l to buf: format byte, flags,
// uvarint Index, uvarint Term, Type byte, varint AppendedAt in Unix
// nanoseconds (if set), then Data and Extensions each as uvarint length and
// bytes (if non-nil). It is the encoding zab/store uses for Pebble values.
func appendLog(buf []byte, l *raft.Log) []byte {
	var flags byte
	if !l.AppendedAt.IsZero() {
		flags |= flagAppendedAt
	}
	if l.Data != nil {
		flags |= flagData
	}
	if l.Extensions != nil {
		flags |= flagExtensions
	}
	buf = append(buf, logFormatV1, flags)
	buf = binary.AppendUvarint(buf, l.Index)
	buf = binary.AppendUvarint(buf, l.Term)
	buf = append(buf, byte(l.Type))
	if flags&flagAppendedAt != 0 {
		buf = binary.AppendVarint(buf, l.AppendedAt.UnixNano())
	}
	if l.Data != nil {
		buf = binary.AppendUvarint(buf, uint64(len(l.Data)))
		buf = append(buf, l.Data...)
	}
	if l.Extensions != nil {
		buf = binary.AppendUvarint(buf, uint64(len(l.Extensions)))
		buf = append(buf, l.Extensions...)
	}
	return buf
}

// decodeIndex returns the Index of an encoded payload without decoding the
// rest; recovery uses it to check that records are contiguous.
func decodeIndex(b []byte) (uint64, error) {
	if len(b) < 2 || b[0] != logFormatV1 {
		return 0, fmt.Errorf("%w: bad format byte", errPayload)
	}
	idx, n := binary.Uvarint(b[2:])
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad index", errPayload)
	}
	return idx, nil
}

// decodeLog fills l from the payload b. Data and Extensions are not copied:
// they are sub-slices of b, capped so that appending to one cannot overwrite
// the other, so b must be a buffer the caller never reuses.
func decodeLog(b []byte, l *raft.Log) error {
	if len(b) < 2 || b[0] != logFormatV1 {
		return fmt.Errorf("%w: bad format byte", errPayload)
	}
	flags := b[1]
	if flags&^(flagAppendedAt|flagData|flagExtensions) != 0 {
		return fmt.Errorf("%w: unknown flags %#x", errPayload, flags)
	}
	b = b[2:]
	uv := func(what string) (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, fmt.Errorf("%w: bad %s", errPayload, what)
		}
		b = b[n:]
		return v, nil
	}
	bytesField := func(what string) ([]byte, error) {
		n, err := uv(what)
		if err != nil {
			return nil, err
		}
		if n > uint64(len(b)) {
			return nil, fmt.Errorf("%w: %s length %d exceeds %d bytes", errPayload, what, n, len(b))
		}
		out := b[:n:n]
		b = b[n:]
		return out, nil
	}
	var err error
	if l.Index, err = uv("index"); err != nil {
		return err
	}
	if l.Term, err = uv("term"); err != nil {
		return err
	}
	if len(b) < 1 {
		return fmt.Errorf("%w: missing type", errPayload)
	}
	l.Type = raft.LogType(b[0])
	b = b[1:]
	l.AppendedAt = time.Time{}
	if flags&flagAppendedAt != 0 {
		ns, n := binary.Varint(b)
		if n <= 0 {
			return fmt.Errorf("%w: bad appended-at", errPayload)
		}
		b = b[n:]
		l.AppendedAt = time.Unix(0, ns)
	}
	l.Data = nil
	if flags&flagData != 0 {
		if l.Data, err = bytesField("data"); err != nil {
			return err
		}
	}
	l.Extensions = nil
	if flags&flagExtensions != 0 {
		if l.Extensions, err = bytesField("extensions"); err != nil {
			return err
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errPayload, len(b))
	}
	return nil
}
