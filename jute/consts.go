package jute

import "strconv"

// Opcodes of ZooKeeper 3.8's client protocol (ZooDefs.OpCode).
const (
	OpNotification         int32 = 0
	OpCreate               int32 = 1
	OpDelete               int32 = 2
	OpExists               int32 = 3
	OpGetData              int32 = 4
	OpSetData              int32 = 5
	OpGetACL               int32 = 6
	OpSetACL               int32 = 7
	OpGetChildren          int32 = 8
	OpSync                 int32 = 9
	OpPing                 int32 = 11
	OpGetChildren2         int32 = 12
	OpCheck                int32 = 13
	OpMulti                int32 = 14
	OpCreate2              int32 = 15
	OpReconfig             int32 = 16
	OpCheckWatches         int32 = 17
	OpRemoveWatches        int32 = 18
	OpCreateContainer      int32 = 19
	OpDeleteContainer      int32 = 20
	OpCreateTTL            int32 = 21
	OpMultiRead            int32 = 22
	OpAuth                 int32 = 100
	OpSetWatches           int32 = 101
	OpSASL                 int32 = 102
	OpGetEphemerals        int32 = 103
	OpGetAllChildrenNumber int32 = 104
	OpSetWatches2          int32 = 105
	OpAddWatch             int32 = 106
	OpWhoAmI               int32 = 107
	OpCreateSession        int32 = -10
	OpCloseSession         int32 = -11
	OpError                int32 = -1
)

// Special reply and request xids.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

// Watch event types (Watcher.Event.EventType).
const (
	EventNone                   int32 = -1
	EventNodeCreated            int32 = 1
	EventNodeDeleted            int32 = 2
	EventNodeDataChanged        int32 = 3
	EventNodeChildrenChanged    int32 = 4
	EventDataWatchRemoved       int32 = 5
	EventChildWatchRemoved      int32 = 6
	EventPersistentWatchRemoved int32 = 7
)

// Keeper states carried in watch events (Watcher.Event.KeeperState).
const (
	StateDisconnected      int32 = 0
	StateSyncConnected     int32 = 3
	StateAuthFailed        int32 = 4
	StateConnectedReadOnly int32 = 5
	StateClosed            int32 = 7
	StateExpired           int32 = -112
)

// Create modes (CreateMode flags).
const (
	ModePersistent                  int32 = 0
	ModeEphemeral                   int32 = 1
	ModePersistentSequential        int32 = 2
	ModeEphemeralSequential         int32 = 3
	ModeContainer                   int32 = 4
	ModePersistentWithTTL           int32 = 5
	ModePersistentSequentialWithTTL int32 = 6
)

// ACL permission bits (ZooDefs.Perms).
const (
	PermRead   int32 = 1
	PermWrite  int32 = 2
	PermCreate int32 = 4
	PermDelete int32 = 8
	PermAdmin  int32 = 16
	PermAll    int32 = 31
)

// WatcherType values for checkWatches and removeWatches.
const (
	WatcherTypeChildren int32 = 1
	WatcherTypeData     int32 = 2
	WatcherTypeAny      int32 = 3
)

// AddWatch modes.
const (
	AddWatchModePersistent          int32 = 0
	AddWatchModePersistentRecursive int32 = 1
)

// Code is an error number of ZooKeeper's KeeperException.Code, the only
// error values clients can decode.
type Code int32

// Error codes of KeeperException.Code.
const (
	CodeOK                       Code = 0
	CodeSystemError              Code = -1
	CodeRuntimeInconsistency     Code = -2
	CodeDataInconsistency        Code = -3
	CodeConnectionLoss           Code = -4
	CodeMarshallingError         Code = -5
	CodeUnimplemented            Code = -6
	CodeOperationTimeout         Code = -7
	CodeBadArguments             Code = -8
	CodeUnknownSession           Code = -12
	CodeNewConfigNoQuorum        Code = -13
	CodeReconfigInProgress       Code = -14
	CodeAPIError                 Code = -100
	CodeNoNode                   Code = -101
	CodeNoAuth                   Code = -102
	CodeBadVersion               Code = -103
	CodeNoChildrenForEphemerals  Code = -108
	CodeNodeExists               Code = -110
	CodeNotEmpty                 Code = -111
	CodeSessionExpired           Code = -112
	CodeInvalidCallback          Code = -113
	CodeInvalidACL               Code = -114
	CodeAuthFailed               Code = -115
	CodeSessionMoved             Code = -118
	CodeNotReadOnly              Code = -119
	CodeEphemeralOnLocalSession  Code = -120
	CodeNoWatcher                Code = -121
	CodeRequestTimeout           Code = -122
	CodeReconfigDisabled         Code = -123
	CodeSessionClosedRequireSASL Code = -124
	CodeQuotaExceeded            Code = -125
	CodeThrottledOp              Code = -127
)

var codeNames = map[Code]string{
	CodeOK:                       "ok",
	CodeSystemError:              "system error",
	CodeRuntimeInconsistency:     "runtime inconsistency",
	CodeDataInconsistency:        "data inconsistency",
	CodeConnectionLoss:           "connection loss",
	CodeMarshallingError:         "marshalling error",
	CodeUnimplemented:            "unimplemented",
	CodeOperationTimeout:         "operation timeout",
	CodeBadArguments:             "bad arguments",
	CodeUnknownSession:           "unknown session",
	CodeNewConfigNoQuorum:        "new config no quorum",
	CodeReconfigInProgress:       "reconfig in progress",
	CodeAPIError:                 "api error",
	CodeNoNode:                   "no node",
	CodeNoAuth:                   "not authenticated",
	CodeBadVersion:               "bad version",
	CodeNoChildrenForEphemerals:  "no children for ephemerals",
	CodeNodeExists:               "node exists",
	CodeNotEmpty:                 "directory not empty",
	CodeSessionExpired:           "session expired",
	CodeInvalidCallback:          "invalid callback",
	CodeInvalidACL:               "invalid acl",
	CodeAuthFailed:               "auth failed",
	CodeSessionMoved:             "session moved",
	CodeNotReadOnly:              "not a read-only call",
	CodeEphemeralOnLocalSession:  "ephemeral on local session",
	CodeNoWatcher:                "no watcher",
	CodeRequestTimeout:           "request timeout",
	CodeReconfigDisabled:         "reconfig disabled",
	CodeSessionClosedRequireSASL: "session closed require sasl",
	CodeQuotaExceeded:            "quota exceeded",
	CodeThrottledOp:              "throttled op",
}

// Error makes a Code usable as an error; the text is ZooKeeper's
// description of the code.
func (c Code) Error() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return "unknown error " + strconv.Itoa(int(c))
}

var opNames = map[int32]string{
	OpNotification:         "notification",
	OpCreate:               "create",
	OpDelete:               "delete",
	OpExists:               "exists",
	OpGetData:              "getData",
	OpSetData:              "setData",
	OpGetACL:               "getACL",
	OpSetACL:               "setACL",
	OpGetChildren:          "getChildren",
	OpSync:                 "sync",
	OpPing:                 "ping",
	OpGetChildren2:         "getChildren2",
	OpCheck:                "check",
	OpMulti:                "multi",
	OpCreate2:              "create2",
	OpReconfig:             "reconfig",
	OpCheckWatches:         "checkWatches",
	OpRemoveWatches:        "removeWatches",
	OpCreateContainer:      "createContainer",
	OpDeleteContainer:      "deleteContainer",
	OpCreateTTL:            "createTTL",
	OpMultiRead:            "multiRead",
	OpAuth:                 "auth",
	OpSetWatches:           "setWatches",
	OpSASL:                 "sasl",
	OpGetEphemerals:        "getEphemerals",
	OpGetAllChildrenNumber: "getAllChildrenNumber",
	OpSetWatches2:          "setWatches2",
	OpAddWatch:             "addWatch",
	OpWhoAmI:               "whoAmI",
	OpCreateSession:        "createSession",
	OpCloseSession:         "closeSession",
	OpError:                "error",
}

// OpName returns ZooKeeper's name of an opcode (ZooDefs.OpCode's field name,
// e.g. "getChildren2"), or "op<n>" for a number ZooKeeper 3.8 does not
// define. Logs, metrics and 4-letter words use it.
func OpName(op int32) string {
	if s, ok := opNames[op]; ok {
		return s
	}
	return "op" + strconv.Itoa(int(op))
}

// OpByName returns the opcode whose OpName is name.
func OpByName(name string) (int32, bool) {
	for op, s := range opNames {
		if s == name {
			return op, true
		}
	}
	return 0, false
}
