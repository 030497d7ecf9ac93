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
	"github.com/zkd/zkd/session"
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

	sasl *sasl.Server // reader only: the SASL exchange, nil before the first sasl request

	readsQueued   uint64        // reader only: reads handed to the completer
	readsExecuted atomic.Uint64 // reads the completer executed
	readSignal    chan struct{} // capacity 1: a slot completed (readsExecuted may have grown)
	rbuf          []byte        // reader only: frame buffer reused across reads
	frameOwned    bool          // reader only: the current frame is not rbuf, nothing reuses it

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

// handshake reads the ConnectRequest and answers it. It returns true when
// the connection carries a live session.
func (c *conn) handshake() bool {
	frame, err := c.readFrame()
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			c.s.zm.sessionlessExpired.Inc()
		}
		c.logReadError(err)
		if fl := (errFrameLength{}); errors.As(err, &fl) {
			// A FIN, not a reset, as ZooKeeper 3.8 (see closeAfterWrites);
			// no writer runs yet, so linger here.
			c.lingerExtra.Store(max(int64(fl.n), 0))
			c.linger()
		}
		return false
	}
	var req jute.ConnectRequest
	d := jute.NewDecoder(frame)
	req.Decode(d)
	if d.Err() != nil {
		c.logger().Warn("connection refused: malformed connect request", zap.Error(d.Err()), zap.Int("length", len(frame)))
		return false
	}
	if !c.s.serving() {
		if !req.ReadOnly || !c.s.readOnlyAllowed() {
			c.logger().Info("connection refused: this member is not serving (no quorum)")
			return false
		}
		// readonlymode.enabled: serve a client that asked for read-only
		// (ZooKeeper's ReadOnlyZooKeeperServer) without touching the log.
		c.readOnly.Store(true)
	}
	if !c.s.connThrottle.allow(req.SessionId != 0) {
		c.s.stats.connectionRejected.Add(1)
		c.logger().Warn("connection refused: connection throttle (zookeeper.connection_throttle_tokens) is out of tokens",
			zap.Int("connection_throttle_tokens", c.s.cfg.ConnThrottle.Tokens), zap.String("requested", hexID(req.SessionId)))
		return false
	}
	c.s.zm.connectionRequests.Inc() // as ZooKeeper: connect requests past the throttle
	if req.SessionId != 0 && !c.readOnly.Load() && !c.s.syncReattach() {
		c.logger().Info("connection refused: could not sync with the leader before resuming the session",
			zap.String("requested", hexID(req.SessionId)))
		return false
	}
	c.tree = c.s.b.Tree()
	if last := c.s.b.LastZxid(); req.LastZxidSeen > last && !c.s.waitZxid(req.LastZxidSeen) {
		c.logger().Warn("connection refused: client has seen a zxid this member has not applied",
			zap.String("lastZxidSeen", hexID(req.LastZxidSeen)), zap.String("lastZxid", hexID(last)))
		return false
	}
	lo := int32(c.s.cfg.minTimeout() / time.Millisecond)
	hi := int32(c.s.cfg.maxTimeout() / time.Millisecond)
	timeout := session.Negotiate(req.TimeOut, lo, hi)
	resp := jute.ConnectResponse{HasReadOnly: req.HasReadOnly}
	id := req.SessionId
	if c.readOnly.Load() {
		if id == 0 {
			id = c.s.localSessionID()
		} else if !session.CheckPassword(id, req.Passwd) {
			resp.Passwd = make([]byte, 16)
			c.writeDirect(encodeFrame(&resp))
			return false
		}
		resp.ReadOnly = true
	} else if id == 0 {
		c.s.zm.prepQueued.Inc()
		fut := c.s.b.Submit(&zab.Request{Op: jute.OpCreateSession, Timeout: timeout})
		select {
		case <-fut.Done():
		case <-c.done:
			return false
		}
		res := fut.Result()
		if res.Err != nil {
			c.logger().Warn("connection refused: could not create session", zap.Error(res.Err))
			return false
		}
		id = res.SessionID
		// As ZooKeeper's FinalRequestProcessor, the createSession is the
		// connection's first operation for cons: lop=SESS, lcxid=0.
		c.last.Lock()
		c.last.op, c.last.cxid, c.last.zxid, c.last.respTime = "SESS", 0, res.Zxid, time.Now()
		c.last.Unlock()
	} else {
		// As ZooKeeper does, any attempt to resume a session first closes
		// the session's current connection, before the password is checked.
		c.s.closeSessionConn(id, c)
		_, live := c.s.b.SessionTimeout(id)
		if !live || !session.CheckPassword(id, req.Passwd) || !c.s.b.Touch(id) {
			resp.Passwd = make([]byte, 16)
			c.writeDirect(encodeFrame(&resp))
			c.logger().Info("session reattach refused: unknown or expired session, or wrong password",
				zap.String("requested", hexID(id)), zap.Bool("live", live))
			return false
		}
	}
	resp.TimeOut = timeout
	resp.SessionId = id
	resp.Passwd = session.Password(id)
	c.sessionID.Store(id)
	c.timeout.Store(timeout)
	c.s.registerSession(id, c)
	if err := c.writeDirect(encodeFrame(&resp)); err != nil {
		c.logger().Debug("write of connect response failed", zap.Error(err))
		return false
	}
	c.established.Store(time.Now().UnixMilli())
	c.s.log.Info("session established", zap.String("session", hexID(id)), zap.String("remote", c.remote),
		zap.Int32("timeout", timeout), zap.Bool("reattached", req.SessionId != 0))
	return true
}

// readDeadline is how long the reader waits for the next packet: twice the
// session timeout, past which the session is expired anyway.
func (c *conn) readDeadline() time.Time {
	return time.Now().Add(2 * time.Duration(c.timeout.Load()) * time.Millisecond)
}

// readLoop reads requests until the connection ends or a request ends it
// (false), or until it handed the reading to a fresh goroutine (true): see
// handOff.
func (c *conn) readLoop() bool {
	for {
		if c.br.Buffered() == 0 && !c.nextSoon() {
			c.handOff()
			return true
		}
		if !c.frameBuffered() {
			// The rest of the frame is still to come: wait for it as
			// long as for any packet. (A whole buffered frame needs no
			// deadline: reading it makes no system call.)
			c.nc.SetReadDeadline(c.readDeadline())
		}
		if !c.readOne() {
			return false
		}
	}
}

// frameBuffered reports whether a whole frame is in the read buffer.
func (c *conn) frameBuffered() bool {
	n := c.br.Buffered()
	if n < 4 {
		return false
	}
	p, err := c.br.Peek(4)
	return err == nil && int64(binary.BigEndian.Uint32(p)) <= int64(n-4)
}

// readOne reads and handles one request; false when the connection ends.
func (c *conn) readOne() bool {
	frame, err := c.readFrameInto(c.rbuf)
	c.frameOwned = cap(frame) > 256
	if !c.frameOwned {
		c.rbuf = frame // keep a small buffer for the next frame: an idle connection holds no more
	}
	if err != nil {
		c.logReadError(err)
		if fl := (errFrameLength{}); errors.As(err, &fl) {
			c.closeAfterWrites(int64(fl.n))
		}
		return false
	}
	if len(frame) < requestHeaderSize {
		c.logger().Warn("frame rejected: shorter than a request header, closing connection", zap.Int("length", len(frame)))
		return false
	}
	if c.s.b.Tree() != c.tree {
		// The member replaced its tree (a snapshot was installed): the
		// watches of this connection are gone with the old one. Close
		// so the client reconnects and re-registers them with
		// setWatches, which also reports what changed meanwhile.
		c.logger().Info("tree replaced, closing connection so the client re-registers its watches")
		return false
	}
	var hdr jute.RequestHeader
	c.dec.Reset(frame[:requestHeaderSize])
	hdr.Decode(&c.dec)
	body := frame[requestHeaderSize:]
	sl := &slot{xid: hdr.Xid, op: hdr.Type, start: time.Now()}

	if !c.readOnly.Load() && !c.s.b.Touch(c.sessionID.Load()) {
		sl.code, sl.closeAfter = jute.CodeSessionExpired, true
		c.logger().Info("request for a session that is gone, closing connection", zap.String("op", opName(hdr.Type)))
		c.push(sl)
		<-c.done
		return false
	}

	if !c.authEnforced(hdr.Type) {
		sl.frame, sl.closeAfter = encodeReply(jute.ReplyHeader{Xid: hdr.Xid, Err: jute.CodeSessionClosedRequireSASL}, nil), true
		c.push(sl)
		<-c.done
		return false
	}

	if !c.admit(sl) {
		return false
	}
	switch hdr.Type {
	case jute.OpPing:
	case jute.OpAuth:
		frame, ok := c.handleAuth(hdr.Xid, body)
		if frame == nil {
			return false
		}
		sl.frame, sl.closeAfter = frame, !ok
	case jute.OpSASL:
		frame, closeAfter := c.handleSASL(hdr.Xid, body)
		if frame == nil {
			return false
		}
		sl.frame, sl.closeAfter = frame, closeAfter
	case jute.OpCloseSession:
		if !c.awaitReads() {
			return false
		}
		c.closingSession.Store(true)
		if !c.readOnly.Load() {
			sl.fut = c.s.b.Submit(&zab.Request{Op: jute.OpCloseSession, SessionID: c.sessionID.Load(), Auth: c.authIDs()})
		}
		sl.closeAfter = true
	default:
		c.prepare(sl, body)
	}
	last := sl.closeAfter // the completer may set it too: read it before pushing
	c.s.zm.notePrepared(sl.start)
	if !c.push(sl) || !c.holdReads(sl.xid) {
		return false
	}
	if last {
		<-c.done
		return false
	}
	return true
}

// prepare decodes a request other than ping, auth, sasl and closeSession:
// a write is submitted at once (after earlier reads executed), a read is
// left for the completer.
func (c *conn) prepare(sl *slot, body []byte) {
	if sl.code == jute.CodeThrottledOp {
		return // held back too long by the throttle: answered without running
	}
	switch sl.op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
		jute.OpDelete, jute.OpSetData, jute.OpSetACL, jute.OpMulti, jute.OpCheck:
		// A plain write is decoded where it applies, not here too: a
		// malformed one goes through the log all the same, where it
		// fails with MarshallingError and consumes a zxid, as in
		// ZooKeeper. Its path, for logs only, is decoded if one is
		// written (slotPath).
		c.submitWrite(sl, body, 0)
		return
	}
	rec, ok := jute.NewRequest(sl.op)
	if !ok && sl.op != jute.OpDeleteContainer {
		c.logger().Warn("unknown opcode, closing connection", zap.Int32("op", sl.op))
		sl.frame = encodeReply(jute.ReplyHeader{Xid: sl.xid, Zxid: -1, Err: jute.CodeUnimplemented}, nil)
		sl.closeAfter = true
		return
	}
	var reject jute.Code
	if rec != nil {
		// Trailing bytes are ignored, as ZooKeeper does.
		d := &c.dec
		d.Reset(body)
		rec.Decode(d)
		if d.Err() != nil {
			c.logger().Debug("malformed request body", zap.String("op", opName(sl.op)), zap.Error(d.Err()))
			if !isWrite(sl.op) {
				sl.code = jute.CodeMarshallingError
				return
			}
			// A malformed write still goes through the log, where it
			// fails with MarshallingError and consumes a zxid, as in
			// ZooKeeper.
		} else {
			sl.path = pathOf(rec)
		}
	}
	switch sl.op {
	case jute.OpReconfig:
		if !c.s.cfg.ReconfigEnabled {
			// Refused, but through the log: ZooKeeper's refusal is an
			// error txn with its own zxid.
			reject = jute.CodeReconfigDisabled
		}
	case jute.OpMultiRead:
		if !rec.(*jute.MultiRequest).IsRead() && len(rec.(*jute.MultiRequest).Ops) > 0 {
			// Only writes (a mix of reads and writes failed to decode
			// above): ZooKeeper 3.8 parses them as a multi, fails on the
			// first one and answers MarshallingError with the results
			// gathered so far, none, as its body.
			sl.code, sl.body = jute.CodeMarshallingError, &jute.MultiResponse{}
			return
		}
	case jute.OpDeleteContainer:
		// Server-internal: ZooKeeper 3.8 answers a client's
		// deleteContainer, whatever its body, with BadArguments through
		// the log (a zxid is consumed) and keeps the connection.
		reject = jute.CodeBadArguments
	}
	if isWrite(sl.op) {
		c.submitWrite(sl, body, reject)
		return
	}
	sl.req = rec
	c.readsQueued++
	sl.readSeq = c.readsQueued
}

// submitWrite hands a write to the log (reject, if not CodeOK, makes it
// fail there), once the reads queued before it executed.
func (c *conn) submitWrite(sl *slot, body []byte, reject jute.Code) {
	if c.readOnly.Load() {
		sl.code = jute.CodeNotReadOnly
		return
	}
	if !c.awaitReads() {
		sl.code = jute.CodeConnectionLoss
		return
	}
	// A small frame's buffer is reused for the next frame: the log then
	// keeps its own copy of the body. A larger one is the request's alone.
	if !c.frameOwned {
		body = append([]byte(nil), body...)
	}
	sl.wbody = body
	sl.fut = c.s.b.Submit(&zab.Request{Op: sl.op, SessionID: c.sessionID.Load(), Auth: c.authIDs(),
		Body: body, Reject: reject, Origin: c.seq})
}

// slotPath is the path of sl's request, for logs: a write's is decoded
// from its body on demand.
func slotPath(sl *slot) string {
	switch {
	case sl.path != "":
		return sl.path
	case sl.req != nil:
		return pathOf(sl.req)
	case sl.wbody != nil:
		if rec, ok := jute.NewRequest(sl.op); ok && rec != nil {
			d := jute.NewDecoder(sl.wbody)
			rec.Decode(d)
			if d.Err() == nil {
				return pathOf(rec)
			}
		}
	}
	return ""
}

// awaitReads waits until the completer executed every read queued so far;
// false if the connection closed first.
func (c *conn) awaitReads() bool {
	for c.readsExecuted.Load() < c.readsQueued {
		select {
		case <-c.readSignal:
		case <-c.done:
			return false
		}
	}
	return true
}

// push hands a slot to the completer, starting one if none runs, after
// waiting while MaxPendingRequests slots are queued; false if the
// connection closed.
func (c *conn) push(sl *slot) bool {
	for c.slots.len() >= c.s.cfg.MaxPendingRequests {
		select {
		case <-c.readSignal:
		case <-c.done:
			return false
		}
	}
	c.pending.Add(1)
	c.s.stats.outstanding.Add(1)
	hand := handQueue
	switch {
	case sl.fut == nil && sl.op != jute.OpSync:
		// Nothing to wait for: answered here if nothing is before it.
		hand = handInline
	case sl.fut != nil && !sl.closeAfter:
		// A write: if nothing is before it, nobody need wait for it.
		// The goroutine that completes its future (the apply goroutine,
		// once it applied) finishes it, which saves waking a completer
		// for every write.
		hand = handPark
	}
	switch how, _ := c.slots.add(sl, hand); how {
	case addInline:
		c.finish(sl)
	case addParked:
		if !sl.fut.OnComplete(func() { c.finishHooked(sl) }) {
			c.finishHooked(sl) // it already completed
		}
	case addStart:
		c.wg.Add(1)
		c.spawn(c.complete, "completer")
	case addWake:
		c.slots.wakeUp()
	}
	return true
}

// finishHooked finishes a parked write on the goroutine that completed its
// future, unless a completer took it first; then it wakes the completer of
// the slots queued behind it. It must not block, and starts no goroutine
// (it runs on no goroutine of the connection, so it cannot count one in
// c.wg): finish of a completed write only encodes, counts and writes
// without waiting (see enqueue).
func (c *conn) finishHooked(sl *slot) {
	if !c.slots.hook(sl) {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			c.slots.unhook()
			c.panicked("reply", r)
		}
	}()
	c.finish(sl)
	c.slots.unhook()
}

// isWrite reports whether a request goes through the log.
func isWrite(op int32) bool {
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
		jute.OpDelete, jute.OpSetData, jute.OpSetACL, jute.OpMulti, jute.OpCheck, jute.OpReconfig,
		jute.OpDeleteContainer:
		return true
	}
	return false
}

// complete is the completer goroutine: it answers slots in order, and
// lingers for lingerFor when none is left before it ends, so an idle
// connection parks no completer.
func (c *conn) complete() {
	wake := c.slots.wakeChan()
	var timer *time.Timer
	for {
		select {
		case <-c.done:
			return
		default:
		}
		sl := c.slots.next()
		if sl != nil {
			if !c.finish(sl) {
				return
			}
			continue
		}
		if timer == nil {
			timer = lingerTimer()
			defer timer.Stop()
		}
		timer.Reset(lingerFor)
		select {
		case <-wake:
			timer.Stop()
		case <-timer.C:
			if c.slots.stop() {
				return
			}
		case <-c.done:
			return
		}
	}
}

// finish produces the reply of one slot and queues it; false once the
// connection is done.
func (c *conn) finish(sl *slot) bool {
	defer func() {
		if sl.readSeq != 0 {
			c.readsExecuted.Store(sl.readSeq)
		}
		if !sl.accounted {
			c.pending.Add(-1)
			c.s.stats.outstanding.Add(-1)
		}
		c.s.throttle.finished()
		select {
		case c.readSignal <- struct{}{}:
		default:
		}
	}()
	var (
		hdr  = jute.ReplyHeader{Xid: sl.xid}
		body jute.Record
	)
	switch {
	case sl.frame != nil:
		c.account(sl, 0)
		c.enqueue(sl.frame, sl.closeAfter, false)
		return !sl.closeAfter
	case sl.code != jute.CodeOK:
		hdr.Zxid, hdr.Err, body = c.s.b.LastZxid(), sl.code, sl.body
	case sl.op == jute.OpPing:
		hdr.Xid, hdr.Zxid = jute.XidPing, c.s.b.LastZxid()
	case sl.fut != nil:
		select {
		case <-sl.fut.Done():
		case <-c.done:
			return false
		}
		res := sl.fut.Result()
		hdr.Zxid = res.Zxid
		if hdr.Zxid == 0 {
			hdr.Zxid = c.s.b.LastZxid()
		}
		hdr.Err = c.codeFor(sl, res.Err)
		if res.Err == nil {
			body = res.Resp
		}
		if sl.op == jute.OpCloseSession && res.Err == nil {
			c.s.log.Info("session closed", zap.String("session", hexID(c.sessionID.Load())),
				zap.String("remote", c.remote), zap.String("reason", "client request"))
		}
	case sl.op == jute.OpSync:
		err := c.s.b.Sync(c.ctx)
		hdr.Zxid = c.s.b.LastZxid()
		hdr.Err = c.codeFor(sl, err)
		if err == nil {
			body = &jute.SyncResponse{Path: sl.path}
		}
	default:
		c.execRead(sl)
		return true
	}
	c.account(sl, hdr.Zxid)
	c.enqueue(encodeReply(hdr, body), sl.closeAfter, false)
	return !sl.closeAfter
}

// codeFor maps err for the reply of sl; unmapped errors are logged, and
// errors that mean this member cannot serve the session close the
// connection after the reply.
func (c *conn) codeFor(sl *slot, err error) jute.Code {
	code, fatal, known := errorCode(err)
	if !known {
		c.logger().Error("request failed with an unmapped error", zap.String("op", opName(sl.op)),
			zap.String("path", slotPath(sl)), zap.Error(err))
	}
	if fatal {
		c.logger().Info("member cannot serve the request, closing connection", zap.String("op", opName(sl.op)), zap.Error(err))
		sl.closeAfter = true
	}
	return code
}

// account records a completed request in the connection's and server's
// statistics (and the slow-request log), and stops counting it as
// outstanding. It runs before the reply is queued, as ZooKeeper's
// FinalRequestProcessor updates its statistics before sending the response:
// a client that has its reply then asks mntr, cons or the metrics endpoint
// sees its request counted and no longer outstanding.
func (c *conn) account(sl *slot, zxid int64) {
	sl.accounted = true
	c.pending.Add(-1)
	c.s.stats.outstanding.Add(-1)
	now := time.Now()
	lat := now.Sub(sl.start).Milliseconds()
	c.noteSlow(sl, now.Sub(sl.start))
	c.lat.add(lat)
	c.s.stats.latency.add(lat)
	if sl.fut != nil {
		c.s.stats.updateLatency.add(lat)
		c.s.zm.updateLatency.Observe(lat)
	} else {
		c.s.stats.readLatency.add(lat)
		c.s.zm.readLatency.Observe(lat)
	}
	c.last.Lock()
	c.last.op = opName(sl.op)
	if sl.xid >= 0 {
		c.last.cxid = sl.xid
	}
	if zxid != 0 {
		c.last.zxid = zxid
	}
	c.last.respTime = now
	c.last.latency = lat
	c.last.Unlock()
}

// execRead runs a read against the tree and queues its reply. While a
// read that sets a watch runs, events on its path are held back until the
// reply is queued, so a client always receives the reply that set a watch
// before that watch's event (go-zk drops an event for a watch it has not
// registered yet). Other events are not held: the tree queues them before
// any reader can see their write, so a client sees an event before a reply
// showing the change.
func (c *conn) execRead(sl *slot) {
	began := time.Now()
	defer c.s.zm.readFinal.ObserveSince(began)
	path, all, hold := watchHold(sl.req)
	if hold {
		c.out.Lock()
		c.out.deferring, c.out.holdPath, c.out.holdAll = true, path, all
		c.out.Unlock()
	}
	body, err := c.read(sl)
	hdr := jute.ReplyHeader{Xid: sl.xid, Zxid: c.s.b.LastZxid(), Err: c.codeFor(sl, err)}
	if err != nil {
		body = nil
	}
	frame := encodeReply(hdr, body)
	c.account(sl, hdr.Zxid)
	c.enqueue(frame, false, hold)
}

// watchHold tells whether req registers a watch and which events to hold
// while it runs: those on path, or all of them.
func watchHold(req jute.Record) (path string, all, hold bool) {
	switch r := req.(type) {
	case *jute.ExistsRequest:
		return r.Path, false, r.Watch
	case *jute.GetDataRequest:
		return r.Path, false, r.Watch
	case *jute.GetChildrenRequest:
		return r.Path, false, r.Watch
	case *jute.GetChildren2Request:
		return r.Path, false, r.Watch
	case *jute.AddWatchRequest:
		return "", true, true
	}
	return "", false, false
}

// watcher returns c as a datatree watcher when watch is set, else nil.
func (c *conn) watcher(watch bool) datatree.Watcher {
	if watch {
		return c
	}
	return nil
}

// read executes a read request and returns its response record.
func (c *conn) read(sl *slot) (jute.Record, error) {
	t := c.s.b.Tree()
	if rec, ok, err := c.fencingRead(t, sl.req); ok {
		return rec, err
	}
	switch r := sl.req.(type) {
	case *jute.ExistsRequest:
		st, err := t.Exists(r.Path, c.watcher(r.Watch))
		if err == nil {
			c.s.zm.noteRead(r.Path, 0)
		}
		return &jute.ExistsResponse{Stat: st}, err
	case *jute.GetDataRequest:
		data, st, err := t.GetData(r.Path, c.authIDs(), c.watcher(r.Watch))
		if err == nil {
			c.s.zm.noteRead(r.Path, len(data))
		}
		return &jute.GetDataResponse{Data: data, Stat: st}, err
	case *jute.GetChildrenRequest:
		kids, _, err := t.GetChildren(r.Path, c.authIDs(), c.watcher(r.Watch))
		if err == nil {
			c.s.zm.noteRead(r.Path, namesLen(kids))
		}
		return &jute.GetChildrenResponse{Children: nonNil(kids)}, err
	case *jute.GetChildren2Request:
		kids, st, err := t.GetChildren(r.Path, c.authIDs(), c.watcher(r.Watch))
		if err == nil {
			c.s.zm.noteRead(r.Path, namesLen(kids))
		}
		return &jute.GetChildren2Response{Children: nonNil(kids), Stat: st}, err
	case *jute.GetACLRequest:
		acl, st, err := t.GetACL(r.Path, c.authIDs())
		return &jute.GetACLResponse{Acl: acl, Stat: st}, err
	case *jute.GetEphemeralsRequest:
		return &jute.GetEphemeralsResponse{Ephemerals: nonNil(t.GetEphemerals(c.sessionID.Load(), r.PrefixPath))}, nil
	case *jute.GetAllChildrenNumberRequest:
		n, err := t.GetAllChildrenNumber(r.Path, c.authIDs())
		return &jute.GetAllChildrenNumberResponse{TotalNumber: n}, err
	case *jute.CheckWatchesRequest:
		if !validWatcherType(r.Type) {
			return nil, jute.CodeMarshallingError
		}
		return nil, t.CheckWatches(r.Path, c, r.Type)
	case *jute.RemoveWatchesRequest:
		if !validWatcherType(r.Type) {
			return nil, jute.CodeMarshallingError
		}
		return nil, t.RemoveWatches(r.Path, c, r.Type)
	case *jute.AddWatchRequest:
		// ZooKeeper fails to convert an unknown mode and answers
		// MarshallingError; success carries an ErrorResponse body of 0.
		if r.Mode != jute.AddWatchModePersistent && r.Mode != jute.AddWatchModePersistentRecursive {
			return nil, jute.CodeMarshallingError
		}
		return &jute.ErrorResponse{}, t.AddWatch(r.Path, c, r.Mode)
	case *jute.SetWatches:
		return nil, c.setWatches(t, r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches, []string{}, []string{})
	case *jute.SetWatches2:
		return nil, c.setWatches(t, r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches,
			r.PersistentWatches, r.PersistentRecursiveWatches)
	case *jute.MultiRequest:
		return c.multiRead(t, r), nil
	case nil:
		if sl.op == jute.OpWhoAmI {
			return c.whoAmI(), nil
		}
	}
	return nil, fmt.Errorf("server: no read handler for op %d", sl.op)
}

// setWatches sets the watch lists of a setWatches or setWatches2 in their
// order up to the first null one (a vector of length -1), and answers
// MarshallingError when there is one: ZooKeeper walks the lists in this
// order and fails on a null list after setting the lists before it.
func (c *conn) setWatches(t *datatree.Tree, relZxid int64, lists ...[]string) error {
	var err error
	for i, l := range lists {
		if l == nil && err == nil {
			err = jute.CodeMarshallingError
		}
		if err != nil {
			lists[i] = nil
		}
	}
	t.SetWatches(relZxid, lists[0], lists[1], lists[2], lists[3], lists[4], c)
	return err
}

// validWatcherType reports whether typ is a WatcherType ZooKeeper can
// convert; for others it answers MarshallingError.
func validWatcherType(typ int32) bool {
	return typ == jute.WatcherTypeChildren || typ == jute.WatcherTypeData || typ == jute.WatcherTypeAny
}

// multiRead runs each read of a multiRead on its own: a failed op gives an
// error result and the others still run, as in ZooKeeper.
func (c *conn) multiRead(t *datatree.Tree, r *jute.MultiRequest) *jute.MultiResponse {
	resp := &jute.MultiResponse{Results: make([]jute.MultiResult, 0, len(r.Ops))}
	auth := c.authIDs()
	for _, op := range r.Ops {
		var (
			rec jute.Record
			err error
		)
		switch q := op.Req.(type) {
		case *jute.GetDataRequest:
			var ok bool
			if rec, ok, err = c.fencingRead(t, q); ok {
				break
			}
			var data []byte
			var st jute.Stat
			data, st, err = t.GetData(q.Path, auth, c.watcher(q.Watch))
			rec = &jute.GetDataResponse{Data: data, Stat: st}
		case *jute.GetChildrenRequest:
			var ok bool
			if rec, ok, err = c.fencingRead(t, q); ok {
				break
			}
			var kids []string
			kids, _, err = t.GetChildren(q.Path, auth, c.watcher(q.Watch))
			rec = &jute.GetChildrenResponse{Children: nonNil(kids)}
		default:
			err = jute.CodeMarshallingError
		}
		if err != nil {
			code, _, _ := errorCode(err)
			resp.Results = append(resp.Results, jute.MultiResult{Type: jute.OpError, Err: code})
			continue
		}
		resp.Results = append(resp.Results, jute.MultiResult{Type: op.Type, Resp: rec})
	}
	return resp
}

// nonNil turns a nil list into an empty one, which jute writes as length 0
// rather than -1, as ZooKeeper does.
func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// Notify sends a watch event to the client: written at once when nothing
// else is queued or being written (one non-blocking write), else queued
// for the writer. The tree calls it from the apply goroutine; it never
// blocks.
func (c *conn) Notify(ev jute.WatcherEvent) {
	frame := encodeReply(jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1}, &ev)
	c.s.zm.watchBytes.Add(int64(len(frame) - 4))
	c.out.Lock()
	if c.out.sealed {
		c.out.Unlock()
		return
	}
	start := false
	switch {
	case c.out.deferring && (c.out.holdAll || ev.Path == c.out.holdPath):
		c.out.deferred = append(c.out.deferred, frame)
		c.out.bytes += len(frame)
	case !c.out.writing && len(c.out.q) == 0 && len(c.out.deferred) == 0 && c.raw != nil:
		// Nothing queued and no writer, as for a waiter whose watch
		// fires: written from here as far as the socket takes it, rather
		// than by a writer goroutine started for one frame.
		c.out.writing, c.out.inline = true, true
		c.out.Unlock()
		c.writeInline(frame)
		return
	default:
		c.out.q = append(c.out.q, frame)
		c.out.bytes += len(frame)
		start = c.wantWriter()
	}
	over := c.out.bytes > c.s.cfg.MaxOutQueueBytes
	c.out.Unlock()
	c.startWriter(start)
	if over {
		c.overflow()
	}
}

// enqueue appends a reply to the output queue. closeAfter seals the queue:
// the writer closes the connection once it is written. endHold ends a read's
// hold on events: the events held back go right after the reply, in the
// same critical section, so none can slip in before it.
func (c *conn) enqueue(frame []byte, closeAfter, endHold bool) {
	c.out.Lock()
	if endHold {
		c.out.deferring = false
	}
	if c.out.sealed {
		c.out.deferred = nil
		c.out.Unlock()
		return
	}
	if !c.out.writing && !closeAfter && len(c.out.q) == 0 && len(c.out.deferred) == 0 && c.raw != nil {
		// Nothing queued and no writer: write the reply from here, as
		// far as the socket takes it without waiting.
		c.out.writing, c.out.inline = true, true
		c.out.Unlock()
		c.writeInline(frame)
		return
	}
	c.out.q = append(c.out.q, frame)
	c.out.bytes += len(frame)
	if endHold {
		c.out.q = append(c.out.q, c.out.deferred...)
		c.out.deferred = nil
	}
	if closeAfter {
		c.out.sealed = true
	}
	start := c.wantWriter()
	over := c.out.bytes > c.s.cfg.MaxOutQueueBytes
	c.out.Unlock()
	c.startWriter(start)
	if over {
		c.overflow()
	}
}

// overflow closes a connection whose client does not read fast enough.
func (c *conn) overflow() {
	c.logger().Warn("closing connection: client does not read its replies and events",
		zap.Int("maxOutQueueBytes", c.s.cfg.MaxOutQueueBytes))
	c.close("output queue over limit")
}

func sizeOf(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	return n
}

// encodeReply returns a frame: length prefix, reply header, optional body.
func encodeReply(hdr jute.ReplyHeader, body jute.Record) []byte {
	e := jute.NewEncoder(make([]byte, 4, replySize(body)))
	hdr.Encode(e)
	if body != nil {
		body.Encode(e)
	}
	b := e.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// replySize estimates the frame size of a reply with body, so that the
// encoder allocates once: the length prefix, reply header and a Stat, plus
// the payload of the replies that carry data or names.
func replySize(body jute.Record) int {
	const fixed = 4 + 16 + 68 + 16
	switch r := body.(type) {
	case *jute.GetDataResponse:
		return fixed + len(r.Data)
	case *jute.GetChildrenResponse:
		return fixed + namesSize(r.Children)
	case *jute.GetChildren2Response:
		return fixed + namesSize(r.Children)
	}
	return fixed
}

// namesSize is the encoded size of a vector of strings.
func namesSize(names []string) int {
	n := 4
	for _, s := range names {
		n += 4 + len(s)
	}
	return n
}

// encodeFrame returns a frame holding one record, as the connect response.
func encodeFrame(r jute.Record) []byte {
	e := jute.NewEncoder(make([]byte, 4, 64))
	r.Encode(e)
	b := e.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// pathOf returns the path a request names, for logs and sync replies.
func pathOf(r jute.Record) string {
	switch q := r.(type) {
	case *jute.CreateRequest:
		return q.Path
	case *jute.CreateTTLRequest:
		return q.Path
	case *jute.DeleteRequest:
		return q.Path
	case *jute.SetDataRequest:
		return q.Path
	case *jute.SetACLRequest:
		return q.Path
	case *jute.ExistsRequest:
		return q.Path
	case *jute.GetDataRequest:
		return q.Path
	case *jute.GetChildrenRequest:
		return q.Path
	case *jute.GetChildren2Request:
		return q.Path
	case *jute.GetACLRequest:
		return q.Path
	case *jute.SyncRequest:
		return q.Path
	case *jute.CheckVersionRequest:
		return q.Path
	case *jute.CheckWatchesRequest:
		return q.Path
	case *jute.RemoveWatchesRequest:
		return q.Path
	case *jute.AddWatchRequest:
		return q.Path
	case *jute.GetAllChildrenNumberRequest:
		return q.Path
	case *jute.GetEphemeralsRequest:
		return q.PrefixPath
	}
	return ""
}
