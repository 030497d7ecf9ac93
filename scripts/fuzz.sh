#!/usr/bin/env bash
# fuzz.sh runs every FuzzXxx target of the module for FUZZTIME each
# (default 30s), one after the other, and fails if any found a crasher
# (go test saves each under its package's testdata/fuzz/ for the owner).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}

found=0
failed=()
while IFS= read -r file; do
	dir=$(dirname "$file")
	for fn in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
		found=$((found + 1))
		echo "=== fuzz ./$dir $fn ($FUZZTIME)"
		"$GO" test -run '^$' -fuzz "^${fn}\$" -fuzztime "$FUZZTIME" "./$dir" </dev/null || failed+=("./$dir $fn")
	done
done < <(grep -rlE '^func Fuzz[A-Za-z0-9_]+\(' --include='*_test.go' . | sed 's|^\./||' | sort)
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: crasher in %s\n' "${failed[@]}"
	echo "fuzz: $found targets, ${#failed[@]} failed"
	exit 1
fi
echo "fuzz: $found targets, no crashers"
