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
 * A slot is a word and the names of the processes waiting for it.  The
 * word holds the pid of the process holding it (a process takes one only
 * while one of its own in-process locks keeps its other threads out), 0
 * when free, or XL_HANDOFF with the pid of the last holder: released while
 * others waited, it is theirs, not its last holder's, which may take it
 * back only after a slice in which none did.  (Taken back at once, a
 * process walking in a loop kept it from its fork child for ever.)
 *   A waiter is named: it puts its pid in one of the slot's XL_NAMES
 * entries for as long as it waits, and bumps the entry's beat at every
 * look at the word.  A release hands off only while some entry names a
 * waiter that lives.  The holder, who alone writes `seen` and `strikes`
 * (the word keeps holders apart), counts an entry live when its beat
 * moved since the last release looked; one that did not move is checked
 * with kill(pid, 0) at its first strike and dropped when that says ESRCH,
 * or after XL_STRIKES releases without a beat (a zombie, a pid reused, a
 * waiter stopped or descheduled that long).  So a process killed while it
 * waits stops counting at the next release, not never (attack helper
 * 43's D1: a count never taken back made every later lock by the family
 * wait out a slice).  A live waiter whose entry was dropped sees so at its
 * next look and names itself again.  A waiter that finds every entry
 * taken waits unnamed: it takes the word when free or handed off, but no
 * release waits for it.
 * kq_xlock_lock returns 1 when it took the word, 2 when it took it from a
 * holder that gave it up (below: whatever that holder was changing may be
 * half done), 0 when it gave up waiting.
 * Contracts:
 *   - A wait is bounded (ns): past it kq_xlock_lock gives up and the
 *     caller goes on without the lock, as it did before there was one.  A
 *     holder stopped by SIGSTOP or a debugger never stops the others.  A
 *     waiter that was itself stopped or not run for a while gets a grace
 *     after it (XL_GRACE_NS, twice a call at most), so the bound is ns +
 *     2 ms of the time it ran.
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

#define XL_SLOTS	512		/* 128 bytes each: 16 pages */
#define XL_NAMES	7		/* named waiters per slot */
#define XL_STRIKES	32		/* releases without a beat: gone */
#define XL_PID		0x3fffffffu	/* pid_max <= 2^22 */
#define XL_HANDOFF	0x40000000u
#define XL_SLICE_NS	200000		/* a sleep between looks at a holder */
#define XL_ABANDON_NS	1000000000	/* a hold no walk lasts */
#define XL_GAP_NS	1000000		/* between two looks: was not run */
#define XL_GRACE_NS	1000000		/* then the wait lasts at least */
#define XL_GRACES	2		/* times a call */

/* A named waiter.  pid and beat: the waiter's; seen, strikes: the
   holder's (see above). */
struct xl_name {
	_Atomic uint32_t	pid;	/* 0: free */
	_Atomic uint32_t	beat;	/* bumped at every look */
	_Atomic uint32_t	seen;	/* beat at the last release's look */
	_Atomic uint32_t	strikes; /* releases in a row without a beat */
};

struct xl_slot {
	_Atomic uint32_t	word;
	/* Entries maybe taken: raised before a waiter takes one and lowered
	   after it frees it, so never below the entries taken (a release
	   with named == 0 skips the scan). */
	_Atomic uint32_t	named;
	_Atomic int64_t		since;	/* when the holder took it */
	struct xl_name		name[XL_NAMES];
};
_Static_assert(sizeof(struct xl_slot) == 128, "two cache lines a slot");

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

/* Names the calling waiter in a free entry: its index, or -1 (all taken). */
static int
xl_name_me(struct xl_slot *x, uint32_t me)
{
	atomic_fetch_add(&x->named, 1);
	for (int i = 0; i < XL_NAMES; i++) {
		uint32_t z = 0;

		if (atomic_compare_exchange_strong(&x->name[i].pid, &z, me)) {
			atomic_fetch_add(&x->name[i].beat, 1);
			return i;
		}
	}
	atomic_fetch_sub(&x->named, 1);
	return -1;
}

/* Frees entry i if it still names me (a release may have dropped it). */
static void
xl_unname(struct xl_slot *x, int i, uint32_t me)
{
	if (i >= 0 && atomic_compare_exchange_strong(&x->name[i].pid, &me, 0))
		atomic_fetch_sub(&x->named, 1);
}

/*
 * Called by the holder about to release: does a named waiter live?
 * Drops the entries of the dead and of those that gave no beat for
 * XL_STRIKES releases.
 */
static int
xl_waited(struct xl_slot *x)
{
	int live = 0;

	if (atomic_load(&x->named) == 0)
		return 0;
	for (int i = 0; i < XL_NAMES; i++) {
		struct xl_name *w = &x->name[i];
		uint32_t p = atomic_load(&w->pid), b, k;

		if (p == 0)
			continue;
		b = atomic_load(&w->beat);
		if (b != atomic_load_explicit(&w->seen, memory_order_relaxed)) {
			atomic_store_explicit(&w->seen, b, memory_order_relaxed);
			atomic_store_explicit(&w->strikes, 0,
			    memory_order_relaxed);
			live = 1;
			continue;
		}
		k = atomic_load_explicit(&w->strikes, memory_order_relaxed) + 1;
		atomic_store_explicit(&w->strikes, k, memory_order_relaxed);
		if (k > XL_STRIKES || (k == 1 && kill((pid_t)(p & XL_PID), 0) !=
		    0 && errno == ESRCH)) {
			if (atomic_compare_exchange_strong(&w->pid, &p, 0))
				atomic_fetch_sub(&x->named, 1);
			continue;
		}
		live = 1;
	}
	return live;
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
	int64_t end, rest, t, prev;
	struct timespec slice;
	int e = errno, back = 0, got = 0, graces = 0, mine;

	if (x == NULL)
		return 1;
	if (atomic_compare_exchange_strong_explicit(&x->word, &c, me,
	    memory_order_acquire, memory_order_relaxed))
		return xl_took(x);
	if (ns <= 0)	/* one look, counted as no waiter */
		return (c & XL_HANDOFF) && (c & XL_PID) != me &&
		    atomic_compare_exchange_strong_explicit(&x->word, &c, me,
		    memory_order_acquire, memory_order_relaxed) && xl_took(x);
	prev = kq_now_ns();
	end = prev + ns;
	mine = xl_name_me(x, me);
	for (;;) {
		/* A beat, or a new name if a release dropped ours. */
		if (mine >= 0 && atomic_load(&x->name[mine].pid) == me)
			atomic_fetch_add(&x->name[mine].beat, 1);
		else
			mine = xl_name_me(x, me);
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
		/*
		 * A look long after the last: this process was stopped or not
		 * run, and its wait may have ended meanwhile while the holder
		 * it waits for still walks.  Giving up on this one look would
		 * walk beside that holder (attack helper 55: a waiter stopped
		 * past the wait counted wrong 30 times as often).  So the wait
		 * lasts XL_GRACE_NS more, XL_GRACES times a call at most: the
		 * next release sees the beat above and hands the word to it.
		 */
		t = kq_now_ns();
		if (t - prev > XL_GAP_NS && graces < XL_GRACES &&
		    end - t < XL_GRACE_NS) {
			end = t + XL_GRACE_NS;
			graces++;
		}
		prev = t;
		if ((rest = end - t) <= 0)
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
	xl_unname(x, mine, me);
	errno = e;
	return got && xl_took(x) ? got : 0;
}

void
kq_xlock_unlock(struct xl_slot *x)
{
	uint32_t me, c;
	int e, n;

	if (x == NULL)
		return;
	me = (uint32_t)kq_pid();
	if (atomic_load_explicit(&x->word, memory_order_relaxed) != me)
		return;		/* not ours (see above) */
	e = errno;
	n = xl_waited(x);
	errno = e;
	c = me;
	if (atomic_compare_exchange_strong_explicit(&x->word, &c,
	    n ? XL_HANDOFF | me : 0, memory_order_release,
	    memory_order_relaxed) && n)
		(void)syscall(SYS_futex, &x->word, FUTEX_WAKE, 1, NULL, NULL,
		    0);
}
