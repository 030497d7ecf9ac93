package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// runFill creates cfg.count persistent nodes of cfg.size bytes under
// cfg.root, spread over cfg.clients sessions, and leaves them there: the
// data set for memory and restart measurements. Node i is
// root/n<i, 8 digits>, so a script knows every name in advance.
func runFill(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
	conns, err := connectAll(ctx, cfg, logw, cfg.clients)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	if err := ensurePath(conns[0], cfg.root); err != nil {
		return nil, err
	}
	data := make([]byte, cfg.size)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	var next atomic.Int64
	var errs atomic.Uint64
	var mu sync.Mutex
	var last error
	hist := make([]*Histogram, len(conns))
	start := time.Now()
	var wg sync.WaitGroup
	for ci, c := range conns {
		hist[ci] = NewHistogram()
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(cfg.count) {
					return
				}
				p := fillPath(cfg.root, int(i))
				t0 := time.Now()
				_, err := c.Create(p, data, 0, acl)
				if err != nil && !errors.Is(err, zk.ErrNodeExists) {
					errs.Add(1)
					mu.Lock()
					last = fmt.Errorf("create %s: %w", p, err)
					mu.Unlock()
					continue
				}
				hist[ci].Record(time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	h := NewHistogram()
	for _, x := range hist {
		h.Merge(x)
	}
	res := &result{Workload: "fill", Servers: cfg.servers, Clients: cfg.clients, Size: cfg.size,
		Seconds: elapsed.Seconds(), Ops: h.Count(), OpsPerSec: float64(h.Count()) / elapsed.Seconds(),
		Errors: errs.Load(), Latency: summarize(h), Count: int(h.Count()), lastErr: last}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("zkbench: fill: %d creates failed, last: %v", res.Errors, last)
	}
	return res, nil
}

// fillPath names fill's i-th node.
func fillPath(root string, i int) string { return fmt.Sprintf("%s/n%08d", root, i) }

// runWait polls until cfg.path can be read, reconnecting as needed, and
// reports the time from its start. Used to time a server's restart.
func runWait(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
	start := time.Now()
	deadline := start.Add(cfg.timeout)
	var last error
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		remaining := time.Until(deadline)
		conn, err := connect(ctx, cfg, logw, min(remaining, 5*time.Second))
		if err == nil {
			_, _, err = conn.Get(cfg.path)
			conn.Close()
			if err == nil {
				return &result{Workload: "wait", Servers: cfg.servers, Path: cfg.path,
					Seconds: time.Since(start).Seconds()}, nil
			}
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("zkbench: %s not readable after %v: %v", cfg.path, cfg.timeout, last)
}
