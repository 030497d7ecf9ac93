#!/usr/bin/env bash
# ceiling.sh measures this machine's ceiling for a ZooKeeper-like server
# (zkbench -workload ceiling, cmd/zkbench/ceiling.go): a minimal server on
# loopback TCP that only answers 64-byte requests (the limit of a read),
# and one that answers them once group-committed to a log file with one
# fdatasync per batch (the limit of a durable write), each at every client
# count in CLIENTS, ROUNDS times; it prints the median round and the
# load average before and after.
#
# Knobs (environment): CLIENTS="16 64" ROUNDS=3 DURATION=10s WARMUP=2s
# DIR=/var/tmp (the disk of the append log; use the one zkd's data is on)
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-"16 64"}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
DIR=${DIR:-/var/tmp}
GO=${GO:-go}
command -v "$GO" >/dev/null 2>&1 || GO=/usr/local/go/bin/go
"$GO" build -o bin/zkbench ./cmd/zkbench

echo "ceiling: load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 1; r <= ROUNDS; r++)); do
	for mode in answer append; do
		for c in $CLIENTS; do
			echo "ceiling: round $r/$ROUNDS $mode clients=$c" >&2
			bin/zkbench -workload ceiling -ceiling "$mode" -ceiling-dir "$DIR" -clients "$c" \
				-duration "$DURATION" -warmup "$WARMUP" -json >>"$out"
		done
	done
done
echo "ceiling: load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault((r["workload"], r["clients"]), []).append(r)
print(f"{'ceiling':<16} {'clients':>7} {'ops/s (median)':>15} {'min':>9} {'max':>9} {'p50 ms':>7} {'p99 ms':>7}")
for (w, c), rs in sorted(by.items()):
    ops = [x["ops_per_sec"] for x in rs]
    med = sorted(rs, key=lambda x: x["ops_per_sec"])[len(rs) // 2]
    print(f"{w:<16} {c:>7} {statistics.median(ops):>15,.0f} {min(ops):>9,.0f} {max(ops):>9,.0f} "
          f"{med['latency_us']['p50'] / 1000:>7.2f} {med['latency_us']['p99'] / 1000:>7.2f}")
PY
