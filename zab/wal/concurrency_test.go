package wal

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
)

// TestConcurrentGetLog runs readers against a writer that appends across
// tiny segments, compacts the front, truncates the tail and rewrites it in
// a new term, and empties the log. Every entry a reader gets must be whole
// and be the one at its index (its data names its index and term); an
// entry deleted under it may only be raft.ErrLogNotFound. Run with -race.
func TestConcurrentGetLog(t *testing.T) {
	opts := Options{Dir: t.TempDir(), NoSync: true, SegmentSize: MinSegmentSize}
	l := openLog(t, opts)
	term, next := uint64(1), uint64(31)
	store(t, l, 1, next-1, term, 10)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var reads, found sync.Map // reader -> count, for the log
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, hits := 0, 0
			defer func() { reads.Store(r, n); found.Store(r, hits) }()
			for {
				select {
				case <-done:
					return
				default:
				}
				n++
				first, err1 := l.FirstIndex()
				last, err2 := l.LastIndex()
				if err1 != nil || err2 != nil {
					t.Errorf("bounds: %v, %v", err1, err2)
					return
				}
				if last == 0 || last < first {
					continue
				}
				idx := first + rand.Uint64N(last-first+1)
				var e raft.Log
				err := l.GetLog(idx, &e)
				if errors.Is(err, raft.ErrLogNotFound) {
					continue
				}
				if err != nil {
					t.Errorf("GetLog(%d): %v", idx, err)
					return
				}
				if e.Index != idx || !bytes.Equal(e.Data, entryData(idx, e.Term)) {
					t.Errorf("GetLog(%d) = index %d term %d data %q", idx, e.Index, e.Term, e.Data)
					return
				}
				hits++
				if n%64 == 0 {
					_ = l.Metrics()
				}
			}
		}()
	}

	for round := range 300 {
		batch := uint64(1 + round%6)
		if err := l.StoreLogs(logRange(next, next+batch-1, term)); err != nil {
			t.Fatal(err)
		}
		next += batch
		first, _ := l.FirstIndex()
		last, _ := l.LastIndex()
		switch {
		case round == 200:
			// As after a snapshot install: empty, then any next index.
			if err := l.DeleteRange(first, last); err != nil {
				t.Fatal(err)
			}
			next += 1000
		case round%25 == 24 && last-20 >= first:
			if err := l.DeleteRange(first, last-20); err != nil {
				t.Fatal(err)
			}
		case round%40 == 39 && last-5 > first:
			if err := l.DeleteRange(last-5, last); err != nil {
				t.Fatal(err)
			}
			term++
			next = last - 5
		}
	}
	close(done)
	wg.Wait()
	total, hits := 0, 0
	reads.Range(func(_, v any) bool { total += v.(int); return true })
	found.Range(func(_, v any) bool { hits += v.(int); return true })
	t.Logf("%d reads, %d entries found", total, hits)

	first, _ := l.FirstIndex()
	last, _ := l.LastIndex()
	for i := first; i <= last; i++ {
		var e raft.Log
		if err := l.GetLog(i, &e); err != nil || !bytes.Equal(e.Data, entryData(i, e.Term)) {
			t.Fatalf("GetLog(%d) = %v, %q", i, err, e.Data)
		}
	}
	l = reopen(t, l, opts)
	if last2, _ := l.LastIndex(); last2 != last {
		t.Fatalf("after reopen last index %d, want %d", last2, last)
	}
}
