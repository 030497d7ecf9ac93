package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/zkd/zkd/jute"
)

// rawXidBase is the first xid the shell uses for the requests it sends itself
// on go-zk's connection. go-zk numbers its own requests upwards from 1, so
// replies at or above this base belong to the shell (go-zk would need a
// billion requests in one process to reach it).
const rawXidBase int32 = 0x60000000

// errWireClosed reports that the connection carrying a request went away
// before its reply arrived.
var errWireClosed = errors.New("zkcli: connection closed before the reply")

// rawReply is one reply the wire diverted to the shell: the header and the
// body bytes after it.
type rawReply struct {
	hdr  jute.ReplyHeader
	body []byte
}

// wireConn wraps the TCP connection go-zk dials so that the shell can speak
// every opcode on go-zk's session: go-zk keeps the handshake, pings,
// reconnects and authentication, while the shell writes whole request frames
// between go-zk's frames and takes back the replies to its own xids before
// go-zk reads the stream. go-zk writes each frame with a single Write call,
// so a mutex around writes keeps frames whole.
//
// Read is only ever called by go-zk's receive goroutine; everything it
// touches except the waiter table and the zxid hook belongs to that goroutine.
type wireConn struct {
	net.Conn

	wmu sync.Mutex // serializes frame writes

	shook   bool   // the handshake reply has been passed through
	pending []byte // the rest of the frame go-zk is reading

	// onZxid, if set, is called with the zxid of every reply read.
	onZxid func(int64)
	// addr is the address dialled, host:port as the connection string
	// names it (GSSAPI names the server principal after its host).
	addr string

	mu struct {
		sync.Mutex
		waiters map[int32]chan rawReply
		err     error // set once the connection failed
	}
}

// newWireConn wraps c.
func newWireConn(c net.Conn, onZxid func(int64)) *wireConn {
	w := &wireConn{Conn: c, onZxid: onZxid}
	w.mu.waiters = make(map[int32]chan rawReply)
	return w
}

// Write writes one whole frame for go-zk.
func (w *wireConn) Write(p []byte) (int, error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.Conn.Write(p)
}

// Read hands go-zk the bytes of the frames meant for it, reading whole frames
// from the socket and diverting the shell's replies to their waiters.
func (w *wireConn) Read(p []byte) (int, error) {
	for len(w.pending) == 0 {
		frame, err := w.readFrame()
		if err != nil {
			w.fail(err)
			return 0, err
		}
		if !w.shook {
			w.shook = true
			w.pending = frame
			break
		}
		if w.divert(frame[4:]) {
			continue
		}
		w.pending = frame
	}
	n := copy(p, w.pending)
	w.pending = w.pending[n:]
	return n, nil
}

// readFrame reads one length-prefixed frame, prefix included.
func (w *wireConn) readFrame() ([]byte, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(w.Conn, lenBuf[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("zkcli: reply frame of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, lenBuf[:])
	if _, err := io.ReadFull(w.Conn, frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}

// divert delivers body to the shell if its xid is one of the shell's, and
// notes the zxid of every reply.
func (w *wireConn) divert(body []byte) bool {
	var hdr jute.ReplyHeader
	d := jute.NewDecoder(body)
	hdr.Decode(d)
	if d.Err() != nil {
		return false
	}
	if hdr.Xid != jute.XidNotification && hdr.Xid != jute.XidPing && hdr.Zxid > 0 && w.onZxid != nil {
		w.onZxid(hdr.Zxid)
	}
	if hdr.Xid < rawXidBase {
		return false
	}
	w.mu.Lock()
	ch, ok := w.mu.waiters[hdr.Xid]
	delete(w.mu.waiters, hdr.Xid)
	w.mu.Unlock()
	if ok {
		ch <- rawReply{hdr: hdr, body: body[d.Offset():]}
	}
	return true
}

// fail records the connection's failure and wakes every waiter.
func (w *wireConn) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.err == nil {
		w.mu.err = err
	}
	for xid, ch := range w.mu.waiters {
		close(ch)
		delete(w.mu.waiters, xid)
	}
}

// Close closes the socket and wakes every waiter.
func (w *wireConn) Close() error {
	err := w.Conn.Close()
	w.fail(net.ErrClosed)
	return err
}

// send writes one request frame with the given xid and returns the channel
// its reply will arrive on; the channel is closed if the connection fails
// first.
func (w *wireConn) send(xid, op int32, req jute.Record) (<-chan rawReply, error) {
	ch := make(chan rawReply, 1)
	w.mu.Lock()
	if w.mu.err != nil {
		w.mu.Unlock()
		return nil, errWireClosed
	}
	w.mu.waiters[xid] = ch
	w.mu.Unlock()

	frame := jute.AppendFrame(nil, &jute.RequestHeader{Xid: xid, Type: op}, req)
	w.wmu.Lock()
	_, err := w.Conn.Write(frame)
	w.wmu.Unlock()
	if err != nil {
		w.mu.Lock()
		delete(w.mu.waiters, xid)
		w.mu.Unlock()
		return nil, errWireClosed
	}
	return ch, nil
}
