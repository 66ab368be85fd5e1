/*
 * test-heap.c -- kq's own allocator (src/heap.c), which every allocation
 * of kq's goes through.  Not a FreeBSD behaviour: the one test binary
 * that reaches inside the library, linked with heap.o itself (Makefile).
 *
 * Each block is filled with a pattern naming its owner and checked when it
 * is freed, so a block handed out twice, or overlapping another, shows up
 * as a pattern that changed.  The threads pass blocks to one another (one
 * frees what another allocated), and a signal handler allocates and frees
 * in the middle of the interrupted thread's own calls: the stacks are
 * lock-free so that both are safe (heap.c).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "helpers.h"

void	*kq_heap_alloc(size_t n);
void	*kq_heap_zalloc(size_t n);
void	*kq_heap_realloc(void *p, size_t n);
void	*kq_heap_aligned(size_t align, size_t n);
void	 kq_heap_free(void *p);

static uint32_t
rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(*s >> 33);
}

/* Sizes that cross every class edge and the small/large boundary. */
static size_t
pick_size(uint64_t *s)
{
	switch (rnd(s) % 4) {
	case 0:
		return 1 + rnd(s) % 64;
	case 1:
		return 1 + rnd(s) % 4096;
	case 2:
		return 4000 + rnd(s) % 200;
	default:
		return 1 + rnd(s) % 40000;
	}
}

static void
fill(unsigned char *p, size_t n, unsigned tag)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(tag + i * 7);
}

static int
intact(const unsigned char *p, size_t n, unsigned tag)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(tag + i * 7))
			return 0;
	return 1;
}

static void
every_size_holds_its_bytes_and_alignment(void **state)
{
	(void)state;
	for (size_t n = 1; n < 20000; n += (n < 300 ? 1 : 61)) {
		unsigned char *p = kq_heap_alloc(n), *z, *a;

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		fill(p, n, (unsigned)n);
		z = kq_heap_zalloc(n);
		assert_non_null(z);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(z[i], 0);
		fill(z, n, 3);
		a = kq_heap_aligned(64, n);
		assert_non_null(a);
		assert_int_equal((uintptr_t)a % 64, 0);
		fill(a, n, 5);
		assert_true(intact(p, n, (unsigned)n));
		assert_true(intact(z, n, 3));
		kq_heap_free(a);
		kq_heap_free(z);
		kq_heap_free(p);
	}
}

static void
reused_block_is_zeroed_by_zalloc(void **state)
{
	(void)state;
	for (size_t n = 8; n < 9000; n *= 2) {
		unsigned char *p = kq_heap_alloc(n), *z;

		assert_non_null(p);
		memset(p, 0xa5, n);
		kq_heap_free(p);
		z = kq_heap_zalloc(n);
		assert_non_null(z);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(z[i], 0);
		kq_heap_free(z);
	}
}

static void
realloc_keeps_the_prefix_growing_and_shrinking(void **state)
{
	uint64_t s = 7;
	size_t n = 10;
	unsigned char *p = kq_heap_alloc(n);

	(void)state;
	assert_non_null(p);
	fill(p, n, 9);
	for (int i = 0; i < 3000; i++) {
		size_t m = pick_size(&s) * (i % 50 == 0 ? 20 : 1);
		unsigned char *q = kq_heap_realloc(p, m);

		assert_non_null(q);
		assert_true(intact(q, n < m ? n : m, 9));
		p = q;
		n = m;
		fill(p, n, 9);
	}
	kq_heap_free(p);
	p = kq_heap_realloc(NULL, 100);
	assert_non_null(p);
	kq_heap_free(p);
	kq_heap_free(NULL);
}

static void
bad_alignment_and_huge_sizes_fail_cleanly(void **state)
{
	(void)state;
	errno = 0;
	assert_null(kq_heap_aligned(48, 10));
	assert_int_equal(errno, EINVAL);
	assert_null(kq_heap_aligned(4096, 10));
	errno = 0;
	assert_null(kq_heap_alloc(SIZE_MAX - 8));
	assert_int_equal(errno, ENOMEM);
	assert_null(kq_heap_alloc((size_t)1 << 46));	/* 64 TiB */
	assert_int_equal(errno, ENOMEM);
}

/*
 * Blocks passed between threads: a slot holds a block or NULL; whoever
 * empties it (an exchange) checks and frees or resizes the block, whoever
 * fills it (a compare-and-swap from NULL) made the block.  A block keeps
 * its size in its first bytes and the slot's pattern after them.
 */
#define SLOTS	256
static _Atomic(unsigned char *) slot_p[SLOTS];
static atomic_int broken;

static unsigned char *
block_make(unsigned char *p, size_t n, unsigned i)
{
	memcpy(p, &n, sizeof(n));
	fill(p + sizeof(n), n - sizeof(n), i);
	return p;
}

static int
block_intact(const unsigned char *p, unsigned i)
{
	size_t n;

	memcpy(&n, p, sizeof(n));
	return n >= sizeof(n) && n <= 40000 * 21 &&
	    intact(p + sizeof(n), n - sizeof(n), i);
}

static void
churn_slot(uint64_t *s, unsigned i)
{
	unsigned char *p = atomic_exchange(&slot_p[i], NULL), *expect = NULL;
	size_t n = 8 + pick_size(s);

	if (p != NULL) {
		if (!block_intact(p, i))
			atomic_store(&broken, 1);
		if (rnd(s) % 3 != 0) {
			kq_heap_free(p);
			return;
		}
		if ((p = kq_heap_realloc(p, n)) == NULL) {
			atomic_store(&broken, 2);
			return;
		}
	} else {
		p = rnd(s) % 4 == 0 ? kq_heap_aligned(64, n) :
		    kq_heap_alloc(n);
		if (p == NULL) {
			atomic_store(&broken, 3);
			return;
		}
	}
	block_make(p, n, i);
	if (rnd(s) % 4 == 0 ||
	    !atomic_compare_exchange_strong(&slot_p[i], &expect, p))
		kq_heap_free(p);	/* freed by the thread that made it */
}

static void *
churn_thread(void *arg)
{
	uint64_t s = (uintptr_t)arg * 977 + 1;

	for (int k = 0; k < 150000 && !atomic_load(&broken); k++)
		churn_slot(&s, rnd(&s) % SLOTS);
	return NULL;
}

static void
four_threads_never_share_a_block(void **state)
{
	pthread_t t[4];

	(void)state;
	for (uintptr_t i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn_thread,
		    (void *)i), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&broken), 0);
	for (int i = 0; i < SLOTS; i++) {
		unsigned char *p = atomic_exchange(&slot_p[i], NULL);

		if (p != NULL) {
			assert_true(block_intact(p, (unsigned)i));
			kq_heap_free(p);
		}
	}
}

/* The handler's own blocks: allocated, checked and freed inside it. */
static atomic_int handler_runs;

static void
on_alarm(int sig)
{
	static uint64_t s = 99;
	unsigned char *p[4];
	size_t n[4];
	int e = errno;

	(void)sig;
	for (int i = 0; i < 4; i++) {
		n[i] = pick_size(&s);
		p[i] = kq_heap_alloc(n[i]);
		if (p[i] == NULL) {
			atomic_store(&broken, 4);
			return;
		}
		fill(p[i], n[i], 200u + (unsigned)i);
	}
	for (int i = 0; i < 4; i++) {
		if (!intact(p[i], n[i], 200u + (unsigned)i))
			atomic_store(&broken, 5);
		kq_heap_free(p[i]);
	}
	atomic_fetch_add(&handler_runs, 1);
	errno = e;
}

static void
handler_allocating_inside_an_interrupted_call_breaks_nothing(void **state)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 100 }, { 0, 100 } }, off;
	struct timespec t0, t;
	uint64_t s = 5;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int k = 0; k < 2000; k++)
			churn_slot(&s, rnd(&s) % SLOTS);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 2 && !atomic_load(&broken));
	memset(&off, 0, sizeof(off));
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	assert_int_equal(atomic_load(&broken), 0);
	assert_true(atomic_load(&handler_runs) > 0);
	for (int i = 0; i < SLOTS; i++)
		kq_heap_free(atomic_exchange(&slot_p[i], NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_size_holds_its_bytes_and_alignment),
		cmocka_unit_test(reused_block_is_zeroed_by_zalloc),
		cmocka_unit_test(realloc_keeps_the_prefix_growing_and_shrinking),
		cmocka_unit_test(bad_alignment_and_huge_sizes_fail_cleanly),
		cmocka_unit_test(four_threads_never_share_a_block),
		cmocka_unit_test(
		    handler_allocating_inside_an_interrupted_call_breaks_nothing),
	};

	return t_run_group(tests, NULL, NULL);
}
