package server

import (
	"context"
	"errors"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
)

// coder is implemented by errors that carry their ZooKeeper code, such as
// the datatree sentinels.
type coder interface {
	Code() jute.Code
}

// errorCode maps a Go error to the KeeperException.Code sent to clients.
// It is the one place such a mapping happens. fatal reports that the
// connection must be closed afterwards so that the client retries on
// another member; known is false for errors that have no mapping (sent as
// SystemError, which the caller logs).
func errorCode(err error) (code jute.Code, fatal, known bool) {
	if err == nil {
		return jute.CodeOK, false, true
	}
	var c jute.Code
	if errors.As(err, &c) {
		return c, false, true
	}
	var cd coder
	if errors.As(err, &cd) {
		return cd.Code(), false, true
	}
	switch {
	case errors.Is(err, zab.ErrUnknownSession):
		return jute.CodeSessionExpired, false, true
	case errors.Is(err, zab.ErrNotLeader), errors.Is(err, zab.ErrStopped),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return jute.CodeConnectionLoss, true, true
	}
	return jute.CodeSystemError, false, false
}
