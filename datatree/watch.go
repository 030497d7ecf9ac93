package datatree

import (
	"maps"
	"slices"

	"github.com/zkd/zkd/jute"
)

// Watcher receives watch events; it is a client connection. Notify is called
// synchronously from the goroutine that applied the write, while the tree's
// write lock is still held, so that no reader can see the new data before
// the event is queued: a client always receives a watch's event before a
// reply showing the change (ZooKeeper's ordering guarantee). Notify must
// therefore not block and must not call back into the tree. For
// SetWatches it is called from the registering goroutine after the locks
// are released. Watchers are compared by interface equality, so use
// pointers.
type Watcher interface {
	Notify(ev jute.WatcherEvent)
}

// AuthWatcher is a Watcher that exposes its connection's identities. Events
// for a node are then delivered only if those identities may READ the node's
// ACL at trigger time, as ZooKeeper 3.8 does (ServerCnxn.process with the
// znode's ACL). Watchers that do not implement it get every event.
type AuthWatcher interface {
	Watcher
	WatchAuth() []jute.Id
}

// modeStandard marks a one-shot watch; persistent modes use the
// jute.AddWatchMode* values.
const modeStandard int32 = -1

// watchTable is one of ZooKeeper's two WatchManagers (data or child).
type watchTable struct {
	byPath    map[string]*watchSet
	byWatcher map[Watcher]map[string]struct{}
	count     int // (path, watcher) pairs
	recursive int // pairs in persistent-recursive mode
}

// watchSet holds the watchers of one path. Most paths have a single watcher
// (a lock waiter watching its predecessor), kept inline; more spill into a
// map.
type watchSet struct {
	w    Watcher // nil when the set is empty
	mode int32
	more map[Watcher]int32
}

func (s *watchSet) get(w Watcher) (int32, bool) {
	if s == nil || s.w == nil {
		return 0, false
	}
	if s.w == w {
		return s.mode, true
	}
	m, ok := s.more[w]
	return m, ok
}

// put sets w's mode and reports whether w is new to the set.
func (s *watchSet) put(w Watcher, mode int32) bool {
	switch {
	case s.w == nil:
		s.w, s.mode = w, mode
		return true
	case s.w == w:
		s.mode = mode
		return false
	}
	if s.more == nil {
		s.more = make(map[Watcher]int32, 1)
	}
	_, had := s.more[w]
	s.more[w] = mode
	return !had
}

// del removes w, which must be present.
func (s *watchSet) del(w Watcher) {
	if s.w != w {
		delete(s.more, w)
		if len(s.more) == 0 {
			s.more = nil
		}
		return
	}
	s.w = nil
	for x, m := range s.more {
		s.w, s.mode = x, m
		delete(s.more, x)
		break
	}
	if len(s.more) == 0 {
		s.more = nil
	}
}

func (s *watchSet) len() int {
	if s == nil || s.w == nil {
		return 0
	}
	return 1 + len(s.more)
}

// each calls f for every watcher; f may delete the watcher it is given.
func (s *watchSet) each(f func(w Watcher, mode int32)) {
	if s.w == nil {
		return
	}
	first, fmode := s.w, s.mode
	var rest []Watcher
	var modes []int32
	if len(s.more) > 0 {
		rest = make([]Watcher, 0, len(s.more))
		modes = make([]int32, 0, len(s.more))
		for x, m := range s.more {
			rest = append(rest, x)
			modes = append(modes, m)
		}
	}
	f(first, fmode)
	for i, x := range rest {
		f(x, modes[i])
	}
}

func (wt *watchTable) init() {
	wt.byPath = make(map[string]*watchSet)
	wt.byWatcher = make(map[Watcher]map[string]struct{})
}

// add registers w on path; a later add replaces the mode of an earlier one,
// as 3.8's WatcherModeManager does.
func (wt *watchTable) add(path string, w Watcher, mode int32) {
	ws := wt.byPath[path]
	if ws == nil {
		ws = &watchSet{}
		wt.byPath[path] = ws
	}
	if old, had := ws.get(w); had && old == jute.AddWatchModePersistentRecursive {
		wt.recursive--
	}
	if ws.put(w, mode) {
		wt.count++
		ps := wt.byWatcher[w]
		if ps == nil {
			ps = make(map[string]struct{}, 1)
			wt.byWatcher[w] = ps
		}
		ps[path] = struct{}{}
	}
	if mode == jute.AddWatchModePersistentRecursive {
		wt.recursive++
	}
}

// watched answers checkWatches as ZooKeeper 3.8's WatchManager.containsWatcher
// does: true when any connection watches path, not only w.
func (wt *watchTable) watched(path string, w Watcher) bool {
	return wt.byPath[path].len() > 0
}

func (wt *watchTable) remove(path string, w Watcher) bool {
	ws := wt.byPath[path]
	mode, ok := ws.get(w)
	if !ok {
		return false
	}
	wt.drop(ws, path, w, mode, true)
	return true
}

// drop removes w (with mode) from ws, the set of path; index says whether to
// update the watcher index too.
func (wt *watchTable) drop(ws *watchSet, path string, w Watcher, mode int32, index bool) {
	ws.del(w)
	if ws.len() == 0 {
		delete(wt.byPath, path)
	}
	if mode == jute.AddWatchModePersistentRecursive {
		wt.recursive--
	}
	wt.count--
	if !index {
		return
	}
	if ps := wt.byWatcher[w]; ps != nil {
		delete(ps, path)
		if len(ps) == 0 {
			delete(wt.byWatcher, w)
		}
	}
}

// removeWatcher drops every watch of w.
func (wt *watchTable) removeWatcher(w Watcher) {
	for path := range wt.byWatcher[w] {
		ws := wt.byPath[path]
		if mode, ok := ws.get(w); ok {
			wt.drop(ws, path, w, mode, false)
		}
	}
	delete(wt.byWatcher, w)
}

// trigger is WatchManager.triggerWatch: it collects the watchers of path
// (one-shot ones are removed, persistent ones stay) and, when recursive
// watches exist, the persistent-recursive watchers of every ancestor. A
// recursive watcher never receives NodeChildrenChanged. Each watcher appears
// once in the result, appended to out.
func (wt *watchTable) trigger(path string, typ int32, out []Watcher) []Watcher {
	start := len(out)
	var seen map[Watcher]struct{}
	p := path
	atParent := false
	for {
		if ws := wt.byPath[p]; ws != nil {
			ws.each(func(w Watcher, mode int32) {
				if mode == jute.AddWatchModePersistentRecursive {
					if typ == jute.EventNodeChildrenChanged {
						return
					}
				} else if atParent {
					return
				}
				if atParent {
					if seen == nil {
						seen = make(map[Watcher]struct{}, len(out)-start+1)
						for _, x := range out[start:] {
							seen[x] = struct{}{}
						}
					}
					if _, dup := seen[w]; dup {
						return
					}
					seen[w] = struct{}{}
				}
				out = append(out, w)
				if mode == modeStandard {
					wt.drop(ws, p, w, mode, true)
				}
			})
		}
		if wt.recursive == 0 || p == "/" || p == "" {
			break
		}
		parent, _, _ := parentOf(p)
		if parent == "" {
			parent = "/"
		}
		p = parent
		atParent = true
	}
	return out
}

// pendingEvent is an event collected under the locks and delivered after.
type pendingEvent struct {
	w   Watcher
	ev  jute.WatcherEvent
	acl []jute.ACL // the node's ACL for AuthWatcher filtering; nil: no filter
}

// deliver notifies watchers; the watch lock (wmu) must not be held.
func deliver(evs []pendingEvent) {
	for i := range evs {
		e := &evs[i]
		if aw, ok := e.w.(AuthWatcher); ok && e.acl != nil && !checkACL(e.acl, jute.PermRead, aw.WatchAuth()) {
			continue
		}
		e.w.Notify(e.ev)
	}
}

// AddWatch registers a persistent (jute.AddWatchModePersistent) or
// persistent-recursive (jute.AddWatchModePersistentRecursive) watch on path.
// Like ZooKeeper 3.8 it checks neither the path nor ACLs, and registers the
// watch in both the data and the child table.
func (t *Tree) AddWatch(path string, w Watcher, mode int32) error {
	if mode != jute.AddWatchModePersistent && mode != jute.AddWatchModePersistentRecursive {
		return pathErr(ErrBadArguments, path)
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.dataW.add(path, w, mode)
	t.childW.add(path, w, mode)
	return nil
}

// CheckWatches reports, as ZooKeeper 3.8 does, whether path is watched for
// typ (jute.WatcherType*) by any connection: ZooKeeper's answer does not
// depend on who asks (nor on recursive watches on ancestors), and zkd keeps
// that so clients see the same replies. It returns ErrNoWatcher if not,
// ErrBadArguments for an unknown type.
func (t *Tree) CheckWatches(path string, w Watcher, typ int32) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	var found bool
	switch typ {
	case jute.WatcherTypeChildren:
		found = t.childW.watched(path, w)
	case jute.WatcherTypeData:
		found = t.dataW.watched(path, w)
	case jute.WatcherTypeAny:
		found = t.childW.watched(path, w) || t.dataW.watched(path, w)
	default:
		return pathErr(ErrBadArguments, path)
	}
	if !found {
		return pathErr(ErrNoWatcher, path)
	}
	return nil
}

// RemoveWatches removes w's watches of typ on path (Any removes both, and
// persistent ones too), or returns ErrNoWatcher. The server, not the tree,
// tells the client with DataWatchRemoved/ChildWatchRemoved as the client
// library expects.
func (t *Tree) RemoveWatches(path string, w Watcher, typ int32) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	var removed bool
	switch typ {
	case jute.WatcherTypeChildren:
		removed = t.childW.remove(path, w)
	case jute.WatcherTypeData:
		removed = t.dataW.remove(path, w)
	case jute.WatcherTypeAny:
		c := t.childW.remove(path, w)
		d := t.dataW.remove(path, w)
		removed = c || d
	default:
		return pathErr(ErrBadArguments, path)
	}
	if !removed {
		return pathErr(ErrNoWatcher, path)
	}
	return nil
}

// RemoveWatcher drops every watch of w (its connection is gone).
func (t *Tree) RemoveWatcher(w Watcher) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.dataW.removeWatcher(w)
	t.childW.removeWatcher(w)
}

// SetWatches re-arms a reconnecting client's watches and fires the catch-up
// events against relZxid, as DataTree.setWatches does: a data watch gets
// NodeDeleted if the node is gone, NodeDataChanged if mzxid > relZxid, else
// it is re-armed; an exist watch gets NodeCreated if the node exists, else it
// is re-armed; a child watch gets NodeDeleted if gone, NodeChildrenChanged
// if pzxid > relZxid, else it is re-armed. Persistent and recursive watches
// are re-added. Events go to w before SetWatches returns, unfiltered.
func (t *Tree) SetWatches(relZxid int64, data, exist, child, persistent, recursive []string, w Watcher) {
	var evs []pendingEvent
	ev := func(typ int32, path string) {
		evs = append(evs, pendingEvent{w: w, ev: jute.WatcherEvent{Type: typ, State: jute.StateSyncConnected, Path: path}})
	}
	t.mu.RLock()
	t.wmu.Lock()
	for _, p := range data {
		n := t.lookup(p)
		switch {
		case n == nil:
			ev(jute.EventNodeDeleted, p)
		case n.stat.mzxid > relZxid:
			ev(jute.EventNodeDataChanged, p)
		default:
			t.dataW.add(p, w, modeStandard)
		}
	}
	for _, p := range exist {
		if t.lookup(p) != nil {
			ev(jute.EventNodeCreated, p)
		} else {
			t.dataW.add(p, w, modeStandard)
		}
	}
	for _, p := range child {
		n := t.lookup(p)
		switch {
		case n == nil:
			ev(jute.EventNodeDeleted, p)
		case n.stat.pzxid > relZxid:
			ev(jute.EventNodeChildrenChanged, p)
		default:
			t.childW.add(p, w, modeStandard)
		}
	}
	for _, p := range persistent {
		t.childW.add(p, w, jute.AddWatchModePersistent)
		t.dataW.add(p, w, jute.AddWatchModePersistent)
	}
	for _, p := range recursive {
		t.childW.add(p, w, jute.AddWatchModePersistentRecursive)
		t.dataW.add(p, w, jute.AddWatchModePersistentRecursive)
	}
	t.wmu.Unlock()
	t.mu.RUnlock()
	deliver(evs)
}

// WatchCount returns ZooKeeper's watch_count: data plus child table entries
// (a persistent watch counts twice, as it sits in both tables).
func (t *Tree) WatchCount() int {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.dataW.count + t.childW.count
}

// DataWatchCount returns the (path, watcher) pairs of the data-watch table
// (getData, exists and persistent watches), the "Total watches" of wchs.
// ZooKeeper 3.8's wchs, wchc and wchp read its data WatchManager only, so a
// child watch never shows there and a session holding a data and a child
// watch on one path counts once.
func (t *Tree) DataWatchCount() int {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.dataW.count
}

// WatchesByPath returns, for wchp, every path of the data-watch table with
// its watchers (see DataWatchCount for why child watches are left out).
func (t *Tree) WatchesByPath() map[string][]Watcher {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	out := make(map[string][]Watcher, len(t.dataW.byPath))
	for p, ws := range t.dataW.byPath {
		ws.each(func(w Watcher, _ int32) { out[p] = append(out[p], w) })
	}
	return out
}

// WatchesByWatcher returns, for wchc, each watcher's paths in the data-watch
// table, sorted (see DataWatchCount for why child watches are left out).
func (t *Tree) WatchesByWatcher() map[Watcher][]string {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	out := make(map[Watcher][]string, len(t.dataW.byWatcher))
	for w, ps := range t.dataW.byWatcher {
		out[w] = slices.Sorted(maps.Keys(ps))
	}
	return out
}
