// The reply path: finishing slots in order (the completer, or the goroutine
// that completed a write's future), the statistics of each request, and
// the output queue that replies and watch events go through.

package server

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
)

// finishHooked finishes a parked write on the goroutine that completed its
// future, unless a completer took it first; then it wakes the completer of
// the slots queued behind it. It must not block, and starts no goroutine
// (it runs on no goroutine of the connection, so it cannot count one in
// c.wg): finish of a completed write only encodes, counts and writes
// without waiting (see enqueue).
func (c *conn) finishHooked(sl *slot, later *zab.Later) {
	if !c.slots.hook(sl) {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			c.slots.unhook()
			c.panicked("reply", r)
		}
	}()
	c.finish(sl, later)
	c.slots.unhook()
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
			if !c.finish(sl, nil) {
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
// connection is done. With later (a write's hook run by the standalone
// committer, zab.Later), a reply that would be written inline is written
// after the committer's batch, by its replier.
func (c *conn) finish(sl *slot, later *zab.Later) bool {
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
			// ZooKeeper drops the connection's watches as it answers
			// closeSession, before any later request, and checkWatches
			// answers for every connection's watches: a client that has
			// this reply must not see them from another session. (The
			// connection's end drops any set since, as always.)
			if t := c.s.b.Tree(); t != nil {
				t.RemoveWatcher(c)
			}
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
	if hdr.Err == jute.CodeConnectionLoss {
		c.dropConnection()
		return false
	}
	buf := encodeReplyPooled(hdr, body)
	if later != nil && c.claimInline(sl.closeAfter) {
		later.Defer(func() { c.writeDeferred(buf) })
		return true
	}
	if c.enqueue(*buf, sl.closeAfter, false) {
		putReplyBuf(buf)
	}
	return !sl.closeAfter
}

// claimInline claims the connection's output, as enqueue does before it
// writes a reply inline, if nothing is queued or being written; the caller
// then writes its frame with writeInline (now, or deferred). Anything
// queued meanwhile waits behind it: wantWriter sees the claim and leaves
// it to writeInline to start a writer after the frame.
func (c *conn) claimInline(closeAfter bool) bool {
	c.out.Lock()
	defer c.out.Unlock()
	if c.out.sealed || c.out.writing || closeAfter || len(c.out.q) != 0 || len(c.out.deferred) != 0 || c.raw == nil {
		return false
	}
	c.out.writing, c.out.inline = true, true
	return true
}

// writeDeferred writes a reply claimed by claimInline, on the standalone
// committer's replier goroutine.
func (c *conn) writeDeferred(buf *[]byte) {
	defer func() {
		if r := recover(); r != nil {
			c.panicked("reply", r)
		}
	}()
	if c.writeInline(*buf) {
		putReplyBuf(buf)
	}
}

// dropConnection closes the connection, after the replies already queued,
// without answering the request at hand: when this member cannot serve it
// (its leader is gone), the client must see the connection end, as
// ZooKeeper's followers drop their clients then. ConnectionLoss is the
// client's own name for that; sent as a reply code it would leave the
// connection open for a moment, and a client whose write was lost (go-zk's
// and Curator's protected creates) would ask this member, not yet caught
// up with the new leader, whether the write happened, and create again.
// Reconnecting instead passes through SyncReattach.
func (c *conn) dropConnection() {
	c.enqueue(nil, true, false)
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
// same critical section, so none can slip in before it. It reports
// whether frame was written whole at once, from here: nothing holds it
// then, and the caller may reuse it.
func (c *conn) enqueue(frame []byte, closeAfter, endHold bool) (written bool) {
	c.out.Lock()
	if endHold {
		c.out.deferring = false
	}
	if c.out.sealed {
		c.out.deferred = nil
		c.out.Unlock()
		return false
	}
	if !c.out.writing && !closeAfter && len(c.out.q) == 0 && len(c.out.deferred) == 0 && c.raw != nil {
		// Nothing queued and no writer: write the reply from here, as
		// far as the socket takes it without waiting.
		c.out.writing, c.out.inline = true, true
		c.out.Unlock()
		return c.writeInline(frame)
	}
	if frame != nil {
		c.out.q = append(c.out.q, frame)
		c.out.bytes += len(frame)
	}
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
	return false
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
	return encodeReplyInto(make([]byte, 0, replySize(body)), hdr, body)
}

// encodeReplyInto encodes the frame of encodeReply into buf's array when
// it has room.
func encodeReplyInto(buf []byte, hdr jute.ReplyHeader, body jute.Record) []byte {
	e := jute.NewEncoder(append(buf[:0], 0, 0, 0, 0))
	hdr.Encode(e)
	if body != nil {
		body.Encode(e)
	}
	b := e.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// replyBufs recycles the frames of replies, which a read's reply fills
// with the node's data: most are written whole at once by the goroutine
// that encoded them (enqueue, writeInline), which then puts them back
// rather than leaving a fresh frame per reply to the collector. A frame
// that went to the output queue is not recycled.
var replyBufs sync.Pool // of *[]byte

// maxPooledReply is the largest frame replyBufs keeps: a reply with a big
// node's data is rare, and the pool would hold on to its array.
const maxPooledReply = 64 << 10

// encodeReplyPooled encodes the reply into a frame from replyBufs; the
// caller gives it back with putReplyBuf once nothing holds it.
func encodeReplyPooled(hdr jute.ReplyHeader, body jute.Record) *[]byte {
	size := replySize(body)
	p, _ := replyBufs.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	if cap(*p) < size {
		// Power-of-two sizes, so that a recycled frame fits the next
		// reply of about the same size.
		*p = make([]byte, 0, max(256, 1<<bits.Len(uint(size-1))))
	}
	*p = encodeReplyInto(*p, hdr, body)
	return p
}

// putReplyBuf gives a frame of encodeReplyPooled back to replyBufs.
func putReplyBuf(p *[]byte) {
	if cap(*p) > maxPooledReply {
		return
	}
	*p = (*p)[:0]
	replyBufs.Put(p)
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
