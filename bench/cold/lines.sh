#!/bin/bash
# bench/cold/lines.sh -- distinct cache lines per request (docs/HTTPD.md):
# lighttpd under valgrind's lackey, once with its linux-sysepoll handler
# and once with its kqueue handler over libkq, serving ROUNDS requests.
#
#   bench/cold/lines.sh LIBDIR [ROUNDS]
#
# LIBDIR holds the libkq.so.0 to measure.  A request is everything the
# server does from one entry into network_server_handle_fdevent (the
# listener's event) to the next.  Prints, per handler, how many requests
# touched how many distinct 64-byte data lines and code lines (counts:
# requests), and by mapping for a typical request.
# shellcheck source=bench/cold/common.sh
. "$(dirname "$0")/common.sh"
L=$(cd "$1" && pwd); rounds=${2:-40}
command -v valgrind >/dev/null || { echo "$0: valgrind is missing" >&2; exit 1; }
port=2106
for h in linux-sysepoll kqueue; do
	conf "$h" $port "$h"
	LD_LIBRARY_PATH=$L valgrind --tool=lackey --trace-mem=yes \
	    --log-file="$work/$h.trace" "$LIGHTTPD" -D -f "$work/$h.conf" \
	    2>/dev/null & p=$!
	wait_port $port
	cp /proc/$p/maps "$work/$h.maps"
	"$work/altclient" "$rounds" 30000 $port $p > /dev/null
	kill $p; wait $p 2>/dev/null || true
	python3 "$top/bench/cold/lines.py" "$work/$h.trace" "$work/$h.maps" \
	    "$LIGHTTPD" network_server_handle_fdevent "$h"
	port=$((port + 1))
done
