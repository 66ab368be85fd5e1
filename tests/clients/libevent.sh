#!/bin/bash
# A real kqueue and event-port client on kq: libevent 2.1.12-stable,
# Debian bookworm's source, built unmodified against an installed kq and
# tested with its own regression suite on its kqueue backend, or on its
# evport (Solaris event ports) backend, with its epoll backend as baseline.
#
#   tests/clients/libevent.sh [kqueue|evport]   (as root on Debian 12; CI
#                                                runs both)
#
# 1. Enables deb-src for bookworm main (a file of its own in
#    /etc/apt/sources.list.d, unless a deb-src for bookworm is there already),
#    installs the build dependencies with apt-get and fetches the source with
#    `apt-get source` into build/clients/.  Nothing else is downloaded.
# 2. Installs kq into build/clients/kq-prefix and configures libevent with
#    CPPFLAGS/LDFLAGS/LIBS from `pkg-config kq`.  libevent's own checks
#    must accept kq as it is: <sys/event.h>, kqueue() and its "working
#    kqueue" run test for the kqueue backend, <port.h> and port_create()
#    (AC_CHECK_FUNCS with LIBS=-lkq) for the evport backend; config.h must
#    say HAVE_WORKING_KQUEUE and HAVE_PORT_CREATE, kqueue.o and evport.o
#    must be in libevent_core.  The build is reused by the other backend's
#    run when kq's installed library and headers have not changed.
# 3. Runs what upstream's test/test.sh runs (test-eof test-closed test-weof
#    test-time test-changelist test-fdleak test-dumpevents, regress, and
#    regress again with EVENT_DEBUG_MODE=1), plus test-init and test-ratelim,
#    once with only the backend under test allowed (libevent's EVENT_NO*
#    variables for every other one) and once with only epoll.
#    EVENT_SHOW_METHOD=1 makes libevent name its backend, so a silent
#    fallback to epoll cannot pass as kqueue or evport.  Both runs go side
#    by side.
# 4. Runs test/bench (the chain benchmark) on both backends and writes
#    build/clients/libevent-bench.tsv (libevent-evport-bench.tsv).
# 5. evport only: seed 003's experiment, test/bench on evport and kqueue
#    over kq, epoll, poll and select for 50 to 15000 descriptors, 1 and
#    100 active connections, into build/clients/libevent-seed003.tsv, which
#    kqbench's report turns into a table and two plots.
#
# Exits non-zero when a test fails on the backend over kq but not on epoll.
# Tests that fail on both are listed: on bookworm six, the
# https_incomplete*, https_chunk_out and ssl *_dirty_shutdown cases, which
# 2.1.12 fails with OpenSSL 3 on every backend (libevent issue #1212, fixed
# after 2.1.12).  Cases libevent skips because the backend lacks a feature
# (evport: EV_FEATURE_ET and EV_FEATURE_EARLY_CLOSE, as on illumos) are
# SKIP.  Ends with one line "libevent: N passed, N failed"
# ("libevent-evport: ..."; N passed counts the cases that pass on the
# backend over kq, N failed those that fail there only), which
# tools/test-all.sh adds to its total.
#
# Environment: KQ_CLIENT_DIR (default build/clients), JOBS (make -j, 2),
# LIBEVENT_RETRY (default 1: a case that fails over kq only is run again
# that many times on its own, and is reported as FLAKY if it then passes),
# LIBEVENT_BENCH=0 skips the benchmark, LIBEVENT_SEED003=0 seed 003's
# (LIBEVENT_SEED003_SIZES: the socketpair counts).
set -eu
kqb=${1:-kqueue}	# the backend over kq: kqueue or evport
case $kqb in
kqueue) tag=libevent ;;
evport) tag=libevent-evport ;;
*) echo "usage: $0 [kqueue|evport]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/../.."
top=$PWD
work=${KQ_CLIENT_DIR:-$top/build/clients}
jobs=${JOBS:-2}
retries=${LIBEVENT_RETRY:-1}
t_start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C

# shellcheck source=tests/clients/common.sh
. tests/clients/common.sh
client_init "$tag"

mkdir -p "$work"
work=$(cd "$work" && pwd)

# --- 1. apt: deb-src, build dependencies, source -------------------------
deps="gcc make pkg-config dpkg-dev libssl-dev zlib1g-dev python3"
client_apt_check "$deps"
if [ -n "${need_update:-}" ] || [ -n "$missing" ] ||
    ! apt-cache showsrc libevent 2>/dev/null | grep -q '^Version: 2\.1\.12-stable'; then
	say "apt-get update"
	as_root apt-get update -qq
fi
if [ -n "$missing" ]; then
	say "installing build dependencies:$missing"
	as_root apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
mkdir -p "$work/dl"
dsc=$(ls "$work"/dl/libevent_2.1.12-stable-*.dsc 2>/dev/null | tail -1 || true)
if [ -z "$dsc" ]; then
	say "apt-get source libevent/bookworm"
	(cd "$work/dl" && apt-get source -qq --download-only libevent/bookworm) ||
	    die "apt-get source libevent failed"
	dsc=$(ls "$work"/dl/libevent_2.1.12-stable-*.dsc 2>/dev/null | tail -1 || true)
	[ -n "$dsc" ] || die "no libevent 2.1.12-stable source package from apt"
fi
src=$work/libevent-2.1.12-stable

# --- 2. kq installed into a scratch prefix; libevent built against it -----
client_install_kq "$work/kq-prefix"
kq_cflags=$(pkg-config --cflags kq)
kq_ldflags="$(pkg-config --libs-only-L kq) -Wl,-rpath,$prefix/lib"
kq_libs=$(pkg-config --libs-only-l kq)
# One build serves both runs (kqueue, evport): it is reused when kq's
# installed library and headers, the source package and this script are
# those it was made with.
stamp=$(cat "$prefix"/lib/libkq.so.* "$prefix"/include/kq/port.h \
    "$prefix"/include/kq/sys/event.h "$dsc" "$top/tests/clients/libevent.sh" | sha256sum | cut -c1-16)
if [ -x "$src/test/regress" ] && [ "$(cat "$src/.kq-stamp" 2>/dev/null)" = "$stamp" ]; then
	say "reusing the libevent build in $src (same kq, stamp $stamp)"
else
rm -rf "$src"
# --skip-patches: upstream's tarball exactly as released (Debian's two
# patches touch only Makefile.am and evutil_rand.c, and Makefile.am would
# ask for automake).  --no-check: apt has checked the files against the
# signed archive index already; the .dsc's own signature needs a keyring.
dpkg-source -q --no-check -x --skip-patches "$dsc" "$src" >/dev/null ||
    die "dpkg-source -x failed"
say "configure CPPFLAGS='$kq_cflags' LDFLAGS='$kq_ldflags' LIBS='$kq_libs'"
(cd "$src" && ./configure --disable-shared --disable-samples \
    --disable-dependency-tracking \
    CPPFLAGS="$kq_cflags" LDFLAGS="$kq_ldflags" LIBS="$kq_libs") \
    >"$work/libevent-configure.log" 2>&1 ||
    die "configure failed, see $work/libevent-configure.log"
grep -E '^checking for (kqueue|working kqueue|port_create|port\.h)\.\.\.' "$work/libevent-configure.log" |
    sed "s/^/$tag: configure: /"
say "building libevent and its tests (make -j$jobs)"
make -C "$src" -j"$jobs" >"$work/libevent-make.log" 2>&1 ||
    die "make failed, see $work/libevent-make.log"
echo "$stamp" >"$src/.kq-stamp"
fi
# libevent's own checks must accept kq as it is: <sys/event.h> and a
# working kqueue() give its kqueue backend, port_create() (found with
# LIBS=-lkq) and <port.h> its evport backend, which comes first in its list.
for d in HAVE_KQUEUE HAVE_WORKING_KQUEUE HAVE_SYS_EVENT_H HAVE_PORT_CREATE HAVE_PORT_H; do
	grep -q "^#define $d 1" "$src/config.h" ||
	    die "config.h lacks $d: libevent did not accept kq"
done
say "config.h: HAVE_SYS_EVENT_H HAVE_KQUEUE HAVE_WORKING_KQUEUE HAVE_PORT_H HAVE_PORT_CREATE"
ar t "$src/.libs/libevent_core.a" | grep -qx evport.o ||
    die "evport.o is not in libevent_core.a"
nm "$src/test/regress" | grep -q ' [DdRr] evportops$' ||
    die "test/regress has no evport backend (evportops)"
"$src/test/bench" -l | grep -qx '    evport' ||
    die "libevent does not list evport among its methods"
ar t "$src/.libs/libevent_core.a" | grep -qx kqueue.o ||
    die "kqueue.o is not in libevent_core.a"
nm "$src/test/regress" | grep -q ' [DdRr] kqops$' ||
    die "test/regress has no kqueue backend (kqops)"
ldd "$src/test/regress" | grep -q "libkq\.so.* => $prefix/lib/" ||
    die "test/regress does not load libkq.so from $prefix"
"$src/test/bench" -l | grep -qx '    kqueue' ||
    die "libevent does not list kqueue among its methods"
say "kqueue.o and evport.o in libevent_core.a; test/regress links $prefix/lib/libkq.so"

# --- 3. the tests, kqueue and epoll side by side ---------------------------
T=$src/test
res=$work/$tag-results
rm -rf "$res"
mkdir -p "$res"
progs="test-init test-eof test-closed test-weof test-time test-changelist test-fdleak test-ratelim test-dumpevents"
others="EVENT_NOPOLL=1 EVENT_NOSELECT=1 EVENT_NODEVPOLL=1 EVENT_NOWIN32=1"
benv() {	# backend: its environment, only that backend allowed
	case $1 in
	kqueue) echo "EVENT_NOEPOLL=1 EVENT_NOEVPORT=1 $others EVENT_SHOW_METHOD=1" ;;
	evport) echo "EVENT_NOEPOLL=1 EVENT_NOKQUEUE=1 $others EVENT_SHOW_METHOD=1" ;;
	epoll) echo "EVENT_NOKQUEUE=1 EVENT_NOEVPORT=1 $others EVENT_SHOW_METHOD=1" ;;
	esac
}
unset EVENT_DEBUG_MODE EVENT_PRECISE_TIMER EVENT_EPOLL_USE_CHANGELIST
unset EVENT_NOKQUEUE EVENT_NOEPOLL

run_prog() {	# backend prog -> prints "STATUS note"
	local b=$1 p=$2 rc out=$res/$1.$2.out err=$res/$1.$2.err
	if [ "$p" = test-dumpevents ]; then
		# as test.sh: check the dump with check-dumpevents.py
		set +e
		env $(benv "$b") timeout -k 5 120 "$T/$p" 2>"$err" |
		    python3 "$T/check-dumpevents.py" >"$out" 2>&1
		rc=$((PIPESTATUS[0] | PIPESTATUS[1]))
		set -e
	else
		rc=0
		env $(benv "$b") timeout -k 5 120 "$T/$p" >"$out" 2>"$err" || rc=$?
	fi
	local used
	used=$(grep -o 'libevent using: [a-z]*' "$err" | sed 's/.*: //' | sort -u | tr '\n' ' ')
	if [ $rc -eq 0 ] && grep -q 'no event mechanism available' "$err"; then
		# test-closed asks for EV_FEATURE_EARLY_CLOSE, which libevent's
		# kqueue backend does not offer; the program then exits 0 untested
		echo "SKIP backend-lacks-EV_FEATURE_EARLY_CLOSE"
	elif [ $rc -ne 0 ]; then
		[ $rc -eq 124 ] && echo "FAIL timeout" || echo "FAIL status=$rc"
	elif [ "$used" != "$b " ]; then
		echo "FAIL ran-on:${used:-nothing}"
	else
		echo "PASS"
	fi
}

run_progs() {	# backend
	local p
	for p in $progs; do
		printf '%s\t%s\n' "$p" "$(run_prog "$1" "$p")"
	done >"$res/$1.progs"
}

"$T/regress" --list-tests | awk '/^    [^ ]/ { print $1 }' >"$res/names"
[ "$(wc -l <"$res/names")" -gt 300 ] || die "regress --list-tests lists too few tests"

parse_regress() {	# stdout of regress (normal verbosity) -> "name<TAB>STATUS"
	awk -v names="$res/names" '
	BEGIN { while ((getline l < names) > 0) { n++; order[n] = l; known[l] = 1 } }
	{
		line = $0
		if (match(line, /^[A-Za-z0-9_.\/-]+: /)) {
			t = substr(line, 1, RLENGTH - 2)
			if (t in known) {
				cur = t; short = t; sub(/^[^\/]*\//, "", short)
				line = substr(line, RLENGTH + 1)
			}
		}
		if (cur == "") next
		if (index(line, "[" short " FAILED]")) st[cur] = "FAIL"
		else if (line ~ /OK$/) st[cur] = "PASS"
		else if (line ~ /SKIPPED$/) st[cur] = "SKIP"
		else if (line ~ /DISABLED$/) st[cur] = "OFF"
	}
	END { for (i = 1; i <= n; i++)
		printf "%s\t%s\n", order[i], (order[i] in st) ? st[order[i]] : "MISSING" }'
}

run_regress() {	# backend mode(plain|debug|retry-plain|retry-debug) [args...]
	local b=$1 m=$2 dbg="" rc=0
	shift 2
	case $m in *debug) dbg="EVENT_DEBUG_MODE=1" ;; esac
	# about 90 s when all is well; tinytest stops a case after 30 s
	local limit=420
	case $m in retry*) limit=90 ;; esac
	env $(benv "$b") $dbg timeout -k 5 "$limit" "$T/regress" "$@" \
	    >"$res/$b-$m.out" 2>"$res/$b-$m.err" </dev/null || rc=$?
	parse_regress <"$res/$b-$m.out" >"$res/$b-$m.tsv"
	echo "$rc" >"$res/$b-$m.rc"
}

# All four regress runs at once (they mostly sleep; under the same load
# the two backends are compared fairly), the test-* programs beside them.
say "running regress (plain and EVENT_DEBUG_MODE=1) and the test-* programs on $kqb and on epoll"
t_tests=$(date +%s)
for b in $kqb epoll; do
	(run_progs $b; run_regress $b plain) &
	run_regress $b debug &
done
wait
t_tests=$(($(date +%s) - t_tests))

# No silent fallback: the kqueue run's bases must be kqueue (main/methods
# and main/base_environ make two epoll bases on purpose).  A run that stops
# early has fewer bases; its cases that did not run count as failed below.
for m in plain debug; do
	k=$(grep -c "libevent using: $kqb" "$res/$kqb-$m.err" || true)
	o=$(grep 'libevent using: ' "$res/$kqb-$m.err" | grep -vc "using: $kqb" || true)
	[ "$k" -ge 1 ] && [ "$o" -le 2 ] ||
	    die "regress ($m) did not run on $kqb: $k $kqb bases, $o others"
	e=$(grep -c 'libevent using: epoll' "$res/epoll-$m.err" || true)
	[ "$e" -ge 1 ] || die "regress ($m) did not run on epoll: $e epoll bases"
	say "regress ($m): $k event bases on $kqb ($o on another backend on purpose); $e on epoll"
done

# A case failing on kqueue only is run again alone (the machine may be
# loaded); it is reported as FLAKY when it then passes.
flaky=""
for m in plain debug; do
	paste "$res/$kqb-$m.tsv" "$res/epoll-$m.tsv" |
	    awk -F'\t' '($2 == "FAIL" || $2 == "MISSING") && $4 != "FAIL" && $4 != "MISSING" { print $1 }' \
	    >"$res/retry-$m"
done
nretry=$(cat "$res/retry-plain" "$res/retry-debug" | wc -l)
if [ "$nretry" -gt 6 ]; then
	say "$nretry regress cases fail on $kqb only: no retries (not flakiness)"
	retries=0
fi
if [ "$retries" -gt 0 ]; then
	for m in plain debug; do
		while read -r name; do
			i=0
			while [ $i -lt "$retries" ]; do
				i=$((i + 1))
				run_regress $kqb retry-$m --timeout 60 "$name"
				st=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$res/$kqb-retry-$m.tsv")
				cat "$res/$kqb-retry-$m.out" >>"$res/$kqb-$m.retries"
				if [ "$st" = PASS ]; then
					awk -F'\t' -v OFS='\t' -v n="$name" '$1 == n { $2 = "FLAKY" } { print }' \
					    "$res/$kqb-$m.tsv" >"$res/tmp" && mv "$res/tmp" "$res/$kqb-$m.tsv"
					flaky="$flaky $name($m)"
					break
				fi
			done
		done <"$res/retry-$m"
	done
	for p in $(paste "$res/$kqb.progs" "$res/epoll.progs" |
	    awk -F'\t' '$2 ~ /^FAIL/ && $4 !~ /^FAIL/ { print $1 }'); do
		st=$(run_prog $kqb "$p")
		if [ "$st" = PASS ]; then
			awk -F'\t' -v OFS='\t' -v n="$p" '$1 == n { $2 = "FLAKY" } { print }' \
			    "$res/$kqb.progs" >"$res/tmp" && mv "$res/tmp" "$res/$kqb.progs"
			flaky="$flaky $p"
		fi
	done
fi

# Side by side.
paste "$res/$kqb-plain.tsv" "$res/epoll-plain.tsv" "$res/$kqb-debug.tsv" "$res/epoll-debug.tsv" |
    awk -F'\t' -v OFS='\t' '{ print $1, $2, $4, $6, $8 }' >"$res/regress.tsv"
paste "$res/$kqb.progs" "$res/epoll.progs" |
    awk -F'\t' -v OFS='\t' '{ print $1, $2, $4 }' >"$res/progs.tsv"
{
	printf 'test\t%s\tepoll\t%s-debug\tepoll-debug\n' "$kqb" "$kqb"
	cat "$res/regress.tsv"
	awk -F'\t' -v OFS='\t' '{ print $1, $2, $3, "-", "-" }' "$res/progs.tsv"
} >"$work/$tag-results.tsv"

echo
say "test-* programs             $(printf '%-32s' "$kqb (over kq)") epoll"
while IFS=$'\t' read -r p k e; do
	printf 'libevent:   %-20s %-32s %s\n' "$p" "$k" "$e"
done <"$res/progs.tsv"
echo
say "regress, every case         $(printf '%-7s' $kqb) epoll  | with EVENT_DEBUG_MODE=1: $(printf '%-7s' $kqb) epoll"
while IFS=$'\t' read -r n k e kd ed; do
	mark=" "
	case "$k$kd" in *FAIL*|*MISSING*) mark="!" ;; esac
	case "$k $e $kd $ed" in *FLAKY*) mark="~" ;; esac
	printf 'libevent: %s %-58s %-7s %-7s| %-7s %s\n' "$mark" "$n" "$k" "$e" "$kd" "$ed"
done <"$res/regress.tsv"
echo

count() {	# file column value -> number of rows
	awk -F'\t' -v c="$2" -v v="$3" '$c == v { n++ } END { print n + 0 }' "$1"
}
for m in plain debug; do
	for b in $kqb epoll; do
		f=$res/$b-$m.tsv
		say "regress ($m) on $b: $(count "$f" 2 PASS) passed, $(($(count "$f" 2 FAIL) + $(count "$f" 2 MISSING))) failed, $(count "$f" 2 SKIP) skipped, $(count "$f" 2 OFF) off by default, $(count "$f" 2 FLAKY) flaky; regress exit status $(cat "$res/$b-$m.rc")"
		if [ "$(cat "$res/$b-$m.rc")" = 124 ]; then
			say "regress ($m) on $b was stopped by its time limit in $(grep -oE '^[A-Za-z0-9_./-]+/[A-Za-z0-9_.-]+: ' "$res/$b-$m.out" | tail -1 | tr -d ' ') (the cases after it did not run: MISSING)"
		fi
	done
done
for b in $kqb epoll; do
	c=$([ $b = "$kqb" ] && echo 2 || echo 3)
	say "test-* on $b: $(cut -f$c "$res/progs.tsv" | grep -c '^PASS' || true) passed, $(cut -f$c "$res/progs.tsv" | grep -c '^FAIL' || true) failed, $(cut -f$c "$res/progs.tsv" | grep -c '^SKIP' || true) skipped"
done

# Verdict: kqueue-only failures are kq's bugs; failures on both are listed.
awk -F'\t' '{ for (c = 2; c <= 4; c += 2) {
	m = (c == 2) ? "" : " (debug mode)"
	kf = ($c == "FAIL" || $c == "MISSING"); ef = ($(c+1) == "FAIL" || $(c+1) == "MISSING")
	if (kf && !ef) print "regress " $1 m
} }' "$res/regress.tsv" >"$res/kq-only"
awk -F'\t' '$2 ~ /^FAIL/ && $3 !~ /^FAIL/ { print $1 " (" $2 ")" }' "$res/progs.tsv" >>"$res/kq-only"
awk -F'\t' '{ for (c = 2; c <= 4; c += 2) {
	m = (c == 2) ? "" : " (debug mode)"
	kf = ($c == "FAIL" || $c == "MISSING"); ef = ($(c+1) == "FAIL" || $(c+1) == "MISSING")
	if (kf && ef) print "regress " $1 m
} }' "$res/regress.tsv" >"$res/both"
awk -F'\t' '$2 ~ /^FAIL/ && $3 ~ /^FAIL/ { print $1 }' "$res/progs.tsv" >>"$res/both"
awk -F'\t' '{ for (c = 2; c <= 4; c += 2) {
	m = (c == 2) ? "" : " (debug mode)"
	kf = ($c == "FAIL" || $c == "MISSING"); ef = ($(c+1) == "FAIL" || $(c+1) == "MISSING")
	if (ef && !kf) print "regress " $1 m
} }' "$res/regress.tsv" >"$res/epoll-only"

say "failing on both backends (the environment, not kq): $(wc -l <"$res/both")"
sed 's/^/libevent:     /' "$res/both"
[ -s "$res/epoll-only" ] && { say "failing on epoll only:"; sed 's/^/libevent:     /' "$res/epoll-only"; }
[ -n "$flaky" ] && say "FLAKY on $kqb (failed, then passed when run again alone):$flaky"
passed=$(( $(awk -F'\t' '{ n += ($2 == "PASS" || $2 == "FLAKY") + ($4 == "PASS" || $4 == "FLAKY") } END { print n + 0 }' "$res/regress.tsv") +
    $(awk -F'\t' '$2 == "PASS" || $2 == "FLAKY" { n++ } END { print n + 0 }' "$res/progs.tsv") ))
failed=$(wc -l <"$res/kq-only")
if [ "$failed" -gt 0 ]; then
	say "FAILING ON $kqb ONLY (bugs in kq): $failed"
	sed 's/^/libevent:     /' "$res/kq-only"
fi
say "tests took ${t_tests} s; results in $work/$tag-results.tsv, logs in $res"

# --- 4. test/bench, the chain benchmark, kqueue over kq vs epoll ----------
if [ "${LIBEVENT_BENCH:-1}" != 0 ]; then
	bench_tsv=$work/$tag-bench.tsv
	reps=3
	printf 'backend\tn\ta\tw\tsamples\tmedian_us\tmin_us\tmax_us\tx_epoll\n' >"$bench_tsv"
	say "test/bench (25 rounds per run, $reps runs, backends interleaved): median us per round"
	for n in 100 1000; do
		for a in 1 100; do
			w=1000
			rm -f "$res/bench.$kqb" "$res/bench.epoll"
			for r in $(seq $reps); do
				for b in $kqb epoll; do
					# the first round of each run warms the caches up
					env $(benv $b) timeout -k 5 120 "$T/bench" -m $b -n $n -a $a -w $w \
					    2>/dev/null | tail -n +2 >>"$res/bench.$b" ||
					    die "test/bench -m $b -n $n -a $a failed"
				done
			done
			em=""
			for b in epoll $kqb; do
				read -r s med mn mx < <(sort -n "$res/bench.$b" |
				    awk '{ v[NR] = $1 } END { printf "%d %d %d %d\n", NR, v[int((NR + 1) / 2)], v[1], v[NR] }')
				[ "$s" -ge 20 ] || die "test/bench -m $b gave $s figures"
				[ $b = epoll ] && em=$med
				x=$(awk -v k="$med" -v e="$em" 'BEGIN { printf "%.2f", (e > 0 ? k / e : 0) }')
				printf -v "row_$b" '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' \
				    "$b" $n $a $w "$s" "$med" "$mn" "$mx" "$x"
			done
			rowk=row_$kqb
			printf '%s\n%s\n' "${!rowk}" "$row_epoll" | sed "s/^$kqb/$kqb-kq/" >>"$bench_tsv"
		done
	done
	awk -F'\t' '{ printf "libevent:   %-10s %5s %4s %5s %8s %10s %8s %8s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$bench_tsv"
	say "bench figures in $bench_tsv"
fi

# --- 5. seed 003: test/bench over evport on kq beside poll, select, epoll
# and kqueue on kq, for the seed's sizes (up to 7500 socketpairs, 15000
# descriptors; select only up to 1000 descriptors, as the seed), 1 and 100
# active connections.  kqbench's report copies the table and plots it.
if [ "$kqb" = evport ] && [ "${LIBEVENT_SEED003:-1}" != 0 ]; then
	seed_tsv=$work/libevent-seed003.tsv
	sizes=${LIBEVENT_SEED003_SIZES:-"25 50 100 250 500 1000 2500 5000 7500"}
	say "seed 003: test/bench -m BACKEND -n N -a A -w 1000, 25 rounds per run, median us per round"
	printf 'backend\tn\tfds\ta\tw\tsamples\tmedian_us\tmin_us\tmax_us\n' >"$seed_tsv"
	for a in 1 100; do
		for n in $sizes; do
			[ "$a" -gt "$n" ] && continue
			for b in evport kqueue epoll poll select; do
				[ $b = select ] && [ $((2 * n)) -gt 1000 ] && continue
				# -m makes libevent avoid every other method
				timeout -k 5 300 "$T/bench" -m $b -n $n -a $a -w 1000 \
				    2>/dev/null >"$res/seed.out" ||
				    die "test/bench -m $b -n $n -a $a failed"
				read -r smp med mn mx < <(sort -n "$res/seed.out" |
				    awk '{ v[NR] = $1 } END { printf "%d %d %d %d\n", NR, v[int((NR + 1) / 2)], v[1], v[NR] }')
				[ "$smp" -ge 20 ] || die "test/bench -m $b -n $n gave $smp figures"
				case $b in evport|kqueue) bn=$b-kq ;; *) bn=$b ;; esac
				printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$bn" $n \
				    $((2 * n)) $a 1000 "$smp" "$med" "$mn" "$mx" >>"$seed_tsv"
			done
		done
	done
	awk -F'\t' 'NR > 1 { printf "libevent:   %-10s n=%5s fds=%5s a=%4s  median %8s us  (min %s, max %s)\n", $1, $2, $3, $4, $7, $8, $9 }' "$seed_tsv"
	say "seed 003 figures in $seed_tsv"
fi

say "took $(($(date +%s) - t_start)) s"
if [ "$failed" -gt 0 ]; then
	say "FAILED: $failed test(s) fail on $kqb over kq but not on epoll"
else
	say "PASSED: no test fails on $kqb over kq that passes on epoll"
fi
say "$passed passed, $failed failed"
done_ok=1
[ "$failed" -eq 0 ]
