package main

import (
	"sort"
	"strings"
	"sync"

	"github.com/zkd/zkd/jute"
)

// watchKind names one of the client-side watch tables of ZooKeeper's Java
// client (ZKWatchManager).
type watchKind int

const (
	watchData watchKind = iota
	watchExist
	watchChild
	watchPersistent
	watchRecursive
	numWatchKinds
)

// watchSet is the session's registered watches, kept as the Java client keeps
// them: one-shot data, exist and child watches by path, and persistent and
// persistent-recursive ones. It decides which notifications reach the shell
// (the Java client drops events no local watch asks for), which removal
// events removewatches reports, and what to re-register after a reconnect.
// It is safe for concurrent use.
type watchSet struct {
	mu    sync.Mutex
	paths [numWatchKinds]map[string]bool
}

// newWatchSet returns an empty set.
func newWatchSet() *watchSet {
	w := &watchSet{}
	for i := range w.paths {
		w.paths[i] = make(map[string]bool)
	}
	return w
}

// add records a watch of kind k on path.
func (w *watchSet) add(k watchKind, path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paths[k][path] = true
}

// take deletes path from the kinds given and reports whether any held it.
func (w *watchSet) takeLocked(path string, kinds ...watchKind) bool {
	found := false
	for _, k := range kinds {
		if w.paths[k][path] {
			delete(w.paths[k], path)
			found = true
		}
	}
	return found
}

// fire applies a notification: it consumes the one-shot watches it triggers
// and reports whether any watch (one-shot, persistent on the path, or
// persistent-recursive on the path or an ancestor) asked for it. Session
// events (type None) are always delivered.
func (w *watchSet) fire(ev jute.WatcherEvent) bool {
	if ev.Type == jute.EventNone {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p := ev.Path
	hit := false
	switch ev.Type {
	case jute.EventNodeCreated, jute.EventNodeDataChanged:
		hit = w.takeLocked(p, watchData, watchExist)
	case jute.EventNodeChildrenChanged:
		hit = w.takeLocked(p, watchChild)
	case jute.EventNodeDeleted:
		hit = w.takeLocked(p, watchData, watchExist, watchChild)
	}
	if w.paths[watchPersistent][p] {
		hit = true
	}
	if ev.Type != jute.EventNodeChildrenChanged {
		for q := p; ; q = parentPath(q) {
			if w.paths[watchRecursive][q] {
				hit = true
				break
			}
			if q == "/" {
				break
			}
		}
	}
	return hit
}

// remove deletes the watches of wtype (jute.WatcherType*) on path and returns
// the removal events to report, one per kind of watch removed, in the order
// child, data, persistent. It returns nil when no such watch exists (the
// shell reports NoWatcher). With dryRun the set is left unchanged.
func (w *watchSet) remove(path string, wtype int32, dryRun bool) []int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	has := func(kinds ...watchKind) bool {
		for _, k := range kinds {
			if w.paths[k][path] {
				return true
			}
		}
		return false
	}
	var evs []int32
	var kinds []watchKind
	if (wtype == jute.WatcherTypeChildren || wtype == jute.WatcherTypeAny) && has(watchChild) {
		evs = append(evs, jute.EventChildWatchRemoved)
		kinds = append(kinds, watchChild)
	}
	if (wtype == jute.WatcherTypeData || wtype == jute.WatcherTypeAny) && has(watchData, watchExist) {
		evs = append(evs, jute.EventDataWatchRemoved)
		kinds = append(kinds, watchData, watchExist)
	}
	if wtype == jute.WatcherTypeAny && has(watchPersistent, watchRecursive) {
		evs = append(evs, jute.EventPersistentWatchRemoved)
		kinds = append(kinds, watchPersistent, watchRecursive)
	}
	if !dryRun {
		w.takeLocked(path, kinds...)
	}
	return evs
}

// setWatches returns the request that re-registers every watch after a
// reconnect, or nil if there is none.
func (w *watchSet) setWatches(relativeZxid int64) *jute.SetWatches2 {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := func(k watchKind) []string {
		out := make([]string, 0, len(w.paths[k]))
		for p := range w.paths[k] {
			out = append(out, p)
		}
		sort.Strings(out)
		return out
	}
	req := &jute.SetWatches2{
		RelativeZxid:               relativeZxid,
		DataWatches:                list(watchData),
		ExistWatches:               list(watchExist),
		ChildWatches:               list(watchChild),
		PersistentWatches:          list(watchPersistent),
		PersistentRecursiveWatches: list(watchRecursive),
	}
	n := len(req.DataWatches) + len(req.ExistWatches) + len(req.ChildWatches) +
		len(req.PersistentWatches) + len(req.PersistentRecursiveWatches)
	if n == 0 {
		return nil
	}
	return req
}

// parentPath returns the parent of a znode path ("/" for top-level nodes and
// for "/" itself).
func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
