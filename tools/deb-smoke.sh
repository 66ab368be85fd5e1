#!/bin/bash
# kq as Debian packages, end to end (as root on Debian 12; CI runs it from
# tools/test-all.sh):
#
# 1. installs what the package build needs from Debian (debhelper, dpkg-dev,
#    build-essential, fakeroot, lintian, cmake, pkg-config; `apt-get update`
#    first when something is missing);
# 2. copies the tree's files (tracked and new, as in the working tree) into
#    build/deb/kq-<version> and runs `dpkg-buildpackage -us -uc -b` there
#    (the packages land in build/deb/); debian/libkq0.symbols is checked by
#    the build itself (dpkg-gensymbols -c4);
# 3. runs lintian on the packages: no error and no warning allowed
#    (informational tags are printed);
# 4. records every path under /usr, installs libkq0, libkq-dev and kq-bench
#    with `apt-get install ./….deb`, and checks that every path `dpkg -L`
#    lists is there;
# 5. builds examples/demo.c and tests/pkg/pkgtest.c with only
#    `pkg-config --cflags --libs kq`, and again with only CMake's
#    find_package(kq) (tests/pkg/CMakeLists.txt, no prefix given), checks
#    they load /usr/lib/<multiarch>/libkq.so.0, and runs them; kqbench runs
#    one tiny scenario; `man -w 2 kqueue` finds the page;
# 6. purges the three packages and checks that /usr holds exactly the paths
#    it held before, and that dpkg knows none of the packages' files.
#
# Each numbered check counts; ends with "deb: N passed, M failed", which
# tools/test-all.sh adds to its total.  Packages of kq installed before the
# run are purged first (and not reinstalled).  About a minute.
set -u
cd "$(dirname "$0")/.."
top=$PWD
t_start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
pass=0 fail=0
say() { echo "deb: $*"; }
ok() { say "ok: $*"; pass=$((pass + 1)); }
bad() { say "FAILED: $*"; fail=$((fail + 1)); }
finish() {
	say "$(($(date +%s) - t_start)) s"
	# one row for the README's table (tools/compat-table.sh checks it there)
	printf '%s\t%s\t%s\t%s\n' "Debian packages" "tools/deb-smoke.sh, $((pass + fail)) checks" \
	    "$pass passed, $fail failed" "-" >"$top/build/deb/summary.tsv"
	say "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }
pkgs="libkq0 libkq-dev kq-bench"
version=$(dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null ||
    sed -n '1s/^kq (\([^)]*\)).*/\1/p' debian/changelog)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
out=$top/build/deb
log=$out/logs
mkdir -p "$log"

# --- 1. build dependencies from Debian -----------------------------------
deps="debhelper dpkg-dev build-essential fakeroot lintian cmake pkg-config man-db"
missing=""
for p in $deps; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' ||
	    missing="$missing $p"
done
if [ -n "$missing" ]; then
	say "installing:$missing"
	if as_root apt-get update -qq >"$log/apt.log" 2>&1 &&
	    as_root apt-get install -y -qq --no-install-recommends $missing \
	    >>"$log/apt.log" 2>&1; then
		ok "build dependencies installed from Debian"
	else
		bad "apt-get install$missing (see $log/apt.log)"
		finish
	fi
fi
installed=$(dpkg-query -W -f='${Package} ${Status}\n' $pkgs 2>/dev/null |
    awk '/ installed$/ { print $1 }' | tr '\n' ' ')
if [ -n "$installed" ]; then
	say "purging kq packages left installed: $installed"
	as_root apt-get purge -y -qq $installed >"$log/purge-old.log" 2>&1
fi

# --- 2. dpkg-buildpackage in a copy of the tree ---------------------------
src=$out/kq-$version
rm -rf "$out"/kq-* "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
    tar --null -T - -cf - | tar -xf - -C "$src"
if (cd "$src" && dpkg-buildpackage -us -uc -b -j2) >"$log/build.log" 2>&1; then
	ok "dpkg-buildpackage -us -uc -b (symbols file matches)"
else
	tail -20 "$log/build.log" | sed 's/^/deb:   /'
	bad "dpkg-buildpackage (see $log/build.log)"
	finish
fi
debs=""
for p in $pkgs; do
	f=$out/${p}_${version}_${arch}.deb
	[ -f "$f" ] || { bad "no $f"; finish; }
	debs="$debs $f"
done
grep -q 'dpkg-gensymbols' "$log/build.log" && grep -A5 'dpkg-gensymbols' "$log/build.log" | sed 's/^/deb:   /'

# --- 3. lintian -----------------------------------------------------------
lintian -I --pedantic "$out"/kq_"${version}"_"${arch}".changes >"$log/lintian.log" 2>&1
sed 's/^/deb: lintian: /' "$log/lintian.log" | grep -v 'running with root privileges'
if grep -qE '^[EW]: ' "$log/lintian.log"; then
	bad "lintian: $(grep -cE '^E: ' "$log/lintian.log") errors, $(grep -cE '^W: ' "$log/lintian.log") warnings"
else
	ok "lintian: no error, no warning ($(grep -cE '^[IP]: ' "$log/lintian.log") informational)"
fi

# --- 4. install -----------------------------------------------------------
snap() { find /usr -xdev 2>/dev/null | LC_ALL=C sort; }
snap >"$log/usr-before.txt"
# apt-get wants a path with a slash to take a file rather than a name
if as_root apt-get install -y -qq --no-install-recommends $debs >"$log/install.log" 2>&1; then
	ok "apt-get install ./libkq0 ./libkq-dev ./kq-bench ($version)"
else
	bad "apt-get install (see $log/install.log)"
	finish
fi
missing_files=0
: >"$log/dpkg-L.txt"
for p in $pkgs; do
	dpkg -L "$p" >>"$log/dpkg-L.txt"
done
while read -r f; do
	[ -e "$f" ] || [ -L "$f" ] || { missing_files=$((missing_files + 1)); say "missing: $f"; }
done <"$log/dpkg-L.txt"
[ "$missing_files" -eq 0 ] && ok "every file dpkg -L lists is installed ($(wc -l <"$log/dpkg-L.txt") paths)" ||
    bad "$missing_files listed files missing"

# --- 5. build and run against the packages only ---------------------------
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
libso=/usr/lib/$multiarch/libkq.so.0
runprog() {	# label binary
	local got
	# merged /usr: ld.so's cache may name it /lib/<multiarch>/libkq.so.0
	got=$(ldd "$2" | awk '$1 == "libkq.so.0" { print $3 }')
	if [ -n "$got" ] && [ "$(readlink -f "$got")" = "$(readlink -f "$libso")" ]; then
		if "$2" >"$log/run-$1.log" 2>&1; then
			ok "$1 runs ($(tail -1 "$log/run-$1.log"))"
		else
			sed 's/^/deb:   /' "$log/run-$1.log"
			bad "$1 failed (see $log/run-$1.log)"
		fi
	else
		bad "$1 does not load $libso"
	fi
}
unset PKG_CONFIG_PATH CMAKE_PREFIX_PATH
cf=$(pkg-config --cflags kq) lf=$(pkg-config --libs kq)
say "pkg-config: --cflags '$cf' --libs '$lf'"
for prog in examples/demo.c tests/pkg/pkgtest.c; do
	n=$(basename "$prog" .c)
	if cc -Wall -Werror -o "$w/$n" "$prog" $cf $lf 2>"$log/cc-$n.log"; then
		runprog "pkg-config $n" "$w/$n"
	else
		bad "cc $prog \$(pkg-config --cflags --libs kq) (see $log/cc-$n.log)"
	fi
done
if cmake -S tests/pkg -B "$w/cm" -DKQ_SRC="$top" >"$log/cmake.log" 2>&1 &&
    cmake --build "$w/cm" >>"$log/cmake.log" 2>&1; then
	ok "CMake find_package(kq) configures and builds"
	runprog "cmake demo" "$w/cm/demo"
	runprog "cmake pkgtest" "$w/cm/pkgtest"
else
	bad "CMake find_package(kq) (see $log/cmake.log)"
fi
kqbench --list >/dev/null 2>&1 &&
    kqbench --tiny --scenario create --out "$w/bench" >"$log/kqbench.log" 2>&1 &&
    ok "kqbench --tiny --scenario create" || bad "kqbench (see $log/kqbench.log)"
man -w 2 kqueue 2>/dev/null | grep -q '^/usr/share/man/man2/kqueue\.2' &&
    man -w 1 kqbench 2>/dev/null | grep -q '^/usr/share/man/man1/kqbench\.1' &&
    ok "man -w 2 kqueue, man -w 1 kqbench" || bad "manual pages not found by man"

# --- 6. purge: nothing left -----------------------------------------------
if as_root apt-get purge -y -qq $pkgs >"$log/purge.log" 2>&1; then
	ok "apt-get purge $pkgs"
else
	bad "apt-get purge (see $log/purge.log)"
fi
snap >"$log/usr-after.txt"
if diff "$log/usr-before.txt" "$log/usr-after.txt" >"$log/usr-diff.txt"; then
	ok "/usr after purge = /usr before install ($(wc -l <"$log/usr-before.txt") paths)"
else
	sed 's/^/deb:   /' "$log/usr-diff.txt" | head -20
	bad "/usr differs after purge (see $log/usr-diff.txt)"
fi
left=0
for p in $pkgs; do
	dpkg -L "$p" >/dev/null 2>&1 && left=$((left + $(dpkg -L "$p" | wc -l)))
done
[ "$left" -eq 0 ] && ok "dpkg lists no file of $pkgs" || bad "dpkg still lists $left files"
finish
