#!/bin/bash
# measure.sh: the issue 18 table standalone, zkd (HEAD) vs ZooKeeper 3.8
cd /work/main || exit 1
OUT=/work/main/docs/bench/2026-11-27-stop30
export ROUNDS=3 DURATION=6s WARMUP=2s ZNODES=1000 SERVERS="zkd zookeeper"
run() { local f=$1; shift; echo "== $f $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; env "$@" scripts/bench-vs-zookeeper.sh > $OUT/$f.txt 2>/var/tmp/b30/$f.err; echo "   done $(date +%T) rc=$? $(cut -d' ' -f1-3 /proc/loadavg)"; }
run s16 CLIENTS=16 WORKLOADS="create set get lock:4"
run s1 CLIENTS=1 WORKLOADS=lock:1
run s64 CLIENTS=64 WORKLOADS="create set get lock:4"
