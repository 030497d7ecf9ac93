package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkd/zkd/jute"
)

// stateNames are the Java client's Watcher.Event.KeeperState names.
var stateNames = map[int32]string{
	jute.StateDisconnected:      "Disconnected",
	jute.StateSyncConnected:     "SyncConnected",
	jute.StateAuthFailed:        "AuthFailed",
	jute.StateConnectedReadOnly: "ConnectedReadOnly",
	6:                           "SaslAuthenticated",
	jute.StateClosed:            "Closed",
	jute.StateExpired:           "Expired",
}

// eventNames are the Java client's Watcher.Event.EventType names.
var eventNames = map[int32]string{
	jute.EventNone:                   "None",
	jute.EventNodeCreated:            "NodeCreated",
	jute.EventNodeDeleted:            "NodeDeleted",
	jute.EventNodeDataChanged:        "NodeDataChanged",
	jute.EventNodeChildrenChanged:    "NodeChildrenChanged",
	jute.EventDataWatchRemoved:       "DataWatchRemoved",
	jute.EventChildWatchRemoved:      "ChildWatchRemoved",
	jute.EventPersistentWatchRemoved: "PersistentWatchRemoved",
}

// formatEvent renders a watch event as zkCli's default watcher prints it:
// a blank line, "WATCHER::", a blank line and WatchedEvent.toString().
func formatEvent(ev jute.WatcherEvent) string {
	state, ok := stateNames[ev.State]
	if !ok {
		state = fmt.Sprintf("Unknown(%d)", ev.State)
	}
	typ, ok := eventNames[ev.Type]
	if !ok {
		typ = fmt.Sprintf("Unknown(%d)", ev.Type)
	}
	path := ev.Path
	if ev.Type == jute.EventNone && path == "" {
		path = "null"
	}
	return fmt.Sprintf("\nWATCHER::\n\nWatchedEvent state:%s type:%s path:%s\n", state, typ, path)
}

// javaDate formats ms since the epoch as Java's Date.toString does, in the
// local time zone.
func javaDate(ms int64) string {
	return time.UnixMilli(ms).Format("Mon Jan 02 15:04:05 MST 2006")
}

// printStat writes a Stat as zkCli's StatPrinter does.
func printStat(w io.Writer, s *jute.Stat) {
	fmt.Fprintf(w, "cZxid = 0x%x\n", uint64(s.Czxid))
	fmt.Fprintf(w, "ctime = %s\n", javaDate(s.Ctime))
	fmt.Fprintf(w, "mZxid = 0x%x\n", uint64(s.Mzxid))
	fmt.Fprintf(w, "mtime = %s\n", javaDate(s.Mtime))
	fmt.Fprintf(w, "pZxid = 0x%x\n", uint64(s.Pzxid))
	fmt.Fprintf(w, "cversion = %d\n", s.Cversion)
	fmt.Fprintf(w, "dataVersion = %d\n", s.Version)
	fmt.Fprintf(w, "aclVersion = %d\n", s.Aversion)
	fmt.Fprintf(w, "ephemeralOwner = 0x%x\n", uint64(s.EphemeralOwner))
	fmt.Fprintf(w, "dataLength = %d\n", s.DataLength)
	fmt.Fprintf(w, "numChildren = %d\n", s.NumChildren)
}

// printACLs writes ACLs as zkCli's getAcl does: "'scheme,'id" then
// ": perms" for each entry.
func printACLs(w io.Writer, acls []jute.ACL) {
	for _, a := range acls {
		fmt.Fprintf(w, "'%s,'%s\n: %s\n", a.Id.Scheme, a.Id.Id, permString(a.Perms))
	}
}

// javaString decodes data as Java's new String(data, UTF_8) does, each
// byte that is not part of valid UTF-8 becoming U+FFFD.
func javaString(data []byte) string {
	if utf8.Valid(data) {
		return string(data)
	}
	var b strings.Builder
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.Write(data[:n])
		}
		data = data[n:]
	}
	return b.String()
}

// javaList renders strings as Java's List.toString: "[a, b]".
func javaList(items []string) string {
	return "[" + strings.Join(items, ", ") + "]"
}

// codeMessages are the texts of ZooKeeper's KeeperException.getCodeMessage,
// used in "KeeperErrorCode = <text> for <path>".
var codeMessages = map[jute.Code]string{
	jute.CodeOK:                       "ok",
	jute.CodeSystemError:              "SystemError",
	jute.CodeRuntimeInconsistency:     "RuntimeInconsistency",
	jute.CodeDataInconsistency:        "DataInconsistency",
	jute.CodeConnectionLoss:           "ConnectionLoss",
	jute.CodeMarshallingError:         "MarshallingError",
	jute.CodeUnimplemented:            "Unimplemented",
	jute.CodeOperationTimeout:         "OperationTimeout",
	jute.CodeBadArguments:             "BadArguments",
	jute.CodeUnknownSession:           "Unknown session",
	jute.CodeNewConfigNoQuorum:        "NewConfigNoQuorum",
	jute.CodeReconfigInProgress:       "ReconfigInProgress",
	jute.CodeAPIError:                 "APIError",
	jute.CodeNoNode:                   "NoNode",
	jute.CodeNoAuth:                   "NoAuth",
	jute.CodeBadVersion:               "BadVersion",
	jute.CodeNoChildrenForEphemerals:  "NoChildrenForEphemerals",
	jute.CodeNodeExists:               "NodeExists",
	jute.CodeNotEmpty:                 "Directory not empty",
	jute.CodeSessionExpired:           "Session expired",
	jute.CodeInvalidCallback:          "Invalid callback",
	jute.CodeInvalidACL:               "InvalidACL",
	jute.CodeAuthFailed:               "AuthFailed",
	jute.CodeSessionMoved:             "Session moved",
	jute.CodeNotReadOnly:              "Not a read-only call",
	jute.CodeEphemeralOnLocalSession:  "Ephemeral node on local session",
	jute.CodeNoWatcher:                "No such watcher",
	jute.CodeRequestTimeout:           "Request timeout",
	jute.CodeReconfigDisabled:         "Reconfig is disabled",
	jute.CodeSessionClosedRequireSASL: "Session closed because client failed to authenticate",
	jute.CodeQuotaExceeded:            "Quota has exceeded",
	jute.CodeThrottledOp:              "Op throttled due to high load",
}

// keeperExceptionText is KeeperException.getMessage: "KeeperErrorCode =
// <text>", plus " for <path>" when the exception carries a path.
func keeperExceptionText(code jute.Code, path string) string {
	msg, ok := codeMessages[code]
	if !ok {
		msg = fmt.Sprintf("Unknown code %d", int32(code))
	}
	s := "KeeperErrorCode = " + msg
	if path != "" {
		s += " for " + path
	}
	return s
}

// keeperMessage is the line zkCli prints for a failed ZooKeeper call on
// path (its CliWrapperException): friendly texts for the common codes,
// KeeperException's own message for the rest. path is "" for calls whose
// exception has none (reconfig).
func keeperMessage(code jute.Code, path string) string {
	p := path
	if p == "" {
		p = "null"
	}
	switch code {
	case jute.CodeNoNode:
		return "Node does not exist: " + p
	case jute.CodeNoChildrenForEphemerals:
		return "Ephemerals cannot have children: " + p
	case jute.CodeNodeExists:
		return "Node already exists: " + p
	case jute.CodeNotEmpty:
		return "Node not empty: " + p
	case jute.CodeNotReadOnly:
		return "Not a read-only call: " + p
	case jute.CodeInvalidACL:
		return "Acl is not valid : " + p
	case jute.CodeNoAuth:
		return "Insufficient permission : " + p
	case jute.CodeBadArguments:
		return "Arguments are not valid : " + p
	case jute.CodeBadVersion:
		return "version No is not valid : " + p
	case jute.CodeReconfigInProgress:
		return "Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)"
	case jute.CodeNewConfigNoQuorum:
		return "No quorum of new config is connected and up-to-date with the leader of last committed config - try invoking reconfiguration after new servers are connected and synced"
	case jute.CodeQuotaExceeded:
		return "Quota has exceeded : " + p
	}
	return keeperExceptionText(code, path)
}
