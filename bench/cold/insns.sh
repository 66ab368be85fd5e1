#!/bin/bash
# bench/cold/insns.sh -- user-space instructions per request by function
# (docs/HTTPD.md): lighttpd's kqueue handler over the libkq.so.0 in LIBDIR
# under valgrind's callgrind, serving ROUNDS requests from altclient.
#
#   bench/cold/insns.sh LIBDIR [ROUNDS [OUT]]
#
# Prints the total instructions per request and the functions of
# libkq.so.0 with theirs (exclusive).  OUT keeps callgrind's file.
# shellcheck source=bench/cold/common.sh
. "$(dirname "$0")/common.sh"
L=$(cd "$1" && pwd); rounds=${2:-1000}; out=${3:-$work/callgrind.out}
command -v valgrind >/dev/null || { echo "$0: valgrind is missing" >&2; exit 1; }
port=2150
conf kq $port kqueue
LD_LIBRARY_PATH=$L valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$LIGHTTPD" -D -f "$work/kq.conf" 2>/dev/null & p=$!
wait_port $port
"$work/altclient" "$rounds" 3000 $port $p > /dev/null
kill $p; wait $p 2>/dev/null || true
callgrind_annotate --show-percs=no --threshold=100 "$out" 2>/dev/null | awk -v r="$rounds" '
	/PROGRAM TOTALS/ { gsub(",", "", $1); printf "all: %.0f per request\n", $1 / r }
	/libkq\.so/ { v = $1; gsub(",", "", v); if (v / r >= 1)
		printf "%8.1f  %s\n", v / r, $2 }'
