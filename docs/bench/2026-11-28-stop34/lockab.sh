#!/bin/bash
# lockab.sh ROUNDS BIN...: lockfloor.sh-like, interleaved: acquisitions/s, p99, server CPU and fdatasyncs per acquisition
R=$1; shift
D=$(cd "$(dirname "$0")" && pwd)
for r in $(seq $R); do for bin in "$@"; do
(
. "$D/../2026-11-28-stop33/standalone.sh"
. "$D/mntr.sh"
start_standalone "$bin"
$ZB -servers 127.0.0.1:23181 -workload lock -locks 4 -clients 16 -duration 7s -warmup 1s -client gozk -json > $DIR/out.json & bp=$!
sleep 3; mntr > $DIR/m0; t0=$(awk '{print $14+$15}' /proc/$pid/stat); sleep 4; mntr > $DIR/m1; t1=$(awk '{print $14+$15}' /proc/$pid/stat)
wait $bp
python3 - $DIR/m0 $DIR/m1 $DIR/out.json $((t1-t0)) $bin <<'PY'
import json,sys
def rd(f): return {l.split('\t')[0]: l.split('\t')[1] for l in open(f) if '\t' in l}
a,b=rd(sys.argv[1]),rd(sys.argv[2]); r=json.load(open(sys.argv[3])); ops=r['ops_per_sec']; n=ops*4
fs=float(b['zk_cnt_fsynctime'])-float(a['zk_cnt_fsynctime'])
print('%-10s lock %6.0f/s p99 %.2fms  srv %3.0f us/acq  fsyncs/acq %.2f' % (sys.argv[5].split('/')[-1], ops, r['latency_us']['p99']/1000, int(sys.argv[4])/100/n*1e6, fs/n))
PY
)
done; done
