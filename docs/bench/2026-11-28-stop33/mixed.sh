#!/bin/bash
# mixed.sh KIND TOTAL LOCKERS RATE: on 3 voters + 3 observers of KIND (zkd or zookeeper), TOTAL sessions
# of which LOCKERS are go-zk fleet sessions taking locks at RATE/s on 100k paths (held 10 ms, 30 s),
# and TOTAL-LOCKERS raw zkbench sessions that only ping (session timeout 30 s). LOCKERS=TOTAL: all go-zk.
set -u
cd /work/main
KIND=$1 TOTAL=$2 LOCKERS=$3 RATE=$4
OBSERVERS=3
ZKD=${ZKD:-}  # empty: prepare_bench builds bin/zkd
. scripts/lib/ensemble.sh
prepare_bench mixed >/dev/null
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM $p 2>/dev/null; done; [ -n "${ip:-}" ] && kill -TERM $ip 2>/dev/null; wait; rm -rf $BENCH_DIR' EXIT
dir=$BENCH_DIR/$KIND; mkdir -p $dir
start_ensemble "$KIND" "$dir"
IDLE=$((TOTAL - LOCKERS))
if [ $IDLE -gt 0 ]; then
	bin/zkbench -servers "$(servers_csv)" -workload sessions -clients $IDLE -procs $(((IDLE + 17999) / 18000)) -reconnect \
		-session-timeout 30s -duration 600s -json > $dir/idle.json 2> $dir/idle.log &
	ip=$!
	for _ in $(seq 600); do grep -q "sessions open in" $dir/idle.log 2>/dev/null && break; sleep 1; done
	grep "sessions open in" $dir/idle.log
fi
echo "load before lockers: $(cut -d' ' -f1-3 /proc/loadavg)"
bin/zkbench -servers "$(servers_csv)" -pids "$(pids_csv)" -workload fleet -clients $LOCKERS -procs $(((LOCKERS + 17999) / 18000)) \
	-paths 100000 -rate $RATE -hold 10ms -duration 30s -warmup 5s -session-timeout 30s -root /fleet -json > $dir/fleet.json 2> $dir/fleet.log
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - $dir/fleet.json <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))["fleet"]
for st in r["steps"]:
    a=st["acquire_us"]
    print("offered %.0f achieved %.0f p50 %.2f p99 %.2f p999 %.2f ms ping p99 %.2f ms discon %d expired %d errors %d members CPU %s" % (
        st["offered_per_sec"], st["achieved_per_sec"], a["p50"]/1000, a["p99"]/1000, a["p999"]/1000, st["ping_p99_us"]/1000,
        st["disconnects"], st["expired"], st["errors"]+st["unfinished"], " ".join("%.0f%%" % m.get("cpu_percent",0) for m in st.get("members",[]))))
PY
if [ $IDLE -gt 0 ]; then kill -INT $ip 2>/dev/null; wait $ip; tail -3 $dir/idle.log; fi
