/*
 * filter.c -- the table of filter operations, indexed by ~EVFILT_*.
 * A NULL entry is a filter kq does not provide (EINVAL at registration).
 */
#include <stddef.h>

#include "kq_int.h"

static const struct filterops *const sysfilt_ops[EVFILT_SYSCOUNT] = {
	[~EVFILT_READ] = &fd_read_filtops,
	[~EVFILT_WRITE] = &fd_write_filtops,
	[~EVFILT_EMPTY] = &fd_empty_filtops,
	[~EVFILT_TIMER] = &timer_filtops,
	[~EVFILT_USER] = &user_filtops,
	[~EVFILT_SIGNAL] = &sig_filtops,
	[~EVFILT_PROC] = &proc_filtops,
	[~EVFILT_PROCDESC] = &procdesc_filtops,
	[~EVFILT_VNODE] = &vnode_filtops,
};

_Static_assert(sizeof(sysfilt_ops) / sizeof(sysfilt_ops[0]) ==
    EVFILT_SYSCOUNT, "one slot per FreeBSD filter");
_Static_assert(sizeof(struct knote) == 56, "knote is 56 bytes");

const struct filterops *
filter_lookup(int filter)
{
	if (filter >= 0 || filter < -EVFILT_SYSCOUNT)
		return NULL;
	return sysfilt_ops[~filter];
}
