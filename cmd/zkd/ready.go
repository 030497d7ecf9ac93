package main

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/zkd/zkd/zab"
)

// readyMessage is the log line that says a member serves clients, logged
// once per start: operators and scripts (zkServer.sh start waits for it)
// read it as "ready".
const readyMessage = "zkd serving"

// recoveredFrom says how a member rebuilt its state at start: from a
// snapshot, by replaying the log, both, or anew from an empty data
// directory.
func recoveredFrom(r zab.Recovery) string {
	switch {
	case r.Fresh:
		return "empty data directory"
	case r.SnapshotIndex > 0 && r.LogEntries > 0:
		return fmt.Sprintf("snapshot at zxid 0x%x, then log replay of %d entries", r.SnapshotZxid, r.LogEntries)
	case r.SnapshotIndex > 0:
		return fmt.Sprintf("snapshot at zxid 0x%x", r.SnapshotZxid)
	case r.LogEntries > 0:
		return fmt.Sprintf("log replay of %d entries", r.LogEntries)
	}
	return "nothing to replay"
}

// howServing says how a member came to serve: standalone, elected leader,
// or joined a leader as follower or observer.
func howServing(mode string) string {
	switch mode {
	case "standalone":
		return "standalone"
	case "leader":
		return "elected leader"
	case "read-only":
		return "read-only, no quorum"
	}
	return "joined the leader as " + mode
}

// readyFields are the fields of the readiness line.
func readyFields(mode string, r zab.Recovery) []zap.Field {
	return []zap.Field{zap.String("mode", mode), zap.String("how", howServing(mode)),
		zap.String("recovered", recoveredFrom(r))}
}
