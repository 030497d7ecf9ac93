package quorum

import "github.com/hashicorp/raft"

// HandoffTargets exposes handoffTargets to the external tests.
func HandoffTargets(m *Member) []raft.ServerID { return m.handoffTargets() }

// HoldSyncAtJoin makes the syncAtJoin of member myID wait until release
// is closed (or the member closes); nil hooks nothing.
func HoldSyncAtJoin(myID int64, release <-chan struct{}) {
	if release == nil {
		holdSyncAtJoin = nil
		return
	}
	holdSyncAtJoin = func(id int64, stop <-chan struct{}) {
		if id != myID {
			return
		}
		select {
		case <-release:
		case <-stop:
		}
	}
}

// InTouch exposes inEnsembleTouch: the member heard from a leader lately.
func InTouch(m *Member) bool { return m.inEnsembleTouch() }
