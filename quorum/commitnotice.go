// Commit notices on the forwarding streams: when a batch commits with
// nothing proposed behind it, the leader tells every member streaming to
// it (msgCommitted), and each hands the word to its own raft
// (zab.Node.LeaderCommitted; the mechanism and why it is safe are in
// zab/commitnotice.go). A follower then applies, and answers, a write
// forwarded to an idle leader one network hop after the commit, instead
// of after a raft barrier's fsync on the leader and on itself.

package quorum

import (
	"sync"

	"github.com/zkd/zkd/jute"
)

// commitTeller holds the newest commit the leader's node reported, for
// tellLoop.
type commitTeller struct {
	mu          sync.Mutex
	term, index uint64
	wake        chan struct{}
}

// committed is zab.Config.OnCommitted: it records the commit and wakes
// tellLoop. Called on the node's apply goroutine; it never blocks.
func (m *Member) committed(term, index uint64) {
	t := &m.teller
	t.mu.Lock()
	if index > t.index {
		t.term, t.index = term, index
	}
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// tellLoop sends each new commit to the members streaming to this one.
// Commits reported while it sends are folded into the next message.
func (m *Member) tellLoop() {
	defer m.wg.Done()
	var sent uint64
	var to []*lockedWriter
	for {
		select {
		case <-m.stop:
			return
		case <-m.teller.wake:
		}
		m.teller.mu.Lock()
		term, index := m.teller.term, m.teller.index
		m.teller.mu.Unlock()
		if index <= sent {
			continue
		}
		sent = index
		enc := jute.NewEncoder(make([]byte, 0, 24))
		enc.WriteLong(m.cfg.MyID)
		enc.WriteLong(int64(term))
		enc.WriteLong(int64(index))
		to = m.lead.streams(to[:0])
		for _, w := range to {
			w.send(msgCommitted, enc.Bytes())
		}
		clear(to)
	}
}
