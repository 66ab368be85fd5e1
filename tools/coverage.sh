#!/bin/bash
# Line coverage of src/ reached by the test suite plus the fuzz corpus:
# builds the library, the tests, the fault-injection sweep and the fuzz
# targets' standalone drivers (tests/fuzz/standalone-main.c; fuzz-kevent
# and fuzz-port) with gcc --coverage (-O0) and -DKQ_FAULT (inert until
# armed) into build-cov/, runs the test binaries (tools/run-tests.sh
# build-cov), the differential test's CI seeds (KQ_MODEL_SECONDS=0), the
# fault-injection sweep (tests/fault-sweep.c: every filter with the k-th
# allocation, descriptor creation or blocking wait failing), the attack
# reproducers (tests/attack/) and every input of tests/fuzz/corpus-kevent,
# tests/fuzz/regress and tests/fuzz/corpus-port once, then prints gcov's
# per-file line coverage of src/ and a closing line
#   coverage: NN.N% of N lines of src/ (N executed)
#   coverage: N passed, M failed
# (1 passed when the build, the tests and the model's seeds passed and the
# figure is at least KQ_COV_MIN percent, when that is set; tools/test-all.sh
# sets it).
set -u
cd "$(dirname "$0")/.."
B=build-cov
JOBS=${JOBS:-2}
fail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# make does not track flags: a build-cov/ from before -DKQ_FAULT joined
# SAN=cov lacks the hooks, so start it again.
stamp="cov+fault 1"
[ "$(cat "$B/.flags" 2>/dev/null)" = "$stamp" ] || rm -rf "$B"
mkdir -p "$B" && echo "$stamp" >"$B/.flags"
find "$B" -name '*.gcda' -delete 2>/dev/null
if ! make -s -j"$JOBS" WERROR=1 SAN=cov OPT="-O0 -g" CC=gcc lib tests \
    $B/tests/fault-sweep $B/fuzz-kevent-standalone $B/fuzz-port-standalone \
    >"$log" 2>&1; then
	cat "$log"
	echo "coverage: 0 passed, 1 failed"
	exit 1
fi
tools/run-tests.sh "$B" >"$log" 2>&1 || { grep -A3 FAILED "$log" | head -40; fail=1; }
tail -1 "$log"
KQ_MODEL_SECONDS=0 timeout -k 5 300 $B/tests/fuzz-diff >"$log" 2>&1 || { tail -5 "$log"; fail=1; }
tail -1 "$log"
# The fault sweep and the attack reproducers run here for the lines they
# reach; their verdicts are the job of their own steps in tools/test-all.sh
# (ASan, TSan), so a failure here is shown but fails nothing.  (The sweep's
# children exit() normally, so their counters are written.)
timeout -k 5 900 $B/tests/fault-sweep >"$log" 2>&1 ||
    { grep FAIL "$log" | head -20; echo "(fault sweep failed: not counted here)"; }
tail -1 "$log"
tools/attack-run.sh "$B" gcc --coverage -DKQ_COVERAGE >"$log" 2>&1 ||
    { grep -A5 FAILED "$log" | head -40; echo "(attack reproducers failed: not counted here)"; }
tail -1 "$log"
inputs=(tests/fuzz/corpus-kevent)
[ -d tests/fuzz/regress ] && inputs+=(tests/fuzz/regress)
timeout -k 5 300 $B/fuzz-kevent-standalone "${inputs[@]}" || fail=1
pinputs=(tests/fuzz/corpus-port)
[ -d tests/fuzz/regress-port ] && pinputs+=(tests/fuzz/regress-port)
timeout -k 5 300 $B/fuzz-port-standalone "${pinputs[@]}" || fail=1

# gcov -n: the summary only, no .gcov files.
( cd "$B/obj" && gcov -n -o . ../../src/*.c 2>/dev/null ) | awk '
	/^File / { f = $2; gsub(/\x27/, "", f); sub(/.*\/src\//, "src/", f); next }
	/^Lines executed:/ && f ~ /^src\/.*\.c$/ {
		split($2, a, ":"); pct = a[2]; sub(/%/, "", pct); n = $4
		if (!(f in seen)) {
			seen[f] = 1
			printf "%-22s %6.1f%% of %5d lines\n", f, pct, n
			tot += n; ex += pct * n / 100
		}
		f = ""
	}
	END {
		if (tot == 0) { print "coverage: no data"; exit 1 }
		printf "coverage: %.1f%% of %d lines of src/ (%d executed)\n", 100 * ex / tot, tot, ex + 0.5
	}' | tee "$log"
pct=$(sed -n 's/^coverage: \([0-9.]*\)%.*/\1/p' "$log")
[ -n "$pct" ] || fail=1
if [ -n "${KQ_COV_MIN:-}" ] && [ -n "$pct" ] &&
    awk -v p="$pct" -v m="$KQ_COV_MIN" 'BEGIN { exit !(p < m) }'; then
	echo "coverage: below KQ_COV_MIN=$KQ_COV_MIN%"
	fail=1
fi
if [ $fail -ne 0 ]; then
	echo "coverage: 0 passed, 1 failed"
	exit 1
fi
echo "coverage: 1 passed, 0 failed"
