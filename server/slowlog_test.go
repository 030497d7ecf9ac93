package server

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/zkd/zkd/jute"
)

func TestSlowRequestLog(t *testing.T) {
	tests := []struct {
		name      string
		threshold time.Duration
		want      int // slow-request lines for the create
	}{
		{"every request is slow", time.Nanosecond, 1},
		{"none is slow", time.Hour, 0},
		{"disabled", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			ts := startServer(t, func(c *Config) {
				c.SlowRequestThreshold = tc.threshold
				c.Logger = zap.New(core)
			})
			c := dialRaw(t, ts.addr)
			c.session()
			c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/slow", Acl: openACL}, &jute.CreateResponse{})
			var got []observer.LoggedEntry
			for _, e := range logs.FilterMessage("slow request").AllUntimed() {
				if e.ContextMap()["op"] == "create" {
					got = append(got, e)
				}
			}
			if len(got) != tc.want {
				t.Fatalf("%d slow-request lines for the create, want %d: %v", len(got), tc.want, logs.All())
			}
			if tc.want == 0 {
				return
			}
			m := got[0].ContextMap()
			if m["path"] != "/slow" || m["session"] == "0x0" || m["session"] == nil || got[0].Level != zap.WarnLevel {
				t.Errorf("slow request line = %v at %v", m, got[0].Level)
			}
		})
	}
}

// TestSlowLimiter checks the budget of slow-request lines: at most
// slowLinesPerSecond in a second, the rest counted and reported on the
// next line written, in a later second.
func TestSlowLimiter(t *testing.T) {
	var l slowLimiter
	t0 := time.Unix(1000, 0)
	for i := range slowLinesPerSecond {
		if ok, sup := l.admit(t0.Add(time.Duration(i) * time.Millisecond)); !ok || sup != 0 {
			t.Fatalf("line %d: admitted %v, suppressed %d; want admitted, 0", i, ok, sup)
		}
	}
	for i := range 25 {
		if ok, _ := l.admit(t0.Add(500*time.Millisecond + time.Duration(i))); ok {
			t.Fatalf("line %d past the budget admitted", slowLinesPerSecond+i)
		}
	}
	if ok, sup := l.admit(t0.Add(time.Second)); !ok || sup != 25 {
		t.Fatalf("first line of the next second: admitted %v, suppressed %d; want admitted, 25", ok, sup)
	}
	if ok, sup := l.admit(t0.Add(time.Second + time.Millisecond)); !ok || sup != 0 {
		t.Fatalf("second line of the next second: admitted %v, suppressed %d; want admitted, 0", ok, sup)
	}
}
