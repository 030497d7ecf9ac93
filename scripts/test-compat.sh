#!/usr/bin/env bash
# test-compat.sh runs the client compatibility suites against real zkd
# processes (and, where a suite does so, ZooKeeper 3.8). Each suite is an
# executable compat/<suite>/run that builds what it needs, prints its own
# results ending with a line "N passed, N failed", and exits non-zero when
# anything failed. This script runs every suite present in name order (the
# Kazoo and Curator suites a second time against a 3-member ensemble) and
# fails if any run did. Go compat tests (go-zk) run under `go test ./...`.
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
command -v "$GO" >/dev/null 2>&1 || GO=/usr/local/go/bin/go
mkdir -p bin
if [ -d cmd/zkd ]; then
	"$GO" build -o bin/zkd ./cmd/zkd || exit 1
	export ZKD_BIN="$PWD/bin/zkd"
fi

suites=()
for f in compat/*/run; do
	[ -x "$f" ] && suites+=("$f")
done
if [ ${#suites[@]} -eq 0 ]; then
	echo "test-compat: no compat suites (compat/<suite>/run) found"
	exit 0
fi

# Suites that also run against a 3-member zkd ensemble (their run takes
# --members N).
ensemble_suites=" kazoo curator "

runs=0
failed=0
summary=()
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run_suite() {
	runs=$((runs + 1))
	echo "=== test-compat: $*"
	local status=0
	"$@" 2>&1 | tee "$out" || status=1
	# The run's own closing line, "<suite>: N passed, N failed".
	local last
	last=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
	summary+=("$(printf '%-34s %s' "$*" "${last:-no result line}")")
	if [ "$status" -ne 0 ] || [ -z "$last" ]; then
		echo "--- test-compat: $* FAILED"
		failed=$((failed + 1))
	fi
}
for s in "${suites[@]}"; do
	run_suite "$s"
	name=$(basename "$(dirname "$s")")
	if [[ "$ensemble_suites" == *" $name "* ]]; then
		run_suite "$s" --members 3
	fi
done
echo "=== test-compat summary"
for line in "${summary[@]}"; do
	echo "$line"
done
echo "test-compat: $runs suite runs, $failed with failures"
[ "$failed" -eq 0 ]
