package zab

import (
	"time"

	"github.com/hashicorp/raft"
)

// Observer receives a node's events for monitoring: the figures behind
// ZooKeeper's fsynctime, snapshottime, commit_count, proposal_count,
// election_time and looking_count. Every field may be nil. The callbacks
// run on Pebble's, raft's or the node's goroutines, must return quickly
// and must not block; they never influence what is applied.
type Observer struct {
	// WALSync gets the duration of each fsync of Pebble's write-ahead
	// log, the log every proposal is made durable in.
	WALSync func(time.Duration)
	// Snapshot gets the time each snapshot took, from encoding the tree
	// to the snapshot being stored.
	Snapshot func(time.Duration)
	// Committed is called for each log entry applied on this member: an
	// entry is applied only once a quorum has it.
	Committed func()
	// Proposed is called for each entry this member hands to raft, which
	// only a leader accepts.
	Proposed func()
	// ElectionStarted is called when an ensemble member loses sight of a
	// leader (not on a standalone node, which never elects).
	ElectionStarted func()
	// ElectionDone gets, when a leader is known again, how long this
	// member went without one.
	ElectionDone func(time.Duration)
}

// noteProposed tells the observer about a proposal.
func (n *Node) noteProposed() {
	if n.cfg.Observer.Proposed != nil {
		n.cfg.Observer.Proposed()
	}
}

// observeElections follows raft's leader changes to time elections: the
// time from losing a leader (or from start) to knowing one again.
func (n *Node) observeElections() {
	o := n.cfg.Observer
	if o.ElectionStarted == nil && o.ElectionDone == nil {
		return
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
			if o.ElectionDone != nil {
				o.ElectionDone(time.Since(n.opened))
			}
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
					if o.ElectionDone != nil {
						o.ElectionDone(time.Since(since))
					}
				}
			}
		}
	}()
}
