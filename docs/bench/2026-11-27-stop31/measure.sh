#!/bin/bash
# measure.sh: issue 18's standalone table, zkd (HEAD) against ZooKeeper
# 3.8 with `make bench-vs-zk` (scripts/bench-vs-zookeeper.sh), then the
# head before and after the direct log, interleaved (ab.sh).
cd "$(dirname "$0")/../../.." || exit 1
OUT=docs/bench/2026-11-27-stop31
export ROUNDS=3 DURATION=6s WARMUP=2s ZNODES=1000 SERVERS="zkd zookeeper"
run() {
	local f=$1
	shift
	echo "== $f $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
	env "$@" scripts/bench-vs-zookeeper.sh >"$OUT/$f.txt" 2>"/tmp/$f.err"
	echo "   done $(date +%T) rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)"
}
run s16 CLIENTS=16 WORKLOADS="create set get lock:4"
run s1 CLIENTS=1 WORKLOADS=lock:1
run s64 CLIENTS=64 WORKLOADS="create set get lock:4"
