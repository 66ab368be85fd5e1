/*
 * fault.h -- fault injection for the test build (make SAN=fault, which
 * compiles with -DKQ_FAULT; see tests/fault-sweep.c).
 *
 * Every allocation, every creation of a descriptor of kq's own and the
 * blocking epoll_wait of kevent() go through these names.  Without
 * KQ_FAULT they are the plain calls (macros, no cost).  With it, the k-th
 * call of a kind fails, counting from 1 (fault.c):
 *   KQ_FAULT_ALLOC  malloc, calloc, realloc, aligned_alloc: NULL, ENOMEM;
 *   KQ_FAULT_FD     epoll_create1, eventfd, timerfd_create, inotify_init1,
 *                   pidfd_open, the signal eventfd's dup, the process-
 *                   events socket: -1, EMFILE;
 *   KQ_FAULT_EINTR  the blocking wait of kevent(): -1, EINTR.
 * k is set from the environment (KQ_FAULT_ALLOC=k, KQ_FAULT_FD=k,
 * KQ_FAULT_EINTR=k) at start-up, or by kq_fault_set(), exported by that
 * build only.
 */
#ifndef KQ_FAULT_H
#define KQ_FAULT_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Every block kq allocates is at least KQ_MINSZ bytes, so that kq_free()
 * can thread it onto the graveyard (defer.c).  kq_callocz keeps calloc's
 * overflow check.
 */
#define KQ_MINSZ(n)	((size_t)(n) < 16 ? (size_t)16 : (size_t)(n))

/* heap.c: kq's own allocator, which takes no lock (see there). */
void	*kq_heap_alloc(size_t n);
void	*kq_heap_zalloc(size_t n);
void	*kq_heap_realloc(void *p, size_t n);
void	*kq_heap_aligned(size_t align, size_t n);
void	 kq_heap_free(void *p);

static inline void *
kq_callocz(size_t n, size_t s)
{
	if (n != 0 && s > SIZE_MAX / n) {
		errno = ENOMEM;
		return NULL;
	}
	return kq_heap_zalloc(KQ_MINSZ(n * s));
}

#define KQ_FAULT_ALLOC	0
#define KQ_FAULT_FD	1
#define KQ_FAULT_EINTR	2

#ifdef KQ_FAULT
#include <errno.h>

int	kq_fault_hit(int kind);		/* fault.c: 1 if this call fails */
void	kq_fault_set(int kind, long k);	/* exported in the fault build */
long	kq_fault_count(int kind);	/* calls of kind seen since set */

static inline void *
kq_fault_null(void)
{
	errno = ENOMEM;
	return NULL;
}

#define kq_malloc(n) \
	(kq_fault_hit(KQ_FAULT_ALLOC) ? kq_fault_null() : \
	    kq_heap_alloc(KQ_MINSZ(n)))
#define kq_calloc(n, s) \
	(kq_fault_hit(KQ_FAULT_ALLOC) ? kq_fault_null() : kq_callocz(n, s))
#define kq_realloc(p, n) \
	(kq_fault_hit(KQ_FAULT_ALLOC) ? kq_fault_null() : \
	    kq_heap_realloc(p, KQ_MINSZ(n)))
#define kq_aligned_alloc(a, n) \
	(kq_fault_hit(KQ_FAULT_ALLOC) ? kq_fault_null() : \
	    kq_heap_aligned(a, KQ_MINSZ(n)))
/* expr creates a descriptor: -1 with EMFILE instead when the fault hits. */
#define KQ_FDCALL(expr) \
	(kq_fault_hit(KQ_FAULT_FD) ? (errno = EMFILE, -1) : (expr))
/* At the top of a blocking wait (which returns -errno): fail it with
   EINTR when the fault hits. */
#define KQ_FAULT_WAIT() do { \
	if (kq_fault_hit(KQ_FAULT_EINTR)) \
		return -EINTR; \
} while (0)
#else
#define kq_malloc(n)		kq_heap_alloc(KQ_MINSZ(n))
#define kq_calloc(n, s)		kq_callocz(n, s)
#define kq_realloc(p, n)	kq_heap_realloc(p, KQ_MINSZ(n))
#define kq_aligned_alloc(a, n)	kq_heap_aligned(a, KQ_MINSZ(n))
#define KQ_FDCALL(expr)		(expr)
#define KQ_FAULT_WAIT()		((void)0)
#endif

#endif /* KQ_FAULT_H */
