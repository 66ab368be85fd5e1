#!/bin/bash
# Build (make fuzz) and run a libFuzzer target for a bounded time over a
# copy of its seed corpus (the tree is not modified), after running every
# regression input once.  The target is KQ_FUZZ_TARGET: kevent (default,
# build-fuzz/fuzz-kevent, tests/fuzz/corpus-kevent, tests/fuzz/regress/)
# or port (build-fuzz/fuzz-port, tests/fuzz/corpus-port,
# tests/fuzz/regress-port/).
#   KQ_FUZZ_SECONDS  fuzzing time (default 60)
#   KQ_FUZZ_KEEP=1   keep the work directory (grown corpus, logs)
#   KQ_FUZZ_EXPLORE=1  a crash found by the timed run is reported, not
#                    counted (CI); the regression inputs and the seed corpus
#                    replayed once still decide
# Ends with "fuzz: N passed, M failed" ("fuzz-port: ..." for the port
# target; 1 passed when nothing crashed; on a crash, 1 failed and the
# reproducer's path); exits non-zero on a crash.
set -u
cd "$(dirname "$0")/.."
secs=${KQ_FUZZ_SECONDS:-60}
work=$(mktemp -d /tmp/kq-fuzz.XXXXXX)
[ "${KQ_FUZZ_KEEP:-0}" = 1 ] || trap 'rm -rf "$work/corpus"' EXIT
target=${KQ_FUZZ_TARGET:-kevent}
bin=build-fuzz/fuzz-$target
corpus=tests/fuzz/corpus-$target
regdir=tests/fuzz/regress
[ "$target" = kevent ] || regdir=tests/fuzz/regress-$target
tag=fuzz
[ "$target" = kevent ] || tag=fuzz-$target
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if ! make -s WERROR=1 fuzz >"$work/build.log" 2>&1; then
	cat "$work/build.log"
	echo "$tag: 0 passed, 1 failed"
	exit 1
fi
fail=0
regress=("$regdir"/*)
if [ -e "${regress[0]}" ]; then
	echo "$tag: ${#regress[@]} regression input(s)"
	if ! timeout -k 5 120 "$bin" -runs=1 "${regress[@]}" >"$work/regress.log" 2>&1; then
		tail -40 "$work/regress.log"
		echo "$tag: a regression input failed (log: $work/regress.log)"
		fail=1
	fi
fi
mkdir -p "$work/corpus" "$work/crashes"
cp "$corpus"/* "$work/corpus/"
echo "$tag: ${secs}s over $(ls "$work/corpus" | wc -l) seed input(s)"
timeout -k 10 $((secs + 120)) "$bin" -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=2048 -max_len=1024 -print_final_stats=1 \
    -artifact_prefix="$work/crashes/" "$work/corpus" >"$work/fuzz.log" 2>&1
rc=$?
grep -E '^#[0-9]+.*(DONE|pulse)|^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
    "$work/fuzz.log" | tail -6
if [ $rc -ne 0 ]; then
	echo "$tag: fuzz-$target exited with status $rc"
	grep -E -A40 'ERROR|invariant broken|deadly signal|timeout' "$work/fuzz.log" | head -60 ||
	    tail -5 "$work/fuzz.log"
	for f in "$work"/crashes/*; do
		[ -e "$f" ] && echo "$tag: crash reproducer: $f ($bin $f; log $work/fuzz.log)"
	done
	# The time-boxed exploration finds new inputs; with KQ_FUZZ_EXPLORE=1
	# (CI) what it finds is reported, and counted only once it is a
	# regression input (see docs/TESTING.md).
	if [ "${KQ_FUZZ_EXPLORE:-0}" = 1 ]; then
		echo "$tag: exploratory run found the input above (not counted)"
		cp -r "$work/crashes" "$work/kept-crashes" 2>/dev/null
	else
		fail=1
	fi
fi
# The seed corpus itself, each input once: part of the verdict.
if ! timeout -k 5 300 "$bin" -runs=0 "$corpus" >"$work/seeds.log" 2>&1; then
	tail -40 "$work/seeds.log"
	echo "$tag: a seed input failed (log: $work/seeds.log)"
	fail=1
fi
if [ $fail -ne 0 ]; then
	echo "$tag: 0 passed, 1 failed"
	exit 1
fi
echo "$tag: 1 passed, 0 failed"
