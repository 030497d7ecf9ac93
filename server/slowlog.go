package server

import (
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
)

// noteSlow logs a request that took Config.SlowRequestThreshold or more,
// from its arrival to its reply, at warn: one line per slow request with
// the session, op, path, xid and latency. Called by account on the
// connection's completer goroutine.
func (c *conn) noteSlow(sl *slot, lat time.Duration) {
	th := c.s.cfg.SlowRequestThreshold
	if th <= 0 || lat < th {
		return
	}
	path := slotPath(sl)
	c.logger().Warn("slow request",
		zap.String("op", jute.OpName(sl.op)),
		zap.String("path", path),
		zap.Int32("xid", sl.xid),
		zap.Duration("latency", lat),
		zap.Duration("threshold", th))
}
