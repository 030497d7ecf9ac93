package datatree

import (
	"testing"

	"github.com/zkd/zkd/jute"
)

// TestFencingPathReadOnly: every write to /zookeeper/fencing or under it is
// refused (NoAuth; NodeExists for creating the node itself), in a multi as
// alone, while /zookeeper/fencingX and the rest of /zookeeper stay writable
// as in ZooKeeper 3.8.
func TestFencingPathReadOnly(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.create("/locks", jute.ModePersistent)
	tests := []struct {
		name string
		op   func(tx *Txn) error
		want error
	}{
		{"create node", func(tx *Txn) error {
			_, _, err := h.tree.Create(tx, CreateOp{Path: FencingPath, ACL: OpenACLUnsafe, Mode: jute.ModePersistent})
			return err
		}, ErrNodeExists},
		{"create under", func(tx *Txn) error {
			_, _, err := h.tree.Create(tx, CreateOp{Path: FencingPath + "/locks/lock-", ACL: OpenACLUnsafe, Mode: jute.ModeEphemeralSequential})
			return err
		}, ErrNoAuth},
		{"delete node", func(tx *Txn) error { return h.tree.Delete(tx, FencingPath, -1) }, ErrNoAuth},
		{"delete under", func(tx *Txn) error { return h.tree.Delete(tx, FencingPath+"/locks/lock-0000000001", -1) }, ErrNoAuth},
		{"setData node", func(tx *Txn) error { _, err := h.tree.SetData(tx, FencingPath, []byte("k"), -1); return err }, ErrNoAuth},
		{"setData under", func(tx *Txn) error { _, err := h.tree.SetData(tx, FencingPath+"/locks", nil, -1); return err }, ErrNoAuth},
		{"setACL", func(tx *Txn) error { _, err := h.tree.SetACL(tx, FencingPath, OpenACLUnsafe, -1); return err }, ErrNoAuth},
		{"multi", func(tx *Txn) error {
			res, failed := h.tree.Multi(tx, []Op{
				{Type: jute.OpCreate, Create: CreateOp{Path: "/locks/a", ACL: OpenACLUnsafe, Mode: jute.ModePersistent}},
				{Type: jute.OpSetData, Path: FencingPath, Version: -1},
			})
			if !failed {
				return nil
			}
			return res[1].Err
		}, ErrNoAuth},
		{"sibling name", func(tx *Txn) error {
			_, _, err := h.tree.Create(tx, CreateOp{Path: "/zookeeper/fencingX", ACL: OpenACLUnsafe, Mode: jute.ModePersistent})
			return err
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, tt.name, tt.op(h.tx(1)), tt.want)
			h.check()
		})
	}
	if _, err := h.tree.Exists("/locks/a", nil); err == nil {
		t.Fatal("the failed multi's create stayed")
	}
}
