// Package zkwire is a minimal ZooKeeper client built on zkd's jute package,
// for tests that must send what go-zk cannot: opcodes it lacks (addWatch,
// checkWatches, removeWatches, multiRead, getEphemerals,
// getAllChildrenNumber, whoAmI, setWatches2), malformed paths, unknown
// opcodes and raw frames. It speaks to zkd and ZooKeeper 3.8 alike.
package zkwire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/zkd/zkd/jute"
)

// Client is one session over one TCP connection. Calls may be made from
// several goroutines; replies are matched to calls in order, as ZooKeeper
// answers a connection's requests in order.
type Client struct {
	conn net.Conn
	// SessionID, Passwd and Timeout are the server's ConnectResponse.
	SessionID int64
	Passwd    []byte
	Timeout   int32

	events  chan jute.WatcherEvent
	onFrame func(hdr jute.ReplyHeader, ev *jute.WatcherEvent)

	writeMu sync.Mutex
	mu      struct {
		sync.Mutex
		xid     int32
		pending []*call
		err     error
	}
	done chan struct{}
}

type call struct {
	xid  int32
	hdr  jute.ReplyHeader
	body []byte
	err  error
	done chan struct{}
}

// Options adjust Dial.
type Options struct {
	// Timeout is the requested session timeout; default 10s.
	Timeout time.Duration
	// SessionID and Passwd reattach to a session when SessionID is not 0.
	SessionID int64
	Passwd    []byte
	// LastZxidSeen is sent in the ConnectRequest.
	LastZxidSeen int64
	// ReadOnly, when not nil, sends the optional readOnly byte.
	ReadOnly *bool
	// DialConn, when not nil, opens the connection instead of a plain
	// TCP dial (a TLS dial, say).
	DialConn func(addr string) (net.Conn, error)
	// OnFrame, when not nil, sees every reply and notification (not
	// pings) in the order they arrive, before the reply reaches its
	// caller: ev is the event of a notification, nil for a reply.
	OnFrame func(hdr jute.ReplyHeader, ev *jute.WatcherEvent)
}

// ErrClosed is returned by calls on a closed or broken connection.
var ErrClosed = errors.New("zkwire: connection closed")

// Dial connects and performs the handshake. A ConnectResponse with
// timeout 0 (an expired or refused session) is returned as a Client whose
// SessionID is 0, with the connection closed, so tests can assert it.
func Dial(addr string, o Options) (*Client, error) {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	dial := o.DialConn
	if dial == nil {
		dial = func(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) }
	}
	conn, err := dial(addr)
	if err != nil {
		return nil, err
	}
	req := &jute.ConnectRequest{
		LastZxidSeen: o.LastZxidSeen,
		TimeOut:      int32(o.Timeout / time.Millisecond),
		SessionId:    o.SessionID,
		Passwd:       o.Passwd,
	}
	if req.Passwd == nil {
		req.Passwd = make([]byte, 16)
	}
	if o.ReadOnly != nil {
		req.HasReadOnly, req.ReadOnly = true, *o.ReadOnly
	}
	if err := WriteFrame(conn, jute.Encode(req)); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	frame, err := ReadFrame(br)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("zkwire: handshake: %w", err)
	}
	conn.SetReadDeadline(time.Time{})
	var resp jute.ConnectResponse
	if err := jute.Decode(frame, &resp); err != nil {
		conn.Close()
		return nil, fmt.Errorf("zkwire: connect response: %w", err)
	}
	c := &Client{conn: conn, SessionID: resp.SessionId, Passwd: resp.Passwd, Timeout: resp.TimeOut,
		events: make(chan jute.WatcherEvent, 1024), done: make(chan struct{}), onFrame: o.OnFrame}
	if resp.TimeOut <= 0 {
		conn.Close()
		close(c.done)
		return c, nil
	}
	go c.readLoop(br)
	go c.pingLoop()
	return c, nil
}

// WriteFrame writes one length-prefixed frame.
func WriteFrame(w io.Writer, b []byte) error {
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one length-prefixed frame of at most 16 MiB.
func ReadFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	l := binary.BigEndian.Uint32(n[:])
	if l > 16<<20 {
		return nil, fmt.Errorf("zkwire: frame of %d bytes", l)
	}
	b := make([]byte, l)
	_, err := io.ReadFull(r, b)
	return b, err
}

// Events delivers watch notifications in arrival order.
func (c *Client) Events() <-chan jute.WatcherEvent { return c.events }

// Done is closed when the connection ends.
func (c *Client) Done() <-chan struct{} { return c.done }

func (c *Client) readLoop(br *bufio.Reader) {
	defer close(c.done)
	for {
		frame, err := ReadFrame(br)
		if err != nil {
			c.fail(err)
			return
		}
		d := jute.NewDecoder(frame)
		var hdr jute.ReplyHeader
		hdr.Decode(d)
		if d.Err() != nil {
			c.fail(d.Err())
			return
		}
		switch hdr.Xid {
		case jute.XidNotification:
			var ev jute.WatcherEvent
			ev.Decode(d)
			if c.onFrame != nil {
				c.onFrame(hdr, &ev)
			}
			select {
			case c.events <- ev:
			default:
			}
			continue
		case jute.XidPing:
			continue
		}
		if c.onFrame != nil {
			c.onFrame(hdr, nil)
		}
		c.mu.Lock()
		if len(c.mu.pending) == 0 {
			c.mu.Unlock()
			c.fail(fmt.Errorf("zkwire: reply xid %d with no call pending", hdr.Xid))
			return
		}
		cl := c.mu.pending[0]
		c.mu.pending = c.mu.pending[1:]
		c.mu.Unlock()
		if cl.xid != hdr.Xid {
			cl.err = fmt.Errorf("zkwire: reply xid %d for call xid %d", hdr.Xid, cl.xid)
		}
		cl.hdr, cl.body = hdr, frame[d.Offset():]
		close(cl.done)
	}
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.mu.err == nil {
		c.mu.err = err
	}
	pending := c.mu.pending
	c.mu.pending = nil
	c.mu.Unlock()
	for _, cl := range pending {
		cl.err = ErrClosed
		close(cl.done)
	}
	c.conn.Close()
}

func (c *Client) pingLoop() {
	t := time.NewTicker(time.Duration(c.Timeout/3) * time.Millisecond)
	defer t.Stop()
	hdr := jute.Encode(&jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing})
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			c.writeMu.Lock()
			err := WriteFrame(c.conn, hdr)
			c.writeMu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// Call sends a request of opcode op with body req (nil for none) and
// decodes the reply body into resp (nil to ignore it) when the reply's
// error is 0. It returns the reply header; a non-zero header error is
// returned as the jute.Code error too.
func (c *Client) Call(op int32, req, resp jute.Record) (jute.ReplyHeader, error) {
	return c.CallXid(0, op, req, resp)
}

// CallXid is Call with a fixed xid (for the special xids -4 and -8); 0
// picks the next one.
func (c *Client) CallXid(xid, op int32, req, resp jute.Record) (jute.ReplyHeader, error) {
	e := jute.NewEncoder(nil)
	c.writeMu.Lock()
	c.mu.Lock()
	if c.mu.err != nil {
		c.mu.Unlock()
		c.writeMu.Unlock()
		return jute.ReplyHeader{}, ErrClosed
	}
	if xid == 0 {
		c.mu.xid++
		xid = c.mu.xid
	}
	cl := &call{xid: xid, done: make(chan struct{})}
	c.mu.pending = append(c.mu.pending, cl)
	c.mu.Unlock()
	(&jute.RequestHeader{Xid: xid, Type: op}).Encode(e)
	if req != nil {
		req.Encode(e)
	}
	err := WriteFrame(c.conn, e.Bytes())
	c.writeMu.Unlock()
	if err != nil {
		c.fail(err)
	}
	select {
	case <-cl.done:
	case <-time.After(30 * time.Second):
		return jute.ReplyHeader{}, fmt.Errorf("zkwire: op %d xid %d: no reply in 30s", op, xid)
	}
	if cl.err != nil {
		return cl.hdr, cl.err
	}
	if cl.hdr.Err != 0 {
		return cl.hdr, cl.hdr.Err
	}
	if resp != nil {
		if err := jute.Decode(cl.body, resp); err != nil {
			return cl.hdr, fmt.Errorf("zkwire: op %d reply: %w", op, err)
		}
	}
	return cl.hdr, nil
}

// SendRaw writes b as one frame, for malformed-input tests.
func (c *Client) SendRaw(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return WriteFrame(c.conn, b)
}

// Conn returns the underlying connection, for byte-level tests.
func (c *Client) Conn() net.Conn { return c.conn }

// Close sends closeSession, waits for its reply and closes the connection.
func (c *Client) Close() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	_, err := c.Call(jute.OpCloseSession, nil, nil)
	c.conn.Close()
	<-c.done
	return err
}

// Abandon closes the connection without closing the session.
func (c *Client) Abandon() {
	c.conn.Close()
	<-c.done
}
