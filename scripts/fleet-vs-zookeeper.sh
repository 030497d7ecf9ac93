#!/usr/bin/env bash
# fleet-vs-zookeeper.sh runs zkbench's fleet workload (issue 19: the lock
# service's day) on zkd and on Apache ZooKeeper 3.8 (Debian's zookeeper
# package) in the same topology, one after the other, with the same knobs,
# and prints one table.
#
# Topology: 3 voters plus OBSERVERS observers (peerType=observer and
# server.N=…:observer on both servers), every member one local process
# listening on 127.0.0.1. The fleet's SESSIONS sessions spread evenly over
# all the members (so each member holds SESSIONS/(3+OBSERVERS): keep that
# under the fd limit, about 19,900 here) and over PROCS zkbench processes.
#
# Phases, each on a fresh ensemble (PHASES, in order):
#   run           RATE acquisitions/s for DURATION
#   search        from RATE up by SEARCH_STEP per DURATION step until
#                 acquire p99 reaches 5 ms; then half the last good rate
#   kill-leader   as run, the leader killed (kill -9) FAULT_AFTER in:
#                 expiries, and acquire p99 over the next 10 s
#   kill-observer as run, the first observer killed FAULT_AFTER in: its
#                 clients reconnect to the others; expiries
#   fd-limit      as run, FAULT_AFTER in the first observer's RLIMIT_NOFILE
#                 lowered (prlimit) to its open descriptors plus 16 and
#                 filled with sessions until one is refused, held 5 s,
#                 closed: how it refuses, expiries, and when it serves
#                 again
#
# Knobs (environment): SESSIONS=100000 PATHS=1000000 RATE=1000 HOLD=10ms
# OBSERVERS=3 DURATION=60s WARMUP=10s PROCS=<one per 18,000 sessions>
# SESSION_TIMEOUT=10s SEARCH_STEP=1.5 FAULT_AFTER=20s PHASES="run"
# SERVERS="zkd zookeeper" ZKD=<zkd binary, default built from the tree>
# BENCH_DIR=<dir> KEEP=1. The full size is minutes and GBs: not for CI.
set -euo pipefail
cd "$(dirname "$0")/.."

SESSIONS=${SESSIONS:-100000}
PATHS=${PATHS:-1000000}
RATE=${RATE:-1000}
HOLD=${HOLD:-10ms}
OBSERVERS=${OBSERVERS:-3}
DURATION=${DURATION:-60s}
WARMUP=${WARMUP:-10s}
PROCS=${PROCS:-$(((SESSIONS + 17999) / 18000))}
SESSION_TIMEOUT=${SESSION_TIMEOUT:-10s}
SEARCH_STEP=${SEARCH_STEP:-1.5}
FAULT_AFTER=${FAULT_AFTER:-20s}
PHASES=${PHASES:-run}
SERVERS=${SERVERS:-"zkd zookeeper"}
. scripts/lib/ensemble.sh
prepare_bench zkd-fleet
MEMBERS=$((3 + OBSERVERS))
echo "fleet: $SESSIONS sessions on 3 voters + $OBSERVERS observers ($((SESSIONS / MEMBERS)) each), $PROCS zkbench processes;" \
	"RLIMIT_NOFILE $(ulimit -Sn); dir $BENCH_DIR" >&2

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[ "${KEEP:-0}" = 1 ] || rm -rf "$BENCH_DIR"
}
trap cleanup EXIT

# phase KIND PHASE DIR: one fleet run; its JSON in DIR/fleet.json, the
# load average beside it in DIR/load.
phase() {
	local kind=$1 phase=$2 dir=$3
	local -a args=(-servers "$(servers_csv)" -pids "$(pids_csv)" -workload fleet -clients "$SESSIONS"
		-procs "$PROCS" -paths "$PATHS" -rate "$RATE" -hold "$HOLD" -duration "$DURATION" -warmup "$WARMUP"
		-session-timeout "$SESSION_TIMEOUT" -root /fleet -json)
	case $phase in
	run) ;;
	search) args+=(-fleet-search -search-step "$SEARCH_STEP") ;;
	kill-leader | kill-observer | fd-limit) args+=(-fault "$phase" -fault-after "$FAULT_AFTER") ;;
	*)
		echo "fleet: unknown phase $phase (run, search, kill-leader, kill-observer, fd-limit)" >&2
		return 1
		;;
	esac
	echo "fleet: $kind $phase: bin/zkbench ${args[*]}" >&2
	if ! bin/zkbench "${args[@]}" >"$dir/fleet.json" 2>"$dir/fleet.log"; then
		echo "fleet: $kind $phase: zkbench failed: $(tail -3 "$dir/fleet.log")" >&2
	fi
	cut -d' ' -f1-3 /proc/loadavg >"$dir/load"
	cat "$dir/fleet.log" >&2
}

for kind in $SERVERS; do
	for ph in $PHASES; do
		dir=$BENCH_DIR/$kind-$ph
		mkdir -p "$dir"
		start_ensemble "$kind" "$dir"
		phase "$kind" "$ph" "$dir"
		stop_ensemble
	done
done

python3 - "$BENCH_DIR" "$SERVERS" "$PHASES" <<-'PY'
	import json, os, sys
	d, kinds, phases = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
	ms = lambda us: f"{us / 1000:.2f}"
	print(f"{'server':10} {'phase':13} {'sessions':>8} {'offered':>8} {'achieved':>8} {'p50 ms':>7} {'p99 ms':>7} "
	      f"{'p999 ms':>7} {'fault p99':>9} {'ping p99':>8} {'gap ms':>7} {'discon':>6} {'expired':>7} {'errors':>6}  "
	      f"members (mode RSS MiB CPU%)  load 1/5/15")
	for k in kinds:
	    for ph in phases:
	        p = f"{d}/{k}-{ph}"
	        try:
	            r = json.load(open(f"{p}/fleet.json"))["fleet"]
	        except (OSError, ValueError, KeyError):
	            print(f"{k:10} {ph:13} failed: see {p}/fleet.log")
	            continue
	        load = open(f"{p}/load").read().strip()
	        for st in r["steps"]:
	            a = st["acquire_us"]
	            fault = ms(st["after_fault_us"]["p99"]) if st.get("after_fault_us") else "-"
	            mem = " ".join(f"{m.get('mode', '?')[:3]} {m.get('rss', 0) / 2**20:.0f} {m.get('cpu_percent', 0):.0f}%"
	                           for m in st.get("members", []))
	            name = ph if not st.get("search") else f"{ph}/{st['search']}"
	            print(f"{k:10} {name:13} {r['sessions']:>8} {st['offered_per_sec']:>8.0f} {st['achieved_per_sec']:>8.0f} "
	                  f"{ms(a['p50']):>7} {ms(a['p99']):>7} {ms(a['p999']):>7} {fault:>9} {ms(st['ping_p99_us']):>8} "
	                  f"{st['max_ping_gap_ms']:>7.0f} {st['disconnects']:>6} {st['expired']:>7} "
	                  f"{st['errors'] + st['unfinished']:>6}  {mem}  {load}")
	            if st.get("fault"):
	                print(f"{'':25}{st['fault']}")
	            per = [m["rss_per_session"] for m in st.get("members", []) if m.get("rss_per_session")]
	            if per:
	                base = " ".join(f"{m.get('rss', 0) / 2**20:.0f}" for m in r.get("members_before_sessions", []))
	                print(f"{'':25}RSS per session over the tree alone: {min(per) / 1024:.1f}-{max(per) / 1024:.1f} KiB "
	                      f"(members before the sessions: {base} MiB)")
	        if r.get("search_p99_us") and r.get("best_rate"):
	            print(f"{'':25}highest rate with p99 < {ms(r['search_p99_us'])} ms: {r['best_rate']:.0f}/s "
	                  f"(p99 {ms(r.get('best_p99_us', 0))} ms); at half: p99 {ms(r.get('half_p99_us', 0))} ms")
	        elif r.get("search_p99_us"):
	            print(f"{'':25}no rate had p99 < {ms(r['search_p99_us'])} ms, not even the first")
PY
