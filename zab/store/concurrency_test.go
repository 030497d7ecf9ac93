package store

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
)

// TestConcurrentAppendReadTrim appends from one goroutine (as raft does)
// while readers fetch LastIndex's entry and a trimmer deletes old
// prefixes. The cached bounds must never name an entry that cannot be read:
// LastIndex moves only after the commit, and first <= last always. An
// entry may vanish between LastIndex and GetLog only if the trimmer had
// already chosen to delete it.
func TestConcurrentAppendReadTrim(t *testing.T) {
	s, _ := openTest(t, true)
	const total = 3000
	var done atomic.Bool
	// trimmedTo is raised before each DeleteRange: a reader descheduled
	// between LastIndex and GetLog may find its entry trimmed since, which
	// is only correct if the trimmer had already decided to delete it.
	var trimmedTo atomic.Uint64
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
				err := s.GetLog(last, &l)
				if errors.Is(err, raft.ErrLogNotFound) && last <= trimmedTo.Load() {
					continue
				}
				if err != nil || l.Index != last {
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
				trimmedTo.Store(last - 100)
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
