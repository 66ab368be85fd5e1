# tests/clients/lighttpd-build.sh -- fetch lighttpd 1.4.69 from Debian's
# source and build it against kq.  Sourced, not run, after common.sh and
# client_init (it uses say/die/as_root and client_apt_check).  Used by
# tests/clients/lighttpd.sh (both variants, then its make check) and by
# bench/httpd-setup.sh (the kqueue variant, for kqbench's httpd scenario).
#
#   lighttpd_build VARIANT...      VARIANT: kqueue | epoll
#
# Reads $work (where everything goes), $jobs (make -j) and $ver (1.4.69).
#  1. Enables deb-src for bookworm main, installs the build dependencies
#     with apt-get (compiler, dpkg-dev, perl, libpcre2-dev, zlib1g-dev) and
#     fetches the source with `apt-get source`; nothing else is downloaded.
#     Debian's patches are applied.
#  2. Installs kq (`make install`) into $work/kq-prefix and builds each
#     VARIANT from a fresh copy of the source, with no patch at all:
#     - kqueue: configured with CPPFLAGS from `pkg-config --cflags kq` and
#       `pkg-config --libs kq` in LDFLAGS (with --no-as-needed; LIBS would
#       also reach configure's check of the build-machine compiler, which
#       has no -L).  lighttpd's configure finds <sys/event.h> and kqueue():
#       HAVE_SYS_EVENT_H and HAVE_KQUEUE compile its "kqueue" event handler
#       (fdevent_freebsd_kqueue.c) beside poll and linux-sysepoll in the
#       same binary, and make its stat cache use kqueue (EVFILT_VNODE)
#       instead of inotify (stat_cache.c prefers kqueue when both exist);
#     - epoll: configured without kq (epoll, inotify).
#     config.h, the binaries' libkq and `lighttpd -V` are checked.
# Sets: src (the source path without the -VARIANT suffix), prefix, t_build
# (seconds), and for each variant built kbin/kreal (kqueue) or ebin/ereal
# (epoll): the libtool wrapper (or the binary) and the real binary.
# Dies on any failure.

lighttpd_build() {
	local deps dsc b d variants="$*"
	deps="gcc make pkg-config dpkg-dev perl libpcre2-dev zlib1g-dev"
	client_fetch_source lighttpd "$ver" "$deps"
	src=$work/lighttpd-$ver
	rm -rf "$src"
	dpkg-source -q --no-check -x "$dsc" "$src" >/dev/null 2>&1 ||
	    die "dpkg-source -x failed"
	for b in "$@"; do
		rm -rf "$src-$b"
		cp -a "$src" "$src-$b"
	done
	rm -rf "$src"

	client_install_kq "$work/kq-prefix"
	local kq_cflags kq_ldflags
	kq_cflags=$(pkg-config --cflags kq)
	kq_ldflags="$(pkg-config --libs-only-L kq) -Wl,-rpath,$(pkg-config --variable=libdir kq) -Wl,--no-as-needed $(pkg-config --libs-only-l kq)"
	t_build=$(date +%s)
	for b in "$@"; do
		set -- --disable-dependency-tracking --disable-static --with-pcre2 --with-zlib
		[ "$b" = kqueue ] && set -- "$@" CPPFLAGS="$kq_cflags" LDFLAGS="$kq_ldflags"
		say "configure ($b)$([ "$b" = kqueue ] && echo ": CPPFLAGS='$kq_cflags' LDFLAGS='$kq_ldflags'")"
		(cd "$src-$b" && ./configure "$@") >"$work/lighttpd-$b-configure.log" 2>&1 ||
		    die "configure ($b) failed, see $work/lighttpd-$b-configure.log"
		say "building lighttpd ($b, make -j$jobs)"
		make -C "$src-$b" -j"$jobs" >"$work/lighttpd-$b-make.log" 2>&1 ||
		    die "make ($b) failed, see $work/lighttpd-$b-make.log"
		for d in HAVE_SYS_EVENT_H HAVE_KQUEUE; do
			if [ "$b" = kqueue ]; then
				grep -q "^#define $d 1" "$src-$b/config.h" ||
				    die "kqueue build: config.h lacks $d"
			else
				grep -q "^#define $d 1" "$src-$b/config.h" &&
				    die "epoll build: config.h has $d"
			fi
		done
		# libtool wrappers: the real binaries are in src/.libs when
		# shared modules
		if [ "$b" = kqueue ]; then
			kbin=$src-kqueue/src/lighttpd kreal=$kbin
			[ -x "$src-kqueue/src/.libs/lighttpd" ] && kreal=$src-kqueue/src/.libs/lighttpd
			ldd "$kreal" | grep -q "libkq\.so.* => $prefix/lib/" ||
			    die "lighttpd (kqueue) does not load libkq.so from $prefix"
			"$kbin" -V 2>&1 | grep -q '+ kqueue' ||
			    die "lighttpd (kqueue) -V does not list kqueue"
			"$kbin" -V 2>&1 | grep -E '^\s*\+ (kqueue|epoll|poll) ' |
			    sed "s/^/$client_tag: -V (kqueue build): /"
		else
			ebin=$src-epoll/src/lighttpd ereal=$ebin
			[ -x "$src-epoll/src/.libs/lighttpd" ] && ereal=$src-epoll/src/.libs/lighttpd
			ldd "$ereal" | grep -q libkq && die "lighttpd (epoll) loads libkq"
			"$ebin" -V 2>&1 | grep -q '+ kqueue' && die "lighttpd (epoll) -V lists kqueue"
		fi
	done
	t_build=$(($(date +%s) - t_build))
	say "built $variants in ${t_build} s (kqueue: config.h HAVE_SYS_EVENT_H HAVE_KQUEUE, kqueue handler and stat cache, libkq.so from $prefix; epoll: without)"
}
