#!/bin/bash
# A real kqueue client on kq: nginx 1.22.1, Debian bookworm's source, built
# with its kqueue module on Linux and linked with kq, and smoke-tested on
# 127.0.0.1 beside the same source built unmodified (epoll) as baseline.
#
#   tests/clients/nginx.sh            (as root on Debian 12; CI runs it)
#
# 1. Enables deb-src for bookworm main (a file of its own in
#    /etc/apt/sources.list.d, unless a deb-src for bookworm is there already),
#    installs what it needs with apt-get (compiler, dpkg-dev, python3, ab
#    from apache2-utils) and fetches the source with `apt-get source` into
#    build/clients/.  Nothing else is downloaded.  Debian's patches (its
#    security fixes) are applied, as in Debian's nginx.
# 2. Installs kq into build/clients/kq-prefix and builds nginx twice from
#    that source, with the same modules (http with proxy, stream with its
#    upstream, no PCRE, zlib or OpenSSL):
#    - nginx-1.22.1-kqueue: tests/clients/nginx-kqueue.patch applied (backend
#      selection only: auto/os/linux probes <sys/event.h> + kqueue() and
#      then leaves epoll out, and ngx_linux_config.h includes <sys/event.h>
#      as the FreeBSD and generic POSIX configurations do), configured with
#      `pkg-config --cflags --libs kq`; nginx's own auto/unix then finds
#      kqueue, NOTE_LOWAT and EVFILT_TIMER and compiles its kqueue module;
#    - nginx-1.22.1-epoll: unmodified.
#    The configuration headers and the binaries are checked: kqueue and no
#    epoll in the first, epoll and no kqueue in the second, libkq.so loaded
#    from the prefix.
# 3. tests/clients/nginx-smoke.py runs the same checks on each build
#    (nginx and the upstreams it needs started by the test on free ports,
#    every process stopped at the end): the event method the error log
#    names, static files (several sizes up to 6 MiB, sendfile off and on,
#    keep-alive, 16 concurrent clients, a slow reader, clients resetting
#    mid-transfer), an HTTP proxy to a second server block, HTTP and stream
#    (TCP) upstreams whose first server refuses connections (nginx must go
#    to the second; on kqueue the error must come from kevent, EV_EOF's
#    fflags), clients leaving while a slow HTTP upstream works (nginx must
#    close the upstream connection at once), a stream upstream resetting
#    its connection (ECONNRESET, from fflags on kqueue), a burst of 20
#    datagrams through the UDP stream proxy to an echo server answering in
#    bursts, `resolver` with 8 names in flight against a DNS responder
#    answering in bursts, `timer_resolution` (EVFILT_TIMER on kqueue) with
#    a stream timeout, and a clean SIGQUIT shutdown with no alert in the
#    error log.  A check
#    that fails on kqueue only is run again once (the whole set) and is
#    reported as FLAKY if it then passes.
# 4. Measures requests per second of a 4 KiB static file with ab (keep-alive,
#    and a connection per request) on both builds in turn and writes
#    build/clients/nginx-bench.tsv, which kqbench's report copies.
#
# Exits non-zero when a check fails on kqueue but not on epoll.  Ends with
# one line "nginx: N passed, N failed" (N passed counts the checks passed on
# kqueue, N failed those failed on kqueue only), which tools/test-all.sh
# adds to its total.
#
# Environment: KQ_CLIENT_DIR (default build/clients), JOBS (make -j, 2),
# NGINX_BENCH=0 skips the benchmark, NGINX_BENCH_RUNS (5).
set -eu
cd "$(dirname "$0")/../.."
top=$PWD
work=${KQ_CLIENT_DIR:-$top/build/clients}
jobs=${JOBS:-2}
t_start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C
ver=1.22.1

# shellcheck source=tests/clients/common.sh
. tests/clients/common.sh
client_init nginx

mkdir -p "$work"
work=$(cd "$work" && pwd)

# --- 1. apt: deb-src, build dependencies, source -------------------------
deps="gcc make pkg-config dpkg-dev patch python3 apache2-utils"
client_fetch_source nginx "$ver" "$deps"
src=$work/nginx-$ver
rm -rf "$src" "$src-kqueue" "$src-epoll"
# --no-check: apt has checked the files against the signed archive index
# already; the .dsc's own signature needs a keyring.
dpkg-source -q --no-check -x "$dsc" "$src" >/dev/null 2>&1 ||
    die "dpkg-source -x failed"
cp -a "$src" "$src-epoll"
mv "$src" "$src-kqueue"
patch -d "$src-kqueue" -p1 -s --no-backup-if-mismatch --forward \
    <tests/clients/nginx-kqueue.patch || die "tests/clients/nginx-kqueue.patch does not apply"

# --- 2. kq into a scratch prefix; nginx built twice ------------------------
client_install_kq "$work/kq-prefix"
kq_cflags=$(pkg-config --cflags kq)
kq_ldopt="$(pkg-config --libs-only-L kq) -Wl,-rpath,$prefix/lib $(pkg-config --libs-only-l kq)"

# http (static, proxy, upstream), stream (proxy, upstream); the rest out
modules="--with-stream --without-pcre --without-http_rewrite_module
    --without-http_gzip_module --without-http-cache --without-http_charset_module
    --without-http_ssi_module --without-http_userid_module
    --without-http_auth_basic_module --without-http_mirror_module
    --without-http_autoindex_module --without-http_geo_module
    --without-http_map_module --without-http_split_clients_module
    --without-http_referer_module --without-http_fastcgi_module
    --without-http_uwsgi_module --without-http_scgi_module
    --without-http_grpc_module --without-http_memcached_module
    --without-http_empty_gif_module --without-http_browser_module"
t_build=$(date +%s)
for b in kqueue epoll; do
	d=$src-$b
	set -- --prefix="$work/nginx-run" $modules
	[ $b = kqueue ] && set -- "$@" --with-cc-opt="$kq_cflags" --with-ld-opt="$kq_ldopt"
	say "configure ($b):$([ $b = kqueue ] && echo " --with-cc-opt='$kq_cflags' --with-ld-opt='$kq_ldopt'")"
	(cd "$d" && ./configure "$@") >"$work/nginx-$b-configure.log" 2>&1 ||
	    die "configure ($b) failed, see $work/nginx-$b-configure.log"
	say "building nginx ($b, make -j$jobs)"
	make -C "$d" -j"$jobs" >"$work/nginx-$b-make.log" 2>&1 ||
	    die "make ($b) failed, see $work/nginx-$b-make.log"
done
t_build=$(($(date +%s) - t_build))
grep -E '^checking for (kqueue|epoll)' "$work/nginx-kqueue-configure.log" |
    sed 's/^/nginx: configure (kqueue): /'
kh=$src-kqueue/objs/ngx_auto_config.h eh=$src-epoll/objs/ngx_auto_config.h
grep -q '^#define NGX_HAVE_KQUEUE  1' "$kh" || die "kqueue build: no NGX_HAVE_KQUEUE"
grep -q '^#define NGX_HAVE_EPOLL ' "$kh" && die "kqueue build: epoll compiled in"
grep -q '^#define NGX_HAVE_EPOLL  1' "$eh" || die "epoll build: no NGX_HAVE_EPOLL"
grep -q '^#define NGX_HAVE_KQUEUE ' "$eh" && die "epoll build: kqueue compiled in"
kbin=$src-kqueue/objs/nginx ebin=$src-epoll/objs/nginx
nm "$kbin" | grep -q ' ngx_kqueue_module$' || die "kqueue build has no ngx_kqueue_module"
nm "$kbin" | grep -q ' ngx_epoll_module$' && die "kqueue build has ngx_epoll_module"
nm "$ebin" | grep -q ' ngx_epoll_module$' || die "epoll build has no ngx_epoll_module"
ldd "$kbin" | grep -q "libkq\.so.* => $prefix/lib/" || die "nginx (kqueue) does not load libkq.so from $prefix"
ldd "$ebin" | grep -q libkq && die "nginx (epoll) loads libkq"
say "built in ${t_build} s: $kbin (ngx_kqueue_module, NGX_HAVE_KQUEUE, no epoll; libkq.so from $prefix), $ebin (ngx_epoll_module)"

# --- 3. the smoke tests, kqueue and epoll side by side ---------------------
res=$work/nginx-results
rm -rf "$res"
mkdir -p "$res"
run_checks() {	# backend round
	local b=$1 r=$2 bin=$src-$1/objs/nginx rc=0
	timeout -k 5 300 python3 tests/clients/nginx-smoke.py check --nginx "$bin" \
	    --dir "$res/run-$b-$r" --method "$b" >"$res/$b-$r.out" 2>"$res/$b-$r.err" || rc=$?
	awk -F'\t' -v OFS='\t' '$1 == "CHECK" { print $2, $3, $4 }' "$res/$b-$r.out" >"$res/$b-$r.tsv"
	echo $rc >"$res/$b-$r.rc"
}
names="start event-method static-files static-keepalive static-concurrent
    static-slow-reader static-client-abort http-proxy
    http-proxy-refused-upstream http-proxy-client-abort
    stream-tcp-refused-upstream stream-tcp-upstream-reset stream-udp-burst
    resolver timer-resolution clean-shutdown"
status_of() {	# tsv name -> PASS|FAIL|MISSING
	awk -F'\t' -v n="$2" '$1 == n { s = $2 } END { print (s == "" ? "MISSING" : s) }' "$1"
}
detail_of() { awk -F'\t' -v n="$2" '$1 == n { print $3 }' "$1"; }
say "smoke tests on 127.0.0.1 (kqueue build, then epoll build)"
t_tests=$(date +%s)
run_checks kqueue 1
run_checks epoll 1
retry=""
for n in $names; do
	k=$(status_of "$res/kqueue-1.tsv" "$n") e=$(status_of "$res/epoll-1.tsv" "$n")
	[ "$k" != PASS ] && [ "$e" = PASS ] && retry="$retry $n"
done
if [ -n "$retry" ]; then
	say "failed on kqueue only:$retry; running the kqueue checks once more"
	run_checks kqueue 2
fi
t_tests=$(($(date +%s) - t_tests))
: >"$res/table"
passed=0 failed=0 both="" kqonly="" flaky=""
for n in $names; do
	k=$(status_of "$res/kqueue-1.tsv" "$n") e=$(status_of "$res/epoll-1.tsv" "$n")
	case " $retry " in *" $n "*)
		[ "$(status_of "$res/kqueue-2.tsv" "$n")" = PASS ] && { k=FLAKY; flaky="$flaky $n"; } ;;
	esac
	case $k in PASS|FLAKY) passed=$((passed + 1)) ;; esac
	if [ "$k" != PASS ] && [ "$k" != FLAKY ]; then
		if [ "$e" = PASS ]; then failed=$((failed + 1)); kqonly="$kqonly $n"
		else both="$both $n"; fi
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$k" "$e" "$(detail_of "$res/kqueue-1.tsv" "$n")" \
	    "$(detail_of "$res/epoll-1.tsv" "$n")" >>"$res/table"
done
{
	printf 'check\tkqueue\tepoll\tkqueue_detail\tepoll_detail\n'
	cat "$res/table"
} >"$work/nginx-results.tsv"
echo
say "check                          kqueue (over kq)  epoll"
while IFS=$'\t' read -r n k e kd ed; do
	mark=" "
	[ "$k" != PASS ] && mark="!"
	printf 'nginx: %s %-30s %-17s %s\n' "$mark" "$n" "$k" "$e"
	printf 'nginx:       kqueue: %s\n' "$kd"
	[ "$k" = PASS ] && [ "$e" = PASS ] || printf 'nginx:       epoll:  %s\n' "$ed"
done <"$res/table"
echo
[ -n "$both" ] && say "failing on both builds (not kq):$both"
[ -n "$flaky" ] && say "FLAKY on kqueue (failed, then passed when run again):$flaky"
[ -n "$kqonly" ] && say "FAILING ON KQUEUE ONLY:$kqonly (logs: $res/run-kqueue-*/logs/error.log)"
say "smoke tests took ${t_tests} s; results in $work/nginx-results.tsv, logs in $res"

# --- 4. requests per second of a static file, kqueue over kq vs epoll -----
if [ "${NGINX_BENCH:-1}" != 0 ]; then
	runs=${NGINX_BENCH_RUNS:-5}
	bench_tsv=$work/nginx-bench.tsv
	say "ab on a 4 KiB static file, one worker each, builds in turn, $runs runs of 2 s at most: requests/s (median)"
	timeout -k 5 600 python3 tests/clients/nginx-smoke.py bench --runs "$runs" \
	    --nginx "kq=$kbin" --nginx "epoll=$ebin" --dir "$res/bench" \
	    >"$res/bench.out" 2>"$res/bench.err" ||
	    die "benchmark failed: $(tail -5 "$res/bench.err")"
	printf 'mode\tconcurrency\trequests\truns\tkq_rps\tepoll_rps\tkq_over_epoll\tkq_all\tepoll_all\n' >"$bench_tsv"
	awk -F'\t' -v OFS='\t' '
	function median(list,   v, n, i, j, t) {
		n = split(list, v, ",")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
		return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	$1 == "BENCH" {
		k = $5; sub(/^kq=/, "", k); e = $6; sub(/^epoll=/, "", e)
		km = median(k); em = median(e)
		print $2, $3, $4, split(k, x, ","), sprintf("%.0f", km), sprintf("%.0f", em),
		    sprintf("%.2f", em > 0 ? km / em : 0), k, e
	}' "$res/bench.out" >>"$bench_tsv"
	awk -F'\t' 'NR > 1 { printf "nginx:   %-24s c=%-3s %6s requests/run x %s: kq %7s/s  epoll %7s/s  kq/epoll %s\n",
	    $1, $2, $3, $4, $5, $6, $7 }' "$bench_tsv"
	say "bench figures in $bench_tsv"
fi

say "took $(($(date +%s) - t_start)) s"
if [ "$failed" -gt 0 ]; then
	say "FAILED: $failed check(s) fail on kqueue over kq but not on epoll"
else
	say "PASSED: no check fails on kqueue over kq that passes on epoll"
fi
say "$passed passed, $failed failed"
done_ok=1
[ "$failed" -eq 0 ]
