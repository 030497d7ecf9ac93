package server

import (
	"context"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/zab"
)

// Backend is what the server needs from the replicated log; zab.Node
// implements it. All methods are safe for concurrent use.
type Backend interface {
	// Submit hands a write to the log and returns at once; the Future
	// completes when the write applied on this member or failed to enter
	// the log. Requests submitted from one goroutine enter the log in that
	// order. The server never modifies r after the call.
	Submit(r *zab.Request) *zab.Future
	// Tree returns the applied tree that reads are served from.
	Tree() *datatree.Tree
	// LastZxid returns the zxid of the last applied entry.
	LastZxid() int64
	// SessionTimeout reports whether session id is live, and its timeout
	// in ms.
	SessionTimeout(id int64) (int32, bool)
	// Touch records that a packet arrived for session id; it returns false
	// if the session is gone.
	Touch(id int64) bool
	// Sync returns once this member applied every entry committed before
	// the call, or ctx is done.
	Sync(ctx context.Context) error
	// Mode names the member's role: "standalone", "leader", "follower" or
	// "observer".
	Mode() string
}

// SessionCounter is an optional Backend extension: the number of live
// sessions, reported by mntr as zk_global_sessions.
type SessionCounter interface {
	SessionCount() int
}

// QuorumConfReporter is an optional Backend extension for conf on an
// ensemble member: the lines ZooKeeper 3.8's QuorumZooKeeperServer prints
// after serverId (initLimit, syncLimit, electionAlg, electionPort,
// quorumPort, peerType, then "membership: " and the membership as
// /zookeeper/config holds it now). ok is false on a standalone server,
// whose conf ends at serverId as ZooKeeper's does.
type QuorumConfReporter interface {
	QuorumConf() (lines []string, ok bool)
}

// Availability is an optional Backend extension for ensemble members.
// Serving reports whether the member may serve clients now (it is in touch
// with a leader and a quorum). While it is false the server refuses new
// connections and closes the open ones, so clients move to members that
// serve; ZooKeeper does the same when a member loses its quorum.
type Availability interface {
	Serving() bool
	// ReadOnlyAllowed reports whether, while not serving, the member
	// still serves clients that asked for a read-only session
	// (readonlymode.enabled): reads answered, writes refused with
	// NotReadOnly.
	ReadOnlyAllowed() bool
}

// ZxidWaiter is an optional Backend extension for ensemble members: a
// client reconnecting from a member that was a few entries ahead is not
// refused at once; WaitZxid blocks until this member applied zxid (true)
// or ctx is done (false).
type ZxidWaiter interface {
	WaitZxid(ctx context.Context, zxid int64) bool
}

// OriginCloser is an optional Backend extension for ensemble members: the
// server calls ConnectionClosed when a client connection with writes still
// outstanding ends, with the connection's Request.Origin. Writes of it the
// member holds but has not yet sent to a leader (one is being elected)
// must then not be sent: the client resumes its session elsewhere, syncs,
// and asks whether they happened; one that arrived at the leader after
// that sync would happen behind its back (a second lock node of a
// protected create).
type OriginCloser interface {
	ConnectionClosed(origin uint64)
}

// ReattachSyncer is an optional Backend extension for ensemble members.
// Before a client resumes its session, SyncReattach brings this member up
// to date with the leader (as a sync does): a client whose write was lost
// with a leader (it saw ConnectionLoss) then reads that write's final
// outcome, never a state in which it is still pending. Curator's protected
// creates depend on this. It returns an error when no leader answered.
type ReattachSyncer interface {
	SyncReattach(ctx context.Context) error
}
