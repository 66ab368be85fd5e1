#!/bin/bash
# Install kq into a scratch prefix and build a BSD-style program against it
# with pkg-config and with CMake's find_package(kq).
set -eu
cd "$(dirname "$0")/.."
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
make -s install PREFIX="$root/usr" >/dev/null
cat > "$root/prog.c" <<'C'
#include <sys/types.h>
#include <sys/event.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
	int p[2], kq = kqueue();
	struct kevent ch, ev;
	if (kq < 0 || pipe(p) != 0) return 1;
	EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (write(p[1], "hi", 2) != 2) return 1;
	if (kevent(kq, &ch, 1, &ev, 1, NULL) != 1 || ev.data != 2) return 1;
	puts("installed kq works");
	return 0;
}
C
export PKG_CONFIG_PATH="$root/usr/lib/pkgconfig"
cc -Wall -Werror -o "$root/prog" "$root/prog.c" $(pkg-config --cflags --libs kq)
# <port.h> sits beside <sys/event.h>, with illumos's layout.
cat > "$root/port.c" <<'C'
#include <port.h>
#include <stddef.h>
_Static_assert(sizeof(port_event_t) == 24, "port_event_t");
_Static_assert(offsetof(port_event_t, portev_object) == 8, "portev_object");
_Static_assert(offsetof(file_obj_t, fo_name) == 72, "fo_name");
_Static_assert(PORT_SOURCE_FD == 4 && PORT_SOURCE_FILE == 7, "sources");
int main(void) {
	port_event_t pe;
	struct timespec z = { 0, 0 };
	int p = port_create();
	if (p < 0 || port_send(p, 7, NULL) != 0 || port_get(p, &pe, &z) != 0)
		return 1;
	return pe.portev_source == PORT_SOURCE_USER && pe.portev_events == 7 ? 0 : 1;
}
C
cc -std=c11 -Wall -Werror -o "$root/port" "$root/port.c" $(pkg-config --cflags --libs kq)
LD_LIBRARY_PATH="$root/usr/lib" "$root/port" && echo "installed <port.h> works"
LD_LIBRARY_PATH="$root/usr/lib" "$root/prog"
mkdir -p "$root/cm"
cat > "$root/cm/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.13)
project(kqsmoke C)
find_package(kq REQUIRED)
add_executable(prog ../prog.c)
target_link_libraries(prog kq::kq)
C
cmake -S "$root/cm" -B "$root/cm/b" -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null
cmake --build "$root/cm/b" >/dev/null
LD_LIBRARY_PATH="$root/usr/lib" "$root/cm/b/prog"
