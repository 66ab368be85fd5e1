#!/bin/bash
# A real kqueue client on kq: lighttpd 1.4.69, Debian bookworm's source,
# built with its kqueue event handler and its kqueue stat cache (EVFILT_VNODE)
# on Linux and linked with kq, and tested with its own test suite (`make
# check`) beside the same source built without kq (linux-sysepoll, inotify
# stat cache) as baseline.
#
#   tests/clients/lighttpd.sh            (as root on Debian 12; CI runs it)
#
# 1.-2. (tests/clients/lighttpd-build.sh, shared with bench/httpd-setup.sh)
# 1. Enables deb-src for bookworm main (as libevent.sh does), installs what
#    it needs with apt-get (compiler, dpkg-dev, perl, libpcre2-dev,
#    zlib1g-dev) and fetches the source with `apt-get source`.  Nothing
#    else is downloaded.  Debian's patches are applied.
# 2. Builds lighttpd twice from that source, with no patch at all:
#    - lighttpd-1.4.69-kqueue: configured with CPPFLAGS from `pkg-config
#      --cflags kq` and `pkg-config --libs kq` in LDFLAGS (with
#      --no-as-needed; LIBS would also reach configure's check of the
#      build-machine compiler, which has no -L).  lighttpd's configure
#      finds <sys/event.h> and kqueue(): HAVE_SYS_EVENT_H and HAVE_KQUEUE
#      compile its "kqueue" event handler (fdevent_freebsd_kqueue.c) beside
#      epoll, and make its stat cache use kqueue (EVFILT_VNODE) instead of
#      inotify (stat_cache.c prefers kqueue when both exist);
#    - lighttpd-1.4.69-epoll: configured without kq (epoll, inotify).
#    config.h and `lighttpd -V` are checked, and each build is asked to
#    start with a configuration naming the other build's handler: the epoll
#    build must refuse "kqueue".
# 3. Runs `make check` (src/t unit tests, then tests/*.t through
#    run-tests.pl, VERBOSE=1) in both trees side by side.  The test
#    configuration (tests/lighttpd.conf) includes tests/tmp/bind*.conf;
#    the script writes tests/tmp/bind-kq-event.conf there with
#        server.event-handler = "kqueue"
#        server.stat-cache-engine = "kqueue"
#    in the kqueue tree, and with "linux-sysepoll" and "inotify" in the
#    epoll tree, so every lighttpd the suite starts runs on the chosen
#    handler and stat cache; the suite itself is not changed.
#    With stat-cache-engine "kqueue" every file the suite has served goes
#    through the kqueue stat cache: lighttpd registers a directory with
#    EVFILT_VNODE (NOTE_WRITE, NOTE_DELETE, NOTE_RENAME, ...) and reads
#    its kqueue when kq reports it readable.  No check of invalidation is
#    made: lighttpd 1.4.69 does not see a file replaced by rename(2) on
#    either engine (its kqueue code watches the parent of the file's
#    directory -- fdevent_open_dirname() of the directory's path --, its
#    inotify mask lacks IN_MOVED_TO), so such a check fails on both.
#
# Exits non-zero when a test fails on kqueue but not on epoll.  Ends with one
# line "lighttpd: N passed, N failed" (N passed: tests passed on kqueue, N
# failed: those failed on kqueue only), which tools/test-all.sh adds to its
# total.
#
# Environment: KQ_CLIENT_DIR (default build/clients), JOBS (make -j, 2).
set -eu
cd "$(dirname "$0")/../.."
top=$PWD
work=${KQ_CLIENT_DIR:-$top/build/clients}
jobs=${JOBS:-2}
t_start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C
ver=1.4.69

# shellcheck source=tests/clients/common.sh
. tests/clients/common.sh
client_init lighttpd

mkdir -p "$work"
work=$(cd "$work" && pwd)

# --- 1.-2. source from apt, kq into a scratch prefix, both builds ----------
# shellcheck source=tests/clients/lighttpd-build.sh
. tests/clients/lighttpd-build.sh
lighttpd_build kqueue epoll

res=$work/lighttpd-results
rm -rf "$res"
mkdir -p "$res"
# A configuration that names each handler: the kqueue build must start with
# "kqueue" and the kqueue stat cache, the epoll build must refuse "kqueue".
for b in kqueue epoll; do
	cat >"$res/t-$b.conf" <<EOF
server.document-root = "$res"
server.port = 0
server.bind = "127.0.0.1"
server.event-handler = "kqueue"
server.stat-cache-engine = "kqueue"
EOF
done
"$kbin" -tt -f "$res/t-kqueue.conf" >"$res/t-kqueue.out" 2>&1 ||
    die "lighttpd (kqueue) refuses server.event-handler = \"kqueue\": $(head -3 "$res/t-kqueue.out")"
"$ebin" -tt -f "$res/t-epoll.conf" >"$res/t-epoll.out" 2>&1 &&
    die "lighttpd (epoll) accepts server.event-handler = \"kqueue\""
say "kqueue build accepts server.event-handler = \"kqueue\" and stat-cache-engine \"kqueue\"; epoll build refuses them"

# --- 3. make check, kqueue and epoll side by side ---------------------------
run_check() {	# build handler stat-cache
	local b=$1 rc=0
	mkdir -p "$src-$b/tests/tmp"
	printf 'server.event-handler = "%s"\nserver.stat-cache-engine = "%s"\n' "$2" "$3" \
	    >"$src-$b/tests/tmp/bind-kq-event.conf"
	VERBOSE=1 timeout -k 10 900 make -C "$src-$b" check >"$res/$b.log" 2>&1 || rc=$?
	echo "$rc" >"$res/$b.rc"
	# tests/*.t (Test::More under Test::Harness, verbose): "ok N - name";
	# src/t unit tests (automake): "PASS: name"
	# (keyed by name: the order of some tests varies from run to run)
	sed -n -e 's/^\(not ok\|ok\) [0-9]* - \(.*\)$/\1\t\2/p' \
	    -e 's/^\(not ok\|ok\) \([0-9]*\)$/\1\t#\2/p' \
	    -e 's/^\(PASS\|FAIL\|ERROR\): \(.*\)$/\1\t\2/p' "$res/$b.log" |
	    sed -e 's/^ok\t/PASS\t/' -e 's/^not ok\t/FAIL\t/' >"$res/$b.tsv"
}
say "make check (src/t unit tests, tests/*.t) on both builds side by side"
t_tests=$(date +%s)
run_check kqueue kqueue kqueue &
kpid=$!
run_check epoll linux-sysepoll inotify
wait $kpid || true
t_tests=$(($(date +%s) - t_tests))
count() { awk -F'\t' -v s="$2" '$1 == s' "$1" | wc -l; }
kp=$(count "$res/kqueue.tsv" PASS) ep=$(count "$res/epoll.tsv" PASS)
kf=$(($(count "$res/kqueue.tsv" FAIL) + $(count "$res/kqueue.tsv" ERROR)))
ef=$(($(count "$res/epoll.tsv" FAIL) + $(count "$res/epoll.tsv" ERROR)))
krc=$(cat "$res/kqueue.rc") erc=$(cat "$res/epoll.rc")
# tests passed on epoll that did not pass on kqueue (failed or never ran)
# (a name passing more often on epoll than on kqueue)
awk -F'\t' 'NR == FNR { if ($1 == "PASS") k[$2]++; next }
	$1 == "PASS" && ++e[$2] > k[$2] { print $2 }' "$res/kqueue.tsv" "$res/epoll.tsv" >"$res/kqueue-only"
failed=$(wc -l <"$res/kqueue-only")
[ "$krc" -ne 0 ] && [ "$erc" -eq 0 ] && [ "$failed" -eq 0 ] && failed=1
{
	printf 'build\thandler\tstat_cache\tpass\tfail\tmake_check_status\tseconds\n'
	printf 'kqueue\tkqueue\tkqueue\t%s\t%s\t%s\t%s\n' "$kp" "$kf" "$krc" "$t_tests"
	printf 'epoll\tlinux-sysepoll\tinotify\t%s\t%s\t%s\t%s\n' "$ep" "$ef" "$erc" "$t_tests"
} >"$work/lighttpd-results.tsv"
say "make check, ${t_tests} s: kqueue (over kq) $kp passed, $kf failed (status $krc); linux-sysepoll $ep passed, $ef failed (status $erc)"
[ -s "$res/kqueue-only" ] && sed 's/^/lighttpd: FAILING ON KQUEUE ONLY: /' "$res/kqueue-only"
# one row for the README's table (tools/compat-table.sh checks it there)
printf '%s\t%s\t%s\t%s\n' "lighttpd $ver" "make check: src/t and tests/*.t, $ep results" \
    "$kp passed, $kf failed" "$ep passed, $ef failed" >"$work/lighttpd-summary.tsv"
say "took $(($(date +%s) - t_start)) s; logs in $res"
if [ "$failed" -gt 0 ]; then
	say "FAILED: $failed test(s) fail on kqueue over kq but not on epoll"
else
	say "PASSED: no test fails on kqueue over kq that passes on epoll"
fi
say "$kp passed, $failed failed"
done_ok=1
[ "$failed" -eq 0 ]
