package server

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkd/zkd/server/lockview"
)

// LockInfo is one lock path of the lock view: its holders and waiters in
// queue order (see package lockview for the recipes and the rules).
type LockInfo = lockview.Lock

// LockNode is one contender of a lock path, with its fencing token.
type LockNode = lockview.Node

// Locks returns the lock view: every lock path at or under prefix ("" or
// "/" for all), sorted by path. A lock path is a znode with sequential
// ephemeral children named as Curator's, Kazoo's or go-zk's lock recipes
// name them (see lockview.ParseName); other children are ignored. It reads this
// member's applied tree, so it is as fresh as this member's reads. It is
// safe for concurrent use and costs one pass over the tree's ephemerals.
func (s *Server) Locks(prefix string) []LockInfo {
	t := s.b.Tree()
	if t == nil {
		return nil
	}
	now := time.Now().UnixMilli()
	locks := lockview.Build(t.EphemeralsByParent(prefix, lockview.IsLockName), s.sessionRemote, now)
	lockview.MarkTombstones(locks, t.Tombstones(), now)
	return locks
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
	lockTombstonesDesc = prometheus.NewDesc("lock_tombstones",
		"Lock nodes of expired sessions kept for the lock delay (zkd.lockDelayMs), not yet removed.", nil, nil)
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
	// The first sample (which only learns the holders) is taken here, so
	// a lock handed over right after the collector starts is counted.
	lc.lt.sample(s.Locks(""), time.Now().UnixMilli())
	s.goAttach(func() {
		tick := time.NewTicker(lockSampleInterval)
		defer tick.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-tick.C:
			}
			lc.lt.sample(s.Locks(""), time.Now().UnixMilli())
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
	ch <- lockTombstonesDesc
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
	if t := lc.s.b.Tree(); t != nil {
		ch <- prometheus.MustNewConstMetric(lockTombstonesDesc, prometheus.GaugeValue, float64(len(t.Tombstones())))
	}
	n, sum := lc.lt.snapshot()
	ch <- prometheus.MustNewConstSummary(lockWaitDesc, n, sum, nil)
}
