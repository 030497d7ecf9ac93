package session

import (
	"fmt"
	"math/rand"
	"reflect"
	"sync"
	"testing"
	"time"
)

var epoch = time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC)

// step is one action in a tracker scenario; at is the fake clock's offset
// from the tracker's creation, in ms.
type step struct {
	at      int64
	op      string // add, touch, remove, expire, reset, len, next
	id      int64
	timeout int32
	want    any // touch: bool; expire: []int64; len: int; next: ms offset
}

func runSteps(t *testing.T, tick int64, steps []step) {
	t.Helper()
	clk := NewFakeClock(epoch)
	tr := NewTracker(tick, clk)
	for i, s := range steps {
		clk.Set(epoch.Add(time.Duration(s.at) * time.Millisecond))
		var got any
		switch s.op {
		case "add":
			tr.Add(s.id, s.timeout)
			continue
		case "touch":
			got = tr.Touch(s.id)
		case "remove":
			tr.Remove(s.id)
			continue
		case "reset":
			tr.ResetAll()
			continue
		case "expire":
			got = tr.Expired()
			if got.([]int64) == nil {
				got = []int64{}
			}
		case "len":
			got = tr.Len()
		case "next":
			got = tr.NextExpiry().Sub(epoch).Milliseconds()
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		if !reflect.DeepEqual(got, s.want) {
			t.Fatalf("step %d (%s id=%d at=%d): got %v, want %v", i, s.op, s.id, s.at, got, s.want)
		}
	}
}

func TestTracker(t *testing.T) {
	none := []int64{}
	tests := []struct {
		name  string
		tick  int64
		steps []step
	}{
		{"expiry rounded up to the next tick", 2000, []step{
			{at: 0, op: "add", id: 1, timeout: 5000}, // 0+5000 -> 6000
			{at: 0, op: "next", want: int64(6000)},
			{at: 5999, op: "expire", want: none},
			{at: 6000, op: "expire", want: []int64{1}},
			{at: 6000, op: "len", want: 0},
			{at: 6000, op: "touch", id: 1, want: false},
		}},
		{"deadline on a boundary goes to the next", 2000, []step{
			{at: 0, op: "add", id: 1, timeout: 4000}, // 4000 is a boundary -> 6000
			{at: 4000, op: "expire", want: none},
			{at: 5999, op: "expire", want: none},
			{at: 6000, op: "expire", want: []int64{1}},
		}},
		{"touch keeps alive", 2000, []step{
			{at: 0, op: "add", id: 7, timeout: 4000},
			{at: 3000, op: "touch", id: 7, want: true}, // 7000 -> 8000
			{at: 6000, op: "expire", want: none},
			{at: 7000, op: "touch", id: 7, want: true}, // 11000 -> 12000
			{at: 8000, op: "expire", want: none},
			{at: 11999, op: "expire", want: none},
			{at: 12000, op: "expire", want: []int64{7}},
		}},
		{"touch within the same tick keeps the bucket", 2000, []step{
			{at: 100, op: "add", id: 1, timeout: 4000}, // 4100 -> 6000
			{at: 1900, op: "touch", id: 1, want: true}, // 5900 -> 6000
			{at: 1900, op: "next", want: int64(6000)},
			{at: 6000, op: "expire", want: []int64{1}},
		}},
		{"remove", 1000, []step{
			{at: 0, op: "add", id: 1, timeout: 3000},
			{at: 0, op: "add", id: 2, timeout: 3000},
			{at: 500, op: "remove", id: 1},
			{at: 500, op: "remove", id: 99}, // unknown: ignored
			{at: 500, op: "touch", id: 1, want: false},
			{at: 500, op: "len", want: 1},
			{at: 4000, op: "expire", want: []int64{2}},
		}},
		{"many expire together, sorted", 1000, []step{
			{at: 0, op: "add", id: 30, timeout: 2000},
			{at: 0, op: "add", id: -5, timeout: 2500},
			{at: 0, op: "add", id: 10, timeout: 2999},
			{at: 0, op: "add", id: 20, timeout: 10000},
			{at: 3000, op: "expire", want: []int64{-5, 10, 30}},
			{at: 3000, op: "len", want: 1},
			{at: 3000, op: "next", want: int64(11000)},
		}},
		{"late expirer collects every passed bucket", 1000, []step{
			{at: 0, op: "add", id: 1, timeout: 1000},
			{at: 0, op: "add", id: 2, timeout: 3000},
			{at: 0, op: "add", id: 3, timeout: 5000},
			{at: 4500, op: "expire", want: []int64{1, 2}},
			{at: 4500, op: "next", want: int64(6000)},
		}},
		{"re-add changes the timeout", 1000, []step{
			{at: 0, op: "add", id: 1, timeout: 10000},
			{at: 1000, op: "add", id: 1, timeout: 2000}, // 3000 -> 4000
			{at: 1000, op: "len", want: 1},
			{at: 4000, op: "expire", want: []int64{1}},
			{at: 4000, op: "expire", want: none},
		}},
		{"reset restarts every clock", 1000, []step{
			{at: 0, op: "add", id: 1, timeout: 2000},
			{at: 0, op: "add", id: 2, timeout: 4000},
			{at: 2500, op: "reset"}, // 1: 4500 -> 5000; 2: 6500 -> 7000
			{at: 3000, op: "expire", want: none},
			{at: 2500, op: "next", want: int64(5000)},
			{at: 5000, op: "expire", want: []int64{1}},
			{at: 6999, op: "expire", want: none},
			{at: 7000, op: "expire", want: []int64{2}},
		}},
		{"next with no sessions is the next tick", 2000, []step{
			{at: 0, op: "next", want: int64(2000)},
			{at: 2000, op: "next", want: int64(4000)},
			{at: 3999, op: "next", want: int64(4000)},
		}},
		{"next skips emptied buckets", 1000, []step{
			{at: 0, op: "add", id: 1, timeout: 1000},
			{at: 0, op: "add", id: 2, timeout: 5000},
			{at: 0, op: "remove", id: 1},
			{at: 0, op: "next", want: int64(6000)},
		}},
		{"expired session can be added again", 1000, []step{
			{at: 0, op: "add", id: 1, timeout: 1000},
			{at: 2000, op: "expire", want: []int64{1}},
			{at: 2000, op: "add", id: 1, timeout: 1000},
			{at: 2000, op: "touch", id: 1, want: true},
			{at: 4000, op: "expire", want: []int64{1}},
		}},
		{"tick 1 ms is exact", 1, []step{
			{at: 0, op: "add", id: 1, timeout: 10},
			{at: 10, op: "expire", want: none},
			{at: 11, op: "expire", want: []int64{1}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.tick, tc.steps) })
	}
}

func TestTrackerAccessors(t *testing.T) {
	clk := NewFakeClock(epoch)
	tr := NewTracker(0, clk) // below 1 counts as 1
	tr.Add(5, 3000)
	if to, ok := tr.Timeout(5); !ok || to != 3000 {
		t.Fatalf("Timeout = %d, %v", to, ok)
	}
	if d, ok := tr.Deadline(5); !ok || !d.Equal(epoch.Add(3001*time.Millisecond)) {
		t.Fatalf("Deadline = %v, %v", d, ok)
	}
	if _, ok := tr.Timeout(6); ok {
		t.Fatal("Timeout of unknown session ok")
	}
	if _, ok := tr.Deadline(6); ok {
		t.Fatal("Deadline of unknown session ok")
	}
}

// TestTrackerMatchesModel drives the tracker with random operations and
// compares every Expired against a direct model: a session expires when
// now >= roundUp(lastTouch + timeout).
func TestTrackerMatchesModel(t *testing.T) {
	rnd := rand.New(rand.NewSource(7))
	const tick = 500
	clk := NewFakeClock(epoch)
	tr := NewTracker(tick, clk)
	type sess struct{ timeout, deadline int64 }
	model := map[int64]sess{}
	now := int64(0)
	round := func(ms int64) int64 { return (ms/tick + 1) * tick }
	for i := 0; i < 20000; i++ {
		id := int64(rnd.Intn(200))
		switch op := rnd.Intn(10); {
		case op < 2:
			to := int64(1000 + rnd.Intn(10000))
			tr.Add(id, int32(to))
			model[id] = sess{to, round(now + to)}
		case op < 6:
			_, want := model[id]
			if got := tr.Touch(id); got != want {
				t.Fatalf("op %d: Touch(%d) = %v, want %v", i, id, got, want)
			}
			if want {
				s := model[id]
				s.deadline = round(now + s.timeout)
				model[id] = s
			}
		case op < 7:
			tr.Remove(id)
			delete(model, id)
		case op < 9:
			now += int64(rnd.Intn(700))
			clk.Set(epoch.Add(time.Duration(now) * time.Millisecond))
			var want []int64
			for id, s := range model {
				if now >= s.deadline {
					want = append(want, id)
					delete(model, id)
				}
			}
			got := tr.Expired()
			if fmt.Sprint(sorted(want)) != fmt.Sprint(got) {
				t.Fatalf("op %d at %d: Expired = %v, want %v", i, now, got, sorted(want))
			}
		default:
			if rnd.Intn(50) == 0 {
				tr.ResetAll()
				for id, s := range model {
					s.deadline = round(now + s.timeout)
					model[id] = s
				}
			}
		}
		if tr.Len() != len(model) {
			t.Fatalf("op %d: Len = %d, want %d", i, tr.Len(), len(model))
		}
	}
}

func sorted(ids []int64) []int64 {
	out := append([]int64{}, ids...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// TestTrackerConcurrent runs touchers, adders and an expirer at once (run
// with -race). Sessions that are touched continuously never expire; sessions
// nobody touches all do.
func TestTrackerConcurrent(t *testing.T) {
	clk := NewFakeClock(epoch)
	tr := NewTracker(100, clk)
	const live, idle = 100, 100
	for i := int64(0); i < live+idle; i++ {
		tr.Add(i, 1000)
	}
	var wg sync.WaitGroup
	expired := make(map[int64]bool)
	var mu sync.Mutex
	// Touchers keep sessions 0..live-1 alive; the clock only moves between
	// rounds in which every live session has been touched.
	for round := 0; round < 50; round++ {
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for id := int64(w); id < live; id += 4 {
					if !tr.Touch(id) {
						t.Errorf("live session %d unknown", id)
					}
				}
				_ = tr.Len()
				_ = tr.NextExpiry()
			}(w)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, id := range tr.Expired() {
				mu.Lock()
				expired[id] = true
				mu.Unlock()
			}
		}()
		wg.Wait()
		clk.Advance(100 * time.Millisecond)
	}
	for _, id := range tr.Expired() {
		expired[id] = true
	}
	for i := int64(0); i < live+idle; i++ {
		if want := i >= live; expired[i] != want {
			t.Fatalf("session %d expired = %v, want %v", i, expired[i], want)
		}
	}
	if tr.Len() != live {
		t.Fatalf("Len = %d, want %d", tr.Len(), live)
	}
}

func BenchmarkTrackerTouch(b *testing.B) {
	for _, n := range []int{10000} {
		for _, advance := range []bool{false, true} {
			b.Run(fmt.Sprintf("sessions=%d/clockMoves=%v", n, advance), func(b *testing.B) {
				clk := NewFakeClock(epoch)
				tr := NewTracker(2000, clk)
				for i := 0; i < n; i++ {
					tr.Add(int64(i), 30000)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if advance && i%n == 0 {
						clk.Advance(500 * time.Millisecond)
					}
					tr.Touch(int64(i % n))
				}
			})
		}
	}
	b.Run("sessions=10000/parallel=true", func(b *testing.B) {
		tr := NewTracker(2000, SystemClock{})
		for i := 0; i < 10000; i++ {
			tr.Add(int64(i), 30000)
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				tr.Touch(int64(i % 10000))
				i += 7
			}
		})
	})
}

func BenchmarkTrackerExpired(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("sessions=%d/expiring=all", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				clk := NewFakeClock(epoch)
				tr := NewTracker(2000, clk)
				for j := 0; j < n; j++ {
					tr.Add(int64(j), int32(4000+j%20000))
				}
				clk.Advance(time.Minute)
				b.StartTimer()
				if got := tr.Expired(); len(got) != n {
					b.Fatalf("expired %d", len(got))
				}
			}
		})
	}
	b.Run("sessions=10000/expiring=none", func(b *testing.B) {
		clk := NewFakeClock(epoch)
		tr := NewTracker(2000, clk)
		for j := 0; j < 10000; j++ {
			tr.Add(int64(j), 30000)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_ = tr.Expired()
		}
	})
}
