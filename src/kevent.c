/*
 * kevent.c -- kevent(): apply the changelist (kq_register), then collect
 * events (kq_scan), following FreeBSD's kqueue_kevent/kqueue_scan.
 *
 * Collection has two sources:
 *   A. the active list kq_head, for knotes whose readiness userspace
 *      tracks; scanned FreeBSD-style: every knote present when the pass
 *      starts is looked at once, re-checked with f_event, and a
 *      level-triggered one goes back to the tail (round robin);
 *   B. the epoll set, for everything the kernel tracks; epoll hands ready
 *      descriptors out round robin itself (level-triggered items go to the
 *      tail of its ready list), and each event is translated into the
 *      kevents of the knotes on that descriptor.
 * A knote is delivered at most once per call, and while it is on kq_head
 * the active list, not epoll, owns it.
 *
 * The identity of a call (FreeBSD's marker): kq_scan bumps kq_scanid
 * under kq_lock as it begins, and again just before it returns with
 * events.  A call that copies a knote out stamps it with kq_scanid
 * (kn_scanid; a new knote's 0 matches no call: the count is at least 1
 * once one began), and
 * never lets go of the lock once it has an event (it blocks only while it
 * has none), so kn_delivered() always means "delivered by the call that
 * holds the lock now": concurrent calls never see each other's marks, and
 * nothing has to be cleared on the way out.  The count is 64 bits: it does
 * not wrap.
 *
 * Every call ends on a bound kq controls: the active list is scanned for
 * the entries present when the pass starts; the epoll set is fetched again
 * only while a fetch filled its batch and made progress (a knote delivered
 * or queued: at most once each per call, or a batch of internal sources
 * only), and never more than (nevents + registrations) / batch + 2 +
 * KQ_NSRC times per round (batch: at least KQ_MINBATCH events a fetch);
 * blocking waits are bounded by the deadline, which is checked after each
 * of them.
 *
 * kq_lock is held throughout except around an epoll_wait() that may block,
 * and around the first one of a call that finds the active list empty (the
 * fast round: that wait is the whole collection, see kq_scan).
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kq_int.h"
#include "fault.h"
#include "fdreg.h"
#include "ksys.h"
#include "sigshim.h"

#define KQ_EPBATCH	128	/* epoll events fetched per epoll_wait */
#define KQ_ABSORBN	512	/* per kq_absorb, in the kqueue's buffer */
#define KQ_ABSORBMIN	16	/* per kq_absorb without that buffer */
#define KQ_MINBATCH	32	/* the least a collection round fetches at once */
#define KQ_OWNBATCH	128	/* a round's own batch: 2 KiB with its counts */
#define KQ_REPOLL_MS	5	/* re-check period for EVFILT_EMPTY */

/*
 * Is kq->kq_fd still the epoll instance we created?  The proof: our
 * private doorbell eventfd is registered in that instance and in no other,
 * so kcmp(KCMP_EPOLL_TFD) finds it only there; where kcmp is refused,
 * EPOLL_CTL_MOD of it succeeds only there (ENOENT on another epoll set,
 * EINVAL/EBADF on another file or a closed number) and restates the
 * doorbell's registration unchanged.  Called before kq acts destructively
 * on the number (kq_rebuild's dup3, the fork child's close) and when a
 * system call on it failed.  Async-signal-safe.
 */
int
kq_owned(struct kqueue *kq)
{
	if (kq->kq_dead)
		return 0;
	return kq_owned_number(kq);
}

/*
 * kq_owned without the look at kq_dead: for closefrom(), which asks with
 * reg_lock held, not kq_lock (kq_registry_own_fds_locked).  The doorbell's
 * number and kq_fd change only under reg_lock.
 */
int
kq_owned_number(const struct kqueue *kq)
{
	struct epoll_event ev;
	int bell = kq->kq_src[KQ_SRC_BELL].ks_fd, r;

	if (bell < 0 || kq->kq_fd < 0)
		return 0;
	if ((r = epoll_holds(kq->kq_fd, bell)) >= 0)
		return r;
	ev.events = EPOLLIN;
	ev.data.u64 = KQ_SRCKEY | KQ_SRC_BELL;
	return ksys_epoll_ctl(kq->kq_fd, EPOLL_CTL_MOD, bell, &ev) == 0;
}

/* The kqueue descriptor was closed or reused: unmap the kqueue. */
static void
kq_kill(struct kqueue *kq)
{
	kq->kq_dead = 1;
	/* Unless kq's own close() in a signal handler closed the number
	   (kq_retire_later): then its descriptors are its own. */
	kq->kq_unowned = !atomic_load(&kq->kq_retiring);
	kq_registry_forget(kq->kq_fd, kq);
}

static int
kq_fd_valid(uintptr_t fd)
{
	return fcntl((int)fd, F_GETFD) >= 0;
}

/*
 * Apply one change.  Returns 0 or an errno (which becomes an EV_ERROR
 * entry).  kev->fflags/data may be rewritten as on FreeBSD.  Inlined into
 * kevent() (see ksys.h on returns across system calls); kq_register() is
 * the same for the filters that register knotes themselves.
 */
static inline __attribute__((always_inline)) int
kq_change(struct kqueue *kq, struct kevent *kev)
{
	const struct filterops *fop;
	struct knote *kn;
	int error, retried = 0, queued;

	if (KQ_UNLIKELY((kev->flags & (EV_ENABLE | EV_DISABLE)) ==
	    (EV_ENABLE | EV_DISABLE)))
		return EINVAL;
	fop = filter_lookup(kev->filter);
	if (KQ_UNLIKELY(fop == NULL ||
	    (kev->filter < -EVFILT_SYSCOUNT && !kq->kq_port))) {
		/* FreeBSD's null filters (AIO, LIO, SENDFILE): ENXIO. */
		if (kev->filter == EVFILT_SENDFILE || kev->filter == EVFILT_LIO)
			return ENXIO;
		return EINVAL;
	}
	if (KQ_UNLIKELY((kev->flags & EV_ADD) && (kev->flags & EV_KEEPUDATA)))
		return EINVAL;
	if (KQ_UNLIKELY(kev->flags & EV_WAKEONE)) {
		if ((kev->filter != EVFILT_READ && kev->filter != EVFILT_WRITE) ||
		    (kev->flags & (EV_ONESHOT | EV_DISPATCH)))
			return EINVAL;
	}
	if (KQ_UNLIKELY(fop->f_isfd && (kev->ident > INT_MAX ||
	    (kq_fdinternal(kev->ident) && ((kq_intfd_has(kq, kev->ident) &&
	    kq_holds_number(kq, (int)kev->ident)) ||
	    kq_registry_internal((int)kev->ident, kq))))))
		return EBADF;	/* not a number the program opened */
	if (KQ_UNLIKELY(kq->kq_dead))
		return EBADF;

again:
	kn = knote_lookup(kq, kev->ident, kev->filter, fop->f_isfd);
	if (kn == NULL) {
		if (!(kev->flags & EV_ADD)) {
			if (fop->f_isfd && !kq_fd_valid(kev->ident))
				return EBADF;
			return ENOENT;
		}
		if (fop->f_isfd && kev->ident >= (uintptr_t)kq->kq_fdtabsize &&
		    !kq_fd_valid(kev->ident))
			return EBADF;	/* before growing the table for it */
		kn = knote_alloc(kq, fop);
		if (KQ_UNLIKELY(kn == NULL))
			return ENOMEM;
		kn->kn_ident = kev->ident;
		kn->kn_filter = (int8_t)kev->filter;
		kn->kn_udata = kev->udata;
		kn->kn_flags = kev->flags & ~(EV_ADD | EV_DELETE | EV_ENABLE |
		    EV_DISABLE | EV_FORCEONESHOT | EV_KEEPUDATA);
		if (kev->flags & EV_DISABLE)
			kn->kn_status |= KN_DISABLED;
		error = fop->f_modify ? fop->f_modify(kq, kn, kev) : 0;
		if (KQ_LIKELY(error == 0)) {
			kn->kn_sfflags = kev->fflags;
			if (fop->f_modify == NULL)
				kn->kn_sdata = kn_clamp32(kev->data);
			error = knote_link(kq, kn, fop->f_isfd);
		} else {
			knote_free(kq, kn);
			return error;
		}
		if (KQ_UNLIKELY(error != 0)) {
			knote_free(kq, kn);
			return error;
		}
		kev->fflags = 0;
		kev->data = 0;
		error = fop->f_attach ? fop->f_attach(kq, kn) : 0;
		if (KQ_UNLIKELY(error != 0)) {
			int stale = fop->f_isfd && kn->kn_link != NULL &&
			    (error == ENOENT || error == EBADF);

			knote_unlink(kq, kn, fop->f_isfd);
			/* f_attach may have queued it (a regular file). */
			kn->kn_status |= KN_DROPPED;
			knote_dropped(kq, kn);
			if (stale) {
				/*
				 * The chain belonged to a descriptor that was
				 * closed; the number now names another file.
				 */
				knote_drop_fd(kq, (int)kev->ident);
				if (!retried++)
					goto again;
			}
			if (error == ENOENT)
				error = EBADF;
			if (error == ELOOP)
				error = EINVAL;
			return error;
		}
		kn->kn_status |= KN_ATTACHED;
		if (KQ_UNLIKELY(kn->kn_status & KN_QUEUED))
			kq_bell_owe(kq);	/* true at once, in userspace */
		return 0;
	}

	if (kev->flags & EV_DELETE) {
		int fd = (int)kn->kn_ident;

		error = knote_drop(kq, kn);
		if (KQ_UNLIKELY(fop->f_isfd &&
		    (error == EBADF || error == ENOENT))) {
			/*
			 * The kernel no longer has the registration: the
			 * descriptor was closed (EBADF, as FreeBSD's fd
			 * lookup) or the number names another file (ENOENT:
			 * that file has no knote).
			 */
			knote_drop_fd(kq, fd);
			return error;
		}
		return 0;
	}

	/* A changed knote may be true now, its readiness unchanged (a
	   lower NOTE_LOWAT): not an echo (kq_quiet_echo). */
	kq->kq_actgen++;
	queued = kn->kn_status & KN_QUEUED;
	if (kev->flags & EV_FORCEONESHOT) {
		kn->kn_flags |= EV_ONESHOT;
		kn->kn_status |= KN_ACTIVE;
		knote_enqueue(kq, kn);
	}
	if (kev->flags & EV_ENABLE)
		kn->kn_status &= ~KN_DISABLED;
	else if (kev->flags & EV_DISABLE)
		kn->kn_status |= KN_DISABLED;
	if (!(kev->flags & EV_KEEPUDATA))
		kn->kn_udata = kev->udata;
	if (fop->f_modify != NULL)
		error = fop->f_modify(kq, kn, kev);
	else {
		kn->kn_sfflags = kev->fflags;
		kn->kn_sdata = kn_clamp32(kev->data);
		error = 0;
	}
	if (error == 0 && fop->f_update != NULL)
		error = fop->f_update(kq, kn, (kev->flags & EV_ADD) != 0);
	if (error != 0 && fop->f_isfd && (error == ENOENT || error == EBADF)) {
		/* The descriptor was closed (and maybe reused) under us. */
		int fd = (int)kev->ident;

		knote_drop_fd(kq, fd);
		if ((kev->flags & EV_ADD) && !retried++ && kq_fd_valid(kev->ident))
			goto again;
		return kq_fd_valid(kev->ident) ? ENOENT : EBADF;
	}
	if (!queued && (kn->kn_status & KN_QUEUED))
		kq_bell_owe(kq);	/* an activation in userspace */
	return error;
}

int
kq_register(struct kqueue *kq, struct kevent *kev)
{
	return kq_change(kq, kev);
}

/*
 * The epoll events that concern a knote of filter on a descriptor's shared
 * registration (0: the filter does not use the registration).
 */
static uint32_t
kq_epoll_want(int filter)
{
	/* READ first and apart: a switch would be a table, a cache line
	   more for nearly every event. */
	if (filter == EVFILT_READ)
		return EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR;
	switch (filter) {
	case EVFILT_WRITE:
	case EVFILT_EMPTY:
		return EPOLLOUT | EPOLLHUP | EPOLLERR;
	case EVFILT_PROCDESC:
		return EPOLLIN | EPOLLHUP | EPOLLERR;
	case KQ_EVFILT_PORTFD:
		return EPOLLIN | EPOLLRDHUP | EPOLLPRI | EPOLLOUT | EPOLLHUP |
		    EPOLLERR;
	default:
		return 0;
	}
}

/*
 * After a knote was copied out: apply EV_ONESHOT, EV_CLEAR and EV_DISPATCH
 * (both of the last two may apply, as in FreeBSD's kqueue_scan).
 */
static void
kq_delivered(struct kqueue *kq, struct knote *kn,
    const struct filterops *fop)
{
	kn->kn_status &= (uint16_t)~KN_ACTIVE;
	kn->kn_scanid = kq->kq_scanid;
	if (kn->kn_flags & EV_ONESHOT) {
		knote_drop(kq, kn);
		return;
	}
	if ((kn->kn_flags & EV_CLEAR) && fop->f_clear != NULL)
		fop->f_clear(kq, kn);
	if (kn->kn_flags & EV_DISPATCH) {
		kn->kn_status |= KN_DISABLED;
		if (fop->f_update != NULL)
			(void)fop->f_update(kq, kn, 0);
	} else if (kn->kn_flags & EV_CLEAR) {
		/* edge-triggered: nothing until new activity */
	} else if (!fop->f_isfd || kq_epoll_want(kn->kn_filter) == 0 ||
	    (kn->kn_status & KN_EMUL) || (kn->kn_reg & R_NOPOLL) ||
	    kn->kn_filter == EVFILT_EMPTY) {
		/*
		 * Level-triggered and tracked here: look again next scan.
		 * EMPTY too: its registration is edge-triggered (the empty
		 * state is the scan's SIOCOUTQ), and a knote that is still
		 * true keeps the kqueue readable, as FreeBSD's kqueue_scan
		 * re-queues it.
		 */
		knote_enqueue(kq, kn);
	}
}

static void
kq_prefill(struct kevent *o, const struct knote *kn)
{
	o->ident = kn->kn_ident;
	o->filter = kn->kn_filter;
	o->flags = kn->kn_flags;
	o->fflags = 0;
	o->data = 0;
	o->udata = kn->kn_udata;
	o->ext[0] = o->ext[1] = o->ext[2] = o->ext[3] = 0;
}

/*
 * Does kn's number still name the file kn was registered on?  Asked
 * before an fd knote from the active list is reported: its filter looked
 * at the number itself (a level-triggered knote kq tracks, one emulated
 * beside an EV_CLEAR one, one left over from a short eventlist), and a
 * number closed behind the C library's back (a raw close, fclose()) and
 * given to another file would otherwise report that file, with the old
 * udata, for as long as it is ready.  Proven by the epoll registration
 * (kcmp) or, for a file epoll refuses, by its digest (kn_fileid).  Not
 * proven: 0, the set marked for a rebuild (a dup() may keep the old
 * file's registration).  Cannot tell: 1.
 */
static int
kq_number_proven(struct kqueue *kq, const struct knote *kn)
{
	int fd = (int)kn->kn_ident;

	if (kn->kn_reg & R_REG) {
		if (epoll_holds(kq->kq_fd, fd) != 0)
			return 1;
		kq->kq_zombie = 1;
		return 0;
	}
	return kn->kn_fileid == 0 || fd_fileid(fd) == kn->kn_fileid;
}

/* Pass A: the active list.  Returns the number of kevents written. */
static int
kq_scan_active(struct kqueue *kq, struct kevent *out, int room)
{
	int cnt = kq->kq_count + kq->kq_ndrop, k = 0;

	/* cnt bounds the pass (a knote put back goes to the tail); a sweep
	   on the way (knote_dropped) leaves the list shorter. */
	while (cnt-- > 0 && k < room) {
		struct knote *kn = STAILQ_FIRST(&kq->kq_head);
		const struct filterops *fop;
		int r;

		if (kn == NULL)
			break;
		STAILQ_REMOVE_HEAD(&kq->kq_head, kn_tqe);
		kn->kn_status &= ~KN_QUEUED;
		if (kn->kn_status & KN_DROPPED) {
			kq->kq_ndrop--;
			knote_free(kq, kn);
			continue;
		}
		kq->kq_count--;
		if (kn->kn_status & KN_DISABLED)
			continue;
		if (kn_delivered(kq, kn)) {
			/* Already reported by this call: keep it for later. */
			knote_enqueue(kq, kn);
			continue;
		}
		fop = filter_lookup(kn->kn_filter);
		kq_prefill(&out[k], kn);
		r = fop->f_event(kq, kn, 0, &out[k]);
		if (r == KN_EVDROP) {
			knote_drop(kq, kn);
			continue;
		}
		if (r < 0 || (r > 0 && fop->f_isfd &&
		    !kq_number_proven(kq, kn))) {
			knote_drop_fd(kq, (int)kn->kn_ident);
			continue;
		}
		if (r == 0) {
			if (!((kn->kn_status & KN_ACTIVE) &&
			    (kn->kn_flags & EV_ONESHOT))) {
				/* Not ready: a disarmed dispatch
				   registration must be re-armed. */
				if ((kn->kn_flags & EV_DISPATCH) &&
				    fop->f_isfd)
					fdreg_sync(kq, (int)kn->kn_ident);
				continue;
			}
			/* EV_FORCEONESHOT: reported even if not ready. */
		}
		k++;
		kq_delivered(kq, kn, fop);
	}
	return k;
}

/*
 * Was epoll event e, fetched by a wait that began when kq_regseq was seq,
 * possibly made before a registration change that concerns it?  Only a
 * change of its own descriptor's registration (kq_fdseq), a rebuild of
 * the set, or -- when the number has no knote left -- any change counts:
 * other threads re-arming other descriptors do not make it stale.
 */
static int
kq_ev_stale(const struct kqueue *kq, const struct epoll_event *e,
    uint64_t seq)
{
	int fd = (int)e->data.u64;

	if (seq == kq->kq_regseq || (e->data.u64 & KQ_SRCKEY))
		return 0;
	if (kq->kq_rebuiltseq > seq || fd < 0 ||
	    fd >= kq->kq_fdtabsize || kq->kq_fdtab[fd] == NULL)
		return 1;
	return kq->kq_fdseq[fd] > seq;
}

/*
 * FIONREAD of the descriptor of epoll event e, taken after a wait and
 * before kq_lock is taken again (a read-only query on a number the set has
 * just reported): the count, -errno if the descriptor has none (a listening
 * socket, an eventfd: the filter then goes straight to its other ways), or
 * INT_MIN when not asked (a listening socket's key says KQ_NOCOUNT:
 * EVFILT_READ asks for its listen queue instead).  kq_translate uses it
 * only if the event is not stale (kq_ev_stale): the number then still
 * names the registered file, unless the application closed it behind the
 * C library's back.
 * EVFILT_READ's one system call, made outside the lock, so that threads
 * sharing a kqueue make it in parallel as they would on a raw epoll set.
 */
static int
kq_prefetch_nread(const struct epoll_event *e)
{
	int n, r;

	if ((e->data.u64 & (KQ_SRCKEY | KQ_NOCOUNT)) || !(e->events & EPOLLIN))
		return INT_MIN;
	r = ksys_ioctl((int)e->data.u64, FIONREAD, &n);
	return r != 0 ? r : n;
}

/*
 * kq_prefetch_nread for an event fetched under kq_lock, if its descriptor
 * has a READ knote this call can still deliver; INT_MIN otherwise (no
 * system call for a knote that will not use it).
 */
static int
kq_collect_nread(struct kqueue *kq, const struct epoll_event *e)
{
	struct knote *kn;

	if (kq->kq_port || (e->data.u64 & KQ_SRCKEY))
		return INT_MIN;
	for (kn = knote_fdchain(kq, (int)e->data.u64); kn != NULL;
	    kn = kn->kn_link)
		if (kn->kn_filter == EVFILT_READ)
			return ((kn->kn_status & (KN_DISABLED | KN_QUEUED |
			    KN_DROPPED)) || kn_delivered(kq, kn)) ? INT_MIN :
			    kq_prefetch_nread(e);
	return INT_MIN;
}

/*
 * Descriptors whose fresh events of a level-triggered registration gave no
 * kevent in one round of translations, each once, at most KQ_NQUIET (more
 * are verified in a later round: each round drops some).  See
 * kq_quiet_check.
 */
struct kq_quiet {
	int	 n;
	int	 fd[KQ_NQUIET];
};

static void
kq_quiet_add(struct kq_quiet *q, int fd)
{
	int i;

	for (i = 0; i < q->n; i++)
		if (q->fd[i] == fd)
			return;
	if (q->n < KQ_NQUIET)
		q->fd[q->n++] = fd;
}

/*
 * Pass B: translate one epoll event.  Returns the kevents written.
 * stale: the event may predate a change of its registration (kq_ev_stale);
 * nread: kq_prefetch_nread()'s count, used only if the event is not stale,
 * or INT_MIN; quiet collects the descriptor if its event was quiet.
 */
static int
kq_translate(struct kqueue *kq, const struct epoll_event *e,
    struct kevent *out, int room, int stale, int nread, struct kq_quiet *quiet)
{
	struct knote *kn, *next, *chain;
	int fd, k = 0, fired, asked = 0;
	uint32_t hint;

	if (e->data.u64 & KQ_SRCKEY) {
		kq_src_dispatch(kq, e->data.u64, e->events);
		return 0;
	}
	fd = (int)e->data.u64;
	chain = knote_fdchain(kq, fd);
	fired = fdreg_fired(kq, chain);
	if (chain == NULL && !stale) {
		/*
		 * The kernel reports a registration we hold no knote for,
		 * and no registration changed while we waited: its number
		 * was closed while a dup() (or a child) kept the open file,
		 * so it cannot be removed by number.  Rebuild the set.
		 */
		kq->kq_zombie = 1;
		return 0;
	}
	for (kn = chain; kn != NULL; kn = next) {
		const struct filterops *fop;
		uint32_t want;
		int r;

		next = kn->kn_link;
		if (kn->kn_status & (KN_DISABLED | KN_QUEUED | KN_DROPPED))
			continue;
		want = kq_epoll_want(kn->kn_filter);
		if (!(e->events & want))
			continue;
		if (kn_delivered(kq, kn)) {
			/*
			 * Reported earlier in this call.  A level-triggered
			 * registration reports it again by itself; an edge
			 * may be new activity, which the active list keeps
			 * for the next call.
			 */
			if (kn->kn_reg & R_ET)
				knote_enqueue(kq, kn);
			continue;
		}
		if (k == room) {
			/* No room: the active list reports it next time. */
			knote_enqueue(kq, kn);
			continue;
		}
		fop = filter_lookup(kn->kn_filter);
		kq_prefill(&out[k], kn);
		/*
		 * If another thread changed registrations while we waited,
		 * the event may predate them (a dispatched knote re-enabled
		 * after its data was consumed): re-check instead.  READ
		 * verifies what it uses itself (KQ_HINT_STALE): a byte
		 * count proves readability without a second look.
		 */
		hint = e->events;
		if (kn->kn_filter == EVFILT_READ) {
			if (stale)
				hint |= KQ_HINT_STALE;
			else if (nread != INT_MIN) {
				out[k].data = nread;
				hint |= KQ_HINT_NREAD;
			}
		} else if (stale)
			hint = 0;
		r = fop->f_event(kq, kn, hint, &out[k]);
		asked++;
		if (r == KN_EVDROP) {
			knote_drop(kq, kn);
			continue;
		}
		if (r < 0) {
			/*
			 * The number was closed: its knotes go with it.  Its
			 * registration outlives it (epoll just reported it:
			 * a dup() keeps the file), so rebuild the set.
			 */
			knote_drop_fd(kq, fd);
			kq->kq_zombie = 1;
			break;
		}
		if (r == 0)
			continue;
		k++;
		kq_delivered(kq, kn, fop);
	}
	if (fired)
		fdreg_sync(kq, fd);
	/*
	 * A fresh event of a level-triggered registration that no knote
	 * found ready (see kq_quiet_check).  An edge-triggered or one-shot
	 * registration cannot make waits return again and again by itself.
	 */
	if (k == 0 && asked > 0 && !stale &&
	    (chain = knote_fdchain(kq, fd)) != NULL &&
	    (chain->kn_reg & (R_REG | R_ET | R_ONESHOT)) == R_REG)
		kq_quiet_add(quiet, fd);
	return k;
}

/*
 * kq_translate for the plain event, the kind a server's waits bring
 * nearly always: not stale (a collection round under kq_lock, or a wait
 * while no registration changed), no EPOLLERR, and the descriptor has one
 * knote, an enabled, level-triggered READ without EV_ONESHOT, EV_CLEAR,
 * EV_DISPATCH or NOTE_LOWAT, which filt_read_plain can answer (sockets,
 * and any descriptor at its end of file with nothing queued).
 * Writes the kevent and returns 1, exactly as kq_translate would; returns
 * -1, having changed nothing kq_translate would not, for any other event,
 * which the caller then gives to kq_translate.  A short path beside the
 * general one: a wake-up touches fewer cold lines (docs/HTTPD.md).
 * kq_lock held.
 */
static int
kq_translate_plain(struct kqueue *kq, const struct epoll_event *e,
    struct kevent *out, int nread)
{
	struct knote *kn;

	if ((e->data.u64 & KQ_SRCKEY) || (e->events & EPOLLERR) ||
	    (kn = knote_fdchain(kq, (int)e->data.u64)) == NULL ||
	    kn->kn_link != NULL || kn->kn_filter != EVFILT_READ ||
	    (kn->kn_status & (KN_DISABLED | KN_QUEUED | KN_DROPPED |
	    KN_ACTIVE | KN_EMUL)) ||
	    (kn->kn_flags & (EV_ONESHOT | EV_CLEAR | EV_DISPATCH)) ||
	    (kn->kn_sfflags & NOTE_LOWAT) ||
	    (kn->kn_reg & (R_REG | R_ET | R_ONESHOT | R_NOPOLL)) != R_REG ||
	    kn_delivered(kq, kn) ||
	    !(e->events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)))
		return -1;
	kq_prefill(out, kn);
	if (!filt_read_plain(kq, kn, e->events, nread, out))
		return -1;
	/* kq_delivered: level-triggered, and the kernel tracks it. */
	kn->kn_scanid = kq->kq_scanid;
	return 1;
}

/*
 * The descriptors in q had fresh events of level-triggered
 * registrations that gave no kevent.  A lost race (another thread read
 * the data first) does that once; so does a number closed behind the C
 * library's back and reused while a dup() keeps the old, registered file
 * ready -- and that one would wake every wait at once, for nothing, until
 * the deadline.  fdreg_verify proves each number still ours or drops it,
 * so that no wait returns to it again.  Costs nothing on waits whose
 * events all deliver.
 */
static void
kq_quiet_check(struct kqueue *kq, const struct kq_quiet *q)
{
	int i;

	for (i = 0; i < q->n; i++)
		fdreg_verify(kq, q->fd[i]);
}

/*
 * Replace the kqueue's epoll set by a fresh one holding the same
 * registrations, minus those whose descriptor number was closed while a
 * dup() kept the open file (and its registration) alive: epoll offers no
 * way to remove those, and a level-triggered one would make every wait
 * return at once.  dup3() puts the new set under the kqueue's descriptor
 * number, which is proven ours first (kq_owned): kq_lock is held and
 * kq_dead is clear, so no close() through the C library can come between
 * (see close.c).  Pollers of the kqueue descriptor itself (an outer epoll
 * or kqueue) lose their registration; see kevent.2.  Returns 0, or the
 * errno that prevented it (EMFILE, also when the kqueue's number is at or
 * above RLIMIT_NOFILE, ENFILE, ENOMEM: the zombie stays and the caller
 * reports the error instead of spinning on it).
 */
static int
kq_rebuild_set(struct kqueue *kq)
{
	int nfd, fl, e = 0;

	if (!kq_owned(kq))
		return EBADF;
	/*
	 * The waits' number is put under the new set below, and asked
	 * whether each internal descriptor is still kq's (fdreg_readd_all):
	 * only while it is still the set.  Closed behind the C library's
	 * back and reused, it is the program's: released, not touched, and
	 * the waits go back to kq_fd.
	 */
	if (kq->kq_waitfd >= 0 && !kq_holds_number(kq, kq->kq_waitfd)) {
		kq_intfd_release(kq, kq->kq_waitfd);
		kq->kq_waitfd = -1;
	}
	fl = fcntl(kq->kq_fd, F_GETFD);
	if (fl < 0)
		return errno;
	kq_reg_lock();		/* no fork() child inherits nfd */
	nfd = KQ_FDCALL(epoll_create1(EPOLL_CLOEXEC));
	if (nfd < 0) {
		e = errno;
		kq_reg_unlock();
		return e;
	}
	if ((e = fdreg_readd_all(kq, nfd)) == 0) {
		struct epoll_event ev;

		/*
		 * Threads blocked in epoll_wait() sleep on the old set, which
		 * nothing will wake any more: make the doorbell's registration
		 * there permanently ready (an eventfd is always writable), so
		 * each of them wakes in turn and goes on with the new set.
		 */
		ev.events = EPOLLIN | EPOLLOUT;
		ev.data.u64 = KQ_SRCKEY | KQ_SRC_BELL;
		(void)ksys_epoll_ctl(kq->kq_fd, EPOLL_CTL_MOD,
		    kq->kq_src[KQ_SRC_BELL].ks_fd, &ev);
		if (kq_dup3_raw(nfd, kq->kq_fd,
		    (fl & FD_CLOEXEC) ? O_CLOEXEC : 0) >= 0) {
			kq->kq_rebuiltseq = ++kq->kq_regseq;
			/*
			 * The waits' number follows (kq_waitfd): its old set
			 * wakes its sleepers through the doorbell above.  If
			 * it cannot (a lowered RLIMIT_NOFILE), a lower number
			 * takes the new set, or else the waits go back to
			 * kq_fd rather than to a set that is ready for ever
			 * (and the kqueue's destruction, which proves its
			 * numbers through kq_waitfd, can close none of them:
			 * they stay open).
			 */
			if (kq->kq_waitfd >= 0 &&
			    (atomic_load(&kq->kq_retiring) & KQ_RET_PEND)) {
				/* A handler's close_range() or closefrom()
				   came during the swap (kq_rebuild): it may
				   have closed this number too, which a dup3
				   would open again (attack helper 33's D2).
				   The kqueue dies next; the number is left. */
			} else if (kq->kq_waitfd >= 0 && kq_dup3_raw(nfd,
			    kq->kq_waitfd, O_CLOEXEC) < 0) {
				int w = KQ_FDCALL(fcntl(nfd, F_DUPFD_CLOEXEC,
				    0));

				kq_intfd_release(kq, kq->kq_waitfd);
				kq_close_raw(kq->kq_waitfd);
				kq->kq_waitfd = -1;
				if (w >= 0 && kq_intfd_claim(kq, w) != 0)
					kq_close_raw(w);
				else if (w >= 0)
					kq->kq_waitfd = w;
			}
		} else {
			if ((e = errno) == EBADF)
				/* Both numbers are ours (kq_owned, nfd just
				   made): the kqueue's is at or above a
				   lowered RLIMIT_NOFILE, where dup3 cannot
				   put a file. */
				e = EMFILE;
			/* The old set stays: its doorbell ready only while
			   it rings, or every wait would return at once
			   (attack helper 23's F1: each idle wait spun). */
			ev.events = kq->kq_src[KQ_SRC_BELL].ks_events;
			(void)ksys_epoll_ctl(kq->kq_fd, EPOLL_CTL_MOD,
			    kq->kq_src[KQ_SRC_BELL].ks_fd, &ev);
		}
	}
	kq_close_raw(nfd);
	kq_reg_unlock();
	return e;
}

/*
 * kq_rebuild_set, with the number held against the one close that does
 * not take kq_lock: a signal handler's inside another of kq's locks
 * (close.c, kq_retire_claim).  Such a close made between kq_owned and the
 * dup3 would be undone by it (the number open again under the new set,
 * the program believing it closed: a17 kept a whole kqueue, 1 run in
 * about 600), or the set put over another file that took the number in
 * between.  So the rebuild does not start once a handler claimed the
 * number (KQ_RET_SELF: it was closed, EBADF), and a handler that comes
 * during the swap (KQ_RET_SWAP) leaves its close to the rebuild, made
 * here as kq_retire_kq makes one (KQ_RET_PEND).
 */
static int kq_hold(struct kqueue *kq, int *held);

static int
kq_rebuild(struct kqueue *kq, int *held)
{
	int v = atomic_load(&kq->kq_retiring), n, e;

	kq->kq_zombie = 0;
	do {
		if (v & KQ_RET_SELF)
			return EBADF;
	} while (!atomic_compare_exchange_weak(&kq->kq_retiring, &v,
	    v | KQ_RET_SWAP));
	e = kq_rebuild_set(kq);
	kq_reg_lock();		/* a fork() child sees the close whole */
	v = atomic_load(&kq->kq_retiring);
	do
		n = (v & ~(KQ_RET_SWAP | KQ_RET_PEND)) |
		    ((v & KQ_RET_PEND) ? KQ_RET_SELF : 0);
	while (!atomic_compare_exchange_weak(&kq->kq_retiring, &v, n));
	if (v & KQ_RET_PEND) {
		kq_close_raw(kq->kq_fd);
		kq->kq_dead = 1;
		/* The registry's reference may be the caller's only one:
		   the kqueue outlives our locks (attack helper 33's D1: its
		   destruction ran inside them and waited for its own lock). */
		if (kq_hold(kq, held))
			kq_registry_forget(kq->kq_fd, kq);
		e = EBADF;
	}
	kq_reg_unlock();
	if (v & KQ_RET_PEND)
		kq_bell_ring(kq);	/* other sleepers return EBADF */
	return e;
}

static int64_t
ts_to_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/* The monotonic clock in nanoseconds (scan deadlines, timers, proc). */
int64_t
kq_now_ns(void)
{
	struct timespec t;

	kq_hot.clock_gettime(CLOCK_MONOTONIC, &t);
	return ts_to_ns(&t);
}

struct kq_hot kq_hot __attribute__((aligned(64))) = {
	pthread_testcancel, pthread_setcanceltype, clock_gettime,
	epoll_pwait2, epoll_pwait, 1, NULL, NULL
};

/*
 * The frames a cancellation abandons: it acts in glibc's signal handler
 * or in its wrapper's entry, on top of kq_epoll_wait_cancel's frame, and
 * unwinds from there.
 * AddressSanitizer cannot unpoison the redzones of frames left that way,
 * and its own handling of the unwind then writes into them (a false
 * stack-buffer-underflow): these two frames keep no redzones.
 */
#if defined(__SANITIZE_ADDRESS__)
#define KQ_CANCEL_FRAME	__attribute__((no_sanitize_address))
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KQ_CANCEL_FRAME	__attribute__((no_sanitize_address))
#endif
#endif
#ifndef KQ_CANCEL_FRAME
#define KQ_CANCEL_FRAME
#endif

/*
 * epoll_wait with a nanosecond timeout (-1: forever), straight to the
 * kernel: never a cancellation point (kq_epoll_wait_cancel is one).
 * Returns the count or -errno; errno is left alone (it is one more cold
 * line and a call into the C library per wait).
 */
static int
kq_epoll_wait(int epfd, struct epoll_event *ev, int n, int64_t tmo_ns)
{
	long r;

	if (tmo_ns != 0)
		KQ_FAULT_WAIT();
	if (tmo_ns == 0) {
		r = ksys_epoll_poll(epfd, ev, n);
		goto out;
	}
#ifdef SYS_epoll_pwait2
	if (atomic_load_explicit(&kq_hot.have_pwait2, memory_order_relaxed)) {
		struct timespec ts = { tmo_ns / 1000000000,
		    tmo_ns % 1000000000 };

		r = ksys6(SYS_epoll_pwait2, epfd, (long)ev, n,
		    tmo_ns < 0 ? 0 : (long)&ts, 0, 8);
		if (r != -ENOSYS)
			goto out;
		atomic_store_explicit(&kq_hot.have_pwait2, 0,
		    memory_order_relaxed);
	}
#endif
	r = ksys6(SYS_epoll_pwait, epfd, (long)ev, n, tmo_ns < 0 ? -1 :
	    tmo_ns / 1000000 >= INT_MAX ? INT_MAX :
	    (long)((tmo_ns + 999999) / 1000000), 0, 8);
out:
	return (int)r;
}

/*
 * kq_epoll_wait through the C library's epoll_pwait2() (or epoll_pwait()
 * on a kernel without it), which are cancellation points: the count, or
 * -errno with errno left as it was.  glibc leaves its asynchronous
 * cancellation window the way the rest of its cancellation points do:
 * when a pthread_cancel() has already committed to its signal, it waits
 * for the signal to land before it returns (__pthread_disable_asynccancel).
 * A wait that switched to PTHREAD_CANCEL_ASYNCHRONOUS and back by itself
 * returned without that wait, and the late signal then cancelled the
 * thread wherever it was -- glibc 2.36 even inside a region where the
 * caller had disabled cancellation, with the events of this wait taken.
 */
static KQ_CANCEL_FRAME int
kq_epoll_wait_cancel(int epfd, struct epoll_event *ev, int n, int64_t tmo_ns)
{
	int r, saved = errno;

	KQ_FAULT_WAIT();
	if (atomic_load_explicit(&kq_hot.have_pwait2, memory_order_relaxed)) {
		struct timespec ts = { tmo_ns / 1000000000,
		    tmo_ns % 1000000000 };

		r = kq_hot.epoll_pwait2(epfd, ev, n, tmo_ns < 0 ? NULL : &ts,
		    NULL);
		if (r >= 0)
			return r;
		if (errno != ENOSYS)
			goto fail;
		atomic_store_explicit(&kq_hot.have_pwait2, 0,
		    memory_order_relaxed);
	}
	r = kq_hot.epoll_pwait(epfd, ev, n, tmo_ns < 0 ? -1 :
	    tmo_ns / 1000000 >= INT_MAX ? INT_MAX :
	    (int)((tmo_ns + 999999) / 1000000), NULL);
	if (r >= 0)
		return r;
fail:
	r = -errno;
	errno = saved;
	return r;
}

/*
 * kevent()'s blocking wait is a cancellation point, as FreeBSD's is when
 * it has no changes (libthr's __thr_kevent), and no cancellation may take
 * events with it: libthr never cancels a wait that returned events.
 * glibc acts on a cancellation asynchronously while a thread sleeps in a
 * cancellation point, and its signal can also arrive as the wait returns
 * with events (glibc bug 12683: for the C library's own epoll_wait an
 * EV_CLEAR event would be lost for every waiter).  So kq waits in the C
 * library's cancellation point (kq_epoll_wait_cancel) with a cleanup
 * handler and a small batch whose entries are marked unwritten first
 * (KQ_EV_UNSET); if the cancellation acts, kq_wait_cancelled puts the
 * events the kernel had already written back on the kqueue (kq_translate
 * without room queues their knotes on the active list and the doorbell
 * wakes another waiter) and drops the thread's reference on the kqueue --
 * without it the kqueue and its descriptors would outlive its close.  The
 * wait holds no lock (kq_lock was let go, no maker section is open).
 */
#define KQ_CWAIT	8		/* events per cancellable wait */

#define KQ_EV_UNSET	UINT64_MAX	/* no epoll key: not written */

struct kq_waiter {
	struct kqueue		*kq;
	int			*held;
	struct epoll_event	*ev;
	int			 n;
	uint64_t		 seq;	/* kq_regseq as the wait began */
};

static void
kq_wait_cancelled(void *arg)
{
	struct kq_waiter *w = arg;
	struct kqueue *kq = w->kq;
	int i;

	if (w->ev[0].data.u64 != KQ_EV_UNSET) {
		KQ_LOCK(kq);
		for (i = 0; !kq->kq_dead && i < w->n &&
		    w->ev[i].data.u64 != KQ_EV_UNSET; i++) {
			struct kq_quiet q = { 0, { 0 } };

			(void)kq_translate(kq, &w->ev[i], NULL, 0,
			    kq_ev_stale(kq, &w->ev[i], w->seq), INT_MIN, &q);
		}
		kq_bell_update(kq);
		KQ_UNLOCK(kq);
	}
	if (*w->held) {
		*w->held = 0;
		kq_release(kq);
	}
}

/* kq_epoll_wait_cancel() on kq's set, kq_lock not held, *held set: the
   count or -errno. */
static __attribute__((noinline)) KQ_CANCEL_FRAME int
kq_wait_cancellable(struct kqueue *kq, int *held, struct epoll_event *ev,
    int n, int64_t tmo_ns, uint64_t seq)
{
	struct kq_waiter w = { kq, held, ev, n, seq };
	int i, r, type;

	for (i = 0; i < n; i++)
		ev[i].data.u64 = KQ_EV_UNSET;
	/* A caller that is asynchronously cancellable (a signal handler that
	   interrupted another wait) is deferred until kevent() returns, with
	   no lock or reference held (kq_leave, kq_async_restore): the wait
	   alone is a cancellation point. */
	(void)kq_hot.setcanceltype(PTHREAD_CANCEL_DEFERRED, &type);
	pthread_cleanup_push(kq_wait_cancelled, &w);
	r = kq_epoll_wait_cancel(kq_sleepfd(kq), ev, n, tmo_ns);
	/* As libthr's cancellation points, a wait that failed (EINTR) acts
	   on a cancellation asked meanwhile, by a signal handler, even where
	   the C library made no asynchronous window around the wait. */
	if (r < 0)
		kq_hot.testcancel();
	pthread_cleanup_pop(0);
	if (type == PTHREAD_CANCEL_ASYNCHRONOUS)
		kq_tls.async_owed = 1;
	return r;
}

/* See kq_wait_cancellable; called by kq_leave. */
static void
kq_async_restore(void)
{
	int t;

	kq_tls.async_owed = 0;
	(void)kq_hot.setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &t);
}

/*
 * Make sure kevent() holds a reference on kq (*held), so that it outlives
 * a concurrent close once kq_lock is let go.  Returns 0 when the count is
 * already zero: kq is being destroyed.
 */
static int
kq_hold(struct kqueue *kq, int *held)
{
	if (!*held)
		*held = kq_ref_try(kq);
	return *held;
}

/*
 * A system call on the kqueue descriptor failed with e: if the number no
 * longer names our set, unmap the kqueue (EBADF).  Returns -errno.
 */
static int
kq_syserr(struct kqueue *kq, int e, int *held)
{
	if (e != EBADF && e != EINVAL)
		return -e;
	if (kq_owned(kq))
		return -e;
	/* The registry's reference may be the last: destruction must wait
	   for our unlock. */
	if (kq_hold(kq, held))
		kq_kill(kq);
	else {
		kq->kq_dead = 1;
		kq->kq_unowned = !atomic_load(&kq->kq_retiring);
	}
	return -EBADF;
}

/*
 * One collection round, kq_lock held throughout (no sleeping): the active
 * list, the epoll set without blocking, then the active list again for
 * what the set queued there.  Returns the kevents written to out, or
 * -errno when none were and the set could not be read.  ev and nread hold
 * cap (>= KQ_MINBATCH) entries: the caller's batch (kq_scan), or
 * kq_collect's own.
 */
static __attribute__((noinline)) int
kq_collect_in(struct kqueue *kq, struct kevent *out, int nevents,
    struct epoll_event *ev, int *nread, int cap)
{
	int n = 0, r, i, want, before, queued, fetches, used, items, seen = 0;
	int bells = 0, cycled = 0;
	struct kq_quiet quiet = { 0, { 0 } };

	if (__builtin_expect(kq->kq_alert != NULL, 0)) {
		/* A port in alert mode reports its alert, and only that. */
		kq_prefill(out, kq->kq_alert);
		(void)filter_lookup(KQ_EVFILT_PORTALERT)->f_event(kq,
		    kq->kq_alert, 0, out);
		return 1;
	}
	if (kq->kq_empty != NULL)
		kq_empty_repoll(kq);
	if (__builtin_expect(kq->kq_exitwait != 0, 0))
		kq_proc_exitwait(kq);
	/*
	 * Fairness between the two sources: while the active list has
	 * knotes, collections start alternately with it and with the epoll
	 * set, so neither the level-triggered knotes tracked here (user
	 * events, files, emulated levels) nor the kernel-tracked ones can
	 * take every slot of a small eventlist call after call.
	 */
	if (kq->kq_count > 0) {
		if (!kq->kq_epfirst)
			n = kq_scan_active(kq, out, nevents);
		kq->kq_epfirst = !kq->kq_epfirst;
	}
	/* At most this many registrations can be ready in the set at once. */
	items = kq->kq_nfdchains + (int)kq->kq_nhashed + KQ_NSRC;
	for (fetches = (nevents + items) / cap + 2 + KQ_NSRC;
	    n < nevents && fetches > 0; fetches--) {
		/*
		 * Normally as many as there is room for.  After a fetch that
		 * brought only what this call has (level-triggered events of
		 * knotes it delivered), look further down epoll's ready list
		 * in one larger batch: what does not fit is queued.
		 */
		want = seen > 0 ? items - seen : nevents - n;
		if (want > cap)
			want = cap;
		if (want < 1)
			want = 1;
		r = ksys_epoll_poll(kq->kq_fd, ev, want);
		if (r < 0) {
			if (n > 0)
				break;
			return r;
		}
		/* READ's byte counts in one run of system calls, as after a
		   wait: interleaved with the translations each costs more. */
		for (i = 0; i < r; i++)
			nread[i] = kq_collect_nread(kq, &ev[i]);
		before = n;
		queued = kq->kq_count;
		for (i = used = 0; i < r; i++) {
			struct knote *chain = NULL;
			int again = 0;

			/* A plain event's registration is level-triggered
			   and its knote stays: not "used" (below). */
			if (n < nevents && kq_translate_plain(kq, &ev[i],
			    out + n, nread[i]) > 0) {
				n++;
				continue;
			}
			/*
			 * The doorbell, ready while the active list has
			 * knotes (scanned after the fetches), has nothing to
			 * translate.  It is level-triggered: epoll puts it
			 * back at the tail of its ready list each time, so
			 * the second time a round fetches it, every event
			 * that was ready has been fetched.  Without that
			 * stop, a round with a long active list and nothing
			 * else ready fetched the doorbell again and again,
			 * a system call per KQ_OWNBATCH knotes queued.
			 */
			if (ev[i].data.u64 == (KQ_SRCKEY | KQ_SRC_BELL)) {
				if (bells++ > 0)
					cycled = 1;
				used++;
				continue;
			}
			/* Could epoll hand this event out again unchanged?
			   Only a level-triggered registration whose knotes
			   are still there after the translation. */
			if (!(ev[i].data.u64 & KQ_SRCKEY)) {
				chain = knote_fdchain(kq, (int)ev[i].data.u64);
				again = chain != NULL && (chain->kn_reg &
				    (R_REG | R_ET | R_ONESHOT)) == R_REG;
			}
			n += kq_translate(kq, &ev[i], out + n, nevents - n, 0,
			    nread[i], &quiet);
			if (!again ||
			    knote_fdchain(kq, (int)ev[i].data.u64) != chain)
				used++;
		}
		/*
		 * A short batch is all there is.  A batch that delivered or
		 * queued nothing and changed nothing epoll would hand out
		 * again (an edge consumed, a stale chain dropped, an internal
		 * source serviced) holds events this call already has; epoll
		 * moves those to the tail of its ready list, so once as many
		 * as can be ready were seen in a row, the list was gone
		 * through.
		 */
		if (r < want || cycled)
			break;
		if (n == before && kq->kq_count == queued && used == 0) {
			if ((seen += r) >= items)
				break;
		} else
			seen = 0;
	}
	kq_quiet_check(kq, &quiet);
	if (n < nevents && kq->kq_count > 0)
		n += kq_scan_active(kq, out + n, nevents - n);
	KQ_ASSERT(n >= 0 && n <= nevents);
	return n;
}

/*
 * kq_collect_in with a batch of its own, for a caller without one large
 * enough.  Not inlined: the batch is on the stack only while it runs.  Its
 * 4 KiB, on top of a small wait's frame and a port_getn()'s, fit a thread
 * with the minimum stack.
 */
static __attribute__((noinline)) int
kq_collect(struct kqueue *kq, struct kevent *out, int nevents)
{
	struct epoll_event ev[KQ_OWNBATCH];
	int nread[KQ_OWNBATCH];

	return kq_collect_in(kq, out, nevents, ev, nread, KQ_OWNBATCH);
}

/*
 * Collect up to nevents events.  Returns the count, or -errno.
 * Called and returns with kq_lock held.  *held says whether the caller
 * holds a reference on kq; one is taken (and *held set) before the lock
 * is let go for a wait, so the kqueue outlives a concurrent close.
 * cancel: a blocking wait is a cancellation point (kq_wait_cancellable).
 * Inlined into kevent(): a return that spans the wait costs a
 * mispredicted branch (see ksys.h).
 */
static inline __attribute__((always_inline)) int
kq_scan(struct kqueue *kq, struct kevent *out, int nevents,
    const struct timespec *tsp, int *held, int cancel)
{
	int64_t deadline = -1, tmo;
	int n, r, i, want, infinite = 0, zero = 0, e, stale, rebuilt = 0, fast;
	int plain, inside;
	int batch;
	struct kq_quiet quiet;
	uint64_t seq;
	uint64_t runs;

	/*
	 * A call from a signal handler that interrupted its thread holding
	 * another of kq's locks (this call holds kq_lock: one) does not
	 * sleep: it would take kq_lock again after the wait, from a thread
	 * that may be waiting for the interrupted code's lock (attack
	 * helper 25's F1).  It looks, as with a zero timeout (kevent.2),
	 * and under the lock it holds: not by the fast round, which lets
	 * the lock go around its look (attack helper 26's F1).
	 */
	if (__builtin_expect((inside = kq_tls.owned > 1), 0))
		zero = 1;
	else if (tsp == NULL || tsp->tv_sec > INT32_MAX)
		infinite = 1;
	else if (tsp->tv_sec == 0 && tsp->tv_nsec == 0)
		zero = 1;
	/*
	 * The waits' batch, on the stack for this call only: a cancellable
	 * wait takes KQ_CWAIT events (a full one tops up), any other as many
	 * as fit, up to KQ_EPBATCH.  A frame no larger than the call needs
	 * keeps the callees on stack lines the application uses too: after a
	 * sleep each other line is a cache miss (docs/HTTPD.md).
	 */
	batch = nevents < KQ_EPBATCH ? nevents : KQ_EPBATCH;
	if (cancel && !zero && batch > KQ_CWAIT)
		batch = KQ_CWAIT;
	if (batch < 1)
		batch = 1;
	struct epoll_event ev[batch];	/* 1..KQ_EPBATCH */
	int nread[batch];
	/*
	 * A collection round in this call fetches into the same batch when
	 * it is large enough, so that a call never has two large batches on
	 * the stack (at most about 8 KiB, for a thread with a small stack).
	 */
#define KQ_SCAN_COLLECT(o, m) (batch >= KQ_MINBATCH ?			\
	kq_collect_in(kq, o, m, ev, nread, batch) : kq_collect(kq, o, m))

	kq->kq_scanid++;
	/*
	 * With the active list empty (and no rebuild, EMPTY re-check or
	 * awaited exit due), the epoll set is all there is to collect: the
	 * first round skips the look under kq_lock and goes straight to the
	 * wait, outside it (a zero timeout makes it a look).  The events it
	 * brings are translated under the lock as any wait's.
	 */
	fast = kq->kq_count == 0 && !kq->kq_zombie && kq->kq_empty == NULL &&
	    kq->kq_exitwait == 0 && !inside;
	for (;;) {
		if (fast) {
			fast = 0;
			if (zero)
				tmo = 0;
			else if (infinite)
				tmo = -1;
			else {
				tmo = ts_to_ns(tsp);
				deadline = kq_now_ns() + tmo;
			}
			goto wait;
		}
		n = KQ_SCAN_COLLECT(out, nevents);
		if (n < 0) {
			n = kq_syserr(kq, -n, held);
			break;
		}
		if (kq->kq_zombie) {
			/* Cannot get rid of a registration that would make
			   every wait return at once: the next call tries
			   again (also after one that returns events), and
			   one with nothing to return says so rather than
			   spin. */
			if ((e = kq_rebuild(kq, held)) != 0)
				kq->kq_zombie = 1;
			if (e != 0 && n == 0) {
				n = e == EBADF ? kq_syserr(kq, EBADF, held) :
				    -e;
				break;
			}
			if (e == 0 && n < nevents && !rebuilt++) {
				/* The new set may hold what the zombie hid. */
				r = KQ_SCAN_COLLECT(out + n, nevents - n);
				if (r > 0)
					n += r;
			}
		}
		if (n > 0 || zero)
			break;
		/* Nothing ready: sleep until something is, or the deadline. */
		if (infinite)
			tmo = -1;
		else {
			int64_t now = kq_now_ns();

			if (deadline < 0)
				deadline = now + ts_to_ns(tsp);
			tmo = deadline - now;
			if (tmo <= 0)
				break;
		}
		if (kq->kq_empty != NULL && (tmo < 0 ||
		    tmo > KQ_REPOLL_MS * 1000000))
			tmo = KQ_REPOLL_MS * 1000000;
		if (kq->kq_exitwait != 0) {
			/* An exit awaits its connector message until then
			   (filt_proc.c): the collection looks again. */
			int64_t left = kq->kq_exitwait - kq_now_ns();

			if (left < 1000000)
				left = 1000000;
			if (tmo < 0 || tmo > left)
				tmo = left;
		}
wait:
		seq = kq->kq_regseq;
		kq_bell_update(kq);	/* a stale doorbell would make us spin */
		runs = kq_sig_app_runs();
		if (!kq_hold(kq, held)) {
			/* Being destroyed: it was closed. */
			kq->kq_dead = 1;
			return -EBADF;
		}
		/* Nothing delivered yet, so no kn_delivered() mark survives
		   the unlock (see the top of this file). */
		KQ_UNLOCK(kq);
		want = batch;		/* (a full one tops up) */
		if (tmo != 0 && cancel) {
			KQ_ASSERT(want <= KQ_CWAIT);
			r = kq_wait_cancellable(kq, held, ev, want, tmo, seq);
		} else
			r = kq_epoll_wait(tmo != 0 ? kq_sleepfd(kq) :
			    kq->kq_fd, ev, want, tmo);
		e = r < 0 ? -r : 0;
		/* (An event port has no EVFILT_READ knote to use them.) */
		for (i = 0; i < r; i++)
			nread[i] = kq->kq_port ? INT_MIN :
			    kq_prefetch_nread(&ev[i]);
		KQ_LOCK(kq);
		if (kq->kq_dead) {
			/* Closed while we slept: pass the wake-up on. */
			kq_bell_ring(kq);
			return -EBADF;
		}
		if (r < 0) {
			if (e == EINTR && kq_sig_eintr_absorbed(runs))
				continue;  /* counted for EVFILT_SIGNAL only */
			n = kq_syserr(kq, e, held);
			break;
		}
		n = 0;
		quiet.n = 0;
		plain = seq == kq->kq_regseq;
		for (i = 0; i < r; i++) {
			if (plain && n < nevents &&
			    kq_translate_plain(kq, &ev[i], out + n,
			    nread[i]) > 0) {
				n++;
				continue;
			}
			stale = kq_ev_stale(kq, &ev[i], seq);
			n += kq_translate(kq, &ev[i], out + n, nevents - n,
			    stale, nread[i], &quiet);
		}
		kq_quiet_check(kq, &quiet);
		if (n > 0) {
			/* A full batch: more may be ready; top up. */
			if (n < nevents && (r == want || kq->kq_count > 0)) {
				r = KQ_SCAN_COLLECT(out + n, nevents - n);
				if (r > 0)
					n += r;
			}
			break;
		}
		if (zero && r == 0)
			break;		/* the fast round's look: nothing */
		/* Only stale or internal events, or the timeout: round again
		   (an infinite wait never returns 0). */
	}
	KQ_ASSERT(n <= nevents);
	kq->kq_scanid++;	/* this call's marks mean nothing now */
	return n;
#undef KQ_SCAN_COLLECT
}

/*
 * kqfd is not in the registry: EBADF if it is not an open descriptor or
 * is one of a kqueue's own (the program never opened it), EINVAL if it
 * is one but not a kqueue (as FreeBSD's kqueue_acquire), or the kqueue it
 * is a dup() of.  No lock held; in a signal handler that interrupted its
 * thread inside kq's locks, reg_lock is not waited for (kq_create holds
 * it while it locks a recycled kqueue, which that thread may hold), so
 * such a number other than the set's duplicate (caught under the
 * kqueue's lock, kq_enter) gives EINVAL there.
 */
static struct kqueue *
kq_lookup_slow(int kqfd, int *error)
{
	if (kqfd < 0 || !kq_fd_valid((uintptr_t)kqfd) ||
	    (kq_fdinternal((uintptr_t)kqfd) && !kq_in_lock() &&
	    kq_registry_internal(kqfd, NULL))) {
		*error = EBADF;	/* closed, or not a number the program opened */
		return NULL;
	}
	*error = EINVAL;
	if (fd_is_epoll(kqfd) != 1)
		return NULL;
	if (kq_registry_orphan(kqfd)) {
		*error = EBADF;	/* inherited across fork(): not ours */
		return NULL;
	}
	return kq_registry_find_alias(kqfd);
}

/*
 * KQ_LOCK for kq_enter; 0 if it gave up.  A signal handler that
 * interrupted its thread inside kq's locks (handler) may find kq's lock
 * held by a thread that itself waits for a lock the interrupted code holds
 * -- another kqueue's, a datagram stripe -- and neither would ever move
 * (attack helper 24's F1 and F2: two threads whose handlers change each
 * other's kqueue hung for good).  So such a handler does not wait when
 * the interrupted code holds a lock (kq_tls.owned): it tries once.  When
 * that code was only waiting for a lock (or had just taken or was just
 * letting go of one: the count's instruction-wide lag), it waits as any
 * waiter does, but at most KQ_HANDLER_PATIENCE_NS: a lock another thread
 * holds for its own work is let go well within that.
 */
#define KQ_HANDLER_PATIENCE_NS	1000000000LL

static int
kq_enter_lock(struct kqueue *kq, int handler)
{
	if (__builtin_expect(!handler, 1)) {
		KQ_LOCK(kq);
		return 1;
	}
	kq_tls_enter();
	if (kq_tls.owned > 0 ? kq_olock_trylock(&kq->kq_lock) :
	    kq_olock_timedlock(&kq->kq_lock, KQ_HANDLER_PATIENCE_NS))
		return 1;
	kq_tls_leave();
	return 0;
}

/*
 * The kqueue of descriptor kqfd, locked and alive, or NULL with *error set.
 * The common case takes no reference (see registry.c): the registry maps
 * kqfd to kq while we hold kq_lock, so kq cannot be destroyed before we
 * let go of it.  A dup() of a kqueue descriptor is found the slow way,
 * with a reference (*held = 1).
 */
struct kqueue *
kq_enter(int kqfd, int *held, int *error)
{
	struct kqueue *kq = kq_registry_peek(kqfd);
	int handler = kq_in_lock(), tries;

	/*
	 * A signal handler that interrupted this thread inside the
	 * kqueue's lock or reg_lock would wait for itself for ever: EDEADLK
	 * (kevent.2, LINUX NOTES).  The lock's word names its holder
	 * (kq_olock_mine), so a thread asleep in kevent(), or only waiting
	 * for the lock, holds none: its handlers' calls work, or wait, as
	 * on FreeBSD (with patience: kq_enter_lock).
	 */
	if (__builtin_expect(handler, 0) &&
	    ((kq != NULL && kq_olock_mine(&kq->kq_lock)) || kq_reg_mine())) {
		*error = EDEADLK;
		return NULL;
	}
	if (kq != NULL) {
		if (!kq_enter_lock(kq, handler)) {
			*error = EDEADLK;
			return NULL;
		}
		if (kq_registry_peek(kqfd) == kq) {
			if (!kq->kq_dead) {
				*held = 0;
				return kq;
			}
			KQ_UNLOCK(kq);
			*error = EBADF;
			return NULL;
		}
		KQ_UNLOCK(kq);
	}
	for (tries = 0;; tries++) {
		if ((kq = kq_lookup_slow(kqfd, error)) == NULL)
			return NULL;
		if ((__builtin_expect(handler, 0) &&
		    kq_olock_mine(&kq->kq_lock)) ||
		    !kq_enter_lock(kq, handler)) {
			kq_release(kq);
			*error = EDEADLK;
			return NULL;
		}
		if (kq->kq_dead) {
			KQ_UNLOCK(kq);
			kq_release(kq);
			*error = EBADF;
			return NULL;
		}
		/*
		 * The alias was found with no lock held, and a number may
		 * hold kq's set without being the program's: kq_waitfd for
		 * good, and for a moment the new set of a rebuild, made at
		 * the lowest free number -- often one the program has just
		 * closed and still passes -- before it is dup3()'d over
		 * kq_fd and closed (kq_rebuild_set, under kq's lock).  A
		 * call on such a number took it for a dup() and changed kq:
		 * a9's changes to a kqueue it had closed went to another
		 * that watched it (attack helper 50).  Under the lock, the
		 * number is a dup() of the program's only if it is none of
		 * kq's own (as the bitmap says and the number still proves:
		 * one closed behind kq's back and given to a dup() of the
		 * program's stays in the bitmap, attack helper 52's D1) and
		 * still holds kq's set; if not, it is looked up again
		 * (closed: EBADF; another file: EINVAL).
		 */
		if (!(kq_intfd_has(kq, (uintptr_t)kqfd) &&
		    kq_holds_number(kq, kqfd)) &&
		    fd_same_file(kqfd, kq->kq_fd)) {
			*held = 1;
			return kq;
		}
		KQ_UNLOCK(kq);
		kq_release(kq);
		if (tries == 2) {
			*error = EBADF;
			return NULL;
		}
	}
}

/*
 * Unlock kq and drop the reference kevent() holds, if any; then give back
 * an asynchronous cancellation type a wait left deferred.
 */
void
kq_leave(struct kqueue *kq, int held)
{
	kq_bell_update(kq);
	KQ_UNLOCK(kq);
	if (held)
		kq_release(kq);
	/* A kqueue that a signal handler closed while this thread held a
	   lock waits for a reaper (defer.c): its sleepers wake now, not at
	   the next call that allocates (attack helper 21's r9). */
	if (__builtin_expect(atomic_load_explicit(&kq_hot.retire,
	    memory_order_relaxed) != NULL, 0))
		kq_reap_slow();
	if (__builtin_expect(kq_tls.async_owed, 0))
		kq_async_restore();
}

KQ_EXPORT int
kevent(int kqfd, const struct kevent *changelist, int nchanges,
    struct kevent *eventlist, int nevents, const struct timespec *timeout)
{
	struct kqueue *kq;
	int i, nerr = 0, error, n, held;

	/*
	 * As FreeBSD's libthr, a kevent() with room for events is a
	 * cancellation point at its entry, where no lock is held yet, and in
	 * its wait when it has no changes (kq_wait_cancellable).  Nothing
	 * else in libkq is one but close() (ksys.h, kq_nc_*).
	 */
	if (nevents != 0)
		kq_hot.testcancel();
	if (nchanges < 0 || nevents < 0 ||
	    (nchanges > 0 && changelist == NULL) ||
	    (nevents > 0 && eventlist == NULL)) {
		/* FreeBSD looks the descriptor up first: EBADF wins. */
		if ((kq = kq_enter(kqfd, &held, &error)) == NULL) {
			errno = error;
			return -1;
		}
		kq_leave(kq, held);
		errno = (nchanges < 0 || nevents < 0) ? EINVAL : EFAULT;
		return -1;
	}
	if (nchanges > 0)
		kq_reap();	/* what closes put off (defer.c) */
	if ((kq = kq_enter(kqfd, &held, &error)) == NULL) {
		errno = error;
		return -1;
	}
	if (kq->kq_port) {
		/* An event port is no kqueue (port.c). */
		error = EINVAL;
		goto fail;
	}
	for (i = 0; i < nchanges; i++) {
		struct kevent kev = changelist[i];

		if (kev.filter == 0)
			continue;
		kev.flags &= ~EV_SYSFLAGS;
		error = kq_change(kq, &kev);
		if (kq->kq_dead) {
			error = EBADF;
			goto fail;
		}
		if (error != 0 || (kev.flags & EV_RECEIPT)) {
			if (nevents == 0) {
				if (error != 0)
					goto fail;
				kq_leave(kq, held);
				return 0;
			}
			kev.flags = EV_ERROR;
			kev.data = error;
			eventlist[nerr++] = kev;
			nevents--;
		}
	}
	if (nerr > 0 || nevents == 0) {
		kq_leave(kq, held);
		return nerr;
	}
	if (timeout != NULL && (timeout->tv_sec < 0 || timeout->tv_nsec < 0 ||
	    timeout->tv_nsec >= 1000000000)) {
		error = EINVAL;
		goto fail;
	}
	n = kq_scan(kq, eventlist, nevents, timeout, &held, nchanges == 0);
	kq_leave(kq, held);
	if (n < 0) {
		errno = -n;
		return -1;
	}
	return n;
fail:
	kq_leave(kq, held);
	errno = error;
	return -1;
}

/*
 * kq_scan for the event-port front end (port.c): kq entered with kq_enter,
 * timeout validated.  Returns the count or -errno.
 */
int
kq_port_scan(struct kqueue *kq, struct kevent *out, int nevents,
    const struct timespec *tsp, int *held, int cancel)
{
	return kq_scan(kq, out, nevents, tsp, held, cancel);
}

/*
 * Take what the kqueue's epoll set has ready without reporting anything:
 * internal sources are serviced, and events the set would hand out only
 * once (edge-triggered registrations) are moved to the active list so they
 * are not lost.  Returns the number of events of level-triggered
 * registrations seen (still ready in the set).  Called with kq_lock held.
 */
int64_t
kq_absorb(struct kqueue *kq)
{
	struct epoll_event small[KQ_ABSORBMIN], *ev = small;
	struct knote *kn;
	int64_t count = 0;
	int r, i, fired, n = KQ_ABSORBMIN;

	kq->kq_nlvl = 0;
	if (kq->kq_dead)
		return 0;
	/*
	 * The batch is the kqueue's own, on the heap: an outer kqueue's scan
	 * asks here (kq_pending) with its own batch on the stack, and a
	 * thread's stack may be as small as PTHREAD_STACK_MIN.  Without
	 * memory the count stops at KQ_ABSORBMIN ready descriptors (it is
	 * an approximate count either way: see kq_pending).
	 */
	if (kq->kq_absorbev == NULL)
		kq->kq_absorbev = kq_malloc(KQ_ABSORBN *
		    sizeof(*kq->kq_absorbev));
	if (kq->kq_lvl == NULL)
		kq->kq_lvl = kq_malloc(KQ_ABSORBN * sizeof(*kq->kq_lvl));
	if (kq->kq_absorbev != NULL) {
		ev = kq->kq_absorbev;
		n = KQ_ABSORBN;
	}
	r = ksys_epoll_poll(kq->kq_fd, ev, n);
	for (i = 0; i < r; i++) {
		if (ev[i].data.u64 & KQ_SRCKEY) {
			kq_src_dispatch(kq, ev[i].data.u64, ev[i].events);
			continue;
		}
		/* A one-shot registration hands its event out once, too. */
		kn = knote_fdchain(kq, (int)ev[i].data.u64);
		fired = fdreg_fired(kq, kn);
		for (; kn != NULL; kn = kn->kn_link) {
			uint32_t want = kq_epoll_want(kn->kn_filter);

			if (kn->kn_status & (KN_DISABLED | KN_QUEUED) ||
			    !(ev[i].events & want))
				continue;
			if (fired || (kn->kn_reg & R_ET))
				knote_enqueue(kq, kn);
			else {
				count++;
				/*
				 * The set of ready level knotes stands for
				 * the set of true ones only where epoll's
				 * readiness is the filter's: not for
				 * NOTE_LOWAT, WRITE (a socket's write
				 * space), nor a kqueue (its echo).  Such a
				 * knote can turn true with no change here,
				 * and the echo is then not told apart
				 * (helper 29's R3): reported.
				 */
				if (kq->kq_lvl != NULL && kq->kq_nlvl >= 0 &&
				    kq->kq_nlvl < KQ_ABSORBN &&
				    kn->kn_filter == EVFILT_READ &&
				    !(kn->kn_sfflags & NOTE_LOWAT) &&
				    kq_registry_peek((int)kn->kn_ident) == NULL)
					kq->kq_lvl[kq->kq_nlvl++] = kn;
				else
					kq->kq_nlvl = -1;
			}
		}
	}
	return count;
}

/*
 * kq_qset (kq_int.h): an open-addressed set of knote addresses, KQ_QSET
 * slots, NULL for an empty one; it holds at most KQ_ABSORBN, so a probe
 * always ends.
 */
#define KQ_QSET	(2 * KQ_ABSORBN)

static const void **
kq_qset_slot(const void **set, const void *p)
{
	size_t i = (size_t)kq_mix64((uintptr_t)p) & (KQ_QSET - 1);

	while (set[i] != NULL && set[i] != p)
		i = (i + 1) & (KQ_QSET - 1);
	return &set[i];
}

/*
 * kq_pending rang the doorbell for the outer knote okn, which will carry
 * omark if it is delivered now: remember the ring (kq_quiet_kn).  Without
 * the memory for the set of ready level-triggered knotes, or when the
 * last kq_absorb saw more than it holds, nothing is remembered (the echo
 * is then reported: once more, never one less).
 */
static void
kq_quiet_record(struct kqueue *kq, const struct knote *okn, uint64_t omark)
{
	int i;

	kq->kq_quiet_kn = NULL;
	if (kq->kq_nlvl < 0)
		return;
	if (kq->kq_qset == NULL &&
	    (kq->kq_qset = kq_malloc(KQ_QSET * sizeof(*kq->kq_qset))) == NULL)
		return;
	memset(kq->kq_qset, 0, KQ_QSET * sizeof(*kq->kq_qset));
	for (i = 0; i < kq->kq_nlvl; i++)
		*kq_qset_slot(kq->kq_qset, kq->kq_lvl[i]) = kq->kq_lvl[i];
	kq->kq_quiet_kn = okn;
	kq->kq_quiet_mark = omark;
	kq->kq_quiet_gen = kq->kq_actgen;
	kq->kq_quiet_scan = kq->kq_scanid;
}

/* Is the edge that woke okn only the echo of the ring remembered? */
static int
kq_quiet_echo(const struct kqueue *kq, const struct knote *okn)
{
	int i;

	if (kq->kq_quiet_kn != okn || kq->kq_quiet_mark != okn->kn_scanid ||
	    kq->kq_quiet_gen != kq->kq_actgen ||
	    kq->kq_quiet_scan != kq->kq_scanid || kq->kq_nlvl < 0)
		return 0;
	for (i = 0; i < kq->kq_nlvl; i++)
		if (*kq_qset_slot(kq->kq_qset, kq->kq_lvl[i]) == NULL)
			return 0;	/* newly ready */
	return 1;
}

/*
 * The number of events pending on the kqueue whose descriptor is fd (data
 * of EVFILT_READ on a kqueue), called by a scan of another kqueue with that
 * kqueue's lock held.  The inner lock is only tried, never waited for:
 * stale registrations can make two kqueues watch each other (a kqueue
 * watched B, B was closed and its number went to a kqueue that watches
 * the first), and waiting would deadlock them.  When the inner kqueue is
 * busy its descriptor was reported readable, and 1 is the answer.
 *
 * okn: the outer EV_CLEAR knote asking, whose mark will be omark if it is
 * delivered now; NULL for any other.  0 for it when the only thing that
 * woke it is the doorbell this function rang for its previous report
 * (kq_quiet_kn in kq_int.h): the outer knote would otherwise be reported
 * twice for one activation.
 */
int64_t
kq_pending(int fd, const struct knote *okn, uint64_t omark)
{
	struct kqueue *kq = kq_registry_acquire(fd);
	struct knote *kn;
	int64_t count;
	int rung, echo, selfpolled;

	if (kq == NULL)
		return 1;	/* a foreign epoll instance: it is readable */
	kq_tls_enter();		/* as KQ_LOCK: KQ_UNLOCK below */
	if (!kq_olock_trylock(&kq->kq_lock)) {
		kq_tls_leave();
		kq_release(kq);
		return 1;
	}
	kq->kq_watched = 1;	/* kq_bell_owe */
	count = kq_absorb(kq);
	/*
	 * Only knotes of edge-triggered registrations on the active list
	 * (events the set handed out, moved here): a knote kq tracks itself
	 * (a level one beside an EV_CLEAR one, below NOTE_LOWAT, a file, a
	 * user event, a timer) may turn true with nothing queued, which the
	 * echo's rule would not see (helper 29's R3).
	 */
	selfpolled = 0;
	STAILQ_FOREACH(kn, &kq->kq_head, kn_tqe)
		if (!(kn->kn_status & (KN_DROPPED | KN_DISABLED))) {
			count++;
			if (!filter_lookup(kn->kn_filter)->f_isfd ||
			    (kn->kn_reg & (R_ET | R_NOPOLL)) != R_ET ||
			    (kn->kn_status & KN_EMUL) ||
			    !(kn->kn_flags & (EV_CLEAR | EV_ONESHOT |
			    EV_DISPATCH)))
				selfpolled = 1;
		}
	echo = okn != NULL && !selfpolled && kq_quiet_echo(kq, okn);
	rung = kq->kq_bell_rung;
	kq_bell_update(kq);
	if (okn != NULL && rung != 1 && kq->kq_bell_rung == 1)
		kq_quiet_record(kq, okn, omark);	/* this call rang */
	KQ_UNLOCK(kq);
	kq_release(kq);
	return echo ? 0 : count;
}
