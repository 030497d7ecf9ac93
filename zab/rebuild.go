// A member's own bookkeeping beside raft's state: the rebuild marker left
// by `zkd rebuild`, and small member-local counters kept in the stable
// store (quorum keeps this member's incarnation and the highest one seen
// of each peer there; docs/disk-faults.md, "A member restored from an old
// backup").

package zab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zkd/zkd/zab/store"
)

// RebuildMarker is the file `zkd rebuild` leaves in a member's emptied
// data directory (Config.Dir). While it is there the member starts
// without bootstrapping a membership of its own (it waits for the leader
// to send it the state by raft), and quorum keeps it from voting until it
// has caught up with the leader (ClearRebuild then removes it).
const RebuildMarker = "REBUILD"

// PrepareRebuild moves the data directory dir (Config.Dir) aside, to
// dir.before-rebuild-<UTC time>, and leaves dir empty but for the
// RebuildMarker, which names where the old data went. It returns that
// path ("" when dir did not exist). Nothing is deleted. The caller makes
// sure no zkd runs on dir.
func PrepareRebuild(dir string, now time.Time) (moved string, err error) {
	if _, err := os.Stat(dir); err == nil {
		moved = dir + ".before-rebuild-" + now.UTC().Format("20060102T150405Z")
		if err := os.Rename(dir, moved); err != nil {
			return "", fmt.Errorf("zab: rebuild: move %s aside: %w", dir, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("zab: rebuild: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return moved, fmt.Errorf("zab: rebuild: %w", err)
	}
	text := fmt.Sprintf("zkd rebuild at %s: this member copies its state from the ensemble's leader and votes again once it has caught up.\nprevious data: %s\n",
		now.UTC().Format(time.RFC3339), moved)
	path := filepath.Join(dir, RebuildMarker)
	if err := writeSynced(path, []byte(text)); err != nil {
		return moved, fmt.Errorf("zab: rebuild: write %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return moved, fmt.Errorf("zab: rebuild: sync %s: %w", dir, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return moved, fmt.Errorf("zab: rebuild: sync %s: %w", filepath.Dir(dir), err)
	}
	return moved, nil
}

// Rebuilding reports whether `zkd rebuild` left its marker in this
// member's data directory and the member has not yet caught up.
func (n *Node) Rebuilding() bool {
	_, err := os.Stat(filepath.Join(n.cfg.Dir, RebuildMarker))
	return err == nil
}

// ClearRebuild removes the rebuild marker once the member has caught up
// with the leader, durably.
func (n *Node) ClearRebuild() error {
	path := filepath.Join(n.cfg.Dir, RebuildMarker)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("zab: remove %s: %w", path, err)
	}
	return syncDir(n.cfg.Dir)
}

// memberKey is the stable-store key of member-local counter name; raft's
// own keys (CurrentTerm, LastVoteTerm, LastVoteCand) never start with it.
func memberKey(name string) []byte { return []byte("zkd/" + name) }

// MemberCounter returns the member-local counter name from the stable
// store (0 when it was never set). It is this member's own bookkeeping,
// not replicated.
func (n *Node) MemberCounter(name string) (uint64, error) {
	v, err := n.store.GetUint64(memberKey(name))
	if errors.Is(err, store.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("zab: read %s in %s: %w", name, n.cfg.Dir, err)
	}
	return v, nil
}

// SetMemberCounter stores the member-local counter name, synced.
func (n *Node) SetMemberCounter(name string, v uint64) error {
	if err := n.store.SetUint64(memberKey(name), v); err != nil {
		return fmt.Errorf("zab: write %s in %s: %w", name, n.cfg.Dir, err)
	}
	return nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
