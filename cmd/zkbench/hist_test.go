package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsCoverEveryValue(t *testing.T) {
	// Buckets are contiguous and ordered: each starts right after the
	// previous one ends, and bucketOf maps both ends back to the bucket.
	var prevHi int64 = -1
	for i := range numBuckets {
		lo, hi := bucketRange(i)
		if lo != prevHi+1 || hi < lo {
			t.Fatalf("bucket %d = [%d, %d], previous ended at %d", i, lo, hi, prevHi)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d = [%d, %d] but bucketOf gives %d, %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if i >= 1<<subBits && float64(hi-lo+1)/float64(lo) > 1.0/(1<<(subBits-1))+1e-12 {
			t.Fatalf("bucket %d = [%d, %d] is wider than the precision allows", i, lo, hi)
		}
		prevHi = hi
	}
	if prevHi != math.MaxInt64 {
		t.Fatalf("last bucket ends at %d", prevHi)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	tests := []struct {
		name   string
		values []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"single", []time.Duration{42}, 0.99, 42},
		{"exact small p50", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.5, 5},
		{"exact small p90", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9, 9},
		{"exact small p100", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 1, 10},
		{"q0 is min", []time.Duration{7 * time.Millisecond, 3 * time.Millisecond}, 0, 3 * time.Millisecond},
		{"clamped to max", []time.Duration{time.Millisecond}, 0.5, time.Millisecond},
		{"negative counts as zero", []time.Duration{-5, 0}, 1, 0},
		{"outlier p999", append(slices.Repeat([]time.Duration{100}, 999), time.Second), 0.999, 100},
		{"outlier p100", append(slices.Repeat([]time.Duration{100}, 999), time.Second), 1, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHistogram()
			for _, v := range tt.values {
				h.Record(v)
			}
			if got := h.Quantile(tt.q); got != tt.want {
				t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
			if h.Count() != uint64(len(tt.values)) {
				t.Errorf("Count = %d, want %d", h.Count(), len(tt.values))
			}
		})
	}
}

// TestHistogramMatchesSortedSample compares quantiles with the exact ones
// of a sorted sample: they may differ only by the bucket width.
func TestHistogramMatchesSortedSample(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() time.Duration{
		"uniform 0-10ms": func() time.Duration { return time.Duration(r.Int64N(int64(10 * time.Millisecond))) },
		"lognormal":      func() time.Duration { return time.Duration(math.Exp(r.NormFloat64()*1.5 + 13)) },
		"bimodal": func() time.Duration {
			if r.IntN(100) == 0 {
				return 50*time.Millisecond + time.Duration(r.Int64N(int64(time.Millisecond)))
			}
			return 300*time.Microsecond + time.Duration(r.Int64N(int64(100*time.Microsecond)))
		},
	}
	for name, gen := range dists {
		t.Run(name, func(t *testing.T) {
			h := NewHistogram()
			sample := make([]time.Duration, 50000)
			var sum float64
			for i := range sample {
				sample[i] = gen()
				h.Record(sample[i])
				sum += float64(sample[i])
			}
			slices.Sort(sample)
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
				rank := int(math.Ceil(q*float64(len(sample)))) - 1
				exact := sample[rank]
				got := h.Quantile(q)
				if got < exact || float64(got-exact) > float64(exact)/(1<<(subBits-1))+1 {
					t.Errorf("Quantile(%v) = %v, exact %v", q, got, exact)
				}
			}
			if h.Min() != sample[0] || h.Max() != sample[len(sample)-1] {
				t.Errorf("Min, Max = %v, %v; want %v, %v", h.Min(), h.Max(), sample[0], sample[len(sample)-1])
			}
			if want := time.Duration(sum / float64(len(sample))); h.Mean() != want {
				t.Errorf("Mean = %v, want %v", h.Mean(), want)
			}
		})
	}
}

func TestHistogramMerge(t *testing.T) {
	a, b, all := NewHistogram(), NewHistogram(), NewHistogram()
	for i := range 1000 {
		d := time.Duration(i) * time.Microsecond
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
		all.Record(d)
	}
	a.Merge(b)
	a.Merge(NewHistogram())
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("merged Quantile(%v) = %v, want %v", q, a.Quantile(q), all.Quantile(q))
		}
	}
	if a.Count() != 1000 || a.Min() != 0 || a.Max() != 999*time.Microsecond || a.Mean() != all.Mean() {
		t.Errorf("merged count %d min %v max %v mean %v", a.Count(), a.Min(), a.Max(), a.Mean())
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := NewHistogram()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Record(time.Duration(i%5000) * time.Microsecond)
	}
}
