package store

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
)

// TestConcurrentAppendReadTrim appends from one goroutine (as raft does)
// while readers fetch LastIndex's entry and a trimmer deletes old
// prefixes. The cached bounds must never name an entry that cannot be read:
// LastIndex moves only after the commit, and first <= last always.
func TestConcurrentAppendReadTrim(t *testing.T) {
	s, _ := openTest(t, true)
	const total = 3000
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for i := uint64(1); i <= total; i += 10 {
			if err := s.StoreLogs(logRange(i, i+9)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				last, _ := s.LastIndex()
				if last == 0 {
					continue
				}
				var l raft.Log
				if err := s.GetLog(last, &l); err != nil || l.Index != last {
					t.Errorf("GetLog(LastIndex=%d) = %+v, %v", last, l, err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			first, _ := s.FirstIndex()
			last, _ := s.LastIndex()
			if last > first+200 {
				if err := s.DeleteRange(0, last-100); err != nil {
					t.Error(err)
					return
				}
			}
			first, _ = s.FirstIndex()
			last, _ = s.LastIndex()
			if first > last {
				t.Errorf("first %d > last %d", first, last)
				return
			}
		}
	}()
	wg.Wait()
	if last, _ := s.LastIndex(); last != total {
		t.Fatalf("LastIndex = %d, want %d", last, total)
	}
	first, _ := s.FirstIndex()
	got, err := s.seekFirstLog(0)
	if err != nil || got != first {
		t.Fatalf("cached first %d, stored first %d (%v)", first, got, err)
	}
}
