#!/bin/bash
# lockfloor.sh BIN: the lock row's floor on this machine. Runs zkbench lock (16 go-zk clients on 4
# locks) against a standalone BIN for 8 s and prints, per acquisition over 5 s of it: the CPU of
# zkbench's go-zk clients, the CPU of the server, and the packets the server received and sent
# (mntr); then the minimal server's CPU per request (zkbench -workload ceiling, answer and append
# at 16 clients). The floor of one acquisition is the clients' CPU plus the minimal server's for
# those packets; two cores over it is the most acquisitions a second any server could give these
# clients here.
BIN=$1
. "$(dirname "$0")/../2026-11-28-stop33/standalone.sh"
. "$(dirname "$0")/mntr.sh"
start_standalone "$BIN"
$ZB -servers 127.0.0.1:23181 -workload lock -locks 4 -clients 16 -duration 8s -warmup 1s -client gozk -json > $DIR/out.json & bp=$!
sleep 3
mntr > $DIR/m0; t0=$(awk '{print $14+$15}' /proc/$pid/stat); c0=$(awk '{print $14+$15}' /proc/$bp/stat); read -r _ u0 n0 s0 i0 w0 _ < /proc/stat
sleep 5
mntr > $DIR/m1; t1=$(awk '{print $14+$15}' /proc/$pid/stat); c1=$(awk '{print $14+$15}' /proc/$bp/stat); read -r _ u1 n1 s1 i1 w1 _ < /proc/stat
wait $bp
python3 - $DIR/m0 $DIR/m1 $DIR/out.json $((t1-t0)) $((c1-c0)) $(( (u1-u0)+(n1-n0)+(s1-s0)+(i1-i0)+(w1-w0) )) $((i1-i0)) <<'PY'
import json, sys
def rd(f): return {l.split('\t')[0]: l.split('\t')[1] for l in open(f) if '\t' in l}
a, b = rd(sys.argv[1]), rd(sys.argv[2])
ops = json.load(open(sys.argv[3]))['ops_per_sec']
srv, cli, tot, idle = (int(x) for x in sys.argv[4:8])
n = ops * 5
rx = (float(b['zk_packets_received']) - float(a['zk_packets_received'])) / n
tx = (float(b['zk_packets_sent']) - float(a['zk_packets_sent'])) / n
print('lock 16 on 4: %.0f acquisitions/s, machine idle %d%%, load %s' % (ops, 100 * idle / tot, open('/proc/loadavg').read().split()[0]))
print('  per acquisition: go-zk clients %.0f us CPU, server %.0f us CPU, %.2f packets in, %.2f out'
      % (cli / 100 / n * 1e6, srv / 100 / n * 1e6, rx, tx))
PY
