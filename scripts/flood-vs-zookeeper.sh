#!/usr/bin/env bash
# flood-vs-zookeeper.sh measures memory and ping latency under a write
# flood twice the fsync capacity, on zkd and on Apache ZooKeeper 3.8
# (Debian's zookeeper package), one standalone server at a time:
#
#  1. fsync capacity: `zkbench -workload set -clients 1 -size SIZE`, each
#     write waiting for its own fsync;
#  2. SESSIONS idle sessions held by `zkbench -workload sessions` (pinging
#     every third of SESSION_TIMEOUT), and beside them
#  3. `zkbench -workload set -rate 2×capacity` from FLOOD_CLIENTS
#     sessions: an open loop that does not slow down with the server;
#
# and prints the server's peak RSS during the flood (/proc, every 0.2 s),
# the flood's achieved writes/s and p99, and the idle sessions' ping p99,
# disconnects and expiries. Both servers run with their defaults
# (globalOutstandingLimit 1000; ZooKeeper's JVM heap is the JVM default).
#
# RATE=<writes/s> offers that rate to every server instead of twice each
# one's own capacity, for a comparison at the same load.
#
# Knobs (environment): SIZE=16384 SESSIONS=2000 FLOOD=30s FLOOD_CLIENTS=16
# SESSION_TIMEOUT=10s SERVERS="zkd zookeeper" ZKD=<zkd binary, default one
# built from the tree> BENCH_DIR=<dir, default a fresh one in /var/tmp>
# KEEP=1 keeps BENCH_DIR. Not for CI: it writes GBs through fsync.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/standalone.sh

SIZE=${SIZE:-16384}
SESSIONS=${SESSIONS:-2000}
FLOOD=${FLOOD:-30s}
FLOOD_CLIENTS=${FLOOD_CLIENTS:-16}
SESSION_TIMEOUT=${SESSION_TIMEOUT:-10s}
SERVERS=${SERVERS:-"zkd zookeeper"}
GO=${GO:-go}
command -v "$GO" >/dev/null 2>&1 || GO=/usr/local/go/bin/go
BENCH_DIR=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/var/tmp}/zkd-flood.XXXXXX")}
mkdir -p "$BENCH_DIR" bin
"$GO" build -o bin/zkbench ./cmd/zkbench
if [ -z "${ZKD:-}" ]; then
	"$GO" build -o bin/zkd ./cmd/zkd
	ZKD=$PWD/bin/zkd
fi
flood_secs=${FLOOD%s}

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	[ "${KEEP:-0}" = 1 ] || rm -rf "$BENCH_DIR"
}
trap cleanup EXIT

# peak_rss PID SECONDS: the highest VmRSS (KiB) of PID over SECONDS.
peak_rss() {
	local pid=$1 end=$((SECONDS + $2)) peak=0 v
	while [ $SECONDS -lt $end ]; do
		v=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
		[ "${v:-0}" -gt "$peak" ] && peak=$v
		sleep 0.2
	done
	echo "$peak"
}

run_one() {
	local kind=$1 dir=$BENCH_DIR/$1 port srv cap rate sess rss_before rss_peak
	port=$(free_port)
	start_standalone "$kind" "$dir" "$port"
	srv=$STARTED_PID
	PIDS+=("$srv")
	bin/zkbench -servers "127.0.0.1:$port" -workload set -clients 1 -size "$SIZE" -duration 10s -json >"$dir/capacity.json"
	cap=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ops_per_sec"])' "$dir/capacity.json")
	rate=${RATE:-$(python3 -c 'import sys; print(round(2*float(sys.argv[1]), 1))' "$cap")}
	nice -n 5 bin/zkbench -servers "127.0.0.1:$port" -workload sessions -clients "$SESSIONS" -warmup 2s \
		-duration "$((flood_secs + 12))s" -session-timeout "$SESSION_TIMEOUT" -pids "$srv" -json >"$dir/sessions.json" &
	sess=$!
	PIDS+=("$sess")
	sleep 8 # the sessions connect and settle
	rss_before=$(awk '/^VmRSS:/ {print $2}' "/proc/$srv/status")
	peak_rss "$srv" "$((flood_secs + 2))" >"$dir/rss_peak" &
	bin/zkbench -servers "127.0.0.1:$port" -workload set -clients "$FLOOD_CLIENTS" -size "$SIZE" -rate "$rate" \
		-warmup 2s -duration "$FLOOD" -json >"$dir/flood.json"
	wait "$!" 2>/dev/null || true
	rss_peak=$(cat "$dir/rss_peak")
	wait "$sess" || true
	kill -TERM "$srv"
	wait "$srv" 2>/dev/null || true
	python3 - "$kind" "$cap" "$rate" "$rss_before" "$rss_peak" "$dir/flood.json" "$dir/sessions.json" <<-'PY'
		import json, sys
		kind, cap, rate, before, peak = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
		f, s = json.load(open(sys.argv[6])), json.load(open(sys.argv[7]))
		print(f"{kind:10} {cap:>9.0f} {rate:>9.0f} {f['ops_per_sec']:>9.0f} {f['latency_us']['p99']/1000:>9.1f} "
		      f"{before/1024:>8.0f} {peak/1024:>8.0f} {s['latency_us']['p99']/1000:>9.2f} {s['latency_us']['max']/1000:>9.1f} "
		      f"{s.get('disconnects', 0):>5} {s.get('expired', 0):>5}")
	PY
}

printf '%-10s %9s %9s %9s %9s %8s %8s %9s %9s %5s %5s\n' server "fsync w/s" "offered" "achieved" "write p99" \
	"RSS MiB" "peak MiB" "ping p99" "ping max" disc expd
for kind in $SERVERS; do
	run_one "$kind"
done
