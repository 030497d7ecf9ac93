package jute

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrShort is returned by a Decoder that ran out of bytes before a record
// was complete.
var ErrShort = errors.New("jute: record truncated")

// ErrBadLength is returned when a length prefix is negative (other than -1,
// ZooKeeper's null) or larger than the bytes that remain.
var ErrBadLength = errors.New("jute: bad length prefix")

// Record is one jute record: it can append its encoding to an Encoder and
// fill itself from a Decoder.
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder)
}

// Encoder appends jute encodings to a byte slice. The zero value is ready to
// use; Bytes returns what was written.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an Encoder that appends to buf (which may be nil), so a
// caller can reuse one allocation across frames.
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// Bytes returns the encoded bytes.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns the number of bytes written so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset empties the encoder, keeping its buffer.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// WriteInt appends a big-endian int32.
func (e *Encoder) WriteInt(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// WriteLong appends a big-endian int64.
func (e *Encoder) WriteLong(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// WriteBool appends one byte, 1 for true.
func (e *Encoder) WriteBool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// WriteBuffer appends a length-prefixed byte buffer; nil is written as
// length -1, as ZooKeeper does.
func (e *Encoder) WriteBuffer(b []byte) {
	if b == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// WriteString appends a length-prefixed UTF-8 string.
func (e *Encoder) WriteString(s string) {
	e.WriteInt(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// WriteStrings appends a vector of strings; nil is written as -1.
func (e *Encoder) WriteStrings(v []string) {
	if v == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(v)))
	for _, s := range v {
		e.WriteString(s)
	}
}

// WriteRecord appends a nested record.
func (e *Encoder) WriteRecord(r Record) { r.Encode(e) }

// Decoder reads jute encodings from a byte slice. Errors are sticky: after
// the first failure every read returns a zero value and Err reports the
// failure, so record decoders need not check after each field.
type Decoder struct {
	b   []byte
	off int
	err error
	// lax is set when a read accepted a form the Encoder never writes
	// (a bool byte other than 0 or 1, a null string, a non-standard multi
	// header), so re-encoding would not give the input bytes back.
	lax bool
}

// NewDecoder returns a Decoder over b. The decoder does not copy b: byte
// buffers it returns alias b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Reset makes d read b from its start, clearing any error, so one Decoder
// (for example a field of a connection) can decode frame after frame
// without allocating.
func (d *Decoder) Reset(b []byte) { *d = Decoder{b: b} }

// Err returns the first decoding error, or nil.
func (d *Decoder) Err() error { return d.err }

// Remaining returns how many bytes are left unread.
func (d *Decoder) Remaining() int { return len(d.b) - d.off }

// Offset returns how many bytes were consumed.
func (d *Decoder) Offset() int { return d.off }

// Canonical reports whether everything read so far is in the exact form
// Encoder writes, so that re-encoding the decoded records gives the same
// bytes. It is false after lenient reads such as a bool byte other than 0 or
// 1 or a null (-1) string, which ZooKeeper also accepts.
func (d *Decoder) Canonical() bool { return !d.lax }

// Fail records err as the decoder's error if none is recorded yet.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || d.Remaining() < n {
		d.err = ErrShort
		return nil
	}
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

// ReadInt reads a big-endian int32.
func (d *Decoder) ReadInt() int32 {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

// ReadLong reads a big-endian int64.
func (d *Decoder) ReadLong() int64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

// ReadBool reads one byte; any non-zero value is true.
func (d *Decoder) ReadBool() bool {
	p := d.take(1)
	if p == nil {
		return false
	}
	if p[0] > 1 {
		d.lax = true
	}
	return p[0] != 0
}

// length reads a length prefix and checks it against the remaining bytes,
// each element taking at least min bytes. It returns -1 for a null.
func (d *Decoder) length(min int) int {
	n := d.ReadInt()
	if d.err != nil {
		return 0
	}
	if n == -1 {
		return -1
	}
	if n < 0 || (min > 0 && int64(n)*int64(min) > int64(d.Remaining())) {
		d.err = fmt.Errorf("%w: %d with %d bytes left", ErrBadLength, n, d.Remaining())
		return 0
	}
	return int(n)
}

// ReadBuffer reads a length-prefixed buffer; a -1 length gives nil. The
// result aliases the decoder's input.
func (d *Decoder) ReadBuffer() []byte {
	n := d.length(1)
	if n < 0 || d.err != nil {
		return nil
	}
	return d.take(n)
}

// ReadString reads a length-prefixed string; a -1 length gives "".
func (d *Decoder) ReadString() string {
	n := d.length(1)
	if n < 0 && d.err == nil {
		d.lax = true
	}
	if n <= 0 || d.err != nil {
		return ""
	}
	b := d.take(n)
	// The ACL schemes and ids most requests carry (every create has an
	// ACL) come back as constants rather than a new string each: the
	// switch compares without allocating.
	switch string(b) {
	case "world":
		return "world"
	case "anyone":
		return "anyone"
	case "digest":
		return "digest"
	case "auth":
		return "auth"
	case "ip":
		return "ip"
	case "x509":
		return "x509"
	case "sasl":
		return "sasl"
	}
	return string(b)
}

// ReadStrings reads a vector of strings; a -1 length gives nil.
func (d *Decoder) ReadStrings() []string {
	n := d.length(4)
	if n < 0 || d.err != nil {
		return nil
	}
	v := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		v = append(v, d.ReadString())
	}
	return v
}

// VectorLen reads a vector length prefix for elements of at least min bytes
// each; -1 (null) is returned as -1. Record decoders use it for vectors of
// records.
func (d *Decoder) VectorLen(min int) int { return d.length(min) }

// Encode returns the encoding of r in a new slice.
func Encode(r Record) []byte {
	e := &Encoder{}
	r.Encode(e)
	return e.Bytes()
}

// Decode fills r from b and fails if b is truncated or has bytes left over.
func Decode(b []byte, r Record) error {
	d := NewDecoder(b)
	r.Decode(d)
	if d.err != nil {
		return d.err
	}
	if d.Remaining() != 0 {
		return fmt.Errorf("jute: %d trailing bytes after record", d.Remaining())
	}
	return nil
}

// maxInt32 bounds vector sizes in encoders.
const maxInt32 = math.MaxInt32
