/*
 * xlock.c -- locks shared with fork() children: 8 KiB of futex slots
 * mapped MAP_SHARED when libkq is loaded, so that a process and every
 * child it forks afterwards (and theirs) see the same words.
 *
 * What they serialise is state the kernel keeps per open file, not per
 * process, that kq changes and puts back: a datagram socket's peek offset,
 * which the walk that counts the socket's queue moves (filt_fd.c).  A
 * prefork server's workers share their sockets, and a walk of one met by
 * another's counts the queue wrongly and can leave the offset set.
 *
 * A slot is a word and a count of the processes waiting for it.  The word
 * holds the pid of the process holding it (a process takes one only while
 * one of its own in-process locks keeps its other threads out), 0 when
 * free, or XL_HANDOFF with the pid of the last holder: released while
 * others waited, it is theirs, not its last holder's, which may take it
 * back only after a slice in which none did.  (Taken back at once, a
 * process walking in a loop kept it from its fork child for ever.)
 * kq_xlock_lock returns 1 when it took the word, 2 when it took it from a
 * holder that gave it up (below: whatever that holder was changing may be
 * half done), 0 when it gave up waiting.
 * Contracts:
 *   - A wait is bounded (ns): past it kq_xlock_lock gives up and the
 *     caller goes on without the lock, as it did before there was one.  A
 *     holder stopped by SIGSTOP or a debugger never stops the others.
 *   - A holder that died holding the word (kill(pid, 0) says ESRCH) loses
 *     it to the first waiter that sees so.  So does one that has held it
 *     for XL_ABANDON_NS (the word's since), seen unchanged through a whole
 *     slice: a zombie; a process whose thread exec() ended mid-walk (the
 *     pid lives on in a new image that never sees this page); a pid
 *     reused; one stopped for that long, whose release then finds the
 *     word another's and leaves it.
 *   - kq_xlock_unlock releases the word only if this process holds it: a
 *     fork() child of a thread interrupted while holding one (by a signal
 *     handler that forked) leaves the parent's hold alone.  The pid is
 *     kq_pid()'s (no system call), which a child of a fork made without
 *     the fork handlers (_Fork) learns late: such a child may take its
 *     parent's hold for its own.
 *   - Async-signal-safe; allocates nothing.  Without the mapping (mmap
 *     failed) every lock succeeds at once, holding nothing.
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kq_int.h"

#define XL_SLOTS	512		/* 16 bytes each: two pages */
#define XL_PID		0x3fffffffu	/* pid_max <= 2^22 */
#define XL_HANDOFF	0x40000000u
#define XL_SLICE_NS	200000		/* a sleep between looks at a holder */
#define XL_ABANDON_NS	1000000000	/* a hold no walk lasts */

struct xl_slot {
	_Atomic uint32_t	word;
	_Atomic uint32_t	waiters;
	_Atomic int64_t		since;	/* when the holder took it */
};

static struct xl_slot *xl_page;

__attribute__((constructor)) static void
xl_init(void)
{
	void *p = mmap(NULL, XL_SLOTS * sizeof(struct xl_slot),
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		xl_page = p;
}

/* The slot for key (a descriptor number), or NULL without the page. */
struct xl_slot *
kq_xlock_slot(unsigned int key)
{
	return xl_page == NULL ? NULL : &xl_page[key % XL_SLOTS];
}

/*
 * Is word c, held (not handed off), given up by its holder?  seen: this
 * waiter saw c unchanged through a whole slice, so since is c's own.
 */
static int
xl_abandoned(struct xl_slot *x, uint32_t c, int seen)
{
	pid_t holder = (pid_t)(c & XL_PID);

	if (holder > 0 && kill(holder, 0) != 0 && errno == ESRCH)
		return 1;
	return seen && kq_now_ns() - atomic_load_explicit(&x->since,
	    memory_order_relaxed) > XL_ABANDON_NS;
}

static int
xl_took(struct xl_slot *x)
{
	atomic_store_explicit(&x->since, kq_now_ns(), memory_order_relaxed);
	return 1;
}

int
kq_xlock_lock(struct xl_slot *x, int64_t ns)
{
	uint32_t me = (uint32_t)kq_pid(), c = 0, slept = 0, now;
	int64_t end, rest;
	struct timespec slice;
	int e = errno, back = 0, got = 0;

	if (x == NULL)
		return 1;
	if (atomic_compare_exchange_strong_explicit(&x->word, &c, me,
	    memory_order_acquire, memory_order_relaxed))
		return xl_took(x);
	if (ns <= 0)	/* one look, counted as no waiter */
		return (c & XL_HANDOFF) && (c & XL_PID) != me &&
		    atomic_compare_exchange_strong_explicit(&x->word, &c, me,
		    memory_order_acquire, memory_order_relaxed) && xl_took(x);
	end = kq_now_ns() + ns;
	atomic_fetch_add(&x->waiters, 1);
	for (;;) {
		c = atomic_load_explicit(&x->word, memory_order_relaxed);
		if (c == 0 || ((c & XL_HANDOFF) &&
		    ((c & XL_PID) != me || back)) ||
		    (!(c & XL_HANDOFF) && xl_abandoned(x, c, c == slept))) {
			uint32_t was = c;

			if (atomic_compare_exchange_strong_explicit(&x->word,
			    &c, me, memory_order_acquire,
			    memory_order_relaxed)) {
				got = was == 0 || (was & XL_HANDOFF) ? 1 : 2;
				break;
			}
			continue;
		}
		if ((rest = end - kq_now_ns()) <= 0)
			break;
		if (rest > XL_SLICE_NS)
			rest = XL_SLICE_NS;
		slice.tv_sec = 0;
		slice.tv_nsec = (long)rest;
		/* Shared, not FUTEX_PRIVATE: the sleepers are processes. */
		(void)syscall(SYS_futex, &x->word, FUTEX_WAIT, c, &slice,
		    NULL, 0);
		now = atomic_load_explicit(&x->word, memory_order_relaxed);
		slept = now == c ? c : 0;
		/* Its own hand-off, left a slice: no one else wants it. */
		if (c == (XL_HANDOFF | me) && now == c)
			back = 1;
	}
	atomic_fetch_sub(&x->waiters, 1);
	errno = e;
	return got && xl_took(x) ? got : 0;
}

void
kq_xlock_unlock(struct xl_slot *x)
{
	uint32_t me, c, n;

	if (x == NULL)
		return;
	me = (uint32_t)kq_pid();
	c = me;
	n = atomic_load(&x->waiters);
	if (atomic_compare_exchange_strong_explicit(&x->word, &c,
	    n > 0 ? XL_HANDOFF | me : 0, memory_order_release,
	    memory_order_relaxed) && n > 0)
		(void)syscall(SYS_futex, &x->word, FUTEX_WAKE, 1, NULL, NULL,
		    0);
}
