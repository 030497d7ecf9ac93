package server

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
)

// Two bounds on the work in flight, as ZooKeeper 3.8 has them. Requests
// "in process" are those read and not yet answered (the server's
// outstanding count).
//
// ThrottleMaxRequests is the RequestThrottler: a request that arrives
// while that many are in process waits, rechecking each time one finishes
// and at least every ThrottleStallTime, before it enters the pipeline; a
// write has then not reached the log yet. Unlike ZooKeeper, whose throttler
// queues pings too and touches the session only once they pass, zkd lets
// pings through and touches the session of a waiting request at every
// recheck, so a throttled client's session does not expire.
//
// GlobalOutstandingLimit is ZooKeeperServer.shouldThrottle: once the
// requests in process, or those waiting at the throttler, exceed it, a
// connection that has requests of its own outstanding is not read until
// its next reply leaves with the server below the limit, or its requests
// are all answered. Connections with nothing outstanding are read, so
// their pings keep their sessions alive.

// requestGate is where requests held back by ThrottleMaxRequests wait.
type requestGate struct {
	waiting atomic.Int64 // requests waiting at the gate
	stale   atomic.Int64 // waiting requests dropped because their connection closed
	// throttledOps counts requests answered ThrottledOp.
	throttledOps atomic.Int64
	mu           sync.Mutex
	wake         chan struct{} // closed when a request finishes, if anyone waits
}

// wait blocks until a request finishes, d passes, or done closes.
func (g *requestGate) wait(d time.Duration, done <-chan struct{}) {
	g.mu.Lock()
	if g.wake == nil {
		g.wake = make(chan struct{})
	}
	ch := g.wake
	g.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-done:
	}
}

// finished wakes the requests waiting at the gate, if any.
func (g *requestGate) finished() {
	if g.waiting.Load() == 0 {
		return
	}
	g.mu.Lock()
	if g.wake != nil {
		close(g.wake)
		g.wake = nil
	}
	g.mu.Unlock()
}

// admit holds a request back while ThrottleMaxRequests are in process. It
// returns false when the request is to be dropped: its connection closed
// meanwhile and ThrottleDropStale is set (a closeSession is never
// dropped, as in ZooKeeper). A request held longer than
// ThrottledOpWaitTime gets the code ThrottledOp: it is answered without
// running.
func (c *conn) admit(sl *slot) bool {
	op := sl.op
	limit := int64(c.s.cfg.ThrottleMaxRequests)
	if limit <= 0 || op == jute.OpPing || c.s.stats.outstanding.Load() < limit {
		return true
	}
	defer func() {
		if wt := c.s.cfg.ThrottledOpWaitTime; wt > 0 && op != jute.OpCloseSession && time.Since(sl.start) > wt {
			sl.code = jute.CodeThrottledOp
			c.s.throttle.throttledOps.Add(1)
		}
	}()
	g := &c.s.throttle
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	for c.s.stats.outstanding.Load() >= limit {
		if c.isClosed() {
			if c.s.cfg.ThrottleDropStale && op != jute.OpCloseSession {
				g.stale.Add(1)
				c.logger().Debug("request dropped at the throttle: connection closed while it waited",
					zap.String("op", opName(op)), zap.Int("request_throttle_max_requests", int(limit)))
				return false
			}
			return true
		}
		g.wait(c.s.cfg.ThrottleStallTime, c.done)
		if !c.readOnly.Load() {
			c.s.b.Touch(c.sessionID.Load())
		}
	}
	return true
}

// holdReads stops reading from a connection, after it queued a request
// with a positive xid, while the server is over GlobalOutstandingLimit and
// the connection has requests outstanding; false if the connection closed.
func (c *conn) holdReads(xid int32) bool {
	if xid <= 0 {
		return true
	}
	for c.s.overOutstanding(c.pending.Load()) {
		select {
		case <-c.readSignal:
		case <-c.done:
			return false
		}
	}
	return true
}

// overOutstanding is ZooKeeper's shouldThrottle for a connection with n
// requests outstanding.
func (s *Server) overOutstanding(n int64) bool {
	limit := int64(s.cfg.GlobalOutstandingLimit)
	if limit <= 0 || n <= 0 {
		return false
	}
	return limit < s.throttle.waiting.Load() || limit < s.stats.outstanding.Load()
}

// isClosed reports whether the connection was closed.
func (c *conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
