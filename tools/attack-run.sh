#!/bin/bash
# Build and run the adversarial reproducers of tests/attack/ (standalone
# programs: exit 0 when the property holds) against one build directory's
# libkq.a.  usage: tools/attack-run.sh [BUILDDIR [CC [FLAGS...]]]
# KQ_ATTACK_SKIP="name ..." leaves programs out.  Ends with
# "attack: N passed, M failed".
set -u
cd "$(dirname "$0")/.."
dir=${1:-build}; cc=${2:-cc}; shift 2 2>/dev/null
flags=("$@")
out=$(mktemp -d)
pass=0 fail=0
for f in tests/attack/a*.c; do
	n=$(basename "$f" .c)
	case " ${KQ_ATTACK_SKIP:-} " in *" $n "*) echo "attack $n: skipped"; continue ;; esac
	if ! "$cc" -std=c11 -D_GNU_SOURCE -O1 -g -Iinclude "${flags[@]}" -o "$out/$n" "$f" \
	    "$dir/libkq.a" -lpthread 2>"$out/$n.cc"; then
		echo "attack $n: build FAILED"; cat "$out/$n.cc"; fail=$((fail + 1)); continue
	fi
	arg=""; [ "$n" = a6_fork ] && arg=200
	if timeout -k 5 120 "$out/$n" $arg >"$out/$n.log" 2>&1; then
		echo "attack $n: ok"; pass=$((pass + 1))
	else
		echo "attack $n: FAILED (rc=$?)"; tail -5 "$out/$n.log" | sed "s/^/  $n: /"; fail=$((fail + 1))
	fi
done
rm -rf "$out"
echo "attack: $pass passed, $fail failed"
[ $fail -eq 0 ]
