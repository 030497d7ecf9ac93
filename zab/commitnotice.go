// Commit notices: how a follower learns at once that the leader committed
// an entry, without another entry in the log.
//
// A follower applies an entry, and so answers the client that wrote it
// through this member, only once it learns that the entry committed.
// hashicorp/raft tells followers the leader's commit index in its next
// AppendEntries: at once under load, when the next batch goes out, but
// when nothing follows only after CommitTimeout, and it offers no way to
// send it sooner but a new entry. zkd used to append one (a raft barrier:
// one more fsync on the leader and on each follower, in series, on every
// idle forwarded write).
//
// Instead, the leader tells its followers on quorum's forwarding streams
// (Config.OnCommitted): "the entry at index, which I proposed as leader of
// term, committed". The follower hands its own raft the AppendEntries the
// leader would have sent with nothing new in it: term, the leader's id,
// PrevLogEntry = index, PrevLogTerm = term, LeaderCommitIndex = index.
// Raft checks it as any other: it ignores a term older than its own, and
// commits only if its log holds that entry with that term, which by
// raft's log matching means its whole log to there is the leader's. Every
// field states a fact the leader of that term knew, so a late or repeated
// notice is as harmless as a late AppendEntries; it changes when a
// follower learns a commit, never what it commits.
//
// A notice for an entry this member's log does not hold yet (its append
// is still on the way) waits until the log stores it. The raft RPC goes in
// through the transport's consumer channel (a transport with an Inject
// method, as quorum's, or a wrapper added here).

package zab

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// notice is a leader's word that the entry at index, of term, committed.
type notice struct {
	leader      raft.ServerID
	term, index uint64
}

// noticeState is a follower's commit notice waiting for its log to hold
// the entry.
type noticeState struct {
	mu      sync.Mutex
	pending *notice
	// injected counts notices handed to raft, for tests and Stats.
	injected atomic.Uint64
}

// rpcInjector is a raft transport that can hand raft an RPC of this
// member's own making, as if it had come from a peer. Inject must not
// block: it returns false when it cannot take the RPC now.
type rpcInjector interface {
	Inject(rpc raft.RPC) bool
}

// LeaderCommitted tells a follower that leader, as leader of term,
// committed the entry at index, which it proposed in that term. The
// follower's raft learns it at once if this member's log holds that entry,
// or as soon as it stores it; a notice that is stale, or from a leader
// this member does not follow, is dropped.
func (n *Node) LeaderCommitted(leader raft.ServerID, term, index uint64) {
	if n.inject == nil || n.standalone {
		return
	}
	nt := notice{leader: leader, term: term, index: index}
	n.notices.mu.Lock()
	defer n.notices.mu.Unlock()
	if p := n.notices.pending; p != nil && (p.term > term || p.term == term && p.index >= index) {
		return
	}
	last, err := n.logs.LastIndex()
	if err != nil {
		return
	}
	if last < index {
		n.notices.pending = &nt
		return
	}
	n.notices.pending = nil
	n.deliverNotice(nt)
}

// deferNow is the log's Options.Defer: the leader of an ensemble writes
// its log while the followers write theirs.
func (n *Node) deferNow() bool {
	if !n.deferWrites {
		return false
	}
	r := n.raftReady.Load()
	return r != nil && r.State() == raft.Leader
}

// noticeApplied tells the followers, as Config.OnCommitted, that the
// entry at index, applied here, committed: after a sync's barrier, so the
// follower that asked reaches index without waiting for raft's
// CommitTimeout. Only for an entry of the term this member leads now,
// which it proposed itself: a notice speaks for the leader of the entry's
// term. The term is read before and after the state, so a step-down in
// between (raft changes the state, then the term) cannot pass.
func (n *Node) noticeApplied(index uint64) {
	if n.cfg.OnCommitted == nil || index == 0 {
		return
	}
	var l raft.Log
	if err := n.logs.GetLog(index, &l); err != nil {
		return
	}
	t1 := n.raft.CurrentTerm()
	leads := n.raft.State() == raft.Leader
	if leads && t1 == l.Term && n.raft.CurrentTerm() == t1 {
		n.cfg.OnCommitted(l.Term, index)
	}
}

// noticeStored is the log's hook after each append: a notice waiting for
// an entry up to last goes to raft now. Called on raft's goroutine, which
// the injection must not wait for.
func (n *Node) noticeStored(last uint64) {
	n.notices.mu.Lock()
	defer n.notices.mu.Unlock()
	p := n.notices.pending
	if p == nil || p.index > last {
		return
	}
	n.notices.pending = nil
	n.deliverNotice(*p)
}

// deliverNotice hands raft the AppendEntries that carries nt, if raft
// still needs it. The caller holds notices.mu.
func (n *Node) deliverNotice(nt notice) {
	r := n.raftReady.Load()
	if r == nil || r.State() != raft.Follower || r.CommitIndex() >= nt.index {
		return
	}
	addr, id := r.LeaderWithID()
	if id != nt.leader || addr == "" {
		return
	}
	// Only for a leader heard from lately. Raft steps down to follower
	// for any AppendEntries of its term, and counts it as contact: a
	// notice reaching a member whose heartbeat timer ran out meanwhile
	// (the RPC waits in a queue) would send its new candidacy back to
	// following a leader that may be paused or gone, and put the
	// election off by a heartbeat timeout. Half of one leaves that queue
	// ample room; raft's own appends carry the commit anyway.
	if time.Since(r.LastContact()) > n.heartbeatTimeout/2 {
		return
	}
	var l raft.Log
	if err := n.logs.GetLog(nt.index, &l); err != nil || l.Term != nt.term {
		// Not the leader's entry (this log diverged and raft will
		// repair it), or compacted away: raft's own append carries it.
		return
	}
	peer := n.transport.EncodePeer(id, addr)
	req := &raft.AppendEntriesRequest{
		RPCHeader:         raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id), Addr: peer},
		Term:              nt.term,
		Leader:            peer,
		PrevLogEntry:      nt.index,
		PrevLogTerm:       nt.term,
		LeaderCommitIndex: nt.index,
	}
	// Raft answers on RespChan from its main goroutine: it must never
	// block there, so the channel has room for the one answer, which
	// nobody reads.
	if n.inject.Inject(raft.RPC{Command: req, RespChan: make(chan raft.RPCResponse, 1)}) {
		n.notices.injected.Add(1)
	}
}

// nodeTransport is raft's transport as a Node of an ensemble wraps it:
//
//   - Inject hands raft RPCs of this member's making (commit notices): the
//     inner transport's own Inject if it has one (quorum's), else raft
//     reads the inner transport's RPCs and the injected ones from one
//     channel, filled by a goroutine (one channel hop more per RPC);
//   - every AppendEntries it sends tells the follower a commit index no
//     higher than commitCap, this member's durable log index while its
//     writes are deferred (wal's deferred.go): a follower must not apply
//     what the leader may still lose.
type nodeTransport struct {
	raft.Transport
	preVote   raft.WithPreVote
	inner     rpcInjector // the inner transport's Inject, or nil
	commitCap func() uint64

	rpcs     chan raft.RPC
	injected chan raft.RPC
	stop     chan struct{}
	once     sync.Once
}

// wrapTransport returns t wrapped, or t itself and false when it has no
// pre-vote (a wrapper would hide what it lacks): then neither notices nor
// deferred writes are used.
func wrapTransport(t raft.Transport, commitCap func() uint64) (*nodeTransport, bool) {
	pv, ok := t.(raft.WithPreVote)
	if !ok {
		return nil, false
	}
	w := &nodeTransport{Transport: t, preVote: pv, commitCap: commitCap, stop: make(chan struct{})}
	if inj, ok := t.(rpcInjector); ok {
		w.inner = inj
		return w, true
	}
	w.rpcs, w.injected = make(chan raft.RPC), make(chan raft.RPC, 16)
	go w.merge()
	return w, true
}

// Consumer implements raft.Transport.
func (w *nodeTransport) Consumer() <-chan raft.RPC {
	if w.inner != nil {
		return w.Transport.Consumer()
	}
	return w.rpcs
}

// RequestPreVote implements raft.WithPreVote.
func (w *nodeTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return w.preVote.RequestPreVote(id, target, args, resp)
}

// AppendEntries implements raft.Transport, capping the commit index.
func (w *nodeTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	w.cap(args)
	return w.Transport.AppendEntries(id, target, args, resp)
}

// AppendEntriesPipeline implements raft.Transport; the pipeline caps the
// commit index of what it sends.
func (w *nodeTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := w.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return &cappedPipeline{AppendPipeline: p, w: w}, nil
}

// cap lowers args' commit index to commitCap. It writes only to lower
// it: raft sends its heartbeat request (commit index 0) again and again,
// and the in-memory transport hands the same request to the receiver.
func (w *nodeTransport) cap(args *raft.AppendEntriesRequest) {
	if w.commitCap == nil || args.LeaderCommitIndex == 0 {
		return
	}
	if c := w.commitCap(); args.LeaderCommitIndex > c {
		args.LeaderCommitIndex = c
	}
}

// cappedPipeline is a pipeline of nodeTransport.
type cappedPipeline struct {
	raft.AppendPipeline
	w *nodeTransport
}

// AppendEntries implements raft.AppendPipeline, capping the commit index.
func (p *cappedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	p.w.cap(args)
	return p.AppendPipeline.AppendEntries(args, resp)
}

// Inject implements rpcInjector.
func (w *nodeTransport) Inject(rpc raft.RPC) bool {
	if w.inner != nil {
		return w.inner.Inject(rpc)
	}
	select {
	case w.injected <- rpc:
		return true
	default:
		return false
	}
}

func (w *nodeTransport) merge() {
	in := w.Transport.Consumer()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case rpc = <-w.injected:
		case <-w.stop:
			return
		}
		select {
		case w.rpcs <- rpc:
		case <-w.stop:
			return
		}
	}
}

// Close implements raft.WithClose, ending the merging goroutine.
func (w *nodeTransport) Close() error {
	w.once.Do(func() { close(w.stop) })
	if c, ok := w.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}
