package quorum

import "github.com/hashicorp/raft"

// HandoffTargets exposes handoffTargets to the external tests.
func HandoffTargets(m *Member) []raft.ServerID { return m.handoffTargets() }
