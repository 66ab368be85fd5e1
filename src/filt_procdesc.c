/*
 * filt_procdesc.c -- EVFILT_PROCDESC: the exit of the process behind a
 * process descriptor.  On Linux the process descriptor is a pidfd
 * (pidfd_open(2), clone(CLONE_PIDFD)), FreeBSD's is a pdfork(2)
 * descriptor.
 *
 * A pidfd polls readable when its process has exited, so the knote takes
 * part in the descriptor's shared epoll registration (fdreg.c) like
 * EVFILT_READ.  As FreeBSD's procdesc_kqops_event: EV_CLEAR is forced on,
 * the exit is reported as NOTE_EXIT with data = the wait(2) status and
 * EV_EOF|EV_ONESHOT, and a knote that did not ask for NOTE_EXIT is dropped
 * silently at exit.  The status of a child comes from waitid(WNOWAIT),
 * which does not reap it; for other processes see kq_proc_status().
 *
 * All hooks run with kq_lock held.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/wait.h>

#include "kq_int.h"
#include "fdreg.h"
#include "kq_proc.h"

/* The pid behind pidfd (its fdinfo's "Pid:"), or 0. */
static pid_t
pidfd_pid(int pidfd)
{
	unsigned long long v;

	return fd_info_field(pidfd, "Pid:", 10, &v) && v > 0 &&
	    v <= INT_MAX ? (pid_t)v : 0;
}

static int
filt_pdattach(struct kqueue *kq, struct knote *kn)
{
	int fd = (int)kn->kn_ident;
	siginfo_t si;

	/* waitid() knows pidfds: EBADF for any other file. */
	memset(&si, 0, sizeof(si));
	if (waitid((idtype_t)KQ_P_PIDFD, (id_t)fd, &si,
	    WEXITED | WNOWAIT | WNOHANG) != 0 && errno != ECHILD)
		return fcntl(fd, F_GETFD) < 0 ? EBADF : EINVAL;
	kn->kn_flags |= EV_CLEAR;	/* as FreeBSD's procdesc_kqfilter */
	return fdreg_attach(kq, kn);
}

static int
filt_procdesc(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	int fd = (int)kn->kn_ident;

	if (hint == 0) {
		int r = fd_poll(fd, POLLIN);

		if (r < 0)
			return -1;
		hint = (uint32_t)r;
	}
	if (!(hint & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return 0;
	if (!(kn->kn_sfflags & NOTE_EXIT))
		return KN_EVDROP;	/* FreeBSD's EV_DROP */
	kn->kn_flags |= EV_EOF | EV_ONESHOT;
	out->flags |= EV_EOF | EV_ONESHOT;
	out->fflags = NOTE_EXIT;
	out->data = kq_proc_status(fd, pidfd_pid(fd), -1);
	return 1;
}

const struct filterops procdesc_filtops = {
	.f_isfd = 1,
	.f_size = sizeof(struct knote),
	.f_attach = filt_pdattach,
	.f_detach = fdreg_detach,
	.f_update = fdreg_update,
	.f_event = filt_procdesc,
};
