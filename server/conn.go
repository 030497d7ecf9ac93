// The connection: its state, its slots, its start and end, and the guards
// of its goroutines (serve, close, endConn); the frames it reads and writes
// outside the pipeline (readFrameInto, writeDirect).

package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/sasl"
	"github.com/zkd/zkd/zab"
)

// requestHeaderSize is the encoded size of a jute.RequestHeader.
const requestHeaderSize = 8

// errFrameLength is returned by readFrame for a length prefix that is
// negative or larger than Config.MaxBuffer.
type errFrameLength struct{ n int32 }

func (e errFrameLength) Error() string {
	return fmt.Sprintf("server: frame length %d out of range", e.n)
}

// conn is one client connection. See the package documentation for its
// goroutines.
type conn struct {
	s      *Server
	nc     net.Conn
	remote string
	ip     string
	br     *lazyReader
	seq    uint64 // accept order, for listings

	tree           *datatree.Tree // the tree at the handshake; see readLoop
	dec            jute.Decoder   // the reader's, reset for each request
	sessionID      atomic.Int64
	timeout        atomic.Int32    // negotiated session timeout, ms
	established    atomic.Int64    // ms since the epoch, 0 before the handshake
	closingSession atomic.Bool     // a closeSession request is in flight
	lingerExtra    atomic.Int64    // bytes linger reads beyond its 1 MiB: a refused frame's rest
	readOnly       atomic.Bool     // a read-only session on a member without quorum
	fourLetter     atomic.Bool     // the connection carries a 4-letter word
	secure         atomic.Bool     // the connection completed a TLS handshake
	x509Subject    string          // reader only: the verified client certificate's subject
	raw            syscall.RawConn // the socket, for writeInline; nil on TLS and wrapped connections

	done      chan struct{}   // closed once by close
	ctx       context.Context // cancelled by close
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup // the completer and the writer, while they run

	slots slotQueue // requests in arrival order, to the completer

	out struct {
		sync.Mutex
		q         [][]byte
		bytes     int
		writing   bool          // a writer goroutine is draining q
		idle      bool          // that writer lingers, waiting on wake
		inline    bool          // writing is a reply being written by writeInline
		handoff   bool          // a writer was wanted during writeInline: it starts one after
		wake      chan struct{} // the lingering writer's wake-up (capacity 1), while writing
		deferring bool          // a watch-setting read is executing: hold its events back
		holdPath  string        // hold only events on this path ("" with holdAll: all)
		holdAll   bool          // hold every event (addWatch: descendants fire too)
		deferred  [][]byte      // events held back during a read
		sealed    bool          // no more frames: the writer closes once q drains
	}

	auth struct {
		sync.Mutex
		ids []jute.Id                 // authenticated ids, in the order they were added
		all atomic.Pointer[[]jute.Id] // ids then the ip id; nil until the first auth
	}
	ipOnly []jute.Id // the identities before any auth

	// inlineW is the write writeInline makes, owned by whoever claimed
	// the socket for it: the frame, the bytes written, and the function
	// given to the raw conn, made once so that a write allocates no
	// closure.
	inlineW struct {
		frame []byte
		n     int
		fn    func(fd uintptr) bool
	}

	sasl sasl.Exchange // reader only: the SASL exchange, nil before the first sasl request

	readsQueued   uint64        // reader only: reads handed to the completer
	readsExecuted atomic.Uint64 // reads the completer executed
	readSignal    chan struct{} // capacity 1: a slot completed (readsExecuted may have grown)
	rbuf          []byte        // reader only: frame buffer reused across reads
	frameOwned    bool          // reader only: the current frame is not rbuf, nothing reuses it
	lastStart     time.Time     // reader only: when the previous request was read (see busy)
	lastGap       time.Duration // reader only: the time between the last two requests
	soonUntil     time.Time     // reader only: the read deadline nextSoon set, zero once another replaced it

	recv     atomic.Int64 // packets received
	lastRecv atomic.Int64 // ms since the epoch of the last packet (or of the accept)
	sent     atomic.Int64 // packets sent
	pending  atomic.Int64 // requests received but not answered
	lat      latencyStats
	last     struct {
		sync.Mutex
		op       string
		cxid     int32
		zxid     int64
		respTime time.Time
		latency  int64
	}
}

// slot is one request waiting in a connection's pipeline.
type slot struct {
	xid   int32
	op    int32
	start time.Time
	path  string // for logs; see slotPath
	wbody []byte // a write's request body, as submitted

	req        jute.Record // a read's decoded request
	fut        *zab.Future // a write's pending result
	frame      []byte      // a reply computed by the reader
	code       jute.Code   // an error reply computed at completion
	body       jute.Record // the body sent with code, if any
	closeAfter bool        // close the connection after this reply
	readSeq    uint64      // reads only: position among the connection's reads
	accounted  bool        // account ran: the request no longer counts as outstanding
}

func newConn(s *Server, nc net.Conn, ip string) *conn {
	c := &conn{
		seq:        s.connSeq.Add(1),
		s:          s,
		nc:         nc,
		remote:     nc.RemoteAddr().String(),
		ip:         ip,
		br:         newLazyReader(nc),
		done:       make(chan struct{}),
		readSignal: make(chan struct{}, 1),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.ipOnly = []jute.Id{{Scheme: schemeIP, Id: ip}}
	if tc, ok := nc.(*net.TCPConn); ok {
		c.raw, _ = tc.SyscallConn()
	}
	c.lastRecv.Store(time.Now().UnixMilli())
	return c
}

// logger returns the server logger with the connection's keys.
func (c *conn) logger() *zap.Logger {
	return c.s.log.With(zap.String("session", hexID(c.sessionID.Load())), zap.String("remote", c.remote))
}

// close shuts the connection down once; it does not block.
func (c *conn) close(reason string) {
	c.closeOnce.Do(func() {
		c.out.Lock()
		c.out.sealed = true
		c.out.Unlock()
		close(c.done)
		c.cancel()
		c.nc.Close()
		if oc, ok := c.s.b.(OriginCloser); ok && c.pending.Load() > 0 {
			oc.ConnectionClosed(c.seq)
		}
		c.s.log.Debug("connection closed", zap.String("session", hexID(c.sessionID.Load())),
			zap.String("remote", c.remote), zap.String("reason", reason))
	})
}

// linger half-closes a connection whose last reply is written and reads
// what the client still sends until it closes too (at most a second), as
// ZooKeeper shuts output before closing: closing with unread input makes
// the kernel reset the connection, which can lose the reply just written
// (an AuthFailed before the client's next request). The reader goroutine
// has stopped reading by then: the last slot sealed the connection.
func (c *conn) linger() {
	tc, ok := c.nc.(*net.TCPConn)
	if !ok || tc.CloseWrite() != nil {
		return
	}
	tc.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, io.LimitReader(tc, 1<<20+c.lingerExtra.Load()))
}

// closeAfterWrites ends the connection after a frame over jute.maxbuffer
// the way ZooKeeper 3.8 does, with a FIN rather than a reset: the queue is
// sealed, the writer sends what it holds, then lingers, also reading the
// refused frame's unread bytes (up to its declared length) so that the
// kernel does not answer them with a reset. Replies still being computed
// are dropped, as ZooKeeper drops them. Called by the reader, which stops.
func (c *conn) closeAfterWrites(unread int64) {
	c.lingerExtra.Store(max(unread, 0))
	c.out.Lock()
	c.out.sealed = true
	c.out.Unlock()
	c.signal()
	<-c.done
}

// guard is deferred by every connection goroutine: a panic closes this
// connection only.
func (c *conn) guard(where string) {
	if r := recover(); r != nil {
		c.panicked(where, r)
	}
}

// panicked logs a recovered panic and closes the connection.
func (c *conn) panicked(where string, r any) {
	c.s.stats.panics.Add(1)
	c.logger().Error("panic serving connection, closing it", zap.String("in", where),
		zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
	c.close("panic")
}

// serve runs the connection: 4-letter word or handshake, then the reader.
// It returns after every goroutine of the connection ended, or once the
// reader moved to a fresh goroutine (see handOff), which then ends the
// connection.
func (c *conn) serve() {
	var handedOff bool
	defer c.endReader(&handedOff)
	// As ZooKeeper's sessionlessCnxnTimeout: the TLS handshake and the
	// first packet must come within it.
	c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.sessionlessTimeout()))
	if !c.secureHandshake() {
		return
	}
	p, err := c.br.Peek(4)
	if err != nil {
		return
	}
	if isFourLetterWord(string(p)) {
		c.fourLetter.Store(true)
		c.serveFourLetter(string(p))
		return
	}
	if !c.handshake() {
		return
	}
	handedOff = c.readLoop()
}

// endConn ends the connection once its reader stopped: it waits for the
// other goroutines and forgets the connection.
func (c *conn) endConn() {
	c.close("reader done")
	c.wg.Wait()
	c.dropPending()
	if c.sessionID.Load() != 0 {
		if t := c.s.b.Tree(); t != nil {
			t.RemoveWatcher(c)
		}
	}
	c.s.removeConn(c)
}

// dropPending forgets the requests still queued when the connection ended,
// so the outstanding counts stay right.
func (c *conn) dropPending() {
	for range c.slots.drain() {
		c.pending.Add(-1)
		c.s.stats.outstanding.Add(-1)
	}
}

// readFrame reads one length-prefixed frame, enforcing MaxBuffer, into a
// new buffer.
func (c *conn) readFrame() ([]byte, error) { return c.readFrameInto(nil) }

// readFrameInto reads one frame into buf when it is large enough, else into
// a new buffer.
func (c *conn) readFrameInto(buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	if n < 0 || int64(n) > int64(c.s.cfg.MaxBuffer) {
		return nil, errFrameLength{n}
	}
	if cap(buf) >= int(n) {
		buf = buf[:n]
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(c.br, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	c.recv.Add(1)
	c.lastRecv.Store(time.Now().UnixMilli())
	c.s.stats.packetsReceived.Add(1)
	c.s.stats.bytesReceived.Add(int64(4 + n))
	return buf, nil
}

// logReadError logs why reading from the client stopped.
func (c *conn) logReadError(err error) {
	var fl errFrameLength
	switch {
	case errors.As(err, &fl):
		c.s.stats.largeRequestsRejected.Add(1)
		c.logger().Warn("frame rejected: length out of range, closing connection",
			zap.Int32("length", fl.n), zap.Int("maxBuffer", c.s.cfg.MaxBuffer))
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.logger().Warn("frame rejected: truncated, closing connection", zap.Error(err))
	case errors.Is(err, io.EOF):
		c.s.zm.connectionDrops.Inc()
		c.logger().Debug("client closed connection")
	case errors.Is(err, net.ErrClosed):
		c.logger().Debug("connection closed")
	default:
		c.logger().Debug("read failed, closing connection", zap.Error(err))
	}
}

// writeDirect writes one frame synchronously; only the handshake and the
// 4-letter words use it, before the writer runs.
func (c *conn) writeDirect(frame []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.maxTimeout()))
	_, err := c.nc.Write(frame)
	if err == nil {
		c.sent.Add(1)
		c.s.stats.packetsSent.Add(1)
	}
	return err
}
