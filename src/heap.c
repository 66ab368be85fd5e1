/*
 * heap.c -- kq's own allocator: every block kq allocates comes from here,
 * never from the C library's malloc().
 *
 * Why: kq allocates while it holds its locks (a kqueue's kq_lock, reg_lock)
 * -- a knote, a larger hash, a claim bitmap -- and close(), which programs
 * call from signal handlers, takes those locks.  With malloc() under them
 * two threads could deadlock: one holds reg_lock and waits in malloc() for
 * an arena lock that the other holds, interrupted by a signal whose handler
 * calls close() and waits for reg_lock (a handler-closing churn of four
 * threads hung about one run in eight, tests/attack/a16).  Nothing here
 * takes a lock, so a holder of kq's locks never waits for anything a
 * handler could be sitting on, and the calls are async-signal-safe.
 *
 * Small blocks (up to HEAP_SMALL bytes with the header) come in eight
 * power-of-two classes, each a lock-free stack of free blocks carved from
 * 64 KiB chunks that are never unmapped.  A stack's head is one 64-bit
 * word: a block's index (its chunk's number and its place in the chunk,
 * 0 for none) and a tag that every change bumps, so a compare-and-swap
 * that read the head before another thread (or a handler on this one)
 * popped and pushed the same block fails (ABA needs 2^32 changes while
 * one thread is between its load and its swap).  A popped block's link is
 * read from its header, which only pushes write, from memory that stays
 * mapped: the read of a block another thread has just taken is harmless.
 * Larger blocks are mappings of their own (mremap() grows them).
 *
 * Every block starts with a 16-byte header: its class (or HEAP_LARGE and
 * the mapping's length), and while free, the stack's link.  An aligned
 * block (kq_aligned_alloc, alignment up to HEAP_MAXALIGN) is a larger one
 * with a second header before the aligned address that gives the offset
 * back to the first.
 *
 * Memory of the small classes goes back to the stacks, not to the
 * kernel: what kq holds is bounded by its peak.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "kq_int.h"
#include "fault.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define HEAP_POISON(p, n)	ASAN_POISON_MEMORY_REGION(p, n)
#define HEAP_UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION(p, n)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define HEAP_POISON(p, n)	ASAN_POISON_MEMORY_REGION(p, n)
#define HEAP_UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION(p, n)
#endif
#endif
#ifndef HEAP_POISON
#define HEAP_POISON(p, n)	((void)(p), (void)(n))
#define HEAP_UNPOISON(p, n)	((void)(p), (void)(n))
#endif
/*
 * ThreadSanitizer does not intercept mremap(): the pages a grown block
 * moved to keep the history of the block that was unmapped there last,
 * and it reports races between the two owners.  Under it a large block
 * grows by a copy.
 */
#if defined(__SANITIZE_THREAD__)
#define HEAP_COPY_LARGE	1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HEAP_COPY_LARGE	1
#endif
#endif
#ifndef HEAP_COPY_LARGE
#define HEAP_COPY_LARGE	0
#endif

#define HEAP_HDR	16u		/* header bytes before every block */
#define HEAP_MINSHIFT	5		/* the smallest class: 32 bytes */
#define HEAP_NCLASS	8		/* 32 .. 4096 */
#define HEAP_SMALL	(1u << (HEAP_MINSHIFT + HEAP_NCLASS - 1))
#define HEAP_CHUNK	65536u		/* bytes carved at a time */
#define HEAP_MAXCHUNK	65536u		/* 4 GiB of small blocks */
#define HEAP_LARGE	0xffffu		/* the class of a mapping */
#define HEAP_ALIGNED	0xfffeu		/* an aligned block's inner header */
#define HEAP_MAXALIGN	64u

struct heap_hdr {
	uint16_t	h_class;	/* class, HEAP_LARGE or HEAP_ALIGNED */
	uint16_t	h_pad;
	uint32_t	h_off;		/* a small block: its own index;
					   HEAP_ALIGNED: bytes back to the
					   block */
	_Atomic uint32_t h_next;	/* while free: the next block's index */
	uint32_t	h_len;		/* HEAP_LARGE: mapping length / 4096 */
};
_Static_assert(sizeof(struct heap_hdr) == HEAP_HDR, "16-byte header");

static _Atomic uint64_t heap_head[HEAP_NCLASS];	/* tag << 32 | index */
static _Atomic(char *) heap_chunks[HEAP_MAXCHUNK];
static _Atomic uint32_t heap_nchunks;

/* A block's index: its chunk's number, then its place in 16-byte units
   (plus one: 0 is no block). */
static inline char *
heap_block(uint32_t idx)
{
	idx--;
	return atomic_load_explicit(&heap_chunks[idx >> 12],
	    memory_order_acquire) + (size_t)(idx & 0xfff) * HEAP_HDR;
}

static inline uint32_t
heap_index(uint32_t chunk, size_t off)
{
	return (chunk << 12 | (uint32_t)(off / HEAP_HDR)) + 1;
}

static int
heap_class(size_t total)
{
	int c = 0;

	while (((size_t)1 << (HEAP_MINSHIFT + c)) < total)
		c++;
	return c;
}

/* Push the chain first..last (linked already) on class c's stack. */
static void
heap_push(int c, uint32_t first, char *last)
{
	struct heap_hdr *lh = (struct heap_hdr *)(void *)last;
	uint64_t h = atomic_load_explicit(&heap_head[c], memory_order_relaxed);
	uint64_t nh;

	do {
		atomic_store_explicit(&lh->h_next, (uint32_t)h,
		    memory_order_relaxed);
		nh = ((h >> 32) + 1) << 32 | first;
	} while (!atomic_compare_exchange_weak_explicit(&heap_head[c], &h, nh,
	    memory_order_release, memory_order_relaxed));
}

/* A block of class c off its stack, or NULL if the stack is empty. */
static char *
heap_pop(int c)
{
	uint64_t h = atomic_load_explicit(&heap_head[c], memory_order_acquire);

	for (;;) {
		uint32_t idx = (uint32_t)h;
		struct heap_hdr *b;
		uint64_t nh;

		if (idx == 0)
			return NULL;
		b = (struct heap_hdr *)(void *)heap_block(idx);
		nh = ((h >> 32) + 1) << 32 | atomic_load_explicit(&b->h_next,
		    memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(&heap_head[c], &h,
		    nh, memory_order_acquire, memory_order_acquire))
			return (char *)b;
	}
}

/*
 * A new chunk for class c: one block for the caller, the rest pushed.
 * NULL when the chunk table is full or mmap() fails.  The chunk is mapped
 * before it takes a number, so only a mapped chunk uses one up: while
 * mmap() fails (RLIMIT_AS, RLIMIT_DATA, overcommit, the map count) every
 * refill fails, and numbers taken first would run out for good, leaving
 * every small block a mapping of its own.  A chunk that finds the table
 * full (another thread took the last number) is unmapped unpublished.
 */
static char *
heap_refill(int c)
{
	size_t bs = (size_t)1 << (HEAP_MINSHIFT + c), off;
	uint32_t n = atomic_load_explicit(&heap_nchunks, memory_order_relaxed);
	char *base;

	if (n >= HEAP_MAXCHUNK)
		return NULL;
	base = mmap(NULL, HEAP_CHUNK, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	do
		if (n >= HEAP_MAXCHUNK) {
			(void)munmap(base, HEAP_CHUNK);
			return NULL;
		}
	while (!atomic_compare_exchange_weak_explicit(&heap_nchunks, &n, n + 1,
	    memory_order_relaxed, memory_order_relaxed));
	atomic_store_explicit(&heap_chunks[n], base, memory_order_release);
	for (off = 0; off < HEAP_CHUNK; off += bs) {
		struct heap_hdr *b = (struct heap_hdr *)(void *)(base + off);

		b->h_class = (uint16_t)c;
		b->h_off = heap_index(n, off);	/* its own, for the free */
		if (off + bs < HEAP_CHUNK)
			atomic_store_explicit(&b->h_next,
			    heap_index(n, off + bs), memory_order_relaxed);
		if (off > 0)
			HEAP_POISON(base + off + HEAP_HDR, bs - HEAP_HDR);
	}
	if (HEAP_CHUNK > bs)
		heap_push(c, heap_index(n, bs), base + HEAP_CHUNK - bs);
	return base;
}

static void *
heap_large(size_t total)
{
	size_t len = (total + 4095) & ~(size_t)4095;
	struct heap_hdr *b;

	if (len < total || len / 4096 > UINT32_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	b = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	b->h_class = HEAP_LARGE;
	b->h_len = (uint32_t)(len / 4096);
	return (char *)b + HEAP_HDR;
}

/* n bytes, 16-byte aligned; fresh == 1 when known zeroed. */
static void *
heap_get(size_t n, int *fresh)
{
	size_t total = n + HEAP_HDR;
	char *b;
	int c;

	*fresh = 0;
	if (total < n) {
		errno = ENOMEM;
		return NULL;
	}
	if (total <= HEAP_SMALL) {
		c = heap_class(total);
		if ((b = heap_pop(c)) == NULL && (b = heap_refill(c)) != NULL)
			*fresh = 1;
		if (b != NULL) {
			HEAP_UNPOISON(b + HEAP_HDR, n);
			return b + HEAP_HDR;
		}
		/* No chunk: a mapping of its own serves as well. */
	}
	*fresh = 1;
	return heap_large(total);
}

void *
kq_heap_alloc(size_t n)
{
	int fresh;

	return heap_get(n, &fresh);
}

void *
kq_heap_zalloc(size_t n)
{
	int fresh;
	void *p = heap_get(n, &fresh);

	if (p != NULL && !fresh)
		memset(p, 0, n);
	return p;
}

static struct heap_hdr *
heap_hdr(void *p)
{
	return (struct heap_hdr *)(void *)((char *)p - HEAP_HDR);
}

void
kq_heap_free(void *p)
{
	struct heap_hdr *b;
	int c;

	if (p == NULL)
		return;
	b = heap_hdr(p);
	if (b->h_class == HEAP_ALIGNED)
		b = heap_hdr((char *)p - b->h_off);
	if (b->h_class == HEAP_LARGE) {
		(void)munmap(b, (size_t)b->h_len * 4096);
		return;
	}
	c = b->h_class;
	KQ_ASSERT(c < HEAP_NCLASS);
	HEAP_POISON((char *)b + HEAP_HDR,
	    ((size_t)1 << (HEAP_MINSHIFT + c)) - HEAP_HDR);
	heap_push(c, b->h_off, (char *)b);
}

/* The usable size of block p (of an aligned one: from p on). */
static size_t
heap_usable(void *p)
{
	struct heap_hdr *b = heap_hdr(p);

	if (b->h_class == HEAP_ALIGNED)
		return heap_usable((char *)p - b->h_off) - b->h_off;
	if (b->h_class == HEAP_LARGE)
		return (size_t)b->h_len * 4096 - HEAP_HDR;
	return ((size_t)1 << (HEAP_MINSHIFT + b->h_class)) - HEAP_HDR;
}

void *
kq_heap_realloc(void *p, size_t n)
{
	struct heap_hdr *b;
	size_t have;
	void *q;

	if (p == NULL)
		return kq_heap_alloc(n);
	b = heap_hdr(p);
	have = heap_usable(p);
	/* In place if it fits (a mapping unless it shrinks by half); an
	   aligned block that does not fit moves to a plain one. */
	if (n <= have && (b->h_class != HEAP_LARGE || n > have / 2)) {
		HEAP_UNPOISON(p, n);
		return p;
	}
	if (b->h_class == HEAP_LARGE && n + HEAP_HDR > HEAP_SMALL &&
	    !HEAP_COPY_LARGE) {
		size_t len = (n + HEAP_HDR + 4095) & ~(size_t)4095;
		char *nb;

		if (len < n || len / 4096 > UINT32_MAX) {
			errno = ENOMEM;
			return NULL;
		}
		nb = mremap(b, (size_t)b->h_len * 4096, len, MREMAP_MAYMOVE);
		if (nb == MAP_FAILED) {
			errno = ENOMEM;
			return NULL;
		}
		((struct heap_hdr *)(void *)nb)->h_len = (uint32_t)(len / 4096);
		return nb + HEAP_HDR;
	}
	if ((q = kq_heap_alloc(n)) == NULL)
		return NULL;
	HEAP_UNPOISON(p, have);	/* past what was asked: copied */
	memcpy(q, p, n < have ? n : have);
	kq_heap_free(p);
	return q;
}

void *
kq_heap_aligned(size_t align, size_t n)
{
	char *p, *a;
	struct heap_hdr *h;

	if (align <= HEAP_HDR)
		return kq_heap_alloc(n);
	if (align > HEAP_MAXALIGN || (align & (align - 1)) != 0 ||
	    n + align < n) {
		errno = EINVAL;
		return NULL;
	}
	if ((p = kq_heap_alloc(n + align)) == NULL)
		return NULL;
	a = (char *)(((uintptr_t)p + HEAP_HDR + align - 1) &
	    ~(uintptr_t)(align - 1));
	h = heap_hdr(a);
	HEAP_UNPOISON(h, HEAP_HDR);
	h->h_class = HEAP_ALIGNED;
	h->h_off = (uint32_t)(a - p);
	return a;
}
