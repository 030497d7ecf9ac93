// Command zkbench is a load generator for any server that speaks
// ZooKeeper's client protocol (zkd, ZooKeeper itself), driven through the
// go-zookeeper client, one session per simulated client.
//
//	zkbench -servers 127.0.0.1:2181[,…] -workload create|set|get|token|lock|session \
//	        -clients N -duration 10s [-locks L] [-size 1024] [-warmup 2s] [-json]
//
// Each client runs one request at a time, in a closed loop; with -rate R
// (create, set, get) the clients instead start R operations a second in
// all without waiting for replies, an open loop whose offered load does
// not fall when the server slows down. Workloads:
//
//	create  create an ephemeral-sequential node, then delete it (one op)
//	set     setData of -size bytes on the client's own node
//	get     getData of the client's own node (-size bytes)
//	token   getData of the zkd fencing token of the client's own lock node
//	        (docs/fencing.md; zkd only): compare with get -size 170
//	lock    clients share -locks lock paths (client i uses path i mod L) and
//	        take and release go-zk's zk.Lock in a loop; the latency is the
//	        time to acquire. -locks equal to -clients is the uncontended case.
//	session open a connection, create a session, authenticate it by SASL
//	        DIGEST-MD5 if -sasl-user/-sasl-password are set, close it: new
//	        (authenticated) sessions per second
//
// -client raw runs create, set and get (closed loop only) through a minimal
// client on zkd's own jute codec (cmd/zkbench/raw_client.go): one goroutine
// and one connection per session, one request at a time, reused buffers,
// client i on server i mod the number of -servers. go-zk costs the machine
// up to a core, which a small machine takes from the server; raw measures
// the server with a client as lean as the ceiling's (below). Setup and
// cleanup still go through one go-zk session.
//
// -tls-ca ca.pem connects over TLS (a secureClientPort), trusting that CA;
// -tls-cert and -tls-key add a client certificate.
//
// After -warmup, operations are counted for -duration; zkbench prints
// ops/s and latency quantiles (p50, p90, p99, p999, max) from a log-linear
// histogram. All nodes live under /zkbench-<pid>, deleted at the end.
// Failed operations are counted and the clients carry on (go-zk reconnects
// by itself); -interval D prints ops/s and errors every D on stderr, so a
// run across a server restart or leader change shows the outage.
//
// The sessions workload is for scale rather than throughput:
//
//	sessions  open -clients raw sessions (from 127.0.0.1…127.0.0.K,
//	          -source-ips, one address per 25,000 by default), each
//	          setting -watches exists watches and pinging every third of
//	          -session-timeout; hold them -duration after -warmup, and
//	          report connects/s, ping latency, disconnects and expiries,
//	          and with -pids the servers' RSS per session and CPU per
//	          session-second. It raises its own RLIMIT_NOFILE; run another
//	          workload beside it to measure under that load.
//
// The fleet workload is the lock service's day (fleet.go, fleet_run.go):
//
//	fleet  hold -clients go-zk sessions spread over the -servers members
//	       (voters and observers) and -procs processes; make -paths lock
//	       directories under -root where missing; take go-zk's lock
//	       recipe on random paths at an open-loop -rate over the fleet,
//	       each held -hold; report acquisitions/s achieved against
//	       offered, acquire p50/p99/p999 (from the scheduled time), ping
//	       p99 and the longest ping gap (timed on the wire), disconnects,
//	       expiries, and each member's mode, RSS and CPU. -fleet-search
//	       steps the rate up until acquire p99 reaches -search-p99 and
//	       reports the last good rate and p99 at half of it; -fault
//	       kill-leader|kill-observer kills that member -fault-after into
//	       the phase and reports acquire latency over the next 10 s;
//	       -fault fd-limit drives an observer (else a follower) to its
//	       RLIMIT_NOFILE instead, until it refuses a session, and reports
//	       when it serves again.
//
// The ceiling workload measures this machine's limit for any such server
// rather than a server (cmd/zkbench/ceiling.go): a minimal server in a
// child process, driven with 64-byte frames by -clients closed loops.
//
//	ceiling  -ceiling answer: answered at once, the limit of a read;
//	         -ceiling append: answered once group-committed to a log file
//	         with one fdatasync per batch (in -ceiling-dir), the limit of
//	         a durable write
//
// Two helper modes serve scripts/bench-vs-zookeeper.sh:
//
//	fill   create -count persistent nodes of -size bytes under -root
//	       (default /zkbench-fill) with -clients sessions, and keep them
//	wait   poll until -path can be read (connecting as often as needed),
//	       at most -timeout, and print the time that took
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if mode := os.Getenv(ceilingServeEnv); mode != "" {
		fmt.Fprintln(os.Stderr, serveCeiling(mode))
		os.Exit(1)
	}
	cfg, err := parseArgs(os.Args[1:], os.Stderr)
	if err != nil {
		if err == errHelp {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, cfg, os.Stderr)
	if res != nil {
		if werr := res.write(os.Stdout, cfg.json); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
