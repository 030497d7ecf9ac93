package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// result is what one zkbench run measured. Latencies are in microseconds.
type result struct {
	Workload string `json:"workload"`
	// Client is the client library of create, set, get, token and lock:
	// "gozk" or "raw" (-client).
	Client    string   `json:"client,omitempty"`
	Servers   []string `json:"servers"`
	Clients   int      `json:"clients"`
	Locks     int      `json:"locks,omitempty"`
	Size      int      `json:"size"`
	Seconds   float64  `json:"seconds"`
	Ops       uint64   `json:"ops"`
	OpsPerSec float64  `json:"ops_per_sec"`
	Errors    uint64   `json:"errors"`
	Latency   latency  `json:"latency_us"`
	// Count is the number of nodes created by fill.
	Count int `json:"count,omitempty"`
	// Path is the node wait read.
	Path string `json:"path,omitempty"`

	// The sessions workload's figures; its Ops are pings and its Latency
	// the ping round trip.
	SourceIPs       int     `json:"source_ips,omitempty"`
	ConnectSeconds  float64 `json:"connect_seconds,omitempty"`
	ConnectsPerSec  float64 `json:"connects_per_sec,omitempty"`
	ConnectFailures int64   `json:"connect_failures,omitempty"`
	Disconnects     int64   `json:"disconnects,omitempty"`
	Expired         int64   `json:"expired,omitempty"`
	MaxPingGapMs    float64 `json:"max_ping_gap_ms,omitempty"`
	// With -reconnect: the disconnected sessions resumed on a server, the
	// time from disconnect to resumption, and from the first disconnect
	// to the last resumption.
	Reconnected     int64    `json:"reconnected,omitempty"`
	Reconnect       *latency `json:"reconnect_us,omitempty"`
	ReconnectSpanMs float64  `json:"reconnect_span_ms,omitempty"`
	// Procs is the number of zkbench processes that held the sessions.
	Procs         int     `json:"procs,omitempty"`
	RSSBefore     int64   `json:"rss_before,omitempty"`
	RSSHeld       int64   `json:"rss_held,omitempty"`
	RSSPerSession float64 `json:"rss_per_session,omitempty"`
	CPUHeld       float64 `json:"cpu_seconds_held,omitempty"`
	// CPUPerSessionSecond is the servers' CPU time per session and second
	// of holding, in microseconds.
	CPUPerSessionSecond float64 `json:"cpu_us_per_session_second,omitempty"`

	// Fleet is the fleet workload's report (fleet_run.go).
	Fleet *fleetReport `json:"fleet,omitempty"`

	lastErr error
}

// latency summarizes a histogram in microseconds.
type latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func summarize(h *Histogram) latency {
	return latency{
		Mean: micros(h.Mean()),
		P50:  micros(h.Quantile(0.50)),
		P90:  micros(h.Quantile(0.90)),
		P99:  micros(h.Quantile(0.99)),
		P999: micros(h.Quantile(0.999)),
		Max:  micros(h.Max()),
	}
}

// collect merges the clients' counters into one result.
func collect(cfg config, clients []*client, elapsed time.Duration) *result {
	h := NewHistogram()
	res := &result{Workload: cfg.workload, Servers: cfg.servers, Clients: cfg.clients, Size: cfg.size,
		Seconds: elapsed.Seconds()}
	if cfg.workload == "lock" {
		res.Locks = cfg.locks
		res.Size = 0
	}
	for _, c := range clients {
		h.Merge(c.hist)
		res.Ops += c.ops.Load()
		res.Errors += c.errors.Load()
		if c.last != nil {
			res.lastErr = c.last
		}
	}
	if elapsed > 0 {
		res.OpsPerSec = float64(res.Ops) / elapsed.Seconds()
	}
	res.Latency = summarize(h)
	return res
}

// write prints r as text, or as one line of JSON.
func (r *result) write(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	var b strings.Builder
	switch r.Workload {
	case "wait":
		fmt.Fprintf(&b, "%s readable after %.3fs\n", r.Path, r.Seconds)
	case "sessions":
		fmt.Fprintf(&b, "workload=sessions clients=%d source-ips=%d servers=%s\n", r.Clients, r.SourceIPs, strings.Join(r.Servers, ","))
		fmt.Fprintf(&b, "connects   %.0f/s (%.2fs, %d failed)\n", r.ConnectsPerSec, r.ConnectSeconds, r.ConnectFailures)
		fmt.Fprintf(&b, "held       %.1fs: %d pings, %d disconnects, %d expired\n", r.Seconds, r.Ops, r.Disconnects, r.Expired)
		if r.Reconnect != nil && r.Reconnected > 0 {
			fmt.Fprintf(&b, "reconnect  %d resumed within %.0fms of the first disconnect; each p50=%s p99=%s max=%s\n", r.Reconnected,
				r.ReconnectSpanMs, fmtMicros(r.Reconnect.P50), fmtMicros(r.Reconnect.P99), fmtMicros(r.Reconnect.Max))
		}
		l := r.Latency
		fmt.Fprintf(&b, "ping       p50=%s p90=%s p99=%s p999=%s max=%s\n",
			fmtMicros(l.P50), fmtMicros(l.P90), fmtMicros(l.P99), fmtMicros(l.P999), fmtMicros(l.Max))
		if r.RSSHeld > 0 {
			fmt.Fprintf(&b, "server RSS %.1f MiB → %.1f MiB: %.0f B per session; idle CPU %.2f µs per session-second\n",
				float64(r.RSSBefore)/(1<<20), float64(r.RSSHeld)/(1<<20), r.RSSPerSession, r.CPUPerSessionSecond)
		}
		if r.lastErr != nil {
			fmt.Fprintf(&b, "last error: %v\n", r.lastErr)
		}
	case "fleet":
		r.Fleet.write(&b, r)
	case "fill":
		fmt.Fprintf(&b, "created %d nodes of %d bytes in %.3fs (%.0f creates/s, %d errors)\n",
			r.Count, r.Size, r.Seconds, r.OpsPerSec, r.Errors)
	default:
		what, lat := "ops/s", "latency"
		if r.Workload == "lock" {
			what, lat = "lock ops/s", "acquire"
		}
		fmt.Fprintf(&b, "workload=%s clients=%d", r.Workload, r.Clients)
		if r.Workload == "lock" {
			fmt.Fprintf(&b, " locks=%d", r.Locks)
		} else {
			fmt.Fprintf(&b, " size=%d", r.Size)
		}
		fmt.Fprintf(&b, " servers=%s", strings.Join(r.Servers, ","))
		if r.Client != "" {
			fmt.Fprintf(&b, " client=%s", r.Client)
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "%-10s %.1f (%d ops in %.2fs, %d errors)\n", what, r.OpsPerSec, r.Ops, r.Seconds, r.Errors)
		l := r.Latency
		fmt.Fprintf(&b, "%-10s p50=%s p90=%s p99=%s p999=%s max=%s mean=%s\n", lat,
			fmtMicros(l.P50), fmtMicros(l.P90), fmtMicros(l.P99), fmtMicros(l.P999), fmtMicros(l.Max), fmtMicros(l.Mean))
		if r.lastErr != nil {
			fmt.Fprintf(&b, "last error: %v\n", r.lastErr)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtMicros prints a microsecond figure with a readable unit.
func fmtMicros(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.2fms", us/1e3)
	default:
		return fmt.Sprintf("%.0fµs", us)
	}
}
