package datatree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
)

// refTable is a naive model of one watch table: (path, watcher) → mode.
type refTable map[[2]string]int32

type refModel struct{ data, child refTable }

func (m refModel) trigger(tbl refTable, path string, typ int32) []string {
	var out []string
	for k, mode := range tbl {
		p, w := k[0], k[1]
		hit := false
		switch {
		case p == path:
			hit = mode != jute.AddWatchModePersistentRecursive || typ != jute.EventNodeChildrenChanged
		case mode == jute.AddWatchModePersistentRecursive && typ != jute.EventNodeChildrenChanged:
			hit = p == "/" || (len(path) > len(p) && path[:len(p)] == p && path[len(p)] == '/')
		}
		if !hit {
			continue
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
		if mode == modeStandard {
			delete(tbl, k)
		}
	}
	return out
}

// TestWatchModel drives random watch registrations and writes over a few
// paths and many watchers, and compares every watcher's events with the
// naive model.
func TestWatchModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	paths := []string{"/a", "/a/b", "/a/b/c", "/d"}
	names := []string{"w0", "w1", "w2", "w3", "w4", "w5"}
	total := 0
	for round := 0; round < 20; round++ {
		h := newHarness(t, DefaultConfig())
		tr := h.tree
		ws := map[string]*recorder{}
		for _, n := range names {
			ws[n] = &recorder{name: n}
		}
		m := refModel{refTable{}, refTable{}}
		got := map[string][]string{}
		want := map[string][]string{}
		for step := 0; step < 300; step++ {
			p := paths[rng.IntN(len(paths))]
			n := names[rng.IntN(len(names))]
			w := ws[n]
			switch rng.IntN(9) {
			case 0:
				tr.Exists(p, w)
				m.data[[2]string{p, n}] = modeStandard
			case 1:
				if _, _, err := tr.GetData(p, nil, w); err == nil {
					m.data[[2]string{p, n}] = modeStandard
				}
			case 2:
				if _, _, err := tr.GetChildren(p, nil, w); err == nil {
					m.child[[2]string{p, n}] = modeStandard
				}
			case 3:
				mode := int32(rng.IntN(2))
				tr.AddWatch(p, w, mode)
				m.data[[2]string{p, n}] = mode
				m.child[[2]string{p, n}] = mode
			case 4:
				typ := int32(rng.IntN(3) + 1)
				err := tr.RemoveWatches(p, w, typ)
				k := [2]string{p, n}
				_, d := m.data[k]
				_, c := m.child[k]
				removed := false
				if typ != jute.WatcherTypeChildren && d {
					delete(m.data, k)
					removed = true
				}
				if typ != jute.WatcherTypeData && c {
					delete(m.child, k)
					removed = true
				}
				if (err == nil) != removed {
					t.Fatalf("round %d step %d: RemoveWatches(%s,%s,%d) = %v, model removed %v", round, step, p, n, typ, err, removed)
				}
			case 5, 6:
				if _, _, err := tr.Create(h.tx(1), CreateOp{Path: p, ACL: OpenACLUnsafe}); err == nil {
					for _, x := range m.trigger(m.data, p, jute.EventNodeCreated) {
						want[x] = append(want[x], "created:"+p)
					}
					parent, _, _ := parentOf(p)
					if parent == "" {
						parent = "/"
					}
					for _, x := range m.trigger(m.child, parent, jute.EventNodeChildrenChanged) {
						want[x] = append(want[x], "children:"+parent)
					}
				}
			case 7:
				if _, err := tr.SetData(h.tx(1), p, nil, -1); err == nil {
					for _, x := range m.trigger(m.data, p, jute.EventNodeDataChanged) {
						want[x] = append(want[x], "changed:"+p)
					}
				}
			case 8:
				if err := tr.Delete(h.tx(1), p, -1); err == nil {
					fired := m.trigger(m.data, p, jute.EventNodeDeleted)
					for _, x := range fired {
						want[x] = append(want[x], "deleted:"+p)
					}
					for _, x := range m.trigger(m.child, p, jute.EventNodeDeleted) {
						if !slices.Contains(fired, x) {
							want[x] = append(want[x], "deleted:"+p)
						}
					}
					parent, _, _ := parentOf(p)
					for _, x := range m.trigger(m.child, parent, jute.EventNodeChildrenChanged) {
						want[x] = append(want[x], "children:"+parent)
					}
				}
			}
			for _, n := range names {
				got[n] = append(got[n], ws[n].take()...)
			}
			if err := tr.CheckInvariants(); err != nil {
				t.Fatalf("round %d step %d: %v", round, step, err)
			}
			if c := tr.WatchCount(); c != len(m.data)+len(m.child) {
				t.Fatalf("round %d step %d: WatchCount %d, model %d", round, step, c, len(m.data)+len(m.child))
			}
		}
		for _, n := range names {
			// A watcher gets its events in trigger order, which both
			// sides keep; compare whole sequences.
			total += len(got[n])
			if fmt.Sprint(got[n]) != fmt.Sprint(want[n]) {
				t.Fatalf("round %d: %s got %v\nwant %v", round, n, got[n], want[n])
			}
		}
	}
	if total < 500 {
		t.Fatalf("only %d events: the model test exercises too little", total)
	}
}
