#!/bin/bash
# lockcpu.sh BIN: standalone BIN; zkbench lock (16 go-zk clients on 4 locks) for 6 s; CPU of the server and of zkbench per acquisition, and the machine's idle share.
BIN=$1
. "$(dirname "$0")/standalone.sh"
start_standalone "$BIN"
$ZB -servers 127.0.0.1:23181 -workload lock -locks 4 -clients 16 -duration 8s -warmup 1s -client gozk -json > $DIR/out.json & bp=$!
sleep 3
read -r _ u0 n0 s0 i0 w0 _ < /proc/stat; t0=$(awk '{print $14+$15}' /proc/$pid/stat); c0=$(awk '{print $14+$15}' /proc/$bp/stat)
sleep 5
read -r _ u1 n1 s1 i1 w1 _ < /proc/stat; t1=$(awk '{print $14+$15}' /proc/$pid/stat); c1=$(awk '{print $14+$15}' /proc/$bp/stat)
wait $bp
tot=$(( (u1-u0)+(n1-n0)+(s1-s0)+(i1-i0)+(w1-w0) ))
ops=$(python3 -c "import json;print(json.load(open('$DIR/out.json'))['ops_per_sec'])")
python3 -c "
ops=$ops; srv=($t1-$t0)/100/5; cli=($c1-$c0)/100/5
print('lock 16 on 4: %.0f acquisitions/s; server %.2f cores (%.0f us each), zkbench %.2f cores (%.0f us each); machine idle %d%% iowait %d%%; load %s' % (ops, srv, srv/ops*1e6, cli, cli/ops*1e6, 100*($i1-$i0)/$tot, 100*($w1-$w0)/$tot, open('/proc/loadavg').read().split()[0]))"
