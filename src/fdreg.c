/*
 * fdreg.c -- one epoll registration per descriptor, shared by its knotes.
 *
 * The registration's interest is the union of the enabled knotes on the
 * descriptor (READ -> EPOLLIN|EPOLLRDHUP, WRITE and EMPTY -> EPOLLOUT).  It
 * is level-triggered when every enabled knote is plain level-triggered, so
 * the kernel does the level bookkeeping and nothing is queued in
 * userspace.  It is edge-triggered when any enabled knote needs edges
 * (EV_CLEAR, NOTE_LOWAT, EVFILT_EMPTY); level-triggered knotes sharing such
 * a registration are then marked KN_EMUL and emulated the FreeBSD way: after
 * each delivery they go back on the active list and are re-checked at the
 * next scan.  Knotes on the same descriptor thus keep their own semantics.
 *
 * When every enabled knote on the descriptor is EV_DISPATCH, the
 * registration is EPOLLONESHOT (as a hand-written epoll loop would do it):
 * the kernel disarms it when it reports the event, which is exactly the
 * state the delivery leaves (the knotes disabled), so EV_DISPATCH costs no
 * epoll_ctl beyond the EV_ENABLE that re-arms it.  Whoever takes such an
 * event from the set calls fdreg_fired() first (the registration is now
 * empty) and fdreg_sync() once the knotes were dealt with (re-arms what is
 * still enabled: a knote not delivered, another filter on the descriptor).
 *
 * A descriptor whose knotes are all disabled stays registered with an
 * empty edge-triggered interest, so a later EV_ENABLE/EV_DELETE still
 * detects that the number was closed or reused (epoll_ctl fails with
 * EBADF/ENOENT), and a hang-up does not make epoll_wait() spin.
 *
 * Called with kq_lock held.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>

#include "kq_int.h"
#include "fdreg.h"
#include "ksys.h"

void
fdreg_set(struct kqueue *kq, int fd, uint32_t reg)
{
	struct knote *kn;

	for (kn = knote_fdchain(kq, fd); kn != NULL; kn = kn->kn_link)
		kn->kn_reg = reg;
}

/*
 * The kernel dropped fd's registration (closed or reused number): forget
 * it, keeping only the descriptor kind, which detach still needs.
 */
void
fdreg_forget(struct kqueue *kq, int fd)
{
	struct knote *chain = knote_fdchain(kq, fd);

	if (chain != NULL)
		fdreg_set(kq, fd, chain->kn_reg & R_KINDMASK);
}

/*
 * epoll_ctl on the kqueue's set; counts changes for kq_scan (kq_regseq).
 * Returns 0, or -1 with errno set.
 */
static int
fdreg_ctl(struct kqueue *kq, int op, int fd, struct epoll_event *ev)
{
	int r;

	kq->kq_regseq++;
	if (fd >= 0 && fd < kq->kq_fdtabsize)
		kq->kq_fdseq[fd] = kq->kq_regseq;
	if ((r = ksys_epoll_ctl(kq->kq_fd, op, fd, ev)) < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

/* The epoll key of fd registered as reg (the kind decides KQ_NOCOUNT). */
static inline uint64_t
fdreg_key(int fd, uint32_t reg)
{
	return (uint64_t)(unsigned)fd |
	    (k_is_listener(R_KIND(reg)) ? KQ_NOCOUNT : 0);
}

/* Does kn take part in its descriptor's epoll registration? */
static int
fdreg_uses(const struct knote *kn)
{
	return kn->kn_filter == EVFILT_READ || kn->kn_filter == EVFILT_WRITE ||
	    kn->kn_filter == EVFILT_EMPTY || kn->kn_filter == EVFILT_PROCDESC ||
	    kn->kn_filter == KQ_EVFILT_PORTFD;
}

static uint32_t
fdreg_want(struct kqueue *kq, int fd)
{
	struct knote *kn;
	uint32_t want = 0;
	int edge = 0, dispatch = 1;

	for (kn = knote_fdchain(kq, fd); kn != NULL; kn = kn->kn_link) {
		if ((kn->kn_status & KN_DISABLED) || !fdreg_uses(kn))
			continue;
		/*
		 * A one-shot registration re-armed after a report below
		 * NOTE_LOWAT would report the same data again at once (MOD
		 * re-evaluates it): such knotes take plain edges, and
		 * EV_DISPATCH is kq's (the disabled knote ignores them).
		 * So does EMPTY, whose EPOLLOUT is not its condition: a
		 * one-shot registration of a socket with unsent data was
		 * re-armed and fired again at once, and kevent() spun for
		 * its whole timeout (found by the model's poll check).
		 */
		if (!(kn->kn_flags & EV_DISPATCH) ||
		    (kn->kn_sfflags & NOTE_LOWAT) ||
		    kn->kn_filter == EVFILT_EMPTY)
			dispatch = 0;
		if (kn->kn_filter == KQ_EVFILT_PORTFD)
			want |= port_fd_interest(kn);	/* port.c */
		else
			want |= (kn->kn_filter == EVFILT_READ ||
			    kn->kn_filter == EVFILT_PROCDESC) ? R_IN : R_OUT;
		if ((kn->kn_flags & EV_CLEAR) || kn->kn_filter == EVFILT_EMPTY ||
		    (kn->kn_sfflags & NOTE_LOWAT))
			edge = 1;
		if (kn->kn_flags & EV_WAKEONE)
			want |= R_EXCL;
	}
	if (edge || want == 0)
		want |= R_ET;
	/* EPOLLEXCLUSIVE cannot be combined with EPOLLONESHOT. */
	if (dispatch && (want & R_ANYIN) && !(want & R_EXCL))
		want |= R_ONESHOT;
	/*
	 * FreeBSD wakes both filters of an eventfd on every read() and
	 * write() (one knote list), so an EV_CLEAR knote of one direction
	 * fires again on the other's activity: an EFD_SEMAPHORE read leaves
	 * it readable, a write leaves it writable.  Linux wakes a write with
	 * EPOLLIN only and a read with EPOLLOUT only, so an edge-triggered
	 * registration waits for both.  (Never a level one: the other
	 * direction's lasting readiness would report it at every wait; nor
	 * a one-shot one: every re-arm of an EV_DISPATCH knote would fire at
	 * once on it, and the knote re-arm it again, for ever.)
	 */
	if ((want & R_ET) && !(want & R_ONESHOT) &&
	    (want & (R_IN | R_OUT)) &&
	    (kn = knote_fdchain(kq, fd)) != NULL &&
	    R_KIND(kn->kn_reg) == K_EVENTFD)
		want |= R_IN | R_OUT;
	for (kn = knote_fdchain(kq, fd); kn != NULL; kn = kn->kn_link) {
		if ((want & R_ET) && !(kn->kn_flags & EV_CLEAR) &&
		    kn->kn_filter != EVFILT_EMPTY && fdreg_uses(kn))
			kn->kn_status |= KN_EMUL;
		else
			kn->kn_status &= ~KN_EMUL;
	}
	return want;
}

/* The epoll events of a registration mode (R_MODEMASK bits). */
#define FDREG_EV(w)							\
	((((w) & R_IN) ? EPOLLIN | (((w) & R_EXCL) ? 0 : EPOLLRDHUP) : 0) | \
	(((w) & R_OUT) ? EPOLLOUT : 0) | (((w) & R_ET) ? EPOLLET : 0) |	\
	(((w) & R_EXCL) ? EPOLLEXCLUSIVE : 0) |				\
	(((w) & R_ONESHOT) ? EPOLLONESHOT : 0))
#define FDREG_EV4(w)	FDREG_EV(w), FDREG_EV((w) + 1), FDREG_EV((w) + 2), \
	FDREG_EV((w) + 3)
#define FDREG_EV16(w)	FDREG_EV4(w), FDREG_EV4((w) + 4), FDREG_EV4((w) + 8), \
	FDREG_EV4((w) + 12)

static const uint32_t fdreg_evtab[R_MODEMASK + 1] = {
	FDREG_EV16(0), FDREG_EV16(16)
};

static inline uint32_t
fdreg_events(uint32_t want)
{
	return fdreg_evtab[want & R_MODEMASK] | ((want & R_PRI) ? EPOLLPRI : 0);
}

/*
 * Record what fd turned out to be (filt_fd.c learns it lazily).  A change
 * to or from a listener kind changes the registration's key (KQ_NOCOUNT):
 * a plain level-triggered registration is restated at once (EPOLL_CTL_MOD
 * re-reports only a level that holds anyway); an edge-triggered, exclusive
 * or one-shot one keeps its key until its next change, as a new edge or a
 * re-armed one-shot would be a spurious event.  Nor is it restated for an
 * EV_ONESHOT knote, which is about to go with its registration.  A stale
 * key costs only speed: without the prefetched count EVFILT_READ takes
 * its own.
 */
void
fdreg_kind(struct kqueue *kq, int fd, int kind)
{
	struct knote *kn, *chain = knote_fdchain(kq, fd);
	struct epoll_event ev;
	uint32_t reg;

	if (chain == NULL)
		return;
	reg = (chain->kn_reg & ~R_KINDMASK) | ((uint32_t)kind << R_KINDSHIFT);
	for (kn = chain; kn != NULL; kn = kn->kn_link)
		if (kn->kn_flags & EV_ONESHOT)
			break;
	if (k_is_listener(R_KIND(chain->kn_reg)) != k_is_listener(kind) &&
	    (reg & (R_REG | R_NOPOLL | R_ET | R_EXCL | R_ONESHOT)) == R_REG &&
	    (reg & R_ANYIN) != 0 && kn == NULL && !kq->kq_dead) {
		ev.events = fdreg_events(reg & R_WANTMASK);
		ev.data.u64 = fdreg_key(fd, reg);
		/* On failure (the number was closed) the next change finds
		   it out; the key only saves a system call. */
		(void)fdreg_ctl(kq, EPOLL_CTL_MOD, fd, &ev);
	}
	fdreg_set(kq, fd, reg);
}

/*
 * An event of a descriptor was taken from the epoll set (chain: its
 * knotes, or NULL).  If its registration is
 * EPOLLONESHOT the kernel has just disarmed it: record it as the empty
 * interest, so that disabling the dispatched knotes needs no epoll_ctl.
 * Returns 1 when the caller must call fdreg_sync() afterwards.
 */
int
fdreg_fired(struct kqueue *kq, struct knote *chain)
{
	if (chain == NULL || (chain->kn_reg & (R_REG | R_ONESHOT)) !=
	    (R_REG | R_ONESHOT))
		return 0;
	fdreg_set(kq, (int)chain->kn_ident, (chain->kn_reg &
	    ~(uint32_t)(R_ANYIN | R_ONESHOT)) | R_ET);
	return 1;
}

/*
 * Re-arm fd's registration if knotes that are still enabled need it (after
 * fdreg_fired, or when a knote taken from the active list turned out not
 * to be ready).  No system call when nothing changed.
 */
void
fdreg_sync(struct kqueue *kq, int fd)
{
	struct knote *chain = knote_fdchain(kq, fd);

	if (chain != NULL && (chain->kn_reg & R_REG))
		(void)fdreg_apply(kq, fd, chain->kn_reg, 0);
}

/*
 * Does fd still name the file registered under it?  Asked when a fresh
 * event of its level-triggered registration gave no kevent (kq_scan): its
 * number may have been closed behind the C library's back while a dup()
 * keeps the old file registered and ready, and then taken by another file
 * (or by nothing) -- every wait would return at once for nothing.  If the
 * number no longer names the registered file, its knotes go, as FreeBSD's
 * did at the close; if it does but the old file is registered under the
 * number too (the program registered the new file), only the old
 * registration must go.  Either way the set is rebuilt without it.
 * kcmp answers without touching the registration.  Where it is refused,
 * restating the registration (EPOLL_CTL_MOD; an exclusive one cannot be
 * modified: DEL and ADD) succeeds only on the registered file, which is
 * harmless for a level-triggered registration; an old registration under
 * a number the program registered again cannot be told from a filter
 * that declines for its own reasons (an inner kqueue woken by an internal
 * source), so it stays (kevent.2, LINUX NOTES).  Under kq_lock.
 */
void
fdreg_verify(struct kqueue *kq, int fd)
{
	struct knote *chain = knote_fdchain(kq, fd);
	struct epoll_event ev;
	int r, foreign = 0;

	if (chain == NULL || !(chain->kn_reg & R_REG) || kq->kq_dead)
		return;
	if ((r = epoll_probe(kq->kq_fd, fd, &foreign)) < 0) {
		int op = (chain->kn_reg & R_EXCL) ? EPOLL_CTL_DEL :
		    EPOLL_CTL_MOD;

		ev.events = fdreg_events(chain->kn_reg & R_WANTMASK);
		ev.data.u64 = fdreg_key(fd, chain->kn_reg);
		if (fdreg_ctl(kq, op, fd, &ev) != 0)
			/* ENOENT, EBADF: not ours; else cannot tell */
			r = errno != ENOENT && errno != EBADF;
		else if (op == EPOLL_CTL_MOD ||
		    fdreg_ctl(kq, EPOLL_CTL_ADD, fd, &ev) == 0)
			r = 1;
		else {
			/* Removed and not put back (ENOMEM, ENOSPC): its
			   knotes cannot work any more. */
			fdreg_forget(kq, fd);
			r = 0;
		}
	}
	if (r == 0)
		knote_drop_fd(kq, fd);
	if (r == 0 || foreign)
		kq->kq_zombie = 1;
}

/*
 * Register every descriptor and internal source of kq in the new epoll set
 * epfd, as they are registered in the current one (kq_rebuild).
 * Descriptors that cannot be registered any more are dropped.
 */
int
fdreg_readd_all(struct kqueue *kq, int epfd)
{
	struct epoll_event ev;
	struct knote *chain;
	int fd, s;

	for (fd = 0; fd < kq->kq_fdtabsize; fd++) {
		chain = kq->kq_fdtab[fd];
		if (chain == NULL || !(chain->kn_reg & R_REG))
			continue;
		/* No chain hangs under one of the kqueue's own numbers
		   (kq_intfd_claim, kq_change). */
		KQ_ASSERT(!kq_intfd_has(kq, (uintptr_t)fd));
		/* Only files still registered under their number move over. */
		if (!epoll_holds(kq->kq_fd, fd)) {
			knote_drop_fd(kq, fd);
			continue;
		}
		ev.events = fdreg_events(chain->kn_reg & R_WANTMASK);
		ev.data.u64 = fdreg_key(fd, chain->kn_reg);
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			/* Out of memory or of max_user_watches: the rebuild
			   fails (kevent's error), the knotes stay. */
			if (errno == ENOMEM || errno == ENOSPC)
				return errno;
			knote_drop_fd(kq, fd);
		}
	}
	for (s = 0; kq->kq_hashmask != 0 && (size_t)s <= kq->kq_hashmask;
	    s++) {
		struct knote *kn;

		for (kn = kq->kq_hash[s]; kn != NULL; kn = kn->kn_link) {
			const struct filterops *fop =
			    filter_lookup(kn->kn_filter);

			if (fop->f_readd != NULL)
				(void)fop->f_readd(kq, kn, epfd);
		}
	}
	/*
	 * kq's own descriptors move over only while they are still its own
	 * (kq_holds_number, asked of the old set): one closed behind the C
	 * library's back and reused would be registered in the new set by
	 * its number, and pass for kq's at the kqueue's destruction, which
	 * would close the program's file.  One that is gone stays out.
	 * (The knotes' own descriptors: f_readd, with the same test.)
	 */
	for (s = 0; s < KQ_NSRC; s++) {
		int e;

		if (kq->kq_src[s].ks_ready != NULL &&
		    kq_holds_number(kq, kq->kq_src[s].ks_fd) &&
		    (e = kq_src_register(epfd, s, kq->kq_src[s].ks_fd,
		    kq->kq_src[s].ks_events)) != 0)
			return e;
	}
	return 0;
}

/*
 * Bring the kernel registration of fd in line with its knote chain.  cur is
 * the registration as the kernel has it now.  force issues the epoll_ctl
 * even when nothing changed (re-evaluation after EV_ADD, and the check that
 * the number still names the registered file).  Returns 0 or the errno of
 * epoll_ctl; ENOENT and EBADF mean the descriptor was closed or reused.
 */
int
fdreg_apply(struct kqueue *kq, int fd, uint32_t cur, int force)
{
	struct knote *kn, *chain = knote_fdchain(kq, fd);
	struct epoll_event ev;
	uint32_t want, keep = cur & R_FILEMASK;

	if (kq->kq_dead)
		return 0;
	if (chain == NULL) {
		if ((cur & R_REG) &&
		    fdreg_ctl(kq, EPOLL_CTL_DEL, fd, &ev) != 0)
			return errno;
		return 0;
	}
	want = fdreg_want(kq, fd);
	if (cur & R_NOPOLL) {
		fdreg_set(kq, fd, cur);
		for (kn = chain; kn != NULL; kn = kn->kn_link)
			if (!(kn->kn_status & KN_DISABLED) && fdreg_uses(kn))
				knote_enqueue(kq, kn);
		return 0;
	}
	ev.data.u64 = fdreg_key(fd, cur);
	if (cur & R_REG) {
		if ((cur & R_WANTMASK) == want && !force)
			return 0;
		/*
		 * An edge-triggered interest that only shrinks is left as it
		 * is: EPOLL_CTL_MOD makes epoll report the registration's
		 * current readiness as a new edge, which would fire the
		 * EV_CLEAR knotes that stay again (FreeBSD's knotes on one
		 * descriptor are independent).  The edges of the interest no
		 * knote wants any more are ignored by kq_translate.
		 */
		if (!force && (cur & want & R_ET) &&
		    !((cur | want) & (R_EXCL | R_ONESHOT)) &&
		    (want & R_ANYIN) != 0 &&
		    (want & ~cur & R_ANYIN) == 0) {
			fdreg_set(kq, fd, cur);
			return 0;
		}
		if ((cur & R_EXCL) || (want & R_EXCL)) {
			/* EPOLLEXCLUSIVE registrations cannot be modified. */
			if (fdreg_ctl(kq, EPOLL_CTL_DEL, fd, &ev) != 0)
				return errno;
			cur &= ~R_REG;
			if ((want & R_ANYIN) == 0) {
				fdreg_set(kq, fd, keep);
				return 0;
			}
		} else {
			ev.events = fdreg_events(want);
			if (fdreg_ctl(kq, EPOLL_CTL_MOD, fd, &ev) != 0)
				return errno;
			fdreg_set(kq, fd, want | R_REG | keep);
			return 0;
		}
	}
	ev.events = fdreg_events(want);
	if ((want & R_EXCL) && (want & R_ET) && (want & R_ANYIN) == 0)
		ev.events &= ~(uint32_t)EPOLLEXCLUSIVE;
	if (fdreg_ctl(kq, EPOLL_CTL_ADD, fd, &ev) != 0) {
		int e = errno;

		/*
		 * The set already holds this very file under this number: a
		 * registration whose knotes were dropped when the number was
		 * found closed, and the same file was put back under it (a
		 * dup2).  Take it over.
		 */
		if (e == EEXIST) {
			/* An EPOLLEXCLUSIVE registration cannot be modified:
			   replace it. */
			if (fdreg_ctl(kq, EPOLL_CTL_MOD, fd, &ev) == 0 ||
			    (fdreg_ctl(kq, EPOLL_CTL_DEL, fd, &ev) == 0 &&
			    fdreg_ctl(kq, EPOLL_CTL_ADD, fd, &ev) == 0)) {
				fdreg_set(kq, fd, want | R_REG | keep);
				return 0;
			}
			e = errno;
		}

		if (e == EPERM) {
			/* Regular files, directories, some devices. */
			fdreg_set(kq, fd, R_NOPOLL | (K_FILE << R_KINDSHIFT));
			for (kn = chain; kn != NULL; kn = kn->kn_link) {
				kn->kn_status &= ~KN_EMUL;
				if (!(kn->kn_status & KN_DISABLED) &&
				    fdreg_uses(kn))
					knote_enqueue(kq, kn);
			}
			return 0;
		}
		return e;
	}
	fdreg_set(kq, fd, want | R_REG | keep);
	return 0;
}

/*
 * Helpers for the filters whose knotes share the descriptor's registration
 * (filt_fd.c, filt_procdesc.c).
 */

/* A new knote was linked on its descriptor's chain: take part in the
   registration. */
int
fdreg_attach(struct kqueue *kq, struct knote *kn)
{
	int fd = (int)kn->kn_ident;
	struct knote *other = knote_fdchain(kq, fd);
	uint32_t cur = kn->kn_reg & R_FILEMASK;
	uint64_t id;
	int e;

	/* kn is already linked; any other knote carries the state, else
	   kn carries what is known of the file (its kind). */
	for (; other != NULL; other = other->kn_link)
		if (other != kn) {
			cur = other->kn_reg;
			break;
		}
	/*
	 * The plain case, a server's EV_ADD of each connection: kn is the
	 * descriptor's only knote, an enabled READ without EV_CLEAR,
	 * EV_DISPATCH, EV_WAKEONE or NOTE_LOWAT, and the number has no
	 * registration.  fdreg_want's answer is a level-triggered R_IN, known
	 * without its walks.  If the kernel refuses (EEXIST, EPERM, ...),
	 * fdreg_apply takes the general way and meets the same answer.
	 */
	if (other == NULL && kn->kn_filter == EVFILT_READ && !kq->kq_dead &&
	    !(cur & (R_REG | R_NOPOLL)) && !(kn->kn_status & KN_DISABLED) &&
	    !(kn->kn_flags & (EV_CLEAR | EV_DISPATCH | EV_WAKEONE)) &&
	    !(kn->kn_sfflags & NOTE_LOWAT)) {
		struct epoll_event ev;

		ev.events = fdreg_events(R_IN);
		ev.data.u64 = fdreg_key(fd, cur);
		if (fdreg_ctl(kq, EPOLL_CTL_ADD, fd, &ev) == 0) {
			kn->kn_status &= ~KN_EMUL;
			kn->kn_reg = R_IN | R_REG | (cur & R_FILEMASK);
			return 0;
		}
	}
	/*
	 * An existing registration is always updated with a system call,
	 * even when its interest already covers kn (it is only shrunk
	 * lazily): that proves the number still names the registered file
	 * (EBADF/ENOENT otherwise) and makes epoll evaluate the new knote's
	 * condition at once, as FreeBSD's attach does.
	 */
	if ((e = fdreg_apply(kq, fd, cur, (cur & R_REG) != 0)) != 0 ||
	    (kn->kn_reg & R_REG))
		return e;
	/*
	 * No registration will prove the number names this file when kq
	 * looks at it again (a regular file, an EVFILT_EMPTY knote alone):
	 * the chain remembers the file's digest (kq_scan_active).  The new
	 * knote names the file now at the number, and so do the others.
	 */
	id = fd_fileid(fd);
	for (other = knote_fdchain(kq, fd); other != NULL;
	    other = other->kn_link)
		other->kn_fileid = id;
	return 0;
}

/* kn was unlinked: shrink (or remove) the registration without it. */
int
fdreg_detach(struct kqueue *kq, struct knote *kn)
{
	if (!(kn->kn_reg & (R_REG | R_NOPOLL)))
		return 0;
	return fdreg_apply(kq, (int)kn->kn_ident, kn->kn_reg, 0);
}

/*
 * The knote's state changed: re-derive the registration.  force makes the
 * kernel re-evaluate readiness (MOD), which is how an enabled knote whose
 * condition already holds fires at once.
 */
int
fdreg_update(struct kqueue *kq, struct knote *kn, int readd)
{
	int force = readd || !(kn->kn_status & KN_DISABLED);

	if (kn->kn_reg & R_NOPOLL) {
		if (!(kn->kn_status & KN_DISABLED))
			knote_enqueue(kq, kn);
		return 0;
	}
	/* A level registration re-evaluates by itself on MOD when needed. */
	if (!readd && (kn->kn_reg & R_REG) && !(kn->kn_reg & R_ET) &&
	    !(kn->kn_flags & EV_CLEAR)) {
		force = 0;
		/*
		 * If that makes no system call, the number must still be
		 * proven to name the registered file: FreeBSD answers a
		 * change of a closed (or reused) descriptor's knote with
		 * EBADF (ENOENT), and so must we.
		 */
		if ((fdreg_want(kq, (int)kn->kn_ident) | R_REG) ==
		    (kn->kn_reg & (R_WANTMASK | R_REG)) &&
		    epoll_holds(kq->kq_fd, (int)kn->kn_ident) == 0)
			return fcntl((int)kn->kn_ident, F_GETFD) < 0 ? EBADF :
			    ENOENT;
	}
	return fdreg_apply(kq, (int)kn->kn_ident, kn->kn_reg, force);
}
