#!/bin/bash
# tools/httpd-smoke.sh -- CI's run of kqbench's httpd scenario (the
# paper's web-server experiment) at its tiny size: lighttpd with its poll,
# linux-sysepoll and kqueue (over kq) handlers, 0 and 4 idle connections
# each, httperf at 100 requests/s for 1 s per run.  Proves the plumbing,
# not the figures: bench/httpd-setup.sh (httperf from Debian; lighttpd's
# kqueue build, reused from tests/clients/lighttpd.sh when it ran), the
# servers, the holders of idle connections, httperf's parsing, the CPU
# reading, the strace count and the tables and plots.
#
# Checks, each one line "ok"/"FAIL": kqbench exits 0; httpd.tsv has a row
# for every handler at N = 0 and N = 4, each with every reply (replies/s
# > 0, 0 errors, where a reply other than a 2xx counts as an error), server CPU > 0 and probe replies; the kqueue rows count
# kq's TCP_INFO of the listener (getsockopt/req > 0: the handler really
# ran on kq); the poll and linux-sysepoll rows make no
# getsockopt; httpd-kq.tsv has its
# two rows, with the ratios of the paired runs and of the runs alone; the plots exist (when gnuplot is installed).
# Ends with "httpd-smoke: N passed, N failed".
set -u
cd "$(dirname "$0")/.."
passed=0 failed=0
check() {	# description, command...
	local what=$1; shift
	if "$@"; then
		passed=$((passed + 1)); echo "ok   $what"
	else
		failed=$((failed + 1)); echo "FAIL $what"
	fi
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
make -s -j2 WERROR=1 lib bench >/dev/null || { echo "httpd-smoke: build failed"; echo "httpd-smoke: 0 passed, 1 failed"; exit 1; }
t0=$(date +%s)
# A relative output directory, as kqbench's default (build/bench) is: the
# scenario must give lighttpd an absolute document root anyway.
timeout -k 10 600 build/kqbench --tiny --scenario httpd --out "$(realpath --relative-to=. "$out")" >"$out/stdout.txt" 2>"$out/stderr.txt"
rc=$?
echo "httpd-smoke: kqbench --tiny --scenario httpd: status $rc in $(($(date +%s) - t0)) s"
check "kqbench exits 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || tail -20 "$out/stderr.txt" | sed 's/^/     /'
tsv=$out/httpd.tsv
col() {	# column number of a header name in $tsv
	head -1 "$tsv" | tr '\t' '\n' | grep -nx "$1" | cut -d: -f1
}
row_ok() {	# N handler: every reply, no error, CPU and probes measured
	[ -f "$tsv" ] || return 1
	awk -F'\t' -v n="$1" -v h="$2" -v cr="$(col 'replies/s')" \
	    -v ce="$(col errors)" -v cc="$(col 'CPU us/req')" \
	    -v cp="$(col 'probe us')" \
	    'NR > 1 && $2 == n && $3 == h { found = 1
		if ($cr + 0 <= 0 || $ce != "0" || $cc + 0 <= 0 || $cp + 0 <= 0) bad = 1 }
	     END { exit !(found && !bad) }' "$tsv"
}
gso_of() {	# N handler -> getsockopt/req
	awk -F'\t' -v n="$1" -v h="$2" -v ci="$(col 'getsockopt/req')" \
	    'NR > 1 && $2 == n && $3 == h { print $ci }' "$tsv"
}
for n in 0 4; do
	for h in poll linux-sysepoll kqueue; do
		check "N=$n $h: every reply, 0 errors, server CPU and probe replies measured" row_ok "$n" "$h"
	done
	# Not one per request: under strace the server is slow enough that
	# one listener event can bring several connections (lighttpd accepts
	# in a loop), so any TCP_INFO at all is the proof.
	check "N=$n kqueue over kq: kq's TCP_INFO counted (getsockopt/req $(gso_of $n kqueue) > 0)" \
	    awk -v v="$(gso_of $n kqueue)" 'BEGIN { exit !(v + 0 > 0) }'
	check "N=$n poll and linux-sysepoll: no getsockopt per request ($(gso_of $n poll), $(gso_of $n linux-sysepoll))" \
	    awk -v a="$(gso_of $n poll)" -v b="$(gso_of $n linux-sysepoll)" \
	    'BEGIN { exit !(a != "" && b != "" && a + 0 < 0.5 && b + 0 < 0.5) }'
done
check "httpd-kq.tsv: kqueue / linux-sysepoll ratios for N=0 and N=4" \
    [ "$(awk 'NR > 1' "$out/httpd-kq.tsv" 2>/dev/null | wc -l)" -eq 2 ]
paired_ok() {	# both rows: the paired runs gave CPU and probe ratios
	local f=$out/httpd-kq.tsv
	[ -f "$f" ] || return 1
	awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	    { n++; if ($c["CPU/req x"] + 0 <= 0 || $c["probe reply x"] + 0 <= 0 ||
	          $c["alone: CPU/req x"] + 0 <= 0 || $c["CPU/req x range"] !~ /^[0-9.]+-[0-9.]+$/) bad = 1 }
	    END { exit !(n == 2 && !bad) }' "$f"
}
check "httpd-kq.tsv: paired and alone ratios measured in both rows" paired_ok
if command -v gnuplot >/dev/null 2>&1; then
	for p in httpd-reply httpd-cpu httpd-probe; do
		check "plot $p.svg drawn" grep -q '<svg' "$out/$p.svg"
	done
fi
echo "httpd-smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
