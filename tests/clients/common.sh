# tests/clients/common.sh -- what every client script (libevent.sh,
# libev.sh, nginx.sh, redis.sh, lighttpd.sh) starts with.  Sourced, not
# run.  Contract:
#   client_init TAG      say/die/as_root for messages "TAG: ...", and an
#                        EXIT trap that turns a set-up failure (any non-zero
#                        exit before the script sets done_ok=1) into its
#                        closing line "TAG: 0 passed, 1 failed"; uses the
#                        script's $work for the logs' place.
#   client_apt_check D   enables deb-src for bookworm main when no source
#                        list has it (its own file, need_update=1), and
#                        sets $missing to those of the packages D that are
#                        not installed; the caller decides on apt-get update
#                        and install (it knows which source it needs).
#   client_fetch_source PKG VER DEPS
#                        client_apt_check DEPS, apt-get update when deb-src
#                        was just enabled, a package is missing or the
#                        source of PKG VER is neither downloaded nor known,
#                        installs the missing packages, and fetches PKG's
#                        bookworm source into $work/dl unless it is there;
#                        sets dsc to its .dsc.  Dies when it cannot.
#   client_install_kq DIR
#                        builds libkq and installs it (`make install`) into
#                        the fresh prefix DIR; sets prefix=DIR and exports
#                        PKG_CONFIG_PATH for it.  Uses $jobs.

client_init() {
	client_tag=$1
	# shellcheck disable=SC2016
	trap 'rc=$?; if [ $rc -ne 0 ] && [ -z "${done_ok:-}" ]; then
		say "FAILED (set-up or script error, status $rc; logs in $work)"
		say "0 passed, 1 failed"; fi' EXIT
}
say() { echo "$client_tag: $*"; }
die() { say "$*" >&2; exit 1; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }

client_srcfile=/etc/apt/sources.list.d/kq-deb-src-bookworm.sources

client_have_deb_src() {
	grep -rqsE '^[[:space:]]*deb-src[[:space:]].*[[:space:]]bookworm[[:space:]]' \
	    /etc/apt/sources.list /etc/apt/sources.list.d/*.list && return 0
	# deb822: a stanza whose Types has deb-src and whose Suites has bookworm
	awk 'BEGIN { RS = ""; found = 1 }
	     /(^|\n)Types:[^\n]*deb-src/ && /(^|\n)Suites:[^\n]*bookworm([ \t\n]|$)/ { found = 0 }
	     END { exit found }' /etc/apt/sources.list.d/*.sources 2>/dev/null
}

client_enable_deb_src() {
	client_have_deb_src && return 0
	say "enabling deb-src for bookworm main in $client_srcfile"
	as_root tee "$client_srcfile" >/dev/null <<'EOF'
# Added by kq's tests/clients scripts: source packages for bookworm main.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	need_update=1
}

client_apt_check() {
	local p
	client_enable_deb_src
	missing=""
	for p in $1; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' ||
		    missing="$missing $p"
	done
}

client_fetch_source() {
	local pkg=$1 ver=$2
	client_apt_check "$3"
	mkdir -p "$work/dl"
	dsc=$(ls "$work"/dl/"$pkg"_*"$ver"-*.dsc 2>/dev/null | tail -1 || true)
	if [ -n "${need_update:-}" ] || [ -n "$missing" ] || { [ -z "$dsc" ] &&
	    ! apt-cache showsrc "$pkg" 2>/dev/null | grep -q "^Version: .*$ver-"; }; then
		say "apt-get update"
		as_root apt-get update -qq
	fi
	if [ -n "$missing" ]; then
		say "installing:$missing"
		as_root apt-get install -y -qq --no-install-recommends $missing >/dev/null
	fi
	if [ -z "$dsc" ]; then
		say "apt-get source $pkg/bookworm"
		(cd "$work/dl" && apt-get source -qq --download-only "$pkg"/bookworm) ||
		    die "apt-get source $pkg failed"
		dsc=$(ls "$work"/dl/"$pkg"_*"$ver"-*.dsc 2>/dev/null | tail -1 || true)
		[ -n "$dsc" ] || die "no $pkg $ver source package from apt"
	fi
	say "source: $(basename "$dsc") (Debian's patches applied)"
}

client_install_kq() {
	prefix=$1
	say "installing kq into $prefix"
	make -s -j"$jobs" lib >/dev/null
	rm -rf "$prefix"
	make -s install PREFIX="$prefix" >/dev/null
	export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
}
