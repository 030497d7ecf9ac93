package quorum

import (
	"testing"
	"time"
)

// TestLostWrites: once a write of a connection was lost its later writes
// are refused; other connections and origin 0 (no connection) are not;
// the memory of a lost connection ends after lostTTL.
func TestLostWrites(t *testing.T) {
	f := &forwarder{}
	f.mu.lost = map[uint64]time.Time{}
	if f.lostWrite(7) {
		t.Fatal("nothing lost yet, connection 7 refused")
	}
	f.markLost(7)
	f.markLost(0)
	for _, tc := range []struct {
		origin uint64
		want   bool
	}{{7, true}, {8, false}, {0, false}} {
		if got := f.lostWrite(tc.origin); got != tc.want {
			t.Errorf("lostWrite(%d) = %v, want %v", tc.origin, got, tc.want)
		}
	}
	// Age the entry past lostTTL: it is forgotten at the next prune.
	f.mu.Lock()
	f.mu.lost[7] = time.Now().Add(-2 * lostTTL)
	f.mu.lastPrune = time.Time{}
	f.mu.Unlock()
	if f.lostWrite(7) {
		t.Error("connection 7 still refused after lostTTL")
	}
	if n := f.lostCount.Load(); n != 0 {
		t.Errorf("lostCount = %d after the prune, want 0", n)
	}
}
