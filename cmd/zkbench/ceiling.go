package main

// The ceiling workload measures what this machine allows a server like
// zkd at best, so that zkd's figures can be read as a fraction of it. A
// minimal server runs in a child process (as zkd would) on loopback TCP,
// and closed-loop clients send it fixed ceilingRequest-byte frames:
//
//	answer  the server reads each frame and writes a ceilingReply-byte
//	        answer at once: the cost of loopback TCP and the two
//	        processes' scheduling alone, the limit of any read.
//	append  the server appends each frame to a log file and answers it
//	        once the frame is on disk: one goroutine writes whatever frames
//	        wait as one write and one fdatasync (group commit), the limit
//	        of any durable write. The log is a preallocated file written
//	        in place (as a recycled write-ahead log is), so the fdatasync
//	        flushes data and no file size.
//
// Both servers are as plain as a Go server can be: one goroutine per
// connection that reads a frame and writes the answer, no pipelining.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// ceilingRequest and ceilingReply are the frame sizes, length prefix
	// included: about a small ZooKeeper write and its reply header.
	ceilingRequest = 64
	ceilingReply   = 16
	// ceilingLogSize is the preallocated log; appends wrap around in it.
	ceilingLogSize = 64 << 20
	// ceilingServeEnv makes a zkbench process the ceiling's server: its
	// value is "answer" or "append:<dir>".
	ceilingServeEnv = "ZKBENCH_CEILING_SERVE"
)

// ceilingModes are the -ceiling values.
var ceilingModes = []string{"answer", "append"}

// runCeiling starts the minimal server in a child process, drives it with
// cfg.clients closed-loop clients and stops it.
func runCeiling(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("zkbench: ceiling: find own binary: %w", err)
	}
	mode := cfg.ceiling
	if mode == "append" {
		dir, err := os.MkdirTemp(cfg.ceilingDir, "zkbench-ceiling-")
		if err != nil {
			return nil, fmt.Errorf("zkbench: ceiling: log directory: %w", err)
		}
		defer os.RemoveAll(dir)
		mode += ":" + dir
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), ceilingServeEnv+"="+mode)
	cmd.Stderr = logw
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("zkbench: ceiling: start server: %w", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("zkbench: ceiling: server did not start: %w", err)
	}
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening "))

	clients := make([]*client, cfg.clients)
	conns := make([]net.Conn, cfg.clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		if conns[i], err = net.Dial("tcp", addr); err != nil {
			return nil, fmt.Errorf("zkbench: ceiling: connect to %s: %w", addr, err)
		}
		clients[i] = &client{id: i, hist: NewHistogram()}
	}
	fn := func(c *client) (time.Duration, error) {
		conn := conns[c.id]
		var req [ceilingRequest]byte
		var rep [ceilingReply]byte
		binary.BigEndian.PutUint32(req[:], ceilingRequest-4)
		start := time.Now()
		if _, err := conn.Write(req[:]); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(conn, rep[:]); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	elapsed := drive(ctx, clients, fn, cfg.warmup, cfg.duration, cfg.interval, logw)
	res := collect(cfg, clients, elapsed)
	res.Workload = "ceiling-" + cfg.ceiling
	res.Servers = nil
	res.Size = ceilingRequest
	if res.Ops == 0 {
		return res, fmt.Errorf("zkbench: ceiling: no answers, last error: %v", res.lastErr)
	}
	return res, ctx.Err()
}

// serveCeiling is the child process: it serves mode ("answer" or
// "append:<dir>") on a free loopback port, prints "listening <addr>" and
// runs until killed.
func serveCeiling(mode string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var commit func() func() error // append: queue a frame, get its wait
	if dir, ok := strings.CutPrefix(mode, "append:"); ok {
		l, err := openCeilingLog(filepath.Join(dir, "log"))
		if err != nil {
			return err
		}
		go l.run()
		commit = l.add
	} else if mode != "answer" {
		return fmt.Errorf("zkbench: ceiling: unknown server mode %q", mode)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			var req [ceilingRequest]byte
			var rep [ceilingReply]byte
			binary.BigEndian.PutUint32(rep[:], ceilingReply-4)
			for {
				if _, err := io.ReadFull(c, req[:]); err != nil {
					return
				}
				if commit != nil {
					if err := commit()(); err != nil {
						fmt.Fprintln(os.Stderr, "zkbench: ceiling:", err)
						os.Exit(1)
					}
				}
				if _, err := c.Write(rep[:]); err != nil {
					return
				}
			}
		}()
	}
}

// ceilingLog is the append server's group commit: frames queue in pending
// and one goroutine writes and syncs whatever is queued as one batch.
type ceilingLog struct {
	f   *os.File
	off int64
	mu  sync.Mutex
	// pending counts the frames of the batch being gathered; done is
	// closed once that batch is on disk, err then holds the outcome.
	pending int
	batch   *ceilingBatch
	wake    chan struct{}
	synced  atomic.Uint64
}

type ceilingBatch struct {
	done chan struct{}
	err  error
}

func openCeilingLog(path string) (*ceilingLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	// Written through once, so later writes replace blocks in place.
	zero := make([]byte, 1<<20)
	for off := 0; off < ceilingLogSize; off += len(zero) {
		if _, err := f.Write(zero); err != nil {
			f.Close()
			return nil, fmt.Errorf("zkbench: ceiling: preallocate %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return &ceilingLog{f: f, batch: &ceilingBatch{done: make(chan struct{})}, wake: make(chan struct{}, 1)}, nil
}

// add queues one frame and returns the wait for its batch.
func (l *ceilingLog) add() func() error {
	l.mu.Lock()
	b := l.batch
	l.pending++
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return func() error {
		<-b.done
		return b.err
	}
}

// run writes and syncs batches for as long as the process lives.
func (l *ceilingLog) run() {
	buf := make([]byte, 0, 1<<16)
	for range l.wake {
		l.mu.Lock()
		n, b := l.pending, l.batch
		if n == 0 {
			l.mu.Unlock()
			continue
		}
		l.pending, l.batch = 0, &ceilingBatch{done: make(chan struct{})}
		l.mu.Unlock()
		buf = buf[:0]
		for range n {
			buf = append(buf, make([]byte, ceilingRequest)...)
		}
		if l.off+int64(len(buf)) > ceilingLogSize {
			l.off = 0
		}
		_, err := l.f.WriteAt(buf, l.off)
		if err == nil {
			err = unix.Fdatasync(int(l.f.Fd()))
		}
		if err != nil {
			b.err = errors.Join(errors.New("zkbench: ceiling: log append"), err)
		}
		l.off += int64(len(buf))
		l.synced.Add(uint64(n))
		close(b.done)
		// Frames that arrived during the sync form the next batch.
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}
