package server

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
)

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// rawClient speaks frames directly, for byte-level tests.
type rawClient struct {
	t  testing.TB
	nc net.Conn
	id int64
	pw []byte
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc}
}

func frameOf(b []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	return append(out, b...)
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readFrame returns the next frame, or an error (io.EOF once the server
// closed the connection).
func (c *rawClient) readFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hdr [4]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	_, err := io.ReadFull(c.nc, b)
	return b, err
}

func (c *rawClient) mustFrame() []byte {
	c.t.Helper()
	b, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	return b
}

// expectClosed checks the server closes the connection without sending
// anything more.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	b, err := c.readFrame()
	if err == nil {
		c.t.Fatalf("expected the connection closed, got frame %x", b)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("connection still open: %v", err)
	}
}

// connect performs a handshake and returns the decoded response.
func (c *rawClient) connect(req jute.ConnectRequest) (jute.ConnectResponse, []byte) {
	c.t.Helper()
	c.write(frameOf(jute.Encode(&req)))
	b := c.mustFrame()
	var resp jute.ConnectResponse
	if err := jute.Decode(b, &resp); err != nil {
		c.t.Fatalf("decode connect response %x: %v", b, err)
	}
	c.id, c.pw = resp.SessionId, resp.Passwd
	return resp, b
}

func (c *rawClient) session() {
	c.t.Helper()
	resp, _ := c.connect(jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)})
	if resp.SessionId == 0 {
		c.t.Fatal("no session")
	}
}

// send writes one request.
func (c *rawClient) send(xid, op int32, body jute.Record) {
	c.t.Helper()
	e := jute.NewEncoder(nil)
	(&jute.RequestHeader{Xid: xid, Type: op}).Encode(e)
	if body != nil {
		body.Encode(e)
	}
	c.write(frameOf(e.Bytes()))
}

// reply reads one reply, decoding its body into resp when the reply is
// not an error.
func (c *rawClient) reply(resp jute.Record) jute.ReplyHeader {
	c.t.Helper()
	b := c.mustFrame()
	d := jute.NewDecoder(b)
	var h jute.ReplyHeader
	h.Decode(d)
	if d.Err() != nil {
		c.t.Fatalf("reply header %x: %v", b, d.Err())
	}
	if resp != nil && h.Err == 0 && h.Xid != jute.XidNotification {
		resp.Decode(d)
		if d.Err() != nil || d.Remaining() != 0 {
			c.t.Fatalf("reply body %x: %v (%d left)", b, d.Err(), d.Remaining())
		}
	}
	return h
}

// call sends a request and reads its reply.
func (c *rawClient) call(xid, op int32, req, resp jute.Record) jute.ReplyHeader {
	c.t.Helper()
	c.send(xid, op, req)
	return c.reply(resp)
}
