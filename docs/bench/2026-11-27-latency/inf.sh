#!/bin/bash
# inf.sh: standalone A/B of ZKD_EXP_INFLIGHT values with /var/tmp/b29/zkd-inf, interleaved
B=/work/main/bin/zkbench
BIN=/var/tmp/b29/zkd-inf
W=${W:-"create set"}; C=${C:-16}; D=${D:-6s}; CLIENT=${CLIENT:--client raw}; ROUNDS=${ROUNDS:-3}
for r in $(seq $ROUNDS); do
for v in $VALS; do
  rm -rf /var/tmp/zb/ab; mkdir -p /var/tmp/zb/ab
  ZKD_EXP_INFLIGHT=$v $BIN /var/tmp/zb/ab.cfg > /var/tmp/zb/ab.log 2>&1 &
  pid=$!
  sleep 1
  $B -servers 127.0.0.1:23181 -workload set -clients 16 -duration 2s -warmup 0s >/dev/null 2>&1
  for w in $W; do
    t0=$(awk '{print $14+$15}' /proc/$pid/stat)
    out=$($B -servers 127.0.0.1:23181 -workload $w -clients $C -duration $D -warmup 1s $CLIENT -json)
    t1=$(awk '{print $14+$15}' /proc/$pid/stat)
    python3 -c "
import json,sys
r=json.loads(sys.argv[1]); cpu=(int(sys.argv[3])-int(sys.argv[2]))/100
print(f\"inflight={sys.argv[4]:3} {r['workload']:6} c={r['clients']:3} ops/s={r['ops_per_sec']:9.0f} p50={r['latency_us']['p50']/1000:.2f}ms p99={r['latency_us']['p99']/1000:.2f}ms srvcpu/op={cpu*1e6/(r['ops_per_sec']*(r['seconds']+1)):.1f}us\")" "$out" $t0 $t1 $v
  done
  kill $pid; wait $pid 2>/dev/null; sleep 0.5
done
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
