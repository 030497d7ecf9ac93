#!/bin/bash
# measure2.sh: standalone raw-client rows again at 251b5e0 (the replier), from a worktree at 251b5e0
cd /var/tmp/m32 || exit 1
OUT=/work/main/docs/bench/2026-11-27-stop32
export ROUNDS=3 DURATION=6s WARMUP=2s ZNODES=1000 SERVERS="zkd zookeeper"
run() { local f=$1; shift; echo "== $f $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; env "$@" scripts/bench-vs-zookeeper.sh > $OUT/$f.txt 2>/var/tmp/b32/$f.err; echo "   done $(date +%T) rc=$?"; }
run s64raw-251b5e0 CLIENT=raw CLIENTS=64 WORKLOADS="create set get"
run s16raw-251b5e0 CLIENT=raw CLIENTS=16 WORKLOADS="create set get"
