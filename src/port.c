/*
 * port.c -- Solaris/illumos event ports (<port.h>): a second front door to
 * the kqueue engine.
 *
 * A port is a kqueue created with kq_port set (kq_create): the same epoll
 * set, doorbell, knotes, active list and scan, so it is pollable (readable
 * while events are pending), close-on-exec, and safe from many threads
 * with no lock of its own.  kevent() refuses a port (EINVAL) and the
 * port_* functions refuse anything else (EBADFD).  What differs is only
 * how events are named and handed out, done here with three private
 * filters (kq_int.h):
 *
 *   PORT_SOURCE_FD    KQ_EVFILT_PORTFD, ident = the descriptor, fflags =
 *		       the poll(2) events asked for, EV_DISPATCH: it takes
 *		       part in the descriptor's epoll registration like
 *		       EVFILT_READ/WRITE (fdreg.c asks port_fd_interest()),
 *		       is reported once with the poll revents in data, and is
 *		       then disabled: the association is over (dissociating
 *		       it is ENOENT, and drops it).  Re-associating is
 *		       EV_ADD | EV_ENABLE on the knote (new events and user).
 *		       Dispatch rather than one-shot: the registration is
 *		       EPOLLONESHOT, so a delivery costs no epoll_ctl and a
 *		       re-association one EPOLL_CTL_MOD, where a one-shot
 *		       knote costs an EPOLL_CTL_DEL and an EPOLL_CTL_ADD.
 *		       Closing the descriptor drops it like any descriptor
 *		       knote.
 *   PORT_SOURCE_USER  KQ_EVFILT_PORTUSER, one knote per port_send(), ident
 *		       a process-wide sequence number, queued on the active
 *		       list at once, EV_ONESHOT; the doorbell wakes waiters.
 *   PORT_SOURCE_ALERT KQ_EVFILT_PORTALERT, at most one knote (ident 0):
 *		       while it exists it is kq_alert, which kq_collect
 *		       reports alone on every collection without consuming
 *		       it; it sits on the active list so the doorbell stays
 *		       rung and every sleeper wakes (each in turn: the
 *		       doorbell is level-triggered).
 *
 * Each event is handed to exactly one caller: the engine copies a knote
 * out under kq_lock, and a one-shot knote is dropped in the same critical
 * section (docs/DESIGN.md §4).
 *
 *   PORT_SOURCE_FILE  KQ_EVFILT_PORTFILE, ident = the file_obj_t's address,
 *		       EV_ONESHOT: the file is watched by name through the
 *		       kqueue's inotify instance, shared with EVFILT_VNODE
 *		       (inotify.c hands its events to port_file_inotify), and
 *		       its times are compared with the object's at association.
 *
 *   PORT_SOURCE_TIMER KQ_EVFILT_PORTTIMER, from timer_create() with
 *		       <port.h>'s SIGEV_PORT (below): a timerfd owned by the
 *		       knote, EV_CLEAR, the expirations in portev_events.
 *
 * PORT_SOURCE_AIO and PORT_SOURCE_MQ are not provided (EINVAL from
 * port_associate); see port_create(3).
 */
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

#include "kq_int.h"
#include "ksys.h"
#include "fault.h"
#include "fdreg.h"
#include "port.h"

static struct kqueue *port_enter(int port, int *held);
static int	port_change(struct kqueue *kq, struct kevent *kev);

#define PORT_CHUNK	64	/* kevents collected per engine call */

/* poll(2) events that need the read side / the write side */
#define PORT_RD		(POLLIN | POLLRDNORM | POLLRDBAND | POLLRDHUP)
#define PORT_WR		(POLLOUT | POLLWRNORM | POLLWRBAND)
/* reported whether asked for or not */
#define PORT_ALWAYS	(POLLERR | POLLHUP | POLLNVAL)

/* ---- PORT_SOURCE_FD ---- */

uint32_t
port_fd_interest(const struct knote *kn)
{
	uint32_t w = 0;

	if (kn->kn_sfflags & PORT_RD)
		w |= R_IN;
	if (kn->kn_sfflags & PORT_WR)
		w |= R_OUT;
	if (kn->kn_sfflags & POLLPRI)
		w |= R_PRI;
	return w;
}

/*
 * The poll revents of the association.  epoll's mask is the descriptor's
 * readiness when the event was taken, restricted to the registration's
 * interest: enough when only POLLIN/POLLOUT were asked for; otherwise (or
 * for a re-check, hint 0) the descriptor is polled.
 */
static int
port_fd_event(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	int want = (int)kn->kn_sfflags, rev;

	(void)kq;
	if (hint != 0 && (want & ~(POLLIN | POLLOUT)) == 0) {
		rev = (int)(hint & (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP));
	} else {
		struct pollfd p = { .fd = (int)kn->kn_ident,
		    .events = (short)want };

		if (kq_nc_poll(&p, 1, 0) < 0)
			return 0;
		if (p.revents & POLLNVAL)
			return -1;	/* closed behind libc's back */
		rev = p.revents;
	}
	rev &= want | PORT_ALWAYS;
	if (rev == 0)
		return 0;
	out->data = rev;
	return 1;
}

const struct filterops port_fd_filtops = {
	.f_isfd = 1,
	.f_attach = fdreg_attach,
	.f_detach = fdreg_detach,
	.f_update = fdreg_update,
	.f_event = port_fd_event,
};

/* ---- PORT_SOURCE_USER ---- */

static int
port_user_attach(struct kqueue *kq, struct knote *kn)
{
	knote_enqueue(kq, kn);
	return 0;
}

static int
port_user_event(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	(void)kq;
	(void)hint;
	out->data = kn->kn_sdata;
	return 1;
}

const struct filterops port_user_filtops = {
	.f_isfd = 0,
	.f_attach = port_user_attach,
	.f_event = port_user_event,
};

/* ---- PORT_SOURCE_ALERT ---- */

struct alnote {
	struct knote	 al_kn;
	void		*al_user;
	int		 al_events;
};

#define AL(kn)	((struct alnote *)(void *)(kn))

static int
port_alert_modify(struct kqueue *kq, struct knote *kn, const struct kevent *kev)
{
	(void)kq;
	if ((kn->kn_status & KN_ATTACHED) && (kev->fflags & PORT_ALERT_UPDATE))
		return EBUSY;
	AL(kn)->al_user = kev->udata;
	AL(kn)->al_events = (int)kev->data;
	return 0;
}

static int
port_alert_attach(struct kqueue *kq, struct knote *kn)
{
	kq->kq_alert = kn;
	knote_enqueue(kq, kn);
	return 0;
}

static int
port_alert_detach(struct kqueue *kq, struct knote *kn)
{
	if (kq->kq_alert == kn)
		kq->kq_alert = NULL;
	return 0;
}

static int
port_alert_event(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	(void)kq;
	(void)hint;
	out->data = AL(kn)->al_events;
	out->udata = AL(kn)->al_user;
	return 1;
}

const struct filterops port_alert_filtops = {
	.f_isfd = 0,
	.f_size = sizeof(struct alnote),
	.f_modify = port_alert_modify,
	.f_attach = port_alert_attach,
	.f_detach = port_alert_detach,
	.f_event = port_alert_event,
};

/* ---- PORT_SOURCE_FILE ---- */

/*
 * The object is the caller's file_obj_t, which must stay valid while it is
 * associated (as on illumos); the knote's ident is its address.  The file
 * is watched by name through the kqueue's inotify instance (no descriptor
 * is held, so an unlink really deletes it), after which its times are
 * compared with the object's: any difference in what was asked for fires
 * at once.  inotify events become FILE_* bits in fn_fired; the exceptions
 * (FILE_DELETE, FILE_RENAME_FROM, UNMOUNTED) are always reported.
 */
struct fnote {
	struct knote	 fn_kn;
	uint32_t	 fn_fired;	/* FILE_* seen, not delivered */
	int		 fn_events;	/* FILE_* asked for */
	off_t		 fn_size;	/* for FILE_TRUNC */
};

#define FN(kn)	((struct fnote *)(void *)(kn))
#define FO(kn)	((const file_obj_t *)(kn)->kn_ident)

static int
port_file_stat(const struct knote *kn, struct stat *st)
{
	const char *name = FO(kn)->fo_name;

	return (FN(kn)->fn_events & FILE_NOFOLLOW) ? lstat(name, st) :
	    stat(name, st);
}

static int
ts_differ(const struct timespec *a, const timestruc_t *b)
{
	return a->tv_sec != b->tv_sec || a->tv_nsec != b->tv_nsec;
}

static int
port_file_modify(struct kqueue *kq, struct knote *kn, const struct kevent *kev)
{
	(void)kq;
	FN(kn)->fn_events = (int)kev->fflags;
	return 0;
}

static int
port_file_attach(struct kqueue *kq, struct knote *kn)
{
	struct fnote *fn = FN(kn);
	uint32_t mask = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT;
	struct stat st;
	int e;

	if (fn->fn_events & FILE_ACCESS)
		mask |= IN_ACCESS;
	if (fn->fn_events & (FILE_MODIFIED | FILE_TRUNC))
		mask |= IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM |
		    IN_MOVED_TO;	/* a directory's entries modify it */
	if (fn->fn_events & FILE_ATTRIB)
		mask |= IN_ATTRIB;
	if (fn->fn_events & FILE_NOFOLLOW)
		mask |= IN_DONT_FOLLOW;
	if ((e = kq_inotify_set_path(kq, kn, FO(kn)->fo_name, mask)) != 0)
		return e;
	/* Watched first, then compared: no change falls between. */
	if (port_file_stat(kn, &st) != 0) {
		e = errno;
		kq_inotify_unwatch(kq, kn);
		return e;
	}
	fn->fn_size = st.st_size;
	if ((fn->fn_events & FILE_ACCESS) &&
	    ts_differ(&st.st_atim, &FO(kn)->fo_atime))
		fn->fn_fired |= FILE_ACCESS;
	if ((fn->fn_events & FILE_MODIFIED) &&
	    ts_differ(&st.st_mtim, &FO(kn)->fo_mtime))
		fn->fn_fired |= FILE_MODIFIED;
	if ((fn->fn_events & FILE_ATTRIB) &&
	    ts_differ(&st.st_ctim, &FO(kn)->fo_ctime))
		fn->fn_fired |= FILE_ATTRIB;
	if (fn->fn_fired != 0)
		knote_enqueue(kq, kn);
	return 0;
}

static int
port_file_detach(struct kqueue *kq, struct knote *kn)
{
	kq_inotify_unwatch(kq, kn);
	return 0;
}

void
port_file_inotify(struct kqueue *kq, struct knote *kn, uint32_t mask,
    uint32_t hint)
{
	struct fnote *fn = FN(kn);
	uint32_t f = 0;
	struct stat st;

	if (hint != 0 || (mask & (IN_MODIFY | IN_Q_OVERFLOW)))
		f |= FILE_MODIFIED;
	if ((mask & IN_MODIFY) && (fn->fn_events & FILE_TRUNC)) {
		if (port_file_stat(kn, &st) == 0) {
			if (st.st_size < fn->fn_size)
				f |= FILE_TRUNC;
			fn->fn_size = st.st_size;
		}
	}
	if (mask & IN_ACCESS)
		f |= FILE_ACCESS;
	if (mask & (IN_ATTRIB | IN_Q_OVERFLOW))
		f |= FILE_ATTRIB;
	f &= (uint32_t)fn->fn_events;
	if (mask & IN_DELETE_SELF)
		f |= FILE_DELETE;
	if (mask & IN_MOVE_SELF)
		f |= FILE_RENAME_FROM;
	if (mask & IN_UNMOUNT)
		f |= UNMOUNTED;
	if (f != 0) {
		fn->fn_fired |= f;
		knote_enqueue(kq, kn);
	}
}

static int
port_file_event(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	(void)hint;
	kq_inotify_sync(kq);	/* what happened before this call */
	if (FN(kn)->fn_fired == 0)
		return 0;
	out->data = FN(kn)->fn_fired;
	return 1;
}

const struct filterops port_file_filtops = {
	.f_isfd = 0,
	.f_size = sizeof(struct fnote),
	.f_modify = port_file_modify,
	.f_attach = port_file_attach,
	.f_detach = port_file_detach,
	.f_event = port_file_event,
};

/* ---- PORT_SOURCE_TIMER ---- */

/*
 * timer_create() with SIGEV_PORT: a timerfd, owned by a knote of the port
 * (registered in its epoll set with kq_knsrc_add, like EVFILT_PROC's
 * pidfds), whose expirations since the last delivery become portev_events.
 * The knote is EV_CLEAR: reported once per readable timerfd, which the
 * event reads.  libkq's timer_create(), timer_settime(), timer_gettime(),
 * timer_getoverrun() and timer_delete() take the place of the C library's
 * (as close() does); a timer_t that is not one of ours -- every timer made
 * without SIGEV_PORT -- goes to the C library's.  Ours are PT_TAG | index:
 * the C library's are kernel timer ids (ints) or user-space pointers, never
 * above 2^47, so no lookup or lock is needed to tell them apart.  The
 * table of ours only grows (chunks are never freed); a mutex serialises
 * creation and deletion only.
 */
#define PT_TAG		((uintptr_t)0x4b50 << 48)
#define PT_CHUNK	256
#define PT_TOP		256		/* 65536 timers */

struct ptimer {
	_Atomic int	pt_tfd;		/* the timerfd, -1: none */
	_Atomic int	pt_inuse;
	int		pt_port;	/* the port it notifies */
};

static _Atomic(struct ptimer *) pt_tab[PT_TOP];
static kq_olock_t pt_lock;	/* an olock (olock.c) */

struct tnote {
	struct knote	 tn_kn;
	int		 tn_fd;
};

#define TN(kn)	((struct tnote *)(void *)(kn))

static struct ptimer *
pt_get(uintptr_t idx)
{
	struct ptimer *c;

	if (idx >= (uintptr_t)PT_TOP * PT_CHUNK)
		return NULL;
	c = atomic_load_explicit(&pt_tab[idx / PT_CHUNK], memory_order_acquire);
	return c == NULL ? NULL : &c[idx % PT_CHUNK];
}

/* Ours, in use: the entry; else NULL. */
static struct ptimer *
pt_of(timer_t t)
{
	uintptr_t v = (uintptr_t)t;
	struct ptimer *p;

	if ((v & ~(((uintptr_t)1 << 48) - 1)) != PT_TAG)
		return NULL;
	p = pt_get(v & (((uintptr_t)1 << 48) - 1));
	return p != NULL && atomic_load(&p->pt_inuse) ? p : NULL;
}

/*
 * The port timers' timerfds, into o (kq_own_add): closefrom()'s look at
 * kq's own descriptors (kq_registry_own_fds_locked).  A timerfd is
 * recorded here from its creation to its close, both inside maker
 * sections, and is in no kqueue's bitmap before its knote is attached.
 * Lock-free: chunks are never freed.
 */
void
kq_port_timer_fds(struct kq_own *o)
{
	int i, j;

	for (i = 0; i < PT_TOP; i++) {
		struct ptimer *c = atomic_load_explicit(&pt_tab[i],
		    memory_order_acquire);

		if (c == NULL)
			break;	/* chunks are made in order */
		for (j = 0; j < PT_CHUNK; j++)
			kq_own_add(o, atomic_load(&c[j].pt_tfd));
	}
}

static int
port_timer_modify(struct kqueue *kq, struct knote *kn, const struct kevent *kev)
{
	(void)kq;
	if (!(kn->kn_status & KN_ATTACHED))
		TN(kn)->tn_fd = (int)kev->data;
	return 0;
}

static int
port_timer_attach(struct kqueue *kq, struct knote *kn)
{
	return kq_knsrc_add(kq, kn, TN(kn)->tn_fd, EPOLLIN);
}

static int
port_timer_detach(struct kqueue *kq, struct knote *kn)
{
	struct ptimer *p = pt_get(kn->kn_ident);

	/* Released and closed with no fork() between (registry.c). */
	kq_mkfd_begin();
	if (p != NULL)
		atomic_store(&p->pt_tfd, -1);
	kq_knsrc_close(kq, TN(kn)->tn_fd);
	kq_mkfd_end();
	TN(kn)->tn_fd = -1;
	return 0;
}

static int
port_timer_event(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	uint64_t n;

	(void)kq;
	(void)hint;
	if (kq_nc_read(TN(kn)->tn_fd, &n, sizeof(n)) != (ssize_t)sizeof(n) ||
	    n == 0)
		return 0;
	out->data = n > INT_MAX ? INT_MAX : (int64_t)n;
	return 1;
}

static int
port_timer_readd(struct kqueue *kq, struct knote *kn, int epfd)
{
	/* Still kq's own (fdreg_readd_all)? */
	if (!kq_holds_number(kq, TN(kn)->tn_fd))
		return 0;
	return kq_knsrc_register(epfd, kn, TN(kn)->tn_fd, EPOLLIN);
}

const struct filterops port_timer_filtops = {
	.f_isfd = 0,
	.f_size = sizeof(struct tnote),
	.f_modify = port_timer_modify,
	.f_attach = port_timer_attach,
	.f_detach = port_timer_detach,
	.f_event = port_timer_event,
	.f_readd = port_timer_readd,
};

/*
 * fork(): POSIX timers are not inherited.  The child's copies of the
 * timerfds are closed (they share the parent's timers) and its table
 * entries made inert: EINVAL but for timer_delete().
 */
/*
 * Called by registry.c's child handler, after it closed the claimed
 * descriptors and before any other library's child handler runs (one that
 * opens a descriptor would get a number this closes again).
 */
void
kq_port_atfork_child(void)
{
	int i, j, fd;

	/* A thread that held pt_lock at the fork is not in the child (the
	   fork holds no lock of kq's): free, unless this one holds it. */
	if (!kq_olock_mine(&pt_lock))
		atomic_store(&pt_lock, 0);

	for (i = 0; i < PT_TOP; i++) {
		struct ptimer *c = atomic_load(&pt_tab[i]);

		for (j = 0; c != NULL && j < PT_CHUNK; j++)
			if ((fd = atomic_exchange(&c[j].pt_tfd, -1)) >= 0)
				kq_close_raw(fd);
	}
}

/* The C library's function name of version 2.34 (or 2.3.3), or NULL. */
static void *
pt_libc(const char *name, void *self)
{
	void *f = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");

	if (f == NULL)
		f = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.3");
	if (f == NULL)
		f = dlsym(RTLD_NEXT, name);
	return f == self ? NULL : f;
}

/*
 * Return the C library's function name (of type type) called with the
 * remaining arguments: every timer that is not a port timer is libc's.
 * ENOSYS only where the C library has no such function to hand it to (a
 * statically linked program: RTLD_NEXT finds nothing).
 */
#define PT_LIBC_CALL(name, type, ...) do {				\
	static _Atomic(type) real;					\
	type fn = atomic_load_explicit(&real, memory_order_relaxed);	\
									\
	if (fn == NULL) {						\
		fn = (type)pt_libc(#name, (void *)name);		\
		atomic_store_explicit(&real, fn, memory_order_relaxed);	\
	}								\
	if (fn == NULL) {						\
		errno = ENOSYS;						\
		return -1;						\
	}								\
	return fn(__VA_ARGS__);						\
} while (0)

typedef int (*tcreate_f)(clockid_t, struct sigevent *, timer_t *);
typedef int (*tset_f)(timer_t, int, const struct itimerspec *,
    struct itimerspec *);
typedef int (*tget_f)(timer_t, struct itimerspec *);
typedef int (*tid_f)(timer_t);

static int
pt_create(clockid_t clock, const port_notify_t *pn, timer_t *tid)
{
	struct ptimer *p = NULL;
	struct kqueue *kq;
	struct kevent kev;
	uintptr_t idx;
	int tfd, held, error;

	if (pn == NULL || tid == NULL)
		return EINVAL;
	/* From a signal handler that interrupted this thread holding
	   pt_lock (timer_create is not async-signal-safe in POSIX): it
	   would wait for itself. */
	if (kq_olock_mine(&pt_lock))
		return EDEADLK;
	kq_olock_lock(&pt_lock);
	for (idx = 0; idx < (uintptr_t)PT_TOP * PT_CHUNK; idx++) {
		if (idx % PT_CHUNK == 0 && atomic_load(&pt_tab[idx / PT_CHUNK])
		    == NULL) {
			struct ptimer *c = kq_calloc(PT_CHUNK, sizeof(*c));

			if (c == NULL)
				break;
			for (int j = 0; j < PT_CHUNK; j++)
				atomic_init(&c[j].pt_tfd, -1);
			atomic_store_explicit(&pt_tab[idx / PT_CHUNK], c,
			    memory_order_release);
		}
		p = pt_get(idx);
		if (!atomic_load(&p->pt_inuse) && atomic_load(&p->pt_tfd) < 0)
			break;
		p = NULL;
	}
	if (p == NULL) {
		kq_olock_unlock(&pt_lock);
		return EAGAIN;
	}
	atomic_store(&p->pt_inuse, 1);
	kq_olock_unlock(&pt_lock);
	/* Recorded at once, for kq_port_atfork_child: no fork() child keeps a
	   timerfd nothing names (registry.c). */
	kq_mkfd_begin();
	tfd = KQ_FDCALL(timerfd_create(clock, TFD_CLOEXEC | TFD_NONBLOCK));
	/* No descriptor or memory for it: POSIX's and illumos's EAGAIN
	   (the system lacks the resources for another timer). */
	error = errno == EMFILE || errno == ENFILE || errno == ENOMEM ?
	    EAGAIN : errno;
	if (tfd >= 0)
		atomic_store(&p->pt_tfd, tfd);
	kq_mkfd_end();
	if (tfd < 0)
		goto fail;
	if ((kq = port_enter(pn->portnfy_port, &held)) == NULL) {
		error = errno;
		kq_mkfd_begin();	/* released and closed: no fork between */
		if (atomic_exchange(&p->pt_tfd, -1) >= 0)
			kq_close_raw(tfd);
		kq_mkfd_end();
		goto fail;
	}
	p->pt_port = pn->portnfy_port;
	EV_SET(&kev, idx, KQ_EVFILT_PORTTIMER, EV_ADD | EV_CLEAR, 0, tfd,
	    pn->portnfy_user);
	error = port_change(kq, &kev);
	kq_leave(kq, held);
	if (error != 0) {
		/* The knote was freed without detach: the timerfd is ours. */
		kq_mkfd_begin();
		if (atomic_exchange(&p->pt_tfd, -1) >= 0)
			kq_close_raw(tfd);
		kq_mkfd_end();
		goto fail;
	}
	*tid = (timer_t)(PT_TAG | idx);
	return 0;
fail:
	atomic_store(&p->pt_inuse, 0);
	return error;
}

KQ_EXPORT int
timer_create(clockid_t clock, struct sigevent *sev, timer_t *tid)
{
	int error;

	if (sev != NULL && sev->sigev_notify == SIGEV_PORT) {
		if ((error = pt_create(clock, sev->sigev_value.sival_ptr,
		    tid)) != 0) {
			errno = error;
			return -1;
		}
		return 0;
	}
	PT_LIBC_CALL(timer_create, tcreate_f, clock, sev, tid);
}

KQ_EXPORT int
timer_settime(timer_t tid, int flags, const struct itimerspec *val,
    struct itimerspec *old)
{
	struct ptimer *p = pt_of(tid);

	if (p != NULL) {
		int fd = atomic_load(&p->pt_tfd);

		if (fd < 0) {
			errno = EINVAL;
			return -1;
		}
		return timerfd_settime(fd, (flags & TIMER_ABSTIME) ?
		    TFD_TIMER_ABSTIME : 0, val, old);
	}
	PT_LIBC_CALL(timer_settime, tset_f, tid, flags, val, old);
}

KQ_EXPORT int
timer_gettime(timer_t tid, struct itimerspec *cur)
{
	struct ptimer *p = pt_of(tid);

	if (p != NULL) {
		int fd = atomic_load(&p->pt_tfd);

		if (fd < 0) {
			errno = EINVAL;
			return -1;
		}
		return timerfd_gettime(fd, cur);
	}
	PT_LIBC_CALL(timer_gettime, tget_f, tid, cur);
}

KQ_EXPORT int
timer_getoverrun(timer_t tid)
{
	if (pt_of(tid) != NULL)
		return 0;	/* the count is in portev_events */
	PT_LIBC_CALL(timer_getoverrun, tid_f, tid);
}

KQ_EXPORT int
timer_delete(timer_t tid)
{
	struct ptimer *p = pt_of(tid);

	if (p != NULL) {
		struct kqueue *kq;
		struct kevent kev;
		int held;

		/*
		 * From a signal handler that interrupted this thread holding
		 * the port's lock or pt_lock, the timer cannot be deleted
		 * (timer_delete is not async-signal-safe in POSIX): it fails
		 * with EDEADLK and stays, rather than report a deletion that
		 * did not happen (attack helper 21: its events went on).
		 */
		if (kq_olock_mine(&pt_lock)) {
			errno = EDEADLK;
			return -1;
		}
		/* Through its port, whose knote owns the timerfd. */
		if (atomic_load(&p->pt_tfd) >= 0) {
			if ((kq = port_enter(p->pt_port, &held)) == NULL) {
				if (errno == EDEADLK)
					return -1;
			} else {
				EV_SET(&kev, (uintptr_t)tid &
				    ((UINT64_C(1) << 48) - 1),
				    KQ_EVFILT_PORTTIMER, EV_DELETE, 0, 0, NULL);
				(void)port_change(kq, &kev);
				kq_leave(kq, held);
			}
		}
		/*
		 * A timerfd still set belongs to a knote that could not be
		 * reached (its port's number closed behind libc's back): the
		 * port's destruction closes it, and the entry is reused only
		 * after that.
		 */
		kq_olock_lock(&pt_lock);
		atomic_store(&p->pt_inuse, 0);
		kq_olock_unlock(&pt_lock);
		return 0;
	}
	PT_LIBC_CALL(timer_delete, tid_f, tid);
}

/* ---- the front end ---- */

/*
 * The port of descriptor port, locked, or NULL with errno set: EBADF if
 * it is not an open descriptor, EBADFD if it is one but no port.
 */
static struct kqueue *
port_enter(int port, int *held)
{
	struct kqueue *kq;
	int error;

	if ((kq = kq_enter(port, held, &error)) == NULL) {
		errno = error == EINVAL ? EBADFD : error;
		return NULL;
	}
	if (!kq->kq_port) {
		kq_leave(kq, *held);
		errno = EBADFD;
		return NULL;
	}
	return kq;
}

/* Apply one change to the port.  Returns 0 or an errno. */
static int
port_change(struct kqueue *kq, struct kevent *kev)
{
	int error = kq_register(kq, kev);

	if (kq->kq_dead)
		error = EBADF;
	return error;
}

KQ_EXPORT int
port_create(void)
{
	return kq_create(1, 1);
}

KQ_EXPORT int
port_associate(int port, int source, uintptr_t object, int events,
    void *user)
{
	struct kqueue *kq;
	struct kevent kev;
	int held, error;

	kq_reap();	/* what closes put off (defer.c) */
	if ((kq = port_enter(port, &held)) == NULL)
		return -1;
	if (source == PORT_SOURCE_FILE) {
		const file_obj_t *fo = (const file_obj_t *)object;

		if (fo == NULL || fo->fo_name == NULL)
			error = EFAULT;
		else {
			/* Associated again: compared again, from scratch. */
			EV_SET(&kev, object, KQ_EVFILT_PORTFILE, EV_DELETE, 0,
			    0, NULL);
			(void)port_change(kq, &kev);
			EV_SET(&kev, object, KQ_EVFILT_PORTFILE,
			    EV_ADD | EV_ONESHOT, (unsigned)events, 0, user);
			error = port_change(kq, &kev);
			/* kq_change turns an attach's ENOENT into EBADF (for
			   descriptors); a file has none. */
			if (error == EBADF && !kq->kq_dead)
				error = ENOENT;
		}
	} else if (source != PORT_SOURCE_FD)
		error = EINVAL;
	else if (object > INT_MAX)
		error = EBADFD;
	else {
		EV_SET(&kev, object, KQ_EVFILT_PORTFD,
		    EV_ADD | EV_ENABLE | EV_DISPATCH, (unsigned)events, 0, user);
		error = port_change(kq, &kev);
		/* illumos: an object that is no descriptor is EBADFD. */
		if (error == EBADF && !kq->kq_dead)
			error = EBADFD;
	}
	kq_leave(kq, held);
	if (error != 0) {
		errno = error;
		return -1;
	}
	return 0;
}

KQ_EXPORT int
port_dissociate(int port, int source, uintptr_t object)
{
	struct kqueue *kq;
	struct kevent kev;
	int held, error;

	if ((kq = port_enter(port, &held)) == NULL)
		return -1;
	if (source == PORT_SOURCE_FILE) {
		EV_SET(&kev, object, KQ_EVFILT_PORTFILE, EV_DELETE, 0, 0, NULL);
		error = port_change(kq, &kev);
	} else if (source != PORT_SOURCE_FD)
		error = EINVAL;
	else if (object > INT_MAX)
		error = EBADFD;
	else {
		struct knote *kn = knote_lookup(kq, object, KQ_EVFILT_PORTFD, 1);
		/* A disabled knote's event was retrieved: not associated. */
		int fired = kn != NULL && (kn->kn_status & KN_DISABLED);

		EV_SET(&kev, object, KQ_EVFILT_PORTFD, EV_DELETE, 0, 0, NULL);
		error = port_change(kq, &kev);
		if (error == EBADF && !kq->kq_dead)
			error = EBADFD;
		else if (error == 0 && fired)
			error = ENOENT;
	}
	kq_leave(kq, held);
	if (error != 0) {
		errno = error;
		return -1;
	}
	return 0;
}

/* Identities of user events: each port_send() is an event of its own. */
static _Atomic uintptr_t port_seq;

static int
port_send1(int port, int events, void *user)
{
	struct kqueue *kq;
	struct kevent kev;
	int held, error;

	if ((kq = port_enter(port, &held)) == NULL)
		return errno;
	EV_SET(&kev, atomic_fetch_add_explicit(&port_seq, 1,
	    memory_order_relaxed), KQ_EVFILT_PORTUSER, EV_ADD | EV_ONESHOT,
	    0, events, user);
	error = port_change(kq, &kev);
	kq_leave(kq, held);
	return error;
}

KQ_EXPORT int
port_send(int port, int events, void *user)
{
	int error = port_send1(port, events, user);

	if (error != 0) {
		errno = error;
		return -1;
	}
	return 0;
}

KQ_EXPORT int
port_sendn(int ports[], int errors[], uint_t nent, int events, void *user)
{
	uint_t i;
	int sent = 0;

	if (nent == 0) {
		errno = EINVAL;
		return -1;
	}
	if (ports == NULL || errors == NULL) {
		errno = EFAULT;
		return -1;
	}
	for (i = 0; i < nent; i++) {
		errors[i] = port_send1(ports[i], events, user);
		if (errors[i] == 0)
			sent++;
	}
	return sent;
}

KQ_EXPORT int
port_alert(int port, int flags, int events, void *user)
{
	struct kqueue *kq;
	struct kevent kev;
	int held, error;

	if ((kq = port_enter(port, &held)) == NULL)
		return -1;
	/*
	 * As illumos: events 0 leaves alert mode whatever the flags; else
	 * both flags are EINVAL, PORT_ALERT_UPDATE is EBUSY in alert mode,
	 * and anything else sets (attack helper 27's F3).
	 */
	if (events == 0) {
		/* Leave alert mode (nothing to do when not in it). */
		EV_SET(&kev, 0, KQ_EVFILT_PORTALERT, EV_DELETE, 0, 0, NULL);
		error = port_change(kq, &kev);
		if (error == ENOENT)
			error = 0;
	} else if ((flags & (PORT_ALERT_SET | PORT_ALERT_UPDATE)) ==
	    (PORT_ALERT_SET | PORT_ALERT_UPDATE))
		error = EINVAL;
	else {
		EV_SET(&kev, 0, KQ_EVFILT_PORTALERT, EV_ADD,
		    flags == PORT_ALERT_UPDATE ? PORT_ALERT_UPDATE :
		    PORT_ALERT_SET, events, user);
		error = port_change(kq, &kev);
	}
	kq_leave(kq, held);
	if (error != 0) {
		errno = error;
		return -1;
	}
	return 0;
}

/* A collected kevent as the port event it stands for. */
static void
port_event_of(port_event_t *pe, const struct kevent *kev)
{
	pe->portev_events = (int)kev->data;
	pe->portev_pad = 0;
	pe->portev_user = kev->udata;
	switch (kev->filter) {
	case KQ_EVFILT_PORTFD:
		pe->portev_source = PORT_SOURCE_FD;
		pe->portev_object = kev->ident;
		break;
	case KQ_EVFILT_PORTTIMER:
		pe->portev_source = PORT_SOURCE_TIMER;
		pe->portev_object = PT_TAG | kev->ident;	/* the timer_t */
		break;
	case KQ_EVFILT_PORTFILE:
		pe->portev_source = PORT_SOURCE_FILE;
		pe->portev_object = kev->ident;
		break;
	case KQ_EVFILT_PORTALERT:
		pe->portev_source = PORT_SOURCE_ALERT;
		pe->portev_object = 0;
		break;
	default:
		pe->portev_source = PORT_SOURCE_USER;
		pe->portev_object = 0;
		break;
	}
}

/*
 * Events pending on a locked port (port_getn with max 0): the queue, as
 * illumos's portq_nent, also in alert mode, the alert not counted (attack
 * helper 27's F2).
 */
static uint_t
port_count(struct kqueue *kq)
{
	struct knote *kn;
	int64_t n;

	n = kq_absorb(kq);
	STAILQ_FOREACH(kn, &kq->kq_head, kn_tqe)
		if (!(kn->kn_status & (KN_DROPPED | KN_DISABLED)) &&
		    kn != kq->kq_alert)
			n++;
	return n > UINT_MAX ? UINT_MAX : (uint_t)n;
}

static int
ts_valid(const struct timespec *ts)
{
	return ts == NULL || (ts->tv_sec >= 0 && ts->tv_nsec >= 0 &&
	    ts->tv_nsec < 1000000000);
}

static int64_t
ts_ns(const struct timespec *ts)
{
	if (ts->tv_sec > INT64_MAX / 1000000000 - 1)
		return INT64_MAX;
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/*
 * Collect up to max events into list, blocking until at least want were
 * collected or the deadline passes.  Returns 0 (*got events) or an errno
 * (ETIME: the timeout expired with *got < want).  kq entered and locked.
 */
static int
port_collect(struct kqueue *kq, port_event_t *list, uint_t max, uint_t want,
    const struct timespec *tsp, int *held, uint_t *got)
{
	struct kevent kev[PORT_CHUNK];
	struct timespec zero = { 0, 0 }, left, *lp;
	int64_t deadline = 0, t;
	int n, i, chunk, alert = 0, nonblock;
	uint_t k = 0;

	nonblock = tsp != NULL && tsp->tv_sec == 0 && tsp->tv_nsec == 0;
	if (tsp != NULL && !nonblock)
		deadline = kq_now_ns() + (ts_ns(tsp) > INT64_MAX / 2 ?
		    INT64_MAX / 2 : ts_ns(tsp));
	while (k < max && !alert) {
		chunk = max - k < PORT_CHUNK ? (int)(max - k) : PORT_CHUNK;
		if (k >= want || nonblock)
			lp = &zero;	/* what is there, without waiting */
		else if (tsp == NULL)
			lp = NULL;
		else if ((t = deadline - kq_now_ns()) <= 0)
			lp = &zero;	/* a last look */
		else {
			left.tv_sec = t / 1000000000;
			left.tv_nsec = t % 1000000000;
			lp = &left;
		}
		/* Once it holds events, a wait for more is no
		   cancellation point: they would go with the thread. */
		n = kq_port_scan(kq, kev, chunk, lp, held, k == 0);
		if (n < 0) {
			*got = k;
			return -n;
		}
		for (i = 0; i < n; i++) {
			/*
			 * The alert, which comes alone, ends the call.  A
			 * call that took events before it returns those,
			 * and the next call the alert (port_alert.3, LINUX
			 * NOTES): the alert alone, as illumos returns it,
			 * would leave them nowhere (attack helper 27's F1).
			 */
			if (kev[i].filter == KQ_EVFILT_PORTALERT) {
				alert = 1;
				if (k > 0)
					break;
			}
			port_event_of(&list[k++], &kev[i]);
		}
		if (k >= want || nonblock) {
			if (n < chunk)
				break;
		} else if (n == 0) {
			/* A blocking wait ended with fewer than asked for:
			   the deadline passed. */
			*got = k;
			return ETIME;
		}
	}
	*got = k;
	return 0;
}

KQ_EXPORT int
port_getn(int port, port_event_t list[], uint_t max, uint_t *nget,
    struct timespec *timeout)
{
	struct kqueue *kq;
	uint_t want, got;
	int held, error;

	/* A cancellation point, as illumos's (kq_wait_cancellable). */
	pthread_testcancel();
	if ((kq = port_enter(port, &held)) == NULL)
		return -1;
	if (nget == NULL || !ts_valid(timeout) || (max > 0 && list == NULL)) {
		kq_leave(kq, held);
		errno = EINVAL;
		return -1;
	}
	if (max == 0) {
		*nget = port_count(kq);
		kq_leave(kq, held);
		return 0;
	}
	want = *nget;
	if (want > max) {
		kq_leave(kq, held);
		errno = EINVAL;
		return -1;
	}
	if (want == 0) {
		kq_leave(kq, held);
		return 0;
	}
	if (max > PORT_MAX_LIST)
		max = PORT_MAX_LIST;
	error = port_collect(kq, list, max, want, timeout, &held, &got);
	kq_leave(kq, held);
	*nget = got;
	if (error != 0) {
		errno = error;
		return -1;
	}
	return 0;
}

KQ_EXPORT int
port_get(int port, port_event_t *pe, struct timespec *timeout)
{
	struct kqueue *kq;
	uint_t got;
	int held, error;

	/* A cancellation point, as illumos's (kq_wait_cancellable). */
	pthread_testcancel();
	if ((kq = port_enter(port, &held)) == NULL)
		return -1;
	if (!ts_valid(timeout))
		error = EINVAL;
	else if (pe == NULL)
		error = EFAULT;
	else {
		error = port_collect(kq, pe, 1, 1, timeout, &held, &got);
		if (error == 0 && got == 0)
			error = ETIME;	/* a zero timeout and nothing there */
	}
	kq_leave(kq, held);
	if (error != 0) {
		errno = error;
		return -1;
	}
	return 0;
}
