package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// series are the plotted figures, in page order: the mntr key each is
// read from (or a computed one) and how it is shown.
var series = []struct {
	Key, Title, Unit string
}{
	{"requests_per_s", "requests/s", "/s"},
	{"p99_readlatency", "read latency p99", "ms"},
	{"p99_updatelatency", "write latency p99", "ms"},
	{"fsync_ms", "fsync time (last)", "ms"},
	{"global_sessions", "sessions", ""},
	{"znode_count", "znodes", ""},
	{"watch_count", "watches", ""},
	{"outstanding_requests", "outstanding requests", ""},
}

// sample is one point of every series, at T (ms since the epoch).
type sample struct {
	T      int64     `json:"t"`
	Values []float64 `json:"v"` // by series index; NaN never: missing is 0
}

// election is a leader election seen by the sampler: by when it ended and
// how long it took (mntr's election_time summary grew between samples).
// Count elections ended between two samples are one entry, with their
// mean duration.
type election struct {
	At         int64   `json:"at"`
	DurationMs float64 `json:"duration_ms"`
	Count      int     `json:"count"`
}

// maxElections is how many elections the Ensemble page lists.
const maxElections = 10

// sampler keeps the last n samples in a ring, and the last elections.
type sampler struct {
	src Source
	// persist, if set, is given the elections after each new one, outside
	// the lock.
	persist func([]election)
	mu      struct {
		sync.Mutex
		ring      []sample
		next      int // where the next sample goes
		full      bool
		lastPkts  float64
		lastT     time.Time
		elections []election
		electCnt  float64
		electSum  float64
	}
}

func newSampler(src Source, n int) *sampler {
	s := &sampler{src: src}
	s.mu.ring = make([]sample, max(n, 2))
	return s
}

// sample takes one point at now.
func (s *sampler) sample(now time.Time) {
	mon := monitorMap(s.src.Monitor())
	num := func(k string) float64 {
		f, _ := strconv.ParseFloat(strings.TrimSpace(mon[k]), 64)
		return f
	}
	fsync := num("avg_fsynctime")
	if rs, ok := s.src.RaftStats(); ok {
		fsync = float64(rs.LastFsyncLatency.Microseconds()) / 1000
	}
	pkts := num("packets_received")
	s.mu.Lock()
	rate := 0.0
	if !s.mu.lastT.IsZero() {
		if dt := now.Sub(s.mu.lastT).Seconds(); dt > 0 && pkts >= s.mu.lastPkts {
			rate = (pkts - s.mu.lastPkts) / dt
		}
	}
	s.mu.lastPkts, s.mu.lastT = pkts, now
	vals := make([]float64, len(series))
	for i, sr := range series {
		switch sr.Key {
		case "requests_per_s":
			vals[i] = rate
		case "fsync_ms":
			vals[i] = fsync
		default:
			vals[i] = num(sr.Key)
		}
	}
	s.mu.ring[s.mu.next] = sample{T: now.UnixMilli(), Values: vals}
	s.mu.next = (s.mu.next + 1) % len(s.mu.ring)
	s.mu.full = s.mu.full || s.mu.next == 0
	cnt, sum := num("cnt_election_time"), num("sum_election_time")
	var changed []election
	// Before the first sample, the counts start from the process's start
	// (mntr's summary is this process's): the elections since then, the
	// member's own start-up election among them, are recorded too.
	if cnt > s.mu.electCnt {
		// One or more elections since the last sample: their mean.
		s.mu.elections = append(s.mu.elections, election{At: now.UnixMilli(), DurationMs: (sum - s.mu.electSum) / (cnt - s.mu.electCnt), Count: int(cnt - s.mu.electCnt)})
		if len(s.mu.elections) > maxElections {
			s.mu.elections = s.mu.elections[1:]
		}
		changed = append([]election{}, s.mu.elections...)
	}
	s.mu.electCnt, s.mu.electSum = cnt, sum
	s.mu.Unlock()
	if changed != nil && s.persist != nil {
		s.persist(changed)
	}
}

// electionsFile is Config.ElectionsFile's content.
type electionsFile struct {
	Since     int64      `json:"since"` // when recording began, ms since the epoch
	Elections []election `json:"elections"`
}

// loadElections reads path; a missing file is no history (zero since).
func loadElections(path string) (time.Time, []election, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, nil, nil
	}
	if err != nil {
		return time.Time{}, nil, err
	}
	var f electionsFile
	if err := json.Unmarshal(b, &f); err != nil || f.Since <= 0 {
		return time.Time{}, nil, fmt.Errorf("console: %s is not an elections file: %v", path, err)
	}
	if len(f.Elections) > maxElections {
		f.Elections = f.Elections[len(f.Elections)-maxElections:]
	}
	return time.UnixMilli(f.Since), f.Elections, nil
}

// saveElections replaces path atomically (write, fsync, rename).
func saveElections(path string, since time.Time, els []election) error {
	b, err := json.Marshal(electionsFile{Since: since.UnixMilli(), Elections: els})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// points returns the samples oldest first.
func (s *sampler) points() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.mu.full {
		return append([]sample(nil), s.mu.ring[:s.mu.next]...)
	}
	out := append([]sample(nil), s.mu.ring[s.mu.next:]...)
	return append(out, s.mu.ring[:s.mu.next]...)
}

// elections returns the elections seen, oldest first.
func (s *sampler) elections() []election {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]election{}, s.mu.elections...)
}

// metricsAPI is the Metrics page: the series' names and the samples.
func (c *Console) metricsAPI(*http.Request, *identity) (any, int, error) {
	return map[string]any{
		"series":      series,
		"samples":     c.metrics.points(),
		"interval_ms": c.cfg.SampleInterval.Milliseconds(),
		"window_ms":   c.cfg.Window.Milliseconds(),
	}, 0, nil
}
