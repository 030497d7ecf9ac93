package main

import (
	"math"
	"math/bits"
	"time"
)

// subBits is the histogram's precision: values below 2^subBits ns are
// counted exactly, larger ones in buckets 1/2^(subBits-1) of their
// magnitude wide, so any quantile is within 1.6% of the true value.
const subBits = 7

// numBuckets covers every non-negative int64.
var numBuckets = bucketOf(math.MaxInt64) + 1

// Histogram counts latencies in log-linear buckets (as HdrHistogram does):
// constant memory, mergeable, and quantiles with bounded relative error. The
// zero value is not usable; call NewHistogram. Not safe for concurrent use:
// give each client its own and Merge them.
type Histogram struct {
	counts   []uint64
	n        uint64
	min, max int64
	sum      float64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]uint64, numBuckets), min: math.MaxInt64}
}

// bucketOf returns the bucket of a value v >= 0.
func bucketOf(v int64) int {
	if v < 1<<subBits {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - subBits
	return e<<(subBits-1) + int(v>>e)
}

// bucketRange returns the smallest and largest value counted in bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < 1<<subBits {
		return int64(i), int64(i)
	}
	e := i>>(subBits-1) - 1
	m := int64(i - e<<(subBits-1))
	return m << e, (m+1)<<e - 1
}

// Record counts one latency; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += float64(v)
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// Merge adds every value counted in o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count returns how many values were recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Min returns the smallest recorded value, or 0 if there is none.
func (h *Histogram) Min() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.min)
}

// Max returns the largest recorded value, or 0 if there is none.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the exact mean of the recorded values, or 0 if there is none.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Quantile returns the value below or at which a fraction q (0 to 1) of
// the recorded values lie: the upper end of the bucket that holds the
// ceil(q·n)-th smallest value, clamped to the recorded min and max. q <= 0
// gives the exact min; an empty histogram gives 0.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if q <= 0 {
		return time.Duration(h.min)
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			_, hi := bucketRange(i)
			return time.Duration(min(max(hi, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
