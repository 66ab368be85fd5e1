#!/bin/bash
# libev 4.33 (Debian bookworm's source, unmodified) on kq: its event-port
# backend over kq's <port.h> and its kqueue backend over <sys/event.h>,
# with epoll as baseline, through a smoke program (tests/clients/
# libev-smoke.c: io, two watchers on a descriptor, end of file, timers,
# signals, async, child, fork) and a ring benchmark (one token around 100
# pipes, microseconds per hop on each backend, with the ratio to epoll).
#
#   tests/clients/libev.sh        (as root on Debian 12; CI runs it)
#
# 1. Fetches the source with `apt-get source` into build/clients/ (deb-src
#    for bookworm is enabled by tests/clients/libevent.sh, which CI runs
#    first; this script enables it the same way if it is missing).
# 2. Installs kq into build/clients/kq-prefix-libev and configures libev
#    with CPPFLAGS/LDFLAGS/LIBS from `pkg-config kq`: libev's own checks
#    must find <port.h>, port_create, <sys/event.h> and kqueue (config.h
#    HAVE_PORT_H, HAVE_PORT_CREATE, HAVE_SYS_EVENT_H, HAVE_KQUEUE).
# 3. Runs the smoke program with LIBEV_FLAGS=32 (port), 8 (kqueue) and 4
#    (epoll); it checks that libev runs on the backend asked for.
# Ends with "libev: N passed, M failed" (N: checks passed on port and
# kqueue; M: checks failing there but not on epoll).
set -eu
cd "$(dirname "$0")/../.."
top=$PWD
work=${KQ_CLIENT_DIR:-$top/build/clients}
jobs=${JOBS:-2}
export DEBIAN_FRONTEND=noninteractive LC_ALL=C

# shellcheck source=tests/clients/common.sh
. tests/clients/common.sh
client_init libev

mkdir -p "$work/dl-libev"
work=$(cd "$work" && pwd)
dsc=$(ls "$work"/dl-libev/libev_4.33-*.dsc 2>/dev/null | tail -1 || true)
if [ -z "$dsc" ]; then
	if ! apt-cache showsrc libev 2>/dev/null | grep -q '^Version: 1:4\.33'; then
		client_enable_deb_src
		as_root apt-get update -qq
	fi
	say "apt-get source libev/bookworm"
	(cd "$work/dl-libev" && apt-get source -qq --download-only libev/bookworm) \
	    >/dev/null 2>&1 || die "apt-get source libev failed"
	dsc=$(ls "$work"/dl-libev/libev_4.33-*.dsc 2>/dev/null | tail -1 || true)
	[ -n "$dsc" ] || die "no libev 4.33 source package from apt"
fi
src=$work/libev-4.33
rm -rf "$src"
dpkg-source -q --no-check -x --skip-patches "$dsc" "$src" >/dev/null ||
    die "dpkg-source -x failed"

client_install_kq "$work/kq-prefix-libev"
kq_cflags=$(pkg-config --cflags kq)
kq_ldflags="$(pkg-config --libs-only-L kq) -Wl,-rpath,$prefix/lib"
kq_libs=$(pkg-config --libs-only-l kq)
say "configure CPPFLAGS='$kq_cflags' LDFLAGS='$kq_ldflags' LIBS='$kq_libs'"
(cd "$src" && ./configure --disable-shared --disable-dependency-tracking \
    CPPFLAGS="$kq_cflags" LDFLAGS="$kq_ldflags" LIBS="$kq_libs") \
    >"$work/libev-configure.log" 2>&1 ||
    die "configure failed, see $work/libev-configure.log"
for d in HAVE_PORT_H HAVE_PORT_CREATE HAVE_SYS_EVENT_H HAVE_KQUEUE; do
	grep -q "^#define $d 1" "$src/config.h" ||
	    die "config.h lacks $d: libev did not accept kq"
done
say "config.h: HAVE_PORT_H HAVE_PORT_CREATE HAVE_SYS_EVENT_H HAVE_KQUEUE"
make -C "$src" -j"$jobs" >"$work/libev-make.log" 2>&1 ||
    die "make failed, see $work/libev-make.log"
cc -O2 -Wall -fno-strict-aliasing -I"$src" -o "$work/libev-smoke" tests/clients/libev-smoke.c \
    "$src/.libs/libev.a" $kq_cflags $kq_ldflags $kq_libs -lm -lpthread ||
    die "cannot build the smoke program"

passed=0 failed=0
declare -A res
for b in port:32 kqueue:8 epoll:4; do
	name=${b%:*}
	out=$work/libev-smoke.$name.out
	LIBEV_FLAGS=${b#*:} timeout -k 5 120 "$work/libev-smoke" "$name" >"$out" 2>&1 || true
	while read -r st check rest; do
		case $st in ok|FAIL) res[$name.$check]=$st ;; esac
	done <"$out"
	say "$name: $(grep -c '^ok ' "$out" || true) ok, $(grep -c '^FAIL ' "$out" || true) failed"
	grep '^FAIL ' "$out" | sed "s/^/libev:   $name: /" || true
done
checks=$(grep -E '^(ok|FAIL) ' "$work/libev-smoke.epoll.out" | awk '{ print $2 }')
printf 'libev:   %-16s %-6s %-6s %s\n' check port kqueue epoll
for c in $checks; do
	printf 'libev:   %-16s %-6s %-6s %s\n' "$c" "${res[port.$c]:-MISSING}" \
	    "${res[kqueue.$c]:-MISSING}" "${res[epoll.$c]:-MISSING}"
	for name in port kqueue; do
		if [ "${res[$name.$c]:-MISSING}" = ok ]; then
			passed=$((passed + 1))
		elif [ "${res[epoll.$c]:-MISSING}" = ok ]; then
			failed=$((failed + 1))
		fi
	done
done
# The ring benchmark: microseconds per hop on each backend, and the ratio
# of epoll's to each kq backend's (higher is better for kq).
ep_us=$(sed -n 's/^ring: .* \([0-9.]*\) us\/hop$/\1/p' "$work/libev-smoke.epoll.out")
for name in port kqueue epoll; do
	us=$(sed -n 's/^ring: .* \([0-9.]*\) us\/hop$/\1/p' "$work/libev-smoke.$name.out")
	ratio=$(awk -v a="${ep_us:-0}" -v b="${us:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }')
	say "ring benchmark (100 pipes, one token, 20000 hops): $name ${us:--} us/hop, x epoll $ratio"
done
say "$passed passed, $failed failed"
done_ok=1
[ "$failed" -eq 0 ]
