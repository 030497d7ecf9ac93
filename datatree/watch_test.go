package datatree

import (
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
)

func TestWatchScenarios(t *testing.T) {
	type step struct {
		do   func(h *harness, w *recorder)
		want []string // events w received during this step
	}
	set := func(p string) func(h *harness, w *recorder) {
		return func(h *harness, w *recorder) {
			if _, err := h.tree.SetData(h.tx(1), p, []byte("x"), -1); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	mk := func(p string) func(h *harness, w *recorder) {
		return func(h *harness, w *recorder) { h.create(p, jute.ModePersistent) }
	}
	del := func(p string) func(h *harness, w *recorder) {
		return func(h *harness, w *recorder) {
			if err := h.tree.Delete(h.tx(1), p, -1); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	exists := func(p string) func(h *harness, w *recorder) {
		return func(h *harness, w *recorder) { h.tree.Exists(p, w) }
	}
	getData := func(p string) func(h *harness, w *recorder) {
		return func(h *harness, w *recorder) {
			if _, _, err := h.tree.GetData(p, nil, w); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	getChildren := func(p string) func(h *harness, w *recorder) {
		return func(h *harness, w *recorder) {
			if _, _, err := h.tree.GetChildren(p, nil, w); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	addWatch := func(p string, mode int32) func(h *harness, w *recorder) {
		return func(h *harness, w *recorder) {
			if err := h.tree.AddWatch(p, w, mode); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"exist watch fires created once", []step{
			{exists("/a"), nil},
			{mk("/a"), []string{"created:/a"}},
			{set("/a"), nil},
			{del("/a"), nil},
		}},
		{"exist watch on existing node sees change", []step{
			{mk("/a"), nil},
			{exists("/a"), nil},
			{set("/a"), []string{"changed:/a"}},
			{set("/a"), nil},
		}},
		{"getData watch then delete", []step{
			{mk("/a"), nil},
			{getData("/a"), nil},
			{del("/a"), []string{"deleted:/a"}},
		}},
		{"exists with NUL registers nothing", []step{
			{func(h *harness, w *recorder) {
				if _, err := h.tree.Exists("/a\x00", w); err == nil {
					h.t.Fatal("exists with NUL succeeded")
				}
			}, nil},
			{func(h *harness, w *recorder) {
				if h.tree.WatchCount() != 0 {
					h.t.Fatal("watch registered")
				}
			}, nil},
		}},
		{"failed getData registers nothing", []step{
			{func(h *harness, w *recorder) { h.tree.GetData("/a", nil, w) }, nil},
			{mk("/a"), nil},
		}},
		{"child watch on create and delete", []step{
			{mk("/p"), nil},
			{getChildren("/p"), nil},
			{mk("/p/c"), []string{"children:/p"}},
			{getChildren("/p"), nil},
			{set("/p"), nil},
			{del("/p/c"), []string{"children:/p"}},
		}},
		{"child watch on root", []step{
			{getChildren("/"), nil},
			{mk("/x"), []string{"children:/"}},
		}},
		{"deleted node with data and child watch gives one event", []step{
			{mk("/a"), nil},
			{getData("/a"), nil},
			{getChildren("/a"), nil},
			{del("/a"), []string{"deleted:/a"}},
		}},
		{"child watch gets deleted for its own node", []step{
			{mk("/a"), nil},
			{getChildren("/a"), nil},
			{del("/a"), []string{"deleted:/a"}},
		}},
		{"delete fires node then parent", []step{
			{mk("/p"), nil},
			{mk("/p/c"), nil},
			{getChildren("/p"), nil},
			{getData("/p/c"), nil},
			{del("/p/c"), []string{"deleted:/p/c", "children:/p"}},
		}},
		{"persistent watch stays", []step{
			{addWatch("/p", jute.AddWatchModePersistent), nil},
			{mk("/p"), []string{"created:/p"}},
			{set("/p"), []string{"changed:/p"}},
			{set("/p"), []string{"changed:/p"}},
			{mk("/p/c"), []string{"children:/p"}},
			{mk("/p/c/d"), nil},
			{set("/p/c"), nil},
			{del("/p/c/d"), nil},
			{del("/p/c"), []string{"children:/p"}},
			{del("/p"), []string{"deleted:/p"}},
			{mk("/p"), []string{"created:/p"}},
		}},
		{"recursive watch sees descendants, never children events", []step{
			{addWatch("/r", jute.AddWatchModePersistentRecursive), nil},
			{mk("/r"), []string{"created:/r"}},
			{mk("/r/a"), []string{"created:/r/a"}},
			{mk("/r/a/b"), []string{"created:/r/a/b"}},
			{set("/r/a/b"), []string{"changed:/r/a/b"}},
			{mk("/rx"), nil},
			{del("/r/a/b"), []string{"deleted:/r/a/b"}},
			{del("/r/a"), []string{"deleted:/r/a"}},
			{set("/r"), []string{"changed:/r"}},
		}},
		{"recursive on root", []step{
			{addWatch("/", jute.AddWatchModePersistentRecursive), nil},
			{mk("/a"), []string{"created:/a"}},
			{set("/zookeeper/quota"), []string{"changed:/zookeeper/quota"}},
		}},
		{"recursive plus standard watch is one event", []step{
			{mk("/r"), nil},
			{mk("/r/a"), nil},
			{addWatch("/r", jute.AddWatchModePersistentRecursive), nil},
			{getData("/r/a"), nil},
			{exists("/r/a"), nil},
			{set("/r/a"), []string{"changed:/r/a"}},
			{set("/r/a"), []string{"changed:/r/a"}},
		}},
		{"standard watch replaces persistent mode (3.8)", []step{
			{mk("/x"), nil},
			{addWatch("/x", jute.AddWatchModePersistent), nil},
			{getData("/x"), nil},
			{set("/x"), []string{"changed:/x"}},
			{set("/x"), nil},
			{mk("/x/c"), []string{"children:/x"}},
		}},
		{"one-shot watches are re-armable", []step{
			{mk("/a"), nil},
			{getData("/a"), nil},
			{set("/a"), []string{"changed:/a"}},
			{getData("/a"), nil},
			{set("/a"), []string{"changed:/a"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, DefaultConfig())
			w := &recorder{}
			for i, s := range tc.steps {
				s.do(h, w)
				if got := w.take(); !slices.Equal(got, s.want) {
					t.Fatalf("step %d: events %v, want %v", i, got, s.want)
				}
				h.check()
			}
		})
	}
}

func TestWatchersAreIndependent(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.create("/a", jute.ModePersistent)
	w1, w2, w3 := &recorder{}, &recorder{}, &recorder{}
	h.tree.GetData("/a", nil, w1)
	h.tree.Exists("/a", w2)
	h.tree.GetChildren("/a", nil, w3)
	if _, err := h.tree.SetData(h.tx(1), "/a", nil, -1); err != nil {
		t.Fatal(err)
	}
	if got1, got2, got3 := w1.take(), w2.take(), w3.take(); len(got1) != 1 || len(got2) != 1 || len(got3) != 0 {
		t.Fatalf("events %v %v %v", got1, got2, got3)
	}
	if h.tree.WatchCount() != 1 {
		t.Fatalf("WatchCount %d", h.tree.WatchCount())
	}
}

func TestWatchACLFiltering(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	alice := digestID("alice", "pw")
	if _, _, err := h.tree.Create(h.tx(1, alice), CreateOp{Path: "/priv", ACL: CreatorAllACL}); err != nil {
		t.Fatal(err)
	}
	anon := &authRecorder{}
	owner := &authRecorder{recorder{auth: []jute.Id{alice}}}
	plain := &recorder{}
	for _, w := range []Watcher{anon, owner, plain} {
		if err := h.tree.AddWatch("/", w, jute.AddWatchModePersistentRecursive); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.tree.SetData(h.tx(1, alice), "/priv", []byte("secret"), -1); err != nil {
		t.Fatal(err)
	}
	if got := anon.take(); len(got) != 0 {
		t.Fatalf("unauthorized watcher got %v", got)
	}
	if got := owner.take(); !slices.Equal(got, []string{"changed:/priv"}) {
		t.Fatalf("owner got %v", got)
	}
	if got := plain.take(); !slices.Equal(got, []string{"changed:/priv"}) {
		t.Fatalf("plain watcher got %v", got)
	}
}

func TestCheckAndRemoveWatches(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	h.create("/a", jute.ModePersistent)
	w := &recorder{}
	other := &recorder{}
	tr.GetData("/a", nil, w)
	tr.GetChildren("/a", nil, w)
	if tr.WatchCount() != 2 {
		t.Fatalf("WatchCount %d", tr.WatchCount())
	}
	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"check data", func() error { return tr.CheckWatches("/a", w, jute.WatcherTypeData) }, nil},
		{"check children", func() error { return tr.CheckWatches("/a", w, jute.WatcherTypeChildren) }, nil},
		{"check any", func() error { return tr.CheckWatches("/a", w, jute.WatcherTypeAny) }, nil},
		// As ZooKeeper 3.8: a path watched by anyone answers yes.
		{"check other watcher", func() error { return tr.CheckWatches("/a", other, jute.WatcherTypeAny) }, nil},
		{"check other path", func() error { return tr.CheckWatches("/b", w, jute.WatcherTypeData) }, ErrNoWatcher},
		{"check bad type", func() error { return tr.CheckWatches("/a", w, 9) }, ErrBadArguments},
		{"remove data", func() error { return tr.RemoveWatches("/a", w, jute.WatcherTypeData) }, nil},
		{"data gone", func() error { return tr.CheckWatches("/a", w, jute.WatcherTypeData) }, ErrNoWatcher},
		{"children stays", func() error { return tr.CheckWatches("/a", w, jute.WatcherTypeChildren) }, nil},
		{"remove data again", func() error { return tr.RemoveWatches("/a", w, jute.WatcherTypeData) }, ErrNoWatcher},
		{"remove any", func() error { return tr.RemoveWatches("/a", w, jute.WatcherTypeAny) }, nil},
		{"remove any again", func() error { return tr.RemoveWatches("/a", w, jute.WatcherTypeAny) }, ErrNoWatcher},
		{"add persistent", func() error { return tr.AddWatch("/a", w, jute.AddWatchModePersistent) }, nil},
		{"add bad mode", func() error { return tr.AddWatch("/a", w, 2) }, ErrBadArguments},
		{"persistent is any", func() error { return tr.CheckWatches("/a", w, jute.WatcherTypeAny) }, nil},
		{"any removes persistent", func() error { return tr.RemoveWatches("/a", w, jute.WatcherTypeAny) }, nil},
	} {
		wantErr(t, tc.name, tc.do(), tc.want)
		h.check()
	}
	if tr.WatchCount() != 0 {
		t.Fatalf("WatchCount %d", tr.WatchCount())
	}
	if _, err := tr.SetData(h.tx(1), "/a", nil, -1); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); len(got) != 0 {
		t.Fatalf("removed watches fired: %v", got)
	}
}

func TestRemoveWatcherAndListings(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	h.create("/a", jute.ModePersistent)
	w1, w2 := &recorder{name: "1"}, &recorder{name: "2"}
	tr.GetData("/a", nil, w1)
	tr.Exists("/b", w1)
	tr.AddWatch("/c", w1, jute.AddWatchModePersistentRecursive)
	tr.GetChildren("/a", nil, w2)
	if got := tr.WatchCount(); got != 5 {
		t.Fatalf("WatchCount %d, want 5 (a persistent watch sits in both tables)", got)
	}
	// The listings and DataWatchCount read the data table only, as
	// ZooKeeper's wchc, wchp and wchs do: w2's child watch is not there.
	if got := tr.DataWatchCount(); got != 3 {
		t.Fatalf("DataWatchCount %d, want 3", got)
	}
	if byW := tr.WatchesByWatcher(); len(byW[w2]) != 0 {
		t.Fatalf("WatchesByWatcher lists a child watch: %v", byW[w2])
	}
	tr.GetData("/a", nil, w2)
	tr.GetChildren("/a", nil, w1)
	if got := tr.DataWatchCount(); got != 4 {
		t.Fatalf("DataWatchCount %d, want 4 (a child watch beside a data watch counts once)", got)
	}
	byW := tr.WatchesByWatcher()
	if !slices.Equal(byW[w1], []string{"/a", "/b", "/c"}) || !slices.Equal(byW[w2], []string{"/a"}) {
		t.Fatalf("WatchesByWatcher %v", byW)
	}
	byP := tr.WatchesByPath()
	if len(byP) != 3 || len(byP["/a"]) != 2 || len(byP["/c"]) != 1 {
		t.Fatalf("WatchesByPath %v", byP)
	}
	tr.RemoveWatcher(w1)
	h.check()
	if got := tr.WatchCount(); got != 2 {
		t.Fatalf("WatchCount after RemoveWatcher %d", got)
	}
	h.create("/b", jute.ModePersistent)
	h.create("/c", jute.ModePersistent)
	if got := w1.take(); len(got) != 0 {
		t.Fatalf("removed watcher got %v", got)
	}
}

func TestSetWatches(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	h.create("/same", jute.ModePersistent)
	h.create("/kids", jute.ModePersistent)
	h.create("/changed", jute.ModePersistent)
	rel := h.zxid
	if _, err := tr.SetData(h.tx(1), "/changed", nil, -1); err != nil {
		t.Fatal(err)
	}
	h.create("/kids/new", jute.ModePersistent)
	w := &recorder{}
	tr.SetWatches(rel,
		[]string{"/same", "/changed", "/gone"},
		[]string{"/same", "/absent"},
		[]string{"/same", "/kids", "/gone"},
		[]string{"/p"}, []string{"/r"}, w)
	want := []string{
		"changed:/changed", "deleted:/gone",
		"created:/same",
		"children:/kids", "deleted:/gone",
	}
	if got := w.take(); !slices.Equal(got, want) {
		t.Fatalf("catch-up events %v, want %v", got, want)
	}
	// Re-armed: data and child on /same, exist on /absent, persistent, recursive.
	for _, c := range []struct {
		path string
		typ  int32
	}{{"/same", jute.WatcherTypeData}, {"/same", jute.WatcherTypeChildren}, {"/absent", jute.WatcherTypeData}, {"/p", jute.WatcherTypeAny}, {"/r", jute.WatcherTypeData}} {
		if err := tr.CheckWatches(c.path, w, c.typ); err != nil {
			t.Errorf("%s type %d not armed: %v", c.path, c.typ, err)
		}
	}
	if err := tr.CheckWatches("/changed", w, jute.WatcherTypeData); err == nil {
		t.Error("fired data watch was re-armed")
	}
	h.create("/absent", jute.ModePersistent)
	h.create("/r", jute.ModePersistent)
	h.create("/r/x", jute.ModePersistent)
	if got := w.take(); !slices.Equal(got, []string{"created:/absent", "created:/r", "created:/r/x"}) {
		t.Fatalf("after re-arm %v", got)
	}
	h.check()
}

// Checked against ZooKeeper 3.8.0: addWatch registers in both tables, so a
// recursive watch answers checkWatches for children, and removing the
// children part leaves the data part firing.
func TestRecursiveWatchBothTables(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	h.create("/r", jute.ModePersistent)
	w := &recorder{}
	tr.AddWatch("/r", w, jute.AddWatchModePersistentRecursive)
	wantErr(t, "check children", tr.CheckWatches("/r", w, jute.WatcherTypeChildren), nil)
	wantErr(t, "remove children", tr.RemoveWatches("/r", w, jute.WatcherTypeChildren), nil)
	wantErr(t, "check data", tr.CheckWatches("/r", w, jute.WatcherTypeData), nil)
	h.create("/r/z", jute.ModePersistent)
	if got := w.take(); !slices.Equal(got, []string{"created:/r/z"}) {
		t.Fatalf("events %v", got)
	}
	h.check()
}

// lockProbe is a Watcher that records whether a reader could have taken
// the tree's read lock when its event was delivered.
type lockProbe struct {
	tree        *Tree
	readerCould []bool
}

func (p *lockProbe) Notify(jute.WatcherEvent) {
	ok := p.tree.mu.TryRLock()
	if ok {
		p.tree.mu.RUnlock()
	}
	p.readerCould = append(p.readerCould, ok)
}

// TestEventsQueuedBeforeDataVisible: every event of a write is delivered
// while readers are still locked out, so a connection queues the event
// before any reply that could show the new data (ZooKeeper's guarantee
// that a client sees the watch event before the change).
func TestEventsQueuedBeforeDataVisible(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.create("/x", jute.ModePersistent)
	p := &lockProbe{tree: h.tree}
	for _, op := range []func(){
		func() { h.tree.SetData(h.tx(1), "/x", []byte("v"), -1) },
		func() { h.tree.Create(h.tx(1), CreateOp{Path: "/x/c", ACL: OpenACLUnsafe}) },
		func() { h.tree.Delete(h.tx(1), "/x/c", -1) },
	} {
		if _, _, err := h.tree.GetData("/x", nil, p); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.tree.GetChildren("/x", nil, p); err != nil {
			t.Fatal(err)
		}
		op()
	}
	if len(p.readerCould) == 0 {
		t.Fatal("no event delivered")
	}
	for i, could := range p.readerCould {
		if could {
			t.Fatalf("event %d delivered after the write lock was released", i)
		}
	}
}

// TestCheckWatchesRecursiveAncestor: as in ZooKeeper 3.8, a
// persistent-recursive watch on an ancestor does not answer checkWatches
// for a path below it; one on the path itself does.
func TestCheckWatchesRecursiveAncestor(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	tr := h.tree
	w := &recorder{name: "w"}
	if err := tr.AddWatch("/r", w, jute.AddWatchModePersistentRecursive); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "below the recursive watch", tr.CheckWatches("/r/a", w, jute.WatcherTypeData), ErrNoWatcher)
	wantErr(t, "on the recursive watch", tr.CheckWatches("/r", w, jute.WatcherTypeData), nil)
}
