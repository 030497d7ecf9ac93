package coalesce

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestEveryCallerGetsALaterRound: each caller's outcome comes from a round
// that started after it called (the round records the time it started),
// and a burst of callers shares far fewer rounds than there are callers.
func TestEveryCallerGetsALaterRound(t *testing.T) {
	var rounds atomic.Int64
	c := New(func() (time.Time, error) {
		rounds.Add(1)
		start := time.Now()
		time.Sleep(time.Millisecond) // a round trip takes a while
		return start, nil
	})
	const callers = 2000
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			called := time.Now()
			started, err := c.Do(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			if started.Before(called) {
				t.Errorf("a caller that called at %v got a round started at %v, before it", called, started)
			}
		}()
	}
	wg.Wait()
	if n := rounds.Load(); n >= callers/2 {
		t.Errorf("%d callers ran %d rounds: they did not share them", callers, n)
	}
}

// TestErrorsAndContext: a round's error reaches each of its callers, and a
// caller whose context ends stops waiting while the round goes on.
func TestErrorsAndContext(t *testing.T) {
	boom := errors.New("boom")
	release := make(chan struct{})
	c := New(func() (int, error) {
		<-release
		return 0, boom
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Do(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with an ended context = %v, want context.Canceled", err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Do(context.Background())
		errc <- err
	}()
	close(release)
	if err := <-errc; !errors.Is(err, boom) {
		t.Fatalf("Do = %v, want the round's error", err)
	}
}
