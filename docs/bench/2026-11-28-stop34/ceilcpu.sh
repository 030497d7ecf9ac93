#!/bin/bash
# ceilcpu.sh MODE C: zkbench ceiling MODE at C clients; CPU per request of its minimal server and of its clients
MODE=$1 C=$2
ZB=${ZKBENCH:-/var/tmp/b32/zkbench}
$ZB -workload ceiling -ceiling $MODE -ceiling-dir /var/tmp -clients $C -duration 8s -warmup 1s -json > /tmp/ceil.json & bp=$!
sleep 3
sp=$(pgrep -P $bp | head -1)
t0=$(awk '{print $14+$15}' /proc/$sp/stat); c0=$(awk '{print $14+$15}' /proc/$bp/stat); read -r _ u0 n0 s0 i0 w0 _ < /proc/stat
sleep 5
t1=$(awk '{print $14+$15}' /proc/$sp/stat); c1=$(awk '{print $14+$15}' /proc/$bp/stat); read -r _ u1 n1 s1 i1 w1 _ < /proc/stat
wait $bp
tot=$(( (u1-u0)+(n1-n0)+(s1-s0)+(i1-i0)+(w1-w0) ))
python3 -c "
import json;ops=json.load(open('/tmp/ceil.json'))['ops_per_sec']; srv=($t1-$t0)/100/5; cli=($c1-$c0)/100/5
print('ceiling $MODE $C: %.0f/s; server %.2f cores (%.1f us each), clients %.2f cores (%.1f us each); idle %d%% iowait %d%%; load %s' % (ops, srv, srv/ops*1e6, cli, cli/ops*1e6, 100*($i1-$i0)/$tot, 100*($w1-$w0)/$tot, open('/proc/loadavg').read().split()[0]))"
