// The connect handshake: the first frame of a client connection, creating
// or reattaching its session, or refusing it (handshake).

package server

import (
	"errors"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/session"
	"github.com/zkd/zkd/zab"
)

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
			c.logger().Info("connection refused: this member is not serving (no quorum)",
				zap.String("requested", hexID(req.SessionId)))
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
	lo := int32(c.s.cfg.minTimeout() / time.Millisecond)
	hi := int32(c.s.cfg.maxTimeout() / time.Millisecond)
	timeout := session.Negotiate(req.TimeOut, lo, hi)
	if req.SessionId != 0 && !c.readOnly.Load() && !c.s.syncReattach(time.Duration(timeout)*time.Millisecond) {
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
