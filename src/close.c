/*
 * close.c -- close(), dup2(), dup3(), close_range() and closefrom() in
 * place of the C library's, for FreeBSD's two rules about closing:
 *   - closing a watched descriptor drops its knotes in every kqueue
 *     (knote_fdclose), even when a dup() keeps the file open;
 *   - closing a kqueue descriptor retires the kqueue at once: its knotes
 *     are dropped, its internal descriptors closed and threads blocked in
 *     kevent() on it return EBADF.
 *
 * This is also what makes a kqueue's descriptor number a proven one: the
 * number is closed (or replaced) with the kqueue's kq_lock held and
 * kq_dead set in the same critical section, so code that holds kq_lock and
 * finds kq_dead clear knows kq_fd still names the kqueue's epoll set.  A
 * close made with a raw system call bypasses this; kq then finds out at
 * the next system call on the number that fails (kq_owned), and never
 * acts destructively on the number without that proof (see DESIGN.md).
 *
 * A descriptor that is neither a kqueue nor watched costs two lock-free
 * lookups.  Closing a watched one takes each kqueue's lock in turn.
 * close() stays async-signal-safe: called from a signal handler that
 * interrupted the same thread inside a kqueue's lock or reg_lock, it does
 * not wait for them (kq_in_lock) and the affected
 * knotes or kqueue are found stale later, as after a raw close.  And none
 * of these calls allocates or frees: what they free goes on the graveyard
 * (kq_closing_enter, defer.c), for a handler may have interrupted malloc().
 *
 * A vfork() child shares its parent's memory, kqueues included, but has
 * its own descriptor table: what it closes is its own copy, and must not
 * drop the parent's knotes or retire the parent's kqueues (on FreeBSD the
 * child's table holds no kqueue).  Every path that would touch a kqueue
 * first asks kq_vforked() (one getpid(), never on the fast path).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/single_threaded.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kq_int.h"
#include "fault.h"
#include "sigshim.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC	(1U << 2)
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE	(1U << 1)
#endif

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
		return kq_dup3_raw(c->oldfd, fd, c->flags);
	return kq_close_raw(fd);
}

/*
 * Close or replace number fd, which named kqueue kq (a reference the
 * caller passes on): under kq's lock, so that no holder of the lock sees
 * the number gone while kq_dead is clear.  The kqueue dies unless the
 * operation left the number untouched (dup3 failing on a bad oldfd).  If
 * fd no longer names kq when its lock is taken (another thread closed it
 * first), fd is closed all the same, as the caller asked -- unless strict:
 * then the number, which may be another file by now, is left alone and 0
 * returned (close_range's kqueues, kq_close_gaps).
 */
static int
kq_retire_kq(struct kqueue *kq, int fd, const struct kq_closer *c, int strict)
{
	int r, e, touched;

	KQ_LOCK(kq);
	if (kq->kq_dead || kq_registry_peek(fd) != kq) {
		KQ_UNLOCK(kq);
		kq_release(kq);
		return strict ? 0 : closer_run(c, fd);
	}
	/*
	 * A kqueue whose number was closed behind kq's back and given to
	 * another file: the numbers of its own descriptors are not proven
	 * any more either (kq_unowned).  Asked while the number is still
	 * open (one kcmp, or an EPOLL_CTL_MOD of the doorbell).
	 */
	if (!atomic_load(&kq->kq_retiring) && !kq_owned_number(kq))
		kq->kq_unowned = 1;
	/* Under reg_lock too: a fork() child sees the number closed and
	   the kqueue dead, or neither. */
	kq_reg_lock();
	r = closer_run(c, fd);
	e = errno;
	/* close() frees the number even when it reports an error; a failed
	   dup3 leaves it as it was, unless the number was not open. */
	touched = c->op == SYS_close || r >= 0 || fcntl(fd, F_GETFD) < 0;
	if (touched) {
		kq->kq_dead = 1;
		/* Unmapped before reg_lock goes: under it, a mapping of a
		   number kq closed is never seen (kq_close_gaps). */
		kq_registry_forget(fd, kq);
	}
	kq_reg_unlock();
	if (touched)
		kq_bell_ring(kq);	/* sleepers wake and return EBADF */
	KQ_UNLOCK(kq);
	kq_release(kq);
	errno = e;
	return r;
}

/*
 * Close or replace number fd, which the registry maps to a kqueue
 * (kq_retire_kq).
 */
static int
kq_retire(int fd, const struct kq_closer *c)
{
	struct kqueue *kq = kq_registry_acquire(fd);
	int r, e;

	if (kq == NULL)
		return closer_run(c, fd);
	if (kq_in_lock()) {
		/*
		 * A signal handler interrupted this thread inside one of kq's
		 * locks: waiting for the kqueue's could deadlock.  Close the
		 * number only; the kqueue is retired later, by the next call
		 * of kq's that may allocate (kq_retire_later, defer.c), or
		 * when a system call on the number fails (kq_owned).
		 */
		int was;

		if (!kq_retire_claim(kq, c->op == SYS_close, &was)) {
			/* The kqueue's set is being rebuilt under the
			   number: a close is left to the rebuild, which
			   makes it as soon as it is done (KQ_RET_PEND); a
			   dup3 is refused, as Linux refuses one onto a
			   number being opened. */
			kq_release(kq);
			if (c->op == SYS_close)
				return 0;
			errno = EBUSY;
			return -1;
		}
		r = closer_run(c, fd);
		e = errno;
		if (c->op == SYS_close || r >= 0 || fcntl(fd, F_GETFD) < 0)
			kq_retire_later(kq);	/* takes our reference */
		else {
			kq_retire_unmark(kq, was);
			kq_release(kq);
		}
		errno = e;
		return r;
	}
	return kq_retire_kq(kq, fd, c, 0);
}

/* Drop every knote of kq on number fd, with kq_lock held (FreeBSD's
   knote_fdclose for one kqueue).  A pending event dropped so no longer
   makes the kqueue's descriptor readable: the doorbell follows. */
static void
kq_drop_number(struct kqueue *kq, int fd)
{
	struct knote *kn;

	if (knote_fdchain(kq, fd) == NULL)
		return;
	while ((kn = knote_fdchain(kq, fd)) != NULL)
		(void)knote_drop(kq, kn);
	kq_bell_update(kq);
}

/*
 * Call fn(kq, arg) on every kqueue not yet destroyed, with its kq_lock
 * held, dead ones too (closed, a thread still inside kevent(): their own
 * descriptors are still theirs, and fn must not touch kq_fd, which is not
 * theirs any more).  Each kqueue's lock is taken in turn, never two at
 * once.  Not from
 * a handler inside one of kq's locks (kq_in_lock: the callers leave the
 * knotes stale then, found later as after a raw close).  Allocates
 * nothing (a batch on the stack at a time).
 */
static void
kq_each(void (*fn)(struct kqueue *, void *), void *arg)
{
	struct kqueue *v[KQ_HOLDMAX], *prev = NULL;
	size_t n, i;

	KQ_ASSERT(!kq_in_lock());
	while ((n = kq_registry_hold_next(prev, v, KQ_HOLDMAX)) > 0) {
		if (prev != NULL)
			kq_release(prev);
		for (i = 0; i < n; i++) {
			struct kqueue *kq = v[i];

			KQ_LOCK(kq);
			fn(kq, arg);
			KQ_UNLOCK(kq);
			if (i + 1 < n)
				kq_release(kq);
		}
		prev = v[n - 1];	/* its reference keeps our place */
	}
	if (prev != NULL)
		kq_release(prev);
}

struct kq_fdclose_arg {
	int	fd;
	int	internal;	/* out: fd is one of a kqueue's own */
};

static void
kq_fdclose_one(struct kqueue *kq, void *arg)
{
	struct kq_fdclose_arg *a = arg;

	if (!kq->kq_dead)
		kq_drop_number(kq, a->fd);
	/*
	 * Still the kqueue's (see kq_registry_internal), or kcmp cannot
	 * tell: a number closed behind kq's back is the program's again.
	 * A dead kqueue's too: a program's second close() of a number the
	 * kernel had given to such a kqueue's descriptor closed it, and
	 * the kqueue's destruction then closed whatever file had the
	 * number next, another kqueue's included (attack helper 18's h2:
	 * closefrom() beside close() of stale numbers left dozens of kq's
	 * descriptors open for good, tests/attack/a23).
	 */
	if (kq_intfd_has(kq, (uintptr_t)a->fd) && kq_holds_number(kq, a->fd))
		a->internal = 1;
}

/*
 * Number fd is about to be closed (or replaced): drop every knote on it in
 * every kqueue, as FreeBSD's knote_fdclose() does.  Their registrations
 * are removed while the number still names the file, so none outlives
 * the number even when a dup() keeps the file open.  Returns 1 if fd is
 * one of a kqueue's own descriptors.
 */
static int
kq_fdclose(int fd)
{
	struct kq_fdclose_arg a = { fd, 0 };

	kq_each(kq_fdclose_one, &a);
	/* Also the signal eventfd all kqueues share (sigshim.c), and the
	   descriptors a kqueue's destruction has yet to close. */
	return a.internal || kq_sig_evfd_is(fd) ||
	    (kq_fdinternal((uintptr_t)fd) && kq_registry_claimed_dying(fd));
}

KQ_EXPORT int
close(int fd)
{
	struct kq_closer c = { SYS_close, -1, 0 };
	int r;

	/* A cancellation point, as the C library's close() (not from a
	   signal handler that interrupted one of kq's locks). */
	if (!kq_in_lock())
		kq_hot.testcancel();
	kq_sockerr_forget(fd);
	if (__builtin_expect(kq_registry_peek(fd) == NULL &&
	    !kq_fdwatched(fd), 1))
		return kq_close_raw(fd);
	if (kq_vforked())	/* the kqueues in this memory are the parent's */
		return kq_close_raw(fd);
	kq_closing_enter();	/* nothing freed now (defer.c) */
	if (kq_in_lock()) {
		/* A handler inside one of kq's locks: the knotes on fd are
		   left stale, and a kqueue is retired later (kq_retire). */
		r = kq_retire(fd, &c);
	} else if (kq_fdwatched(fd) && kq_fdclose(fd)) {
		/* One of a kqueue's own descriptors: not open as far as the
		   program can know (on FreeBSD the number is free). */
		errno = EBADF;
		r = -1;
	} else if (kq_registry_peek(fd) == NULL)
		r = kq_close_raw(fd);
	else
		r = kq_retire(fd, &c);
	kq_closing_leave();
	return r;
}

/*
 * Can newfd be a dup2/dup3 target under this process's RLIMIT_NOFILE
 * (Linux: EBADF at or above the soft limit)?  0 with errno set if not.
 */
static int
dup_target_ok(int newfd)
{
	struct rlimit rl;

	if (newfd < 0 || (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && (rlim_t)newfd >= rl.rlim_cur)) {
		errno = EBADF;
		return 0;
	}
	return 1;
}

static int dup3_watched(int oldfd, int newfd, int flags);

KQ_EXPORT int
dup3(int oldfd, int newfd, int flags)
{
	int r;

	if (__builtin_expect(kq_registry_peek(newfd) == NULL &&
	    !kq_fdwatched(newfd), 1) || oldfd == newfd)
		return kq_dup3_raw(oldfd, newfd, flags);
	if (kq_vforked())
		return kq_dup3_raw(oldfd, newfd, flags);
	kq_closing_enter();	/* nothing freed now (defer.c) */
	if (kq_in_lock()) {
		/* A handler inside one of kq's locks: as close() */
		struct kq_closer c = { SYS_dup3, oldfd, flags };

		r = kq_retire(newfd, &c);
	} else
		r = dup3_watched(oldfd, newfd, flags);
	kq_closing_leave();
	return r;
}

/* dup3() of a newfd that is a kqueue or watched. */
static int
dup3_watched(int oldfd, int newfd, int flags)
{
	struct kq_closer c = { SYS_dup3, oldfd, flags };

	/*
	 * A dup3 the kernel refuses leaves newfd alone, knotes included, so
	 * what it would refuse before touching newfd is refused here before
	 * its knotes are dropped: a bad oldfd, flags other than O_CLOEXEC,
	 * a newfd at or above RLIMIT_NOFILE.  (Only EBUSY, a number another
	 * thread is opening right now, cannot be told first; such a number
	 * has no file, so no knote of a live file is lost.)
	 */
	if (flags & ~O_CLOEXEC) {	/* the kernel's first check */
		errno = EINVAL;
		return -1;
	}
	if (fcntl(oldfd, F_GETFD) < 0)
		return -1;
	if (!dup_target_ok(newfd))
		return -1;
	if (kq_fdwatched(newfd) && kq_fdclose(newfd)) {
		/* A kqueue's own descriptor holds the number (Linux's dup2
		   says EBUSY of a number it cannot give now). */
		errno = EBUSY;
		return -1;
	}
	if (kq_registry_peek(newfd) == NULL)
		return kq_dup3_raw(oldfd, newfd, flags);
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

/*
 * Drop every knote on a number in [first, last] in every kqueue: one lock
 * of each kqueue and a walk of its descriptor table over the range (the
 * table is as long as the highest number it has knotes on), not a lock of
 * every kqueue for each watched number (kq's own descriptors are counted
 * as watched: thousands of kqueues made that seconds long).
 */
struct kq_range {
	unsigned int	first, last;
};

static void
kq_drop_range_one(struct kqueue *kq, void *arg)
{
	const struct kq_range *r = arg;
	long fd, hi = (long)kq->kq_fdtabsize - 1;

	if ((long)r->last < hi)
		hi = (long)r->last;
	for (fd = (long)r->first; !kq->kq_dead && fd <= hi; fd++)
		kq_drop_number(kq, (int)fd);
}

static void
kq_drop_range(unsigned int first, unsigned int last)
{
	struct kq_range r = { first, last };

	kq_each(kq_drop_range_one, &r);
}

/*
 * A raw close_range() of [first, last] from a handler inside one of kq's
 * locks, in two passes over the kqueues the registry maps in the range
 * (kq_range_walk calls fn on each, with a reference fn must drop).
 * kq_range_claim_close claims each as closed by kq itself
 * (kq_retire_claim) and closes the range around the numbers it cannot
 * claim -- those whose set a rebuild is replacing right now, whose close
 * the rebuild makes instead -- and returns close_range()'s result.
 * kq_range_retire then sends every kqueue still mapped in the range and
 * claimed to be retired later (kq_retire_later); one that took a freed
 * number meanwhile (not claimed) is left alone, and so is one that names
 * its kqueue again (reap_retire).
 */
struct kq_range_close {
	unsigned int	lo;	/* the first number not yet closed */
	int		r;	/* close_range()'s result so far */
};

static void
kq_range_walk(unsigned int first, unsigned int last,
    void (*fn)(struct kqueue *, unsigned int, void *), void *arg)
{
	unsigned int i, j;

	for (i = first >> REG_CHUNK_SHIFT; i < REG_TOP &&
	    i <= (last >> REG_CHUNK_SHIFT); i++) {
		_Atomic(struct kqueue *) *chunk = atomic_load_explicit(
		    &kq_reg_top[i], memory_order_acquire);

		if (chunk == NULL)
			continue;
		for (j = 0; j < REG_CHUNK; j++) {
			unsigned int fd = (i << REG_CHUNK_SHIFT) | j;
			struct kqueue *kq;

			if (fd < first || fd > last || fd > INT32_MAX ||
			    atomic_load_explicit(&chunk[j],
			    memory_order_relaxed) == NULL)
				continue;
			if ((kq = kq_registry_acquire((int)fd)) != NULL)
				fn(kq, fd, arg);
		}
	}
}

static void
range_claim_one(struct kqueue *kq, unsigned int fd, void *arg)
{
	struct kq_range_close *c = arg;
	int was;

	if (!kq_retire_claim(kq, 1, &was)) {
		/* fd <= INT32_MAX: no wrap */
		if (fd > c->lo && c->r == 0)
			c->r = (int)syscall(SYS_close_range, c->lo, fd - 1,
			    0);
		c->lo = fd + 1;
	}
	kq_release(kq);
}

static int
kq_range_claim_close(unsigned int first, unsigned int last)
{
	struct kq_range_close c = { first, 0 };

	kq_range_walk(first, last, range_claim_one, &c);
	if (c.r == 0 && c.lo <= last)
		c.r = (int)syscall(SYS_close_range, c.lo, last, 0);
	return c.r;
}

static void
range_retire_one(struct kqueue *kq, unsigned int fd, void *arg)
{
	(void)fd;
	(void)arg;
	if (atomic_load(&kq->kq_retiring) & KQ_RET_SELF)
		kq_retire_later(kq);	/* takes our reference */
	else
		kq_release(kq);
}

static void
kq_range_retire(unsigned int first, unsigned int last)
{
	kq_range_walk(first, last, range_retire_one, NULL);
}

/*
 * close_range() of [first, last], each number closed once: the numbers of
 * kq's own descriptors (every kqueue's internal sources, its knotes'
 * pidfds and timerfds, the shared signal eventfd) are left open -- kq
 * keeps using them by number, and a kqueue retired by the range closes its
 * own when its last user leaves -- and the kqueues' numbers are closed by
 * retiring each kqueue under its lock (kq_retire_kq), not by the range.
 * A batch of them is looked at, and the rest of the batch closed, in one
 * window in which kq makes, releases and closes none (kq_mkfd_exclude,
 * reg_lock): a number kq made in between would be closed, handed out
 * again, and used or closed by kq as its own.  The window takes a
 * reference on each kqueue of the batch, retired once it is over (its
 * lock comes before reg_lock); one that another thread closed meanwhile
 * is left alone, for its number may be another file by then.  (Closing
 * the kqueues first and then the whole range closed such a number twice,
 * and so another thread's file that got it in between.)
 */
static int
kq_close_gaps(unsigned int first, unsigned int last, int flags)
{
	struct kq_closer c = { SYS_close, -1, 0 };
	struct kq_own o;
	struct kqueue *held[KQ_OWNMAX];
	int heldfd[KQ_OWNMAX];
	unsigned int lo = first;
	int i, r = 0, nheld, done = 0;

	while (!done) {
		kq_mkfd_exclude();
		kq_reg_lock();
		/* The next batch of kq's own and kqueue numbers, all above
		   the last closed. */
		o.first = lo;
		o.last = last;
		o.kqnums = 1;
		kq_registry_own_fds_locked(&o);
		nheld = 0;
		for (i = 0; i < o.n; i++) {
			struct kqueue *kq = kq_registry_peek(o.fd[i]);

			/* As kq_registry_own_fds_locked chose it: a number
			   that is not its kqueue's set (closed raw, and now
			   another kqueue's own or nothing) is not retired. */
			if (kq != NULL && kq->kq_fd == o.fd[i] &&
			    kq_owned_number(kq) && kq_ref_try(kq)) {
				held[nheld] = kq;
				heldfd[nheld++] = o.fd[i];
			}
		}
		for (i = 0; i < o.n && r == 0; i++) {
			unsigned int p = (unsigned int)o.fd[i];

			if (p > lo)
				r = (int)syscall(SYS_close_range, lo, p - 1,
				    flags);
			lo = p + 1;	/* p <= INT_MAX: no wrap */
		}
		if (r != 0 || !o.more) {
			if (r == 0 && lo <= last)
				r = (int)syscall(SYS_close_range, lo, last,
				    flags);
			done = 1;
		}
		kq_reg_unlock();
		kq_mkfd_allow();
		for (i = 0; i < nheld; i++) {
			if (r == 0)
				(void)kq_retire_kq(held[i], heldfd[i], &c, 1);
			else
				kq_release(held[i]);
		}
	}
	return r;
}

/*
 * Is the calling thread the process's only one?  (Then no other thread
 * can be made meanwhile.)  Without a descriptor: /proc's task directory
 * has a link per thread besides its two.  0 when it cannot tell.  A table
 * shared with another process by a raw clone(CLONE_FILES) is not seen.
 */
static int
kq_one_thread(void)
{
	struct stat st;

	if (__libc_single_threaded)
		return 1;
	return stat("/proc/self/task", &st) == 0 && st.st_nlink == 3;
}

KQ_EXPORT int
close_range(unsigned int first, unsigned int last, int flags)
{
	int r;

	/*
	 * CLOSE_RANGE_UNSHARE closes in a private copy of the table when
	 * other threads share it: the kqueues of the threads that keep the
	 * shared one stay, and the copy needs nothing of kq's.  In a process
	 * of one thread there is no other table: the kernel closes in the
	 * one there is, as without the flag, and so does kq (attack helper
	 * 23's F3: a kqueue closed so leaked its descriptors and kept its
	 * knotes).  Any other flag
	 * goes straight to the kernel: CLOSE_RANGE_CLOEXEC closes nothing,
	 * and a flag the kernel does not know makes it fail with EINVAL
	 * having closed nothing, so nothing of kq's may go either; so does
	 * first > last.
	 */
	if (flags == CLOSE_RANGE_UNSHARE && kq_one_thread())
		flags = 0;
	if (flags != 0 || first > last || kq_vforked())
		return (int)syscall(SYS_close_range, first, last, flags);
	kq_closing_enter();	/* nothing freed now (defer.c) */
	if (kq_in_lock()) {
		/* A handler inside one of kq's locks: the range closed raw,
		   kq's own included, knotes left stale, and the kqueues that
		   were in it retired later. */
		r = kq_range_claim_close(first, last);
		kq_range_retire(first, last);
		kq_closing_leave();
		return r;
	}
	kq_drop_range(first, last);
	r = kq_close_gaps(first, last, flags);
	kq_closing_leave();
	return r;
}

KQ_EXPORT void
closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	if (kq_vforked()) {
		(void)syscall(SYS_close_range, (unsigned int)lowfd, ~0U, 0);
		return;
	}
	kq_closing_enter();	/* nothing freed now (defer.c) */
	if (kq_in_lock()) {
		/* A handler inside one of kq's locks: as close_range() */
		(void)kq_range_claim_close((unsigned int)lowfd, ~0U);
		kq_range_retire((unsigned int)lowfd, ~0U);
		kq_closing_leave();
		return;
	}
	kq_drop_range((unsigned int)lowfd, ~0U);
	(void)kq_close_gaps((unsigned int)lowfd, ~0U, 0);	/* Linux >= 5.9 */
	kq_closing_leave();
}
