package jute

import (
	"encoding/binary"
	"fmt"
)

// DefaultMaxBuffer is ZooKeeper's default jute.maxbuffer: the largest frame
// (and znode data) a server accepts, 0xfffff bytes. A frame whose length
// prefix exceeds the configured limit makes ZooKeeper close the connection.
const DefaultMaxBuffer = 0xfffff

// AppendFrame appends one wire frame to buf: a 4-byte big-endian length and
// then the encodings of recs in order (for example a ReplyHeader and a
// response body; nil records are skipped). It returns the extended slice.
func AppendFrame(buf []byte, recs ...Record) []byte {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	e := NewEncoder(buf)
	for _, r := range recs {
		if r != nil {
			r.Encode(e)
		}
	}
	buf = e.Bytes()
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
	return buf
}

// DecodeConnectRequest decodes the body of a connection's first frame as
// ZooKeeper 3.8 does: the optional readOnly byte is read when present and
// any bytes after it are ignored (ZooKeeper answers such requests normally).
// A frame too short for the mandatory fields is an error.
func DecodeConnectRequest(b []byte) (*ConnectRequest, error) {
	r := &ConnectRequest{}
	d := NewDecoder(b)
	r.Decode(d)
	if d.Err() != nil {
		return nil, fmt.Errorf("jute: connect request: %w", d.Err())
	}
	return r, nil
}
