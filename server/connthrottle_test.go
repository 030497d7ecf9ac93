package server

import (
	"testing"
	"time"

	"github.com/zkd/zkd/server/zkmetrics"
)

// TestConnThrottle drives the bucket with a fake clock and random source:
// at each step the clock is set to at (ms) and a connect is tried.
func TestConnThrottle(t *testing.T) {
	type try struct {
		at     int64
		resume bool
		ok     bool
	}
	withCfg := func(f func(*ConnThrottleConfig)) ConnThrottleConfig {
		c := DefaultConnThrottle()
		f(&c)
		return c
	}
	tests := []struct {
		name     string
		cfg      ConnThrottleConfig
		random   float64
		tries    []try
		wantDrop float64
	}{
		{"off", DefaultConnThrottle(), 0, []try{{0, false, true}, {0, false, true}, {0, false, true}}, 0},
		{"burst of 2", withCfg(func(c *ConnThrottleConfig) { c.Tokens, c.FillTime = 2, time.Second }), 0,
			[]try{{0, false, true}, {0, false, true}, {0, false, false}, {1000, false, false}, {1001, false, true}, {1001, false, false}}, 0},
		{"refill rounds down and caps", withCfg(func(c *ConnThrottleConfig) { c.Tokens, c.FillTime, c.FillCount = 3, 10*time.Millisecond, 2 }), 0,
			[]try{{0, false, true}, {0, false, true}, {0, false, true}, {0, false, false},
				{19, false, true}, {19, false, true}, {19, false, true}, {19, false, false}, // 19*2/10 = 3 back
				{5000, false, true}, {5000, false, true}, {5000, false, true}, {5000, false, false}}, 0},
		{"weights", withCfg(func(c *ConnThrottleConfig) {
			c.Tokens, c.FillTime, c.WeightEnabled = 2, time.Hour, true
		}), 0, []try{{0, false, true}, {0, true, true}, {0, true, false}, {0, false, false}}, 0},
		{"blue raises the drop chance on an empty bucket", withCfg(func(c *ConnThrottleConfig) {
			c.Tokens, c.FillTime, c.FreezeTime, c.DropIncrease = 1, time.Hour, 10*time.Millisecond, 0.5
		}), 0.4, []try{{0, false, true}, {11, false, false}, {22, false, false}, {23, false, false}}, 1},
		{"blue lowers it on a full bucket", withCfg(func(c *ConnThrottleConfig) {
			c.Tokens, c.FillTime, c.FreezeTime, c.DropIncrease, c.DropDecrease = 1, 30*time.Millisecond, 10*time.Millisecond, 0.5, 0.25
		}), 0.3, []try{{0, false, true}, {11, false, false}, {31, false, true}}, 0.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newConnThrottle(tt.cfg)
			th.deficit = zkmetrics.NewRegistry().Summary("d", "", false)
			var now int64
			th.now = func() int64 { return now }
			th.random = func() float64 { return tt.random }
			for i, tr := range tt.tries {
				now = tr.at
				if got := th.allow(tr.resume); got != tr.ok {
					t.Fatalf("try %d at %d ms (resume %v): allowed %v, want %v", i, tr.at, tr.resume, got, tr.ok)
				}
			}
			if got := th.dropChance(); got != tt.wantDrop {
				t.Errorf("drop chance %v, want %v", got, tt.wantDrop)
			}
		})
	}
}
