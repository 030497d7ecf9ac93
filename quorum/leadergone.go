// A dead leader's process, noticed at once.
//
// Raft's followers notice a silent leader after HeartbeatTimeout
// (syncLimit × tickTime / 5: 2 s at ZooKeeper's defaults) and up to as
// much again, and only then elect. A leader whose process ended (kill -9,
// a crash, the OOM killer) is not silent, though: its host's kernel closes
// its connections and refuses new ones at once. ZooKeeper's followers
// elect as soon as their socket to the leader ends; zkd's do the same.
//
// When a follower's forward stream to the leader ends from the far side,
// the follower dials the leader's election port once. A refused
// connection means no process listens there any more. A paused or
// partitioned leader does not refuse (the dial succeeds or times out), and
// is left to raft's timeouts, as before; so is a follower that cannot
// reach a majority of voters itself (it may be the one cut off). On a
// refusal the voters that remain campaign in turn, in the order of their
// server ids, leaderGoneStagger apart: the first at once, each later one
// only if no other leader is known by its turn (the first could not win:
// its log was behind). A campaign is raft's TimeoutNow sent to oneself
// (zab.Node.CampaignNow), so the other voters grant the vote although
// they still know the dead leader.
// Only liveness changes; who may win is still raft's rule.

package quorum

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// leaderGoneProbe bounds the dials that ask whether the leader's process
// still listens, and leaderGoneHold is how long a live listener keeps a
// silent connection open before the probe takes it for alive (zkd's
// election port waits seconds for a member's first bytes).
const (
	leaderGoneProbe = time.Second
	leaderGoneHold  = 100 * time.Millisecond
)

// leaderGoneStagger is how long each voter waits after the one before it
// in id order: long enough for an election on a loaded machine to finish,
// and never longer than raft's heartbeat timeout, after which raft elects
// anyway.
func (m *Member) leaderGoneStagger() time.Duration {
	return min(250*time.Millisecond, m.timing.HeartbeatTimeout/2)
}

// leaderStreamEnded runs when this member's forward stream to leader
// ended by the far side, failed a send, or could not be opened (err says
// which). It probes the leader's election port and, when no process
// listens there, campaigns in turn. One probe runs at a time.
// It gives up when stop closes (the forwarder's, so that Member.Close
// does not return while a probe still dials).
func (m *Member) leaderStreamEnded(stop <-chan struct{}, leader raft.ServerID, err error) {
	if !m.leaderProbe.CompareAndSwap(false, true) {
		return // a probe runs already
	}
	defer m.leaderProbe.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	id, perr := strconv.ParseInt(string(leader), 10, 64)
	if perr != nil || m.node.IsLeader() || !m.node.IsVoter() || m.node.Leader() != leader {
		return
	}
	p, ok := m.peer(id)
	if !ok {
		return
	}
	if !processGone(ctx, p.ElectionAddr()) {
		return // it listens (a leader change), or cannot be told: raft's timeouts decide
	}
	rank, voters := m.voterRank(leader)
	if rank < 0 || !m.majorityReachable(ctx, voters) {
		// Not a voter; or this member is the one cut off (a firewall
		// that rejects every member's connections looks like dead
		// processes): its campaign could only raise the term and unseat
		// the real leader once the network heals.
		return
	}
	wait := time.Duration(rank) * m.leaderGoneStagger()
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
	}
	if l := m.node.Leader(); l != leader && l != "" || m.node.IsLeader() {
		return // another member leads already
	}
	m.log.Info("the leader's process is gone (its stream ended and its election port refuses connections): campaigning now rather than after raft's heartbeat timeout",
		zap.String("leader", string(leader)), zap.String("electionAddr", p.ElectionAddr()),
		zap.NamedError("stream", err), zap.Int("turn", rank), zap.Duration("waited", wait))
	if cerr := m.node.CampaignNow(); cerr != nil {
		m.log.Warn("could not campaign after the leader's process ended; raft elects after its heartbeat timeout",
			zap.String("leader", string(leader)), zap.Error(cerr))
	}
}

// processGone reports whether no process listens on addr any more: a
// dial is refused, or lands in the backlog of a listener that the dying
// process had not closed yet and is reset with it (a killed process's
// sockets close one by one, so its stream can end before its listener
// does). A listener that holds the connection open for leaderGoneHold
// without a word is a live process; so is one that cannot be reached
// within leaderGoneProbe (a paused or partitioned leader), or before ctx
// ends.
func processGone(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, leaderGoneProbe)
	defer cancel()
	var d net.Dialer
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return errors.Is(err, syscall.ECONNREFUSED)
		}
		c.SetReadDeadline(time.Now().Add(leaderGoneHold))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			return false
		}
		// Reset or closed unanswered: ask again.
	}
	return false
}

// voterRank is this member's place, by server id, among the voters of
// raft's configuration other than gone (-1 when it is not one of them),
// and the ids of all the voters, gone's included.
func (m *Member) voterRank(gone raft.ServerID) (int, []int64) {
	f := m.node.Raft().GetConfiguration()
	if f.Error() != nil {
		return -1, nil
	}
	var ids, all []int64
	for _, s := range f.Configuration().Servers {
		id, err := strconv.ParseInt(string(s.ID), 10, 64)
		if s.Suffrage != raft.Voter || err != nil {
			continue
		}
		all = append(all, id)
		if s.ID != gone {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Index(ids, m.cfg.MyID), all
}

// majorityReachable reports whether this member and the voters whose
// election port accepts its connections (each dial bounded by
// leaderGoneProbe and ctx) make a majority of voters.
func (m *Member) majorityReachable(ctx context.Context, voters []int64) bool {
	have := 0
	for _, id := range voters {
		if id == m.cfg.MyID {
			have++
			continue
		}
		p, ok := m.peer(id)
		if !ok {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, leaderGoneProbe)
		var d net.Dialer
		if c, err := d.DialContext(dctx, "tcp", p.ElectionAddr()); err == nil {
			c.Close()
			have++
		}
		cancel()
	}
	return have > len(voters)/2
}
