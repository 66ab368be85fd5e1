/*
 * defer.c -- frees that close() puts off.
 *
 * close(), dup2(), dup3(), close_range() and closefrom() are async-signal-
 * safe in the C library, and programs call them from signal handlers.
 * Through kq they may drop knotes and destroy a kqueue, which frees memory;
 * free() in a handler that interrupted the same thread inside malloc() or
 * free() corrupts the heap (a14_close_in_handler's 'corrupted double-linked
 * list').  So while a thread is inside one of them (kq_tls.closing), every
 * free of kq's goes onto the graveyard instead: a lock-free stack threaded
 * through the blocks themselves (every block kq allocates has room for the
 * link: fault.h's KQ_MINSZ).  The graveyard is emptied by the next call of
 * kq's that may allocate anyway -- kqueue(), port_create(), a kevent() or
 * port call with changes -- where a free() is no less safe than the
 * malloc() next to it.  The close paths themselves allocate nothing.
 *
 * A handler that closes a kqueue's descriptor while the thread it
 * interrupted holds one of kq's locks cannot retire the kqueue (that needs
 * its lock and reg_lock): it closes the number only (close.c, kq_retire).
 * The kqueue then goes on a second stack, with the reference the close
 * took, and the reaper retires it: unmapped, marked dead, its sleepers
 * woken, its reference dropped -- so its own descriptors (doorbell,
 * timers) are closed then, not left open for good.
 *
 * Push is a compare-and-swap on the head; the reaper takes the whole stack
 * with one exchange, so no pop ever races a push (no ABA).  A handler may
 * push while the interrupted code of its thread pushes or reaps.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "kq_int.h"
#include "fault.h"

struct kq_grave {
	struct kq_grave	*g_next;
};

void
kq_free(void *p)
{
	struct kq_grave *g = p, *head;

	if (p == NULL)
		return;
	if (__builtin_expect(kq_tls.closing == 0, 1)) {
		kq_heap_free(p);
		return;
	}
	head = atomic_load_explicit(&kq_hot.grave, memory_order_relaxed);
	do
		g->g_next = head;
	while (!atomic_compare_exchange_weak_explicit(&kq_hot.grave, &head, g,
	    memory_order_release, memory_order_relaxed));
}

/*
 * kq's descriptor number was closed by a handler without kq's lock (see
 * above); the caller's reference on kq passes to the stack.  Async-signal-
 * safe.  A kqueue already on the stack is not pushed twice.
 */
void
kq_retire_later(struct kqueue *kq)
{
	struct kqueue *head;

	if (atomic_fetch_or_explicit(&kq->kq_retiring,
	    KQ_RET_SELF | KQ_RET_QUEUED, memory_order_acq_rel) &
	    KQ_RET_QUEUED) {
		/* Already waiting: the registry's reference and the stack's
		   outlive this one, so this release frees nothing. */
		kq_release(kq);
		return;
	}
	head = atomic_load_explicit(&kq_hot.retire, memory_order_relaxed);
	do
		kq->kq_retnext = head;
	while (!atomic_compare_exchange_weak_explicit(&kq_hot.retire, &head,
	    kq, memory_order_release, memory_order_relaxed));
}

/*
 * kq's code is about to close the kqueue's number itself, from a handler,
 * without its lock (close.c).  Marked before the close: from then on, a
 * thread that finds the number closed or reused knows the kqueue's other
 * descriptors are still its own (kq_kill, kq_registry_drop_old), and a
 * rebuild of its set does not start (kq_rebuild).  Returns 1, with *was
 * the state before (for kq_retire_unmark when the number was left
 * untouched) -- or 0, marking nothing, while a rebuild is putting a new
 * set under the number (KQ_RET_SWAP): a close made then would be undone
 * by its dup3, or the set put over another file that took the number in
 * between.  Then, with pend, the rebuild makes the close once it is done
 * (KQ_RET_PEND).  Async-signal-safe.
 */
int
kq_retire_claim(struct kqueue *kq, int pend, int *was)
{
	int v = atomic_load_explicit(&kq->kq_retiring, memory_order_acquire),
	    n;

	do {
		if ((v & KQ_RET_SWAP) && !pend)
			return 0;
		n = v | ((v & KQ_RET_SWAP) ? KQ_RET_PEND : KQ_RET_SELF);
	} while (!atomic_compare_exchange_weak_explicit(&kq->kq_retiring, &v,
	    n, memory_order_acq_rel, memory_order_acquire));
	*was = v;
	return !(v & KQ_RET_SWAP);
}

void
kq_retire_unmark(struct kqueue *kq, int was)
{
	if (!(was & KQ_RET_SELF))
		atomic_fetch_and_explicit(&kq->kq_retiring, ~KQ_RET_SELF,
		    memory_order_acq_rel);
}

/*
 * Retire kq, whose number was closed behind its lock: unless the number
 * was mapped to another kqueue since (kq_create retired kq then) or kq
 * died otherwise, unmap it, mark it dead and wake its sleepers (they
 * return EBADF).  The number is not touched: it is not kq's any more.
 */
static void
reap_retire(struct kqueue *kq)
{
	KQ_LOCK(kq);
	if (!kq->kq_dead) {
		/* Not mapped any more: a handler's kqueue() took the number
		   and left kq to us (kq_registry_drop_old); it dies all the
		   same, its sleepers woken (attack helper 21: they slept on
		   for ever). */
		int mapped = kq_registry_peek(kq->kq_fd) == kq;

		if (!mapped || !kq_owned(kq)) {
			kq->kq_dead = 1;
			if (mapped)
				kq_registry_forget(kq->kq_fd, kq);
			kq_bell_ring(kq);
		}
	}
	KQ_UNLOCK(kq);
	/* Off the stack, still closed by kq itself: KQ_RET_SELF stays for
	   the kq_create that takes the number next (kq_registry_drop_old). */
	atomic_fetch_and_explicit(&kq->kq_retiring, ~KQ_RET_QUEUED,
	    memory_order_acq_rel);
	kq_release(kq);
}

void
kq_reap_slow(void)
{
	struct kq_grave *g, *gnext;
	struct kqueue *kq, *knext;

	/* Not inside a close path or one of kq's locks: a handler that
	   interrupted either may have interrupted a malloc() too, or hold
	   the locks a retirement takes. */
	if (kq_tls.closing != 0 || kq_in_lock())
		return;
	kq = atomic_exchange_explicit(&kq_hot.retire, NULL,
	    memory_order_acquire);
	for (; kq != NULL; kq = knext) {
		knext = kq->kq_retnext;
		reap_retire(kq);
	}
	g = atomic_exchange_explicit(&kq_hot.grave, NULL,
	    memory_order_acquire);
	for (; g != NULL; g = gnext) {
		gnext = g->g_next;
		kq_heap_free(g);
	}
}
