/*
 * olock.c -- a futex mutex that knows its owner, for the locks a fork
 * child must be able to judge (reg_lock, the port timers' lock).
 *
 * The fork's prepare handler takes neither (registry.c): the child finds
 * each free, held by a thread that is not in the child (one whose section
 * outlasted the gate's patience: the child frees it), or held by its own
 * thread, when the fork came from a signal handler that interrupted the
 * holder (it stays held, for the interrupted code to release).  The lock
 * word is the owner's token (a per-thread number) shifted left by one,
 * with bit 0 set while a thread may be waiting, and 0 when free: it is set
 * by the one compare-and-swap that takes the lock and cleared by the one
 * exchange that releases it, so kq_olock_mine() is exact at every
 * instruction (the thread's token stays the same in the child).
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kq_int.h"

static _Atomic uint32_t olock_tokens = 1;
static _Thread_local uint32_t olock_token
    __attribute__((tls_model("initial-exec")));

/* This thread's token (never 0).  A signal handler that interrupts the
   first call may draw one of its own: both are this thread's for the
   lock it takes with it. */
static uint32_t
olock_me(void)
{
	uint32_t t = olock_token;

	if (t == 0) {
		do
			t = atomic_fetch_add(&olock_tokens, 1) & 0x7fffffffu;
		while (t == 0);
		olock_token = t;
	}
	return t << 1;
}

void
kq_olock_lock(_Atomic uint32_t *w)
{
	uint32_t me = olock_me(), c = 0;

	if (atomic_compare_exchange_strong_explicit(w, &c, me,
	    memory_order_acquire, memory_order_relaxed))
		return;
	for (;;) {
		if (c == 0) {
			/* Taken with the waiter bit: another may still
			   sleep (as Drepper's mutex 3 takes it with 2). */
			if (atomic_compare_exchange_strong_explicit(w, &c,
			    me | 1, memory_order_acquire,
			    memory_order_relaxed))
				return;
			continue;
		}
		if (!(c & 1) && !atomic_compare_exchange_strong_explicit(w,
		    &c, c | 1, memory_order_relaxed, memory_order_relaxed))
			continue;
		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, c | 1, NULL, NULL, 0);
		c = atomic_load_explicit(w, memory_order_relaxed);
	}
}

void
kq_olock_unlock(_Atomic uint32_t *w)
{
	if (atomic_exchange_explicit(w, 0, memory_order_release) & 1)
		syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

int
kq_olock_mine(_Atomic uint32_t *w)
{
	return (atomic_load_explicit(w, memory_order_relaxed) >> 1) ==
	    (olock_me() >> 1);
}
