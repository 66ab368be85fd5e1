/*
 * peekoff.c -- which sockets' peek offsets did the program set?
 *
 * kq counts a datagram socket's queue by walking it with the socket's peek
 * offset, and then puts back the offset the program had (filt_fd.c).  The
 * offset is the socket's, shared with every process holding it, so the
 * value read before a walk may be another process's walk's, not the
 * program's.  A program written for FreeBSD never sets one (FreeBSD has no
 * SO_PEEK_OFF): then the offset to put back is -1, whatever was read.  The
 * setsockopt() below takes the C library's place, as close() and
 * getsockopt() do, and notes each socket on which the program turns a
 * peek offset on (a value >= 0), and forgets it when the program turns it
 * off (-1); kq puts back what it read only on a socket noted here.
 *
 * The notes: PO_SLOTS words, (inode << 32) | (number + 1), 0 when free,
 * lock-free.  A note names the socket by its inode, so a dup() of it under
 * another number finds it too (attack helper 39's F3); the number is kept
 * to tell a note whose socket is gone (closed, or its number another
 * file's), dropped when the notes are full.  Past PO_SLOTS live sockets
 * every socket counts as noted (po_many).  A fork child inherits the
 * notes; a program it execs starts without.  The program's setting is
 * made under the locks of kq's count (kq_dgram_set_peek_off), so that a
 * count on another thread does not put back the value it read before.
 * Offsets set without this function (a raw system call, the C library's
 * own entry point found with dlsym) are not seen, and are
 * lost at the next count: kevent.2 LINUX NOTES.  kq's own settings go
 * straight to the kernel (kq_set_peek_off).  Async-signal-safe.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kq_int.h"

#define PO_SLOTS	64

static _Atomic uint64_t po_slot[PO_SLOTS];
static _Atomic int po_n, po_many;

static void
po_clear(_Atomic uint64_t *s, uint64_t w)
{
	if (atomic_compare_exchange_strong(s, &w, 0))
		atomic_fetch_sub(&po_n, 1);
}

/* Forget every note of inode ino (0: none). */
static void
po_forget(uint32_t ino)
{
	for (int i = 0; i < PO_SLOTS && ino != 0; i++) {
		uint64_t w = atomic_load(&po_slot[i]);

		if (w != 0 && (uint32_t)(w >> 32) == ino)
			po_clear(&po_slot[i], w);
	}
}

/* Drop the notes whose socket is gone: 1 if any was. */
static int
po_sweep(void)
{
	int dropped = 0;

	for (int i = 0; i < PO_SLOTS; i++) {
		uint64_t w = atomic_load(&po_slot[i]);

		if (w != 0 && kq_sock_ino((int)(uint32_t)w - 1) !=
		    (uint32_t)(w >> 32)) {
			po_clear(&po_slot[i], w);
			dropped = 1;
		}
	}
	return dropped;
}

static void
po_note(int fd)
{
	uint32_t ino = kq_sock_ino(fd);
	uint64_t w = (uint64_t)ino << 32 | ((uint32_t)fd + 1), z;

	if (ino == 0)
		return;
	po_forget(ino);
	do {
		for (int i = 0; i < PO_SLOTS; i++) {
			z = 0;
			if (atomic_compare_exchange_strong(&po_slot[i], &z,
			    w)) {
				atomic_fetch_add(&po_n, 1);
				return;
			}
		}
	} while (po_sweep());
	atomic_store(&po_many, 1);
}

int
kq_peek_off_used(int fd)
{
	uint32_t ino;

	if (atomic_load_explicit(&po_many, memory_order_relaxed))
		return 1;
	if (atomic_load_explicit(&po_n, memory_order_relaxed) == 0 ||
	    (ino = kq_sock_ino(fd)) == 0)
		return 0;
	for (int i = 0; i < PO_SLOTS; i++) {
		uint64_t w = atomic_load(&po_slot[i]);

		if (w != 0 && (uint32_t)(w >> 32) == ino)
			return 1;
	}
	return 0;
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
	int r, e, v;

	if (__builtin_expect(level != SOL_SOCKET || name != SO_PEEK_OFF, 1) ||
	    val == NULL || len < (socklen_t)sizeof(int))
		return (int)syscall(SYS_setsockopt, fd, level, name, val, len);
	memcpy(&v, val, sizeof(v));	/* val need not be aligned */
	/* Noted before it is set: a count that comes between puts back
	   what it read, and the setting follows it. */
	if (v >= 0)
		po_note(fd);
	r = kq_dgram_set_peek_off(fd, val, len);
	e = errno;
	if (r != 0 || v < 0)
		po_forget(kq_sock_ino(fd));
	errno = e;
	return r;
}
