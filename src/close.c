/*
 * close.c -- close(), dup2(), dup3(), close_range() and closefrom() in
 * place of the C library's, so that closing a kqueue descriptor retires
 * the kqueue at once, as on FreeBSD: its knotes are dropped, its internal
 * descriptors closed and threads blocked in kevent() on it return EBADF.
 *
 * This is also what makes a kqueue's descriptor number a proven one: the
 * number is closed (or replaced) with the kqueue's kq_lock held and
 * kq_dead set in the same critical section, so code that holds kq_lock and
 * finds kq_dead clear knows kq_fd still names the kqueue's epoll set.  A
 * close made with a raw system call bypasses this; kq then finds out at
 * the next system call on the number that fails (kq_owned), and never
 * acts destructively on the number without that proof (see DESIGN.md).
 *
 * A descriptor that is not a kqueue costs one lock-free registry lookup.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "kq_int.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC	(1U << 2)
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE	(1U << 1)
#endif

/* The operations themselves (kq_int.h: through TSan's interceptors in
   TSan builds, so that it still sees descriptors closed). */
#define sys_close(fd)		kq_close_raw(fd)
#define sys_dup3(o, n, f)	kq_dup3_raw(o, n, f)

/* The operation that closes or replaces number fd. */
struct kq_closer {
	int	op;		/* SYS_close, SYS_dup3 */
	int	oldfd;		/* dup3: the descriptor duplicated */
	int	flags;		/* dup3 */
};

static int
closer_run(const struct kq_closer *c, int fd)
{
	if (c->op == SYS_dup3)
		return sys_dup3(c->oldfd, fd, c->flags);
	return sys_close(fd);
}

/*
 * Close or replace number fd, which the registry maps to a kqueue: under
 * that kqueue's lock, so that no holder of the lock sees the number gone
 * while kq_dead is clear.  The kqueue dies unless the operation left the
 * number untouched (dup3 failing on a bad oldfd).
 */
static int
kq_retire(int fd, const struct kq_closer *c)
{
	struct kqueue *kq = kq_registry_acquire(fd);
	int r, e, touched;

	if (kq == NULL)
		return closer_run(c, fd);
	KQ_LOCK(kq);
	if (kq->kq_dead || kq_registry_peek(fd) != kq) {
		KQ_UNLOCK(kq);
		kq_release(kq);
		return closer_run(c, fd);
	}
	r = closer_run(c, fd);
	e = errno;
	/* close() frees the number even when it reports an error; a failed
	   dup3 leaves it as it was, unless the number was not open. */
	touched = c->op == SYS_close || r >= 0 || fcntl(fd, F_GETFD) < 0;
	if (touched) {
		kq->kq_dead = 1;
		kq_bell_ring(kq);	/* sleepers wake and return EBADF */
	}
	KQ_UNLOCK(kq);
	if (touched)
		kq_registry_forget(fd, kq);
	kq_release(kq);
	errno = e;
	return r;
}

KQ_EXPORT int
close(int fd)
{
	struct kq_closer c = { SYS_close, -1, 0 };

	if (__builtin_expect(kq_registry_peek(fd) == NULL, 1))
		return sys_close(fd);
	return kq_retire(fd, &c);
}

KQ_EXPORT int
dup3(int oldfd, int newfd, int flags)
{
	struct kq_closer c = { SYS_dup3, oldfd, flags };

	if (__builtin_expect(kq_registry_peek(newfd) == NULL, 1) ||
	    oldfd == newfd)
		return sys_dup3(oldfd, newfd, flags);
	return kq_retire(newfd, &c);
}

KQ_EXPORT int
dup2(int oldfd, int newfd)
{
	if (oldfd == newfd) {
		/* dup2's own case: newfd is returned if oldfd is valid. */
		return fcntl(oldfd, F_GETFD) < 0 ? -1 : newfd;
	}
	return dup3(oldfd, newfd, 0);
}

/* Retire every kqueue whose number lies in [first, last]. */
static void
kq_retire_range(unsigned int first, unsigned int last)
{
	struct kq_closer c = { SYS_close, -1, 0 };
	unsigned int i, j;

	for (i = first >> REG_CHUNK_SHIFT; i < REG_TOP &&
	    i <= (last >> REG_CHUNK_SHIFT); i++) {
		_Atomic(struct kqueue *) *chunk = atomic_load_explicit(
		    &kq_reg_top[i], memory_order_acquire);

		if (chunk == NULL)
			continue;
		for (j = 0; j < REG_CHUNK; j++) {
			unsigned int fd = (i << REG_CHUNK_SHIFT) | j;

			if (fd < first || fd > last || fd > INT32_MAX)
				continue;
			if (atomic_load_explicit(&chunk[j],
			    memory_order_relaxed) != NULL)
				(void)kq_retire((int)fd, &c);
		}
	}
}

KQ_EXPORT int
close_range(unsigned int first, unsigned int last, int flags)
{
	/* CLOSE_RANGE_UNSHARE closes in a private copy of the table: the
	   kqueues of the threads that keep the shared one stay. */
	if (!((unsigned int)flags & (CLOSE_RANGE_CLOEXEC |
	    CLOSE_RANGE_UNSHARE)) && first <= last)
		kq_retire_range(first, last);
	return (int)syscall(SYS_close_range, first, last, flags);
}

KQ_EXPORT void
closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	kq_retire_range((unsigned int)lowfd, ~0U);
	if (syscall(SYS_close_range, (unsigned int)lowfd, ~0U, 0) == 0)
		return;
	/* No close_range (Linux < 5.9): close one by one, as glibc does. */
	for (long fd = lowfd, max = sysconf(_SC_OPEN_MAX); fd < max; fd++)
		(void)sys_close((int)fd);
}
