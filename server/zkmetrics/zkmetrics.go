package zkmetrics

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// window is how many recent observations a detailed summary keeps for its
// percentiles (the size of the reservoir ZooKeeper's percentile counter
// samples from).
const window = 1028

// Counter is a count that only goes up, ZooKeeper's Counter.
type Counter struct {
	n atomic.Int64
}

// Add adds delta, which must not be negative.
func (c *Counter) Add(delta int64) { c.n.Add(delta) }

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// Get returns the count.
func (c *Counter) Get() int64 { return c.n.Load() }

// Summary tracks observations as ZooKeeper's AvgMinMaxCounter does, and
// when detailed as its AvgMinMaxPercentileCounter: mntr then adds the
// percentiles of the last 1028 observations. Every summary keeps that
// window, for the median ZooKeeper's Prometheus provider exports even for
// a basic one.
//
// Observe takes no lock: summaries sit on the request path of every
// connection, where a shared mutex made goroutines queue on each other
// (on two cores a pipeline stage's summary behind a mutex cost a third of
// the get throughput). A Snapshot taken while observations land may see
// one counted and its value not yet in the sum or the window; figures
// settle with the next scrape.
type Summary struct {
	detailed bool
	count    atomic.Int64
	sum      atomic.Int64
	min, max atomic.Int64 // emptyMin / emptyMax while empty
	ring     *[window]atomic.Int64
}

const (
	emptyMin = math.MaxInt64
	emptyMax = math.MinInt64
)

func newSummary(detailed bool) *Summary {
	s := &Summary{detailed: detailed, ring: new([window]atomic.Int64)}
	s.min.Store(emptyMin)
	s.max.Store(emptyMax)
	return s
}

// Observe records one value (a duration in ms, a size, a count).
func (s *Summary) Observe(v int64) {
	i := s.count.Add(1) - 1
	s.sum.Add(v)
	s.ring[i%window].Store(v)
	for cur := s.min.Load(); v < cur && !s.min.CompareAndSwap(cur, v); cur = s.min.Load() {
	}
	for cur := s.max.Load(); v > cur && !s.max.CompareAndSwap(cur, v); cur = s.max.Load() {
	}
}

// ObserveSince records the milliseconds elapsed since start.
func (s *Summary) ObserveSince(start time.Time) { s.Observe(time.Since(start).Milliseconds()) }

// Reset forgets every observation (srst, crst).
func (s *Summary) Reset() {
	s.count.Store(0)
	s.sum.Store(0)
	s.min.Store(emptyMin)
	s.max.Store(emptyMax)
}

// Snapshot is a Summary's figures at one moment.
type Snapshot struct {
	Min, Max, Sum, Count int64
	// Quantiles holds, for a detailed summary, the values at quantiles
	// 0.5, 0.95, 0.99 and 0.999 of the recent window, in that order.
	Quantiles []float64
}

// Avg is Sum/Count, or 0 with no observation.
func (sn Snapshot) Avg() float64 {
	if sn.Count == 0 {
		return 0
	}
	return float64(sn.Sum) / float64(sn.Count)
}

// quantiles are the ones mntr prints (p50, p95, p99, p999).
var quantiles = []float64{0.5, 0.95, 0.99, 0.999}

// Snapshot returns the current figures.
func (s *Summary) Snapshot() Snapshot {
	sn := Snapshot{Count: s.count.Load(), Sum: s.sum.Load()}
	if lo, hi := s.min.Load(), s.max.Load(); sn.Count > 0 && lo != emptyMin && hi != emptyMax {
		sn.Min, sn.Max = lo, hi
	}
	if !s.detailed {
		return sn
	}
	vals := s.window()
	sn.Quantiles = make([]float64, len(quantiles))
	for i, q := range quantiles {
		if len(vals) > 0 {
			sn.Quantiles[i] = float64(vals[nearestRank(q, len(vals))])
		}
	}
	return sn
}

// nearestRank is the index of quantile q among n sorted values.
func nearestRank(q float64, n int) int {
	i := int(math.Ceil(q*float64(n))) - 1
	return min(max(i, 0), n-1)
}

// SummarySet is a Summary per key, ZooKeeper's SummarySet (for instance
// write_per_namespace, keyed by a path's first component).
type SummarySet struct {
	detailed bool
	mu       struct {
		sync.Mutex
		byKey map[string]*Summary
	}
}

// Observe records v under key.
func (ss *SummarySet) Observe(key string, v int64) {
	ss.mu.Lock()
	s, ok := ss.mu.byKey[key]
	if !ok {
		if ss.mu.byKey == nil {
			ss.mu.byKey = map[string]*Summary{}
		}
		s = newSummary(ss.detailed)
		ss.mu.byKey[key] = s
	}
	ss.mu.Unlock()
	s.Observe(v)
}

// keys returns the keys seen so far, sorted.
func (ss *SummarySet) keys() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]string, 0, len(ss.mu.byKey))
	for k := range ss.mu.byKey {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (ss *SummarySet) get(key string) *Summary {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.mu.byKey[key]
}

// Reset forgets every key.
func (ss *SummarySet) Reset() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.mu.byKey = nil
}

// Kind is a metric's type, as ZooKeeper's metrics API names it.
type Kind int

const (
	// KindGauge is a value read at scrape time.
	KindGauge Kind = iota
	// KindCounter is a Counter.
	KindCounter
	// KindSummary is a Summary.
	KindSummary
	// KindSummarySet is a SummarySet.
	KindSummarySet
	// KindInfo is an mntr-only line whose value is text (zk_version,
	// zk_server_state, zk_peer_state); Prometheus does not get it, as
	// ZooKeeper's provider does not.
	KindInfo
)

// entry is one registered metric.
type entry struct {
	name  string
	help  string
	kind  Kind
	gauge func() (float64, bool) // KindGauge; false: not reported now
	isInt bool                   // KindGauge: print as an integer in mntr
	info  func() (string, bool)  // KindInfo
	c     *Counter
	cf    func() int64 // KindCounter kept elsewhere
	s     *Summary
	ss    *SummarySet
	desc  *prometheus.Desc
}

// Registry holds metrics in registration order. Register everything
// before the first Lines or Collect.
type Registry struct {
	entries []*entry
	names   map[string]bool
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{names: map[string]bool{}} }

func (r *Registry) add(e *entry) {
	if r.names[e.name] {
		panic(fmt.Sprintf("zkmetrics: %s registered twice", e.name))
	}
	r.names[e.name] = true
	switch e.kind {
	case KindSummarySet:
		e.desc = prometheus.NewDesc(e.name, e.help, []string{"key"}, nil)
	case KindInfo:
	default:
		e.desc = prometheus.NewDesc(e.name, e.help, nil, nil)
	}
	r.entries = append(r.entries, e)
}

// Counter registers and returns a counter.
func (r *Registry) Counter(name, help string) *Counter {
	c := &Counter{}
	r.add(&entry{name: name, help: help, kind: KindCounter, c: c})
	return c
}

// CounterFunc registers a counter kept elsewhere, read by f at each
// scrape.
func (r *Registry) CounterFunc(name, help string, f func() int64) {
	r.add(&entry{name: name, help: help, kind: KindCounter, cf: f})
}

// Summary registers and returns a summary; detailed adds percentiles.
func (r *Registry) Summary(name, help string, detailed bool) *Summary {
	s := newSummary(detailed)
	r.add(&entry{name: name, help: help, kind: KindSummary, s: s})
	return s
}

// SummarySet registers and returns a summary set; detailed adds
// percentiles.
func (r *Registry) SummarySet(name, help string, detailed bool) *SummarySet {
	ss := &SummarySet{detailed: detailed}
	r.add(&entry{name: name, help: help, kind: KindSummarySet, ss: ss})
	return ss
}

// Gauge registers a gauge read by f at each scrape; f returns false when
// the figure does not apply now (a leader-only key on a follower), and the
// key is then left out, as ZooKeeper leaves it out. isInt prints the value
// as an integer in mntr (ZooKeeper prints longs and doubles differently).
func (r *Registry) Gauge(name, help string, isInt bool, f func() (float64, bool)) {
	r.add(&entry{name: name, help: help, kind: KindGauge, gauge: f, isInt: isInt})
}

// Info registers an mntr-only text line.
func (r *Registry) Info(name string, f func() (string, bool)) {
	r.add(&entry{name: name, kind: KindInfo, info: f})
}

// Line is one mntr line: the key with its zk_ prefix, and the value.
type Line struct {
	Key, Value string
}

// Lines renders mntr's lines, as ZooKeeper's default metrics provider
// prints them: a summary as zk_avg_/min_/max_/cnt_/sum_<name> (then
// zk_p50_/p95_/p99_/p999_<name> when detailed), a set member as
// zk_<prefix>_<key>_<name>.
// Lines come in ZooKeeper's order of kinds: the text lines, gauges,
// counters, summaries, then summary sets; within a kind in registration
// order.
func (r *Registry) Lines() []Line {
	var out []Line
	for _, e := range r.ordered() {
		switch e.kind {
		case KindInfo:
			if v, ok := e.info(); ok {
				out = append(out, Line{"zk_" + e.name, v})
			}
		case KindGauge:
			if v, ok := e.gauge(); ok {
				out = append(out, Line{"zk_" + e.name, formatGauge(v, e.isInt)})
			}
		case KindCounter:
			out = append(out, Line{"zk_" + e.name, strconv.FormatInt(e.count(), 10)})
		case KindSummary:
			out = appendSummary(out, "", e.name, e.s.Snapshot(), e.s.detailed)
		case KindSummarySet:
			for _, k := range e.ss.keys() {
				out = appendSummary(out, k+"_", e.name, e.ss.get(k).Snapshot(), e.ss.detailed)
			}
		}
	}
	return out
}

// ordered returns the entries sorted by kind, stably.
func (r *Registry) ordered() []*entry {
	rank := map[Kind]int{KindInfo: 0, KindGauge: 1, KindCounter: 2, KindSummary: 3, KindSummarySet: 4}
	out := append([]*entry(nil), r.entries...)
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].kind] < rank[out[j].kind] })
	return out
}

func (e *entry) count() int64 {
	if e.cf != nil {
		return e.cf()
	}
	return e.c.Get()
}

// Names returns every registered metric's name, in registration order,
// with its kind.
func (r *Registry) Names() map[string]Kind {
	out := make(map[string]Kind, len(r.entries))
	for _, e := range r.entries {
		out[e.name] = e.kind
	}
	return out
}

// Reset clears every Counter, Summary and SummarySet the registry owns
// (srst); counters and gauges kept elsewhere are their owners' to reset.
func (r *Registry) Reset() {
	for _, e := range r.entries {
		switch {
		case e.c != nil:
			e.c.n.Store(0)
		case e.s != nil:
			e.s.Reset()
		case e.ss != nil:
			e.ss.Reset()
		}
	}
}

func appendSummary(out []Line, key, name string, sn Snapshot, detailed bool) []Line {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	out = append(out,
		Line{"zk_avg_" + key + name, javaDouble(round4(sn.Avg()))},
		Line{"zk_min_" + key + name, i(sn.Min)},
		Line{"zk_max_" + key + name, i(sn.Max)},
		Line{"zk_cnt_" + key + name, i(sn.Count)},
		Line{"zk_sum_" + key + name, i(sn.Sum)},
	)
	if detailed {
		for j, p := range []string{"p50", "p95", "p99", "p999"} {
			out = append(out, Line{"zk_" + p + "_" + key + name, i(int64(sn.Quantiles[j]))})
		}
	}
	return out
}

// round4 rounds to 4 decimals, as ZooKeeper's averages are.
func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// javaDouble formats v as Java's Double.toString does for the values mntr
// prints: always with a fractional part ("0.0", "2.5").
func javaDouble(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !containsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

func containsAny(s, chars string) bool {
	for _, r := range s {
		for _, c := range chars {
			if r == c {
				return true
			}
		}
	}
	return false
}

func formatGauge(v float64, isInt bool) string {
	if isInt {
		return strconv.FormatInt(int64(v), 10)
	}
	return javaDouble(v)
}

// Describe implements prometheus.Collector.
func (r *Registry) Describe(ch chan<- *prometheus.Desc) {
	for _, e := range r.entries {
		if e.desc != nil {
			ch <- e.desc
		}
	}
}

// promQuantiles are the quantiles ZooKeeper's Prometheus provider exports
// for a detailed summary; a basic one exports the median only.
var promQuantiles = []float64{0.5, 0.9, 0.99}

// Collect implements prometheus.Collector.
func (r *Registry) Collect(ch chan<- prometheus.Metric) {
	for _, e := range r.entries {
		switch e.kind {
		case KindGauge:
			if v, ok := e.gauge(); ok {
				ch <- prometheus.MustNewConstMetric(e.desc, prometheus.GaugeValue, v)
			}
		case KindCounter:
			ch <- prometheus.MustNewConstMetric(e.desc, prometheus.CounterValue, float64(e.count()))
		case KindSummary:
			ch <- promSummary(e.desc, e.s)
		case KindSummarySet:
			for _, k := range e.ss.keys() {
				ch <- promSummary(e.desc, e.ss.get(k), k)
			}
		}
	}
}

func promSummary(desc *prometheus.Desc, s *Summary, labels ...string) prometheus.Metric {
	sn := s.Snapshot()
	qs := []float64{0.5}
	if s.detailed {
		qs = promQuantiles
	}
	vals := s.window()
	q := make(map[float64]float64, len(qs))
	for _, p := range qs {
		if len(vals) == 0 {
			q[p] = math.NaN()
			continue
		}
		q[p] = float64(vals[nearestRank(p, len(vals))])
	}
	return prometheus.MustNewConstSummary(desc, uint64(sn.Count), float64(sn.Sum), q, labels...)
}

// window returns the recent window, sorted.
func (s *Summary) window() []int64 {
	n := min(s.count.Load(), window)
	vals := make([]int64, n)
	for i := range vals {
		vals[i] = s.ring[i].Load()
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	return vals
}
