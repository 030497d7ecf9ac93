package main

// -client raw drives the create, set and get workloads through a client as
// lean as the ceiling's (ceiling.go) instead of go-zk, whose reflection-based
// encoding and goroutines per session cost the machine up to a core: on a
// small machine that client, not the server, would set the figure. A raw
// client is one goroutine, one connection and one request at a time,
// encoding with the repository's own jute codec into buffers it reuses.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/jute"
)

// Client libraries, the -client values.
const (
	clientGozk = "gozk"
	clientRaw  = "raw"
)

// clientKinds lists the -client values.
var clientKinds = []string{clientGozk, clientRaw}

// rawWorkloads are the workloads -client raw can run.
var rawWorkloads = []string{"create", "set", "get"}

// rawMaxFrame bounds a reply frame a raw client accepts: a node's data is
// below jute.DefaultMaxBuffer, and a server may be configured for more.
const rawMaxFrame = 4 << 20

// worldAll is the ACL of the raw create workload's nodes, as acl is go-zk's.
var worldAll = []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}

// errRawProtocol marks a reply a raw client cannot follow (a wrong xid, a
// malformed frame): the connection is dropped and the next operation dials
// a new session.
var errRawProtocol = errors.New("zkbench: raw client: protocol error")

// rawConn is one session of -client raw. Only its client's goroutine uses
// it, so it has no lock. A failed connection is closed and the next call
// dials again with a new session, as go-zk reconnects by itself.
type rawConn struct {
	dial    zk.Dialer
	addr    string
	timeout time.Duration // requested session timeout, also the I/O deadline

	nc        net.Conn // nil until connected, and after a failure
	br        *bufio.Reader
	refreshAt time.Time // when the connection's deadline is next pushed back
	xid       int32

	enc  jute.Encoder // the request frame being built, reused
	dec  jute.Decoder // over rbuf, reused
	rbuf []byte       // the last reply frame's body, reused
	hdr  [4]byte

	// The workloads' request bodies, built once.
	createReq jute.CreateRequest
	delReq    rawDelete
	setReq    jute.SetDataRequest
	getReq    jute.GetDataRequest
}

// rawDelete is a DeleteRequest of version -1 whose path is bytes rather
// than a string, so that deleting the path a create returned needs no
// allocation. It encodes exactly as jute.DeleteRequest does (a string and
// a buffer share their encoding).
type rawDelete struct {
	path []byte
}

// Encode writes the record.
func (r *rawDelete) Encode(e *jute.Encoder) {
	e.WriteBuffer(r.path)
	e.WriteInt(-1)
}

// Decode is never used: a client only encodes requests.
func (r *rawDelete) Decode(d *jute.Decoder) { d.Fail(errors.New("zkbench: rawDelete is not decoded")) }

// newRawConn returns a raw client of addr that will request timeout as its
// session timeout; it connects on its first call, or on connect.
func newRawConn(dial zk.Dialer, addr string, timeout time.Duration) *rawConn {
	return &rawConn{dial: dial, addr: addr, timeout: timeout}
}

// connect opens the connection and its session: a ConnectRequest of
// protocol 0, no zxid seen, session 0 and a zero password, answered by a
// ConnectResponse granting a session.
func (r *rawConn) connect() error {
	nc, err := r.dial("tcp", r.addr, r.timeout)
	if err != nil {
		return fmt.Errorf("zkbench: raw client: dial %s: %w", r.addr, err)
	}
	now := time.Now()
	_ = nc.SetDeadline(now.Add(r.timeout))
	r.nc, r.br, r.refreshAt, r.xid = nc, bufio.NewReaderSize(nc, 16<<10), now.Add(r.timeout/2), 0
	req := jute.ConnectRequest{TimeOut: int32(r.timeout / time.Millisecond), Passwd: make([]byte, 16)}
	r.enc.Reset()
	r.enc.WriteInt(0)
	req.Encode(&r.enc)
	if err := r.send(); err != nil {
		r.drop()
		return fmt.Errorf("zkbench: raw client: handshake with %s: %w", r.addr, err)
	}
	if err := r.readFrame(); err != nil {
		r.drop()
		return fmt.Errorf("zkbench: raw client: handshake with %s: %w", r.addr, err)
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(r.rbuf, &resp); err != nil || resp.TimeOut <= 0 || resp.SessionId == 0 {
		r.drop()
		return fmt.Errorf("zkbench: raw client: %s refused the session (timeout %d, %v)", r.addr, resp.TimeOut, err)
	}
	return nil
}

// drop closes a failed connection; the next call dials again.
func (r *rawConn) drop() {
	if r.nc != nil {
		r.nc.Close()
		r.nc = nil
	}
}

// send writes the frame in r.enc, whose first four bytes are reserved for
// its length.
func (r *rawConn) send() error {
	b := r.enc.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := r.nc.Write(b)
	return err
}

// readFrame reads one frame's body into r.rbuf, growing it when needed.
func (r *rawConn) readFrame() error {
	if _, err := io.ReadFull(r.br, r.hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(r.hdr[:])
	if n > rawMaxFrame {
		return fmt.Errorf("%w: frame of %d bytes", errRawProtocol, n)
	}
	if cap(r.rbuf) < int(n) {
		r.rbuf = make([]byte, n)
	}
	r.rbuf = r.rbuf[:n]
	_, err := io.ReadFull(r.br, r.rbuf)
	return err
}

// call sends one request of type op with body (nil: none) and waits for
// its reply, skipping watch events and pings. It returns a decoder over
// the reply's body, valid until the next call. A reply with a nonzero
// error code fails with that jute.Code, leaving the connection usable; an
// I/O or protocol error drops the connection.
func (r *rawConn) call(op int32, body jute.Record) (*jute.Decoder, error) {
	if r.nc == nil {
		if err := r.connect(); err != nil {
			return nil, err
		}
	}
	if now := time.Now(); now.After(r.refreshAt) {
		// Pushed back at most twice a session timeout, not per call: a
		// server that stops answering fails the call within one timeout.
		_ = r.nc.SetDeadline(now.Add(r.timeout))
		r.refreshAt = now.Add(r.timeout / 2)
	}
	r.xid++
	r.enc.Reset()
	r.enc.WriteInt(0)
	h := jute.RequestHeader{Xid: r.xid, Type: op}
	h.Encode(&r.enc)
	if body != nil {
		body.Encode(&r.enc)
	}
	if err := r.send(); err != nil {
		r.drop()
		return nil, fmt.Errorf("%s: %w", jute.OpName(op), err)
	}
	for {
		if err := r.readFrame(); err != nil {
			r.drop()
			return nil, fmt.Errorf("%s: %w", jute.OpName(op), err)
		}
		r.dec.Reset(r.rbuf)
		var rh jute.ReplyHeader
		rh.Decode(&r.dec)
		switch {
		case r.dec.Err() != nil:
			r.drop()
			return nil, fmt.Errorf("%s: %w: reply header: %v", jute.OpName(op), errRawProtocol, r.dec.Err())
		case rh.Xid == jute.XidNotification || rh.Xid == jute.XidPing:
			continue
		case rh.Xid != r.xid:
			r.drop()
			return nil, fmt.Errorf("%s: %w: reply xid %d, want %d", jute.OpName(op), errRawProtocol, rh.Xid, r.xid)
		case rh.Err != jute.CodeOK:
			return nil, fmt.Errorf("%s: %w", jute.OpName(op), rh.Err)
		}
		return &r.dec, nil
	}
}

// close ends the session with a closeSession request, waiting for its
// reply at most a second, and closes the connection.
func (r *rawConn) close() {
	if r.nc == nil {
		return
	}
	_ = r.nc.SetDeadline(time.Now().Add(time.Second))
	r.refreshAt = time.Now().Add(time.Hour) // keep that deadline
	_, _ = r.call(jute.OpCloseSession, nil)
	r.drop()
}

// create is one op of the create workload: an ephemeral-sequential node
// under parent (the prefix parent+"/n-"), then a delete of the path the
// server returned.
func (r *rawConn) create() error {
	d, err := r.call(jute.OpCreate, &r.createReq)
	if err != nil {
		return err
	}
	p := d.ReadBuffer() // CreateResponse.Path, without making a string
	if d.Err() != nil || len(p) == 0 {
		r.drop()
		return fmt.Errorf("create: %w: reply body: %v", errRawProtocol, d.Err())
	}
	r.delReq.path = p // aliases rbuf: encoded by call before the next read
	_, err = r.call(jute.OpDelete, &r.delReq)
	return err
}

// set is one op of the set workload.
func (r *rawConn) set() error {
	_, err := r.call(jute.OpSetData, &r.setReq)
	return err
}

// get is one op of the get workload: getData without a watch, whose data
// must be size bytes long.
func (r *rawConn) get(size int) error {
	d, err := r.call(jute.OpGetData, &r.getReq)
	if err != nil {
		return err
	}
	data := d.ReadBuffer() // GetDataResponse.Data; the Stat is not needed
	if d.Err() != nil {
		r.drop()
		return fmt.Errorf("getData: %w: reply body: %v", errRawProtocol, d.Err())
	}
	if len(data) != size {
		return fmt.Errorf("get: %d bytes, want %d", len(data), size)
	}
	return nil
}

// rawOp returns the operation of workload (create, set or get) for raw
// clients, each working on node (its client's node, holding data for set
// and get), and prepares their request bodies.
func rawOp(workload string, rcs []*rawConn, node func(id int) string, data []byte) (op, error) {
	for i, rc := range rcs {
		rc.createReq = jute.CreateRequest{Path: node(i) + "/n-", Data: data, Acl: worldAll, Flags: jute.ModeEphemeralSequential}
		rc.setReq = jute.SetDataRequest{Path: node(i), Data: data, Version: -1}
		rc.getReq = jute.GetDataRequest{Path: node(i)}
	}
	timed := func(f func(rc *rawConn) error) op {
		return func(c *client) (time.Duration, error) {
			start := time.Now()
			err := f(rcs[c.id])
			return time.Since(start), err
		}
	}
	switch workload {
	case "create":
		return timed((*rawConn).create), nil
	case "set":
		return timed((*rawConn).set), nil
	case "get":
		size := len(data)
		return timed(func(rc *rawConn) error { return rc.get(size) }), nil
	}
	return nil, fmt.Errorf("zkbench: -client raw: no workload %q (want create, set or get)", workload)
}

// runRaw is runBench for -client raw: one go-zk session sets up cfg.root and
// the clients' nodes and removes them at the end, while cfg.clients raw
// clients (client i on server i mod len(servers)) run the closed loops.
func runRaw(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
	admin, err := connect(ctx, cfg, logw, 30*time.Second)
	if err != nil {
		return nil, err
	}
	cleanup := func() error {
		err := deleteTree(admin, cfg.root)
		admin.Close()
		return err
	}
	data := benchData(cfg.size)
	nodeData := data
	if cfg.workload == "create" {
		nodeData = nil // the parent of the client's creates
	}
	if err := setup(admin, cfg.root, cfg.clients, nodeData); err != nil {
		_ = cleanup()
		return nil, err
	}

	// The sessions open after setup, which may outlast their timeout.
	rcs := make([]*rawConn, cfg.clients)
	clients := make([]*client, cfg.clients)
	errs := make([]error, cfg.clients)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range rcs {
		rcs[i] = newRawConn(cfg.dialer(), cfg.servers[i%len(cfg.servers)], cfg.sessionTimeout)
		clients[i] = &client{id: i, hist: NewHistogram()}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = rcs[i].connect()
		})
	}
	wg.Wait()
	closeRaw := func() {
		var wg sync.WaitGroup
		for _, rc := range rcs {
			wg.Go(rc.close)
		}
		wg.Wait()
	}
	fn, err := rawOp(cfg.workload, rcs, func(id int) string { return nodePath(cfg.root, id) }, data)
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		closeRaw()
		_ = cleanup()
		return nil, err
	}

	elapsed := drive(ctx, clients, fn, cfg.warmup, cfg.duration, cfg.interval, logw)
	res := collect(cfg, clients, elapsed)
	res.Client = clientRaw
	closeRaw()
	if err := cleanup(); err != nil {
		return res, err
	}
	if res.Ops == 0 && res.Errors > 0 {
		return res, fmt.Errorf("zkbench: every operation failed, last: %v", res.lastErr)
	}
	return res, ctx.Err()
}

// benchData is the data of the workloads' nodes: size letters.
func benchData(size int) []byte {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	return data
}
