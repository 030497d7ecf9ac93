#!/bin/bash
# measure.sh: issue 18's standalone rows (raw clients, 16 and 64) and lock row (go-zk, 16 on 4), zkd against
# ZooKeeper 3.8, from the repository's root at the commit named in each file.
OUT=docs/bench/2026-11-28-stop34
export ROUNDS=3 DURATION=6s WARMUP=2s ZNODES=1000 SERVERS="zkd zookeeper"
run() { local f=$1; shift; echo "== $f $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; env "$@" scripts/bench-vs-zookeeper.sh > $OUT/$f.txt 2>/var/tmp/$f.err; echo "   done $(date +%T) rc=$?"; }
run s16raw CLIENT=raw CLIENTS=16 WORKLOADS="create set get"
run s64raw CLIENT=raw CLIENTS=64 WORKLOADS="create set get"
run s16lock CLIENTS=16 WORKLOADS="lock:4"
