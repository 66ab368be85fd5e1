#!/bin/sh
# Smoke test of kqbench: build it, run every scenario once at its smallest
# size (kqbench --tiny), and check that kqbench exits 0 and that every
# scenario wrote its table <scenario>.tsv with a header and at least one
# row.  Prints one line per scenario and a final summary line.  The httpd
# scenario (a real web server, built from Debian's source) has its own
# smoke test, tools/httpd-smoke.sh, run after tests/clients/lighttpd.sh.
set -u
cd "$(dirname "$0")/.."
make -s -j2 WERROR=1 lib bench >/dev/null || {
	echo "bench-smoke: build failed"
	echo "bench-smoke: 0 passed, 1 failed"
	exit 1
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
t0=$(date +%s)
scen=$(build/kqbench --list | awk '$1 != "httpd" { print $1 }')
build/kqbench --tiny --scenario "$(echo $scen | tr ' ' ,)" --out "$out" \
    >"$out/stdout.txt" 2>"$out/stderr.txt"
rc=$?
t1=$(date +%s)
passed=0
failed=0
for s in $scen; do
	tsv="$out/$s.tsv"
	if [ -f "$tsv" ] && [ "$(wc -l <"$tsv")" -ge 2 ] &&
	    ! grep -q "scenario $s FAILED" "$out/stdout.txt"; then
		passed=$((passed + 1))
		echo "ok   $s"
	else
		failed=$((failed + 1))
		echo "FAIL $s"
		grep "^\[$s\]\|^$s:" "$out/stderr.txt" | tail -5 | sed 's/^/     /'
	fi
done
if [ "$rc" -ne 0 ]; then
	echo "bench-smoke: kqbench --tiny exited with status $rc"
	[ "$failed" -eq 0 ] && failed=1
fi
echo "bench-smoke: kqbench --tiny took $((t1 - t0)) s"
echo "bench-smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
