#!/bin/bash
# prof3.sh BIN WL [C] [SECS]: 3 members of BIN with -pprof on 127.0.0.1:1606N; zkbench WL (go-zk, 1 KiB)
# for SECS+4 s; CPU profiles of all three members over SECS s, into /var/tmp/b32/prof/WL.N.pb.gz; machine idle %.
BIN=$1 WL=$2 C=${3:-16} S=${4:-8}
ZB=/var/tmp/b32/zkbench
OUT=/var/tmp/b32/prof; mkdir -p $OUT
DIR=$(mktemp -d /var/tmp/p3.XXXXXX); pids=()
for i in 1 2 3; do
	mkdir -p $DIR/$i/data; echo $i > $DIR/$i/data/myid
	cat > $DIR/$i/zoo.cfg <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$DIR/$i/data
clientPort=2518$i
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
server.1=127.0.0.1:25281:25381;127.0.0.1:25181
server.2=127.0.0.1:25282:25382;127.0.0.1:25182
server.3=127.0.0.1:25283:25383;127.0.0.1:25183
CFG
	$BIN -pprof 127.0.0.1:1606$i $DIR/$i/zoo.cfg > $DIR/$i/log 2>&1 & pids+=($!)
done
trap 'kill ${pids[*]} 2>/dev/null; wait; rm -rf $DIR' EXIT
for i in 1 2 3; do $ZB -servers 127.0.0.1:2518$i -workload wait -path / -timeout 60s >/dev/null || exit 1; done
args=(-workload $WL -clients $C -duration $((S+3))s -warmup 1s -size 1024 -json)
[ $WL = lock ] && args+=(-locks 4)
$ZB -servers 127.0.0.1:25181,127.0.0.1:25182,127.0.0.1:25183 "${args[@]}" > $DIR/out.json &
bp=$!
sleep 2
read -r _ u0 n0 s0 i0 w0 _ < /proc/stat
cps=(); for i in 1 2 3; do curl -s -o $OUT/$WL.$i.pb.gz "http://127.0.0.1:1606$i/debug/pprof/profile?seconds=$S" & cps+=($!); done
wait ${cps[*]}
read -r _ u1 n1 s1 i1 w1 _ < /proc/stat
wait $bp
tot=$(( (u1-u0)+(n1-n0)+(s1-s0)+(i1-i0)+(w1-w0) ))
echo "idle $(( 100*(i1-i0)/tot ))% iowait $(( 100*(w1-w0)/tot ))%  load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in 1 2 3; do python3 -c "
import socket,sys;s=socket.create_connection(('127.0.0.1',int(sys.argv[1])));s.sendall(b'mntr');d=b''
while True:
  b=s.recv(65536)
  if not b: break
  d+=b
print('member',sys.argv[2],[l for l in d.decode().splitlines() if l.startswith('zk_server_state')])" 2518$i $i; done
python3 -c "import json;r=json.load(open('$DIR/out.json'));print(r['workload'],r['clients'],'ops/s=%.0f p50=%.2fms p99=%.2fms'%(r['ops_per_sec'],r['latency_us']['p50']/1000,r['latency_us']['p99']/1000))"
