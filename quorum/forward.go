package quorum

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
)

// Message kinds of the forwarding protocol on the election port. Every
// message is a 4-byte big-endian length, then the kind byte and a jute
// body.
const (
	// msgWrite (follower → leader): origin bootID, seq, zab.Request.
	msgWrite byte = 1
	// msgTouch (follower → leader): a vector of session ids.
	msgTouch byte = 2
	// msgSync (follower → leader): a sync id.
	msgSync byte = 3
	// msgWriteFailed (leader → follower): seq of a write the leader could
	// not commit.
	msgWriteFailed byte = 4
	// msgSynced (leader → follower): sync id, ok flag, applied index.
	msgSynced byte = 5
	// msgHello (follower → leader), first on every stream: the
	// follower's myid, so the leader knows which members are in touch.
	msgHello byte = 6
)

// maxMessage bounds one forwarded message; a client request is at most
// jute.maxbuffer, so 64 MiB is far above anything legitimate.
const maxMessage = 64 << 20

func writeMsg(w *bufio.Writer, kind byte, body []byte) error {
	var hdr [5]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(body)+1))
	hdr[4] = kind
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

func readMsg(r *bufio.Reader) (byte, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 1 || n > maxMessage {
		return 0, nil, fmt.Errorf("quorum: forwarded message of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, err
	}
	return b[0], b[1:], nil
}

// fwdItem is one thing the forwarder sends, in queue order.
type fwdItem struct {
	kind    byte
	seq     uint64
	f       *zab.Future
	req     *zab.Request
	touches []int64
	syncID  uint64
}

type syncResult struct {
	index uint64
	err   error
}

// fconn is the forwarder's stream to one leader.
type fconn struct {
	target raft.ServerID
	nc     net.Conn
	w      *bufio.Writer
	// inflight are the writes sent on this stream whose futures may still
	// be pending; they fail if the stream breaks.
	inflight []fwdItem
	broken   atomic.Bool
}

// lostTTL is how long the forwarder remembers a connection whose write was
// lost. The server closes such a connection as soon as it answers the lost
// write, so a minute is far more than any later write of it needs.
const lostTTL = time.Minute

// forwarder owns this member's single ordered stream to the leader.
type forwarder struct {
	m  *Member
	q  chan fwdItem
	mu struct {
		sync.Mutex
		touches  map[int64]struct{}
		syncs    map[uint64]chan syncResult
		nextSync uint64
		// lost holds the client connections (zab.Request.Origin) that
		// had a write fail here, and when: their later writes are
		// refused, so none lands after an earlier one was lost.
		lost      map[uint64]time.Time
		lastPrune time.Time
	}
	// lostCount mirrors len(mu.lost), so that lostWrite costs no lock
	// while no write was lost (nearly always).
	lostCount atomic.Int64
	// streamOpen is set while the forwarder has a stream to a leader: a
	// member that has just become leader sends its writes through the
	// forwarder until that stream to the old leader is closed and its
	// unanswered writes are failed.
	streamOpen atomic.Bool
	brokenCh   chan *fconn
	stop       chan struct{}
	wg         sync.WaitGroup
	// writes counts writes queued here and not yet handed on (to the
	// leader's stream, or to the local log once this member leads). A
	// new leader's own writes wait until it is zero (awaitQueuedWrites),
	// so one connection's writes keep their order across the change.
	writes atomic.Int64
}

func newForwarder(m *Member) *forwarder {
	f := &forwarder{m: m, q: make(chan fwdItem, 4096), brokenCh: make(chan *fconn, 4), stop: make(chan struct{})}
	f.mu.touches = map[int64]struct{}{}
	f.mu.syncs = map[uint64]chan syncResult{}
	f.mu.lost = map[uint64]time.Time{}
	f.wg.Add(1)
	go f.run()
	return f
}

func (f *forwarder) enqueue(it fwdItem) bool {
	select {
	case f.q <- it:
		return true
	case <-f.stop:
		return false
	}
}

// awaitQueuedWrites waits until no write is queued here any more (at most
// d), and reports whether the queue emptied. Only a leader calls it:
// nothing new is queued then, so the queue drains.
func (f *forwarder) awaitQueuedWrites(d time.Duration) bool {
	for deadline := time.Now().Add(d); f.writes.Load() > 0; {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-time.After(time.Millisecond):
		case <-f.stop:
			return false
		}
	}
	return true
}

// failQueuedWrites fails every write waiting in the queue, keeping the
// touches and syncs (which it re-queues). Only the run goroutine calls it.
func (f *forwarder) failQueuedWrites() {
	var keep []fwdItem
	for done := false; !done; {
		select {
		case it := <-f.q:
			if it.kind == msgWrite {
				f.writes.Add(-1)
				f.failItem(it, zab.ErrNotLeader)
			} else {
				keep = append(keep, it)
			}
		default:
			done = true
		}
	}
	for _, it := range keep {
		select {
		case f.q <- it:
		default:
			f.failItem(it, zab.ErrNotLeader)
		}
	}
}

// markLost records that a write of connection origin failed here.
func (f *forwarder) markLost(origin uint64) {
	if origin == 0 {
		return
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.lost[origin] = now
	f.pruneLost(now)
}

// pruneLost forgets the connections that lost a write more than lostTTL
// ago, at most once per lostTTL/4. The caller holds f.mu.
func (f *forwarder) pruneLost(now time.Time) {
	if now.Sub(f.mu.lastPrune) >= lostTTL/4 {
		f.mu.lastPrune = now
		for o, t := range f.mu.lost {
			if now.Sub(t) > lostTTL {
				delete(f.mu.lost, o)
			}
		}
	}
	f.lostCount.Store(int64(len(f.mu.lost)))
}

// lostWrite reports whether connection origin had a write fail here: its
// later writes must fail too.
func (f *forwarder) lostWrite(origin uint64) bool {
	if origin == 0 || f.lostCount.Load() == 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruneLost(time.Now())
	_, ok := f.mu.lost[origin]
	return ok
}

func (f *forwarder) write(seq uint64, fut *zab.Future, r *zab.Request) {
	f.writes.Add(1)
	if !f.enqueue(fwdItem{kind: msgWrite, seq: seq, f: fut, req: r}) {
		f.writes.Add(-1)
		f.m.node.Fail(seq, zab.ErrStopped)
	}
}

func (f *forwarder) touch(id int64) {
	f.mu.Lock()
	f.mu.touches[id] = struct{}{}
	f.mu.Unlock()
}

func (f *forwarder) sync(ctx context.Context) (uint64, error) {
	ch := make(chan syncResult, 1)
	f.mu.Lock()
	f.mu.nextSync++
	id := f.mu.nextSync
	f.mu.syncs[id] = ch
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.mu.syncs, id)
		f.mu.Unlock()
	}()
	if !f.enqueue(fwdItem{kind: msgSync, syncID: id}) {
		return 0, zab.ErrStopped
	}
	select {
	case r := <-ch:
		return r.index, r.err
	case <-ctx.Done():
		return 0, fmt.Errorf("quorum: sync: %w", ctx.Err())
	}
}

func (f *forwarder) syncDone(id uint64, r syncResult) {
	f.mu.Lock()
	ch := f.mu.syncs[id]
	delete(f.mu.syncs, id)
	f.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// failSyncs fails every sync waiting for an answer.
func (f *forwarder) failSyncs() {
	f.mu.Lock()
	syncs := f.mu.syncs
	f.mu.syncs = map[uint64]chan syncResult{}
	f.mu.Unlock()
	for _, ch := range syncs {
		ch <- syncResult{err: zab.ErrNotLeader}
	}
}

func (f *forwarder) close() {
	close(f.stop)
	f.wg.Wait()
}

// run is the forwarder's loop: it sends queued items on the stream to the
// current leader, batches touches every half tick, and fails what it
// cannot deliver.
func (f *forwarder) run() {
	defer f.wg.Done()
	tick := time.NewTicker(f.m.timing.TouchInterval)
	defer tick.Stop()
	var c *fconn
	closeConn := func() {
		if c == nil {
			return
		}
		c.nc.Close()
		lost := false
		for _, it := range c.inflight {
			if !isDone(it.f) {
				lost = true
				f.markLost(it.req.Origin)
			}
			f.m.node.Fail(it.seq, zab.ErrNotLeader)
		}
		f.failSyncs()
		c = nil
		f.streamOpen.Store(false)
		if lost {
			// Writes went down with the leader. Fail the writes queued
			// behind them too: a connection's later write must not
			// reach the new leader ahead of a lost earlier one.
			f.failQueuedWrites()
		}
	}
	defer func() {
		closeConn()
		for {
			select {
			case it := <-f.q:
				if it.kind == msgWrite {
					f.writes.Add(-1)
				}
				f.failItem(it, zab.ErrStopped)
			default:
				return
			}
		}
	}()
	for {
		var it fwdItem
		select {
		case <-f.stop:
			return
		case b := <-f.brokenCh:
			if b == c {
				closeConn()
			}
			continue
		case <-tick.C:
			if c != nil {
				if l := f.m.node.Leader(); l != "" && l != c.target {
					// A new leader: the old stream's unanswered writes
					// are lost (or applied already), and this member
					// may lead and submit directly again.
					closeConn()
				}
			}
			f.mu.Lock()
			if len(f.mu.touches) == 0 && (f.m.node.IsLeader() || f.m.node.Leader() == "") {
				f.mu.Unlock()
				continue
			}
			// An empty batch still tells the leader this member is in
			// touch (reconfig's synced-quorum test).
			ids := make([]int64, 0, len(f.mu.touches))
			for id := range f.mu.touches {
				ids = append(ids, id)
			}
			clear(f.mu.touches)
			f.mu.Unlock()
			it = fwdItem{kind: msgTouch, touches: ids}
		case it = <-f.q:
		}
		if it.kind == msgWrite && isDone(it.f) {
			f.writes.Add(-1)
			continue
		}
		c = f.deliver(c, it, closeConn)
		if it.kind == msgWrite {
			f.writes.Add(-1)
		}
		if c != nil && len(f.q) == 0 {
			if err := c.w.Flush(); err != nil {
				closeConn()
			}
		}
	}
}

func isDone(f *zab.Future) bool {
	if f == nil {
		return false
	}
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

func (f *forwarder) failItem(it fwdItem, err error) {
	switch it.kind {
	case msgWrite:
		f.markLost(it.req.Origin)
		f.m.node.Fail(it.seq, err)
	case msgSync:
		f.syncDone(it.syncID, syncResult{err: err})
	}
}

// deliver sends it to the leader, connecting (and reconnecting, with
// jitter, within the hold timeout) as needed. It returns the stream to
// use next.
func (f *forwarder) deliver(c *fconn, it fwdItem, closeConn func()) *fconn {
	deadline := time.Now().Add(f.m.timing.HoldTimeout)
	self := raft.ServerID(fmt.Sprint(f.m.cfg.MyID))
	for attempt := 0; ; attempt++ {
		if c != nil && c.broken.Load() {
			closeConn()
			c = nil
		}
		leader := f.m.node.Leader()
		if c != nil && leader != c.target {
			closeConn()
			c = nil
		}
		if it.kind == msgWrite && f.lostWrite(it.req.Origin) {
			f.failItem(it, zab.ErrNotLeader)
			return c
		}
		if leader == self {
			f.local(it)
			return c
		}
		if leader != "" && c == nil {
			c = f.dial(leader)
		}
		if c != nil {
			if err := f.send(c, it); err != nil {
				f.log().Debug("forward stream broke", zap.String("peer", string(c.target)), zap.Error(err))
				closeConn()
				f.failItem(it, zab.ErrNotLeader)
				return nil
			}
			return c
		}
		if time.Now().After(deadline) {
			f.failItem(it, zab.ErrNotLeader)
			return nil
		}
		// No leader, or it cannot be reached: an election is probably
		// going on. Back off with jitter and try again.
		wait := time.Duration(10+rand.IntN(20*min(attempt+1, 5))) * time.Millisecond
		select {
		case <-time.After(wait):
		case <-f.stop:
			f.failItem(it, zab.ErrStopped)
			return c
		}
	}
}

func (f *forwarder) log() *zap.Logger { return f.m.log }

// failureErr turns the code of msgWriteFailed into the Future's error:
// 0 means the leader could not propose (zab.ErrNotLeader); anything else
// is a ZooKeeper error code decided by the leader (reconfig's checks).
func failureErr(code jute.Code) error {
	if code == 0 {
		return zab.ErrNotLeader
	}
	return code
}

// failureCode is failureErr's inverse for the leader's side.
func failureCode(err error) jute.Code {
	var code jute.Code
	if errors.As(err, &code) {
		return code
	}
	return 0
}

// local handles an item while this member itself leads.
func (f *forwarder) local(it fwdItem) {
	n := f.m.node
	switch it.kind {
	case msgWrite:
		if it.req.Op == jute.OpReconfig {
			go f.m.leaderReconfig(n.BootID(), it.seq, it.req, func(err error) { n.Fail(it.seq, err) })
			return
		}
		wait := n.SubmitFor(n.BootID(), it.seq, it.req)
		go func() {
			if err := wait(); err != nil {
				f.markLost(it.req.Origin)
				n.Fail(it.seq, zab.ErrNotLeader)
			}
		}()
	case msgTouch:
		for _, id := range it.touches {
			n.Touch(id)
		}
	case msgSync:
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), f.m.timing.HoldTimeout)
			defer cancel()
			idx, err := n.SyncIndex(ctx)
			f.syncDone(it.syncID, syncResult{index: idx, err: err})
		}()
	}
}

func (f *forwarder) dial(leader raft.ServerID) *fconn {
	var id int64
	if _, err := fmt.Sscan(string(leader), &id); err != nil {
		return nil
	}
	p, ok := f.m.peer(id)
	if !ok {
		return nil
	}
	nc, err := f.m.dialPeer(p.ElectionAddr(), f.m.timing.HoldTimeout)
	if err != nil {
		f.log().Debug("forward dial failed", zap.String("peer", p.ElectionAddr()), zap.Error(err))
		return nil
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := &fconn{target: leader, nc: nc, w: bufio.NewWriterSize(nc, 64<<10)}
	enc := jute.NewEncoder(nil)
	enc.WriteLong(f.m.cfg.MyID)
	if writeMsg(c.w, msgHello, enc.Bytes()) != nil {
		nc.Close()
		return nil
	}
	f.streamOpen.Store(true)
	f.wg.Add(1)
	go f.readLoop(c)
	return c
}

func (f *forwarder) send(c *fconn, it fwdItem) error {
	enc := jute.NewEncoder(nil)
	switch it.kind {
	case msgWrite:
		enc.WriteLong(int64(f.m.node.BootID()))
		enc.WriteLong(int64(it.seq))
		it.req.Encode(enc)
		// Drop the completed prefix so inflight stays short.
		for len(c.inflight) > 0 && isDone(c.inflight[0].f) {
			c.inflight = c.inflight[1:]
		}
		c.inflight = append(c.inflight, fwdItem{seq: it.seq, f: it.f, req: it.req})
	case msgTouch:
		enc.WriteInt(int32(len(it.touches)))
		for _, id := range it.touches {
			enc.WriteLong(id)
		}
		// How far this member applied: the leader's test of a synced
		// follower (zk_synced_followers).
		enc.WriteLong(int64(f.m.node.Raft().AppliedIndex()))
	case msgSync:
		enc.WriteLong(int64(it.syncID))
	}
	c.nc.SetWriteDeadline(time.Now().Add(f.m.timing.HoldTimeout))
	return writeMsg(c.w, it.kind, enc.Bytes())
}

// readLoop reads the leader's answers on c until it breaks.
func (f *forwarder) readLoop(c *fconn) {
	defer f.wg.Done()
	r := bufio.NewReader(c.nc)
	for {
		kind, body, err := readMsg(r)
		if err != nil {
			c.broken.Store(true)
			select {
			case f.brokenCh <- c:
			case <-f.stop:
			}
			return
		}
		d := jute.NewDecoder(body)
		switch kind {
		case msgWriteFailed:
			seq := uint64(d.ReadLong())
			code := jute.Code(d.ReadInt())
			if d.Err() == nil {
				f.m.node.Fail(seq, failureErr(code))
			}
		case msgSynced:
			id := uint64(d.ReadLong())
			ok := d.ReadBool()
			idx := uint64(d.ReadLong())
			if d.Err() == nil {
				r := syncResult{index: idx}
				if !ok {
					r.err = zab.ErrNotLeader
				}
				f.syncDone(id, r)
			}
		}
	}
}

// leaderSide serves the streams of the other members on the election
// port. Whichever member leads proposes what arrives; a member that does
// not lead answers every write with msgWriteFailed.
type leaderSide struct {
	m            *Member
	ln           net.Listener
	pendingSyncs atomic.Int64
	mu           struct {
		sync.Mutex
		conns  map[net.Conn]struct{}
		closed bool
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
	index uint64
	at    time.Time
}

// reportApplied records that member id applied up to raft index idx.
func (l *leaderSide) reportApplied(id int64, idx uint64) {
	if id == 0 {
		return
	}
	l.mu.Lock()
	l.mu.applied[id] = appliedReport{index: idx, at: time.Now()}
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
				l.reportApplied(peer, uint64(d.ReadLong()))
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
		default:
			l.m.log.Warn("unknown forwarded message", zap.Int("kind", int(kind)), zap.String("peer", nc.RemoteAddr().String()))
			return
		}
	}
}
