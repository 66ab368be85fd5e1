/*
 * debug.c -- the failure path of KQ_ASSERT (kq_int.h), built only with
 * -DKQ_DEBUG.  Writes with write(2) only: it may run with kq_lock held, in
 * a fork child, or from a signal handler's context.
 */
#ifdef KQ_DEBUG
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kq_int.h"

void
kq_assert_fail(const char *expr, const char *file, int line)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "libkq: %s:%d: invariant '%s' "
	    "does not hold\n", file, line, expr);

	if (n > 0)
		(void)!write(2, buf, (size_t)n < sizeof(buf) ? (size_t)n :
		    sizeof(buf) - 1);
	abort();
}
#else
typedef int kq_debug_unused;	/* ISO C: no empty translation unit */
#endif
