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
 * FreeBSD records the exit in the knote when it happens, with the fflags
 * of that moment, disabled or not; a later change (EV_ENABLE with fflags 0,
 * say) does not undo it.  kq notices the exit when it looks: at a
 * collection, or before a change replaces the fflags (f_modify).
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
#include "ksys.h"
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

#define PD_EXITED	0x01	/* the exit was recorded (pd_fflags, pd_data) */
#define PD_PRIOR	0x02	/* had exited when the knote was added */

struct pdnote {
	struct knote	pd_kn;
	uint32_t	pd_state;	/* PD_* */
	uint32_t	pd_fflags;	/* NOTE_EXIT if it was asked for then */
	int64_t		pd_data;	/* the exit status */
};

#define PD(kn)	((struct pdnote *)(void *)(kn))

/* Is fd a pidfd?  waitid() knows them: EBADF/EINVAL for other files. */
static int
pd_is_pidfd(int fd)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return kq_nc_waitid(KQ_P_PIDFD, fd, &si,
	    WEXITED | WNOWAIT | WNOHANG) == 0 || errno == ECHILD;
}

/* Do the epoll events of a pidfd say that its process exited? */
static int
pd_exit_hint(uint32_t events)
{
	return (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0;
}

/* Has the process behind pidfd fd exited? */
static int
pd_exited(int fd)
{
	int r = fd_poll(fd, POLLIN);

	return r > 0 && pd_exit_hint((uint32_t)r);
}

/* Record the exit under the fflags in force now (procdesc_kqops_event). */
static void
pd_record_exit(struct pdnote *pd)
{
	struct knote *kn = &pd->pd_kn;
	int fd = (int)kn->kn_ident;

	pd->pd_state |= PD_EXITED;
	if (kn->kn_sfflags & NOTE_EXIT) {
		pd->pd_fflags = NOTE_EXIT;
		pd->pd_data = kq_proc_status(fd, pidfd_pid(fd), -1);
	}
}

static int
filt_pdattach(struct kqueue *kq, struct knote *kn)
{
	struct pdnote *pd = PD(kn);
	int fd = (int)kn->kn_ident;

	if (!pd_is_pidfd(fd))
		return fcntl(fd, F_GETFD) < 0 ? EBADF : EINVAL;
	pd->pd_state = pd_exited(fd) ? PD_PRIOR : 0;
	pd->pd_fflags = 0;
	pd->pd_data = 0;
	kn->kn_flags |= EV_CLEAR;	/* as FreeBSD's procdesc_kqfilter */
	return fdreg_attach(kq, kn);
}

/*
 * A change replaces the fflags.  An exit that happened since the knote was
 * added is recorded first, under the old ones (an exit that predates the
 * knote was never an event on FreeBSD: the next look judges it).
 */
static int
filt_pdmodify(struct kqueue *kq, struct knote *kn, const struct kevent *kev)
{
	struct pdnote *pd = PD(kn);
	int fd = (int)kn->kn_ident;

	(void)kq;
	if ((kn->kn_status & KN_ATTACHED) &&
	    !(pd->pd_state & (PD_EXITED | PD_PRIOR)) && pd_exited(fd) &&
	    pd_is_pidfd(fd))
		pd_record_exit(pd);
	kn->kn_sfflags = kev->fflags;
	kn->kn_sdata = kn_clamp32(kev->data);
	return 0;
}

static int
filt_procdesc(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	struct pdnote *pd = PD(kn);
	int fd = (int)kn->kn_ident;

	if (hint == 0) {
		int r = fd_poll(fd, POLLIN);

		if (r < 0)
			return -1;
		hint = (uint32_t)r;
	}
	if (!(pd->pd_state & PD_EXITED)) {
		if (!pd_exit_hint(hint))
			return 0;
		pd_record_exit(pd);
	}
	if (pd->pd_fflags == 0)
		return KN_EVDROP;	/* FreeBSD's EV_DROP */
	kn->kn_flags |= EV_EOF | EV_ONESHOT;
	out->flags |= EV_EOF | EV_ONESHOT;
	out->fflags = pd->pd_fflags;
	out->data = pd->pd_data;
	return 1;
}

const struct filterops procdesc_filtops = {
	.f_isfd = 1,
	.f_size = sizeof(struct pdnote),
	.f_attach = filt_pdattach,
	.f_detach = fdreg_detach,
	.f_modify = filt_pdmodify,
	.f_update = fdreg_update,
	.f_event = filt_procdesc,
};
