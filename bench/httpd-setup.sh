#!/bin/bash
# bench/httpd-setup.sh -- what kqbench's httpd scenario needs: httperf from
# Debian's packages, and lighttpd 1.4.69 from Debian's source built against
# kq (its kqueue event handler and kqueue stat cache, beside poll and
# linux-sysepoll in the same binary).
#
#   bench/httpd-setup.sh          (as root or with sudo, on Debian 12)
#
# kqbench runs it by itself when the scenario is selected and either is
# missing.  A kqueue build of lighttpd already made by
# tests/clients/lighttpd.sh (build/clients/lighttpd-1.4.69-kqueue) is
# reused; otherwise tests/clients/lighttpd-build.sh fetches the source with
# `apt-get source` and builds only the kqueue variant.  Nothing is
# downloaded from anywhere but Debian's archive.  The binary links libkq.so
# from a scratch prefix; kqbench runs it with LD_LIBRARY_PATH naming the
# libkq.so built beside kqbench, so the server always runs the library
# being measured.
#
# Prints the lighttpd binary's path as its last line "httpd-setup: lighttpd
# PATH".  Exits non-zero (after saying why) when something cannot be had.
# Environment: KQ_CLIENT_DIR (default build/clients), JOBS (make -j, 2).
set -eu
cd "$(dirname "$0")/.."
top=$PWD
work=${KQ_CLIENT_DIR:-$top/build/clients}
jobs=${JOBS:-2}
export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C
ver=1.4.69

# shellcheck source=tests/clients/common.sh
. tests/clients/common.sh
client_init httpd-setup
mkdir -p "$work"
work=$(cd "$work" && pwd)

if ! command -v httperf >/dev/null 2>&1; then
	say "installing httperf (apt-get)"
	as_root apt-get update -qq
	as_root apt-get install -y -qq --no-install-recommends httperf >/dev/null ||
	    die "apt-get install httperf failed"
	command -v httperf >/dev/null 2>&1 || die "no httperf after apt-get install"
fi
say "httperf: $(command -v httperf)"

kbin=$work/lighttpd-$ver-kqueue/src/lighttpd
if [ -x "$kbin" ] && "$kbin" -V 2>&1 | grep -q '+ kqueue'; then
	say "reusing $kbin"
else
	# shellcheck source=tests/clients/lighttpd-build.sh
	. tests/clients/lighttpd-build.sh
	lighttpd_build kqueue
fi
# -V names the handlers "poll (Unix)", "epoll (Linux)" (configured as
# linux-sysepoll) and "kqueue (FreeBSD)"
for h in poll epoll kqueue; do
	"$kbin" -V 2>&1 | grep -q "+ $h " || die "lighttpd -V does not list the $h handler"
done
done_ok=1
say "lighttpd $kbin"
