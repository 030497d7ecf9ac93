package datatree

import "github.com/zkd/zkd/jute"

// Error is a datatree failure that maps to one of ZooKeeper's error codes.
// The package's sentinels are *Error values; errors returned by the tree wrap
// them with the path concerned, so use errors.Is (or errors.As to reach
// Code). errors.Is(err, jute.CodeNoNode) also works.
type Error struct {
	code jute.Code
	msg  string
}

// Error returns the message, e.g. "datatree: no node".
func (e *Error) Error() string { return e.msg }

// Code returns the KeeperException code a client must receive.
func (e *Error) Code() jute.Code { return e.code }

// Is reports whether target is this error's jute.Code.
func (e *Error) Is(target error) bool {
	c, ok := target.(jute.Code)
	return ok && c == e.code
}

// Sentinel errors. Each answers Code() with the matching jute.Code.
var (
	ErrNoNode                  = &Error{jute.CodeNoNode, "datatree: no node"}
	ErrNodeExists              = &Error{jute.CodeNodeExists, "datatree: node exists"}
	ErrNotEmpty                = &Error{jute.CodeNotEmpty, "datatree: node not empty"}
	ErrBadVersion              = &Error{jute.CodeBadVersion, "datatree: bad version"}
	ErrNoChildrenForEphemerals = &Error{jute.CodeNoChildrenForEphemerals, "datatree: no children for ephemerals"}
	ErrBadArguments            = &Error{jute.CodeBadArguments, "datatree: bad arguments"}
	ErrInvalidACL              = &Error{jute.CodeInvalidACL, "datatree: invalid acl"}
	ErrNoAuth                  = &Error{jute.CodeNoAuth, "datatree: not authorized"}
	ErrUnimplemented           = &Error{jute.CodeUnimplemented, "datatree: unimplemented"}
	ErrNoWatcher               = &Error{jute.CodeNoWatcher, "datatree: no watcher"}
	ErrQuotaExceeded           = &Error{jute.CodeQuotaExceeded, "datatree: quota exceeded"}
	// ErrRuntimeInconsistency is reported for the ops of a failed multi that
	// come after the failing one.
	ErrRuntimeInconsistency = &Error{jute.CodeRuntimeInconsistency, "datatree: runtime inconsistency"}
)

// PathError is a sentinel Error with the path it concerns.
type PathError struct {
	Err  *Error
	Path string
}

// Error returns the sentinel's message followed by the path.
func (e *PathError) Error() string { return e.Err.msg + ": " + e.Path }

// Unwrap returns the sentinel.
func (e *PathError) Unwrap() error { return e.Err }

// Code returns the sentinel's code.
func (e *PathError) Code() jute.Code { return e.Err.code }

func pathErr(e *Error, path string) error { return &PathError{Err: e, Path: path} }
