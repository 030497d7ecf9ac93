#!/bin/bash
# ab.sh CFG BIN...: a fresh standalone zkd per binary and round on CFG
# (clientPort 23181, dataDir /var/tmp/zb/ab), interleaved; per run the
# ops/s, p50, p99 and the server's CPU per op. Env: W (workloads), C
# (clients), D (duration), CLIENT (zkbench client flags), ROUNDS.
B=${ZKBENCH:-bin/zkbench}
CFG=$1
shift
W=${W:-"create set"} C=${C:-16} D=${D:-6s} CLIENT=${CLIENT:--client raw} ROUNDS=${ROUNDS:-3}
echo "load at start $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
	for bin in "$@"; do
		rm -rf /var/tmp/zb/ab && mkdir -p /var/tmp/zb/ab
		"$bin" "$CFG" >/var/tmp/zb/ab.log 2>&1 &
		pid=$!
		sleep 1
		$B -servers 127.0.0.1:23181 -workload set -clients 16 -duration 2s -warmup 0s >/dev/null 2>&1
		for w in $W; do
			t0=$(awk '{print $14+$15}' /proc/$pid/stat)
			out=$($B -servers 127.0.0.1:23181 -workload "$w" -clients "$C" -duration "$D" -warmup 1s $CLIENT -json)
			t1=$(awk '{print $14+$15}' /proc/$pid/stat)
			python3 -c "
import json,sys
r=json.loads(sys.argv[1]); cpu=(int(sys.argv[3])-int(sys.argv[2]))/100
print(f\"{sys.argv[4].split('/')[-1]:10} {r['workload']:6} c={r['clients']:3} ops/s={r['ops_per_sec']:9.0f} p50={r['latency_us']['p50']/1000:.2f}ms p99={r['latency_us']['p99']/1000:.2f}ms srvcpu/op={cpu*1e6/(r['ops_per_sec']*(r['seconds']+1)):.1f}us\")" "$out" "$t0" "$t1" "$bin"
		done
		kill $pid
		wait $pid 2>/dev/null
		sleep 0.5
	done
done
echo "load at end $(cut -d' ' -f1-3 /proc/loadavg)"
