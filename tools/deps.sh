#!/bin/sh
# Install what kq needs to build, test and benchmark, from Debian's
# packages only (Debian 12).  Needs root; a no-op for what is present.
set -e
PKGS="build-essential pkg-config libcmocka-dev clang libclang-rt-14-dev \
mandoc cmake strace gnuplot-nox apache2-utils"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
	    missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
