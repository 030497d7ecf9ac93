#!/usr/bin/env bash
# scale-ensemble-vs-zookeeper.sh measures sessions at scale on a 3-member
# zkd ensemble and a 3-member Apache ZooKeeper 3.8 ensemble (Debian's
# zookeeper package), one ensemble at a time, in two phases each:
#
#  hold   first `zkbench -workload lock` (16 clients on 16 locks) alone for
#         LOCK_TIME, the baseline; then SESSIONS idle pinging sessions spread
#         over the members, split over PROCS zkbench processes (each holds at
#         most its RLIMIT_NOFILE). Once they are open and SETTLE has passed,
#         the members' RSS per session (each member's growth over the
#         sessions connected to it) and, over IDLE, their CPU per
#         session-second while nothing else runs; then the lock workload
#         again for LOCK_TIME beside the sessions: its acquire p99. Then the
#         sessions' disconnects and expiries over the whole hold.
#  storm  STORM sessions spread over the members with -reconnect; after
#         its sessions are open (and 5 s) the leader is killed (KILL=KILL, or KILL=TERM), the
#         sessions it held (and, on ZooKeeper, the followers' too: a follower
#         that loses its leader drops its clients) resume on the others with
#         their id, password and last zxid. Reports how many were
#         disconnected, how many came back, how long that took, and expiries.
#
# Each member is one process with the machine's RLIMIT_NOFILE: SESSIONS/3
# must stay under it (and STORM/2, once the leader is gone).
#
# Knobs (environment): SESSIONS=50000 PROCS=3 HOLD=95s SETTLE=10s IDLE=15s
# LOCK_TIME=60s STORM=20000 STORM_PROCS=2 STORM_HOLD=40s KILL=KILL
# SESSION_TIMEOUT=10s WATCHES=2 PHASES="hold storm" SERVERS="zkd zookeeper"
# ZKD=<zkd binary, default built from the tree> BENCH_DIR=<dir> KEEP=1.
# Not for CI: minutes and GBs.
set -euo pipefail
cd "$(dirname "$0")/.."

SESSIONS=${SESSIONS:-50000}
PROCS=${PROCS:-3}
HOLD=${HOLD:-95s}
SETTLE=${SETTLE:-10s}
IDLE=${IDLE:-15s}
LOCK_TIME=${LOCK_TIME:-60s}
STORM=${STORM:-20000}
STORM_PROCS=${STORM_PROCS:-2}
STORM_HOLD=${STORM_HOLD:-40s}
KILL=${KILL:-KILL}
SESSION_TIMEOUT=${SESSION_TIMEOUT:-10s}
WATCHES=${WATCHES:-2}
PHASES=${PHASES:-"hold storm"}
SERVERS=${SERVERS:-"zkd zookeeper"}
. scripts/lib/ensemble.sh
prepare_bench zkd-scale3
echo "scale: RLIMIT_NOFILE $(ulimit -Sn)/$(ulimit -Hn); dir $BENCH_DIR" >&2

OBSERVERS=0
PIDS=()
BG=()
cleanup() {
	for p in "${BG[@]}" "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${BG[@]}" "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	[ "${KEEP:-0}" = 1 ] || rm -rf "$BENCH_DIR"
}
trap cleanup EXIT

# rss PID: resident set in KiB.
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# cpu PID: user+system time in clock ticks.
cpu() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# leader: the index (0-2) of the member whose srvr says leader.
leader() {
	python3 - "${ADDRS[@]}" <<-'PY'
		import socket, sys
		for i, a in enumerate(sys.argv[1:]):
		    h, p = a.rsplit(":", 1)
		    try:
		        s = socket.create_connection((h, int(p)), timeout=5); s.sendall(b"srvr")
		        out = b""
		        while (b := s.recv(4096)):
		            out += b
		        if b"Mode: leader" in out:
		            print(i); break
		    except OSError:
		        pass
	PY
}

# wait_holding LOG: until zkbench logs that its sessions are open.
wait_holding() {
	until grep -q '^zkbench: .* sessions open in .*holding' "$1" 2>/dev/null; do
		if ! kill -0 "${BG[-1]}" 2>/dev/null; then
			echo "scale: zkbench ended before holding; see $1" >&2
			return 1
		fi
		sleep 1
	done
}

# phase_hold KIND DIR
phase_hold() {
	local kind=$1 dir=$2 i
	local -a base=() held=() cpu0=() cpu1=()
	bin/zkbench -servers "$(servers_csv)" -workload lock -clients 16 -locks 16 -warmup 2s -duration "$LOCK_TIME" \
		-json >"$dir/lock-alone.json" 2>"$dir/lock-alone.log"
	for i in 0 1 2; do base+=("$(rss "${PIDS[$i]}")"); done
	bin/zkbench -servers "$(servers_csv)" -workload sessions -clients "$SESSIONS" -procs "$PROCS" \
		-duration "$HOLD" -warmup "$SETTLE" -watches "$WATCHES" -session-timeout "$SESSION_TIMEOUT" \
		-pids "$(pids_csv)" -json >"$dir/hold.json" 2>"$dir/hold.log" &
	BG=($!)
	wait_holding "$dir/hold.log"
	sleep "${SETTLE%s}"
	for i in 0 1 2; do held+=("$(rss "${PIDS[$i]}")") cpu0+=("$(cpu "${PIDS[$i]}")"); done
	sleep "${IDLE%s}"
	for i in 0 1 2; do cpu1+=("$(cpu "${PIDS[$i]}")"); done
	bin/zkbench -servers "$(servers_csv)" -workload lock -clients 16 -locks 16 -warmup 2s -duration "$LOCK_TIME" \
		-json >"$dir/lock.json" 2>"$dir/lock.log" || echo "scale: $kind: lock workload failed: $(tail -1 "$dir/lock.log")" >&2
	wait "${BG[0]}"
	BG=()
	python3 - "$kind" "$SESSIONS" "$dir" "${IDLE%s}" "${base[@]}" "${held[@]}" "${cpu0[@]}" "${cpu1[@]}" <<-'PY'
		import json, sys
		kind, n, d, idle = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
		def load(f):
		    try:
		        return json.load(open(f"{d}/{f}.json"))
		    except ValueError:  # that run failed: its log says why
		        return {"latency_us": {"p99": float("nan")}, "ops_per_sec": float("nan"), "errors": "all"}
		hold, lock, alone = (load(f) for f in ("hold", "lock", "lock-alone"))
		v = list(map(int, sys.argv[5:]))
		base, held, c0, c1 = v[0:3], v[3:6], v[6:9], v[9:12]
		per = [f"{(h - b) * 1024 / (n / 3):.0f}" for b, h in zip(base, held)]
		cpu = sum(b - a for a, b in zip(c0, c1)) * 10_000 / n / idle  # ticks are 10 ms; µs per session-second
		print(f"{kind:10} hold  {n:>6} sessions: lock p99 {lock['latency_us']['p99']/1000:.2f} ms beside them, "
		      f"{alone['latency_us']['p99']/1000:.2f} ms alone ({lock['ops_per_sec']:.0f} / {alone['ops_per_sec']:.0f} "
		      f"locks/s, {lock['errors']} errors); RSS/session per member {'/'.join(per)} B; "
		      f"{hold.get('connects_per_sec', 0):.0f} connects/s; idle CPU {cpu:.2f} µs/session-s (all members); "
		      f"ping p99 {hold['latency_us']['p99']/1000:.1f} ms; "
		      f"disconnects {hold.get('disconnects', 0)}, expired {hold.get('expired', 0)}, "
		      f"failed {hold.get('connect_failures', 0)}")
	PY
}

# phase_storm KIND DIR
phase_storm() {
	local kind=$1 dir=$2 l
	bin/zkbench -servers "$(servers_csv)" -workload sessions -clients "$STORM" -procs "$STORM_PROCS" \
		-reconnect -duration "$STORM_HOLD" -warmup 5s -watches "$WATCHES" -session-timeout "$SESSION_TIMEOUT" \
		-json >"$dir/storm.json" 2>"$dir/storm.log" &
	BG=($!)
	wait_holding "$dir/storm.log"
	sleep 5
	l=$(leader)
	echo "scale: $kind: kill -$KILL leader m$((l + 1)) (pid ${PIDS[$l]})" >&2
	kill "-$KILL" "${PIDS[$l]}"
	wait "${BG[0]}"
	BG=()
	python3 - "$kind" "$STORM" "$dir/storm.json" <<-'PY'
		import json, sys
		kind, n, r = sys.argv[1], int(sys.argv[2]), json.load(open(sys.argv[3]))
		rc = r.get("reconnect_us") or {}
		print(f"{kind:10} storm {n:>6} sessions: {r.get('disconnects', 0)} disconnected, "
		      f"{r.get('reconnected', 0)} resumed, last {r.get('reconnect_span_ms', 0)/1000:.1f} s after the first "
		      f"disconnect (each p99 {rc.get('p99', 0)/1e6:.2f} s, max {rc.get('max', 0)/1e6:.2f} s); "
		      f"expired {r.get('expired', 0)}, failed {r.get('connect_failures', 0)}")
	PY
}

for kind in $SERVERS; do
	for phase in $PHASES; do
		dir=$BENCH_DIR/$kind-$phase
		mkdir -p "$dir"
		start_ensemble "$kind" "$dir"
		"phase_$phase" "$kind" "$dir"
		stop_ensemble
	done
done
