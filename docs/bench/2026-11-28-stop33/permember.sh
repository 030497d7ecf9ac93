#!/bin/bash
# permember.sh KIND WL: 3 voters + OBSERVERS (default 3) observers of KIND; zkbench WL with one go-zk
# client against each member in turn. OBS_DIR (zkd only) puts the observers' data directories there
# (a tmpfs such as /dev/shm/obs, emptied first: an fdatasync there costs nothing).
set -u
cd /work/main
KIND=$1 WL=$2
OBSERVERS=${OBSERVERS:-3}
ZKD=${ZKD:-}  # empty: prepare_bench builds bin/zkd
. scripts/lib/ensemble.sh
if [ -n "${OBS_DIR:-}" ]; then
	# start_ensemble with the observers' dataDir under OBS_DIR.
	eval "$(declare -f start_ensemble | sed 's|mkdir -p "\$dir/m\$i/data";|mkdir -p "\$dir/m\$i/data"; [ "\$i" -gt 3 ] \&\& mkdir -p "\$OBS_DIR/m\$i/data" \&\& echo "\$i" > "\$OBS_DIR/m\$i/data/myid";|; s|"dataDir=\$dir/m\$i/data"|"dataDir=\$( [ "\$i" -gt 3 ] \&\& echo "\$OBS_DIR/m\$i/data" \|\| echo "\$dir/m\$i/data")"|')"
fi
prepare_bench perm >/dev/null
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM $p 2>/dev/null; done; wait; rm -rf $BENCH_DIR' EXIT
dir=$BENCH_DIR/$KIND; mkdir -p $dir
start_ensemble "$KIND" "$dir" >/dev/null 2>&1
for a in "${ADDRS[@]}"; do
	mode=$(python3 -c "
import socket;s=socket.create_connection(('${a%:*}',${a#*:}));s.sendall(b'srvr');b=b''
while True:
  d=s.recv(65536)
  if not d: break
  b+=d
print([l for l in b.decode().splitlines() if 'Mode' in l][0])")
	bin/zkbench -servers "$a" -workload $WL -clients 1 -duration 4s -warmup 1s -client gozk -json 2>/dev/null | python3 -c "
import json,sys;r=json.load(sys.stdin);l=r['latency_us']
print('%-22s %-16s %s ops/s=%.0f p50=%.2f p99=%.2f ms' % ('$a', '$mode', r['workload'], r['ops_per_sec'], l['p50']/1000, l['p99']/1000))"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
