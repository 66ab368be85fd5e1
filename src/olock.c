/*
 * olock.c -- the contended paths of the futex mutex that knows its owner
 * (kq_int.h: kq_olock_lock and the rest are inline there).  Every lock of
 * kq's that a signal handler or a fork child must be able to judge is
 * one: kq_lock, the datagram stripes, reg_lock, the port timers' lock.
 *
 * The fork's prepare handler takes none of them (registry.c): the child
 * finds each of reg_lock, the port timers' lock and the datagram stripes
 * (kq_dgram_atfork_child) free, held by a thread that is
 * not in the child (one whose section outlasted the gate's patience: the
 * child frees it), or held by its own thread, when the fork came from a
 * signal handler that interrupted the holder (it stays held, for the
 * interrupted code to release).  kq_olock_mine() tells which, exactly: the
 * word names its owner (kq_int.h), and the thread keeps its token in the
 * child.
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kq_int.h"

/*
 * The next token.  63 bits: drawn once per thread, they do not come round
 * in the life of any process (2^63 threads), so no two live threads of a
 * process share one.  (With 31 bits they came round after 2^31 threads,
 * a day or two of a server that makes a thread per connection, and a
 * thread could then take another's lock for its own.)  Tokens are not
 * thread ids: a fork child's thread keeps its token, and a vfork child
 * runs on its parent's thread, so ids come back to new threads while the
 * old token lives on (docs/DESIGN.md, "The token and long runs").
 */
static _Atomic uint64_t olock_tokens = 1;

/*
 * Draw this thread's token.  A signal handler that interrupts the first
 * draw may draw one of its own: the handler's locks are all released when
 * it returns, and whichever token is stored last is this thread's from
 * then on.
 */
uint64_t
kq_olock_token(void)
{
	uint64_t t;

	do
		t = atomic_fetch_add(&olock_tokens, 1) &
		    (UINT64_MAX >> 1);
	while (t == 0);
	kq_tls.token = t << 1;
	atomic_signal_fence(memory_order_seq_cst);
	return t << 1;
}

#ifdef KQ_FAULT
/* The test build's hook (tests/token-wrap.c): the next token drawn. */
KQ_EXPORT void
kq_olock_token_next(uint64_t t)
{
	atomic_store(&olock_tokens, t);
}
#endif

/*
 * The futex of an olock: the low half of its word, which holds the
 * waiter bit.  Another owner may give the half the same value (tokens
 * 2^31 apart) while a waiter goes to sleep on it: that owner took the
 * lock with the waiter bit set, so its release wakes the sleeper all the
 * same; a word that changed to anything else, 0 included, has a
 * different low half and the sleep does not begin.
 */
static uint32_t *
olock_futex(kq_olock_t *w)
{
	return (uint32_t *)(void *)w +
	    (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
}

/*
 * The lock was not free (c, its word, as the failed compare-and-swap saw
 * it).  Spin a little while it is held by a thread that is not waited for
 * (it is usually held for a system call or less), then mark it waited for
 * and sleep.
 */
#define OLOCK_SPINS	100

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax()	__builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax()	__asm__ volatile ("yield" ::: "memory")
#else
#define cpu_relax()	do { } while (0)
#endif

/* Take the lock, waiting until the monotonic time end (never if end is
   negative): 1 if taken, 0 if end came first. */
static int
olock_wait_until(kq_olock_t *w, uint64_t me, uint64_t c, int64_t end)
{
	struct timespec left;
	int64_t rest;

	for (int i = 0; i < OLOCK_SPINS && c != 0 && !(c & 1); i++) {
		cpu_relax();
		c = atomic_load_explicit(w, memory_order_relaxed);
	}
	for (;;) {
		if (c == 0) {
			/* Taken with the waiter bit: another may still
			   sleep (as Drepper's mutex 3 takes it with 2). */
			if (atomic_compare_exchange_strong_explicit(w, &c,
			    me | 1, memory_order_acquire,
			    memory_order_relaxed))
				return 1;
			continue;
		}
		if (!(c & 1) && !atomic_compare_exchange_strong_explicit(w,
		    &c, c | 1, memory_order_relaxed, memory_order_relaxed))
			continue;
		if (end < 0)
			syscall(SYS_futex, olock_futex(w), FUTEX_WAIT_PRIVATE,
			    (uint32_t)(c | 1), NULL, NULL, 0);
		else {
			if ((rest = end - kq_now_ns()) <= 0)
				return 0;
			left.tv_sec = (time_t)(rest / 1000000000);
			left.tv_nsec = (long)(rest % 1000000000);
			syscall(SYS_futex, olock_futex(w), FUTEX_WAIT_PRIVATE,
			    (uint32_t)(c | 1), &left, NULL, 0);
		}
		c = atomic_load_explicit(w, memory_order_relaxed);
	}
}

void
kq_olock_wait(kq_olock_t *w, uint64_t me, uint64_t c)
{
	(void)olock_wait_until(w, me, c, -1);
}

void
kq_olock_wake(kq_olock_t *w)
{
	syscall(SYS_futex, olock_futex(w), FUTEX_WAKE_PRIVATE, 1, NULL, NULL,
	    0);
}

/*
 * kq_olock_lock that waits at most ns nanoseconds: 1 if taken, 0 if not
 * (a timed-out waiter may leave the waiter bit: the holder then makes one
 * wake-up more).  For a signal handler, which must not wait for ever
 * (kevent.c, kq_enter_lock); async-signal-safe.
 */
int
kq_olock_timedlock(kq_olock_t *w, int64_t ns)
{
	uint64_t me = kq_olock_me(), c = 0;

	if (!atomic_compare_exchange_strong_explicit(w, &c, me,
	    memory_order_acquire, memory_order_relaxed) &&
	    !olock_wait_until(w, me, c, kq_now_ns() + ns))
		return 0;
	kq_tls.owned++;
	atomic_signal_fence(memory_order_seq_cst);
	return 1;
}
