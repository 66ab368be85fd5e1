/*
 * knote.c -- knote storage: allocation, the descriptor table, the ident
 * hash, the active list and the doorbell.  Everything here runs with
 * kq_lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "kq_int.h"
#include "sigshim.h"
#include "ksys.h"
#include "fault.h"

#define KQEXTENT	256		/* fd table growth step */
#define KN_SLAB		3968		/* bytes per knote cache block: with its
				   alignment and header, a 4 KiB block
				   of heap.c */
#define KN_STRIDE	64		/* a cached knote per cache line */
#define KN_HASHMIN	64

/*
 * Knotes of the base size come from a per-kqueue cache carved out of 4 KiB
 * blocks, so that EV_ADD/EV_DELETE cycles allocate nothing in steady state
 * and a knote costs no malloc header.  Each takes a cache line of its own
 * (its 56 bytes would mostly straddle two lines, and a wait that
 * delivers it would miss on both).  Blocks are freed with the kqueue.
 * Larger knotes (filters with f_size > base) use malloc.
 */
struct knslab {
	struct knslab	*ks_next;
};
_Static_assert(sizeof(struct knote) <= KN_STRIDE &&
    KN_STRIDE % _Alignof(struct knote) == 0, "a knote fits its line");

struct knote *
knote_alloc(struct kqueue *kq, const struct filterops *fop)
{
	struct knote *kn;

	if (fop->f_size > sizeof(struct knote)) {
		kn = kq_calloc(1, fop->f_size);
		return kn;
	}
	if (kq->kq_freekn == NULL) {
		struct knslab *s = kq_aligned_alloc(KN_STRIDE, KN_SLAB);
		char *p;

		if (s == NULL)
			return NULL;
		s->ks_next = kq->kq_slabs;
		kq->kq_slabs = s;
		for (p = (char *)s + KN_STRIDE; p + KN_STRIDE <=
		    (char *)s + KN_SLAB; p += KN_STRIDE) {
			kn = (struct knote *)(void *)p;
			kn->kn_link = kq->kq_freekn;
			kq->kq_freekn = kn;
		}
	}
	kn = kq->kq_freekn;
	kq->kq_freekn = kn->kn_link;
	memset(kn, 0, sizeof(*kn));
	return kn;
}

void
knote_free(struct kqueue *kq, struct knote *kn)
{
	const struct filterops *fop = filter_lookup(kn->kn_filter);

	KQ_ASSERT(!(kn->kn_status & KN_QUEUED));

	if (fop != NULL && fop->f_size > sizeof(struct knote)) {
		kq_free(kn);
		return;
	}
	kn->kn_link = kq->kq_freekn;
	kq->kq_freekn = kn;
}

static size_t
kn_hash(uintptr_t ident, int filter, size_t mask)
{
	uint64_t h = (uint64_t)ident * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t)((h >> 32) ^ (uint64_t)(filter & 0xff)) & mask;
}

struct knote *
knote_lookup(struct kqueue *kq, uintptr_t ident, int filter, int isfd)
{
	struct knote *kn;

	if (isfd) {
		if (ident >= (uintptr_t)kq->kq_fdtabsize)
			return NULL;
		kn = kq->kq_fdtab[ident];
	} else {
		if (kq->kq_hashmask == 0)
			return NULL;
		kn = kq->kq_hash[kn_hash(ident, filter, kq->kq_hashmask)];
	}
	for (; kn != NULL; kn = kn->kn_link)
		if (kn->kn_filter == filter && kn->kn_ident == ident)
			return kn;
	return NULL;
}

static int
kq_hash_grow(struct kqueue *kq)
{
	size_t nsize = kq->kq_hashmask ? (kq->kq_hashmask + 1) * 2 : KN_HASHMIN;
	struct knote **nh = kq_calloc(nsize, sizeof(*nh));
	size_t i;

	if (nh == NULL)
		return ENOMEM;
	for (i = 0; kq->kq_hashmask && i <= kq->kq_hashmask; i++) {
		struct knote *kn, *next;

		for (kn = kq->kq_hash[i]; kn != NULL; kn = next) {
			size_t b = kn_hash(kn->kn_ident, kn->kn_filter,
			    nsize - 1);

			next = kn->kn_link;
			kn->kn_link = nh[b];
			nh[b] = kn;
		}
	}
	kq_free(kq->kq_hash);
	kq->kq_hash = nh;
	kq->kq_hashmask = nsize - 1;
	return 0;
}

/* Link a new knote into the fd table or the hash. */
int
knote_link(struct kqueue *kq, struct knote *kn, int isfd)
{
	if (isfd) {
		int fd = (int)kn->kn_ident;

		if (fd >= kq->kq_fdtabsize) {
			int nsize = kq->kq_fdtabsize;
			struct knote **nt;

			while (nsize <= fd)
				nsize += KQEXTENT;
			uint64_t *ns;

			ns = kq_realloc(kq->kq_fdseq,
			    (size_t)nsize * sizeof(*ns));
			if (ns == NULL)
				return ENOMEM;
			kq->kq_fdseq = ns;
			nt = kq_realloc(kq->kq_fdtab, (size_t)nsize * sizeof(*nt));
			if (nt == NULL)
				return ENOMEM;
			memset(nt + kq->kq_fdtabsize, 0,
			    (size_t)(nsize - kq->kq_fdtabsize) * sizeof(*nt));
			memset(ns + kq->kq_fdtabsize, 0,
			    (size_t)(nsize - kq->kq_fdtabsize) * sizeof(*ns));
			kq->kq_fdtab = nt;
			kq->kq_fdtabsize = nsize;
		}
		/* Every knote of a chain carries the registration state. */
		kn->kn_reg = kq->kq_fdtab[fd] ? kq->kq_fdtab[fd]->kn_reg : 0;
		if (kq->kq_fdtab[fd] == NULL) {
			if (kq_fdwatch_add(fd, 1) != 0)
				return ENOMEM;
			kq->kq_nfdchains++;
		}
		kn->kn_link = kq->kq_fdtab[fd];
		kq->kq_fdtab[fd] = kn;
	} else {
		size_t b;

		if (kq->kq_nhashed + 1 > (kq->kq_hashmask + 1) * 2 ||
		    kq->kq_hashmask == 0) {
			int e = kq_hash_grow(kq);

			if (e != 0)
				return e;
		}
		b = kn_hash(kn->kn_ident, kn->kn_filter, kq->kq_hashmask);
		kn->kn_link = kq->kq_hash[b];
		kq->kq_hash[b] = kn;
		kq->kq_nhashed++;
	}
	kq->kq_actgen++;	/* a new knote (kq_quiet_echo) */
	return 0;
}

void
knote_unlink(struct kqueue *kq, struct knote *kn, int isfd)
{
	struct knote **pp;

	if (isfd)
		pp = &kq->kq_fdtab[kn->kn_ident];
	else
		pp = &kq->kq_hash[kn_hash(kn->kn_ident, kn->kn_filter,
		    kq->kq_hashmask)];
	for (; *pp != NULL; pp = &(*pp)->kn_link) {
		if (*pp == kn) {
			*pp = kn->kn_link;
			if (isfd && kq->kq_fdtab[kn->kn_ident] == NULL) {
				(void)kq_fdwatch_add((int)kn->kn_ident, -1);
				kq->kq_nfdchains--;
			}
			break;
		}
	}
	kn->kn_link = NULL;
	if (!isfd)
		kq->kq_nhashed--;
}

/* Put kn on the active list (once). */
void
knote_enqueue(struct kqueue *kq, struct knote *kn)
{
	if (kn->kn_status & (KN_QUEUED | KN_DROPPED))
		return;
	KQ_ASSERT(kq->kq_count >= 0);
	kn->kn_status |= KN_QUEUED;
	STAILQ_INSERT_TAIL(&kq->kq_head, kn, kn_tqe);
	kq->kq_count++;
	kq->kq_actgen++;	/* an activation (kq_quiet_echo) */
}

/*
 * A change (kq_change) queued a knote that was not queued: an activation
 * made in userspace, which no kernel edge announces.  For a kqueue another
 * kqueue watches, with its doorbell rung already, the doorbell owes a ring
 * (kq_bell_update writes it again), as FreeBSD's knote_enqueue wakes the
 * watchers each time.  Not for a collection putting a level knote back on
 * the list (FreeBSD's kqueue_scan re-appends it without a wake-up): that
 * made a loop on nested kqueues spin (helper 30's F1).
 */
void
kq_bell_owe(struct kqueue *kq)
{
	if (kq->kq_watched && kq->kq_bell_rung == 1)
		kq->kq_bell_rung = 2;
}

/*
 * Remove kn from the kqueue: detach it from its source, unlink it, and free
 * it -- or, when it is still on the active list, mark it dropped so the
 * scan frees it when it reaches it.
 */
int
knote_drop(struct kqueue *kq, struct knote *kn)
{
	const struct filterops *fop = filter_lookup(kn->kn_filter);
	int error = 0;

	knote_unlink(kq, kn, fop->f_isfd);
	kn->kn_status |= KN_DROPPED;
	if (fop->f_detach != NULL)
		error = fop->f_detach(kq, kn);
	knote_dropped(kq, kn);
	return error;
}

/* Take every dropped knote off the active list and free it (below). */
static void
knote_sweep(struct kqueue *kq)
{
	int n = kq->kq_count + kq->kq_ndrop;
	struct knote *kn;

	/* One turn of the list, in order: the dropped go, the rest go back
	   to the tail. */
	while (n-- > 0 && (kn = STAILQ_FIRST(&kq->kq_head)) != NULL) {
		STAILQ_REMOVE_HEAD(&kq->kq_head, kn_tqe);
		if (kn->kn_status & KN_DROPPED) {
			kn->kn_status &= ~KN_QUEUED;
			kq->kq_ndrop--;
			knote_free(kq, kn);
		} else
			STAILQ_INSERT_TAIL(&kq->kq_head, kn, kn_tqe);
	}
	KQ_ASSERT(kq->kq_ndrop == 0);
}

/*
 * Free kn, unlinked, detached and marked KN_DROPPED: now, or, when it is
 * on the active list, once it leaves it.  Either way it no longer counts
 * as pending (kq_count), as FreeBSD's knote_drop dequeues it: a kqueue
 * whose only queued knote was deleted before a scan reached it stops
 * polling readable (kq_bell_update), and so does a port whose alert was
 * cleared (attack helper 41's defect 1).  The list is a singly linked
 * one, so a dropped knote stays on it until a scan pops it, or until the
 * dropped ones outnumber the rest: then knote_sweep takes them all off (a
 * pass over the list for at least as many drops: the list never grows
 * with knotes that are gone, on a kqueue nobody collects).  kq_lock held;
 * no caller holds a pointer into the list across this (kq_scan_active
 * takes each knote off before it looks at it).
 */
void
knote_dropped(struct kqueue *kq, struct knote *kn)
{
	KQ_ASSERT(kn->kn_status & KN_DROPPED);
	if (!(kn->kn_status & KN_QUEUED)) {
		knote_free(kq, kn);
		return;
	}
	kq->kq_count--;
	kq->kq_ndrop++;
	KQ_ASSERT(kq->kq_count >= 0);
	if (kq->kq_ndrop > kq->kq_count)
		knote_sweep(kq);
}

/*
 * The descriptor fd was closed (or its number reused) behind our back:
 * drop every knote on it without touching the kernel registration, which
 * the kernel removed with the file (see docs/DESIGN.md on dup()).
 */
void
knote_drop_fd(struct kqueue *kq, int fd)
{
	struct knote *kn;

	fdreg_forget(kq, fd);
	while ((kn = knote_fdchain(kq, fd)) != NULL)
		knote_drop(kq, kn);
}

static void
kq_bell_ready(struct kqueue *kq, struct kqsrc *src, uint32_t events)
{
	/* Nothing to do: the scan looks at kq_head anyway. */
	(void)kq;
	(void)src;
	(void)events;
}

/* Create the doorbell of a new kqueue.  Returns 0 or an errno. */
int
kq_bell_create(struct kqueue *kq)
{
	int fd = KQ_FDCALL(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), e;

	if (fd < 0)
		return errno;
	if ((e = kq_src_add(kq, KQ_SRC_BELL, fd, kq_bell_ready)) != 0) {
		kq_close_raw(fd);
		return e;
	}
	kq->kq_bell_rung = 0;
	return 0;
}

/*
 * Keep the doorbell in step with the active list (see kq_int.h).  Called
 * through kq_bell_update() when the two disagree.  A dead kqueue's doorbell
 * stays rung.
 */
void
kq_bell_sync(struct kqueue *kq)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_BELL];
	uint64_t v = 1;

	KQ_ASSERT(src->ks_ready != NULL);
	if (kq->kq_dead)
		return;
	if (kq->kq_count > 0 && kq->kq_bell_rung != 1) {
		/* Silent, or rung with a ring owed (2): a write wakes the
		   watchers again, even of a readable eventfd. */
		(void)kq_nc_write(src->ks_fd, &v, sizeof(v));
		kq->kq_bell_rung = 1;
	} else if (kq->kq_count == 0 && kq->kq_bell_rung) {
		(void)kq_nc_read(src->ks_fd, &v, sizeof(v));
		kq->kq_bell_rung = 0;
	}
}

/*
 * Ring the doorbell whatever its state: every write wakes one thread
 * blocked in epoll_wait() on the set (a dead kqueue's sleepers).
 */
void
kq_bell_ring(struct kqueue *kq)
{
	uint64_t v = 1;

	if (kq->kq_src[KQ_SRC_BELL].ks_ready != NULL && !kq->kq_unowned)
		(void)kq_nc_write(kq->kq_src[KQ_SRC_BELL].ks_fd, &v,
		    sizeof(v));
	kq->kq_bell_rung = 1;
}

/* Add internal source slot's descriptor fd to the epoll set epfd. */
int
kq_src_register(int epfd, int slot, int fd, uint32_t events)
{
	struct epoll_event ev;

	ev.events = events ? events : EPOLLIN;
	ev.data.u64 = KQ_SRCKEY | (uint64_t)slot;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0 ? errno : 0;
}

/*
 * Mark fd as the kqueue's own (see kq_int.h).  Returns 0 or ENOMEM.
 *
 * The bitmap is read without kq_lock by a fork() child (registry.c) and by
 * closefrom() (kq_registry_own_fds_locked), which may run while a port
 * timer's knote claims its timerfd.  So its words change atomically, a
 * larger bitmap is complete before it is published (the pointer, then the
 * word count: a reader loads the count first), and a replaced one is not
 * freed until the kqueue is destroyed (kq_intfd_free): each allocation
 * keeps the previous one's address in the word before its first, and the
 * sizes double, so the chain is at most twice the last one.
 */
int
kq_intfd_claim(struct kqueue *kq, int fd)
{
	int w = fd / 64;

	KQ_ASSERT(fd >= 0);
	if (w >= kq->kq_intfdwords) {
		int nw = kq->kq_intfdwords ? kq->kq_intfdwords : 1;
		uint64_t *base, *nb, *old = kq->kq_intfd;

		while (nw <= w)
			nw *= 2;
		base = kq_malloc((size_t)(nw + 1) * sizeof(*base));
		if (base == NULL)
			return ENOMEM;
		base[0] = (uint64_t)(uintptr_t)(old != NULL ? old - 1 : NULL);
		nb = base + 1;
		if (old != NULL)
			memcpy(nb, old,
			    (size_t)kq->kq_intfdwords * sizeof(*nb));
		memset(nb + kq->kq_intfdwords, 0,
		    (size_t)(nw - kq->kq_intfdwords) * sizeof(*nb));
		__atomic_store_n(&kq->kq_intfd, nb, __ATOMIC_RELEASE);
		__atomic_store_n(&kq->kq_intfdwords, nw, __ATOMIC_RELEASE);
	}
	/*
	 * Counted as watched: close() and dup2() of it come to
	 * kq_fdclose, which refuses them (close.c); and as internal: a
	 * change on any kqueue naming it fails (kq_change).  Once per set
	 * bit: the bit is already set when a descriptor of the kqueue's was
	 * closed behind kq's back and the kernel gave its number back, and
	 * kq_intfd_release takes the count away once.
	 */
	if (!kq_intfd_has(kq, (uintptr_t)fd)) {
		kq_sig_evfd_lost(fd);
		if (kq_fdwatch_add(fd, KQ_WATCH_INTERNAL) != 0)
			return ENOMEM;
		__atomic_fetch_or(&kq->kq_intfd[w], UINT64_C(1) << (fd % 64),
		    __ATOMIC_RELAXED);
	}
	/*
	 * The kernel handed us a number the program's knotes still hang
	 * under: it was closed behind the C library's back.  They go, as
	 * they would have at the close.  (If a dup() keeps the old file
	 * registered under the number, its next event finds no knote and
	 * the set is rebuilt then: kq_translate.)
	 */
	if (knote_fdchain(kq, fd) != NULL)
		knote_drop_fd(kq, fd);
	return 0;
}

/* fd is about to be closed: no longer the kqueue's. */
void
kq_intfd_release(struct kqueue *kq, int fd)
{
	if (kq_intfd_has(kq, (uintptr_t)fd)) {
		__atomic_fetch_and(&kq->kq_intfd[fd / 64],
		    ~(UINT64_C(1) << (fd % 64)), __ATOMIC_RELAXED);
		(void)kq_fdwatch_add(fd, -KQ_WATCH_INTERNAL);
	}
}

/* Register an internal descriptor in the kqueue's epoll set. */
int
kq_src_add_ev(struct kqueue *kq, int slot, int fd, uint32_t events,
    void (*ready)(struct kqueue *, struct kqsrc *, uint32_t))
{
	int e = kq_intfd_claim(kq, fd);

	/* Into the set through kq_waitfd, kq's own number: a handler may
	   have closed kq_fd's (kq_retire_later), and kq_destroy proves each
	   source by its registration there (kq_holds_number). */
	if (e == 0 && (e = kq_src_register(kq_sleepfd(kq), slot, fd,
	    events)) != 0)
		kq_intfd_release(kq, fd);
	if (e != 0)
		return e;
	kq->kq_src[slot].ks_fd = fd;
	kq->kq_src[slot].ks_events = events;
	kq->kq_src[slot].ks_ready = ready;
	return 0;
}

int
kq_src_add(struct kqueue *kq, int slot,
    int fd, void (*ready)(struct kqueue *, struct kqsrc *, uint32_t))
{
	return kq_src_add_ev(kq, slot, fd, 0, ready);
}

/*
 * Register fd, owned by the non-descriptor knote kn, in the kqueue's epoll
 * set (edge-triggered on events).  When it fires, kq_src_dispatch() puts kn
 * on the active list.  When the knote goes, kq_knsrc_close releases and
 * closes fd.
 */
int
kq_knsrc_register(int epfd, const struct knote *kn, int fd, uint32_t events)
{
	struct epoll_event ev;

	ev.events = events | EPOLLET;
	ev.data.u64 = KQ_SRCKEY | KQ_KNKEY |
	    ((uint64_t)(uint8_t)kn->kn_filter << 32) | (uint32_t)kn->kn_ident;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0 ? errno : 0;
}

int
kq_knsrc_add(struct kqueue *kq, struct knote *kn, int fd, uint32_t events)
{
	int e;

	if (kq->kq_dead)
		return EBADF;
	if ((e = kq_intfd_claim(kq, fd)) != 0)
		return e;
	kq->kq_regseq++;
	if ((e = kq_knsrc_register(kq_sleepfd(kq), kn, fd, events)) != 0)
		kq_intfd_release(kq, fd);
	return e;
}

/*
 * The knote goes: its fd (kq_knsrc_add succeeded) is released and closed
 * if it is still the file kq put there.  Proven by its registration in
 * the set, before the registration goes: a number closed behind the C
 * library's back and reused is the program's file, released but not
 * closed.  In a maker section (no fork() between the release and the
 * close: registry.c).
 */
void
kq_knsrc_close(struct kqueue *kq, int fd)
{
	struct epoll_event ev;
	int own = !kq->kq_unowned && kq_holds_number(kq, fd);

	kq_intfd_release(kq, fd);
	if (!kq->kq_dead) {
		kq->kq_regseq++;
		(void)epoll_ctl(kq_sleepfd(kq), EPOLL_CTL_DEL, fd, &ev);
	}
	if (own)
		kq_close_raw(fd);
}

/*
 * An epoll event with KQ_SRCKEY set: an internal source, or a knote's own
 * kernel descriptor.
 */
void
kq_src_dispatch(struct kqueue *kq, uint64_t key, uint32_t events)
{
	if (key & KQ_KNKEY) {
		int8_t filter = (int8_t)(uint8_t)(key >> 32);
		struct knote *kn = knote_lookup(kq, (uintptr_t)(uint32_t)key,
		    filter, 0);

		if (kn != NULL && !(kn->kn_status & KN_DISABLED))
			knote_enqueue(kq, kn);
		return;
	}
	struct kqsrc *src = &kq->kq_src[key & (KQ_NSRC - 1)];

	if (src->ks_ready != NULL)
		src->ks_ready(kq, src, events);
}

/*
 * The kqueue's internal sources were closed: release their numbers and
 * free the bitmap.  With kq_lock and reg_lock held (kq_destroy): a fork()
 * child and closefrom() (kq_registry_own_fds_locked) read the bitmap
 * under reg_lock or in a child, never while it is emptied or freed.
 */
void
kq_intfd_free(struct kqueue *kq)
{
	uint64_t *s;
	size_t i;

	for (i = 0; i < (size_t)kq->kq_intfdwords; i++)
		while (kq->kq_intfd[i] != 0)
			kq_intfd_release(kq, (int)(i * 64) +
			    __builtin_ctzll(kq->kq_intfd[i]));
	s = kq->kq_intfd != NULL ? kq->kq_intfd - 1 : NULL;
	__atomic_store_n(&kq->kq_intfdwords, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&kq->kq_intfd, NULL, __ATOMIC_RELEASE);
	while (s != NULL) {	/* this bitmap and the ones it replaced */
		uint64_t *prev = (uint64_t *)(uintptr_t)s[0];

		kq_free(s);
		s = prev;
	}
}

/* Free every knote and table (kqueue destruction). */
void
kq_free_all(struct kqueue *kq)
{
	struct knote *kn;
	int fd;
	size_t i;
	void *s, *next;

	for (fd = 0; fd < kq->kq_fdtabsize; fd++)
		while ((kn = kq->kq_fdtab[fd]) != NULL)
			knote_drop(kq, kn);
	for (i = 0; kq->kq_hashmask && i <= kq->kq_hashmask; i++)
		while ((kn = kq->kq_hash[i]) != NULL)
			knote_drop(kq, kn);
	while ((kn = STAILQ_FIRST(&kq->kq_head)) != NULL) {
		STAILQ_REMOVE_HEAD(&kq->kq_head, kn_tqe);
		kn->kn_status &= ~KN_QUEUED;
		if (kn->kn_status & KN_DROPPED)
			knote_free(kq, kn);
	}
	kq->kq_count = 0;
	kq->kq_ndrop = 0;
	kq_free(kq->kq_fdtab);
	kq->kq_fdtab = NULL;
	kq_free(kq->kq_fdseq);
	kq->kq_fdseq = NULL;
	kq->kq_fdtabsize = 0;
	kq_free(kq->kq_hash);
	kq->kq_hash = NULL;
	kq_free(kq->kq_absorbev);
	kq->kq_absorbev = NULL;
	kq_free(kq->kq_lvl);
	kq->kq_lvl = NULL;
	kq_free(kq->kq_qset);
	kq->kq_qset = NULL;
	kq->kq_quiet_kn = NULL;
	kq_free(kq->kq_dgmsg);
	kq->kq_dgmsg = NULL;
	/* The internal sources close next (the knotes' own are closed),
	   and the bitmap goes with them (kq_intfd_free). */
	kq->kq_hashmask = 0;
	kq->kq_nhashed = 0;
	for (s = kq->kq_slabs; s != NULL; s = next) {
		next = ((struct knslab *)s)->ks_next;
		kq_free(s);
	}
	kq->kq_slabs = NULL;
	kq->kq_freekn = NULL;
	KQ_ASSERT(kq->kq_empty == NULL);
	kq->kq_exitwait = 0;	/* no exit waits: the object is pooled */
	kq->kq_cnseen = 0;
	kq->kq_scanid = 0;
	KQ_ASSERT(kq->kq_nfdchains == 0);
}

