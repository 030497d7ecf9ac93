// The leader side of forwarding: it accepts the other members' streams,
// submits their writes, answers their syncs and records which members are
// in touch and how far they applied (leaderSide).

package quorum

import (
	"bufio"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
)

// leaderSide serves the streams of the other members on the election
// port. Whichever member leads proposes what arrives; a member that does
// not lead answers every write with msgWriteFailed.
type leaderSide struct {
	m            *Member
	ln           net.Listener
	pendingSyncs atomic.Int64
	mu           struct {
		sync.Mutex
		conns map[net.Conn]struct{}
		// writers are the streams' answer writers, for commit notices.
		writers map[*lockedWriter]struct{}
		closed  bool
		// lastSeen is when each member last sent something on its
		// stream: reconfig's test of a synced quorum.
		lastSeen map[int64]time.Time
		// applied is the raft index each member last reported having
		// applied (with its touches), and when.
		applied map[int64]appliedReport
	}
	wg sync.WaitGroup
}

// seen records that member id is in touch.
func (l *leaderSide) seen(id int64) {
	if id == 0 {
		return
	}
	l.mu.Lock()
	l.mu.lastSeen[id] = time.Now()
	l.mu.Unlock()
}

// appliedReport is a member's report of how far it applied.
type appliedReport struct {
	index   uint64
	zxid    int64 // 0 from a member too old to send it
	serving bool
	at      time.Time
}

// reportApplied records that member id applied up to raft index idx and
// zxid, and whether it serves clients.
func (l *leaderSide) reportApplied(id int64, idx uint64, zxid int64, serving bool) {
	if id == 0 {
		return
	}
	l.mu.Lock()
	l.mu.applied[id] = appliedReport{index: idx, zxid: zxid, serving: serving, at: time.Now()}
	l.mu.Unlock()
}

// synced reports whether member id reported within d having applied at
// least up to index min.
func (l *leaderSide) synced(id int64, d time.Duration, min uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.mu.applied[id]
	return ok && time.Since(r.at) < d && r.index >= min
}

// inTouch reports whether member id sent something within d.
func (l *leaderSide) inTouch(id int64, d time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.mu.lastSeen[id]
	return ok && time.Since(t) < d
}

func newLeaderSide(m *Member, ln net.Listener) *leaderSide {
	l := &leaderSide{m: m, ln: ln}
	l.mu.conns = map[net.Conn]struct{}{}
	l.mu.writers = map[*lockedWriter]struct{}{}
	l.mu.lastSeen = map[int64]time.Time{}
	l.mu.applied = map[int64]appliedReport{}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

func (l *leaderSide) acceptLoop() {
	defer l.wg.Done()
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l.mu.Lock()
		if l.mu.closed {
			l.mu.Unlock()
			nc.Close()
			return
		}
		l.mu.conns[nc] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.serve(nc)
	}
}

func (l *leaderSide) close() {
	l.ln.Close()
	l.mu.Lock()
	l.mu.closed = true
	for c := range l.mu.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// streams appends the answer writers of the open streams to buf.
func (l *leaderSide) streams(buf []*lockedWriter) []*lockedWriter {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.mu.writers {
		buf = append(buf, w)
	}
	return buf
}

// lockedWriter serialises the answers of the responder and sync
// goroutines on one stream.
type lockedWriter struct {
	mu sync.Mutex
	nc net.Conn
	w  *bufio.Writer
}

// sendFailed tells the follower that its write seq failed with err.
func (w *lockedWriter) sendFailed(seq uint64, err error) {
	enc := jute.NewEncoder(nil)
	enc.WriteLong(int64(seq))
	enc.WriteInt(int32(failureCode(err)))
	w.send(msgWriteFailed, enc.Bytes())
}

func (w *lockedWriter) send(kind byte, body []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if writeMsg(w.w, kind, body) != nil || w.w.Flush() != nil {
		w.nc.Close()
	}
}

type proposed struct {
	seq  uint64
	wait func() error
}

func (l *leaderSide) serve(nc net.Conn) {
	defer l.wg.Done()
	defer func() {
		l.mu.Lock()
		delete(l.mu.conns, nc)
		l.mu.Unlock()
		nc.Close()
	}()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	w := &lockedWriter{nc: nc, w: bufio.NewWriter(nc)}
	l.mu.Lock()
	l.mu.writers[w] = struct{}{}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.mu.writers, w)
		l.mu.Unlock()
	}()
	results := make(chan proposed, 4096)
	var inner sync.WaitGroup
	inner.Add(1)
	go func() {
		defer inner.Done()
		for p := range results {
			if err := p.wait(); err != nil {
				w.sendFailed(p.seq, err)
			}
		}
	}()
	defer func() {
		close(results)
		inner.Wait()
	}()
	node := l.m.node
	r := bufio.NewReaderSize(nc, 64<<10)
	var peer int64
	var lastProgress time.Time
	for {
		kind, body, err := readMsg(r)
		if err != nil {
			return
		}
		l.seen(peer)
		d := jute.NewDecoder(body)
		switch kind {
		case msgHello:
			peer = d.ReadLong()
			l.seen(peer)
		case msgWrite:
			origin := uint64(d.ReadLong())
			seq := uint64(d.ReadLong())
			var req zab.Request
			req.Decode(d)
			if d.Err() != nil {
				return
			}
			if req.Op == jute.OpReconfig {
				inner.Add(1)
				go func() {
					defer inner.Done()
					l.m.leaderReconfig(origin, seq, &req, func(err error) { w.sendFailed(seq, err) })
				}()
				continue
			}
			results <- proposed{seq: seq, wait: node.SubmitFor(origin, seq, &req)}
		case msgTouch:
			n := d.VectorLen(8)
			for i := 0; i < n && d.Err() == nil; i++ {
				node.Touch(d.ReadLong())
			}
			if d.Err() == nil && d.Remaining() >= 8 {
				idx := uint64(d.ReadLong())
				// Members before the progress table send the index alone.
				zxid, serving := int64(0), true
				if d.Remaining() >= 9 {
					zxid, serving = d.ReadLong(), d.ReadBool()
				}
				l.reportApplied(peer, idx, zxid, serving)
			}
			// Once a progressInterval, the table goes back on this
			// stream (for the follower's console), built and sent off
			// this loop, which carries the follower's writes.
			if now := time.Now(); d.Err() == nil && now.Sub(lastProgress) >= progressInterval && node.IsLeader() {
				lastProgress = now
				inner.Add(1)
				go func() {
					defer inner.Done()
					w.send(msgProgress, encodeProgress(l.progress()))
				}()
			}
		case msgSync:
			id := d.ReadLong()
			if d.Err() != nil {
				return
			}
			l.pendingSyncs.Add(1)
			inner.Add(1)
			go func() {
				defer inner.Done()
				defer l.pendingSyncs.Add(-1)
				ctx, cancel := context.WithTimeout(context.Background(), l.m.timing.HoldTimeout)
				defer cancel()
				idx, err := node.SyncIndex(ctx)
				enc := jute.NewEncoder(nil)
				enc.WriteLong(id)
				enc.WriteBool(err == nil)
				enc.WriteLong(int64(idx))
				w.send(msgSynced, enc.Bytes())
			}()
		case msgIncarnation:
			id, inc := d.ReadLong(), d.ReadLong()
			if d.Err() != nil {
				return
			}
			prev, err := l.m.noteIncarnation(id, uint64(inc))
			if err != nil {
				l.m.log.Warn("incarnation of a member not recorded", zap.Int64("peer", id), zap.Error(err))
				return
			}
			enc := jute.NewEncoder(nil)
			enc.WriteLong(int64(prev))
			l.m.incarnationTable(enc)
			w.send(msgIncarnationSeen, enc.Bytes())
		default:
			l.m.log.Warn("unknown forwarded message", zap.Int("kind", int(kind)), zap.String("peer", nc.RemoteAddr().String()))
			return
		}
	}
}
