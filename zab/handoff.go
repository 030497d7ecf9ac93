package zab

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// A leader whose disk stalls hands leadership away.
//
// hashicorp/raft stores the leader's own log entries before it replicates
// them and counts the leader's copy in every commit, so while the leader's
// fdatasync is stuck no write commits, however healthy the followers are
// (ZooKeeper 3.8 commits on the followers' acks alone). diskWatch watches
// the segment log's write in progress (wal.Log.SyncingSince); once the
// leader's has run for the stall limit, it asks raft to transfer
// leadership to a follower. Raft's leader loop is blocked inside that
// StoreLogs, so raft takes the request when the write returns: it then
// refuses new entries, brings the target up to date (replicating to a
// follower needs no fsync of the leader's) and sends it TimeoutNow; the
// target, with a healthy disk, wins the election at once and commits
// without the slow member. The batch that was stalled is in the log the
// target got, so it commits (as a rule before the election, once the
// followers ack it). Meanwhile the pacing holds the writes waiting here
// (mayFlushLocked), so that none queues behind another slow write before
// raft takes the transfer, and none is refused by the transfer in
// progress. Once another member leads, the held writes of this member's
// own clients go to Config.Reroute (quorum forwards them to the new
// leader) in order, followed by those its clients send while the hold
// lasts (Node.HoldsWrites); the writes other members forwarded here fail
// with ErrNotLeader, and their members answer ConnectionLoss to their
// clients, as for any write waiting on a deposed leader. A batch proposed
// before the hold began that raft refuses because the transfer is under
// way (raft's leader loop takes the batch or the transfer first, at
// random, once the stalled write returns) goes back to the front of the
// queue and is held with the rest (requeue).
//
// The stall limit (Config.SyncStallLimit, derived from TickTime by
// default) is well above a healthy fsync and below the shortest session
// timeout a client can get (2 × tickTime). A member hands off at most once
// every handoffCooldown, and never to the member it took leadership from
// within that time: one hand-off costs an election, and an ensemble whose
// disks are all slow must not spend its time passing leadership round.
// All of this runs outside the FSM: nothing replicated reads the clock.

// Bounds of the stall limit derived from TickTime (see stallLimit).
const (
	// minStallLimit keeps a loaded machine's fsync hiccups (a few hundred
	// ms on a shared disk) from moving leadership.
	minStallLimit = 500 * time.Millisecond
	// maxStallLimit is ZooKeeper's own fsync.warningthresholdms: past it
	// ZooKeeper logs "fsync-ing the write ahead log took N ms".
	maxStallLimit = time.Second
)

// handoffCooldown is the least time between two hand-offs by one member,
// and how long a member that took leadership does not hand it back to the
// member it took it from.
const handoffCooldown = 10 * time.Second

// stallLimit is how long the leader's log write may run before it hands
// leadership away: Config.SyncStallLimit if set, else TickTime within
// [minStallLimit, maxStallLimit]. A healthy disk fsyncs in milliseconds
// (a busy spinning disk in tens); one tick is half the shortest session
// timeout a client can get (2 × tickTime), so the stall is noticed well
// within it. Negative disables hand-offs.
func stallLimit(cfg Config) time.Duration {
	if cfg.SyncStallLimit != 0 {
		return cfg.SyncStallLimit
	}
	return min(max(cfg.TickTime, minStallLimit), maxStallLimit)
}

// diskWatch is the goroutine that hands leadership away when the leader's
// log write stalls (see above). It polls a fifth of the limit.
func (n *Node) diskWatch(limit time.Duration) {
	defer n.wg.Done()
	poll := time.NewTicker(max(limit/5, 10*time.Millisecond))
	defer poll.Stop()
	self := raft.ServerID(fmt.Sprint(n.cfg.MyID))
	var (
		prevLeader  raft.ServerID // the leader before this member led
		ledSince    time.Time     // when this member started leading; zero while not
		lastHandoff time.Time
		toldAlone   bool
		toldWaiting time.Time // the stall last reported as held back by the cooldown
		toldNone    time.Time // the stall last reported as having no one to take over
	)
	for {
		select {
		case <-n.stop:
			return
		case <-poll.C:
		}
		if n.raft.State() != raft.Leader {
			if _, id := n.raft.LeaderWithID(); id != "" && id != self {
				prevLeader = id
			}
			ledSince = time.Time{}
			continue
		}
		now := time.Now()
		if ledSince.IsZero() {
			ledSince = now
		}
		since := n.wal.SyncingSince()
		if since.IsZero() || now.Sub(since) < limit {
			continue
		}
		voters := n.voters()
		if len(voters) <= 1 {
			if !toldAlone {
				toldAlone = true
				n.log.Warn("SLOW DISK: this member's raft log write has been running for "+secs(now.Sub(since))+
					"; it is the only voter, so no other member can take over and writes wait for the disk. Check the disk under dataDir (dmesg, iostat, SMART)",
					zap.String("dir", n.cfg.Dir), zap.Duration("limit", limit))
			}
			continue
		}
		if !lastHandoff.IsZero() && now.Sub(lastHandoff) < handoffCooldown {
			if !toldWaiting.Equal(since) {
				toldWaiting = since
				n.log.Warn("SLOW DISK: this leader's raft log write has been running for "+secs(now.Sub(since))+
					", but it handed leadership away "+secs(now.Sub(lastHandoff))+" ago and does so at most once every "+secs(handoffCooldown)+
					" (so that members whose disks are all slow do not pass leadership round), so it keeps leading for now. Check the disk under dataDir",
					zap.String("dir", n.cfg.Dir))
			}
			continue
		}
		var avoid raft.ServerID
		if prevLeader != "" && now.Sub(ledSince) < handoffCooldown {
			avoid = prevLeader
		}
		target, ok := n.handoffTarget(voters, self, avoid)
		if !ok {
			if !toldNone.Equal(since) {
				toldNone = since
				n.log.Warn("SLOW DISK: this leader's raft log write has been running for "+secs(now.Sub(since))+
					", but no other voter is in touch and up to date to take over, so it keeps leading. Check the disk under dataDir, and the other members",
					zap.String("dir", n.cfg.Dir), zap.String("notBackTo", string(avoid)))
			}
			continue
		}
		lastHandoff = now
		n.handOff(target, since, limit)
	}
}

// secs formats d as seconds with one decimal, for log lines.
func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// voters lists the voters of raft's latest configuration (read without
// the leader loop, which may be blocked in the stalled write).
func (n *Node) voters() []raft.Server {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return nil
	}
	var out []raft.Server
	for _, s := range fut.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			out = append(out, s)
		}
	}
	return out
}

// handoffTarget picks the voter to hand leadership to: the first of
// Config.HandoffTargets (healthy and up to date, best first) that is a
// voter other than self and avoid; without that hook, the voter raft's
// replication has furthest along (the zero Server: raft picks), unless
// that could be avoid, then the first other voter.
func (n *Node) handoffTarget(voters []raft.Server, self, avoid raft.ServerID) (raft.Server, bool) {
	others := slices.DeleteFunc(slices.Clone(voters), func(s raft.Server) bool { return s.ID == self || s.ID == avoid })
	if n.cfg.HandoffTargets != nil {
		for _, id := range n.cfg.HandoffTargets() {
			if i := slices.IndexFunc(others, func(s raft.Server) bool { return s.ID == id }); i >= 0 {
				return others[i], true
			}
		}
		return raft.Server{}, false
	}
	switch {
	case len(others) == 0:
		return raft.Server{}, false
	case avoid == "":
		return raft.Server{}, true
	}
	return others[0], true
}

// handOff asks raft to transfer leadership to target (the zero Server:
// the follower raft has furthest along) because the log write running
// since since passed limit, holds the writes waiting here until raft is
// done, and logs the outcome in one line.
func (n *Node) handOff(target raft.Server, since time.Time, limit time.Duration) {
	n.handedOffAt.Store(time.Now().UnixNano())
	n.submitMu.Lock()
	n.batch.holding = true
	n.holding.Store(true)
	n.submitMu.Unlock()
	released := false // leadership moved: the held writes go on (release)
	defer func() { n.release(released) }()
	var fut raft.Future
	if target.ID == "" {
		fut = n.raft.LeadershipTransfer()
	} else {
		fut = n.raft.LeadershipTransferToServer(target.ID, target.Address)
	}
	// Raft takes the request once the stalled write returned: time it.
	stuck := n.waitWriteDone(since)
	err := n.awaitRaft(fut)
	moved, to := n.awaitOtherLeader()
	dir := n.cfg.Dir
	if !moved {
		n.log.Warn("SLOW DISK: this leader's raft log write took "+secs(stuck)+" to reach the disk (limit "+secs(limit)+
			"); handing leadership to another member failed, so it still leads and writes wait for its disk. Check the disk under dataDir (dmesg, iostat, SMART)",
			zap.String("dir", dir), zap.String("wanted", string(target.ID)), zap.Error(err))
		return
	}
	// The new leader may not have reached this member yet (its raft
	// first writes the new term to the slow disk): then it is the member
	// raft was asked to hand over to.
	who := "member " + string(cmp.Or(to, target.ID))
	if to == "" && target.ID == "" {
		who = "another member"
	}
	released = true
	if n.cfg.Observer.LeadershipHandedOff != nil {
		n.cfg.Observer.LeadershipHandedOff()
	}
	n.log.Warn("SLOW DISK: this leader's raft log write took "+secs(stuck)+" to reach the disk (limit "+secs(limit)+
		"), holding up every write of the ensemble; leadership moved to "+who+
		". Check this member's disk under dataDir (dmesg, iostat, SMART): it follows on, and writes no longer wait for it",
		zap.String("dir", dir), zap.String("newLeader", string(cmp.Or(to, target.ID))), zap.Duration("stalled", stuck))
}

// release ends the hold of handOff. If leadership moved, the writes of
// this member's own clients that waited go to Config.Reroute in order (and
// so does every later one until this member leads again), and those
// other members forwarded fail with ErrNotLeader (their members fail
// them to their clients); else the pacing proposes them.
func (n *Node) release(moved bool) {
	n.submitMu.Lock()
	// The batches proposed before the hold land first (commit, fail, or
	// are refused and requeued), so that none is requeued after the
	// writes held behind it went on.
	for len(n.batch.inflight) > 0 && !n.batch.closed {
		n.batch.flushed.Wait()
	}
	if moved && n.cfg.Reroute != nil && !n.IsLeader() {
		// Hand the queue over outside the lock (Reroute may wait for
		// room in the forwarder), still holding, so that writes arriving
		// meanwhile queue behind and go in the next round.
		for len(n.batch.queue) > 0 {
			q := n.batch.queue
			n.batch.queue, n.batch.bytes = nil, 0
			n.batch.proposedTotal += uint64(len(q)) // barriers wait for none of them
			n.batch.flushed.Broadcast()
			n.submitMu.Unlock()
			n.rerouteAll(q)
			n.submitMu.Lock()
		}
		n.batch.rerouting = true
	}
	n.batch.holding = false
	n.holding.Store(false)
	more := n.mayFlushLocked()
	n.submitMu.Unlock()
	if more {
		select {
		case n.proposeWake <- struct{}{}:
		default:
		}
	}
}

// rerouteAll hands this member's own requests of q to Config.Reroute, in
// order, and fails those other members forwarded with ErrNotLeader
// (every queued request is one or the other, see enqueueLocked).
func (n *Node) rerouteAll(q []queued) {
	for _, it := range q {
		if it.forwarded == nil && it.origin == n.bootID {
			n.cfg.Reroute(it.seq, n.pending.get(it.seq), &it.req)
		} else {
			n.failItem(it, ErrNotLeader)
		}
	}
}

// requeue puts the requests of batch p, which raft refused because a
// leadership transfer was under way, back at the front of the queue, if
// this member holds its writes for a hand-off: they never entered the
// log, so they go on with the held ones (proposed again if the hand-off
// fails, else to Config.Reroute or failed, see release) instead of
// failing. It reports whether it did. Only completeLoop calls it, in
// proposal order, so batches refused one after another keep their order;
// release waits until no batch is in flight, so none is requeued after it.
func (n *Node) requeue(p pendingApply) bool {
	e, err := decodeEntry(p.data)
	if err != nil || e.kind != kindBatch {
		return false
	}
	n.submitMu.Lock()
	defer n.submitMu.Unlock()
	if !n.batch.holding || n.batch.closed {
		return false
	}
	items := make([]queued, 0, len(e.packed)+len(n.batch.queue))
	own, fwd := p.own, p.forwarded
	bytes := 0
	for _, it := range e.packed {
		q := queued{origin: it.origin, seq: it.seq, req: it.req}
		if len(own) > 0 && it.origin == n.bootID && it.seq == own[0].seq {
			q.req.Origin = own[0].origin
			own = own[1:]
		} else if len(fwd) > 0 {
			q.forwarded = fwd[0]
			fwd = fwd[1:]
		}
		bytes += len(q.req.Body)
		items = append(items, q)
	}
	n.batch.queue = append(items, n.batch.queue...)
	n.batch.bytes += bytes
	n.batch.proposedTotal -= uint64(len(e.packed)) // barriers wait for them again
	n.log.Info("requests raft refused while leadership is handed over are held with the others", zap.Int("requests", len(e.packed)))
	return true
}

// waitWriteDone waits until the log write that began at since is over
// (polling, as it may be stuck in the kernel) and returns how long it ran.
func (n *Node) waitWriteDone(since time.Time) time.Duration {
	for n.wal.SyncingSince().Equal(since) {
		select {
		case <-n.stop:
			return time.Since(since)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return time.Since(since)
}

// awaitOtherLeader waits, after a leadership transfer ended, until this
// member no longer leads and knows who does, for up to two election
// timeouts (raft's transfer may time out while the target's election is
// still finishing). moved reports that this member no longer leads; to is
// the new leader's id, "" if not known yet.
func (n *Node) awaitOtherLeader() (moved bool, to raft.ServerID) {
	self := raft.ServerID(fmt.Sprint(n.cfg.MyID))
	deadline := time.Now().Add(2 * n.electionTimeout)
	for {
		moved = n.raft.State() != raft.Leader
		if _, id := n.raft.LeaderWithID(); moved && id != "" && id != self {
			return true, id
		}
		if time.Now().After(deadline) {
			return moved, ""
		}
		select {
		case <-n.stop:
			return moved, ""
		case <-time.After(5 * time.Millisecond):
		}
	}
}
