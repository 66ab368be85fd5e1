#!/bin/bash
# Run the test binaries of one build directory, each under a time limit.
# usage: tools/run-tests.sh BUILDDIR [PATTERN]
# Prints each binary's cmocka report and a closing "N passed, N failed" line;
# exits non-zero when any test failed, crashed or timed out.
set -u
dir=${1:-build}
pat=${2:-}
limit=${KQ_TEST_TIMEOUT:-300}
pass=0 fail=0 bins_failed=""
for t in "$dir"/tests/test-*; do
	[ -x "$t" ] || continue
	case "$t" in *"$pat"*) ;; *) continue ;; esac
	out=$(mktemp)
	timeout -k 10 "$limit" "$t" >"$out" 2>&1
	rc=$?
	cat "$out"
	p=$(grep -c '^\[       OK \]' "$out")
	f=$(grep -c '^\[  FAILED  \] [a-z_0-9]' "$out")
	f2=$(grep -c '^\[  ERROR   \]' "$out")
	pass=$((pass + p)); fail=$((fail + f + f2))
	if [ $rc -ne 0 ]; then
		[ $((f + f2)) -eq 0 ] && fail=$((fail + 1))
		bins_failed="$bins_failed $(basename "$t")(rc=$rc)"
	fi
	rm -f "$out"
done
[ -n "$bins_failed" ] && echo "failing binaries:$bins_failed"
echo "$(basename "$dir"): $pass passed, $fail failed"
[ $fail -eq 0 ] && [ -z "$bins_failed" ]
