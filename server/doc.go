// Package server is the client side of zkd: it accepts TCP connections that
// speak ZooKeeper 3.8's client protocol, performs the connect handshake, runs
// one ordered request pipeline per connection (reads served from the local
// tree, writes handed to the log through a Backend), delivers watch events,
// authenticates clients, enforces limits and answers the 4-letter words.
//
// # Connections
//
// Each connection runs an ordered pipeline of slots, one per request, in
// arrival order (pipeline.go), with goroutines that exist only while there
// is work and linger a couple of milliseconds before they end:
//
//   - the reader decodes frames, touches the session, submits writes to the
//     Backend at once (so consecutive writes are pipelined into the log)
//     and queues every request as a slot. An idle reader hands the wait
//     for the next packet to a fresh goroutine on a small stack
//     (handoff.go);
//   - a read with nothing before it is answered by the reader itself; a
//     write with nothing before it is answered by the goroutine that
//     completes its Future (zab's apply goroutine, once it applied), so
//     the common closed-loop request wakes no other goroutine;
//   - otherwise the completer takes slots in order: it waits for a write's
//     Future, executes reads against the tree (so a read sees every
//     earlier request of its session), and appends each reply to the
//     output queue;
//   - a reply or event is written at once, with one non-blocking write,
//     when nothing is queued before it (writer.go); what the socket does
//     not take, and everything queued behind it, goes to the writer
//     goroutine, which drains the output queue.
//
// Watch events reach the output queue synchronously from Notify, which the
// apply goroutine calls; the queue is unbounded but capped
// (Config.MaxOutQueueBytes): a connection whose queue grows past the cap is
// closed, so a slow client never blocks the apply goroutine. While a read
// that may register a watch executes, events on its path are held back
// and appended right after that read's reply, so a client never sees an
// event for a watch whose registering reply it has not received yet.
//
// A write is submitted only after every earlier read of its connection has
// executed, so reads never observe writes sent after them.
//
// Reads of /zookeeper/fencing and below are answered from no znode: the
// ensemble's fencing-token public key and a signed token per lock node
// (fencing.go, docs/fencing.md), when the Backend is a FencingSigner.
//
// # Operations
//
// The 4-letter words (ruok, srvr, stat, mntr, conf, cons, envi, isro, wchs,
// wchc, wchp, dump, crst, srst, dirs) answer on a connection whose first four
// bytes are the word, gated by Config.FourLetterWhitelist. Each is backed by
// a method returning a struct or key/value list (Stats, Conns, Monitor,
// Conf, Environment, WatchSummary, …), which AdminHandler also serves as
// ZooKeeper's AdminServer JSON and Collector exports to Prometheus under
// ZooKeeper's metric names, so all three agree. mntr, the admin monitor
// command and Collector render one registry (ZKMetrics over the zkmetrics
// package): figures the server measures itself, and those zab.Observer and
// datatree.Observer feed from the log and the tree (monitor.go).
//
// # Lock order
//
// Server.mu may be held while taking conn.out.mu, never the reverse.
// conn.auth.mu is a leaf. No server or connection lock is held while calling
// into the Backend or the tree.
//
// # Layers
//
// zkd's packages depend one way, cmd → {server, quorum} → zab →
// {datatree, session} → jute; cmd/internal/layers checks it.
// server imports zab (with zab/tlsconf and zab/fencing), datatree,
// session and jute, never quorum: it hands writes to its Backend, which
// cmd/zkd wires to a quorum member.
package server
