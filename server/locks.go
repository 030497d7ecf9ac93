package server

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkd/zkd/datatree"
)

// Lock modes of one lock node, by the recipe's naming.
const (
	LockExclusive = "exclusive" // Curator/go-zk "lock-", Kazoo "__lock__"
	LockRead      = "read"      // Curator "__READ__" or "-read-", Kazoo "__rlock__"
	LockWrite     = "write"     // Curator "__WRIT__" or "-write-", Kazoo "__wlock__"
	LockLease     = "lease"     // Curator semaphore "-lease-"
)

// Kinds of lock path.
const (
	KindMutex     = "mutex"     // only exclusive nodes: the lowest sequence holds
	KindRWLock    = "rwlock"    // read and write nodes
	KindSemaphore = "semaphore" // lease nodes: every lease is shown as held
)

// LockNode is one contender of a lock: a sequential ephemeral child of the
// lock path.
type LockNode struct {
	// Name is the child's name, e.g. "_c_1b2…-lock-0000000003".
	Name string `json:"name"`
	// Mode is LockExclusive, LockRead, LockWrite or LockLease.
	Mode string `json:"mode"`
	// SessionID owns the node; Session is the same in hex, as logs print it.
	SessionID int64  `json:"session_id"`
	Session   string `json:"session"`
	// Client is the remote address of the session's connection when it is
	// connected to this member, else "remote".
	Client string `json:"client"`
	// Czxid and Sequence together are the fencing token: both only grow
	// for later contenders of the same lock path.
	Czxid    int64 `json:"czxid"`
	Sequence int64 `json:"sequence"`
	// Ctime is the node's creation time, ms since the epoch (leader clock).
	Ctime int64 `json:"ctime"`
	// AgeMs is now − Ctime: for a holder, how long it has held the lock
	// (at most: it held since its predecessor left), for a waiter how long
	// it has waited.
	AgeMs int64 `json:"age_ms"`
}

// LockInfo is one lock path: its holders (one for a mutex; for a
// read/write lock the leading readers, or the leading writer) and its
// waiters, in the order they will get the lock.
type LockInfo struct {
	Path    string     `json:"path"`
	Kind    string     `json:"kind"`
	Holders []LockNode `json:"holders"`
	Waiters []LockNode `json:"waiters"`
}

// parseLockName reads a lock recipe's child name: a prefix naming the mode
// and a 10-digit sequence suffix. It knows Curator's InterProcessMutex
// ("[_c_<uuid>-]lock-"), InterProcessReadWriteLock ("…__READ__",
// "…__WRIT__"), semaphore leases ("…-lease-"), Kazoo's Lock, ReadLock and
// WriteLock ("<uuid>__lock__", "__rlock__", "__wlock__"), go-zk's Lock
// ("lock-" or "_c_<guid>-lock-") and the generic "-read-"/"-write-".
func parseLockName(name string) (mode string, seq int64, ok bool) {
	if len(name) <= 10 {
		return "", 0, false
	}
	prefix, digits := name[:len(name)-10], name[len(name)-10:]
	seq, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || seq < 0 || digits[0] == '-' || digits[0] == '+' {
		return "", 0, false
	}
	has := func(s string) bool { return prefix == strings.TrimPrefix(s, "-") || strings.HasSuffix(prefix, s) }
	switch {
	case strings.HasSuffix(prefix, "__lock__"), has("-lock-"):
		return LockExclusive, seq, true
	case strings.HasSuffix(prefix, "__rlock__"), strings.HasSuffix(prefix, "__READ__"), has("-read-"):
		return LockRead, seq, true
	case strings.HasSuffix(prefix, "__wlock__"), strings.HasSuffix(prefix, "__WRIT__"), has("-write-"):
		return LockWrite, seq, true
	case has("-lease-"):
		return LockLease, seq, true
	}
	return "", 0, false
}

// lockView turns the tree's ephemerals grouped by parent into lock paths.
// client maps a session to its connection's address ("" when it is not
// connected here); now is ms since the epoch.
func lockView(groups []datatree.EphemeralGroup, client func(int64) string, now int64) []LockInfo {
	var out []LockInfo
	for _, g := range groups {
		var nodes []LockNode
		kind := KindMutex
		for _, c := range g.Children {
			mode, seq, ok := parseLockName(c.Name)
			if !ok {
				continue
			}
			switch mode {
			case LockRead, LockWrite:
				kind = KindRWLock
			case LockLease:
				if kind == KindMutex {
					kind = KindSemaphore
				}
			}
			addr := client(c.Stat.EphemeralOwner)
			if addr == "" {
				addr = "remote"
			}
			nodes = append(nodes, LockNode{
				Name: c.Name, Mode: mode,
				SessionID: c.Stat.EphemeralOwner, Session: hexID(c.Stat.EphemeralOwner), Client: addr,
				Czxid: c.Stat.Czxid, Sequence: seq, Ctime: c.Stat.Ctime, AgeMs: max(0, now-c.Stat.Ctime),
			})
		}
		if len(nodes) == 0 {
			continue
		}
		// Sequence order is queue order: the recipes' prefixes differ per
		// client, so names do not sort by it.
		slices.SortFunc(nodes, func(a, b LockNode) int {
			return cmp.Or(cmp.Compare(a.Sequence, b.Sequence), cmp.Compare(a.Czxid, b.Czxid))
		})
		held := holders(kind, nodes)
		out = append(out, LockInfo{Path: g.Parent, Kind: kind, Holders: nodes[:held:held], Waiters: append([]LockNode{}, nodes[held:]...)})
	}
	return out
}

// holders returns how many of the queue's first nodes hold the lock:
// every lease of a semaphore (the server does not know the number of
// leases); for a read/write lock the readers before the first writer, or
// the first writer alone; otherwise the lowest sequence.
func holders(kind string, nodes []LockNode) int {
	switch kind {
	case KindSemaphore:
		return len(nodes)
	case KindRWLock:
		if nodes[0].Mode != LockRead {
			return 1
		}
		n := 0
		for n < len(nodes) && nodes[n].Mode == LockRead {
			n++
		}
		return n
	}
	return 1
}

// Locks returns the lock view: every lock path at or under prefix ("" or
// "/" for all), sorted by path. A lock path is a znode with sequential
// ephemeral children named as Curator's, Kazoo's or go-zk's lock recipes
// name them (see parseLockName); other children are ignored. It reads this
// member's applied tree, so it is as fresh as this member's reads. It is
// safe for concurrent use and costs one pass over the tree's ephemerals.
func (s *Server) Locks(prefix string) []LockInfo {
	t := s.b.Tree()
	if t == nil {
		return nil
	}
	return lockView(t.EphemeralsByParent(prefix), s.sessionRemote, time.Now().UnixMilli())
}

// sessionRemote returns the remote address of session id's connection on
// this server, or "" if it has none.
func (s *Server) sessionRemote(id int64) string {
	s.mu.Lock()
	c := s.mu.sessions[id]
	s.mu.Unlock()
	if c == nil {
		return ""
	}
	return strings.TrimPrefix(c.remote, "/")
}

// adminLocks is the locks admin command: {"locks": [...]} filtered by the
// path query parameter.
func (s *Server) adminLocks(path string) []field {
	locks := s.Locks(path)
	if locks == nil {
		locks = []LockInfo{}
	}
	return []field{{"locks", locks}}
}

// Lock metrics. A gauge per lock path would be one series per lock ever
// used (lock paths are often per-resource and unbounded), so queue lengths
// are exported as the number of lock paths, the total of waiters and the
// longest queues only (lockTopN, labelled by path). Wait times are a
// summary fed by lockTracker.
const (
	lockTopN           = 10
	lockSampleInterval = time.Second
)

var (
	lockPathsDesc   = prometheus.NewDesc("lock_paths", "Lock paths with at least one contender (lock view).", nil, nil)
	lockWaitersDesc = prometheus.NewDesc("lock_waiters", "Contenders waiting for a lock, over every lock path.", nil, nil)
	lockQueueDesc   = prometheus.NewDesc("lock_queue_length",
		"Holders plus waiters of the lock paths with the longest queues (top 10).", []string{"path"}, nil)
	lockWaitDesc = prometheus.NewDesc("lock_wait_time_ms",
		"Time from a contender's node creation until it was seen holding the lock, in ms (sampled every second).", nil, nil)
)

// lockTracker measures lock wait times. The server sees no "acquired"
// event: a contender holds the lock as soon as its predecessor's node is
// deleted. So the tracker samples the lock view every lockSampleInterval
// and, for each node seen holding that was not holding at the previous
// sample, records now − ctime. The figure is thus late by at most one
// interval, and a contender that acquires and releases between two
// samples is not counted. Sampling costs one pass over the ephemerals per
// interval and keeps nothing on the apply path.
type lockTracker struct {
	mu struct {
		sync.Mutex
		holding map[string]struct{} // "path/name" of the holders at the last sample
		count   uint64
		sum     float64
	}
}

// sample takes one look at locks at time now (ms) and records the waits of
// new holders. The first sample only learns the holders.
func (lt *lockTracker) sample(locks []LockInfo, now int64) {
	next := map[string]struct{}{}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	first := lt.mu.holding == nil
	for _, l := range locks {
		for _, h := range l.Holders {
			key := l.Path + "/" + h.Name
			next[key] = struct{}{}
			if _, ok := lt.mu.holding[key]; !ok && !first {
				lt.mu.count++
				lt.mu.sum += float64(max(0, now-h.Ctime))
			}
		}
	}
	lt.mu.holding = next
}

// snapshot returns the count and sum of the recorded waits.
func (lt *lockTracker) snapshot() (uint64, float64) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.mu.count, lt.mu.sum
}

// lockCollector exports the lock metrics and runs the wait-time sampler.
type lockCollector struct {
	s  *Server
	lt lockTracker
}

// newLockCollector starts the sampler on the server's goroutine group; it
// stops when the server closes.
func newLockCollector(s *Server) *lockCollector {
	lc := &lockCollector{s: s}
	s.goAttach(func() {
		tick := time.NewTicker(lockSampleInterval)
		defer tick.Stop()
		for {
			lc.lt.sample(s.Locks(""), time.Now().UnixMilli())
			select {
			case <-s.quit:
				return
			case <-tick.C:
			}
		}
	})
	return lc
}

// Describe implements prometheus.Collector.
func (lc *lockCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lockPathsDesc
	ch <- lockWaitersDesc
	ch <- lockQueueDesc
	ch <- lockWaitDesc
}

// Collect implements prometheus.Collector.
func (lc *lockCollector) Collect(ch chan<- prometheus.Metric) {
	locks := lc.s.Locks("")
	waiters := 0
	for _, l := range locks {
		waiters += len(l.Waiters)
	}
	ch <- prometheus.MustNewConstMetric(lockPathsDesc, prometheus.GaugeValue, float64(len(locks)))
	ch <- prometheus.MustNewConstMetric(lockWaitersDesc, prometheus.GaugeValue, float64(waiters))
	qlen := func(l LockInfo) int { return len(l.Holders) + len(l.Waiters) }
	slices.SortStableFunc(locks, func(a, b LockInfo) int { return cmp.Compare(qlen(b), qlen(a)) })
	for _, l := range locks[:min(lockTopN, len(locks))] {
		ch <- prometheus.MustNewConstMetric(lockQueueDesc, prometheus.GaugeValue, float64(qlen(l)), l.Path)
	}
	n, sum := lc.lt.snapshot()
	ch <- prometheus.MustNewConstSummary(lockWaitDesc, n, sum, nil)
}
