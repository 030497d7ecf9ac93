package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
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
	data := benchData(cfg.size)
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
	probeTimeout := 100 * time.Millisecond
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// go-zk sleeps a second after failing every server, so first poll
		// with a bare handshake to learn the moment a server grants sessions.
		err := probeAny(cfg.servers, probeTimeout)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Answered slowly: allow more next time, up to 2s.
			probeTimeout = min(2*probeTimeout, 2*time.Second)
		}
		var conn *zk.Conn
		if err == nil {
			conn, err = connect(ctx, cfg, logw, min(time.Until(deadline), 5*time.Second))
		}
		if err == nil {
			_, _, err = conn.Get(cfg.path)
			conn.Close()
			if err == nil {
				return &result{Workload: "wait", Servers: cfg.servers, Path: cfg.path,
					Seconds: time.Since(start).Seconds()}, nil
			}
		}
		last = err
		if cfg.verbose {
			fmt.Fprintf(logw, "zkbench: %.3fs: %v\n", time.Since(start).Seconds(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, fmt.Errorf("zkbench: %s not readable after %v: %v", cfg.path, cfg.timeout, last)
}

// probeAny succeeds once one of servers grants a session.
func probeAny(servers []string, timeout time.Duration) error {
	var errs []error
	for _, s := range servers {
		err := probe(s, timeout)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// probe opens a session on addr with a bare ConnectRequest (no readOnly
// byte, as go-zk sends it) and closes it again. It fails unless the server
// granted a session: a positive timeout and a nonzero session id.
func probe(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd.
	var req []byte
	req = binary.BigEndian.AppendUint32(req, 4+8+4+8+4+16)
	req = binary.BigEndian.AppendUint32(req, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 10000)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 16)
	req = append(req, make([]byte, 16)...)
	if _, err := c.Write(req); err != nil {
		return err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return fmt.Errorf("zkbench: probe %s: %w", addr, err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 16 || n > 1<<16 {
		return fmt.Errorf("zkbench: probe %s: bad ConnectResponse length %d", addr, n)
	}
	resp := make([]byte, n)
	if _, err := io.ReadFull(c, resp); err != nil {
		return fmt.Errorf("zkbench: probe %s: %w", addr, err)
	}
	if int32(binary.BigEndian.Uint32(resp[4:])) <= 0 || binary.BigEndian.Uint64(resp[8:]) == 0 {
		return fmt.Errorf("zkbench: probe %s: session refused", addr)
	}
	// closeSession: xid 1, type -11.
	closeReq := binary.BigEndian.AppendUint32(nil, 8)
	closeReq = binary.BigEndian.AppendUint32(closeReq, 1)
	closeReq = binary.BigEndian.AppendUint32(closeReq, 0xFFFFFFF5)
	if _, err := c.Write(closeReq); err == nil {
		_, _ = io.ReadFull(c, hdr[:])
	}
	return nil
}

// parallelFor calls fn(i) for every i from 0 to n-1 on workers goroutines,
// each taking the next i when done with its last, until all are done or
// ctx ends.
func parallelFor(ctx context.Context, workers, n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}
