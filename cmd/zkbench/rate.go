package main

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// maxInFlight bounds the operations one client of an open loop (-rate)
// has outstanding; at the bound it waits for one to finish, and the
// schedule slips, which shows as throughput below -rate.
const maxInFlight = 4096

// driveOpen is drive's open loop, for -rate: each client starts fn every
// clients/rate seconds without waiting for the previous ones (go-zk
// pipelines them on the session), so the offered load does not fall when
// the server slows down. Latencies run from each operation's start.
func driveOpen(ctx context.Context, clients []*client, fn op, rate float64, warmup, duration, interval time.Duration, progress io.Writer) time.Duration {
	var phase atomic.Int32
	var wg sync.WaitGroup
	every := time.Duration(float64(len(clients)) / rate * float64(time.Second))
	for _, c := range clients {
		var mu sync.Mutex // c.hist and c.last
		sem := make(chan struct{}, maxInFlight)
		wg.Go(func() {
			var ops sync.WaitGroup
			defer ops.Wait()
			next := time.Now().Add(time.Duration(c.id) * every / time.Duration(len(clients)))
			for phase.Load() != phaseDone {
				time.Sleep(time.Until(next))
				next = next.Add(every)
				sem <- struct{}{}
				p := phase.Load()
				ops.Go(func() {
					defer func() { <-sem }()
					lat, err := fn(c)
					if p != phaseMeasure || errors.Is(err, zk.ErrClosing) {
						return
					}
					if err != nil {
						c.errors.Add(1)
						mu.Lock()
						c.last = err
						mu.Unlock()
						return
					}
					c.ops.Add(1)
					mu.Lock()
					c.hist.Record(lat)
					mu.Unlock()
				})
			}
		})
	}
	elapsed := measure(ctx, clients, &phase, warmup, duration, interval, progress)
	wg.Wait()
	return elapsed
}
