package zab

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// Observer receives a node's events for monitoring: the figures behind
// ZooKeeper's fsynctime, snapshottime, commit_count, proposal_count,
// learner_*_received_count, quorum_ack_latency, election_time and
// looking_count. Every field may be nil. The callbacks run on Pebble's,
// raft's or the node's goroutines, must return quickly and must not
// block; they never influence what is applied. As standalone ZooKeeper
// has no proposals, a standalone node reports no Committed, Proposed or
// QuorumAcked.
type Observer struct {
	// WALSync gets the duration of each fdatasync of the raft log's
	// segment files (zab/wal), which every proposal is made durable in.
	WALSync func(time.Duration)
	// Snapshot gets the time each snapshot took, from encoding the tree
	// to the snapshot being stored.
	Snapshot func(time.Duration)
	// Committed is called for each log entry applied on this member (an
	// entry is applied only once a quorum has it); leader tells whether
	// this member led when it applied it.
	Committed func(leader bool)
	// Proposed is called for each entry this member hands to raft, which
	// only a leader accepts, with the entry's encoded size and the client
	// requests it carries (several when packed, 0 for the leader's own
	// housekeeping entries). Not on a standalone node.
	Proposed func(size, requests int)
	// Packed gets the number of client requests in each entry of packed
	// requests this member proposes (batch.go), standalone too.
	Packed func(requests int)
	// ProposalReceived is called when this member, not leading, stored n
	// command entries sent by the leader.
	ProposalReceived func(n int)
	// QuorumAcked gets, for each request this member proposed as leader,
	// the time from proposing it until raft committed and applied it.
	QuorumAcked func(time.Duration)
	// Appended gets each batch of entries stored in the log: how many,
	// and how long the batch took to commit, fsync included (group
	// commit: concurrent proposals share one batch).
	Appended func(entries int, took time.Duration)
	// Propagated gets, for each request entry applied, the time since the
	// leader stamped it when proposing (members' clocks are compared, as
	// ZooKeeper compares them for propagation_latency).
	Propagated func(time.Duration)
	// Restored gets the time to load a snapshot into the tree; atStart
	// tells the one loaded when the node opened from one written later
	// by the leader (InstallSnapshot).
	Restored func(d time.Duration, atStart bool)
	// SessionsExpired gets the number of sessions the leader (or a
	// standalone node) found past their timeout at a tick.
	SessionsExpired func(n int)
	// Loaded is called once after start, when every entry the log held
	// at start has been applied (in an ensemble that waits for a leader's
	// commit index): the time since the node opened, the time since the
	// snapshot was loaded, and how many entries were replayed on top of it.
	Loaded func(total, replay time.Duration, entries uint64)
	// Leading is called when this member starts (true) or stops (false)
	// leading.
	Leading func(bool)
	// ElectionStarted is called when an ensemble member loses sight of a
	// leader (not on a standalone node, which never elects).
	ElectionStarted func()
	// ElectionDone gets, when a leader is known again, how long this
	// member went without one.
	ElectionDone func(time.Duration)
	// Unavailable gets the same period as ElectionDone, with whether this
	// member is the leader that ended it (ZooKeeper's unavailable_time and
	// leader_unavailable_time).
	Unavailable func(d time.Duration, leading bool)
	// CommandsStored gets, after each append to this member's log, how
	// many of the stored entries are the node's own commands (requests,
	// session expiries, configuration and housekeeping entries: what
	// ZooKeeper's SyncRequestProcessor logs as txns), on every member.
	CommandsStored func(n int)
	// RequestApplied gets, for each request entry applied here, the time
	// applying it to the tree took, waking its waiter included.
	RequestApplied func(time.Duration)
	// DigestMismatch is called when this member's tree digest differs
	// from the leader's at the same zxid (ZooKeeper's
	// digest_mismatches_count), just before Config.OnDivergence.
	DigestMismatch func()
	// LeadershipHandedOff is called when this member, leading, handed
	// leadership to another member because its raft log write stalled
	// past the limit (handoff.go).
	LeadershipHandedOff func()
}

// noteProposed tells the observer about a proposal of size bytes
// carrying requests client requests.
func (n *Node) noteProposed(size, requests int) {
	if requests > 0 && n.cfg.Observer.Packed != nil {
		n.cfg.Observer.Packed(requests)
	}
	if !n.standalone && n.cfg.Observer.Proposed != nil {
		n.cfg.Observer.Proposed(size, requests)
	}
}

// noteAcked tells the observer that a proposal made at start committed.
func (n *Node) noteAcked(start time.Time) {
	if !n.standalone && n.cfg.Observer.QuorumAcked != nil {
		n.cfg.Observer.QuorumAcked(time.Since(start))
	}
}

// noteAppended tells the observer about a batch of entries stored.
func (n *Node) noteAppended(entries, commands int, took time.Duration) {
	if n.cfg.Observer.Appended != nil {
		n.cfg.Observer.Appended(entries, took)
	}
	if commands > 0 && n.cfg.Observer.CommandsStored != nil {
		n.cfg.Observer.CommandsStored(commands)
	}
	if commands > 0 && !n.leading.Load() && n.cfg.Observer.ProposalReceived != nil {
		n.cfg.Observer.ProposalReceived(commands)
	}
}

// observeElections follows raft's leader changes to time elections: the
// time from losing a leader (or from start) to knowing one again.
func (n *Node) observeElections() {
	o := n.cfg.Observer
	if o.ElectionStarted == nil && o.ElectionDone == nil && o.Unavailable == nil {
		return
	}
	self := raft.ServerID(strconv.FormatInt(n.cfg.MyID, 10))
	done := func(d time.Duration, leader raft.ServerID) {
		if o.ElectionDone != nil {
			o.ElectionDone(d)
		}
		if o.Unavailable != nil {
			o.Unavailable(d, leader == self)
		}
	}
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(ob *raft.Observation) bool {
		_, ok := ob.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(obs)
	if o.ElectionStarted != nil {
		o.ElectionStarted()
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.raft.DeregisterObserver(obs)
		since, looking := time.Now(), true
		if _, id := n.raft.LeaderWithID(); id != "" {
			// Elected before the observer was registered.
			looking = false
			done(time.Since(n.opened), id)
		}
		for {
			select {
			case <-n.stop:
				return
			case ob := <-ch:
				lo := ob.Data.(raft.LeaderObservation)
				switch {
				case lo.LeaderID == "" && !looking:
					since, looking = time.Now(), true
					if o.ElectionStarted != nil {
						o.ElectionStarted()
					}
				case lo.LeaderID != "" && looking:
					looking = false
					done(time.Since(since), lo.LeaderID)
				}
			}
		}
	}()
}

// observeLoad waits in the background until raft has applied the log up
// to last, its last index at start (raft applies asynchronously and offers
// no notification for it, so this polls the applied index), and reports
// Observer.Loaded. When it loaded a snapshot or the log held commands
// after it, it then waits until the FSM has applied the last of them
// (raft counts an entry applied once it is handed to the FSM) and hands
// the heap the load freed back to the system (releaseAfterLoad).
func (n *Node) observeLoad(logs raft.LogStore, last uint64) {
	restored := time.Now()
	var snapIndex uint64
	if s, err := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64); err == nil {
		snapIndex = s
	}
	replayed := last - min(snapIndex, last)
	lastCmd := lastCommand(logs, snapIndex, last)
	release := lastCmd > 0 || snapIndex > 0
	if n.cfg.Observer.Loaded == nil && !release {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n.raft.AppliedIndex() < last {
			select {
			case <-n.stop:
				return
			case <-tick.C:
			}
		}
		if n.cfg.Observer.Loaded != nil {
			n.cfg.Observer.Loaded(time.Since(n.opened), time.Since(restored), replayed)
		}
		if !release {
			return
		}
		for lastCmd > 0 {
			applied, more := n.fsm.appliedWait()
			if applied >= lastCmd {
				break
			}
			select {
			case <-n.stop:
				return
			case <-more:
			}
		}
		releaseAfterLoad(n.log, snapIndex > 0, replayed)
	}()
}

// lastCommand is the index of the last command entry (what the FSM
// applies) in the log after index after and up to last, or 0 if there is
// none.
func lastCommand(logs raft.LogStore, after, last uint64) uint64 {
	var l raft.Log
	for i := last; i > after; i-- {
		if err := logs.GetLog(i, &l); err != nil {
			return 0
		}
		if l.Type == raft.LogCommand {
			return i
		}
	}
	return 0
}

// releaseAfterLoad collects the garbage that loading the state at start
// (a snapshot, and entries log entries replayed after it) left and
// returns the freed heap to the system. The log tail applies with the
// collector on, as any write does: its requests, replies and undo logs
// are garbage, so the heap grows to the collector's goal, about twice
// what stays live (GOGC=100). A snapshot loads with the collector off,
// and the buffers it was read through stay until the first collection
// after it. Either way the runtime keeps the freed heap: its scavenger
// returns only what lies above the goal, which stays at twice the tree
// until the heap grows again. After a kill -9 with 1M fleet lock paths in
// the log (issue 19), the live heap was the same as after a clean restart
// (120 MB against 126 MB, the tree) but 124 MB of freed heap stayed
// resident: 285 B of RSS per znode against 158 B. One forced collection
// of the tree, once per start, gives it back.
func releaseAfterLoad(log *zap.Logger, snapshot bool, entries uint64) {
	start := time.Now()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	log.Info("state loaded: freed heap returned to the system",
		zap.Bool("snapshot", snapshot), zap.Uint64("log_entries", entries),
		zap.Uint64("heap_live_mb", after.HeapAlloc>>20),
		zap.Uint64("returned_mb", (after.HeapReleased-min(before.HeapReleased, after.HeapReleased))>>20),
		zap.Duration("took", time.Since(start)))
}
