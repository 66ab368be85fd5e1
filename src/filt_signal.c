/*
 * filt_signal.c -- EVFILT_SIGNAL: count the deliveries of a signal.
 *
 * sigshim.c counts every delivery of a watched signal in kq_sig_gen[] and
 * rings a process-wide eventfd.  Each kqueue that has signal knotes holds a
 * duplicate of that eventfd in its epoll set (slot KQ_SRC_SIGNAL,
 * edge-triggered, never read, so every ring wakes every such kqueue); when
 * it fires, each knote whose counter moved goes on the active list.  A
 * knote remembers the counter value it last reported, so several kqueues
 * (and EV_DISABLE periods) each see every delivery.
 *
 * FreeBSD: ident = signal number, data = deliveries since the last
 * retrieval, auto-EV_CLEAR; SIGKILL and SIGSTOP cannot be watched
 * (EINVAL; FreeBSD only fails on signal numbers out of range, but neither
 * can be caught on Linux so kq refuses them up front).
 *
 * Hooks run with kq_lock held; sigshim takes its own lock inside it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "kq_int.h"
#include "fault.h"
#include "sigshim.h"

struct sgknote {
	struct knote	sg_kn;
	uint64_t	sg_seen;	/* counter at the last delivery */
	uint64_t	sg_snap;	/* counter when f_event reported */
};

#define SG(kn)	((struct sgknote *)(void *)(kn))

/* The signals this kqueue has knotes for (ks_arg of KQ_SRC_SIGNAL). */
struct sgset {
	int	count[KQ_NSIG];
};

static void
sig_ready(struct kqueue *kq, struct kqsrc *src, uint32_t events)
{
	struct sgset *set = src->ks_arg;
	int signo;

	(void)events;
	for (signo = 1; set != NULL && signo < KQ_NSIG; signo++) {
		struct knote *kn;

		if (set->count[signo] == 0)
			continue;
		kn = knote_lookup(kq, (uintptr_t)signo, EVFILT_SIGNAL, 0);
		if (kn != NULL && !(kn->kn_status & KN_DISABLED) &&
		    atomic_load(&kq_sig_gen[signo]) != SG(kn)->sg_seen)
			knote_enqueue(kq, kn);
	}
}

static void
sig_fini(struct kqueue *kq, struct kqsrc *src)
{
	(void)kq;
	kq_free(src->ks_arg);
}

static struct sgset *
sig_source_made(struct kqueue *kq, int *error)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_SIGNAL];
	struct sgset *set;
	int fd;

	if (src->ks_ready != NULL)
		return src->ks_arg;
	set = kq_calloc(1, sizeof(*set));
	if (set == NULL) {
		*error = ENOMEM;
		return NULL;
	}
	*error = kq_sig_evfd_dup(&fd);
	if (*error != 0) {
		kq_free(set);
		return NULL;
	}
	*error = kq_src_add_ev(kq, KQ_SRC_SIGNAL, fd, EPOLLIN | EPOLLET,
	    sig_ready);
	if (*error != 0) {
		kq_close_raw(fd);
		kq_free(set);
		return NULL;
	}
	src->ks_arg = set;
	src->ks_fini = sig_fini;
	/*
	 * The shared eventfd is readable for good once any signal was
	 * counted, so the set reports it at once after the ADD: take that
	 * edge now, or the kqueue would look ready with nothing pending.
	 */
	(void)kq_absorb(kq);
	return set;
}

/* sig_source_made() under kq_mkfd_begin(): see registry.c. */
static struct sgset *
sig_source(struct kqueue *kq, int *error)
{
	struct sgset *r;

	if (kq->kq_src[KQ_SRC_SIGNAL].ks_ready != NULL)
		return sig_source_made(kq, error);	/* nothing to make */
	kq_mkfd_begin();
	r = sig_source_made(kq, error);
	kq_mkfd_end();
	return r;
}

static int
filt_sigmodify(struct kqueue *kq, struct knote *kn, const struct kevent *kev)
{
	(void)kq;
	if (!(kn->kn_status & KN_ATTACHED))
		return kq_sig_valid(kev->ident) ? 0 : EINVAL;
	kn->kn_sfflags = kev->fflags;
	kn->kn_sdata = kn_clamp32(kev->data);
	return 0;
}

static int
filt_sigattach(struct kqueue *kq, struct knote *kn)
{
	struct sgset *set;
	int signo = (int)kn->kn_ident, error = 0;

	set = sig_source(kq, &error);
	if (set == NULL)
		return error;
	/* Count from now on: earlier deliveries are not this knote's. */
	SG(kn)->sg_seen = atomic_load(&kq_sig_gen[signo]);
	error = kq_sig_watch(signo);
	if (error != 0)
		return error;
	set->count[signo]++;
	kn->kn_flags |= EV_CLEAR;
	return 0;
}

static int
filt_sigdetach(struct kqueue *kq, struct knote *kn)
{
	struct sgset *set = kq->kq_src[KQ_SRC_SIGNAL].ks_arg;
	int signo = (int)kn->kn_ident;

	if (set != NULL && set->count[signo] > 0)
		set->count[signo]--;
	kq_sig_unwatch(signo);
	return 0;
}

static int
filt_sigupdate(struct kqueue *kq, struct knote *kn, int readd)
{
	(void)readd;
	if (!(kn->kn_status & KN_DISABLED) &&
	    atomic_load(&kq_sig_gen[kn->kn_ident]) != SG(kn)->sg_seen)
		knote_enqueue(kq, kn);
	return 0;
}

static int
filt_sigevent(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	uint64_t now = atomic_load(&kq_sig_gen[kn->kn_ident]);

	(void)kq;
	(void)hint;
	if (now == SG(kn)->sg_seen)
		return 0;
	SG(kn)->sg_snap = now;
	out->data = (int64_t)(now - SG(kn)->sg_seen);
	return 1;
}

static void
filt_sigclear(struct kqueue *kq, struct knote *kn)
{
	(void)kq;
	SG(kn)->sg_seen = SG(kn)->sg_snap;
}

const struct filterops sig_filtops = {
	.f_isfd = 0,
	.f_size = sizeof(struct sgknote),
	.f_attach = filt_sigattach,
	.f_detach = filt_sigdetach,
	.f_modify = filt_sigmodify,
	.f_update = filt_sigupdate,
	.f_event = filt_sigevent,
	.f_clear = filt_sigclear,
};
