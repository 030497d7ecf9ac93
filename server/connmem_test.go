package server

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/zkd/zkd/jute"
)

// BenchmarkIdleConnMemory measures what an idle session costs the server:
// n raw clients connect, each sets two watches and pings, and then the
// heap and stacks in use (after GC) and the goroutines are compared with
// before. The figures include the client ends of the n loopback
// connections (a net.Conn each, a few hundred bytes), which run in the
// same process. Run with -benchtime=1x.
func BenchmarkIdleConnMemory(b *testing.B) {
	for _, n := range []int{2000} {
		b.Run(fmt.Sprintf("conns=%d", n), func(b *testing.B) {
			for range b.N {
				heap, stacks, gs := idleConnCost(b, n)
				b.ReportMetric(heap, "heapB/conn")
				b.ReportMetric(stacks, "stackB/conn")
				b.ReportMetric(gs, "goroutines/conn")
			}
		})
	}
}

// idleConnCost opens n idle sessions and returns the heap bytes, stack
// bytes and goroutines each added.
func idleConnCost(b *testing.B, n int) (heap, stacks, goroutines float64) {
	ts := startServer(b, func(c *Config) { c.MaxClientCnxns = 0 })
	setup := dialRaw(b, ts.addr)
	setup.session()
	setup.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/w", Acl: openACL}, &jute.CreateResponse{})
	before := memInUse()
	g0 := runtime.NumGoroutine()
	clients := make([]*rawClient, n)
	for i := range clients {
		c := dialRaw(b, ts.addr)
		c.session()
		c.call(1, jute.OpExists, &jute.ExistsRequest{Path: "/w", Watch: true}, &jute.ExistsResponse{})
		c.call(2, jute.OpGetData, &jute.GetDataRequest{Path: "/nope", Watch: true}, nil)
		c.send(jute.XidPing, jute.OpPing, nil)
		c.reply(nil)
		clients[i] = c
	}
	after := memInUse()
	g1 := runtime.NumGoroutine()
	if path := os.Getenv("CONNMEM_HEAPPROFILE"); path != "" {
		writeHeapProfile(b, path)
	}
	runtime.KeepAlive(clients)
	return float64(after.heap-before.heap) / float64(n), float64(after.stack-before.stack) / float64(n),
		float64(g1-g0) / float64(n)
}

type memUse struct{ heap, stack int64 }

// memInUse returns the heap and stack bytes in use after a few collections
// (each can halve a stack).
func memInUse() memUse {
	var ms runtime.MemStats
	for range 4 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return memUse{heap: int64(ms.HeapInuse), stack: int64(ms.StackInuse)}
}

// writeHeapProfile writes the heap profile to path.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkIdlePing measures what an idle session's ping costs: n sessions
// are open and each ping goes to the next one in turn, so every
// connection sees a ping only once in n, as a fleet of idle clients
// pings. cpu-ns/ping is the process's CPU time (user and system, client
// ends included) per ping; with many connections it exposes costs that
// grow with the number of connections, such as the runtime rescanning
// every connection's deadline timer (see conn.busy).
func BenchmarkIdlePing(b *testing.B) {
	for _, n := range []int{100, 5000} {
		b.Run(fmt.Sprintf("conns=%d", n), func(b *testing.B) {
			ts := startServer(b, func(c *Config) { c.MaxClientCnxns = 0 })
			clients := make([]*rawClient, n)
			for i := range clients {
				clients[i] = dialRaw(b, ts.addr)
				clients[i].session()
			}
			cpu0 := processCPU()
			b.ResetTimer()
			for i := range b.N {
				c := clients[i%n]
				c.send(jute.XidPing, jute.OpPing, nil)
				if h := c.reply(nil); h.Err != 0 {
					b.Fatal(h)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/ping")
		})
	}
}
