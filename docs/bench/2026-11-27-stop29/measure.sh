#!/bin/bash
# measure.sh: the issue 18 table on 3 members, zkd (HEAD) vs ZooKeeper 3.8 vs zkdbase (87470a0, this stop's start)
cd /work/wt/m29 || exit 1
OUT=/work/main/docs/bench/2026-11-27-stop29
export ZKD_BASE_BIN=/var/tmp/zb/zkd.h29 ROUNDS=3 DURATION=6s WARMUP=2s ZNODES=1000 SERVERS="zkd zookeeper zkdbase"
run() { local f=$1; shift; echo "== $f $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; env "$@" scripts/bench-vs-zookeeper.sh > $OUT/$f.txt 2>/var/tmp/b29/$f.err; echo "   done $(date +%T) rc=$?"; }
run e16 ENSEMBLE=3 CLIENTS=16 WORKLOADS="create set get lock:4"
run e1 ENSEMBLE=3 CLIENTS=1 WORKLOADS=lock:1
run e64 ENSEMBLE=3 CLIENTS=64 WORKLOADS="create set get lock:4"
