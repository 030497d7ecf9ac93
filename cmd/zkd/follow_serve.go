package main

import (
	"context"
	"net"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server"
	"github.com/zkd/zkd/zab"
	"github.com/zkd/zkd/zab/zkformat"
)

// followReplica is the zkd tree read-only clients read while `zkd
// follow` runs: rebuilt from the followed tree at each sync, then kept
// current by applying every transaction through the tree's write API, so
// that watches fire.
type followReplica struct {
	cfg  datatree.Config
	log  *zap.Logger
	tree atomic.Pointer[datatree.Tree]
	// empty is served before the first sync, when no client is let in.
	empty *datatree.Tree
}

func newFollowReplica(cfg datatree.Config, log *zap.Logger) *followReplica {
	return &followReplica{cfg: cfg, log: log, empty: datatree.New(cfg)}
}

// rebuild replaces the served tree with t's nodes. The server closes the
// read-only connections of the old tree; their clients reconnect and
// re-register their watches.
func (r *followReplica) rebuild(t *zkformat.Tree) {
	dt, err := datatree.FromImages(r.cfg, t.LastZxid, t.Images())
	if err != nil {
		r.log.Error("cannot serve the followed tree; read-only clients are refused", zap.Error(err))
		r.tree.Store(nil)
		return
	}
	r.tree.Store(dt)
}

// applied applies tx to the served tree; should the tree refuse it, it is
// rebuilt from t, which has it.
func (r *followReplica) applied(tx *zkformat.Txn, t *zkformat.Tree) {
	dt := r.tree.Load()
	if dt == nil {
		return
	}
	if err := tx.ApplyTo(dt); err != nil {
		r.log.Warn("the read-only tree refused a transaction; rebuilding it", zap.Error(err))
		r.rebuild(t)
	}
}

// followBackend serves the replica to read-only clients (ZooKeeper's
// read-only mode: a client that asked for it reads; writes answer
// NotReadOnly; others are refused) and takes no sessions of its own.
type followBackend struct{ r *followReplica }

var (
	_ server.Backend      = followBackend{}
	_ server.Availability = followBackend{}
)

func (b followBackend) Submit(*zab.Request) *zab.Future {
	return zab.FailedFuture(jute.CodeNotReadOnly)
}

func (b followBackend) Tree() *datatree.Tree {
	if t := b.r.tree.Load(); t != nil {
		return t
	}
	return b.r.empty
}

func (b followBackend) LastZxid() int64                    { return b.Tree().LastZxid() }
func (b followBackend) SessionTimeout(int64) (int32, bool) { return 0, false }
func (b followBackend) Touch(int64) bool                   { return false }
func (b followBackend) Sync(context.Context) error         { return nil }
func (b followBackend) Mode() string                       { return "observer" }
func (b followBackend) Serving() bool                      { return false }
func (b followBackend) ReadOnlyAllowed() bool              { return b.r.tree.Load() != nil }

// serveFollowed starts serving read-only clients on zoo.cfg's client
// port; the returned server is closed at the cutover.
func serveFollowed(c *zooCfg, r *followReplica, log *zap.Logger) (*server.Server, net.Addr, error) {
	_, _, sc, err := configs(c, log)
	if err != nil {
		return nil, nil, err
	}
	s, err := server.New(sc, followBackend{r})
	if err != nil {
		return nil, nil, err
	}
	ln, err := clientListener(c, sc, log)
	if err != nil {
		return nil, nil, err
	}
	go s.Serve(ln)
	return s, ln.Addr(), nil
}
