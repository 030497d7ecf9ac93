package server

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/zkd/zkd/server/zkmetrics"
)

// ConnThrottleConfig is ZooKeeper 3.8's connection throttle (BlueThrottle,
// the zookeeper.connection_throttle_* properties): a token bucket that
// every connect request draws from, with optional random dropping (BLUE)
// that adapts to a bucket kept empty. A connect refused by it is closed
// without an answer and counted in connection_rejected. The zero value,
// Tokens 0, disables it.
type ConnThrottleConfig struct {
	// Tokens is the bucket's size (connection_throttle_tokens); 0 disables
	// the throttle. With WeightEnabled it is multiplied by GlobalWeight,
	// as ZooKeeper does: the configured figure counts new sessions.
	Tokens int
	// FillTime and FillCount: FillCount tokens come back every FillTime
	// (connection_throttle_fill_time in ms, default 1; _fill_count,
	// default 1, multiplied by GlobalWeight with WeightEnabled).
	FillTime  time.Duration
	FillCount int
	// FreezeTime (connection_throttle_freeze_time, ms) is how often the
	// drop probability is adjusted; negative (ZooKeeper's -1, the
	// default) disables random dropping.
	FreezeTime time.Duration
	// DropIncrease is added to the drop probability when the bucket is
	// found empty (_drop_increase, default 0.02); DropDecrease is taken
	// off when the tokens missing are at most DecreaseRatio × Tokens
	// (_drop_decrease, default 0.002; _decrease_ratio, default 0).
	DropIncrease, DropDecrease, DecreaseRatio float64
	// WeightEnabled (connection_throttle_weight_enabled) makes a new
	// session cost GlobalWeight tokens (_global_session_weight, default 3)
	// and a resumed one RenewWeight (_renew_session_weight, default 2);
	// otherwise every connect costs 1.
	WeightEnabled             bool
	GlobalWeight, RenewWeight int
}

// DefaultConnThrottle returns ZooKeeper's defaults, throttle off.
func DefaultConnThrottle() ConnThrottleConfig {
	return ConnThrottleConfig{
		FillTime:     time.Millisecond,
		FillCount:    1,
		FreezeTime:   -1,
		DropIncrease: 0.02,
		DropDecrease: 0.002,
		GlobalWeight: 3,
		RenewWeight:  2,
	}
}

// validate checks an enabled throttle's settings.
func (c ConnThrottleConfig) validate() error {
	switch {
	case c.Tokens < 0:
		return fmt.Errorf("server: ConnThrottle.Tokens must not be negative, got %d", c.Tokens)
	case c.Tokens == 0:
		return nil
	case c.FillTime < time.Millisecond:
		return fmt.Errorf("server: ConnThrottle.FillTime must be at least 1ms, got %v", c.FillTime)
	case c.FillCount < 0:
		return fmt.Errorf("server: ConnThrottle.FillCount must not be negative, got %d", c.FillCount)
	case c.WeightEnabled && (c.GlobalWeight <= 0 || c.RenewWeight <= 0):
		return fmt.Errorf("server: ConnThrottle weights must be positive, got global %d renew %d", c.GlobalWeight, c.RenewWeight)
	}
	return nil
}

// connThrottle is the bucket and drop probability of ConnThrottleConfig.
// Times are whole milliseconds since the throttle was made, as ZooKeeper
// counts them, so the refill rounds the same way.
type connThrottle struct {
	cfg                   ConnThrottleConfig
	maxTokens, fillCount  int64
	fillMs, freezeMs      int64
	start                 time.Time
	now                   func() int64   // ms since start
	random                func() float64 // in [0, 1)
	mu                    sync.Mutex
	tokens                int64
	lastFill, lastFreeze  int64
	drop                  float64
	deficit               *zkmetrics.Summary
	globalCost, renewCost int64
}

// newConnThrottle returns the throttle of cfg; with Tokens 0 it lets
// every connect through.
func newConnThrottle(cfg ConnThrottleConfig) *connThrottle {
	t := &connThrottle{
		cfg:        cfg,
		maxTokens:  int64(cfg.Tokens),
		fillCount:  int64(cfg.FillCount),
		fillMs:     cfg.FillTime.Milliseconds(),
		freezeMs:   cfg.FreezeTime.Milliseconds(),
		start:      time.Now(),
		random:     rand.Float64,
		globalCost: 1,
		renewCost:  1,
	}
	if cfg.FreezeTime < 0 {
		t.freezeMs = -1
	}
	if cfg.WeightEnabled {
		t.maxTokens *= int64(cfg.GlobalWeight)
		t.fillCount *= int64(cfg.GlobalWeight)
		t.globalCost, t.renewCost = int64(cfg.GlobalWeight), int64(cfg.RenewWeight)
	}
	t.now = func() int64 { return time.Since(t.start).Milliseconds() }
	t.tokens = t.maxTokens
	return t
}

// allow takes the tokens a connect request costs (resume: it names a
// session) and reports whether it may go on. As ZooKeeper's, every connect
// let through is counted in connection_token_deficit, 0 with the throttle
// off.
func (t *connThrottle) allow(resume bool) bool {
	if t.maxTokens == 0 {
		t.deficit.Observe(0)
		return true
	}
	need := t.globalCost
	if resume {
		need = t.renewCost
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if diff := now - t.lastFill; diff > t.fillMs {
		t.tokens = min(t.tokens+diff*t.fillCount/t.fillMs, t.maxTokens)
		t.lastFill = now
	}
	if t.freezeMs >= 0 && !t.blue(now) {
		return false
	}
	if t.tokens < need {
		return false
	}
	t.tokens -= need
	t.deficit.Observe(t.maxTokens - t.tokens)
	return true
}

// blue adjusts the drop probability at most once every freeze time, up
// when the bucket is empty and down when it is nearly full, and then drops
// the request with that probability (false).
func (t *connThrottle) blue(now int64) bool {
	missing := t.maxTokens - t.tokens
	if now-t.lastFreeze > t.freezeMs {
		switch {
		case missing == t.maxTokens && t.drop < 1:
			t.drop = min(t.drop+t.cfg.DropIncrease, 1)
		case float64(missing) <= roundHalfUp(float64(t.maxTokens)*t.cfg.DecreaseRatio) && t.drop > 0:
			t.drop = max(t.drop-t.cfg.DropDecrease, 0)
		}
		t.lastFreeze = now
	}
	return !(t.random() < t.drop)
}

// roundHalfUp rounds as Java's Math.round: halves go up.
func roundHalfUp(x float64) float64 { return math.Floor(x + 0.5) }

// dropChance is the current drop probability, for mntr.
func (t *connThrottle) dropChance() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.drop
}

// registerConnThrottle adds ZooKeeper's connection throttle figures:
// connection_token_deficit (tokens missing after each connect let through)
// and connection_drop_probability.
func (s *Server) registerConnThrottle(r *zkmetrics.Registry) {
	s.connThrottle.deficit = r.Summary("connection_token_deficit", "Tokens missing from the connection throttle's bucket after each connect it let through.", false)
	r.Gauge("connection_drop_probability", "Probability with which the connection throttle drops a connect (BLUE; 0 unless connection_throttle_freeze_time is set).", false,
		func() (float64, bool) { return s.connThrottle.dropChance(), true })
}
