#!/bin/bash
# allocprof.sh BIN WL C: standalone BIN with -pprof; a 5 s delta allocation profile under zkbench WL at C raw clients.
BIN=$1 WL=$2 C=${3:-64}
ZB=${ZKBENCH:-/var/tmp/b32/zkbench} OUT=/var/tmp/b32/prof; mkdir -p $OUT
DIR=$(mktemp -d /var/tmp/p1.XXXXXX)
cat > $DIR/zoo.cfg <<CFG
tickTime=2000
dataDir=$DIR/data
clientPort=23181
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
CFG
$BIN -pprof 127.0.0.1:16060 $DIR/zoo.cfg > $DIR/log 2>&1 & pid=$!
trap 'kill $pid 2>/dev/null; wait; rm -rf $DIR' EXIT
$ZB -servers 127.0.0.1:23181 -workload wait -path / -timeout 60s >/dev/null || exit 1
$ZB -servers 127.0.0.1:23181 -workload $WL -clients $C -duration 8s -warmup 1s -size 1024 -client raw -json > $DIR/out.json &
bp=$!
sleep 2
curl -s -o $OUT/a-$WL.pb.gz "http://127.0.0.1:16060/debug/pprof/allocs?seconds=5"
wait $bp
python3 -c "import json;r=json.load(open('$DIR/out.json'));print(r['workload'],r['clients'],'ops/s=%.0f'%r['ops_per_sec'])"
