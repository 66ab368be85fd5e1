/*
 * peekoff.c -- does the program use SO_PEEK_OFF?
 *
 * kq counts a datagram socket's queue by walking it with the socket's peek
 * offset, and then puts back the offset the program had (filt_fd.c).  The
 * offset is the socket's, shared with every process holding it, so the
 * value read before a walk may be another process's walk's, not the
 * program's.  A program written for FreeBSD never sets one (FreeBSD has no
 * SO_PEEK_OFF): then the offset to put back is always -1, whatever was
 * read.  The setsockopt() below takes the C library's place, as close()
 * and getsockopt() do, and notes the first SO_PEEK_OFF the program sets in
 * this process (inherited by its fork children, not by a program it
 * execs); from then on kq puts back what it read.  kq's own settings go
 * straight to the kernel (kq_set_peek_off).
 */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kq_int.h"

static _Atomic int peekoff_used;

int
kq_peek_off_used(void)
{
	return atomic_load_explicit(&peekoff_used, memory_order_relaxed);
}

int
kq_set_peek_off(int fd, int off)
{
	return (int)syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_PEEK_OFF, &off,
	    (socklen_t)sizeof(off));
}

KQ_EXPORT int
setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int r = (int)syscall(SYS_setsockopt, fd, level, name, val, len);

	if (__builtin_expect(level == SOL_SOCKET && name == SO_PEEK_OFF, 0) &&
	    r == 0)
		atomic_store_explicit(&peekoff_used, 1, memory_order_relaxed);
	return r;
}
