package server

import (
	"bufio"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// writerPool holds the write buffers of connections whose writer is not
// running: a connection holds one only while it has frames to write.
var writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 8<<10) }}

// wantWriter reports whether the caller, which just queued frames under
// c.out's lock, must start a writer goroutine; it then counts that
// goroutine in c.wg, under the lock: close seals the queue under the same
// lock before serve waits on c.wg, so the Add never races the Wait. A
// lingering writer is woken instead.
func (c *conn) wantWriter() bool {
	if c.out.inline {
		c.out.handoff = true
		return false
	}
	if c.out.writing {
		if c.out.idle {
			c.out.idle = false
			select {
			case c.out.wake <- struct{}{}:
			default:
			}
		}
		return false
	}
	c.out.writing = true
	c.out.wake = make(chan struct{}, 1)
	c.wg.Add(1)
	return true
}

// writeInline writes a reply on the caller's goroutine (the reader or
// the completer) with one non-blocking write, so a reply needs no hand-off
// to the writer goroutine when the socket has room, as it has unless the
// client stops reading. The caller claimed the socket by setting
// c.out.writing while nothing was queued; what the socket did not take,
// and whatever Notify queued meanwhile, goes to a writer. whole reports
// that the socket took the whole frame: nothing holds it any more, and the
// caller may reuse it.
func (c *conn) writeInline(frame []byte) (whole bool) {
	c.sent.Add(1)
	c.s.stats.packetsSent.Add(1)
	c.s.zm.noteResponse(frame)
	w := &c.inlineW
	if w.fn == nil {
		w.fn = c.writeInlineFD
	}
	w.frame, w.n = frame, 0
	err := c.raw.Write(w.fn)
	n := w.n
	w.frame = nil
	if err != nil {
		n = 0
	}
	c.out.Lock()
	c.out.inline = false
	start := c.out.handoff
	c.out.handoff = false
	if n < len(frame) && !c.out.sealed {
		rest := frame[n:]
		c.out.q = append(c.out.q, nil)
		copy(c.out.q[1:], c.out.q)
		c.out.q[0] = rest
		c.out.bytes += len(rest)
		start = true
	}
	if !start {
		c.out.writing = false
		c.out.Unlock()
		return n == len(frame)
	}
	// Frames queued meanwhile, the rest of this one, or a sealed queue
	// to close: hand the claimed socket to a writer. handoff is only set
	// by wantWriter, which runs on an unsealed queue or for the reader's
	// closeAfterWrites, so this Add never races serve's Wait.
	c.out.wake = make(chan struct{}, 1)
	c.wg.Add(1)
	over := c.out.bytes > c.s.cfg.MaxOutQueueBytes
	c.out.Unlock()
	c.startWriter(true)
	if over {
		c.overflow()
	}
	return n == len(frame)
}

// writeInlineFD makes writeInline's one non-blocking write of
// c.inlineW.frame; EAGAIN or an error (which the writer meets and reports)
// counts as nothing written.
func (c *conn) writeInlineFD(fd uintptr) bool {
	w := &c.inlineW
	n, err := syscall.Write(int(fd), w.frame)
	if err != nil || n < 0 {
		n = 0
	}
	w.n = n
	return true
}

// signal makes sure a writer drains the output queue, as after the
// caller sealed it.
func (c *conn) signal() {
	c.out.Lock()
	start := c.wantWriter()
	c.out.Unlock()
	c.startWriter(start)
}

// startWriter runs the writer counted by wantWriter, when start is set.
func (c *conn) startWriter(start bool) {
	if start {
		c.spawn(c.writeLoop, "writer")
	}
}

// spawn runs f as one of the connection's goroutines, already counted in
// c.wg by the caller. The server's Close waits for it through serve, which
// waits on c.wg, so it takes no server-wide lock as goAttach does: a
// connection starts these goroutines at every burst of traffic.
func (c *conn) spawn(f func(), name string) {
	go func() {
		defer c.wg.Done()
		defer c.guard(name)
		f()
	}()
}

// writeLoop is the writer goroutine: it writes the queued frames, in
// batches, and ends once the queue stayed empty for lingerFor, so an idle
// connection parks neither a goroutine nor a write buffer. It is never run
// inline: a client that does not read must not hold up its reader or
// completer, which go on until the queue passes MaxOutQueueBytes. A sealed queue, once written,
// closes the connection.
func (c *conn) writeLoop() {
	var (
		bw    *bufio.Writer
		batch [][]byte
	)
	defer func() {
		if bw != nil {
			bw.Reset(nil)
			writerPool.Put(bw)
		}
	}()
	c.out.Lock()
	wake := c.out.wake
	c.out.Unlock()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c.out.Lock()
		batch, c.out.q = c.out.q, batch[:0]
		c.out.bytes -= sizeOf(batch)
		sealed := c.out.sealed
		if len(batch) == 0 && !sealed {
			// Linger for the next reply before ending: under load the
			// same goroutine and buffer serve the connection.
			c.out.idle = true
			c.out.Unlock()
			if timer == nil {
				timer = lingerTimer()
			}
			timer.Reset(lingerFor)
			select {
			case <-wake:
				timer.Stop()
				continue
			case <-timer.C:
			case <-c.done:
				return
			}
			c.out.Lock()
			if len(c.out.q) > 0 || c.out.sealed {
				c.out.idle = false
				c.out.Unlock()
				continue
			}
			c.out.writing, c.out.idle, c.out.wake = false, false, nil
			c.out.q = nil
			c.out.Unlock()
			return
		}
		c.out.Unlock()
		if len(batch) == 0 {
			c.linger()
			c.close("closed after reply")
			return
		}
		select {
		case <-c.done:
			return
		default:
		}
		if bw == nil {
			bw = writerPool.Get().(*bufio.Writer)
			bw.Reset(c.nc)
		}
		// Count before writing, as ZooKeeper counts queued responses, so
		// a client that got a reply also sees it in the statistics.
		c.sent.Add(int64(len(batch)))
		c.s.stats.packetsSent.Add(int64(len(batch)))
		c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.maxTimeout()))
		for _, f := range batch {
			c.s.zm.noteResponse(f)
			if _, err := bw.Write(f); err != nil {
				c.logger().Debug("write failed, closing connection", zap.Error(err))
				c.close("write failed")
				return
			}
		}
		if err := bw.Flush(); err != nil {
			c.logger().Debug("write failed, closing connection", zap.Error(err))
			c.close("write failed")
			return
		}
		clear(batch)
	}
}
