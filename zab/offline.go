package zab

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/zab/store"
)

// State is a member's replicated state outside a running node: the tree
// and the session table (ids sorted, with their timeouts in ms).
type State struct {
	Tree     *datatree.Tree
	Sessions []int64
	Timeouts []int32
}

// ErrHasState is returned by Seed for a data directory that already holds
// zkd state.
var ErrHasState = errors.New("zab: the data directory already holds zkd state")

// raftKeyCurrentTerm is the stable-store key where hashicorp/raft keeps
// its current term.
var raftKeyCurrentTerm = []byte("CurrentTerm")

// Seed writes st into the empty data directory cfg.Dir as the state of a
// member that has applied everything up to st.Tree.LastZxid: a raft
// snapshot at index 1 whose term is that zxid's epoch (at least 1), and
// the same current term, so the first election starts the next epoch and
// the zxids zkd hands out continue above the seeded ones. The snapshot's
// membership is cfg.Servers (or this member alone, as Open bootstraps).
// Every member of an ensemble seeded with the same state agrees with the
// others; with cfg.ConfigData set, /zookeeper/config is replaced by it. It
// refuses a directory with zkd state in it.
func Seed(cfg Config, st State) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if len(st.Sessions) != len(st.Timeouts) {
		return errors.New("zab: seed: sessions and timeouts differ in length")
	}
	s, err := store.Open(store.Options{Dir: cfg.Dir, Logger: cfg.Logger.Named("pebble")})
	if err != nil {
		return fmt.Errorf("zab: open store in %s: %w", cfg.Dir, err)
	}
	defer s.Close()
	logs, err := openLog(cfg, s, nil, nil, nil)
	if err != nil {
		return err
	}
	defer logs.Close()
	snaps := s.SnapshotStore(cfg.SnapshotRetain)
	has, err := raft.HasExistingState(logs, s, snaps)
	if err != nil {
		return fmt.Errorf("zab: inspect state in %s: %w", cfg.Dir, err)
	}
	if has {
		return fmt.Errorf("%w: %s", ErrHasState, cfg.Dir)
	}
	last := st.Tree.LastZxid()
	if cfg.ConfigData != nil {
		// An ensemble's /zookeeper/config is its own membership, not the
		// one the imported state came from. Every member seeds the same
		// bytes: mtime is kept, not read from a clock.
		cur, stat, err := st.Tree.GetData(datatree.ConfigPath, nil, nil)
		if err != nil {
			return fmt.Errorf("zab: seed: %w", err)
		}
		if !bytes.Equal(cur, cfg.ConfigData) {
			if _, err := st.Tree.SetConfigData(&datatree.Txn{Zxid: configVersion(cfg.ConfigData), Time: stat.Mtime}, cfg.ConfigData, false); err != nil {
				return fmt.Errorf("zab: seed: %w", err)
			}
		}
	}
	f := newFSM(cfg.Tree, cfg.Logger)
	f.lockName = cfg.LockName
	f.tree.Store(st.Tree)
	f.digests.reset(st.Tree.LastZxid(), st.Tree.TreeDigest())
	f.lastTerm, f.counter = uint64(last)>>32, uint32(last)
	for i, id := range st.Sessions {
		f.mu.sessions[id] = st.Timeouts[i]
	}
	const index = 1
	f.applied.Store(index)
	fs, err := f.Snapshot()
	if err != nil {
		return err
	}
	term := max(uint64(last)>>32, 1)
	servers := cfg.Servers
	if len(servers) == 0 {
		id := raft.ServerID(fmt.Sprint(cfg.MyID))
		servers = []raft.Server{{Suffrage: raft.Voter, ID: id, Address: raft.ServerAddress(fmt.Sprintf("zkd-%d", cfg.MyID))}}
	}
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, term, raft.Configuration{Servers: servers}, index, nil)
	if err != nil {
		return fmt.Errorf("zab: seed snapshot in %s: %w", cfg.Dir, err)
	}
	if _, err := sink.Write(fs.(*fsmSnapshot).data); err != nil {
		sink.Cancel()
		return fmt.Errorf("zab: seed snapshot in %s: %w", cfg.Dir, err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("zab: seed snapshot in %s: %w", cfg.Dir, err)
	}
	if err := s.SetUint64(raftKeyCurrentTerm, term); err != nil {
		return fmt.Errorf("zab: seed term in %s: %w", cfg.Dir, err)
	}
	return nil
}

// Load reads the state of the stopped member in cfg.Dir without starting
// raft: the newest snapshot, then every command entry after it in the log.
// Entries a member wrote but its ensemble never committed would be
// included, so load a standalone member's directory, or that of the
// ensemble's last leader. The directory is not changed.
func Load(cfg Config) (out State, err error) {
	if err := cfg.Validate(); err != nil {
		return out, err
	}
	s, err := store.Open(store.Options{Dir: cfg.Dir, Logger: cfg.Logger.Named("pebble")})
	if err != nil {
		return out, fmt.Errorf("zab: open store in %s (is zkd still running?): %w", cfg.Dir, err)
	}
	defer s.Close()
	logs, err := openLog(cfg, s, nil, nil, nil)
	if err != nil {
		return out, err
	}
	defer logs.Close()
	f := newFSM(cfg.Tree, cfg.Logger)
	f.lockName = cfg.LockName
	snaps := s.SnapshotStore(cfg.SnapshotRetain)
	metas, err := snaps.List()
	if err != nil {
		return out, fmt.Errorf("zab: list snapshots in %s: %w", cfg.Dir, err)
	}
	from, err := logs.FirstIndex()
	if err != nil {
		return out, fmt.Errorf("zab: read log in %s: %w", cfg.Dir, err)
	}
	if len(metas) > 0 {
		_, rc, err := snaps.Open(metas[0].ID)
		if err != nil {
			return out, fmt.Errorf("zab: open snapshot %s in %s: %w", metas[0].ID, cfg.Dir, err)
		}
		if err := f.Restore(rc); err != nil {
			return out, fmt.Errorf("zab: snapshot %s in %s: %w", metas[0].ID, cfg.Dir, err)
		}
		from = metas[0].Index + 1
	}
	lastIdx, err := logs.LastIndex()
	if err != nil {
		return out, fmt.Errorf("zab: read log in %s: %w", cfg.Dir, err)
	}
	// Apply stops a running member on an entry it cannot apply; here
	// that is an error.
	defer func() {
		if p := recover(); p != nil {
			out, err = State{}, fmt.Errorf("zab: log in %s: %v", cfg.Dir, p)
		}
	}()
	for i := max(from, 1); i <= lastIdx; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			if errors.Is(err, raft.ErrLogNotFound) {
				continue
			}
			return out, fmt.Errorf("zab: log index %d in %s: %w", i, cfg.Dir, err)
		}
		if l.Type == raft.LogCommand {
			f.Apply(&l)
		}
	}
	out.Tree = f.tree.Load()
	out.Sessions, out.Timeouts = f.sessionList()
	return out, nil
}
