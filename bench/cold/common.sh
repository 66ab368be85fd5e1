# shellcheck shell=bash
# bench/cold/common.sh -- sourced by ab.sh and lines.sh: the lighttpd
# binary, a scratch directory with a static file, and one configuration
# per server.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
LIGHTTPD=${KQBENCH_LIGHTTPD:-$top/build/clients/lighttpd-1.4.69-kqueue/src/lighttpd}
if [ ! -x "$LIGHTTPD" ]; then
	echo "$0: no lighttpd at $LIGHTTPD (bench/httpd-setup.sh builds it)" >&2
	exit 1
fi
work=$(mktemp -d /tmp/kq-cold.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/www"
head -c 512 /dev/zero | tr '\0' x > "$work/www/index.html"
cc -std=c11 -O2 -o "$work/altclient" "$top/bench/cold/altclient.c"

# conf NAME PORT HANDLER: writes $work/NAME.conf
conf() {
	cat > "$work/$1.conf" <<C
server.document-root = "$work/www"
server.bind = "127.0.0.1"
server.port = $2
server.event-handler = "$3"
server.stat-cache-engine = "simple"
server.max-fds = 20000
server.max-connections = 10000
server.max-read-idle = 3600
server.max-keep-alive-idle = 3600
server.errorlog = "$work/$1.err"
index-file.names = ( "index.html" )
C
}

# wait_port PORT: until something listens there (10 s at most)
wait_port() {
	local _
	for _ in $(seq 1 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "$0: nothing listens on port $1" >&2
	return 1
}
