/*
 * sockerr.c -- a socket's pending error, reported in fflags and still
 * returned by the application's next getsockopt(SO_ERROR).
 *
 * FreeBSD reports EV_EOF on a socket with fflags = so_error and leaves
 * so_error in place.  Linux has no call that reads a socket's error
 * without clearing it (getsockopt(SO_ERROR), recv(MSG_PEEK), connect()
 * all consume it).  So kq consumes it when it reports EV_EOF and keeps it
 * here, per descriptor number, tagged with the socket's inode number; the
 * getsockopt() below (which takes libc's place, as close() does) hands it
 * back when the kernel has none newer, and clears it as the kernel would.
 * The tag makes a kept error die with its socket: a later socket on the
 * same number has another inode, and the stale entry is dropped when it is
 * found.  See kevent.2 LINUX NOTES for what stays different (a read()
 * after the report returns 0 instead of failing once with the error).
 *
 * The table is two-level and lock-free like the registry: chunks of
 * atomic words (inode << 32 | errno, 0 when empty), allocated on first use
 * and never freed.  kq_sockerr_n counts the entries in use, so that
 * getsockopt() costs one load in a process where no error is kept.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kq_int.h"
#include "fault.h"

#define SE_CHUNK_SHIFT	12
#define SE_CHUNK	(1 << SE_CHUNK_SHIFT)
#define SE_TOP		4096

static _Atomic(_Atomic uint64_t *) se_top[SE_TOP];
static _Atomic int se_n;

static _Atomic uint64_t *
se_slot(int fd, int create)
{
	_Atomic uint64_t *chunk, *fresh = NULL;

	if (fd < 0 || (fd >> SE_CHUNK_SHIFT) >= SE_TOP)
		return NULL;
	chunk = atomic_load_explicit(&se_top[fd >> SE_CHUNK_SHIFT],
	    memory_order_acquire);
	if (chunk == NULL && create) {
		fresh = kq_calloc(SE_CHUNK, sizeof(*fresh));
		if (fresh == NULL)
			return NULL;
		if (atomic_compare_exchange_strong_explicit(
		    &se_top[fd >> SE_CHUNK_SHIFT], &chunk, fresh,
		    memory_order_acq_rel, memory_order_acquire))
			chunk = fresh;
		else
			kq_free(fresh);	/* another thread won: chunk is its */
	}
	if (chunk == NULL)
		return NULL;
	return &chunk[fd & (SE_CHUNK - 1)];
}

/*
 * The socket's inode number (its identity while it is open), or 0 (not a
 * socket, closed).  Also peekoff.c's.
 */
uint32_t
kq_sock_ino(int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
		return 0;
	return (uint32_t)st.st_ino ? (uint32_t)st.st_ino : 1;
}

static int
se_raw_error(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);

	if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_ERROR, &v, &len) != 0)
		return 0;
	return v;
}

/* Empty slot s if it still holds w; keeps se_n in step. */
static void
se_clear(_Atomic uint64_t *s, uint64_t w)
{
	if (w != 0 && atomic_compare_exchange_strong_explicit(s, &w, 0,
	    memory_order_acq_rel, memory_order_relaxed))
		atomic_fetch_sub_explicit(&se_n, 1, memory_order_relaxed);
}

/* The error kept for fd if it is still the same socket (else dropped). */
static int
se_peek(int fd, int take)
{
	_Atomic uint64_t *s;
	uint64_t w;

	if (atomic_load_explicit(&se_n, memory_order_relaxed) == 0 ||
	    (s = se_slot(fd, 0)) == NULL ||
	    (w = atomic_load_explicit(s, memory_order_acquire)) == 0)
		return 0;
	if ((uint32_t)(w >> 32) != kq_sock_ino(fd)) {
		se_clear(s, w);		/* its socket is gone */
		return 0;
	}
	if (take)
		se_clear(s, w);
	return (int)(uint32_t)w;
}

/*
 * Keep error e, which kq consumed from socket fd, for the application's
 * next getsockopt(SO_ERROR).  Not kept without memory.
 */
void
kq_sockerr_keep(int fd, int e)
{
	_Atomic uint64_t *s;
	uint64_t w, old;
	uint32_t ino;

	if (e <= 0 || (ino = kq_sock_ino(fd)) == 0 ||
	    (s = se_slot(fd, 1)) == NULL)
		return;
	w = (uint64_t)ino << 32 | (uint32_t)e;
	old = atomic_exchange_explicit(s, w, memory_order_acq_rel);
	if (old == 0)
		atomic_fetch_add_explicit(&se_n, 1, memory_order_relaxed);
}

int
kq_sockerr(int fd, int pending)
{
	int e;

	if (!pending || (e = se_raw_error(fd)) == 0)
		return se_peek(fd, 0);
	/* Consumed from the kernel: keep it for the application (without
	   memory, reported all the same). */
	kq_sockerr_keep(fd, e);
	return e;
}

void
kq_sockerr_forget(int fd)
{
	_Atomic uint64_t *s;

	if (atomic_load_explicit(&se_n, memory_order_relaxed) != 0 &&
	    (s = se_slot(fd, 0)) != NULL)
		se_clear(s, atomic_load_explicit(s, memory_order_acquire));
}

/*
 * getsockopt() in place of the C library's: SO_ERROR returns the kernel's
 * error if it has one (it is newer) and else the one kq consumed for an
 * EV_EOF report; either way the kept one is cleared, as reading SO_ERROR
 * clears so_error.
 */
KQ_EXPORT int
getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	int r = (int)syscall(SYS_getsockopt, fd, level, name, val, len), v;

	if (__builtin_expect(r != 0 || level != SOL_SOCKET ||
	    name != SO_ERROR, 1) ||
	    atomic_load_explicit(&se_n, memory_order_relaxed) == 0 ||
	    *len < (socklen_t)sizeof(int))
		return r;
	memcpy(&v, val, sizeof(v));	/* val need not be aligned */
	if (v != 0)
		kq_sockerr_forget(fd);
	else if ((v = se_peek(fd, 1)) != 0)
		memcpy(val, &v, sizeof(v));
	return r;
}
