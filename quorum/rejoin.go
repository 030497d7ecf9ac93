// A member whose data went back — restored from an old backup, emptied by
// hand, or rebuilt by `zkd rebuild` — must not vote until it has caught
// up: raft's safety assumes a voter never forgets a term, a vote or an
// entry it acknowledged (docs/disk-faults.md, "A member restored from an
// old backup" and "Rebuilding a member from its peers").
//
// Each start of a member is an incarnation, a counter kept in its own
// stable store and raised (synced) before anything else, and again every
// second while it runs. The member announces it with its run's random
// nonce on every peer's election port (msgIncarnation); each peer keeps
// the highest incarnation it has seen of each member and answers with the
// one it had and its whole table, which the announcer merges. A peer that
// has seen this incarnation from another run, or a later one, has seen a
// run this data directory does not remember: the directory went back. Until the member knows it did not (a majority
// of the voters, itself included, answered and none had seen it), and
// for good when it did, its vote fence keeps it out of elections: it
// grants no vote or pre-vote, asks for none and refuses leadership
// transfers. A fenced member still takes appends and snapshots (an ack
// is only given for what it has written) and lifts the fence once a sync
// with the leader (a barrier: every committed entry) has applied here.

package quorum

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/jute"
)

// Message kinds of the incarnation check on the election port (see
// forward.go for the others).
const (
	// msgIncarnation (member → any member): the sender's myid and the
	// incarnation it starts as.
	msgIncarnation byte = 8
	// msgIncarnationSeen (answer): the highest incarnation of that member
	// the answering member had seen before (0 for none), then the
	// answering member's table: a count, then (myid, highest incarnation
	// known) pairs, its own included, which the asker merges into its
	// own, so a member that was down during another's run learns of it
	// from a third.
	msgIncarnationSeen byte = 9
)

// errVoteFenced is what a fenced member's transport answers a leadership
// transfer with.
var errVoteFenced = errors.New("quorum: this member does not vote until it has caught up with the leader (its data went back or is being rebuilt)")

// voteFence wraps raft's network transport: while fenced, the member's
// raft neither grants nor asks for votes and pre-votes, and refuses
// TimeoutNow, so it can be part of no majority that elects a leader.
// Appends, heartbeats and snapshot installs pass. Every RPC but
// heartbeats (which raft's transport hands to raft directly) goes
// through the filter goroutine: one channel hop more per RPC.
type voteFence struct {
	*raft.NetworkTransport
	fenced atomic.Bool
	rpcs   chan raft.RPC
	// injected holds RPCs of this member's own making for raft (zab's
	// commit notices), which pass the fence.
	injected chan raft.RPC
	stop     chan struct{}
	stopped  sync.Once
	// refused counts the vote requests refused while fenced.
	refused atomic.Int64
}

// newVoteFence returns t fenced; storing false in fenced opens it.
func newVoteFence(t *raft.NetworkTransport) *voteFence {
	f := &voteFence{NetworkTransport: t, rpcs: make(chan raft.RPC), injected: make(chan raft.RPC, 16), stop: make(chan struct{})}
	f.fenced.Store(true)
	go f.filter()
	return f
}

// Consumer implements raft.Transport: the RPCs that pass the fence.
func (f *voteFence) Consumer() <-chan raft.RPC { return f.rpcs }

// Inject hands raft an RPC of this member's own making (zab's commit
// notices) unless too many wait already; it never blocks.
func (f *voteFence) Inject(rpc raft.RPC) bool {
	select {
	case f.injected <- rpc:
		return true
	default:
		return false
	}
}

func (f *voteFence) filter() {
	in := f.NetworkTransport.Consumer()
	for {
		select {
		case <-f.stop:
			return
		case rpc := <-f.injected:
			select {
			case f.rpcs <- rpc:
			case <-f.stop:
				return
			}
		case rpc := <-in:
			if f.fenced.Load() {
				switch c := rpc.Command.(type) {
				case *raft.RequestVoteRequest:
					f.refused.Add(1)
					rpc.Respond(&raft.RequestVoteResponse{RPCHeader: raft.RPCHeader{ProtocolVersion: c.ProtocolVersion}, Term: c.Term}, nil)
					continue
				case *raft.RequestPreVoteRequest:
					f.refused.Add(1)
					rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: raft.RPCHeader{ProtocolVersion: c.ProtocolVersion}, Term: c.Term}, nil)
					continue
				case *raft.TimeoutNowRequest:
					rpc.Respond(nil, errVoteFenced)
					continue
				}
			}
			select {
			case f.rpcs <- rpc:
			case <-f.stop:
				return
			}
		}
	}
}

// RequestVote implements raft.Transport: refused at home while fenced.
func (f *voteFence) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if f.fenced.Load() {
		*resp = raft.RequestVoteResponse{Term: args.Term}
		return nil
	}
	return f.NetworkTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote implements raft.WithPreVote: refused at home while
// fenced.
func (f *voteFence) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if f.fenced.Load() {
		*resp = raft.RequestPreVoteResponse{Term: args.Term}
		return nil
	}
	return f.NetworkTransport.RequestPreVote(id, target, args, resp)
}

// Close implements raft.WithClose.
func (f *voteFence) Close() error {
	f.stopped.Do(func() { close(f.stop) })
	return f.NetworkTransport.Close()
}

// incarnationKey is the stable-store counter of member id's highest
// incarnation seen, as a seen value; ownIncarnation is this member's own
// count.
func incarnationKey(id int64) string { return fmt.Sprintf("incarnation/%d", id) }

// A seen value packs an incarnation (high 32 bits) with the random nonce
// of the run that announced it (low 32 bits): a peer that holds this
// member's current count with another run's nonce saw an earlier run
// reach it, while this run's own announcement, received directly, again
// after a lost answer, or through a third member, carries its nonce.
func seenValue(inc uint64, nonce uint32) uint64 { return inc<<32 | uint64(nonce) }

func seenInc(v uint64) uint64 { return v >> 32 }

// newer reports whether seen value v is of a higher incarnation than cur.
func newer(v, cur uint64) bool { return seenInc(v) > seenInc(cur) }

// newNonce returns a run's random nonzero nonce.
func newNonce() uint32 {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return uint32(time.Now().UnixNano()) | 1
	}
	return binary.BigEndian.Uint32(b[:]) | 1
}

const ownIncarnation = "incarnation"

// catchUpPending is 1 while a member whose data went back has not yet
// caught up: a restart in between keeps it out of elections even though
// its raised incarnation is then news to every peer.
const catchUpPending = "catch-up-pending"

// noteIncarnation records that member id announced seen value v and
// returns the highest one of it seen before.
func (m *Member) noteIncarnation(id int64, v uint64) (uint64, error) {
	m.incMu.Lock()
	defer m.incMu.Unlock()
	prev, err := m.node.MemberCounter(incarnationKey(id))
	if err != nil {
		return 0, err
	}
	if newer(v, prev) {
		if err := m.node.SetMemberCounter(incarnationKey(id), v); err != nil {
			return 0, err
		}
		m.log.Debug(fmt.Sprintf("member %d raised its incarnation to %d", id, seenInc(v)))
	}
	return prev, nil
}

// incarnationTable encodes this member's table of the highest
// incarnation known of every member, its own included, for
// msgIncarnationSeen.
func (m *Member) incarnationTable(enc *jute.Encoder) {
	peers := m.incarnationPeers()
	enc.WriteInt(int32(len(peers) + 1))
	own, _ := m.node.MemberCounter(ownIncarnation)
	enc.WriteLong(m.cfg.MyID)
	enc.WriteLong(int64(seenValue(own, m.nonce)))
	for _, p := range peers {
		v, _ := m.node.MemberCounter(incarnationKey(p.ID))
		enc.WriteLong(p.ID)
		enc.WriteLong(int64(v))
	}
}

// mergeIncarnations records the incarnations of other members that peer
// from knows of and this member does not.
func (m *Member) mergeIncarnations(from int64, d *jute.Decoder) {
	n := int(d.ReadInt())
	for i := 0; i < n && i < 256 && d.Err() == nil; i++ {
		id, v := d.ReadLong(), uint64(d.ReadLong())
		if d.Err() != nil || id == m.cfg.MyID {
			continue // its count of this member is the answer itself
		}
		m.incMu.Lock()
		prev, err := m.node.MemberCounter(incarnationKey(id))
		if err == nil && newer(v, prev) {
			if err := m.node.SetMemberCounter(incarnationKey(id), v); err == nil {
				m.log.Debug(fmt.Sprintf("learned member %d's incarnation %d from member %d", id, seenInc(v), from))
			}
		}
		m.incMu.Unlock()
	}
}

// askIncarnation announces incarnation inc of this run on peer p's
// election port and returns the highest seen value of this member p had
// before.
func (m *Member) askIncarnation(p Peer, inc uint64) (uint64, error) {
	c, err := m.dialMember(p.ElectionAddr(), "election", m.timing.HeartbeatTimeout*5)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(m.timing.TransportTimeout))
	// No msgHello: the announcement must not count as being in touch
	// with a leader (LeaderStats, reconfig's quorum test).
	w := bufio.NewWriter(c)
	body := jute.NewEncoder(nil)
	body.WriteLong(m.cfg.MyID)
	body.WriteLong(int64(seenValue(inc, m.nonce)))
	if err := writeMsg(w, msgIncarnation, body.Bytes()); err != nil {
		return 0, err
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	for {
		kind, b, err := readMsg(r)
		if err != nil {
			return 0, fmt.Errorf("quorum: incarnation check with member %d (%s): %w", p.ID, p.ElectionAddr(), err)
		}
		if kind != msgIncarnationSeen {
			continue
		}
		d := jute.NewDecoder(b)
		prev := uint64(d.ReadLong())
		if err := d.Err(); err != nil {
			return 0, fmt.Errorf("quorum: incarnation answer of member %d: %w", p.ID, err)
		}
		if d.Remaining() > 0 {
			m.mergeIncarnations(p.ID, d)
		}
		return prev, nil
	}
}

// raiseEvery is how often a running member raises its incarnation and
// announces it again, so that a copy of its data directory taken while it
// runs (a hot backup) is also recognised once restored: the copy's count
// is behind what the peers saw after it.
const raiseEvery = time.Second

// rejoin runs from the start of a member of an ensemble with a vote fence:
// it raises this member's incarnation, announces it to every peer, and
// lifts the fence once a majority confirmed that the data directory did
// not go back, or, when it did (or `zkd rebuild` emptied it), once the
// member has caught up with the leader. Then it raises and announces the
// incarnation every raiseEvery.
func (m *Member) rejoin(fence *voteFence) {
	defer m.wg.Done()
	self, _ := m.cfg.Self()
	if self.Observer {
		fence.fenced.Store(false) // an observer never votes
		return
	}
	own, err := m.node.MemberCounter(ownIncarnation)
	if err == nil {
		err = m.node.SetMemberCounter(ownIncarnation, own+1)
	}
	if err != nil {
		m.log.Error("incarnation not recorded: this member will not vote until it has caught up with the leader", zap.Error(err))
		m.catchUp(fence, "its incarnation could not be recorded")
		return
	}
	inc := own + 1
	rebuilding := m.node.Rebuilding()
	var catchingUp sync.Once
	// mustCatchUp is set once the fence may only lift after a catch-up.
	mustCatchUp := false
	startCatchUp := func(why string) {
		mustCatchUp = true
		catchingUp.Do(func() {
			fence.fenced.Store(true)
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				m.catchUp(fence, why)
			}()
		})
	}
	if rebuilding {
		startCatchUp("zkd rebuild emptied its data directory")
	}
	if pending, _ := m.node.MemberCounter(catchUpPending); pending != 0 {
		m.log.Warn("this member's data went back before its last start and it has not caught up since: it does not vote until it has caught up with the leader")
		startCatchUp("its data directory went back")
	}
	need := len(voters(m.cfg.Peers)) / 2 // voters besides this one for a majority
	type answer struct {
		peer Peer
		prev uint64
		err  error
	}
	answered, votersAnswered := map[int64]bool{}, 0
	wentBack, everyone := false, false
	raised := time.Now()
	wait := 50 * time.Millisecond
	for {
		others := m.incarnationPeers()
		ch := make(chan answer, len(others))
		asked := 0
		for _, p := range others {
			if !answered[p.ID] {
				asked++
				go func() {
					prev, err := m.askIncarnation(p, inc)
					ch <- answer{p, prev, err}
				}()
			}
		}
		for range asked {
			var a answer
			select {
			case a = <-ch:
			case <-m.stop:
				return
			}
			if a.err != nil {
				m.log.Debug("incarnation check: member not answering", zap.Int64("peer", a.peer.ID), zap.Error(a.err))
				continue
			}
			answered[a.peer.ID] = true
			if !a.peer.Observer {
				votersAnswered++
			}
			prevInc := seenInc(a.prev)
			if prevInc < inc || a.prev == seenValue(inc, m.nonce) {
				continue // news, or this run's own announcement
			}
			seen := inc
			// Go on from the highest count seen, so that the next raise,
			// and the next start, are news to every peer.
			if err := m.node.SetMemberCounter(ownIncarnation, max(prevInc, inc)); err != nil {
				m.log.Warn("incarnation not raised past the one seen", zap.Error(err))
			} else {
				inc = max(prevInc, inc)
			}
			if rebuilding || wentBack {
				continue // emptied on purpose: its count begins again at 1
			}
			wentBack = true
			if err := m.node.SetMemberCounter(catchUpPending, 1); err != nil {
				m.log.Warn("catch-up not recorded: a restart before it is done would vote", zap.Error(err))
			}
			m.log.Error(fmt.Sprintf("DATA WENT BACK in %s: this member (myid %d) starts as incarnation %d, which member %d has already seen (it saw up to %d; zkd raises it at each start and every second while running): "+
				"this data directory is older than the member's last run (restored from an old backup, or it lost its newest files), so this member may have forgotten writes and votes it acknowledged. "+
				"It neither votes nor stands for election until it has caught up with the ensemble's leader; nothing to do while the other members are healthy. "+
				"If no leader appears, start the other members with their own data (never restored or moved aside)",
				m.dataDir, m.cfg.MyID, seen, a.peer.ID, prevInc), zap.Int64("peer", a.peer.ID), zap.Uint64("seen", prevInc), zap.Uint64("incarnation", seen))
			startCatchUp("its data directory went back")
		}
		if !mustCatchUp && votersAnswered >= need && fence.fenced.Load() {
			fence.fenced.Store(false)
			m.log.Info("incarnation check: this member's data did not go back; it votes",
				zap.Uint64("incarnation", inc), zap.Int("membersAnswered", len(answered)))
		}
		missing := 0
		for _, p := range others {
			if !answered[p.ID] {
				missing++
			}
		}
		if missing == 0 && !everyone {
			everyone = true
			m.log.Info("incarnation check: every member knows this start", zap.Uint64("incarnation", inc))
		}
		if time.Since(raised) >= raiseEvery && !fence.fenced.Load() {
			// Raised before it is announced, so a start after a crash
			// never repeats a count a peer has seen.
			if err := m.node.SetMemberCounter(ownIncarnation, inc+1); err != nil {
				m.log.Warn("incarnation not raised", zap.Error(err))
			} else {
				inc++
				clear(answered)
				raised = time.Now()
			}
		}
		next := raiseEvery
		if missing > 0 {
			next, wait = wait, min(2*wait, raiseEvery)
		}
		select {
		case <-m.stop:
			return
		case <-time.After(next):
		}
	}
}

// incarnationPeers are the members this one announces its incarnation
// to: those of its zoo.cfg and those a reconfig added, but itself.
func (m *Member) incarnationPeers() []Peer {
	var out []Peer
	seen := map[int64]bool{m.cfg.MyID: true}
	add := func(peers []Peer) {
		for _, p := range peers {
			if !seen[p.ID] {
				seen[p.ID] = true
				if q, ok := m.peer(p.ID); ok {
					p = q // this member's own address for it, if it has one
				}
				out = append(out, p)
			}
		}
	}
	add(m.cfg.Peers)
	if d := m.membership(); d != nil {
		add(d.peers)
	}
	return out
}

// catchUp keeps the member fenced until a sync with the leader (whose
// barrier covers every committed entry) has applied here, then lifts the
// fence and, after a rebuild, removes the rebuild marker.
func (m *Member) catchUp(fence *voteFence, why string) {
	self := raft.ServerID(fmt.Sprint(m.cfg.MyID))
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		if l := m.node.Leader(); l != "" && l != self {
			ctx, cancel := context.WithTimeout(context.Background(), m.timing.TransportTimeout*4)
			err := m.Sync(ctx)
			cancel()
			if err == nil {
				if m.node.Rebuilding() {
					if err := m.node.ClearRebuild(); err != nil {
						m.log.Warn("rebuild marker not removed; the next start waits for the leader again", zap.Error(err))
					}
				}
				if err := m.node.SetMemberCounter(catchUpPending, 0); err != nil {
					m.log.Warn("catch-up not recorded as done; the next start waits for the leader again", zap.Error(err))
				}
				fence.fenced.Store(false)
				m.log.Info(fmt.Sprintf("caught up with the leader (member %s) after %s: this member votes again", l, why),
					zap.Uint64("appliedIndex", m.node.AppliedIndex()), zap.Int64("votesRefused", fence.refused.Load()))
				return
			}
			m.log.Debug("catching up with the leader", zap.Error(err))
		}
		select {
		case <-m.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
