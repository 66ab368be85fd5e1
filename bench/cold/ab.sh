#!/bin/bash
# bench/cold/ab.sh -- the pinned A/B of docs/HTTPD.md: lighttpd's
# linux-sysepoll handler against its kqueue handler over two builds of
# libkq, every request waking a server that slept.
#
#   bench/cold/ab.sh LIBDIR_A LIBDIR_B [RUNS [ROUNDS]]
#
# LIBDIR_A/B hold a libkq.so.0 each (the linux-sysepoll server, the same
# binary, runs with A's).  The three servers share CPU 1, the client runs
# on CPU 0; each run sends ROUNDS (3000) requests to each server in turn,
# 2 ms apart.  Prints per run the CPU per request of each server and the
# ratios A/epoll, B/epoll and B/A, then their medians.  ALT_IDLE=N holds
# N idle connections to each server through every run (altclient.c).
# shellcheck source=bench/cold/common.sh
. "$(dirname "$0")/common.sh"
A=$(cd "$1" && pwd); B=$(cd "$2" && pwd); runs=${3:-6}; rounds=${4:-3000}
conf epoll 2114 linux-sysepoll; conf a 2106 kqueue; conf b 2606 kqueue
pin_s="taskset -c 1"; pin_c="taskset -c 0"
[ "$(nproc)" -ge 2 ] || { pin_s=; pin_c=; }
LD_LIBRARY_PATH=$A $pin_s "$LIGHTTPD" -D -f "$work/epoll.conf" 2>/dev/null & pe=$!
LD_LIBRARY_PATH=$A $pin_s "$LIGHTTPD" -D -f "$work/a.conf" 2>/dev/null & pa=$!
LD_LIBRARY_PATH=$B $pin_s "$LIGHTTPD" -D -f "$work/b.conf" 2>/dev/null & pb=$!
wait_port 2114; wait_port 2106; wait_port 2606
if ! grep -q "$A/libkq.so" /proc/$pa/maps ||
    ! grep -q "$B/libkq.so" /proc/$pb/maps; then
	echo "$0: a server did not load the libkq it was given" >&2
	exit 1
fi
printf '%-4s %10s %10s %10s %8s %8s %8s\n' run epoll_us A_us B_us A/ep B/ep B/A
for r in $(seq 1 "$runs"); do
	$pin_c "$work/altclient" "$rounds" 2000 2114 $pe 2106 $pa 2606 $pb |
	    awk '{c[NR]=$(NF-1)} END {printf "%-4d %10.2f %10.2f %10.2f %8.3f %8.3f %8.3f\n",
		'"$r"', c[1], c[2], c[3], c[2]/c[1], c[3]/c[1], c[3]/c[2]}'
done | tee "$work/runs"
sort -n -k5 "$work/runs" | awk '{a[NR]=$5} END {printf "median A/ep %.3f ", a[int((NR+1)/2)]}'
sort -n -k6 "$work/runs" | awk '{a[NR]=$6} END {printf "B/ep %.3f ", a[int((NR+1)/2)]}'
sort -n -k7 "$work/runs" | awk '{a[NR]=$7} END {printf "B/A %.3f\n", a[int((NR+1)/2)]}'
