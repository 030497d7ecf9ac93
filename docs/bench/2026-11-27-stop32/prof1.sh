#!/bin/bash
# prof1.sh BIN WL [C] [SECS] [CLIENTFLAGS]: standalone BIN with -pprof 127.0.0.1:16060; zkbench WL for SECS+3 s;
# CPU profile of SECS s into /var/tmp/b32/prof/s-WL.pb.gz and a trace of 2 s; machine idle %, server CPU per op.
BIN=$1 WL=$2 C=${3:-16} S=${4:-6} CF=${5:--client raw}
ZB=/var/tmp/b32/zkbench OUT=/var/tmp/b32/prof; mkdir -p $OUT
DIR=$(mktemp -d /var/tmp/p1.XXXXXX)
cat > $DIR/zoo.cfg <<CFG
tickTime=2000
dataDir=$DIR/data
clientPort=23181
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
CFG
$BIN -pprof 127.0.0.1:16060 $DIR/zoo.cfg > $DIR/log 2>&1 & pid=$!
trap 'kill $pid 2>/dev/null; wait; rm -rf $DIR' EXIT
$ZB -servers 127.0.0.1:23181 -workload wait -path / -timeout 60s >/dev/null || exit 1
$ZB -servers 127.0.0.1:23181 -workload $WL -clients $C -duration $((S+3))s -warmup 1s -size 1024 $CF -json > $DIR/out.json &
bp=$!
sleep 2
read -r _ u0 n0 s0 i0 w0 _ < /proc/stat; t0=$(awk '{print $14+$15}' /proc/$pid/stat)
curl -s -o $OUT/s-$WL.pb.gz "http://127.0.0.1:16060/debug/pprof/profile?seconds=$S"
read -r _ u1 n1 s1 i1 w1 _ < /proc/stat; t1=$(awk '{print $14+$15}' /proc/$pid/stat)
wait $bp
tot=$(( (u1-u0)+(n1-n0)+(s1-s0)+(i1-i0)+(w1-w0) ))
echo "idle $(( 100*(i1-i0)/tot ))% iowait $(( 100*(w1-w0)/tot ))%  server cpu $(( (t1-t0) ))cs over ${S}s  load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 -c "import json;r=json.load(open('$DIR/out.json'));print(r['workload'],r['clients'],'ops/s=%.0f p50=%.2fms p99=%.2fms'%(r['ops_per_sec'],r['latency_us']['p50']/1000,r['latency_us']['p99']/1000))"
