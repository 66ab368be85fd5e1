/*
 * filt_proc.c -- EVFILT_PROC: events of a process named by its pid.
 *
 * Sources:
 *   - every knote holds a pidfd of its process, registered edge-triggered
 *     in the epoll set (kq_knsrc_add); it becomes readable when the
 *     process exits.  This needs no privilege, pins the process (a reused
 *     pid is never mistaken for it) and gives NOTE_EXIT.  The status in
 *     wait(2) format comes from waitid(WNOWAIT) for a child (which is
 *     left to be reaped by the application), otherwise best effort (see
 *     proc_status);
 *   - NOTE_FORK, NOTE_EXEC and NOTE_TRACK need the kernel's process event
 *     multicast, the netlink proc connector: one socket per kqueue,
 *     created the first time a knote asks for one of them (slot
 *     KQ_SRC_PROC).  Linux lets only CAP_NET_ADMIN listen to it; without
 *     it EV_ADD fails with EPERM.
 *
 * Semantics follow FreeBSD's filt_proc and knote_fork: EV_CLEAR is forced
 * on; at exit the knote reports its pending fflags with EV_EOF|EV_ONESHOT,
 * data being the status when NOTE_EXIT was asked for, and is dropped
 * silently when nothing is pending (EV_DROP).  NOTE_TRACK registers a knote
 * for each child forked by a tracked process, with the parent's fflags and
 * udata, on which a NOTE_CHILD event with data = parent pid is reported.
 * FreeBSD uses two knotes for the child (a one-shot NOTE_CHILD one and the
 * tracking one, since both use data); kq keeps one knote per (pid, filter)
 * and reports the NOTE_CHILD notice first, on its own, and the child's own
 * events (NOTE_EXEC, NOTE_EXIT with the status ...) in a later event, so
 * the sequence of events is FreeBSD's.
 *
 * The connector reports events asynchronously; ordering on the socket is
 * the kernel's, and a child's fork event always precedes the child's own
 * events, so a tracked child's exec or fork is not missed.  A tracked
 * child that was already reaped when its fork event is read has no pidfd
 * any more: its knote is then driven by the connector alone (its exit
 * event carries the status).  Messages lost
 * to a full socket buffer (ENOBUFS) set NOTE_TRACKERR on every tracking
 * knote.  Events older than a knote (timestamp before its registration)
 * are not reported on it.
 *
 * As FreeBSD's filt_proc, an event is recorded in the knote under the
 * fflags in force when it happens, whether the knote is disabled or not,
 * and a later change of fflags does not undo it: filt_procmodify catches
 * up with the process before a change replaces them.
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
#include <time.h>
#include <unistd.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kq_int.h"
#include "ksys.h"
#include "fault.h"
#include "kq_proc.h"

#define PN_EXITED	0x01	/* the process exited (pidfd readable) */
#define PN_CHILD	0x02	/* NOTE_CHILD notice to report */
#define PN_CHILDOUT	0x04	/* the last delivery was that notice */
#define PN_CNEXIT	0x08	/* the connector reported the exit */
#define PN_EXITWAIT	0x10	/* exited; its status is on the connector */
#define PN_ZOMBIE	0x20	/* had exited when it was registered */
#define PN_DRAINED	0x40	/* NOTE_TRACK: forks read before the exit */
#define PN_CNPART	0x80	/* PN_CNEXIT came while the process ran: a
				   later exit of its threads has the status */
#define PN_CNONLY	0x100	/* NOTE_TRACK child reaped before its fork
				   was read: no pidfd, the connector alone */

struct procnote {
	struct knote	pn_kn;
	int		pn_pidfd;
	uint32_t	pn_fflags;	/* events seen, not yet delivered */
	uint32_t	pn_state;	/* PN_* */
	int		pn_cnstatus;	/* exit code from the connector */
	int64_t		pn_data;	/* the exit status */
	int64_t		pn_ppid;	/* NOTE_CHILD: the parent */
	uint64_t	pn_since;	/* connector events before this
					   (CLOCK_MONOTONIC ns) predate it */
	uint64_t	pn_exitts;	/* PN_CNEXIT: the exit's time; events
					   after it are of a process that
					   reused the pid */
	uint64_t	pn_opened;	/* when the pidfd was opened */
	uint64_t	pn_reusets;	/* PN_CNEXIT or PN_CNONLY: when a
					   process was forked under the pid
					   after the exit (0: no such fork
					   read) */
	int64_t		pn_waituntil;	/* PN_EXITWAIT: when it stops waiting */
};

#define PN(kn)		((struct procnote *)(void *)(kn))
#define NOTE_NEEDCN	(NOTE_FORK | NOTE_EXEC | NOTE_TRACK)
#define CN_RCVBUF	(4 << 20)
/*
 * How long an exit awaits its status from the connector (PN_EXITWAIT).
 * The message follows the pidfd's wake-up by microseconds, unless the
 * exiting task is preempted in between -- on a loaded machine for more
 * than 100 ms (attack helper 53: with 100 ms, 21 of 100 runs of the
 * pthread_exit test took the leader's 0 on a machine at load 20; with
 * 3 s, 0 of 160) -- and a message the kernel dropped (the socket's
 * buffer full, ENOBUFS reported before the exit was seen) never comes.
 * Past this, once kq has read the connector to its end or to messages
 * stamped later than this, the exit is reported with the best status
 * left (kq_proc_exitwait).  Only a lost message waits it out.
 */
#define PN_CNWAIT_NS	(2000 * 1000000LL)
#define CN_BATCH	64	/* datagrams read per wake-up */
/*
 * The connector's receive buffer, on the heap (the source's ks_arg, made
 * with the socket, freed by proc_cn_fini): it is read during a kevent()
 * collection, possibly under another kqueue's (kq_absorb), on a thread
 * whose stack may be PTHREAD_STACK_MIN.  CN_SMALLBUF, on the stack, only
 * if the source had none (which does not happen; one event's message is
 * about 100 bytes).
 */
#define CN_BUFSZ	16384
#define CN_SMALLBUF	256

int
kq_pidfd_open(pid_t pid)
{
	return (int)KQ_FDCALL(syscall(SYS_pidfd_open, pid, 0));
}

/* Has the process behind pidfd exited?  (Readable pidfd.) */
int
kq_pidfd_exited(int pidfd)
{
	int r = fd_poll(pidfd, POLLIN);

	return r > 0 && (r & (EPOLLIN | EPOLLHUP)) != 0;
}

/* waitid()'s report of a terminated child in wait(2) format. */
static int64_t
si_to_status(const siginfo_t *si)
{
	switch (si->si_code) {
	case CLD_EXITED:
		return (int64_t)((si->si_status & 0xff) << 8);
	case CLD_KILLED:
		return (int64_t)(si->si_status & 0x7f);
	case CLD_DUMPED:
		return (int64_t)((si->si_status & 0x7f) | 0x80);
	default:
		return 0;
	}
}

/*
 * The kernel's struct pidfd_info (PIDFD_GET_INFO, Linux 6.13; exit_code
 * with PIDFD_INFO_EXIT since 6.15), first version (64 bytes).
 */
struct kq_pidfd_info {
	uint64_t	mask;
	uint64_t	cgroupid;
	uint32_t	pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid;
	uint32_t	fsuid, fsgid;
	int32_t		exit_code;
};
#define KQ_PIDFD_GET_INFO	_IOWR(0xFF, 11, struct kq_pidfd_info)
#define KQ_PIDFD_INFO_EXIT	(1ULL << 3)

_Static_assert(sizeof(struct kq_pidfd_info) == 64, "PIDFD_INFO_SIZE_VER0");

/* The exit_code field (52) of /proc/<pid>/stat while pid is a zombie. */
static int
proc_stat_status(pid_t pid, int64_t *status)
{
	char path[64], buf[1024], *p;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (kq_read_proc(path, buf, sizeof(buf)) == 0)
		return 0;
	p = strrchr(buf, ')');		/* the command may hold anything */
	if (p == NULL || p[1] != ' ' || (p[2] != 'Z' && p[2] != 'X'))
		return 0;
	for (field = 2, p++; *p != 0 && field < 52; p++)
		if (*p == ' ')
			field++;
	if (field != 52)
		return 0;
	*status = strtol(p, NULL, 10);
	return 1;
}

/*
 * The wait(2)-format status of the exited process behind pidfd.  A child
 * is asked with waitid(WNOWAIT), which leaves it to be reaped.  For any
 * other process Linux keeps the status only for the parent: PIDFD_GET_INFO
 * has it once the process was reaped (Linux 6.15), /proc/<pid>/stat while
 * it is a zombie, the connector if it is open and saw the exit; else 0.
 * cnstatus < 0: the connector did not see it.
 */
int64_t
kq_proc_status(int pidfd, pid_t pid, int cnstatus)
{
	siginfo_t si;
	struct kq_pidfd_info info;
	int64_t st;

	memset(&si, 0, sizeof(si));
	if (pidfd >= 0 && kq_nc_waitid(KQ_P_PIDFD, pidfd, &si,
	    WEXITED | WNOWAIT | WNOHANG) == 0 && si.si_pid != 0)
		return si_to_status(&si);
	memset(&info, 0, sizeof(info));
	info.mask = KQ_PIDFD_INFO_EXIT;
	if (pidfd >= 0 && ioctl(pidfd, KQ_PIDFD_GET_INFO, &info) == 0 &&
	    (info.mask & KQ_PIDFD_INFO_EXIT))
		return info.exit_code;
	if (cnstatus >= 0)
		return cnstatus;
	if (pidfd >= 0 && pid > 0 && proc_stat_status(pid, &st))
		return st;
	return 0;
}

/*
 * Note that the process exited, once; take the status if it is wanted
 * (status >= 0: already known, in wait(2) format; -1: look it up).
 */
static void
proc_mark_exit(struct procnote *pn, int64_t status)
{
	struct knote *kn = &pn->pn_kn;

	if (pn->pn_state & PN_EXITED)
		return;
	pn->pn_state |= PN_EXITED;
	/* PN_EXITWAIT: the exit was seen while NOTE_EXIT was asked for
	   (not so for PN_CNONLY: filt_procattach_made). */
	if ((kn->kn_sfflags & NOTE_EXIT) ||
	    (pn->pn_state & (PN_EXITWAIT | PN_CNONLY)) == PN_EXITWAIT) {
		pn->pn_fflags |= NOTE_EXIT;
		pn->pn_data = status >= 0 ? status :
		    kq_proc_status(pn->pn_pidfd, (pid_t)kn->kn_ident,
		    (pn->pn_state & PN_CNEXIT) ? pn->pn_cnstatus : -1);
	}
}

/*
 * Should the exit of pn (its pidfd just became readable) wait for the
 * connector's exit event, which carries the status?  Linux keeps the
 * status of a process only for its parent, and the kernel sends the
 * connector's event just after it makes the pidfd readable (do_exit:
 * exit_notify, then proc_exit_connector), so reading the status at once
 * races with the parent's reaping.  Wait when the status is wanted, the
 * connector is open, the process is not our child, and it exited after
 * the knote was registered (so the event is not filtered as older).
 */
static int
proc_await_cn(struct kqueue *kq, struct procnote *pn, int64_t *status)
{
	siginfo_t si;

	*status = -1;
	if (!(pn->pn_kn.kn_sfflags & NOTE_EXIT) ||
	    (pn->pn_state & PN_ZOMBIE) ||
	    (pn->pn_state & (PN_CNEXIT | PN_CNPART)) == PN_CNEXIT ||
	    kq->kq_src[KQ_SRC_PROC].ks_ready == NULL)
		return 0;
	memset(&si, 0, sizeof(si));
	if (kq_nc_waitid(KQ_P_PIDFD, pn->pn_pidfd, &si,
	    WEXITED | WNOWAIT | WNOHANG) != 0 || si.si_pid == 0)
		return 1;
	*status = si_to_status(&si);	/* our child: exact, keep it */
	return 0;
}

/*
 * The exit of pn's process awaits its status from the connector until
 * when (PN_EXITWAIT); kq_proc_exitwait ends the wait.
 */
static void
proc_await(struct kqueue *kq, struct procnote *pn, int64_t when)
{
	pn->pn_state |= PN_EXITWAIT;
	pn->pn_waituntil = when;
	if (kq->kq_exitwait == 0 || when < kq->kq_exitwait) {
		kq->kq_exitwait = when;
		kq_timer_wake(kq);
	}
}

/*
 * Has the process of pn exited (and may that be reported)?  While the
 * status is awaited from the connector (PN_EXITWAIT) the answer is no;
 * proc_cn_handle or proc_cn_lost finish the exit.
 */
static int
proc_check_exit(struct kqueue *kq, struct procnote *pn)
{
	int64_t status;

	if (!(pn->pn_state & (PN_EXITED | PN_EXITWAIT)) &&
	    pn->pn_pidfd >= 0 && kq_pidfd_exited(pn->pn_pidfd)) {
		if (proc_await_cn(kq, pn, &status))
			proc_await(kq, pn, kq_now_ns() + PN_CNWAIT_NS);
		else
			proc_mark_exit(pn, status);
	}
	return (pn->pn_state & PN_EXITED) != 0;
}

/* Report kn when something is pending and it is enabled. */
static void
proc_wake(struct kqueue *kq, struct procnote *pn)
{
	if (!(pn->pn_kn.kn_status & KN_DISABLED) &&
	    (pn->pn_fflags != 0 || (pn->pn_state & (PN_CHILD | PN_EXITED))))
		knote_enqueue(kq, &pn->pn_kn);
}

/* ------------------------------------------------------------------ */
/* The proc connector                                                 */
/* ------------------------------------------------------------------ */

/* One request to the connector: PROC_CN_MCAST_LISTEN or _IGNORE. */
static int
proc_cn_send(int fd, uint32_t seq, enum proc_cn_mcast_op op)
{
	union {
		char	buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(op))];
		struct nlmsghdr nh;
	} m;
	struct cn_msg *cn;

	memset(&m, 0, sizeof(m));
	m.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(op));
	m.nh.nlmsg_type = NLMSG_DONE;
	m.nh.nlmsg_pid = 0;
	cn = NLMSG_DATA(&m.nh);
	cn->id.idx = CN_IDX_PROC;
	cn->id.val = CN_VAL_PROC;
	cn->seq = seq;
	cn->ack = seq;		/* the answer carries ack = seq + 1 */
	cn->len = sizeof(op);
	memcpy(cn->data, &op, sizeof(op));
	return kq_nc_send(fd, &m, m.nh.nlmsg_len, MSG_NOSIGNAL) < 0 ?
	    errno : 0;
}

/*
 * Read one datagram of the connector into buf.  Returns its length, 0 for
 * a datagram to skip (not the kernel's), -1 with errno.
 */
static ssize_t
proc_cn_recv(int fd, void *buf, size_t len)
{
	struct sockaddr_nl from;
	socklen_t flen = sizeof(from);
	ssize_t n = kq_nc_recvfrom(fd, buf, len, 0, &from, &flen);

	if (n < 0)
		return -1;
	if (flen < sizeof(from) || from.nl_pid != 0)
		return 0;	/* only the kernel speaks here */
	return n;
}

/* Iterate over the proc_events of one datagram. */
#define CN_FOREACH(nh, buf, n)						\
	for (nh = (struct nlmsghdr *)(void *)(buf); NLMSG_OK(nh, n);	\
	    nh = NLMSG_NEXT(nh, n))

/*
 * The proc_event of one message, copied out: it follows the 20-byte
 * cn_msg header, so it is not 8-byte aligned in the datagram.
 */
static int
proc_cn_event(const struct nlmsghdr *nh, struct proc_event *ev,
    uint32_t *ack)
{
	const struct cn_msg *cn;

	if (nh->nlmsg_type == NLMSG_ERROR || nh->nlmsg_type == NLMSG_NOOP ||
	    nh->nlmsg_len < NLMSG_LENGTH(sizeof(*cn) +
	    sizeof(struct proc_event)))
		return 0;
	cn = NLMSG_DATA(nh);
	if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC ||
	    cn->len < sizeof(struct proc_event))
		return 0;
	memcpy(ev, cn->data, sizeof(*ev));
	*ack = cn->ack;
	return 1;
}

static struct procnote *
proc_lookup(struct kqueue *kq, uint32_t pid)
{
	return (struct procnote *)(void *)knote_lookup(kq, (uintptr_t)pid,
	    EVFILT_PROC, 0);
}

/*
 * NOTE_TRACK: the process of pn forked child (at time ts).  Register a
 * knote for the child as FreeBSD's knote_fork does, with the parent's
 * fflags, flags and udata, and queue the NOTE_CHILD notice on it.
 */
static int
proc_track(struct kqueue *kq, struct procnote *pn, uint32_t child,
    uint64_t ts)
{
	struct knote *kn = &pn->pn_kn;
	struct procnote *cpn = proc_lookup(kq, child);
	struct kevent kev;
	int e;

	if (cpn == NULL) {
		EV_SET(&kev, child, EVFILT_PROC, EV_ADD | EV_FLAG1 |
		    (kn->kn_flags & (EV_ONESHOT | EV_DISPATCH | EV_CLEAR)),
		    kn->kn_sfflags, 0, kn->kn_udata);
		e = kq_register(kq, &kev);
		if (e != 0)
			return e;
		cpn = proc_lookup(kq, child);
		if (cpn == NULL)
			return ESRCH;
		cpn->pn_since = ts;	/* the child's events follow its fork */
	}
	/* An existing knote (the application was quicker) gets the notice. */
	cpn->pn_state |= PN_CHILD;
	cpn->pn_ppid = (int64_t)kn->kn_ident;
	proc_wake(kq, cpn);
	return 0;
}

/*
 * Is an event stamped ts, for pn's pid, another process's?  Not before
 * the connector reported the exit of pn's thread-group leader: its other
 * threads may live on (the leader called pthread_exit) and fork, even
 * when kq reads that only after the whole process is gone (attack helper
 * 29's P4; the fork read late was taken for a new process's).  After it,
 * once a fork made a new process under the pid (pn_reusets): every event
 * from then on is the new process's.  With no such fork read (it may
 * have been lost with a dropped message), a pidfd opened after that exit
 * may name a process that reused the pid (a tracked child kq attached
 * late: helper 30's F2): its events are taken for that process's.  A
 * connector-only knote (PN_CNONLY) has no pidfd: only a fork under its
 * pid read after its own (pn_reusets) tells.
 */
static int
proc_reused(const struct procnote *pn, uint64_t ts)
{
	if ((pn->pn_state & PN_CNONLY) && pn->pn_reusets != 0)
		return ts > pn->pn_reusets;
	if (!(pn->pn_state & PN_CNEXIT) || ts <= pn->pn_exitts)
		return 0;
	if (pn->pn_reusets != 0)
		return ts > pn->pn_reusets;
	return pn->pn_pidfd >= 0 && pn->pn_opened > pn->pn_exitts;
}

static void
proc_cn_handle(struct kqueue *kq, const struct proc_event *ev)
{
	struct procnote *pn;
	uint64_t ts = ev->timestamp_ns;

	switch (ev->what) {
	case PROC_EVENT_FORK:
		/* Processes only: a new thread shares its creator's tgid. */
		if (ev->event_data.fork.child_pid !=
		    ev->event_data.fork.child_tgid)
			return;
		/*
		 * A new process under the pid of one that exited: that one
		 * is gone for good (a pid is reused once its process was
		 * reaped), whatever its pidfd, which may have been opened
		 * on the new one (a tracked child attached late: attack
		 * helper 32's D4), says.
		 */
		pn = proc_lookup(kq, ev->event_data.fork.child_tgid);
		if (pn != NULL && (pn->pn_state & PN_CNEXIT) &&
		    ts > pn->pn_exitts && pn->pn_reusets == 0) {
			pn->pn_reusets = ts;
			if (!(pn->pn_state & PN_EXITED)) {
				proc_mark_exit(pn, pn->pn_cnstatus);
				proc_wake(kq, pn);
			}
		} else if (pn != NULL && (pn->pn_state & PN_CNONLY) &&
		    ts > pn->pn_since && pn->pn_reusets == 0) {
			/*
			 * A connector-only knote's process was gone when its
			 * own fork (pn_since) was read, so this is a new one
			 * under its pid, and its exit, unless read already,
			 * was lost (attack helper 43's D4).
			 */
			pn->pn_reusets = ts;
			if (!(pn->pn_state & PN_EXITED)) {
				if (!(pn->pn_state & PN_CNEXIT))
					pn->pn_fflags |= NOTE_TRACKERR;
				proc_mark_exit(pn, -1);
				proc_wake(kq, pn);
			}
		}
		/*
		 * A fork read after the pidfd showed the exit still came
		 * before it (attack helper 28's F4: a tracked process that
		 * forks and exits before kq looks), and so may one after
		 * the leader's exit (proc_reused).
		 */
		pn = proc_lookup(kq, ev->event_data.fork.parent_tgid);
		if (pn == NULL || ts < pn->pn_since || proc_reused(pn, ts))
			return;
		if ((pn->pn_kn.kn_sfflags & NOTE_TRACK) &&
		    proc_track(kq, pn, ev->event_data.fork.child_tgid, ts) != 0)
			pn->pn_fflags |= NOTE_TRACKERR;
		if (pn->pn_kn.kn_sfflags & NOTE_FORK)
			pn->pn_fflags |= NOTE_FORK;
		break;
	case PROC_EVENT_EXEC:
		/* An exec read after the exit still came before it; one
		   by a thread after the leader's exit is the process's. */
		pn = proc_lookup(kq, ev->event_data.exec.process_tgid);
		if (pn == NULL || ts < pn->pn_since || proc_reused(pn, ts))
			return;
		if (pn->pn_kn.kn_sfflags & NOTE_EXEC)
			pn->pn_fflags |= NOTE_EXEC;
		break;
	case PROC_EVENT_EXIT:
		/*
		 * The thread-group leader's exit, and after it every exit
		 * of the process's other threads: keep the status (a
		 * non-child's is hard to get otherwise).  The leader may
		 * end first (pthread_exit, or an exec by another thread,
		 * which takes over its pid): then its code is not the
		 * process's (PN_CNPART), and the exits of the threads that
		 * outlive it carry the one wait(2) gives (the group's).
		 * The pidfd says when the whole process is gone.  An exit
		 * after a new process took the pid is that process's.
		 */
		pn = proc_lookup(kq, ev->event_data.exit.process_tgid);
		if (pn == NULL || ts < pn->pn_since || proc_reused(pn, ts) ||
		    (ev->event_data.exit.process_pid !=
		    ev->event_data.exit.process_tgid &&
		    !(pn->pn_state & PN_CNEXIT)))
			return;
		pn->pn_state |= PN_CNEXIT;
		pn->pn_exitts = ts;
		pn->pn_cnstatus = (int)ev->event_data.exit.exit_code;
		if (pn->pn_pidfd >= 0 && pn->pn_opened < ts &&
		    !kq_pidfd_exited(pn->pn_pidfd))
			pn->pn_state |= PN_CNPART;
		else
			pn->pn_state &= ~PN_CNPART;
		if (pn->pn_pidfd >= 0 && !(pn->pn_state & PN_EXITWAIT))
			return;		/* the pidfd says when it is gone */
		if (pn->pn_state & PN_CNONLY) {
			/*
			 * Followed by the connector alone, with no pidfd to
			 * say whether this was the last thread: the leader
			 * may have ended first (pthread_exit), and the exits
			 * of the threads that outlived it, which carry the
			 * process's status, were sent before it was reaped
			 * -- all but the last thread's, which the kernel
			 * sends just after the parent may reap (do_exit) --
			 * so they are read by the time the connector is
			 * drained.  The exit is reported then, at the next
			 * look (kq_proc_exitwait), with the latest status
			 * (attack helper 51's D1: the leader's 0).  A drain
			 * that falls within those microseconds reports the
			 * leader's code.
			 */
			int64_t now = kq_now_ns();

			if (now < pn->pn_waituntil)
				proc_await(kq, pn, now);
			return;
		}
		/* Awaited its status. */
		proc_mark_exit(pn, -1);
		break;
	default:
		return;
	}
	proc_wake(kq, pn);
}

/*
 * Messages were lost (ENOBUFS): forks may have gone unseen, so every
 * tracking knote reports NOTE_TRACKERR; an exit awaiting its status from
 * the connector is reported with the best status left -- but for a
 * connector-only knote's (PN_CNONLY), which ends its wait as set
 * (its message, sent before the loss, may still be queued).
 */
static void
proc_cn_lost(struct kqueue *kq)
{
	struct knote *kn;
	size_t b;

	for (b = 0; kq->kq_hashmask != 0 && b <= kq->kq_hashmask; b++)
		for (kn = kq->kq_hash[b]; kn != NULL; kn = kn->kn_link) {
			if (kn->kn_filter != EVFILT_PROC)
				continue;
			if ((PN(kn)->pn_state & (PN_EXITWAIT | PN_CNONLY)) ==
			    PN_EXITWAIT)
				proc_mark_exit(PN(kn), -1);
			else if ((kn->kn_sfflags & NOTE_TRACK) &&
			    !(PN(kn)->pn_state & PN_EXITED))
				PN(kn)->pn_fflags |= NOTE_TRACKERR;
			else
				continue;
			proc_wake(kq, PN(kn));
		}
}

/* One batch of the connector's messages; 1 if it was drained. */
static int
proc_cn_read(struct kqueue *kq, struct kqsrc *src)
{
	union {
		char		buf[CN_SMALLBUF];
		struct nlmsghdr	nh;
	} u;
	char *buf = src->ks_arg != NULL ? src->ks_arg : u.buf;
	size_t size = src->ks_arg != NULL ? CN_BUFSZ : sizeof(u.buf);
	struct nlmsghdr *nh;
	struct proc_event ev;
	uint32_t ack;
	ssize_t n;
	int i;

	for (i = 0; i < CN_BATCH; i++) {
		n = proc_cn_recv(src->ks_fd, buf, size);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				proc_cn_lost(kq);
				continue;
			}
			return 1;	/* EAGAIN: drained */
		}
		CN_FOREACH(nh, buf, n)
			if (proc_cn_event(nh, &ev, &ack)) {
				if (ev.timestamp_ns > kq->kq_cnseen)
					kq->kq_cnseen = ev.timestamp_ns;
				proc_cn_handle(kq, &ev);
			}
	}
	return 0;
}

static void
proc_cn_ready(struct kqueue *kq, struct kqsrc *src, uint32_t events)
{
	/* More left: the level-triggered registration brings us back. */
	(void)proc_cn_read(kq, src);
}

#define CN_DRAIN	64	/* batches read at most in one go */

/*
 * The look at the exits that await their connector message, once the
 * first may stop waiting (kq_exitwait): from each collection, and from
 * the timer source (filt_timer.c), whose timerfd is armed for it so that
 * every sleeper wakes -- a kevent() on another thread, poll() on the
 * kqueue, a kqueue watching this one.  The connector is read first; an
 * exit whose wait is over is reported with the best status left (as
 * after a loss the connector reported, proc_cn_lost: its message was
 * dropped before kq saw the exit) only when the connector was read to
 * its end, or to messages stamped after the wait's end: a backlog not
 * yet read may still hold it, and the process's forks and execs before
 * it.  Sets kq_exitwait to the next time to look, 0 when no exit waits.
 * A walk of the hash, made only while an exit waits.  kq_lock held.
 */
void
kq_proc_exitwait(struct kqueue *kq)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_PROC];
	int64_t now = kq_now_ns(), next = 0;
	struct knote *kn;
	int drained = 1, i;
	size_t b;

	if (now < kq->kq_exitwait)
		return;
	if (src->ks_ready != NULL && !kq->kq_dead)
		for (i = 0; i < CN_DRAIN && !(drained =
		    proc_cn_read(kq, src)); i++)
			;
	for (b = 0; kq->kq_hashmask != 0 && b <= kq->kq_hashmask; b++)
		for (kn = kq->kq_hash[b]; kn != NULL; kn = kn->kn_link) {
			struct procnote *pn = PN(kn);
			int64_t when;

			/* (Not a procnote's fields before its filter is
			   known: another filter's knote is smaller.) */
			if (kn->kn_filter != EVFILT_PROC ||
			    (pn->pn_state & (PN_EXITWAIT | PN_EXITED)) !=
			    PN_EXITWAIT)
				continue;
			when = pn->pn_waituntil;
			if (now >= when && (drained ||
			    kq->kq_cnseen >= (uint64_t)when)) {
				if ((pn->pn_state & (PN_CNONLY | PN_CNEXIT)) ==
				    PN_CNONLY)
					pn->pn_fflags |= NOTE_TRACKERR;
				proc_mark_exit(pn, -1);
				proc_wake(kq, pn);
				continue;
			}
			if (now >= when)
				when = now + 1000000;	/* read on, then */
			if (next == 0 || when < next)
				next = when;
		}
	kq->kq_exitwait = next;
	if (next != 0)
		kq_timer_wake(kq);
}

/*
 * Before the exit of a NOTE_TRACK knote is reported (and the knote goes,
 * EV_ONESHOT), read what the connector holds: the process's forks were
 * queued there before its exit (copy_process sends them synchronously),
 * and read after the knote is gone they would find no parent and their
 * children would be lost.  At most CN_DRAIN batches; if more is left, the
 * tracking may have missed forks: NOTE_TRACKERR.
 */

static void
proc_cn_drain(struct kqueue *kq, struct procnote *pn)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_PROC];
	int i;

	pn->pn_state |= PN_DRAINED;
	if (src->ks_ready == NULL)
		return;
	for (i = 0; i < CN_DRAIN; i++)
		if (proc_cn_read(kq, src))
			return;
	pn->pn_fflags |= NOTE_TRACKERR;
}

static void
proc_cn_fini(struct kqueue *kq, struct kqsrc *src)
{
	/* Not needed with Linux >= 6.6 (it counts per socket), harmless;
	   not on a number that may be the program's. */
	if (!kq->kq_unowned)
		(void)proc_cn_send(src->ks_fd, 2, PROC_CN_MCAST_IGNORE);
	kq_free(src->ks_arg);
	src->ks_arg = NULL;
}

/*
 * Wait for the connector's answer to our LISTEN (sent with ack = seq; the
 * kernel renumbers seq).  The kernel answers synchronously, to the
 * multicast group, and only when somebody listens -- so no answer means
 * we were refused.
 */
static int
proc_cn_ack(int fd, uint32_t seq, char *buf)	/* buf: CN_BUFSZ bytes */
{
	struct nlmsghdr *nh;
	struct proc_event ev;
	uint32_t ack;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int tries;

	for (tries = 0; tries < 256; tries++) {
		n = proc_cn_recv(fd, buf, CN_BUFSZ);
		if (n < 0) {
			if (errno == EINTR || errno == ENOBUFS)
				continue;
			if (errno != EAGAIN)
				return errno;
			if (kq_nc_poll(&p, 1, 100) != 1)
				return EPERM;
			continue;
		}
		CN_FOREACH(nh, buf, n) {
			if (!proc_cn_event(nh, &ev, &ack) ||
			    ev.what != PROC_EVENT_NONE || ack != seq + 1)
				continue;	/* older events: not ours */
			return (int)ev.event_data.ack.err;
		}
	}
	return EPERM;
}

/* Open the kqueue's connector socket if it has none.  0 or an errno. */
static int
proc_cn_open_made(struct kqueue *kq)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_PROC];
	struct sockaddr_nl sa;
	int fd, e, sz = CN_RCVBUF;
	char *buf;

	if (src->ks_ready != NULL)
		return 0;
	if (kq->kq_dead)
		return EBADF;
	if ((buf = kq_malloc(CN_BUFSZ)) == NULL)
		return ENOMEM;
	fd = KQ_FDCALL(socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    NETLINK_CONNECTOR));
	if (fd < 0) {
		e = errno == EPROTONOSUPPORT ? ENOTSUP : errno;
		kq_free(buf);
		return e;
	}
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	sa.nl_groups = CN_IDX_PROC;
	sa.nl_pid = 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		e = errno == EACCES ? EPERM : errno;
		goto fail;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if ((e = proc_cn_send(fd, 1, PROC_CN_MCAST_LISTEN)) != 0 ||
	    (e = proc_cn_ack(fd, 1, buf)) != 0) {
		if (e == EACCES)
			e = EPERM;
		goto fail;
	}
	if ((e = kq_src_add(kq, KQ_SRC_PROC, fd, proc_cn_ready)) != 0) {
		(void)proc_cn_send(fd, 2, PROC_CN_MCAST_IGNORE);
		goto fail;
	}
	src->ks_arg = buf;
	src->ks_fini = proc_cn_fini;
	return 0;
fail:
	kq_close_raw(fd);
	kq_free(buf);
	return e;
}

/* proc_cn_open_made() under kq_mkfd_begin(): see registry.c. */
static int
proc_cn_open(struct kqueue *kq)
{
	int r;

	if (kq->kq_src[KQ_SRC_PROC].ks_ready != NULL)
		return 0;
	kq_mkfd_begin();
	r = proc_cn_open_made(kq);
	kq_mkfd_end();
	return r;
}

/* ------------------------------------------------------------------ */
/* Filter operations                                                  */
/* ------------------------------------------------------------------ */

/*
 * A change replaces the fflags (FreeBSD's kqueue_register, EV_ENABLE and
 * EV_DISABLE included).  FreeBSD has recorded every event of the process
 * under the fflags in force when it happened, disabled or not; here what
 * happened since kq last looked is recorded first, under the old fflags:
 * the connector's queued events, then the exit (whose edge on the pidfd a
 * disabled knote let pass).  Before opening the connector for the new
 * fflags: an exit already past must not wait for its message.
 */
static int
filt_procmodify(struct kqueue *kq, struct knote *kn, const struct kevent *kev)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_PROC];
	int e;

	if (kn->kn_status & KN_ATTACHED) {
		if (src->ks_ready != NULL && !kq->kq_dead)
			proc_cn_ready(kq, src, 0);
		(void)proc_check_exit(kq, PN(kn));
	}
	if ((kev->fflags & NOTE_NEEDCN) && (e = proc_cn_open(kq)) != 0)
		return e;
	kn->kn_sfflags = kev->fflags;
	kn->kn_sdata = kn_clamp32(kev->data);
	return 0;
}

static int
filt_procattach_made(struct kqueue *kq, struct knote *kn)
{
	struct procnote *pn = PN(kn);
	int fd, e;

	pn->pn_pidfd = -1;
	if (kn->kn_ident == 0 || kn->kn_ident > INT_MAX)
		return ESRCH;
	fd = kq_pidfd_open((pid_t)kn->kn_ident);
	if (fd < 0 && (kn->kn_flags & EV_FLAG1) && errno == ESRCH) {
		/*
		 * NOTE_TRACK found a child that was already reaped: its
		 * events, exit included, are still queued on the connector
		 * after its fork, so follow it through them alone.
		 */
		kn->kn_flags = (kn->kn_flags & ~EV_FLAG1) | EV_CLEAR;
		pn->pn_since = (uint64_t)kq_now_ns();
		/*
		 * Its exit may be lost with messages the kernel dropped, and
		 * nothing else would end the knote (attack helper 43's D4):
		 * it awaits the exit as a pidfd's would (PN_EXITWAIT), and
		 * once the connector was read to its end or past the wait
		 * without it, ends with NOTE_TRACKERR and the best status
		 * left (kq_proc_exitwait).  Its other events all came before
		 * the reaping; the exit's message may come just after it
		 * (do_exit: exit_notify, then proc_exit_connector).
		 */
		pn->pn_state |= PN_CNONLY;
		proc_await(kq, pn, (int64_t)pn->pn_since + PN_CNWAIT_NS);
		return 0;
	}
	kn->kn_flags &= ~EV_FLAG1;
	if (fd < 0) {
		/*
		 * The id of a thread other than a main thread: ENOENT since
		 * Linux 6.9, EINVAL before.  FreeBSD's pfind() finds only
		 * processes: ESRCH.
		 */
		if (errno == ENOENT || errno == EINVAL)
			return ESRCH;
		return errno;
	}
	/* First the time, then the check: see proc_await_cn. */
	pn->pn_since = pn->pn_opened = (uint64_t)kq_now_ns();
	if (kq_pidfd_exited(fd)) {
		if (!(kn->kn_sfflags & NOTE_EXIT)) {
			/* FreeBSD finds a zombie only for NOTE_EXIT. */
			kq_close_raw(fd);
			return ESRCH;
		}
		pn->pn_state |= PN_ZOMBIE;
	}
	pn->pn_pidfd = fd;
	kn->kn_flags |= EV_CLEAR;	/* as FreeBSD: automatically set */
	/* Edge-triggered: an exited process fires once, here if a zombie. */
	e = kq_knsrc_add(kq, kn, fd, EPOLLIN);
	if (e != 0) {
		kq_close_raw(fd);
		pn->pn_pidfd = -1;
		return e;
	}
	return 0;
}

/* filt_procattach_made() under kq_mkfd_begin(): see registry.c. */
static int
filt_procattach(struct kqueue *kq, struct knote *kn)
{
	int r;

	kq_mkfd_begin();
	r = filt_procattach_made(kq, kn);
	kq_mkfd_end();
	return r;
}

static int
filt_procdetach(struct kqueue *kq, struct knote *kn)
{
	struct procnote *pn = PN(kn);

	if (pn->pn_pidfd >= 0) {
		/* Released and closed with no fork() between (registry.c). */
		kq_mkfd_begin();
		kq_knsrc_close(kq, pn->pn_pidfd);
		kq_mkfd_end();
		pn->pn_pidfd = -1;
	}
	return 0;
}

static int
filt_procupdate(struct kqueue *kq, struct knote *kn, int readd)
{
	struct procnote *pn = PN(kn);

	if (kn->kn_status & KN_DISABLED)
		return 0;
	(void)proc_check_exit(kq, pn);
	proc_wake(kq, pn);
	return 0;
}

static int
filt_proc(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	struct procnote *pn = PN(kn);
	int exited = proc_check_exit(kq, pn);

	if (exited && (kn->kn_sfflags & NOTE_TRACK) &&
	    !(pn->pn_state & PN_DRAINED))
		proc_cn_drain(kq, pn);
	if (pn->pn_state & PN_CHILD) {
		/* FreeBSD's separate one-shot NOTE_CHILD knote. */
		pn->pn_state = (pn->pn_state & ~PN_CHILD) | PN_CHILDOUT;
		out->fflags = NOTE_CHILD;
		out->data = pn->pn_ppid;
		out->flags |= EV_ONESHOT;
		return 1;
	}
	if (exited) {
		if (pn->pn_fflags == 0)
			return KN_EVDROP;
		kn->kn_flags |= EV_EOF | EV_ONESHOT;
		out->flags |= EV_EOF | EV_ONESHOT;
		out->fflags = pn->pn_fflags;
		out->data = (pn->pn_fflags & NOTE_EXIT) ? pn->pn_data : 0;
		return 1;
	}
	if (pn->pn_fflags == 0)
		return 0;
	out->fflags = pn->pn_fflags;
	out->data = 0;
	return 1;
}

static void
filt_procclear(struct kqueue *kq, struct knote *kn)
{
	struct procnote *pn = PN(kn);

	if (pn->pn_state & PN_CHILDOUT) {
		/* Only the notice went out: the rest is still to come. */
		pn->pn_state &= ~PN_CHILDOUT;
		proc_wake(kq, pn);
		return;
	}
	pn->pn_fflags = 0;
	pn->pn_data = 0;
}

static int
filt_procreadd(struct kqueue *kq, struct knote *kn, int epfd)
{
	struct procnote *pn = PN(kn);

	/* Still kq's own (fdreg_readd_all)? */
	if (pn->pn_pidfd < 0 || !kq_holds_number(kq, pn->pn_pidfd))
		return 0;
	return kq_knsrc_register(epfd, kn, pn->pn_pidfd, EPOLLIN);
}

const struct filterops proc_filtops = {
	.f_isfd = 0,
	.f_size = sizeof(struct procnote),
	.f_attach = filt_procattach,
	.f_detach = filt_procdetach,
	.f_modify = filt_procmodify,
	.f_update = filt_procupdate,
	.f_event = filt_proc,
	.f_clear = filt_procclear,
	.f_readd = filt_procreadd,
};
