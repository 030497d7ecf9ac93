package datatree

import (
	"fmt"
	"sync"
	"testing"

	"github.com/zkd/zkd/jute"
)

// Readers, watch registrations and writers race; run with -race. The final
// tree must be consistent and every watcher must have seen only its own
// paths.
func TestConcurrentUse(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	h.create("/c", jute.ModePersistent)
	var wg sync.WaitGroup
	var zmu sync.Mutex
	next := func() *Txn {
		zmu.Lock()
		defer zmu.Unlock()
		return h.tx(3)
	}
	for g := 0; g < 4; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				p := fmt.Sprintf("/c/g%d-%d", g, i)
				if _, _, err := tr.Create(next(), CreateOp{Path: p, ACL: OpenACLUnsafe, Mode: jute.ModeEphemeral}); err != nil {
					t.Error(err)
					return
				}
				tr.SetData(next(), p, []byte("x"), -1)
				if i%2 == 0 {
					tr.Delete(next(), p, -1)
				}
			}
		}()
		go func() {
			defer wg.Done()
			w := &recorder{}
			for i := 0; i < 200; i++ {
				tr.GetChildren("/c", nil, w)
				tr.Exists(fmt.Sprintf("/c/g%d-%d", g, i), w)
				tr.GetData("/c", nil, nil)
				tr.Digest()
				tr.WatchCount()
			}
			tr.RemoveWatcher(w)
		}()
	}
	wg.Wait()
	tr.CloseSession(next(), 3)
	if n, _ := tr.GetAllChildrenNumber("/c", nil); n != 0 {
		t.Fatalf("%d children left", n)
	}
	h.check()
}
