package server

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
)

// slowLinesPerSecond bounds the slow-request lines the server writes per
// second. When a member is overloaded every request is slow: logging each
// one (140,000 lines in two minutes on a leader under a 100,000-session
// connection storm) adds to the load that made them slow and buries the
// line that says why. Past the bound the requests are counted, and the
// next line written says how many went unlogged.
const slowLinesPerSecond = 10

// slowLimiter is the server-wide budget of slow-request lines.
type slowLimiter struct {
	mu         sync.Mutex
	window     time.Time // start of the current one-second window
	lines      int       // lines written in it
	suppressed int64     // slow requests not logged since the last line
}

// admit reports whether a slow request seen at now gets its line, and if
// so how many were suppressed before it.
func (l *slowLimiter) admit(now time.Time) (ok bool, suppressed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.window) >= time.Second {
		l.window, l.lines = now, 0
	}
	if l.lines >= slowLinesPerSecond {
		l.suppressed++
		return false, 0
	}
	l.lines++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// noteSlow logs a request that took Config.SlowRequestThreshold or more,
// from its arrival to its reply, at warn: one line per slow request with
// the session, op, path, xid and latency, at most slowLinesPerSecond a
// second. Called by account on the connection's completer goroutine.
func (c *conn) noteSlow(sl *slot, lat time.Duration) {
	th := c.s.cfg.SlowRequestThreshold
	if th <= 0 || lat < th {
		return
	}
	ok, suppressed := c.s.slow.admit(sl.start.Add(lat))
	if !ok {
		return
	}
	fields := []zap.Field{
		zap.String("op", jute.OpName(sl.op)),
		zap.String("path", slotPath(sl)),
		zap.Int32("xid", sl.xid),
		zap.Duration("latency", lat),
		zap.Duration("threshold", th),
	}
	if suppressed > 0 {
		fields = append(fields, zap.Int64("unloggedSlowRequests", suppressed))
	}
	c.logger().Warn("slow request", fields...)
}
