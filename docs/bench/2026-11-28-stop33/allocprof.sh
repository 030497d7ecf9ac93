#!/bin/bash
# allocprof.sh BIN WL C: standalone BIN with -pprof; a 5 s delta allocation profile under zkbench WL at C raw clients.
BIN=$1 WL=$2 C=${3:-64}
OUT=/var/tmp/b32/prof; mkdir -p $OUT
. "$(dirname "$0")/standalone.sh"
start_standalone "$BIN" -pprof 127.0.0.1:16060
$ZB -servers 127.0.0.1:23181 -workload $WL -clients $C -duration 8s -warmup 1s -size 1024 -client raw -json > $DIR/out.json &
bp=$!
sleep 2
curl -s -o $OUT/a-$WL.pb.gz "http://127.0.0.1:16060/debug/pprof/allocs?seconds=5"
wait $bp
python3 -c "import json;r=json.load(open('$DIR/out.json'));print(r['workload'],r['clients'],'ops/s=%.0f'%r['ops_per_sec'])"
