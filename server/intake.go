// Request intake, on the reader goroutine: reading frames, decoding each
// request into a slot, submitting writes to the Backend and handing slots
// to the pipeline (readLoop, readOne, prepare, push).

package server

import (
	"encoding/binary"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
)

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
		if c.br.Buffered() == 0 && (!c.busy() || !c.nextSoon()) {
			c.handOff()
			return true
		}
		if !c.frameBuffered() {
			// The rest of the frame is still to come: wait for it as
			// long as for any packet. (A whole buffered frame needs no
			// deadline: reading it makes no system call.)
			c.setReadDeadline()
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
	c.lastGap, c.lastStart = sl.start.Sub(c.lastStart), sl.start

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
		if c.slots.len() > 0 {
			c.pingAhead(sl)
			return true
		}
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

// pingAhead answers a ping at once although requests before it are still
// waiting, typically a write held by a slow disk (an fsync stalled for
// seconds): a client times its connection out when it hears nothing for
// two thirds of its session timeout, and the ping, answered behind the
// write, would come too late. ZooKeeper answers a ping in order with the
// session's other requests; every client matches a ping's reply by its
// xid (-2) and not by its place in the stream (go-zk's recvLoop, Kazoo's
// _read_socket, the Java client's readResponse), so the earlier answer
// changes nothing else for them.
func (c *conn) pingAhead(sl *slot) {
	buf := encodeReplyPooled(jute.ReplyHeader{Xid: jute.XidPing, Zxid: c.s.b.LastZxid()}, nil)
	if c.enqueue(*buf, false, false) {
		putReplyBuf(buf)
	}
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
		c.finish(sl, nil)
	case addParked:
		if !sl.fut.OnComplete(func() { c.finishHooked(sl, sl.fut.Later()) }) {
			c.finishHooked(sl, nil) // it already completed
		}
	case addStart:
		c.wg.Add(1)
		c.spawn(c.complete, "completer")
	case addWake:
		c.slots.wakeUp()
	}
	return true
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
