#!/bin/bash
# Run the test binaries of one build directory, each cmocka test in its own
# process under its own time limit, so that a test that hangs or crashes
# takes only itself down.
# usage: tools/run-tests.sh BUILDDIR [PATTERN]
#   KQ_TEST_TIMEOUT  seconds allowed to one test (default 120)
#   KQ_TEST_JOBS     tests of one binary run at the same time (default 2)
# A binary lists its tests with KQ_TEST_LIST=1 and runs one with
# KQ_TEST_FILTER=NAME (t_run_group() in tests/helpers.h).  Prints each test's
# cmocka lines, names every test that failed, hung or crashed, and ends with
# the line "N passed, M failed, K skipped"; exits non-zero when any failed.
set -u
dir=${1:-build}
pat=${2:-}
limit=${KQ_TEST_TIMEOUT:-120}
jobs=${KQ_TEST_JOBS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skip=0 failed=()

run_one() {	# binary name output
	KQ_TEST_FILTER=$2 timeout -k 5 "$limit" "$1" >"$3" 2>&1
	echo $? >"$3.rc"
}

for t in "$dir"/tests/test-*; do
	[ -x "$t" ] || continue
	case "$t" in *"$pat"*) ;; *) continue ;; esac
	b=$(basename "$t")
	mapfile -t names < <(KQ_TEST_LIST=1 timeout 10 "$t" 2>/dev/null)
	if [ ${#names[@]} -eq 0 ]; then
		echo "[  ERROR   ] $b: could not list its tests"
		fail=$((fail + 1))
		failed+=("$b (no test list)")
		continue
	fi
	echo "[==========] $b: ${#names[@]} test(s), each in its own process"
	for i in "${!names[@]}"; do
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
			wait -n
		done
		run_one "$t" "${names[$i]}" "$tmp/$b.$i" &
	done
	wait
	for i in "${!names[@]}"; do
		n=${names[$i]} out=$tmp/$b.$i
		rc=$(cat "$out.rc")
		# The test's own lines, without each process's group banner.
		grep -v -e '^\[==========\]' -e '^\[  PASSED  \]' -e '^\[  FAILED  \] [0-9]' \
		    -e '^\[  SKIPPED \] [0-9]' "$out"
		# (not anchored at the start: a test may leave a line unfinished)
		if grep -q "\[  SKIPPED \] $n\$" "$out"; then
			skip=$((skip + 1))
		elif [ "$rc" -eq 0 ] && grep -q "\[       OK \] $n\$" "$out"; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			case $rc in
			124|137) why="hung: killed after ${limit}s" ;;
			0) why="no result" ;;
			*) if [ "$rc" -gt 128 ]; then
				why="crashed: signal $((rc - 128))"
			   elif grep -q '^\[  ERROR   \]' "$out"; then
				why="error"
			   else
				why="failed"
			   fi ;;
			esac
			echo "[  FAILED  ] $n ($why)"
			failed+=("$b $n ($why)")
		fi
	done
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "failing tests ($(basename "$dir")):"
	printf '  %s\n' "${failed[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
