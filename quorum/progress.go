// Each member's replication progress, as the leader hears it: the
// followers already report their applied index with every touch batch
// (every TouchInterval, even an empty one); they add their last applied
// zxid and whether they serve. The leader sends the table back on each
// stream at most once every progressInterval, so any member's console
// shows every member's progress without a connection of its own.

package quorum

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkd/zkd/jute"
)

// progressInterval is how often the leader sends its table on a stream.
const progressInterval = time.Second

// MemberProgress is one member's replication progress as the leader knows
// it.
type MemberProgress struct {
	ID       int64
	Leader   bool
	Observer bool
	// Known is false for a member that has not reported to this leader.
	Known bool
	// AppliedIndex and Zxid are the raft index and the zxid the member
	// last reported having applied (Zxid 0: a member too old to say).
	AppliedIndex uint64
	Zxid         int64
	// Lag is the leader's commit index minus AppliedIndex.
	Lag uint64
	// Serving is whether the member said it serves clients; InTouch
	// whether it reported within the serving lease; Ready is both, and
	// within SyncedLag entries of the leader's commit.
	Serving, InTouch, Ready bool
	// Age is how long before the table was made the member last reported
	// (0 for the leader itself).
	Age time.Duration
}

// Progress is the leader's view of every member's replication.
type Progress struct {
	LeaderID    int64
	CommitIndex uint64
	Members     []MemberProgress
	// Age is how old the table is: 0 on the leader; on a follower, the
	// time since the leader sent it.
	Age time.Duration
}

// Progress returns every member's replication progress: computed on the
// leader, or the leader's last table on a follower. ok is false when
// standalone, or when this member has no table younger than the serving
// lease (it is not in touch with a leader).
func (m *Member) Progress() (Progress, bool) {
	if m.fwd == nil {
		return Progress{}, false
	}
	if m.node.IsLeader() {
		return m.lead.progress(), true
	}
	m.fwd.mu.Lock()
	p, at := m.fwd.mu.progress, m.fwd.mu.progressAt
	m.fwd.mu.Unlock()
	if at.IsZero() || time.Since(at) > m.timing.ServingLease {
		return Progress{}, false
	}
	p.Age = time.Since(at)
	return p, true
}

// progress builds the leader's table from raft's configuration and the
// members' reports.
func (l *leaderSide) progress() Progress {
	m := l.m
	r := m.node.Raft()
	p := Progress{LeaderID: m.cfg.MyID, CommitIndex: r.CommitIndex()}
	floor := uint64(0)
	if p.CommitIndex > SyncedLag {
		floor = p.CommitIndex - SyncedLag
	}
	var servers []raft.Server
	if fut := r.GetConfiguration(); fut.Error() == nil {
		servers = fut.Configuration().Servers
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, srv := range servers {
		var id int64
		if _, err := fmt.Sscan(string(srv.ID), &id); err != nil {
			continue
		}
		mp := MemberProgress{ID: id, Observer: srv.Suffrage == raft.Nonvoter}
		if id == m.cfg.MyID {
			mp.Leader, mp.Known, mp.InTouch, mp.Serving = true, true, true, true
			mp.AppliedIndex, mp.Zxid = r.AppliedIndex(), m.node.LastZxid()
		} else if rep, ok := l.mu.applied[id]; ok {
			mp.Known, mp.AppliedIndex, mp.Zxid, mp.Serving = true, rep.index, rep.zxid, rep.serving
			mp.Age = now.Sub(rep.at)
			mp.InTouch = mp.Age < m.timing.ServingLease
		}
		if mp.Known {
			mp.Lag = p.CommitIndex - min(mp.AppliedIndex, p.CommitIndex)
			mp.Ready = mp.InTouch && mp.Serving && mp.AppliedIndex >= floor
		}
		p.Members = append(p.Members, mp)
	}
	slices.SortFunc(p.Members, func(a, b MemberProgress) int { return int(a.ID - b.ID) })
	return p
}

// encodeProgress is msgProgress's body.
func encodeProgress(p Progress) []byte {
	enc := jute.NewEncoder(nil)
	enc.WriteLong(p.LeaderID)
	enc.WriteLong(int64(p.CommitIndex))
	enc.WriteInt(int32(len(p.Members)))
	for _, mp := range p.Members {
		enc.WriteLong(mp.ID)
		for _, b := range []bool{mp.Leader, mp.Observer, mp.Known, mp.Serving, mp.InTouch, mp.Ready} {
			enc.WriteBool(b)
		}
		enc.WriteLong(int64(mp.AppliedIndex))
		enc.WriteLong(mp.Zxid)
		enc.WriteLong(int64(mp.Lag))
		enc.WriteLong(mp.Age.Milliseconds())
	}
	return enc.Bytes()
}

// decodeProgress reads msgProgress's body.
func decodeProgress(body []byte) (Progress, error) {
	d := jute.NewDecoder(body)
	p := Progress{LeaderID: d.ReadLong(), CommitIndex: uint64(d.ReadLong())}
	n := d.VectorLen(8 + 6 + 4*8)
	for i := 0; i < n && d.Err() == nil; i++ {
		mp := MemberProgress{ID: d.ReadLong()}
		for _, b := range []*bool{&mp.Leader, &mp.Observer, &mp.Known, &mp.Serving, &mp.InTouch, &mp.Ready} {
			*b = d.ReadBool()
		}
		mp.AppliedIndex = uint64(d.ReadLong())
		mp.Zxid = d.ReadLong()
		mp.Lag = uint64(d.ReadLong())
		mp.Age = time.Duration(d.ReadLong()) * time.Millisecond
		p.Members = append(p.Members, mp)
	}
	if err := d.Err(); err != nil {
		return Progress{}, fmt.Errorf("quorum: decoding the leader's progress table: %w", err)
	}
	return p, nil
}

// handoffTargets is zab.Config.HandoffTargets: the voters a leader whose
// disk stalls may hand leadership to, from its progress table: those
// Ready (in touch, serving, within SyncedLag of its commit index), the
// least behind first. None before the member started.
func (m *Member) handoffTargets() []raft.ServerID {
	if !m.started.Load() {
		return nil
	}
	p := m.lead.progress()
	ready := slices.DeleteFunc(p.Members, func(mp MemberProgress) bool { return mp.Leader || mp.Observer || !mp.Ready })
	slices.SortStableFunc(ready, func(a, b MemberProgress) int { return cmp.Compare(a.Lag, b.Lag) })
	out := make([]raft.ServerID, 0, len(ready))
	for _, mp := range ready {
		out = append(out, raft.ServerID(fmt.Sprint(mp.ID)))
	}
	return out
}
