#!/bin/bash
# measure1.sh: the issue 18 table standalone, zkd (3e89bcd) vs ZooKeeper 3.8, from a worktree at 3e89bcd
cd /var/tmp/m32 || exit 1
OUT=/work/main/docs/bench/2026-11-27-stop32
export ROUNDS=3 DURATION=6s WARMUP=2s ZNODES=1000 SERVERS="zkd zookeeper"
run() { local f=$1; shift; echo "== $f $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; env "$@" scripts/bench-vs-zookeeper.sh > $OUT/$f.txt 2>/var/tmp/b32/$f.err; echo "   done $(date +%T) rc=$?"; }
run s16raw CLIENT=raw CLIENTS=16 WORKLOADS="create set get"
run s64raw CLIENT=raw CLIENTS=64 WORKLOADS="create set get"
run s16 CLIENTS=16 WORKLOADS="create set get lock:4"
run s1 CLIENTS=1 WORKLOADS=lock:1
