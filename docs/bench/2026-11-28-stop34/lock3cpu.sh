#!/bin/bash
# lock3cpu.sh BIN: 3 members of BIN; lock 16/4 for 8 s; packets in/out per acquisition summed over members, CPU of servers and zkbench per acquisition
BIN=$1
. "$(dirname "$0")/mntr.sh"
ZB=${ZKBENCH:-/var/tmp/b32/zkbench}
DIR=$(mktemp -d /var/tmp/m3.XXXXXX); pids=()
for i in 1 2 3; do
	mkdir -p $DIR/$i/data; echo $i > $DIR/$i/data/myid
	printf '%s\n' tickTime=2000 initLimit=10 syncLimit=5 dataDir=$DIR/$i/data clientPort=2518$i clientPortAddress=127.0.0.1 maxClientCnxns=0 admin.enableServer=false '4lw.commands.whitelist=*' \
	 server.1=127.0.0.1:25281:25381\;127.0.0.1:25181 server.2=127.0.0.1:25282:25382\;127.0.0.1:25182 server.3=127.0.0.1:25283:25383\;127.0.0.1:25183 > $DIR/$i/zoo.cfg
	$BIN $DIR/$i/zoo.cfg > $DIR/$i/log 2>&1 & pids+=($!)
done
trap 'kill ${pids[*]} 2>/dev/null; wait; rm -rf $DIR' EXIT
for i in 1 2 3; do $ZB -servers 127.0.0.1:2518$i -workload wait -path / -timeout 60s >/dev/null || exit 1; done
$ZB -servers 127.0.0.1:25181,127.0.0.1:25182,127.0.0.1:25183 -workload lock -locks 4 -clients 16 -duration 8s -warmup 1s -json > $DIR/out.json & bp=$!
cpu() { local t=0; for p in ${pids[*]}; do t=$((t+$(awk '{print $14+$15}' /proc/$p/stat))); done; echo $t; }
sleep 3; for i in 1 2 3; do mntr 2518$i > $DIR/m0.$i; done; s0=$(cpu); c0=$(awk '{print $14+$15}' /proc/$bp/stat)
sleep 5; for i in 1 2 3; do mntr 2518$i > $DIR/m1.$i; done; s1=$(cpu); c1=$(awk '{print $14+$15}' /proc/$bp/stat)
wait $bp
python3 - $DIR $((s1-s0)) $((c1-c0)) <<'PY'
import sys,json
d=sys.argv[1]
def rd(f): return {l.split('\t')[0]:l.split('\t')[1] for l in open(f) if '\t' in l}
ops=json.load(open(d+'/out.json'))['ops_per_sec']; n=ops*5
rx=tx=0
for i in (1,2,3):
    a,b=rd('%s/m0.%d'%(d,i)),rd('%s/m1.%d'%(d,i))
    rx+=float(b['zk_packets_received'])-float(a['zk_packets_received']); tx+=float(b['zk_packets_sent'])-float(a['zk_packets_sent'])
print('lock 3 members: %.0f/s; per acquisition %.2f packets in, %.2f out; servers %.0f us, zkbench %.0f us CPU' % (ops, rx/n, tx/n, int(sys.argv[2])/100/n*1e6, int(sys.argv[3])/100/n*1e6))
PY
