/*
 * kq_int.h -- the one private header of libkq: the kqueue, the knote, the
 * filter operations and the prototypes shared between the engine's files.
 *
 * Data model (Lemon's, see docs/DESIGN.md):
 *   - struct kqueue owns one epoll instance; the epoll descriptor *is* the
 *     descriptor kqueue() returns, so poll/select/epoll/another kqueue can
 *     watch it directly.
 *   - a knote is one (ident, filter) registration.  Knotes on descriptors
 *     hang off kq_fdtab[fd] (a chain of at most three: READ, WRITE, EMPTY);
 *     other knotes hang off the kq_hash buckets.
 *   - kq_head is the active list for knotes whose readiness userspace has to
 *     track itself (overflow of a full eventlist, level-triggered knotes on
 *     an edge-triggered registration, regular files, later: timers, user
 *     events, signals).  Knotes on a level-triggered epoll registration are
 *     tracked by the kernel and are normally not on it.
 *
 * Locking: kq_lock protects every field of the kqueue and all its knotes.
 * It is never held across a blocking epoll_wait().  The process-wide
 * registry (registry.c) maps descriptor numbers to kqueues without a lock
 * on the lookup path.
 */
#ifndef KQ_INT_H
#define KQ_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/event.h>
#include <sys/epoll.h>

#define KQ_EXPORT	__attribute__((visibility("default")))
#define KQ_LIKELY(x)	__builtin_expect(!!(x), 1)
#define KQ_UNLIKELY(x)	__builtin_expect(!!(x), 0)

/*
 * kq_close_raw(fd): close a descriptor kq owns (internal sources, pidfds,
 * temporaries) without going through close.c's close(), which may take a
 * kqueue's lock: internal closes happen with a kq_lock held.  Under
 * ThreadSanitizer it goes through TSan's interceptor, so that TSan still
 * sees the descriptor closed.
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KQ_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define KQ_TSAN 1
#endif
#include <unistd.h>
#include <sys/syscall.h>
#ifdef KQ_TSAN
#include <errno.h>
#include <pthread.h>
int	__interceptor_close(int);
int	__interceptor_dup3(int, int, int);
#endif
static inline int
kq_close_raw(int fd)
{
#ifdef KQ_TSAN
	/* TSan's close() ends in the C library's, a cancellation point:
	   not one here (kq may hold a lock, see ksys.h). */
	int r, e, st;

	(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &st);
	r = __interceptor_close(fd);
	e = errno;
	(void)pthread_setcancelstate(st, &st);
	errno = e;
	return r;
#else
	return (int)syscall(SYS_close, fd);
#endif
}

static inline int
kq_dup3_raw(int oldfd, int newfd, int flags)
{
#ifdef KQ_TSAN
	return __interceptor_dup3(oldfd, newfd, flags);
#else
	return (int)syscall(SYS_dup3, oldfd, newfd, flags);
#endif
}

/*
 * KQ_ASSERT(cond): an invariant of docs/DESIGN.md.  Checked in debug
 * builds (-DKQ_DEBUG; the ASan+UBSan CI build), where a violation prints
 * where and aborts; compiled out otherwise.
 */
#ifdef KQ_DEBUG
void	kq_assert_fail(const char *expr, const char *file, int line)
	    __attribute__((noreturn, cold));
#define KQ_ASSERT(c)	((c) ? (void)0 : kq_assert_fail(#c, __FILE__, __LINE__))
#else
#define KQ_ASSERT(c)	((void)0)
#endif

struct kqueue;
struct knote;

/*
 * Filter operations.  Every hook is called with kq_lock held.
 *
 * f_attach	a new knote was linked (kn_sfflags/kn_sdata/kn_flags set from
 *		the change); returns 0 or an errno, in which case the engine
 *		unlinks and frees the knote.
 * f_detach	the knote is about to be unlinked and freed (EV_DELETE,
 *		one-shot delivery, close of the kqueue).  Must release what
 *		f_attach took.  May be called with kq_dead set (no syscalls on
 *		the epoll descriptor then).  Returns 0, or for descriptor
 *		filters the errno of the kernel update (EBADF/ENOENT: the
 *		descriptor was closed or its number reused).
 * f_modify	every change of an existing knote (EV_ADD, EV_ENABLE,
 *		EV_DISABLE, ...; and once before f_attach of a new one, when
 *		KN_ATTACHED is still clear): take the new fflags/data (udata
 *		is the engine's).  Filters that record activity under the
 *		old fflags (VNODE, PROC) catch up here first.  Returns 0 or
 *		an errno.  NULL: copy them.
 * f_update	the knote's enabled state or flags changed (EV_ENABLE,
 *		EV_DISABLE, EV_DISPATCH after delivery, after f_modify): bring
 *		the event source in line and, if the condition holds now and
 *		the knote is enabled, make sure it will be reported.  readd is
 *		set for EV_ADD on an existing knote (FreeBSD re-evaluates the
 *		filter then).  Returns 0 or an errno (ENOENT/EBADF: the
 *		descriptor behind it was closed or its number reused).
 * f_event	is the knote's condition true?  hint is the epoll event mask
 *		that woke it, or 0 for a re-check from the active list; for
 *		EVFILT_READ the mask may carry KQ_HINT_STALE (below).  When
 *		true, fill out->data, out->fflags and OR extra flags (EV_EOF)
 *		into out->flags and return 1; otherwise return 0.
 *		KN_EVDROP: the knote's object is gone and nothing is to be
 *		reported (FreeBSD's EV_DROP): the engine drops the knote.
 *		-1 (descriptor filters): the descriptor was closed.
 * f_clear	after an EV_CLEAR knote was delivered: reset its state.
 * f_readd	the epoll set is being rebuilt (kevent.c kq_rebuild): register
 *		the knote's own kernel descriptor (kq_knsrc_add) in epfd.
 *		NULL for knotes without one.
 */
#define KN_EVDROP	(-2)	/* f_event: drop the knote silently */
/*
 * In an EVFILT_READ hint: the mask was fetched by a blocking wait during
 * which registrations changed, so it may predate them (the number closed
 * and registered again, a dispatched knote re-enabled after its data was
 * consumed).  The filter must not trust it beyond what it verifies now.
 * EPOLLET's bit: epoll never reports it.
 */
#define KQ_HINT_STALE	(1u << 31)
/*
 * In an EVFILT_READ hint: out->data already holds the descriptor's
 * FIONREAD count (or -errno: it has none), taken after the wait returned
 * and before kq_lock was taken again, and the registration has not changed
 * since the wait began (see kq_scan).  EPOLLONESHOT's bit: epoll never reports it.
 */
#define KQ_HINT_NREAD	(1u << 30)

struct filterops {
	int	f_isfd;		/* ident is a descriptor */
	size_t	f_size;		/* allocation size of the knote */
	int	(*f_attach)(struct kqueue *, struct knote *);
	int	(*f_detach)(struct kqueue *, struct knote *);
	int	(*f_modify)(struct kqueue *, struct knote *, const struct kevent *);
	int	(*f_update)(struct kqueue *, struct knote *, int readd);
	int	(*f_event)(struct kqueue *, struct knote *, uint32_t hint,
		    struct kevent *out);
	void	(*f_clear)(struct kqueue *, struct knote *);
	int	(*f_readd)(struct kqueue *, struct knote *, int epfd);
};

/* knote status bits (kn_status, 16 bits) */
#define KN_QUEUED	0x01	/* on kq_head */
#define KN_DISABLED	0x02	/* EV_DISABLE or dispatched */
#define KN_DROPPED	0x04	/* unlinked; freed when it leaves kq_head
				   (counted in kq_ndrop, not kq_count) */
#define KN_ACTIVE	0x08	/* userspace-tracked condition is true */
#define KN_EMUL		0x10	/* level-triggered on an edge registration */
#define KN_FIRED	0x20	/* EV_CLEAR EVFILT_EMPTY: reported, waiting
				   for the buffer to fill again */
#define KN_TRIGGERED	0x40	/* EVFILT_USER: NOTE_TRIGGER seen */
#define KN_ATTACHED	0x80	/* f_attach succeeded: f_modify is a modify */

/*
 * A registration.  56 bytes, cached one a cache line (knote.c): with the
 * 8-byte kq_fdtab slot and the 8-byte kq_fdseq stamp a watched descriptor
 * costs 80 bytes.  Filters that need more state allocate a
 * larger object that starts with a struct knote (f_size); those whose
 * input data needs 64 bits (EVFILT_TIMER, EVFILT_USER) keep it there.
 */
struct knote {
	STAILQ_ENTRY(knote) kn_tqe;	/* kq_head link, when KN_QUEUED */
	struct knote	*kn_link;	/* next on the fd chain / hash bucket */
	void		*kn_udata;
	uintptr_t	 kn_ident;
	uint32_t	 kn_sfflags;	/* filter input fflags */
	int32_t		 kn_sdata;	/* filter input data, clamped to 32
					   bits (kn_clamp32) */
	uint16_t	 kn_flags;	/* stored EV_ flags (no ADD/DELETE/...) */
	uint16_t	 kn_status;	/* KN_* */
	uint16_t	 kn_reg;	/* fd knotes: epoll registration state
					   of the whole fd (same on every knote
					   of the chain), see fdreg.h */
	int8_t		 kn_filter;	/* EVFILT_* */
	uint64_t	 kn_scanid;	/* kq_scanid of the collection that
					   last copied it out: while that one
					   holds kq_lock, "delivered by this
					   call" (kn_delivered, kevent.c) */
	uint64_t	 kn_fileid;	/* fd knotes whose number no epoll
					   registration proves (not R_REG):
					   fd_fileid() of the file at attach,
					   0 if unknown (fdreg_attach) */
};

/*
 * Was kn copied out by the collection that holds kq_lock now?  (kq_scan
 * bumps kq_scanid as it begins and before it returns with events: a mark
 * never outlives the call that made it, and a 64-bit count bumped twice a
 * call does not wrap in 290 years at a billion calls a second.)
 */
#define kn_delivered(kq, kn)	((kn)->kn_scanid == (kq)->kq_scanid)

/* kev->data as kn_sdata stores it. */
static inline int32_t
kn_clamp32(int64_t v)
{
	return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN :
	    (int32_t)v;
}

STAILQ_HEAD(knlist, knote);

/*
 * An internal event source registered in the kqueue's epoll set (the
 * doorbell, inotify, the timer heap's timerfd, the signal eventfd, the
 * process-event socket).  The epoll key is KQ_SRCKEY | index.  Owned by
 * the kqueue; ks_fini (if set) frees ks_arg and the descriptor is closed
 * at destruction, after every knote was dropped.
 */
struct kqsrc {
	int	 ks_fd;
	void	(*ks_ready)(struct kqueue *, struct kqsrc *, uint32_t events);
	void	(*ks_fini)(struct kqueue *, struct kqsrc *);
	void	*ks_arg;
	uint32_t ks_events;	/* epoll events (0: EPOLLIN) */
};

#define KQ_SRCKEY	(UINT64_C(1) << 63)
#define KQ_NSRC		8
#define KQ_SRC_BELL	0
#define KQ_SRC_INOTIFY	1
#define KQ_SRC_TIMER	2
#define KQ_SRC_SIGNAL	3
#define KQ_SRC_PROC	4
#define KQ_SRC_MOUNT	5	/* /proc/self/mountinfo (EPOLLPRI) */
#define KQ_SRC_EMPTY	6	/* EVFILT_EMPTY's write-space wake-ups */

/*
 * A kernel descriptor that belongs to one non-descriptor knote (the pidfd
 * of an EVFILT_PROC knote) is registered with the key
 * KQ_SRCKEY | KQ_KNKEY | (uint8_t)filter << 32 | (uint32_t)ident; when it
 * fires, the knote found under (ident, filter) is put on the active list
 * and f_event decides.  See kq_knsrc_add().
 */
#define KQ_KNKEY	(UINT64_C(1) << 62)

/*
 * A descriptor's key is its number, plus KQ_NOCOUNT when it was registered
 * as a listening socket (K_LISTEN, K_ULISTEN): kq_scan then asks it for no
 * FIONREAD before taking the lock, which a listener refuses (EINVAL), and
 * EVFILT_READ reads its listen queue instead.  See fdreg_key().
 */
#define KQ_NOCOUNT	(UINT64_C(1) << 61)

#define KQ_NQUIET	8	/* quiet descriptors verified per round */

struct kn_empty;

/*
 * An olock's word (see kq_olock_lock below): 64 bits, so that the
 * tokens that name owners never wrap (olock.c).
 */
typedef _Atomic uint64_t kq_olock_t;
_Static_assert(sizeof(kq_olock_t) == 8, "an olock is one 64-bit word");

/*
 * The fields kevent() reads on every call come first: the first cache line
 * (up to kq_port) and the second (up to kq_empty) are what a wake-up
 * touches of it (the structure is 64-byte aligned, registry.c).
 */
struct kqueue {
	kq_olock_t	 kq_lock;	/* KQ_LOCK: an olock (olock.c) */
	_Atomic uint32_t kq_refs;	/* the registry's, plus one per kevent()
					   call that waits unlocked or found the
					   kqueue through a dup() */
	int		 kq_fd;		/* epoll descriptor == the kqueue fd */
	int		 kq_waitfd;	/* a duplicate of kq_fd, kq's own
					   (claimed): the waits made with
					   kq_lock dropped sleep on it, as
					   FreeBSD's kevent() holds its file --
					   a close() of kq_fd and a new file at
					   the number cannot take the sleeper,
					   whose reference keeps the kqueue, and
					   so this number, until it returns */
	int		 kq_dead;	/* fd closed or foreign: no more syscalls */
	int		 kq_unowned;	/* its number was found closed or reused
					   behind kq's back (set with kq_dead):
					   the numbers of its own descriptors are
					   not proven either (a raw close_range
					   takes them too), and are never
					   written, closed or otherwise used: they
					   leak if they were still open */
	int		 kq_epfirst;	/* start the next collection with the
					   epoll set (alternates: fairness) */
	struct knlist	 kq_head;	/* active list (userspace-tracked) */
	int		 kq_count;	/* knotes on kq_head, less the dropped */
	int		 kq_ndrop;	/* dropped knotes still on kq_head
					   (knote_drop): freed by the scan
					   that reaches them, or by a sweep
					   once they outnumber the rest */
	int		 kq_bell_rung;	/* the doorbell eventfd is readable (1;
					   2: and owes a ring, kq_bell_owe) */
	int		 kq_zombie;	/* an unremovable registration exists:
					   rebuild the epoll set (kevent.c) */
	uint64_t	 kq_scanid;	/* bumped as every kq_scan begins and
					   as it ends, under kq_lock: names
					   the collection that holds the lock
					   (kn_delivered; inotify drains once
					   per collection) */
	uint64_t	 kq_regseq;	/* bumped by every epoll_ctl: epoll
					   events fetched across a change may
					   be stale and are re-checked.  64
					   bits, as its stamps: they never
					   wrap (a 32-bit stamp 2^31 changes
					   old read as newer than any wait) */
	uint64_t	 kq_rebuiltseq;	/* kq_regseq after the last rebuild
					   (every earlier event is stale) */
	int		 kq_port;	/* an event port (port_create), not a
					   kqueue: kevent() refuses it */
	struct knote	**kq_fdtab;	/* knote chains indexed by descriptor */
	uint64_t	*kq_fdseq;	/* per descriptor, as kq_fdtab:
					   kq_regseq after its last epoll_ctl
					   (kq_translate's per-descriptor
					   staleness) */
	int		 kq_fdtabsize;
	int		 kq_nfdchains;	/* non-empty kq_fdtab slots */
	struct kn_empty	*kq_empty;	/* knotes that must be re-checked on a
					   timer (EVFILT_EMPTY, filt_fd.c);
					   NULL if none */
	uint32_t	 kq_empty_gen;	/* last tag of a KQ_SRC_EMPTY
					   registration (filt_fd.c; kq_lock) */
	int64_t		 kq_exitwait;	/* when the first EVFILT_PROC exit that
					   awaits its connector message may
					   stop waiting (kq_now_ns; 0: none
					   waits; filt_proc.c, kq_lock) */
	uint64_t	 kq_cnseen;	/* the time stamp of the latest
					   connector message read (kq_lock) */
	struct knote	**kq_hash;	/* non-descriptor knotes */
	size_t		 kq_hashmask;	/* bucket count - 1, 0 if none */
	size_t		 kq_nhashed;
	struct knote	*kq_freekn;	/* cache of free base-size knotes */
	void		*kq_slabs;	/* blocks the cache was carved from */
	struct kqsrc	 kq_src[KQ_NSRC];
	uint64_t	*kq_intfd;	/* bitmap by number of the kqueue's own
					   descriptors (kq_intfd_claim) */
	int		 kq_intfdwords;	/* 64-bit words in kq_intfd */
	struct epoll_event *kq_absorbev; /* kq_absorb's batch, KQ_ABSORBN
					   events, allocated at its first use
					   (kq_lock; freed by kq_free_all):
					   on the heap, because kq_absorb runs
					   under another kqueue's collection,
					   whose own batch is on the stack */
	struct mmsghdr	*kq_dgmsg;	/* filt_fd.c's datagram count: DG_BATCH
					   headers, made at first use (kq_lock;
					   freed by kq_free_all) */
	struct knote	*kq_alert;	/* a port in alert mode: while set,
					   every collection reports this knote
					   and nothing else (kq_collect); it
					   stays on kq_head, which keeps the
					   doorbell rung */
	struct kqueue	*kq_poolnext;	/* registry pool link */
	struct kqueue	*kq_allnext;	/* the list of every live kqueue */
	struct kqueue	**kq_allprev;	/* (registry.c, under reg_lock) */
	/* defer.c: closed from a signal handler inside one of kq's locks,
	   its retirement put off (kq_retire_later).  kq_retiring: nonzero
	   from before kq's own close of the number on (KQ_RET_SELF: its
	   other descriptors are still its own, not the program's), and
	   KQ_RET_QUEUED while it waits on the stack. */
	struct kqueue	*kq_retnext;
	atomic_int	 kq_retiring;
	/*
	 * An outer kqueue's EV_CLEAR knote on this one (kq_pending, under
	 * this kqueue's lock).  FreeBSD activates it when a knote is queued
	 * here.  When kq_pending rings the doorbell for events it moved to
	 * kq_head -- events the outer knote was woken for, and reports now
	 * -- the ring is a second edge in every outer epoll set, which
	 * FreeBSD does not have (one activation, one report).  kq_quiet_*
	 * remember that ring: the outer knote (an address compared, never
	 * followed) and its mark once delivered (the outer kq_scanid); this
	 * kqueue's kq_actgen and kq_scanid; the set of level-triggered
	 * knotes then ready (kq_qset, a hash set of KQ_QSET slots).  The
	 * same knote, not delivered since, is not reported again for that
	 * edge while nothing was queued or linked here (kq_actgen), no
	 * collection of this kqueue ran, and no level-triggered knote
	 * outside the set is ready.
	 *
	 * kq_lvl: the level-triggered knotes the last kq_absorb found ready
	 * (KQ_ABSORBN slots, made with kq_absorbev), kq_nlvl of them, or -1
	 * when it saw more than it could hold.
	 */
	uint64_t	 kq_actgen;
	int		 kq_watched;	/* a kqueue asked for its count once
					   (kq_pending): kq_bell_owe */
	struct knote	**kq_lvl;
	int		 kq_nlvl;
	const void	*kq_quiet_kn;
	uint64_t	 kq_quiet_mark;
	uint64_t	 kq_quiet_gen;
	uint64_t	 kq_quiet_scan;
	const void	**kq_qset;
};
#define KQ_RET_SELF	1
#define KQ_RET_QUEUED	2
#define KQ_RET_SWAP	4	/* kq_rebuild is putting a new set under the
				   number (kevent.c) */
#define KQ_RET_PEND	8	/* a handler's close of the number came
				   during the swap: the rebuild makes it */

/*
 * The per-thread state every kevent() and close() reads, in one cache line
 * behind one initial-exec TLS slot (each variable of its own would be a
 * GOT entry and a line more to miss on a thread that slept):
 *   locks	counts the locks (kq_lock, reg_lock) the thread holds or is
 *		taking.  close.c, called from a signal handler that
 *		interrupted the thread there, sees it non-zero and does not
 *		wait for a lock the thread itself may hold (kq_in_lock).
 *		Raised before the lock is tried, lowered after it is let go,
 *		with compiler barriers against the handler.
 *   async_owed	kevent.c: a cancellable wait found its caller asynchronously
 *		cancellable and left it deferred; kq_leave gives it back.
 *   sig_quiet, sig_runs  sigshim.c: deliveries kq's handler absorbed, and
 *		deliveries that ran an application handler (kq_sig_app_runs).
 *   closing	close.c: inside close() or one of its kin, which frees
 *		nothing then (kq_free, defer.c).
 *   token	the thread's olock token (kq_olock_me), 0 until its first
 *		lock; 64 bits, so no two threads of a process ever share
 *		one (olock.c).
 *   owned	counts the olocks the thread holds: raised after one is
 *		taken, lowered before it is let go (so it may be 0 for an
 *		instruction or two while one is held, never the reverse).
 *		A signal handler that sees it non-zero does not wait for
 *		another thread's lock (kq_enter_lock).
 * Only the thread itself and its signal handlers touch it.
 */
struct kq_tls {
	uint64_t	token;
	int		locks;
	int		async_owed;
	unsigned	sig_quiet;
	unsigned	sig_runs;
	int		closing;
	int		owned;
} __attribute__((aligned(16)));
extern _Thread_local struct kq_tls kq_tls __attribute__((tls_model("initial-exec")));

/*
 * The C library functions on the path of every blocking kevent(), and the
 * wait's one flag, in one cache line (kevent.c).  Called through their GOT
 * entries they would be three or four lines wherever the linker put them,
 * each a miss on a server woken from sleep (docs/HTTPD.md).  Set at load
 * by relocation, as the GOT is; have_pwait2 is cleared once if the kernel
 * lacks epoll_pwait2.
 */
struct kq_hot {
	void		(*testcancel)(void);
	int		(*setcanceltype)(int, int *);
	int		(*clock_gettime)(clockid_t, struct timespec *);
	/* The C library's waits: cancellation points (kq_wait_cancellable) */
	int		(*epoll_pwait2)(int, struct epoll_event *, int,
			    const struct timespec *, const sigset_t *);
	int		(*epoll_pwait)(int, struct epoll_event *, int, int,
			    const sigset_t *);
	_Atomic int	have_pwait2;
	/* defer.c: blocks freed inside a close path, not yet free()d, and
	   kqueues whose retirement a close put off. */
	struct kq_grave	*_Atomic grave;
	struct kqueue	*_Atomic retire;
};
extern struct kq_hot kq_hot;

/*
 * defer.c.  kq_free() frees a block of kq's, or puts it on the graveyard
 * while this thread is inside a close path (kq_tls.closing), which may
 * run in a signal handler that interrupted malloc().  kq_retire_later()
 * takes over a reference on a kqueue whose descriptor a handler closed
 * while this thread held one of kq's locks, to unmap and release it.
 * kq_reap() does both; it is called only where kq may allocate anyway.
 */
void		 kq_free(void *p);
int		 kq_retire_claim(struct kqueue *kq, int pend, int *was);
void		 kq_retire_unmark(struct kqueue *kq, int was);
void		 kq_retire_later(struct kqueue *kq);
void		 kq_reap_slow(void);

static inline void
kq_reap(void)
{
	if (__builtin_expect(atomic_load_explicit(&kq_hot.grave,
	    memory_order_relaxed) != NULL || atomic_load_explicit(
	    &kq_hot.retire, memory_order_relaxed) != NULL, 0))
		kq_reap_slow();
}

/* Around the body of close() and its kin: frees are put off (defer.c). */
static inline void
kq_closing_enter(void)
{
	kq_tls.closing++;
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void
kq_closing_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	kq_tls.closing--;
}

static inline void
kq_tls_enter(void)
{
	kq_tls.locks++;
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void
kq_tls_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	kq_tls.locks--;
}

/* Is the calling thread inside (or taking) one of libkq's locks? */
static inline int
kq_in_lock(void)
{
	return kq_tls.locks != 0;
}

/*
 * olocks (olock.c): one-word futex mutexes whose word names the owner
 * thread -- kq_lock, the datagram stripes, reg_lock, the port timers'
 * lock.  The word (64 bits) is the owner's token (kq_tls.token: a
 * per-thread number shifted left by one, never 0) with bit 0 set while a
 * thread may be waiting, and 0 when free; the futex is its low half,
 * which holds that bit.  The one compare-and-swap that takes the lock
 * writes the owner, and the one exchange that releases it clears it, so
 * kq_olock_mine() is exact at every instruction: a signal handler that
 * interrupted its thread holding the lock knows it (and fails with
 * EDEADLK or does without), and one that interrupted its thread waiting
 * for the lock waits too, as it would on FreeBSD.  Uncontended, taking
 * and releasing are one atomic instruction each; contention is handled
 * out of line (a short spin, then FUTEX_WAIT).  A thread keeps its token
 * in a fork() child.
 */
void		 kq_dgram_atfork_child(void);	/* filt_fd.c */
int		 kq_dgram_set_peek_off(int fd, const void *val,
		     socklen_t len);			/* filt_fd.c */
uint64_t	 kq_olock_token(void);
#ifdef KQ_FAULT
void		 kq_olock_token_next(uint64_t t);	/* test build only */
#endif
void		 kq_olock_wait(kq_olock_t *w, uint64_t me, uint64_t c);
int		 kq_olock_timedlock(kq_olock_t *w, int64_t ns);
void		 kq_olock_wake(kq_olock_t *w);

/* This thread's token, shifted (never 0). */
static inline uint64_t
kq_olock_me(void)
{
	uint64_t me = kq_tls.token;

	return __builtin_expect(me != 0, 1) ? me : kq_olock_token();
}

static inline void
kq_olock_lock(kq_olock_t *w)
{
	uint64_t me = kq_olock_me(), c = 0;

	if (!atomic_compare_exchange_strong_explicit(w, &c, me,
	    memory_order_acquire, memory_order_relaxed))
		kq_olock_wait(w, me, c);
	kq_tls.owned++;
	atomic_signal_fence(memory_order_seq_cst);
}

/* Take the lock only if it is free; never waits.  Returns 1 if taken. */
static inline int
kq_olock_trylock(kq_olock_t *w)
{
	uint64_t c = 0;

	if (!atomic_compare_exchange_strong_explicit(w, &c, kq_olock_me(),
	    memory_order_acquire, memory_order_relaxed))
		return 0;
	kq_tls.owned++;
	atomic_signal_fence(memory_order_seq_cst);
	return 1;
}

static inline void
kq_olock_unlock(kq_olock_t *w)
{
	atomic_signal_fence(memory_order_seq_cst);
	kq_tls.owned--;
	if (atomic_exchange_explicit(w, 0, memory_order_release) & 1)
		kq_olock_wake(w);
}

/* Does this thread hold the lock (not: is it waiting for it)?  A thread
   without a token yet holds none. */
static inline int
kq_olock_mine(kq_olock_t *w)
{
	uint64_t me = kq_tls.token;

	return me != 0 &&
	    (atomic_load_explicit(w, memory_order_relaxed) >> 1) == (me >> 1);
}

#define KQ_LOCK(kq)	do {						\
	kq_tls_enter();							\
	kq_olock_lock(&(kq)->kq_lock);					\
} while (0)
#define KQ_UNLOCK(kq)	do {						\
	kq_olock_unlock(&(kq)->kq_lock);				\
	kq_tls_leave();							\
} while (0)

/* A 64-bit mixer (splitmix64's finaliser): kq_qset's hash. */
static inline uint64_t
kq_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

void		 kq_bell_sync(struct kqueue *);
void		 kq_bell_owe(struct kqueue *);
int		 kq_bell_create(struct kqueue *);
void		 kq_bell_ring(struct kqueue *);

/*
 * The doorbell (knote.c): a private eventfd, created with the kqueue and
 * registered level-triggered in its epoll set.  It is readable exactly
 * while kq_head holds a knote not dropped (kq_count > 0: so pollers of
 * the kqueue descriptor and
 * threads blocked in epoll_wait see work only userspace knows about), and
 * for good once the kqueue is dead (every sleeper wakes, in turn, and
 * returns EBADF).  It also proves the epoll set is ours (kq_owned).
 */
static inline void
kq_bell_update(struct kqueue *kq)
{
	if (kq->kq_bell_rung != (kq->kq_count > 0))
		kq_bell_sync(kq);
}

/*
 * registry.c: descriptor number -> kqueue, and the kqueue pool.  The map
 * is two-level: REG_TOP chunk pointers, each chunk REG_CHUNK atomic slots,
 * chunks never freed (so kq_registry_peek() needs no lock).
 */
#define REG_CHUNK_SHIFT	12
#define REG_CHUNK	(1 << REG_CHUNK_SHIFT)
#define REG_TOP		4096		/* 16M descriptors */

extern _Atomic(struct kqueue *) *_Atomic kq_reg_top[REG_TOP];

/* The kqueue mapped at fd, without a reference (see registry.c). */
static inline struct kqueue *
kq_registry_peek(int fd)
{
	_Atomic(struct kqueue *) *chunk;

	if (fd < 0 || (fd >> REG_CHUNK_SHIFT) >= REG_TOP)
		return NULL;
	chunk = atomic_load_explicit(&kq_reg_top[fd >> REG_CHUNK_SHIFT],
	    memory_order_acquire);
	if (chunk == NULL)
		return NULL;
	return atomic_load_explicit(&chunk[fd & (REG_CHUNK - 1)],
	    memory_order_acquire);
}

/*
 * registry.c: how many kqueues have knotes on each descriptor number
 * (close.c drops them when the number is closed, as FreeBSD's
 * knote_fdclose).  Same two-level layout as the registry; a chunk is
 * allocated by the first knote in its range and never freed.
 */
extern _Atomic(_Atomic uint32_t *) kq_watch_top[REG_TOP];
int		 kq_fdwatch_add(int fd, int delta);

/*
 * A kqueue's own descriptor counts KQ_WATCH_INTERNAL in the table instead
 * of 1 (kq_intfd_claim, kq_intfd_release), so that any kqueue can tell a
 * number another kqueue made for itself: the program never opened it.
 * Chains count at most one a kqueue, far below it.
 */
#define KQ_WATCH_INTERNAL	(1 << 24)

/*
 * fd's count in the watch table (0 when it has none).  Lock-free.
 * Acquire: pairs with the release of the last knote's removal, so a
 * close() that finds the number unwatched comes after every use of it by
 * kq (kq_fdwatch_add).
 */
static inline uint32_t
kq_watch_count(uintptr_t fd)
{
	_Atomic uint32_t *chunk;

	if (fd > INT_MAX || (fd >> REG_CHUNK_SHIFT) >= REG_TOP)
		return 0;
	chunk = atomic_load_explicit(&kq_watch_top[fd >> REG_CHUNK_SHIFT],
	    memory_order_acquire);
	return chunk == NULL ? 0 : atomic_load_explicit(
	    &chunk[fd & (REG_CHUNK - 1)], memory_order_acquire);
}

/* Is fd one of some kqueue's own descriptors? */
static inline int
kq_fdinternal(uintptr_t fd)
{
	return kq_watch_count(fd) >= KQ_WATCH_INTERNAL;
}

/* Is descriptor fd watched by some kqueue? */
static inline int
kq_fdwatched(int fd)
{
	return fd >= 0 && kq_watch_count((uintptr_t)fd) != 0;
}

struct kqueue	*kq_registry_acquire(int fd);
int		 kq_registry_reserve_locked(int fd);
struct kqueue	*kq_registry_insert_locked(int fd, struct kqueue *kq);
void		 kq_registry_drop_old(struct kqueue *old);
void		 kq_reg_lock(void);
void		 kq_reg_unlock(void);
/* Around making an internal descriptor and claiming it (registry.c). */
void		 kq_mkfd_begin(void);
void		 kq_mkfd_end(void);
void		 kq_mkfd_exclude(void);
void		 kq_mkfd_allow(void);
/* A vfork() child, whose memory (and kqueues) is its parent's? */
int		 kq_vforked(void);
/* port.c's part of the fork handlers, called from registry.c's. */
void		 kq_port_atfork_child(void);
void		 kq_registry_forget(int fd, struct kqueue *kq);
int		 kq_ref_try(struct kqueue *kq);
void		 kq_release(struct kqueue *kq);
struct kqueue	*kq_pool_get(void);
void		 kq_pool_put(struct kqueue *kq);
struct kqueue	*kq_registry_find_alias(int fd);
size_t		 kq_registry_hold_next(struct kqueue *prev, struct kqueue **v,
		    size_t max);
int		 kq_registry_claimed_dying(int fd);
#define KQ_HOLDMAX	64	/* kqueues per kq_registry_hold_next batch */
/*
 * closefrom()'s look at kq's own descriptors (registry.c): a batch of the
 * smallest in [first, last], sorted.
 */
#define KQ_OWNMAX	256
struct kq_own {
	unsigned int	 first, last;
	int		 kqnums;	/* the kqueues' own numbers too */
	int		 n, more;
	int		 fd[KQ_OWNMAX];
};
void		 kq_own_add(struct kq_own *, int fd);
void		 kq_registry_own_fds_locked(struct kq_own *);
int		 kq_registry_internal(int fd, const struct kqueue *self);
void		 kq_all_add(struct kqueue *kq);
void		 kq_all_remove_locked(struct kqueue *kq);
int		 kq_registry_orphan(int fd);

/* fdprobe.c */
int		 fd_anon_name(int fd, char *buf, size_t len);

/* sockerr.c: socket errors consumed for EV_EOF's fflags, kept for the
   application's getsockopt(SO_ERROR). */
int		 kq_sockerr(int fd, int pending);
void		 kq_sockerr_keep(int fd, int e);
uint32_t	 kq_sock_ino(int fd);
/* peekoff.c: the program's own use of SO_PEEK_OFF */
int		 kq_peek_off_used(int fd);
int		 kq_set_peek_off(int fd, int off);
pid_t		 kq_pid(void);			/* registry.c */
/* xlock.c: locks shared with fork() children, bounded waits */
struct xl_slot;
struct xl_slot	*kq_xlock_slot(unsigned int key);
int		 kq_xlock_lock(struct xl_slot *x, int64_t ns);
void		 kq_xlock_unlock(struct xl_slot *x);
void		 kq_sockerr_forget(int fd);
int		 fd_is_epoll(int fd);
int		 epoll_holds(int epfd, int fd);
uint64_t	 fd_fileid(int fd);
int		 kq_holds_number(const struct kqueue *kq, int fd);
int		 epoll_probe(int epfd, int fd, int *foreign);
int		 fd_same_file(int a, int b);
int		 fd_file_shared(int fd, int except);
int		 fd_poll(int fd, short events);
size_t		 kq_read_proc(const char *path, char *buf, size_t size);
int		 fd_info_field(int fd, const char *key, int base,
		    unsigned long long *val);

/* kqueue.c */
void		 kq_destroy(struct kqueue *kq);
int		 kq_reg_mine(void);
int		 kq_create(int cloexec, int port);

/* knote.c */
struct knote	*knote_alloc(struct kqueue *, const struct filterops *);
void		 knote_free(struct kqueue *, struct knote *);
struct knote	*knote_lookup(struct kqueue *, uintptr_t ident, int filter,
		    int isfd);
int		 knote_link(struct kqueue *, struct knote *, int isfd);
void		 knote_unlink(struct kqueue *, struct knote *, int isfd);
void		 knote_enqueue(struct kqueue *, struct knote *);
int		 knote_drop(struct kqueue *, struct knote *);
void		 knote_dropped(struct kqueue *, struct knote *);
void		 knote_drop_fd(struct kqueue *, int fd);
void		 kq_free_all(struct kqueue *);
void		 kq_intfd_free(struct kqueue *);

/* The knote chain of descriptor fd, or NULL. */
static inline struct knote *
knote_fdchain(struct kqueue *kq, int fd)
{
	if (fd < 0 || fd >= kq->kq_fdtabsize)
		return NULL;
	return kq->kq_fdtab[fd];
}

/* kevent.c */
int		 kq_register(struct kqueue *, struct kevent *);
struct kqueue	*kq_enter(int kqfd, int *held, int *error);
void		 kq_leave(struct kqueue *kq, int held);
int		 kq_port_scan(struct kqueue *, struct kevent *out, int nevents,
		    const struct timespec *tsp, int *held, int cancel);
int		 kq_owned(struct kqueue *);
int		 kq_owned_number(const struct kqueue *);
int64_t		 kq_pending(int fd, const struct knote *okn, uint64_t omark);
/* filt_fd.c: queue every enabled EVFILT_EMPTY knote for a re-check. */
void		 kq_empty_repoll(struct kqueue *kq);
void		 kq_proc_exitwait(struct kqueue *kq);
void		 kq_timer_wake(struct kqueue *kq);
int64_t		 kq_absorb(struct kqueue *);

/*
 * Private filters of the event-port front end (port.c), numbered after
 * FreeBSD's.  Only a port (kq_port) holds them: kevent() refuses them
 * (EINVAL) and refuses ports.
 *   PORTFD	PORT_SOURCE_FD: one knote per associated descriptor, taking
 *		part in its epoll registration (fdreg.c); fflags = the poll
 *		events asked for, reported once (EV_DISPATCH: disabled after
 *		delivery, the association over) with the revents in data.
 *   PORTUSER	PORT_SOURCE_USER: one knote per port_send(), ident a
 *		sequence number, queued at once, EV_ONESHOT.
 *   PORTALERT	PORT_SOURCE_ALERT: the port's alert (kq_alert below).
 *   PORTFILE	PORT_SOURCE_FILE: ident the file_obj_t pointer; watched by
 *		path through the kqueue's inotify instance (inotify.c calls
 *		port_file_inotify), EV_ONESHOT.
 *   PORTTIMER	PORT_SOURCE_TIMER: ident the timer's index, a timerfd owned
 *		by the knote (kq_knsrc_add), EV_CLEAR.
 */
#define KQ_EVFILT_PORTFD	(-EVFILT_SYSCOUNT - 1)
#define KQ_EVFILT_PORTUSER	(-EVFILT_SYSCOUNT - 2)
#define KQ_EVFILT_PORTALERT	(-EVFILT_SYSCOUNT - 3)
#define KQ_EVFILT_PORTFILE	(-EVFILT_SYSCOUNT - 4)
#define KQ_EVFILT_PORTTIMER	(-EVFILT_SYSCOUNT - 5)
#define KQ_FILTCOUNT		(EVFILT_SYSCOUNT + 5)

/* filter.c: the filter table; NULL for a filter kq does not provide */
extern const struct filterops *const kq_sysfilt_ops[KQ_FILTCOUNT];
extern const struct filterops fd_read_filtops;	/* filt_fd.c */
extern const struct filterops fd_write_filtops;

/* The operations of filter, or NULL.  READ and WRITE, nearly every call's,
   without a load from the table (one cache line less to miss). */
static inline const struct filterops *
filter_lookup(int filter)
{
	if (filter == EVFILT_READ)
		return &fd_read_filtops;
	if (filter == EVFILT_WRITE)
		return &fd_write_filtops;
	if (filter >= 0 || filter < -KQ_FILTCOUNT)
		return NULL;
	return kq_sysfilt_ops[~filter];
}

/* fdreg.c: the epoll registration shared by the knotes of one fd */
void		 fdreg_forget(struct kqueue *, int fd);
void		 fdreg_kind(struct kqueue *, int fd, int kind);
int		 fdreg_readd_all(struct kqueue *, int epfd);
void		 fdreg_verify(struct kqueue *, int fd);

/* filt_fd.c (and fd_read_filtops, fd_write_filtops above) */
extern const struct filterops fd_empty_filtops;
int		 filt_read_plain(struct kqueue *, struct knote *, uint32_t mask,
		    int nread, struct kevent *out);


/* inotify.c: the kqueue's inotify instance (READ on files, VNODE) */
int		 kq_inotify_watch(struct kqueue *, struct knote *);
int		 kq_inotify_set(struct kqueue *, struct knote *, uint32_t mask);
void		 kq_inotify_sync(struct kqueue *);
void		 kq_inotify_unwatch(struct kqueue *, struct knote *);
int		 kq_inotify_set_path(struct kqueue *, struct knote *,
		    const char *path, uint32_t mask);
/* port.c: an inotify event mask, or NOTE_* hint, for a PORTFILE knote */
void		 port_file_inotify(struct kqueue *, struct knote *,
		    uint32_t mask, uint32_t hint);

/* filt_vnode.c: an inotify event mask, or NOTE_* hint, for a VNODE knote */
void		 filt_vnode_inotify(struct kqueue *, struct knote *,
		    uint32_t mask, uint32_t hint);

/* knote.c: internal event sources */
int		 kq_src_add(struct kqueue *, int slot, int fd,
		    void (*ready)(struct kqueue *, struct kqsrc *, uint32_t));
int		 kq_src_add_ev(struct kqueue *, int slot, int fd, uint32_t events,
		    void (*ready)(struct kqueue *, struct kqsrc *, uint32_t));
int		 kq_src_register(int epfd, int slot, int fd, uint32_t events);
int		 kq_knsrc_add(struct kqueue *, struct knote *, int fd,
		    uint32_t events);
int		 kq_knsrc_register(int epfd, const struct knote *, int fd,
		    uint32_t events);
void		 kq_knsrc_close(struct kqueue *, int fd);

/*
 * The kqueue's own descriptors -- internal sources (kq_src), knotes' pidfds
 * and timerfds (kq_knsrc_add) -- are marked in kq->kq_intfd while open.
 * The program never opened them (on FreeBSD those numbers are closed), so
 * a change naming one fails with EBADF (kq_change), and no registration of
 * the program's may share a number with one in the epoll set: a knote
 * chain still found under a number when kq is handed it belonged to a
 * descriptor closed behind the C library's back, and kq_intfd_claim drops
 * it.  Both under kq_lock.
 */
int		 kq_intfd_claim(struct kqueue *, int fd);
void		 kq_intfd_release(struct kqueue *, int fd);

/*
 * Also read without kq_lock, under reg_lock (kq_registry_internal,
 * kq_registry_claimed_dying), while the kqueue's own thread releases a
 * claim: atomic loads, the count before the bitmap as kq_intfd_claim
 * publishes them (TSan caught the plain read racing kq_intfd_release).
 */
static inline int
kq_intfd_has(const struct kqueue *kq, uintptr_t fd)
{
	uintptr_t words = (uintptr_t)__atomic_load_n(&kq->kq_intfdwords,
	    __ATOMIC_ACQUIRE);
	const uint64_t *bm = __atomic_load_n(&kq->kq_intfd, __ATOMIC_ACQUIRE);

	return fd / 64 < words && bm != NULL &&
	    ((__atomic_load_n(&bm[fd / 64], __ATOMIC_RELAXED) >> (fd % 64)) &
	    1) != 0;
}

/* The number the waits made without kq_lock sleep on (kq_waitfd). */
static inline int
kq_sleepfd(const struct kqueue *kq)
{
	return kq->kq_waitfd >= 0 ? kq->kq_waitfd : kq->kq_fd;
}

void		 kq_src_dispatch(struct kqueue *, uint64_t key, uint32_t events);

/* the other filters, one file each */
extern const struct filterops timer_filtops;	/* filt_timer.c */
extern const struct filterops user_filtops;	/* filt_user.c */
extern const struct filterops sig_filtops;	/* filt_signal.c */
extern const struct filterops proc_filtops;	/* filt_proc.c */
extern const struct filterops procdesc_filtops;	/* filt_procdesc.c */
extern const struct filterops vnode_filtops;	/* filt_vnode.c */
extern const struct filterops port_fd_filtops;	/* port.c */
extern const struct filterops port_user_filtops;
extern const struct filterops port_alert_filtops;
extern const struct filterops port_file_filtops;
extern const struct filterops port_timer_filtops;
void		 kq_port_timer_fds(struct kq_own *);	/* port.c */

/* kevent.c: monotonic clock, nanoseconds */
int64_t		 kq_now_ns(void);

#endif /* KQ_INT_H */
