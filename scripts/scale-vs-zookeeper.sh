#!/usr/bin/env bash
# scale-vs-zookeeper.sh holds many idle sessions on zkd and on Apache
# ZooKeeper 3.8 (Debian's zookeeper package), one server at a time, and
# prints for each: the server's RSS per session, connects/s, the server's
# CPU per session-second while the sessions ping, the ping round trip, and
# the sessions disconnected or expired. It drives `zkbench -workload
# sessions`, which spreads the sessions over 127.0.0.1…127.0.0.K.
#
# Knobs (environment): SESSIONS="10000 50000" HOLD=30s SETTLE=5s WATCHES=2
# SERVERS="zkd zookeeper" ZKD=<zkd binary, default one built from the tree>
# SESSION_TIMEOUT=10s BENCH_DIR=<dir, default a fresh one in /var/tmp>
# KEEP=1 keeps BENCH_DIR. Not for CI: 50k sessions take minutes and GBs.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/standalone.sh

SESSIONS=${SESSIONS:-"10000 50000"}
HOLD=${HOLD:-30s}
SETTLE=${SETTLE:-5s}
WATCHES=${WATCHES:-2}
SERVERS=${SERVERS:-"zkd zookeeper"}
SESSION_TIMEOUT=${SESSION_TIMEOUT:-10s}
GO=${GO:-go}
command -v "$GO" >/dev/null 2>&1 || GO=/usr/local/go/bin/go
BENCH_DIR=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/var/tmp}/zkd-scale.XXXXXX")}
mkdir -p "$BENCH_DIR" bin
"$GO" build -o bin/zkbench ./cmd/zkbench
if [ -z "${ZKD:-}" ]; then
	"$GO" build -o bin/zkd ./cmd/zkd
	ZKD=$PWD/bin/zkd
fi
# Each session is a descriptor on both sides: lift the hard limit where
# allowed (zkd and zkbench raise their soft limits to it). A container
# without CAP_SYS_RESOURCE keeps its hard limit, which caps SESSIONS.
ulimit -Hn "$(cat /proc/sys/fs/nr_open)" 2>/dev/null && ulimit -Sn "$(cat /proc/sys/fs/nr_open)" || true
echo "scale: RLIMIT_NOFILE $(ulimit -Sn)/$(ulimit -Hn); dir $BENCH_DIR" >&2

SERVER_PID=
cleanup() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	[ "${KEEP:-0}" = 1 ] || rm -rf "$BENCH_DIR"
}
trap cleanup EXIT

# run_one KIND N: a fresh standalone server of KIND holding N sessions.
run_one() {
	local kind=$1 n=$2 dir=$BENCH_DIR/$1-$2 port
	port=$(free_port)
	start_standalone "$kind" "$dir" "$port"
	SERVER_PID=$STARTED_PID
	nice -n 5 bin/zkbench -servers "127.0.0.1:$port" -workload sessions -clients "$n" -duration "$HOLD" \
		-warmup "$SETTLE" -watches "$WATCHES" -session-timeout "$SESSION_TIMEOUT" -pids "$SERVER_PID" -json \
		>"$dir/result.json"
	kill -TERM "$SERVER_PID"
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
	python3 - "$kind" "$n" "$dir/result.json" <<-'PY'
		import json, sys
		kind, n, path = sys.argv[1], sys.argv[2], sys.argv[3]
		r = json.load(open(path))
		print(f"{kind:10} {n:>7} {r.get('rss_per_session', 0):>10.0f} {r.get('connects_per_sec', 0):>10.0f} "
		      f"{r.get('cpu_us_per_session_second', 0):>10.2f} {r['latency_us']['p99']/1000:>9.2f} "
		      f"{r.get('disconnects', 0):>6} {r.get('expired', 0):>6} {r.get('connect_failures', 0):>6}")
	PY
}

printf '%-10s %7s %10s %10s %10s %9s %6s %6s %6s\n' server sessions "RSS B/s" connects/s "CPU µs/s·s" "ping p99" disc expd fail
for n in $SESSIONS; do
	for kind in $SERVERS; do
		run_one "$kind" "$n"
	done
done
