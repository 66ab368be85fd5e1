/*
 * filter.c -- the table of filter operations, indexed by ~EVFILT_*.
 * A NULL entry is a filter kq does not provide (EINVAL at registration).
 * filter_lookup() (kq_int.h) reads it.
 */
#include <stddef.h>

#include "kq_int.h"

const struct filterops *const kq_sysfilt_ops[KQ_FILTCOUNT] = {
	[~EVFILT_READ] = &fd_read_filtops,
	[~EVFILT_WRITE] = &fd_write_filtops,
	[~EVFILT_EMPTY] = &fd_empty_filtops,
	[~EVFILT_TIMER] = &timer_filtops,
	[~EVFILT_USER] = &user_filtops,
	[~EVFILT_SIGNAL] = &sig_filtops,
	[~EVFILT_PROC] = &proc_filtops,
	[~EVFILT_PROCDESC] = &procdesc_filtops,
	[~EVFILT_VNODE] = &vnode_filtops,
	[~KQ_EVFILT_PORTFD] = &port_fd_filtops,
	[~KQ_EVFILT_PORTUSER] = &port_user_filtops,
	[~KQ_EVFILT_PORTALERT] = &port_alert_filtops,
	[~KQ_EVFILT_PORTFILE] = &port_file_filtops,
	[~KQ_EVFILT_PORTTIMER] = &port_timer_filtops,
};

_Static_assert(sizeof(kq_sysfilt_ops) / sizeof(kq_sysfilt_ops[0]) ==
    KQ_FILTCOUNT, "one slot per FreeBSD filter and per private one");
_Static_assert(sizeof(struct knote) == 64, "a knote is one cache line");
