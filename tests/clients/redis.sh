#!/bin/bash
# A real kqueue client on kq: Redis 7.0.15, Debian bookworm's source, built
# with its ae_kqueue.c event loop on Linux and linked with kq, and tested with
# units of its own Tcl test suite beside the same source built unmodified
# (ae_epoll.c) as baseline.
#
#   tests/clients/redis.sh            (as root on Debian 12; CI runs it)
#
# 1. Enables deb-src for bookworm main (as libevent.sh and nginx.sh do),
#    installs what it needs with apt-get (compiler, dpkg-dev, patch, tcl)
#    and fetches the source with `apt-get source` into build/clients/.
#    Nothing else is downloaded.  Debian's patches (its security fixes) are
#    applied, as in Debian's redis.
# 2. Installs kq into build/clients/kq-prefix and builds Redis twice from
#    that source (MALLOC=libc, no TLS, no systemd: nothing of Debian's
#    build beyond the compiler is needed), make -j2:
#    - redis-7.0.15-kqueue: tests/clients/redis-kqueue.patch applied, one
#      line of src/config.h: on Linux it defines HAVE_KQUEUE where it
#      defined HAVE_EPOLL, so ae.c includes ae_kqueue.c (ae.c prefers epoll
#      when both are defined); REDIS_CFLAGS/REDIS_LDFLAGS from
#      `pkg-config --cflags --libs kq` (with --no-as-needed: Redis puts
#      LDFLAGS before its objects);
#    - redis-7.0.15-epoll: unmodified.
#    The binaries are checked (kevent()/kqueue() from libkq.so in the
#    prefix and no epoll in the first, epoll and no libkq in the second),
#    and each server is started once: `INFO server` must say
#    multiplexing_api:kqueue, resp. multiplexing_api:epoll.
# 3. Runs the same units of Redis's Tcl test suite (./runtest --single ...,
#    4 test clients each) on both builds side by side, on distinct port
#    ranges.  The units (below, $units) are those that exercise what an
#    event loop does, and finish in about two and a half minutes together
#    on a shared 2-core machine: the protocol and networking (partial and
#    pipelined requests, CONFIG SET port/bind, QUIT, client limits, query
#    and output buffers, slow readers and output-buffer limits, client
#    eviction), pub/sub and client tracking (pushes to many connections),
#    blocking commands and their timeouts (lists, WAIT, CLIENT PAUSE),
#    MULTI/WATCH, expiry and latency monitoring (time events, serverCron),
#    DEBUG SLEEP and scripts that keep the loop busy while clients wait,
#    MIGRATE/DUMP (connections Redis opens itself), replication between
#    two and three servers (sockets between servers, diskless transfer
#    through pipes, blocking replicas), fork for BGSAVE/AOF rewrite with the
#    child's pipes, SHUTDOWN on signals (sigaction is libkq's), the
#    logging and redis-cli/redis-benchmark integrations, and the small
#    data-type units (strings, incr, lists).  Left out: the long
#    data-structure units (zset, set, hash, sort, scan, bitops, together
#    four minutes and no event-loop path of their own), maxmemory (two
#    minutes of eviction policies), replication-psync (three minutes of
#    the same replication paths under several backlog settings), cluster,
#    modules and TLS (not built).
#    A test that fails on kqueue but not on epoll has its unit run again on
#    kqueue alone; it is reported FLAKY when it then passes, and counted as
#    passed in the README's row.
# 4. Measures redis-benchmark (the epoll build's, the same client for both
#    servers) against each server in turn: PING_INLINE, PING_MBULK, SET,
#    GET, 50 connections, 3 runs each, and writes
#    build/clients/redis-bench.tsv, which kqbench's report copies.
#
# Exits non-zero when a test fails on kqueue but not on epoll.  Ends with one
# line "redis: N passed, N failed" (N passed counts the tests passed on
# kqueue, N failed those failed on kqueue only), which tools/test-all.sh adds
# to its total.
#
# Environment: KQ_CLIENT_DIR (default build/clients), JOBS (make -j, 2),
# REDIS_BENCH=0 skips the benchmark, REDIS_BENCH_RUNS (3),
# REDIS_UNITS (the units to run, default $units below).
set -eu
cd "$(dirname "$0")/../.."
top=$PWD
work=${KQ_CLIENT_DIR:-$top/build/clients}
jobs=${JOBS:-2}
t_start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C
ver=7.0.15
units=${REDIS_UNITS:-"unit/printver unit/protocol unit/networking unit/quit
    unit/limits unit/querybuf unit/pendingquerybuf unit/replybufsize
    unit/obuf-limits unit/client-eviction unit/info unit/info-command
    unit/introspection unit/introspection-2 unit/keyspace unit/pubsub
    unit/pubsubshard unit/tracking unit/multi unit/pause unit/wait
    unit/expire unit/latency-monitor unit/slowlog unit/lazyfree unit/other
    unit/scripting unit/functions unit/dump unit/auth unit/acl unit/aofrw
    unit/shutdown unit/oom-score-adj unit/type/incr unit/type/string
    unit/type/list integration/replication-2 integration/replication-3
    integration/replication-4 integration/block-repl integration/failover
    integration/aof integration/rdb integration/shutdown integration/logging
    integration/redis-cli integration/redis-benchmark"}

# shellcheck source=tests/clients/common.sh
. tests/clients/common.sh
client_init redis

mkdir -p "$work"
work=$(cd "$work" && pwd)

# --- 1. apt: deb-src, build dependencies, source -------------------------
deps="gcc make pkg-config dpkg-dev patch tcl"
client_fetch_source redis "$ver" "$deps"
src=$work/redis-$ver
rm -rf "$src" "$src-kqueue" "$src-epoll"
# --no-check: apt has checked the files against the signed archive index.
dpkg-source -q --no-check -x "$dsc" "$src" >/dev/null 2>&1 ||
    die "dpkg-source -x failed"
cp -a "$src" "$src-epoll"
mv "$src" "$src-kqueue"
patch -d "$src-kqueue" -p1 -s --no-backup-if-mismatch --forward \
    <tests/clients/redis-kqueue.patch || die "tests/clients/redis-kqueue.patch does not apply"

# --- 2. kq into a scratch prefix; Redis built twice -------------------------
client_install_kq "$work/kq-prefix"
kq_cflags=$(pkg-config --cflags kq)
kq_ldflags="-Wl,--no-as-needed $(pkg-config --libs kq) -Wl,-rpath,$(pkg-config --variable=libdir kq)"
common="MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no"
t_build=$(date +%s)
for b in kqueue epoll; do
	set -- $common
	[ $b = kqueue ] && set -- "$@" REDIS_CFLAGS="$kq_cflags" REDIS_LDFLAGS="$kq_ldflags"
	say "building redis ($b, make -j$jobs $*)"
	make -C "$src-$b" -j"$jobs" "$@" >"$work/redis-$b-make.log" 2>&1 ||
	    die "make ($b) failed, see $work/redis-$b-make.log"
done
t_build=$(($(date +%s) - t_build))
kbin=$src-kqueue/src/redis-server ebin=$src-epoll/src/redis-server
nm -D "$kbin" | grep -q ' U kevent$' || die "redis (kqueue) does not call kevent()"
nm "$kbin" | grep -q 'epoll_wait' && die "redis (kqueue) has epoll compiled in"
ldd "$kbin" | grep -q "libkq\.so.* => $prefix/lib/" || die "redis (kqueue) does not load libkq.so from $prefix"
nm "$ebin" | grep -q 'epoll_wait' || die "redis (epoll) has no epoll"
ldd "$ebin" | grep -q libkq && die "redis (epoll) loads libkq"
cli=$src-epoll/src/redis-cli
api_of() {	# build port -> multiplexing_api of INFO server
	local b=$1 port=$2 d=$work/redis-info-$1 pid api=""
	rm -rf "$d"; mkdir -p "$d"
	"$src-$b/src/redis-server" --port "$port" --bind 127.0.0.1 --save "" \
	    --appendonly no --dir "$d" --logfile "$d/log" --daemonize no &
	pid=$!
	for _ in $(seq 50); do
		api=$("$cli" -p "$port" INFO server 2>/dev/null | tr -d '\r' |
		    sed -n 's/^multiplexing_api://p') && [ -n "$api" ] && break
		sleep 0.1
	done
	"$cli" -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo "$api"
}
kapi=$(api_of kqueue 24011) eapi=$(api_of epoll 24012)
say "INFO server: kqueue build multiplexing_api:$kapi, epoll build multiplexing_api:$eapi"
[ "$kapi" = kqueue ] || die "kqueue build says multiplexing_api:$kapi"
[ "$eapi" = epoll ] || die "epoll build says multiplexing_api:$eapi"
say "built in ${t_build} s: $kbin (ae_kqueue.c, libkq.so from $prefix), $ebin (ae_epoll.c)"

# --- 3. the Tcl units, kqueue and epoll side by side ------------------------
res=$work/redis-results
rm -rf "$res"
mkdir -p "$res"
run_units() {	# build baseport tag units...
	local b=$1 port=$2 tag=$3 rc=0 args=""
	shift 3
	for u in "$@"; do args="$args --single $u"; done
	# TERM=dumb: no colours in the log
	(cd "$src-$b" && TERM=dumb timeout -k 10 900 ./runtest $args --clients 4 \
	    --baseport "$port" --portcount 2000 --timeout 600) \
	    >"$res/$b-$tag.log" 2>&1 || rc=$?
	echo "$rc" >"$res/$b-$tag.rc"
	# status<TAB>test name<TAB>unit (the unit only on failures)
	sed -n -e 's/^\[ok\]: \(.*\) ([0-9]* ms)$/ok\t\1\t/p' \
	    -e 's/^\[err\]: \(.*\) in tests\/\(.*\)\.tcl$/err\t\1\t\2/p' \
	    -e 's/^\[exception\]: \(.*\)$/exception\t\1\t/p' \
	    "$res/$b-$tag.log" >"$res/$b-$tag.tsv"
}
nunits=$(echo $units | wc -w)
say "$nunits units of the Tcl suite on both builds side by side (4 test clients each):"
echo $units | fold -s -w 72 | sed 's/^/redis:   /'
t_tests=$(date +%s)
run_units kqueue 21111 1 $units &
kpid=$!
run_units epoll 23111 1 $units
wait $kpid || true
t_tests=$(($(date +%s) - t_tests))
count() { awk -F'\t' -v s="$2" '$1 == s' "$1" | wc -l; }
kq_ok=$(count "$res/kqueue-1.tsv" ok) ep_ok=$(count "$res/epoll-1.tsv" ok)
kq_err=$(count "$res/kqueue-1.tsv" err) ep_err=$(count "$res/epoll-1.tsv" err)
kq_rc=$(cat "$res/kqueue-1.rc") ep_rc=$(cat "$res/epoll-1.rc")
# failed on kqueue, not on epoll (the same test name)
awk -F'\t' 'NR == FNR { if ($1 == "err") e[$2] = 1; next }
	$1 == "err" && !($2 in e) { print $2 "\t" $3 }' \
    "$res/epoll-1.tsv" "$res/kqueue-1.tsv" >"$res/kqueue-only.tsv"
aborted=0
if [ "$kq_rc" -ne 0 ] && [ "$(count "$res/kqueue-1.tsv" err)" -eq 0 ] && [ "$ep_rc" -eq 0 ]; then
	aborted=1	# an exception or a timeout, not a failed assertion
fi
failed=0 flaky="" nflaky=0
if [ -s "$res/kqueue-only.tsv" ] || [ $aborted -eq 1 ]; then
	if [ $aborted -eq 1 ]; then
		rerun=$units
		say "the kqueue run stopped early (status $kq_rc: $(grep -E '^\[(exception|timeout)\]|Killing' "$res/kqueue-1.log" | head -1)); running it again"
	else
		rerun=$(cut -f2 "$res/kqueue-only.tsv" | sort -u | tr '\n' ' ')
		say "failed on kqueue only: $(cut -f1 "$res/kqueue-only.tsv" | tr '\n' ';'); running $rerun again on kqueue"
	fi
	run_units kqueue 21111 2 $rerun
	while IFS=$'\t' read -r name unit; do
		if awk -F'\t' -v n="$name" '$1 == "ok" && $2 == n { f = 1 } END { exit !f }' "$res/kqueue-2.tsv"; then
			flaky="$flaky; $name"
			nflaky=$((nflaky + 1))
		else
			failed=$((failed + 1))
			say "FAILING ON KQUEUE ONLY: $name (tests/$unit.tcl)"
		fi
	done <"$res/kqueue-only.tsv"
	if [ $aborted -eq 1 ]; then
		if [ "$(cat "$res/kqueue-2.rc")" -ne 0 ]; then
			failed=$((failed + 1 + $(count "$res/kqueue-2.tsv" err)))
			say "FAILING ON KQUEUE ONLY: the run stops again (see $res/kqueue-2.log)"
		else
			flaky="$flaky; the whole run"
			kq_ok=$(count "$res/kqueue-2.tsv" ok)
		fi
	fi
fi
both=$(awk -F'\t' 'NR == FNR { if ($1 == "err") e[$2] = 1; next }
	$1 == "err" && ($2 in e) { print $2 }' "$res/epoll-1.tsv" "$res/kqueue-1.tsv" | tr '\n' ';')
{
	printf 'build\tunits\tok\terr\trunner_status\tseconds\n'
	printf 'kqueue\t%s\t%s\t%s\t%s\t%s\n' "$nunits" "$kq_ok" "$kq_err" "$kq_rc" "$t_tests"
	printf 'epoll\t%s\t%s\t%s\t%s\t%s\n' "$nunits" "$ep_ok" "$ep_err" "$ep_rc" "$t_tests"
} >"$work/redis-results.tsv"
say "Tcl suite, $nunits units, ${t_tests} s: kqueue over kq $kq_ok ok, $kq_err err (runtest status $kq_rc); epoll $ep_ok ok, $ep_err err (runtest status $ep_rc)"
[ -n "$both" ] && say "failing on both builds (not kq): $both"
[ -n "$flaky" ] && say "FLAKY on kqueue (failed, then passed when run again)$flaky"
[ "$kq_ok" -eq "$ep_ok" ] || say "note: $kq_ok tests passed on kqueue, $ep_ok on epoll"

# --- 4. redis-benchmark, kqueue over kq vs epoll -----------------------------
if [ "${REDIS_BENCH:-1}" != 0 ]; then
	runs=${REDIS_BENCH_RUNS:-3} n=100000 c=50 tests="ping_inline,ping_mbulk,set,get"
	bench=$src-epoll/src/redis-benchmark
	bench_tsv=$work/redis-bench.tsv
	say "redis-benchmark -n $n -c $c -t $tests --csv, $runs runs against each server in turn"
	d=$res/bench
	mkdir -p "$d"
	"$kbin" --port 24021 --bind 127.0.0.1 --save "" --appendonly no --dir "$d" --logfile "$d/kq.log" &
	kp=$!
	"$ebin" --port 24022 --bind 127.0.0.1 --save "" --appendonly no --dir "$d" --logfile "$d/epoll.log" &
	ep=$!
	for port in 24021 24022; do
		for _ in $(seq 50); do "$cli" -p $port PING >/dev/null 2>&1 && break; sleep 0.1; done
	done
	: >"$d/raw"
	for r in $(seq "$runs"); do
		for b in kq:24021 epoll:24022; do
			timeout 120 "$bench" -p "${b#*:}" -n $n -c $c -t "$tests" --csv 2>/dev/null |
			    tr -d '"\r' | awk -F, -v b="${b%%:*}" 'NR > 1 { print b "\t" $1 "\t" $2 }' >>"$d/raw"
		done
	done
	"$cli" -p 24021 SHUTDOWN NOSAVE >/dev/null 2>&1 || kill $kp 2>/dev/null || true
	"$cli" -p 24022 SHUTDOWN NOSAVE >/dev/null 2>&1 || kill $ep 2>/dev/null || true
	wait $kp $ep 2>/dev/null || true
	printf 'test\tclients\trequests\truns\tkq_rps\tepoll_rps\tkq_over_epoll\tkq_all\tepoll_all\n' >"$bench_tsv"
	awk -F'\t' -v OFS='\t' -v n=$n -v c=$c '
	function median(list,   v, k, i, j, t) {
		k = split(list, v, ",")
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
			if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
		return (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
	}
	{ if (!($2 in seen)) { seen[$2] = 1; order[++m] = $2 }
	  all[$1, $2] = all[$1, $2] (all[$1, $2] == "" ? "" : ",") sprintf("%.0f", $3) }
	END { for (i = 1; i <= m; i++) { t = order[i]; k = all["kq", t]; e = all["epoll", t]
		if (k == "" || e == "") continue
		km = median(k); em = median(e)
		print t, c, n, split(k, x, ","), sprintf("%.0f", km), sprintf("%.0f", em),
		    sprintf("%.2f", em > 0 ? km / em : 0), k, e } }' "$d/raw" >>"$bench_tsv"
	[ "$(wc -l <"$bench_tsv")" -gt 1 ] || die "redis-benchmark gave no figures (see $d)"
	awk -F'\t' 'NR > 1 { printf "redis:   %-12s c=%s %s requests x %s: kq %8s/s  epoll %8s/s  kq/epoll %s\n",
	    $1, $2, $3, $4, $5, $6, $7 }' "$bench_tsv"
	say "bench figures in $bench_tsv"
fi

# one row for the README's table (tools/compat-table.sh checks it there).  A
# test that failed on kqueue only and passed when its unit ran again counts
# as passed there, as it does in this script's verdict; the FLAKY line above
# names it.
printf '%s\t%s\t%s\t%s\n' "Redis $ver" "$nunits units of its Tcl suite, $ep_ok tests" \
    "$((kq_ok + nflaky)) passed, $((kq_err - nflaky)) failed" "$ep_ok passed, $ep_err failed" >"$work/redis-summary.tsv"
say "took $(($(date +%s) - t_start)) s"
if [ "$failed" -gt 0 ]; then
	say "FAILED: $failed test(s) fail on kqueue over kq but not on epoll"
else
	say "PASSED: no test fails on kqueue over kq that passes on epoll"
fi
say "$((kq_ok + nflaky)) passed, $failed failed"
done_ok=1
[ "$failed" -eq 0 ]
