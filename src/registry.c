/*
 * registry.c -- the process-wide map from descriptor number to kqueue, and
 * the pool that kqueue objects live in.
 *
 * This is the only process-global state of libkq.
 *
 * Lookup (kq_registry_acquire) takes no lock: the table is two-level with
 * chunks that are never freed, slots are atomic pointers, and struct
 * kqueue objects are type-stable (they are recycled through the pool, never
 * returned to malloc), so a racing lookup that reads a pointer just before
 * the kqueue dies still points at a struct kqueue.  A reference is taken
 * only while kq_refs is non-zero (zero means dead or pooled), and the slot
 * is re-checked afterwards.  kevent() does without the reference while it
 * holds kq_lock (lock, then check the slot: kq_destroy takes kq_lock, so
 * a kqueue mapped at that moment cannot be destroyed before the unlock);
 * it takes one only before it lets go of the lock to wait.
 *
 * The registry holds one reference on every kqueue it maps.  It drops it
 * when the descriptor number turns out to no longer name that kqueue: a new
 * kqueue() got the same number (the user closed the old one), or a
 * system call on the epoll descriptor failed with EBADF/EINVAL.
 *
 * reg_lock (a mutex) serialises insertions, chunk allocation, the pool and
 * the list of live kqueues, and is held wherever a kqueue's descriptors
 * are created or closed (kqueue(), kq_retire, kq_destroy, kq_rebuild), in
 * a maker section, so that the fork handler, which waits for those,
 * sees them consistently (kq_reg_lock).  It may be
 * taken with a kq_lock held; with it held, only a brand-new kqueue's lock
 * is taken.  It is never taken by kevent() on the hot path.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>

#include "kq_int.h"
#include "fault.h"
#include "sigshim.h"

_Atomic(struct kqueue *) *_Atomic kq_reg_top[REG_TOP];
static kq_olock_t reg_lock;	/* an olock (olock.c) */
static struct kqueue *pool_free;	/* under reg_lock */
static struct kqueue *fork_orphans;	/* kqueues abandoned in a fork child */

static _Atomic(struct kqueue *) *
reg_slot(int fd, int create)
{
	_Atomic(struct kqueue *) *chunk;

	if (fd < 0 || (fd >> REG_CHUNK_SHIFT) >= REG_TOP)
		return NULL;
	chunk = atomic_load_explicit(&kq_reg_top[fd >> REG_CHUNK_SHIFT],
	    memory_order_acquire);
	if (chunk == NULL && create) {
		/* Called with reg_lock held. */
		chunk = kq_calloc(REG_CHUNK, sizeof(*chunk));
		if (chunk == NULL)
			return NULL;
		atomic_store_explicit(&kq_reg_top[fd >> REG_CHUNK_SHIFT], chunk,
		    memory_order_release);
	}
	if (chunk == NULL)
		return NULL;
	return &chunk[fd & (REG_CHUNK - 1)];
}

/*
 * Return the kqueue whose descriptor is fd with a reference held, or NULL.
 * Lock-free.
 */
struct kqueue *
kq_registry_acquire(int fd)
{
	_Atomic(struct kqueue *) *slot = reg_slot(fd, 0);
	struct kqueue *kq;

	if (slot == NULL)
		return NULL;
	kq = atomic_load_explicit(slot, memory_order_acquire);
	if (kq == NULL || !kq_ref_try(kq))
		return NULL;
	if (atomic_load_explicit(slot, memory_order_acquire) != kq) {
		kq_release(kq);
		return NULL;
	}
	return kq;
}

/*
 * Take a reference unless the count already reached zero (the kqueue is
 * being destroyed or is in the pool).  Returns 1 when one was taken.
 */
int
kq_ref_try(struct kqueue *kq)
{
	uint32_t r = atomic_load_explicit(&kq->kq_refs, memory_order_relaxed);

	do {
		if (r == 0)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&kq->kq_refs, &r,
	    r + 1, memory_order_acquire, memory_order_relaxed));
	return 1;
}

/* Drop one reference; the last one destroys the kqueue. */
void
kq_release(struct kqueue *kq)
{
	if (atomic_fetch_sub_explicit(&kq->kq_refs, 1,
	    memory_order_acq_rel) == 1)
		kq_destroy(kq);
}

static void reg_atfork_prepare(void);
static void reg_atfork_parent(void);
static void reg_atfork_child(void);

/*
 * The process kq's state belongs to (kq_vforked): set at load, in a fork
 * child, and by kq_vforked() itself in a process that has its own memory
 * but another pid (the child of a fork made without the handlers, such as
 * _Fork(), or a program that used kq before libkq's constructor ran).
 */
static _Atomic pid_t reg_pid;
/*
 * The fork handlers are registered when libkq is loaded, before any
 * program's or library's own that are registered later: prepare handlers
 * run in the reverse order of registration, so libkq's prepare runs after
 * those, and its parent and child handlers before theirs.  A program's
 * prepare handler typically locks its own mutex M; a thread holding M
 * may be inside kevent() about to enter a maker section, which the prepare
 * below closes: with libkq's prepare first, that thread would wait for the
 * fork and the fork for M.  Registered lazily (at the first kqueue), it
 * was first for every handler registered before the first kqueue.  A
 * handler registered before libkq was loaded still runs after libkq's
 * prepare: such a thread then waits at the gate for its patience (1 s,
 * tests/attack/a20), never for ever.
 */
__attribute__((constructor)) static void
reg_init(void)
{
	atomic_store(&reg_pid, getpid());
	pthread_atfork(reg_atfork_prepare, reg_atfork_parent,
	    reg_atfork_child);
}

/*
 * This process's pid without a system call: reg_pid, which the fork
 * handler sets in a child (a vfork() child, sharing its parent's memory,
 * reads its parent's; so does the child of a fork made without the
 * handlers until kq_vforked() looks).  For xlock.c's words.
 */
pid_t
kq_pid(void)
{
	return atomic_load_explicit(&reg_pid, memory_order_relaxed);
}

/*
 * Is this a vfork() child?  Its memory is its parent's, kqueues included,
 * and the parent's epoll sets are shared with it, so close() and its kin
 * must not touch them.  A pid other than reg_pid with the same memory
 * (kcmp KCMP_VM) is a vfork() child; with memory of its own, the process
 * is the owner from now on (a child of _Fork(), which runs no fork
 * handler, keeps what its parent had, as before libkq had handlers).  Where
 * kcmp is refused the answer is "not a vfork child": the behaviour of a
 * libkq without this check.  System calls: called only where a number is
 * watched or is a kqueue, or by sigaction().
 */
int
kq_vforked(void)
{
	pid_t me = getpid(), owner = atomic_load(&reg_pid);

	if (me == owner)
		return 0;
	if (owner > 0 && syscall(SYS_kcmp, me, owner, KCMP_VM, 0, 0) == 0)
		return 1;
	atomic_store(&reg_pid, me);
	return 0;
}

_Atomic(_Atomic uint32_t *) kq_watch_top[REG_TOP];

/*
 * Count a kqueue's chain appearing on (delta 1) or leaving (-1) number fd.
 * Called with that kqueue's lock held.  Returns 0, or ENOMEM when the
 * chunk for fd cannot be allocated.
 */
int
kq_fdwatch_add(int fd, int delta)
{
	_Atomic uint32_t *chunk, *fresh, *expect = NULL;

	if (fd < 0 || (fd >> REG_CHUNK_SHIFT) >= REG_TOP)
		return delta > 0 ? EBADF : 0;
	chunk = atomic_load_explicit(&kq_watch_top[fd >> REG_CHUNK_SHIFT],
	    memory_order_acquire);
	if (chunk == NULL) {
		if (delta < 0)
			return 0;
		if ((fresh = kq_calloc(REG_CHUNK, sizeof(*fresh))) == NULL)
			return ENOMEM;
		if (atomic_compare_exchange_strong(
		    &kq_watch_top[fd >> REG_CHUNK_SHIFT], &expect, fresh))
			chunk = fresh;
		else {
			kq_free(fresh);
			chunk = expect;
		}
	}
	atomic_fetch_add_explicit(&chunk[fd & (REG_CHUNK - 1)],
	    (uint32_t)delta, memory_order_acq_rel);
	return 0;
}

/* Every live kqueue object (created, not yet destroyed), under reg_lock. */
static struct kqueue *kq_all;

_Thread_local struct kq_tls kq_tls __attribute__((tls_model("initial-exec")));

/* A fork() made from a signal handler may nest in another fork's
   handlers on the same thread: the depth. */
static _Thread_local unsigned fork_nest;

/*
 * The fork's prepare holds no lock of kq's while the program's and other
 * libraries' prepare handlers run: one that waited for a mutex held by a
 * thread that waited for reg_lock (a close() of a watched descriptor, or
 * of a kqueue, under that mutex) hung when the prepare held reg_lock
 * through the fork (attack helper 16, tests/attack/a20).  Instead, a
 * reg_lock section that changes what a fork child's handler reads (the
 * list of live kqueues, a kqueue's number and its death, a descriptor
 * made or closed) is a maker section (kq_mkfd_begin): the fork waits for
 * those under way and shuts out new ones, with the gate's patience, so a
 * child sees the state between two of them.  One that only looks
 * (kq_reg_look: kq_each's walk, kq_registry_internal, the pool) never
 * waits for a fork.
 */
void
kq_reg_lock(void)
{
	kq_mkfd_begin();	/* also kq's in-lock state (kq_tls_enter) */
	kq_olock_lock(&reg_lock);
}

void
kq_reg_unlock(void)
{
	kq_olock_unlock(&reg_lock);
	kq_mkfd_end();
}

/* Does this thread hold reg_lock (a signal handler that interrupted its
   holder must not wait for it)? */
int
kq_reg_mine(void)
{
	return kq_olock_mine(&reg_lock);
}

static void
kq_reg_look(void)
{
	kq_tls_enter();
	kq_olock_lock(&reg_lock);
}

static void
kq_reg_unlook(void)
{
	kq_olock_unlock(&reg_lock);
	kq_tls_leave();
}

/*
 * Link a new kqueue on the list of live ones.  reg_lock held.  The links
 * a fork() child follows (kq_all, kq_allnext) are stored after what they
 * lead to: a child made while a section outlasted the fork's patience
 * (registry.c's gate) walks a whole list, old or new.
 */
void
kq_all_add(struct kqueue *kq)
{
	kq->kq_allnext = kq_all;
	kq->kq_allprev = &kq_all;
	if (kq_all != NULL)
		kq_all->kq_allprev = &kq->kq_allnext;
	__atomic_store_n(&kq_all, kq, __ATOMIC_RELEASE);
}

/* Unlink a destroyed kqueue.  reg_lock held. */
void
kq_all_remove_locked(struct kqueue *kq)
{
	if (kq->kq_allprev != NULL) {
		__atomic_store_n(kq->kq_allprev, kq->kq_allnext,
		    __ATOMIC_RELEASE);
		if (kq->kq_allnext != NULL)
			kq->kq_allnext->kq_allprev = kq->kq_allprev;
		kq->kq_allprev = NULL;
		kq->kq_allnext = NULL;
	}
}

/*
 * The next batch of live kqueues, each with a reference taken: up to max
 * of them into v, following prev on the list of live ones (from its head
 * when prev is NULL).  Returns the count, 0 at the end of the list.  The
 * caller holds a reference on prev (the last of its previous batch), which
 * keeps prev on the list (only kq_destroy unlinks), and drops it after
 * this call; it locks the kqueues of a batch one at a time and releases
 * each.  No allocation: close() and its kin call this, and they may run
 * in a signal handler (defer.c).  Kqueues made meanwhile go on the head
 * and are not visited.
 */
size_t
kq_registry_hold_next(struct kqueue *prev, struct kqueue **v, size_t max)
{
	struct kqueue *kq;
	size_t i = 0;

	kq_reg_look();
	for (kq = prev != NULL ? prev->kq_allnext : kq_all;
	    kq != NULL && i < max; kq = kq->kq_allnext)
		if (kq_ref_try(kq))
			v[i++] = kq;
	kq_reg_unlook();
	return i;
}

/*
 * Is number fd claimed by a kqueue being destroyed (no reference left, so
 * kq_registry_hold_next passes it by)?  Its destruction releases each
 * claim before it closes the number (kq_destroy), so a claim still set is
 * a descriptor it has yet to close: a close() of that number by the
 * program must not close it first, or the destruction would then close
 * whatever file got the number next.  The bitmaps are freed only under
 * reg_lock.
 */
int
kq_registry_claimed_dying(int fd)
{
	const struct kqueue *kq;
	int r = 0;

	kq_reg_look();
	for (kq = kq_all; kq != NULL && r == 0; kq = kq->kq_allnext)
		r = atomic_load(&kq->kq_refs) == 0 &&
		    kq_intfd_has(kq, (uintptr_t)fd);
	kq_reg_unlook();
	return r;
}

/*
 * Keep fd in o if it lies in o's range and is among the KQ_OWNMAX smallest
 * seen so far (o->fd sorted, without repeats; o->more once one was
 * dropped or refused for want of room).
 */
void
kq_own_add(struct kq_own *o, int fd)
{
	int i;

	if (fd < 0 || (unsigned int)fd < o->first || (unsigned int)fd > o->last)
		return;
	for (i = o->n; i > 0 && o->fd[i - 1] > fd; i--)
		;
	if (i > 0 && o->fd[i - 1] == fd)
		return;
	if (i == KQ_OWNMAX) {
		o->more = 1;
		return;
	}
	if (o->n == KQ_OWNMAX)
		o->more = 1;	/* the largest goes */
	else
		o->n++;
	memmove(&o->fd[i + 1], &o->fd[i],
	    (size_t)(o->n - 1 - i) * sizeof(o->fd[0]));
	o->fd[i] = fd;
}

/*
 * Number fd is counted as some kqueue's own (kq_fdinternal) and not self's:
 * is it still?  A kqueue whose number, or whose descriptor, was closed
 * behind the C library's back keeps its claim (nothing tells kq), and the
 * program's files that take those numbers would be refused for ever.  So
 * the claim is believed when a live kqueue that has it holds the file now
 * at fd in its epoll set under that number (every internal descriptor is
 * registered there: kq_src_add, kq_knsrc_add), or when kcmp cannot tell;
 * and the signal eventfd all kqueues share is believed.  Takes reg_lock
 * (after the caller's kq_lock, as kq_destroy): kq_all, each kqueue's
 * kq_fd and its bitmap's memory change only under it.
 */
int
kq_registry_internal(int fd, const struct kqueue *self)
{
	const struct kqueue *kq;
	int r = 0;

	if (kq_sig_evfd_is(fd))
		return 1;
	kq_reg_look();
	for (kq = kq_all; kq != NULL && r == 0; kq = kq->kq_allnext)
		if (kq != self && kq_intfd_has(kq, (uintptr_t)fd))
			r = kq_holds_number(kq, fd);
	kq_reg_unlook();
	return r;
}

/*
 * The smallest KQ_OWNMAX descriptor numbers in [o->first, o->last] that kq
 * holds for itself, into o (sorted; o->more if there are others above
 * them): every kqueue's internal sources and knotes' pidfds and timerfds
 * (its kq_intfd bitmap), the shared signal eventfd, the port timers'
 * timerfds.  No allocation: closefrom() takes them a batch at a time.
 *
 * With reg_lock held and the makers shut out (kq_mkfd_exclude): no kqueue
 * makes, claims, releases or closes one of those then -- the makers wait,
 * kq_create needs reg_lock, and kq_destroy closes its sources in a maker
 * section -- so a number found stays kq's until the caller lets go (when
 * a section outlasts the exclusion's patience, 1 s, the closer goes on
 * regardless and may miss or close one: the worst case, not the rule).
 * Reads no kqueue's lock (a maker waiting at the gate may hold it); the
 * bitmaps change atomically and are freed only under reg_lock
 * (kq_intfd_claim, kq_intfd_free).  Sources of a kqueue being destroyed
 * count too until its section has closed them.  One pass over the
 * kqueues.
 */
void
kq_registry_own_fds_locked(struct kq_own *o)
{
	const struct kqueue *kq;
	int s;

	o->n = 0;
	o->more = 0;
	kq_own_add(o, kq_sig_evfd_peek());
	kq_port_timer_fds(o);
	for (kq = kq_all; kq != NULL; kq = kq->kq_allnext) {
		/* The count first: a bitmap at least that long is published
		   before it (kq_intfd_claim). */
		int words = __atomic_load_n(&kq->kq_intfdwords,
		    __ATOMIC_ACQUIRE), w;
		const uint64_t *bm = __atomic_load_n(&kq->kq_intfd,
		    __ATOMIC_ACQUIRE);

		for (s = 0; s < KQ_NSRC; s++)
			if (kq->kq_src[s].ks_ready != NULL)
				kq_own_add(o, kq->kq_src[s].ks_fd);
		/* Its number, if it is still its epoll set (kq_close_gaps
		   asks the same of each before it retires it). */
		if (o->kqnums && kq->kq_fd >= 0 &&
		    (unsigned int)kq->kq_fd >= o->first &&
		    (unsigned int)kq->kq_fd <= o->last &&
		    kq_registry_peek(kq->kq_fd) == kq && kq_owned_number(kq))
			kq_own_add(o, kq->kq_fd);
		for (w = (int)(o->first / 64); bm != NULL && w < words &&
		    (unsigned int)w <= o->last / 64; w++) {
			uint64_t b = __atomic_load_n(&bm[w], __ATOMIC_RELAXED);

			for (; b != 0; b &= b - 1)
				kq_own_add(o, w * 64 + __builtin_ctzll(b));
		}
	}
}

/*
 * Make sure descriptor fd has a registry slot, with reg_lock held: 0, or
 * ENOMEM when its chunk cannot be allocated (EMFILE past the 16M numbers
 * the registry maps).  A kqueue whose number has no slot could never be
 * found by kevent() nor retired by close(): kq_create() asks first and
 * fails instead.
 */
int
kq_registry_reserve_locked(int fd)
{
	if (fd < 0 || (fd >> REG_CHUNK_SHIFT) >= REG_TOP)
		return EMFILE;
	return reg_slot(fd, 1) == NULL ? ENOMEM : 0;
}

/*
 * Publish kq as the kqueue of descriptor fd, with reg_lock held; the slot
 * was reserved (kq_registry_reserve_locked, under the same hold of
 * reg_lock), so this cannot fail.  Returns a kqueue previously mapped at
 * that number, which the application closed (the kernel handed the number
 * out again): the caller retires it with kq_registry_drop_old() once
 * reg_lock is let go.
 */
struct kqueue *
kq_registry_insert_locked(int fd, struct kqueue *kq)
{
	_Atomic(struct kqueue *) *slot = reg_slot(fd, 0);

	KQ_ASSERT(slot != NULL);
	return atomic_exchange_explicit(slot, kq, memory_order_acq_rel);
}

void
kq_registry_drop_old(struct kqueue *old)
{
	/*
	 * A signal handler's kqueue() took the number of a kqueue whose lock
	 * the thread it interrupted holds (the handler closed that number
	 * first: close.c closes the number only then): retired later, with
	 * the registry's reference, as a handler's close() leaves it
	 * (defer.c), instead of waiting for its own thread for ever.
	 */
	if (old != NULL && kq_in_lock() && kq_olock_mine(&old->kq_lock)) {
		kq_retire_later(old);
		return;
	}
	if (old != NULL) {
		KQ_LOCK(old);
		old->kq_dead = 1;
		/*
		 * Its number was closed behind kq's back (a raw close): so
		 * may its own descriptors' have been, its doorbell's
		 * included.  Not when kq's own close() in a signal handler
		 * closed it and left the rest for later (kq_retire_later):
		 * its descriptors are its own, its sleepers are woken.
		 */
		if (atomic_load(&old->kq_retiring))
			kq_bell_ring(old);	/* its sleepers return EBADF */
		else
			old->kq_unowned = 1;
		KQ_UNLOCK(old);
		kq_release(old);
	}
}

/* fd no longer names kq: unmap it and drop the registry's reference. */
void
kq_registry_forget(int fd, struct kqueue *kq)
{
	_Atomic(struct kqueue *) *slot = reg_slot(fd, 0);
	struct kqueue *expect = kq;

	if (slot == NULL)
		return;
	if (atomic_compare_exchange_strong(slot, &expect, NULL))
		kq_release(kq);
}

struct kqueue *
kq_pool_get(void)
{
	struct kqueue *kq;

	kq_reg_look();
	kq = pool_free;
	if (kq != NULL)
		pool_free = kq->kq_poolnext;
	kq_reg_unlook();
	if (kq == NULL) {
		kq = kq_aligned_alloc(64, (sizeof(*kq) + 63) & ~(size_t)63);
		if (kq == NULL)
			return NULL;
		memset(kq, 0, sizeof(*kq));
		atomic_init(&kq->kq_lock, 0);
	}
	return kq;
}

/* Return a destroyed kqueue (kq_refs == 0) to the pool. */
void
kq_pool_put(struct kqueue *kq)
{
	kq_reg_look();
	kq->kq_poolnext = pool_free;
	/* After its link: a fork child (no lock of kq's held through the
	   fork) finds a whole list. */
	__atomic_store_n(&pool_free, kq, __ATOMIC_RELEASE);
	kq_reg_unlook();
}

/* Was fd a kqueue descriptor of the parent that this fork child kept? */
int
kq_registry_orphan(int fd)
{
	struct kqueue *kq;

	for (kq = fork_orphans; kq != NULL; kq = kq->kq_poolnext)
		if (kq->kq_fd == fd)
			return 1;
	return 0;
}

/*
 * fork(): as on FreeBSD the child does not inherit kqueues.  The child
 * handler closes the child's copies of every kqueue descriptor it can
 * recognise (kq_owned: its doorbell is registered in it) -- except event
 * ports', which stay open and unusable (see below) -- and of the internal
 * descriptors, so the numbers
 * are free (EBADF on use) and the parent's epoll sets are never touched by
 * the child.  Only async-signal-safe calls are made: the child of a
 * threaded parent may make no others.  The kqueue objects are kept
 * reachable on fork_orphans.
 */
/*
 * An internal descriptor exists from the call that makes it until
 * kq_intfd_claim records it in its kqueue's kq_intfd, and only from then
 * can a fork() child find it and close it.  The code between is a "maker"
 * section (kq_mkfd_begin/end: each filter's source maker, EVFILT_PROC's
 * pidfd), and fork() waits until no thread is in one, so no child is made
 * inside that gap; the same section covers the other gap, from a knote's
 * release of its descriptor to the close (EVFILT_PROC's pidfd, an event
 * port's timerfd).  It is entered only where a descriptor is made or
 * closed: once per kqueue and source, an EVFILT_PROC attach or detach
 * (kevent()'s collection makes one when NOTE_TRACK follows a fork), and
 * around the short-lived /proc files read for an eventfd's or a pidfd's
 * state (kq_read_proc): never on a socket's, a
 * pipe's or a file's event path.
 *
 * A gate of two counters, not a pthread rwlock: a fork child cannot
 * release an rwlock its parent thread write-locked (glibc matches the
 * writer by thread id, which the child's thread does not share), and
 * re-initialising one is what ThreadSanitizer reports.  Sections nest
 * (mk_depth: a maker may reach another through kq_absorb).  A fork() from
 * a signal handler that interrupted a section, or libkq inside one of its
 * locks, does not wait (kq_in_lock), as close() does not.  The bitmaps the
 * child reads are published so that a child sees each one whole
 * (kq_intfd_claim, kq_free_all).
 */
static _Atomic int mk_inside;		/* threads in a maker section */
static _Atomic int mk_fork;		/* fork()s waiting or under way */
static _Atomic int mk_closing;		/* closefrom()s in their window */
static _Thread_local int mk_depth __attribute__((tls_model("initial-exec")));
static _Thread_local int mk_excl;	/* this thread's closefrom window */

/*
 * Neither side waits for the other for ever.  A section is a few system
 * calls, but it may call malloc(), and a malloc that has its own fork
 * handlers (jemalloc's lock every arena in prepare) would keep it from
 * ending while the fork waits for it; another library's prepare handler,
 * run after libkq's, may wait for a lock held by a thread that waits at
 * the gate.  After MK_PATIENCE the waiter goes on: the worst outcome is
 * then a fork child that keeps one internal descriptor (close-on-exec),
 * never a hang.
 */
#define MK_PATIENCE_NS	1000000000LL	/* 1 s */

static int64_t
mk_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);	/* async-signal-safe */
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Has MK_PATIENCE passed since *t0 (0: the wait starts now)? */
static int
mk_impatient(int64_t *t0)
{
	int64_t now = mk_now();

	if (*t0 == 0)
		*t0 = now;
	return now - *t0 > MK_PATIENCE_NS;
}

/*
 * When the latest fork shut the gate (0: none pending).  A maker waits
 * MK_PATIENCE at most, and not at all once the fork has been pending that
 * long: a thread that the fork waits for (holding a mutex the program's
 * prepare handler wants) may meet the gate several times in one call (a
 * kqueue's close, then its destruction), and waited it out each time
 * (a20: 3 s).
 */
static _Atomic int64_t mk_fork_since;

/* Has the gate stayed shut long enough for a maker to go on? */
static int
mk_gate_impatient(int64_t *t0)
{
	int64_t since = atomic_load(&mk_fork_since);

	if (since != 0 && atomic_load(&mk_fork) > 0 &&
	    mk_now() - since > MK_PATIENCE_NS)
		return 1;
	return mk_impatient(t0);
}

/*
 * A section is not a cancellation point: pthread_cancel() acting on an
 * open() or a recv() inside one would leave mk_inside counting a thread
 * that is gone, and every later fork() would wait out MK_PATIENCE.
 */
static _Thread_local int mk_cancel __attribute__((tls_model("initial-exec")));

/*
 * Wait, with MK_PATIENCE, for the maker sections under way to end (new
 * ones wait at the gate the caller has just shut): not from inside a
 * section or one of kq's locks, which a signal handler may have
 * interrupted on this very thread.
 *
 * Its callers, a fork's prepare and a closefrom's window, shut the gate
 * in one order.  First the thread enters kq's in-lock state
 * (kq_tls_enter) and marks the gate as its own (fork_nest, mk_excl);
 * only then is the gate's count raised (mk_fork, mk_closing), and it is
 * lowered first at the end.  So a signal handler run on the thread
 * anywhere in between closes a kqueue or a watched descriptor by the
 * number only and leaves the rest for later (close.c), and waits at no
 * gate: not for a kqueue lock held by a thread that waits at the gate
 * for this very fork or window (attack helper 15: forks of 5 to 12 s),
 * nor for its own thread's fork (a17: 1.0 s in 6 runs of 8, when the
 * parent handler left the state before it lowered the count).  The
 * signals stay deliverable: a program that stops its threads with a
 * signal and waits for each to answer (a collector, a profiler) is
 * answered (attack helper 16: blocking them made every such stop wait
 * out a section's patience, and a fork or a closefrom that then waited
 * for reg_lock with them blocked hung).
 */
static void
mk_wait_sections(void)
{
	int64_t t0 = 0;

	while (atomic_load(&mk_inside) > 0 && !mk_impatient(&t0))
		sched_yield();
}

/*
 * Must a maker section wait (a fork, or a closefrom's window)?  Not for a
 * gate this very thread shut: a closer's own reg_lock waits for forks
 * only, and a signal handler on a forking thread for nothing (the fork
 * cannot be made before the handler returns).
 */
static int
mk_shut(void)
{
	if (fork_nest > 0)
		return 0;
	return atomic_load(&mk_fork) > 0 ||
	    (mk_excl == 0 && atomic_load(&mk_closing) > 0);
}

/*
 * closefrom() and close_range() (close.c) between their look at kq's own
 * descriptors and their close_range() calls: no maker section may run
 * then, or a descriptor made (or released and closed, its number reused)
 * in between would be closed behind kq's back, and kq would go on to use,
 * or close, a number that is no longer its own.  Waits for the sections
 * under way, as fork() does, with the same patience; a closer that a
 * signal handler runs inside a section or one of kq's locks does not
 * wait (it cannot: the section is its own thread's).  The closer takes
 * reg_lock next (which kq_create and kq_destroy hold while they make or
 * close descriptors) and no kqueue's lock, so a maker waiting at the
 * gate with its kqueue's lock held delays it nothing.
 */
void
kq_mkfd_exclude(void)
{
	int nested = kq_in_lock() || mk_depth != 0;

	/* The window's states and counts in mk_wait_sections's order. */
	kq_tls_enter();
	mk_excl++;
	atomic_signal_fence(memory_order_seq_cst);
	atomic_fetch_add(&mk_closing, 1);
	if (!nested)
		mk_wait_sections();
}

void
kq_mkfd_allow(void)
{
	atomic_fetch_sub(&mk_closing, 1);
	atomic_signal_fence(memory_order_seq_cst);
	mk_excl--;
	kq_tls_leave();
}

/*
 * mk_depth counts only sections the thread is counted in (mk_inside): a
 * signal handler that interrupts the wait at the gate must pass the gate
 * itself.  It nested there before, as in a section, and closed kqueues
 * while the fork copied the descriptor table (a17 under ASan: 9 to 13
 * children of 1 100 kept a kqueue's descriptor).  The cancellation state
 * is saved after the depth is raised and given back before it is
 * lowered, so a handler's section never saves the disabled state as the
 * one to restore.
 */
void
kq_mkfd_begin(void)
{
	int64_t t0 = 0;

	if (mk_depth > 0) {
		mk_depth++;
		return;
	}
	/*
	 * From here to the end of the section the thread counts as inside
	 * one of kq's locks (kq_tls_enter), though a section holds none of
	 * its own: a signal handler run in it that closes a kqueue closes
	 * the number only (close.c) instead of waiting for the kqueue's
	 * lock, which a thread waiting at the gate for a fork may hold
	 * while the fork waits for this section (attack helper 18: a
	 * handler in timer_create()'s section, every fork 1 s and children
	 * that kept kq's descriptors).
	 */
	kq_tls_enter();
	for (;;) {
		while (mk_shut() && !mk_gate_impatient(&t0))
			sched_yield();
		atomic_fetch_add(&mk_inside, 1);
		mk_depth = 1;
		atomic_signal_fence(memory_order_seq_cst);
		if (!mk_shut() || mk_gate_impatient(&t0))
			break;
		mk_depth = 0;			/* let the fork go first */
		atomic_signal_fence(memory_order_seq_cst);
		atomic_fetch_sub(&mk_inside, 1);
	}
	(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mk_cancel);
}

void
kq_mkfd_end(void)
{
	if (mk_depth > 1) {
		mk_depth--;
		return;
	}
	(void)pthread_setcancelstate(mk_cancel, NULL);
	atomic_signal_fence(memory_order_seq_cst);
	mk_depth = 0;
	atomic_signal_fence(memory_order_seq_cst);
	atomic_fetch_sub(&mk_inside, 1);
	kq_tls_leave();
}

/*
 * Shut the gate and wait for the sections under way, reg_lock's
 * included: then nothing kq's fork child handler reads changes until the
 * fork is made (after MK_PATIENCE a section may: the worst outcome is a
 * child that keeps a descriptor).  No lock is held through the other
 * prepare handlers (see kq_reg_lock).
 */
static void
reg_atfork_prepare(void)
{
	/* Called from a handler that interrupted a section or a lock of
	   kq's on this thread: the sections cannot end before it returns. */
	int nested = kq_in_lock() || mk_depth != 0;

	/* The fork's states and counts in mk_wait_sections's order (as
	   when the prepare held reg_lock; fork_nest: this thread forks). */
	kq_tls_enter();
	fork_nest++;
	atomic_signal_fence(memory_order_seq_cst);
	atomic_fetch_add(&mk_fork, 1);	/* other threads may fork too */
	atomic_store(&mk_fork_since, mk_now());
	if (!nested)
		mk_wait_sections();
}

/* The end of one level of fork (parent or child side). */
static void
reg_atfork_done(void)
{
	if (atomic_fetch_sub(&mk_fork, 1) == 1)
		atomic_store(&mk_fork_since, 0);
	atomic_signal_fence(memory_order_seq_cst);
	fork_nest--;
	kq_tls_leave();
}

static void
reg_atfork_parent(void)
{
	reg_atfork_done();
}

static void
reg_atfork_child(void)
{
	struct kqueue *kq, *next;
	sigset_t all, old;
	uint64_t b;
	int i, j, k, self;

	/*
	 * No signal handler runs in here: one that forked would give its
	 * child a walk of kq_all half done by this one, and the rest of
	 * this walk would put the same kqueues on fork_orphans a second
	 * time (a loop; attack helper 17).  The only thread, so stopping
	 * it stops nobody else.
	 */
	sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < REG_TOP; i++) {
		_Atomic(struct kqueue *) *chunk = atomic_load(&kq_reg_top[i]);

		if (chunk == NULL)
			continue;
		for (j = 0; j < REG_CHUNK; j++)
			atomic_store(&chunk[j], NULL);
	}
	/*
	 * Every live kqueue, mapped or being retired (closed, its last
	 * reference not yet dropped): the parent's kqueue() holds reg_lock
	 * while a kqueue is half made, so none is missing here.
	 */
	for (kq = kq_all; kq != NULL; kq = next) {
		next = kq->kq_allnext;
		/*
		 * An unrecognised number stays open (orphan).  So does an
		 * event port's: on illumos the child inherits the port's
		 * descriptor, and programs close it after fork() before
		 * making a new port (libev's port_fork); closed here, its
		 * number would be reused and that close would hit another
		 * file.  It is unusable in the child (EBADF, orphan).
		 */
		/*
		 * The number of a kqueue kq closed from a signal handler
		 * (KQ_RET_SELF: close.c's path inside one of kq's locks,
		 * which cannot wait for reg_lock) too, dead or not, while
		 * it holds the kqueue's set: fork() copies the descriptor
		 * table before the memory, so a number closed in between
		 * is open here while the memory says the kqueue died (a17:
		 * a child in 5 runs of 8 kept a kqueue's epoll descriptor).
		 * But only if no other descriptor shares that file (the
		 * kqueue's own duplicate aside): the program may have
		 * dup()ed the kqueue and put the duplicate at the freed
		 * number, and that one is the program's (attack helper 16).
		 * A kqueue closed through kq otherwise died under reg_lock
		 * with its number: nothing to close.
		 */
		self = atomic_load(&kq->kq_retiring) & KQ_RET_SELF;
		if (!kq->kq_port && kq->kq_fd >= 0 &&
		    (self || !kq->kq_dead) && kq_owned_number(kq) &&
		    (!self || !fd_file_shared(kq->kq_fd, kq->kq_waitfd))) {
			kq_close_raw(kq->kq_fd);
			kq->kq_fd = -1;
		} else if (kq->kq_dead)
			kq->kq_fd = -1;
		/* Its sources (claims already dropped by a destruction in
		   progress: kq_destroy closes them in a maker section), then
		   every descriptor it claims: its knotes' own (pidfds ...).
		   A number closed twice is only refused the second time:
		   nothing in the child has opened one since. */
		for (k = 0; k < KQ_NSRC; k++)
			if (kq->kq_src[k].ks_ready != NULL)
				kq_close_raw(kq->kq_src[k].ks_fd);
		for (k = 0; k < kq->kq_intfdwords; k++)
			for (b = kq->kq_intfd[k]; b != 0; b &= b - 1)
				kq_close_raw(k * 64 + __builtin_ctzll(b));
		kq->kq_dead = 1;
		/* Its numbers are closed: a call this thread resumes must
		   not ring its doorbell (the child's file may be there now:
		   attack helper 26's F2). */
		kq->kq_unowned = 1;
		/* Its lock, held by a thread that is not in the child, is
		   freed: this thread may have been waiting for it when its
		   handler forked (attack helper 25's F3); it finds the
		   kqueue dead.  One this thread holds stays, for the
		   interrupted code to release. */
		if (!kq_olock_mine(&kq->kq_lock))
			atomic_store(&kq->kq_lock, 0);
		kq->kq_allnext = NULL;
		kq->kq_allprev = NULL;
		kq->kq_poolnext = fork_orphans;
		fork_orphans = kq;
	}
	kq_all = NULL;
	/*
	 * The kqueues a handler's close left to retire (defer.c) are orphans
	 * now like every other: their references stay, as those of the
	 * parent's other threads do.  Reaped here, the last release would
	 * destroy an orphan -- close its sources' numbers again, which the
	 * child may have reused by then, and put it in the pool while it is
	 * on fork_orphans.  (The graveyard stays: its blocks are the child's
	 * copies, free to free.)
	 */
	atomic_store(&kq_hot.retire, NULL);
	for (i = 0; i < REG_TOP; i++) {
		_Atomic uint32_t *w = atomic_load(&kq_watch_top[i]);

		for (j = 0; w != NULL && j < REG_CHUNK; j++)
			atomic_store(&w[j], 0);
	}
	/* The port timers' descriptors not yet claimed (a number closed
	   twice above and there is refused the second time: nothing in
	   the child has opened one since). */
	kq_port_atfork_child();
	atomic_store(&reg_pid, getpid());
	/*
	 * Only this thread is left: no other is in a maker section, and
	 * no other holds reg_lock or the port timers' lock (one that did
	 * was in a section that outlasted the patience).  This one may, if
	 * the fork came from a signal handler that interrupted it: the
	 * interrupted code lets go when it resumes.
	 */
	atomic_store(&mk_inside, mk_depth > 0);
	atomic_store(&mk_fork, (int)fork_nest);	/* this thread's forks */
	/* Another thread's closefrom window is not the child's: left
	   shut, every section there waited out the patience (attack
	   helper 17: a child's first kqueue and kevent took 1 to 6 s). */
	atomic_store(&mk_closing, mk_excl);
	if (!kq_olock_mine(&reg_lock))
		atomic_store(&reg_lock, 0);
	/*
	 * A pooled kqueue may be locked by a kevent() of another thread
	 * that read a stale registry slot (kq_enter checks the object under
	 * its lock): that thread is not in the child, and the child's next
	 * kqueue() would wait for the lock for ever.
	 */
	for (kq = pool_free; kq != NULL; kq = kq->kq_poolnext)
		atomic_store(&kq->kq_lock, 0);
	reg_atfork_done();
	kq_dgram_atfork_child();
	kq_sig_atfork_child();
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * fd is an epoll descriptor the registry does not know: if it is a dup()
 * of a kqueue descriptor (same open file), return that kqueue with a
 * reference held.  Slow path (kcmp per kqueue), taken only on a miss.
 */
struct kqueue *
kq_registry_find_alias(int fd)
{
	int i, j;

	for (i = 0; i < REG_TOP; i++) {
		_Atomic(struct kqueue *) *chunk = atomic_load(&kq_reg_top[i]);

		if (chunk == NULL)
			continue;
		for (j = 0; j < REG_CHUNK; j++) {
			int kfd = (i << REG_CHUNK_SHIFT) | j;

			if (atomic_load_explicit(&chunk[j],
			    memory_order_relaxed) == NULL)
				continue;
			if (fd_same_file(fd, kfd))
				return kq_registry_acquire(kfd);
		}
	}
	return NULL;
}
