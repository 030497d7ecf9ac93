package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/sasl"
)

// newSession is one operation of -workload session: open a connection
// to server with dial (TCP, or TLS with -tls-ca), create a session, authenticate by SASL DIGEST-MD5 when user
// is set (as a Java client with a JAAS Client section does right after
// the handshake), close the session and the connection. go-zk has no
// SASL, so the protocol is spoken directly.
func newSession(dial zk.Dialer, server string, timeout time.Duration, user, password string) error {
	nc, err := dial("tcp", server, timeout)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(timeout))
	br := bufio.NewReader(nc)
	req := jute.ConnectRequest{TimeOut: int32(timeout / time.Millisecond), Passwd: make([]byte, 16)}
	if err := writeFrame(nc, jute.Encode(&req)); err != nil {
		return err
	}
	frame, err := readFrame(br)
	if err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	var cr jute.ConnectResponse
	if err := jute.Decode(frame, &cr); err != nil || cr.TimeOut <= 0 {
		return fmt.Errorf("handshake refused (%v)", err)
	}
	xid := int32(0)
	call := func(op int32, body, resp jute.Record) error {
		xid++
		e := jute.NewEncoder(nil)
		(&jute.RequestHeader{Xid: xid, Type: op}).Encode(e)
		if body != nil {
			body.Encode(e)
		}
		if err := writeFrame(nc, e.Bytes()); err != nil {
			return err
		}
		frame, err := readFrame(br)
		if err != nil {
			return err
		}
		d := jute.NewDecoder(frame)
		var h jute.ReplyHeader
		h.Decode(d)
		if h.Err != 0 {
			return fmt.Errorf("%s: %w", jute.OpName(op), h.Err)
		}
		if resp != nil {
			resp.Decode(d)
		}
		return d.Err()
	}
	if user != "" {
		cl := sasl.NewClient(user, password, nil)
		token := cl.First()
		for !cl.Complete() {
			var resp jute.SetSASLResponse
			if err := call(jute.OpSASL, &jute.GetSASLRequest{Token: token}, &resp); err != nil {
				return err
			}
			if token, err = cl.Evaluate(resp.Token); err != nil {
				return err
			}
		}
	}
	return call(jute.OpCloseSession, nil, nil)
}

func writeFrame(w io.Writer, b []byte) error {
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err := w.Write(buf)
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", size)
	}
	b := make([]byte, size)
	_, err := io.ReadFull(r, b)
	return b, err
}
