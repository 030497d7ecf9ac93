package zkformat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd/zkd/datatree"
)

// TestApplyTo replays every transaction of a real ZooKeeper 3.8 database
// (every node type, ACLs, multis, a failed multi, sessions closing) from
// its first snapshot both into a Tree and, through ApplyTo, into a zkd
// tree, and compares every node after each log file. Quota statistics
// are left out: zkd's tree keeps them up to date as it writes, ZooKeeper
// recounts them when it loads.
func TestApplyTo(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(zk38, "snapshot.0"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := ReadSnapshot("snapshot.0", raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	zt := snap.Tree
	dt, err := datatree.FromImages(datatree.Config{ExtendedTypes: true}, 0, zt.Images())
	if err != nil {
		t.Fatal(err)
	}
	logs, err := listFiles(zk38, "log")
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, lf := range logs {
		b, err := os.ReadFile(lf.path)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ReadLog(lf.path, b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.Txns {
			tx := &l.Txns[i]
			if tx.Zxid <= zt.LastZxid {
				continue
			}
			zt.Apply(tx)
			if err := tx.ApplyTo(dt); err != nil {
				t.Fatalf("%s: %v", lf.path, err)
			}
			applied++
		}
		if dt.LastZxid() != zt.LastZxid {
			t.Fatalf("after %s: zkd tree at zxid 0x%x, ZooKeeper's at 0x%x", lf.path, dt.LastZxid(), zt.LastZxid)
		}
		compareTrees(t, lf.path, zt, dt)
	}
	if applied < 200 || zt.LastZxid != zk38LastZxid {
		t.Fatalf("applied %d transactions up to 0x%x, want the whole history to 0x%x", applied, zt.LastZxid, zk38LastZxid)
	}
}

func compareTrees(t *testing.T, where string, zt *Tree, dt *datatree.Tree) {
	t.Helper()
	skip := func(p string) bool { return strings.HasPrefix(p, "/zookeeper/quota/") }
	want := map[string]string{}
	for _, im := range zt.Images() {
		if !skip(im.Path) {
			want[im.Path] = fmt.Sprintf("%+v", im)
		}
	}
	got := 0
	dt.Images(func(im *datatree.NodeImage) error {
		if skip(im.Path) {
			return nil
		}
		got++
		if w := want[im.Path]; w != fmt.Sprintf("%+v", *im) {
			t.Errorf("after %s: %s\n zkd:       %+v\n ZooKeeper: %s", where, im.Path, *im, w)
		}
		return nil
	})
	if got != len(want) {
		t.Errorf("after %s: zkd tree has %d nodes, ZooKeeper's %d", where, got, len(want))
	}
}
