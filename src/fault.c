/*
 * fault.c -- the counters behind fault.h (fault-injection build only).
 *
 * One counter and one target per kind.  kq_fault_hit() counts the call and
 * says whether it is the target-th since the target was set (0: never).
 * The counters are atomic, so calls from several threads are counted
 * exactly once each; which thread gets the failure is then a matter of
 * scheduling.
 */
#include "fault.h"

#ifdef KQ_FAULT
#include <stdatomic.h>
#include <stdlib.h>

#include "kq_int.h"

#define KQ_FAULT_KINDS	3

static _Atomic long fault_target[KQ_FAULT_KINDS];
static _Atomic long fault_count[KQ_FAULT_KINDS];

int
kq_fault_hit(int kind)
{
	long k = atomic_load_explicit(&fault_target[kind], memory_order_relaxed);

	if (k <= 0)
		return 0;
	return atomic_fetch_add(&fault_count[kind], 1) + 1 == k;
}

KQ_EXPORT void
kq_fault_set(int kind, long k)
{
	if (kind < 0 || kind >= KQ_FAULT_KINDS)
		return;
	atomic_store(&fault_target[kind], 0);
	atomic_store(&fault_count[kind], 0);
	atomic_store(&fault_target[kind], k);
}

KQ_EXPORT long
kq_fault_count(int kind)
{
	if (kind < 0 || kind >= KQ_FAULT_KINDS)
		return 0;
	return atomic_load(&fault_count[kind]);
}

static void kq_fault_env(void) __attribute__((constructor));

static void
kq_fault_env(void)
{
	static const char *const names[KQ_FAULT_KINDS] = {
		"KQ_FAULT_ALLOC", "KQ_FAULT_FD", "KQ_FAULT_EINTR",
	};
	int i;

	for (i = 0; i < KQ_FAULT_KINDS; i++) {
		const char *v = getenv(names[i]);

		if (v != NULL && *v != '\0')
			kq_fault_set(i, strtol(v, NULL, 10));
	}
}
#else
typedef int kq_fault_unused;	/* ISO C: a translation unit is not empty */
#endif
