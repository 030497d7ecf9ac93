// The follower side's stream to the leader: dialing it, sending the queued
// items on it and reading the leader's answers (deliver, dial, send,
// readLoop), and the message framing both sides use.

package quorum

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
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
				f.leaderGone(c.target, err)
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

func (f *forwarder) dial(leader raft.ServerID) *fconn {
	var id int64
	if _, err := fmt.Sscan(string(leader), &id); err != nil {
		return nil
	}
	p, ok := f.m.peer(id)
	if !ok {
		return nil
	}
	nc, err := f.m.dialMember(p.ElectionAddr(), "election", f.m.timing.HoldTimeout)
	if err != nil {
		f.log().Debug("forward dial failed", zap.String("peer", p.ElectionAddr()), zap.Error(err))
		if errors.Is(err, syscall.ECONNREFUSED) {
			f.leaderGone(leader, err)
		}
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
		// For the leader's progress table (the consoles' Ensemble page).
		enc.WriteLong(f.m.node.LastZxid())
		enc.WriteBool(f.m.inEnsembleTouch())
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
			if !errors.Is(err, net.ErrClosed) {
				// Ended by the far side, not by closeConn: perhaps the
				// leader's process is gone (leadergone.go).
				f.leaderGone(c.target, err)
			}
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
		case msgCommitted:
			leader, term, index := d.ReadLong(), d.ReadLong(), d.ReadLong()
			if d.Err() == nil {
				f.m.node.LeaderCommitted(raft.ServerID(strconv.FormatInt(leader, 10)), uint64(term), uint64(index))
			}
		case msgProgress:
			p, err := decodeProgress(body)
			if err != nil {
				f.log().Warn("bad progress table from the leader", zap.String("leader", string(c.target)), zap.Error(err))
				continue
			}
			f.mu.Lock()
			f.mu.progress, f.mu.progressAt = p, time.Now()
			f.mu.Unlock()
		}
	}
}
