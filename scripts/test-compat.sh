#!/usr/bin/env bash
# test-compat.sh runs the client compatibility suites against real zkd
# processes (and, where a suite does so, ZooKeeper 3.8). Each suite is an
# executable compat/<suite>/run that builds what it needs, prints its own
# results ending with a line "N passed, N failed", and exits non-zero when
# anything failed. This script runs every suite present in name order and
# fails if any did. Go compat tests (go-zk) run under `go test ./...`.
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

failed=0
for s in "${suites[@]}"; do
	echo "=== test-compat: $s"
	if ! "$s"; then
		echo "--- test-compat: $s FAILED"
		failed=$((failed + 1))
	fi
done
echo "test-compat: ${#suites[@]} suites run, $failed with failures"
[ "$failed" -eq 0 ]
