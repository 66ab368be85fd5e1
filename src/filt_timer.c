/*
 * filt_timer.c -- EVFILT_TIMER: any number of timers per kqueue on one
 * kernel descriptor.
 *
 * Every armed timer of a kqueue sits in a binary min-heap ordered by its
 * next deadline (CLOCK_MONOTONIC nanoseconds); one timerfd per kqueue
 * (created on first use, slot KQ_SRC_TIMER) is armed at the earliest
 * deadline.  Adding or removing a timer is O(log n) and costs no
 * descriptor, so a kqueue holds as many timers as memory allows.  When the
 * timerfd fires, every due timer is counted (periodic timers also count the
 * periods they missed) and put on the active list.
 *
 * FreeBSD semantics (kern_event.c filt_timer*): units NOTE_SECONDS,
 * NOTE_MSECONDS (the default), NOTE_USECONDS, NOTE_NSECONDS; NOTE_ABSTIME
 * is a wall-clock deadline, one-shot and not auto-cleared; relative timers
 * are periodic unless EV_ONESHOT and auto-EV_CLEAR; data < 0 or unknown
 * fflags give EINVAL; a periodic 0 becomes 1 unit, a one-shot 0 fires at
 * once; re-EV_ADD discards undelivered expirations and restarts; a disabled
 * timer keeps running and its expirations are delivered on EV_ENABLE.
 * Output data is the number of expirations since the last retrieval,
 * output fflags 0.
 *
 * The timerfd is re-armed lazily: only when a new deadline is earlier than
 * the armed one, and when it fires.  Removing timers never costs a system
 * call; at worst the timerfd fires early once and is re-armed.
 *
 * Everything runs with kq_lock held.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/timerfd.h>

#include "kq_int.h"
#include "ksys.h"
#include "fault.h"

#define NSEC		INT64_C(1000000000)
#define TK_NOHEAP	SIZE_MAX
#define TK_MAXNS	(INT64_MAX / 4)		/* ~73 years: no overflow */
#define TK_UNITS	(NOTE_SECONDS | NOTE_MSECONDS | NOTE_USECONDS | \
			 NOTE_NSECONDS)

struct tknote {
	struct knote	 tk_kn;
	int64_t		 tk_deadline;	/* next expiry, monotonic ns */
	int64_t		 tk_period;	/* ns; 0: one-shot */
	int64_t		 tk_data;	/* the change's data (64 bits) */
	uint64_t	 tk_count;	/* expirations not yet delivered */
	size_t		 tk_hidx;	/* heap index, TK_NOHEAP if none */
};

struct theap {
	struct tknote	**th_h;
	size_t		  th_n, th_cap;
	int64_t		  th_armed;	/* timerfd deadline, INT64_MAX: none */
};

#define TK(kn)		((struct tknote *)(void *)(kn))

static int64_t
realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * NSEC + t.tv_nsec;
}

static struct theap *
heap_of(struct kqueue *kq)
{
	return kq->kq_src[KQ_SRC_TIMER].ks_arg;
}

/* ---- the heap ---- */

static void
heap_set(struct theap *h, size_t i, struct tknote *tk)
{
	h->th_h[i] = tk;
	tk->tk_hidx = i;
}

static void
heap_up(struct theap *h, size_t i)
{
	struct tknote *tk = h->th_h[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (h->th_h[p]->tk_deadline <= tk->tk_deadline)
			break;
		heap_set(h, i, h->th_h[p]);
		i = p;
	}
	heap_set(h, i, tk);
}

static void
heap_down(struct theap *h, size_t i)
{
	struct tknote *tk = h->th_h[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->th_n)
			break;
		if (c + 1 < h->th_n &&
		    h->th_h[c + 1]->tk_deadline < h->th_h[c]->tk_deadline)
			c++;
		if (tk->tk_deadline <= h->th_h[c]->tk_deadline)
			break;
		heap_set(h, i, h->th_h[c]);
		i = c;
	}
	heap_set(h, i, tk);
}

static int
heap_insert(struct theap *h, struct tknote *tk)
{
	if (h->th_n == h->th_cap) {
		size_t cap = h->th_cap ? h->th_cap * 2 : 64;
		struct tknote **nh = kq_realloc(h->th_h, cap * sizeof(*nh));

		if (nh == NULL)
			return ENOMEM;
		h->th_h = nh;
		h->th_cap = cap;
	}
	heap_set(h, h->th_n++, tk);
	heap_up(h, h->th_n - 1);
	return 0;
}

static void
heap_remove(struct theap *h, struct tknote *tk)
{
	size_t i = tk->tk_hidx;

	if (i == TK_NOHEAP)
		return;
	tk->tk_hidx = TK_NOHEAP;
	if (--h->th_n == i)
		return;
	heap_set(h, i, h->th_h[h->th_n]);
	if (i > 0 && h->th_h[(i - 1) / 2]->tk_deadline >
	    h->th_h[i]->tk_deadline)
		heap_up(h, i);
	else
		heap_down(h, i);
}

/* ---- the timerfd ---- */

/* Arm the timerfd for the earliest deadline if it is not armed earlier. */
static void
timer_arm(struct kqueue *kq, struct theap *h)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	int64_t when;

	if (kq->kq_dead)
		return;
	when = h->th_n > 0 ? h->th_h[0]->tk_deadline : INT64_MAX;
	/* Also the next look at exits awaiting their connector message
	   (filt_proc.c: kq_proc_exitwait). */
	if (kq->kq_exitwait != 0 && kq->kq_exitwait < when)
		when = kq->kq_exitwait;
	if (when >= h->th_armed)
		return;
	if (when != INT64_MAX) {
		if (when < 1)
			when = 1;	/* 0 would disarm */
		its.it_value.tv_sec = when / NSEC;
		its.it_value.tv_nsec = when % NSEC;
	}
	if (timerfd_settime(kq->kq_src[KQ_SRC_TIMER].ks_fd, TFD_TIMER_ABSTIME,
	    &its, NULL) == 0)
		h->th_armed = when;
}

static void
tk_fire(struct kqueue *kq, struct tknote *tk, uint64_t n)
{
	tk->tk_count += n;
	if (!(tk->tk_kn.kn_status & KN_DISABLED))
		knote_enqueue(kq, &tk->tk_kn);
}

/* Count every due timer and queue it; re-insert the periodic ones. */
static void
timer_expire(struct kqueue *kq, struct theap *h)
{
	int64_t now = kq_now_ns();

	while (h->th_n > 0 && h->th_h[0]->tk_deadline <= now) {
		struct tknote *tk = h->th_h[0];

		if (tk->tk_period == 0) {
			heap_remove(h, tk);
			tk_fire(kq, tk, 1);
			continue;
		}
		/* Overruns count as expirations, as FreeBSD's callout. */
		uint64_t missed = (uint64_t)((now - tk->tk_deadline) /
		    tk->tk_period);

		tk->tk_deadline += (int64_t)(missed + 1) * tk->tk_period;
		heap_down(h, 0);
		tk_fire(kq, tk, missed + 1);
	}
}

static void
timer_ready(struct kqueue *kq, struct kqsrc *src, uint32_t events)
{
	struct theap *h = src->ks_arg;
	uint64_t ticks;
	ssize_t r;

	(void)events;
	r = kq_nc_read(src->ks_fd, &ticks, sizeof(ticks)); /* clear readiness */
	(void)r;
	h->th_armed = INT64_MAX;
	timer_expire(kq, h);
	if (kq->kq_exitwait != 0)
		kq_proc_exitwait(kq);
	timer_arm(kq, h);
}

static void
timer_fini(struct kqueue *kq, struct kqsrc *src)
{
	struct theap *h = src->ks_arg;

	(void)kq;
	if (h != NULL) {
		kq_free(h->th_h);
		kq_free(h);
	}
}

/* The kqueue's heap and timerfd, created on first use. */
static struct theap *
timer_source_made(struct kqueue *kq, int *error)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_TIMER];
	struct theap *h;
	int fd;

	if (src->ks_ready != NULL)
		return src->ks_arg;
	h = kq_calloc(1, sizeof(*h));
	if (h == NULL) {
		*error = ENOMEM;
		return NULL;
	}
	h->th_armed = INT64_MAX;
	fd = KQ_FDCALL(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
	if (fd < 0) {
		*error = errno;
		kq_free(h);
		return NULL;
	}
	*error = kq_src_add(kq, KQ_SRC_TIMER, fd, timer_ready);
	if (*error != 0) {
		kq_close_raw(fd);
		kq_free(h);
		return NULL;
	}
	src->ks_arg = h;
	src->ks_fini = timer_fini;
	return h;
}

/* timer_source_made() under kq_mkfd_begin(): see registry.c. */
static struct theap *
timer_source(struct kqueue *kq, int *error)
{
	struct theap *r;

	if (kq->kq_src[KQ_SRC_TIMER].ks_ready != NULL)
		return timer_source_made(kq, error);	/* nothing to make */
	kq_mkfd_begin();
	r = timer_source_made(kq, error);
	kq_mkfd_end();
	return r;
}

/*
 * Arm the timerfd (made now if need be) for kq_exitwait too, so that a
 * sleeper of any kind wakes for it (filt_proc.c).  Where no timerfd can
 * be made, kevent()'s own sleeps still end by then (kevent.c, kq_scan).
 */
void
kq_timer_wake(struct kqueue *kq)
{
	struct theap *h;
	int error;

	if (!kq->kq_dead && (h = timer_source(kq, &error)) != NULL)
		timer_arm(kq, h);
}

/* ---- the filter ---- */

/*
 * data (>= 0: timer_validate) in the knote's unit, as nanoseconds,
 * saturated at max: TK_MAXNS for a relative time, INT64_MAX for a
 * NOTE_ABSTIME deadline (clamped only once made relative: timer_start).
 */
static int64_t
timer_ns(int64_t data, uint32_t fflags, int64_t max)
{
	int64_t mul;

	switch (fflags & TK_UNITS) {
	case NOTE_SECONDS:
		mul = NSEC;
		break;
	case NOTE_USECONDS:
		mul = 1000;
		break;
	case NOTE_NSECONDS:
		mul = 1;
		break;
	default:
		mul = 1000000;
		break;
	}
	if (data > max / mul)
		return max;
	return data * mul;
}

static int
timer_validate(const struct kevent *kev)
{
	uint32_t unit = kev->fflags & TK_UNITS;

	if (kev->data < 0)
		return EINVAL;
	if (kev->fflags & ~(uint32_t)(TK_UNITS | NOTE_ABSTIME))
		return EINVAL;
	if (unit != 0 && (unit & (unit - 1)) != 0)
		return EINVAL;		/* more than one unit */
	return 0;
}

/* (Re)start kn from tk_data/kn_sfflags. */
static int
timer_start(struct kqueue *kq, struct tknote *tk)
{
	struct knote *kn = &tk->tk_kn;
	struct theap *h;
	int64_t now, v;
	int error = 0;

	h = timer_source(kq, &error);
	if (h == NULL)
		return error;
	heap_remove(h, tk);
	tk->tk_count = 0;
	if (kn->kn_sfflags & NOTE_ABSTIME) {
		/*
		 * The wall clock first, then the monotonic one: time passing
		 * between the two reads makes the deadline later, never
		 * earlier than the wall-clock time asked for (attack helper
		 * 28's F5: up to 0.16 ms early the other way round).
		 * The deadline saturates at INT64_MAX ns (2262), not at
		 * TK_MAXNS (2043), and only the time left is clamped: a later
		 * deadline is a TK_MAXNS wait, never an early expiry.  Both
		 * terms are >= 0 (Linux refuses a wall clock before 1970), so
		 * the difference cannot overflow.
		 */
		int64_t left = timer_ns(tk->tk_data, kn->kn_sfflags,
		    INT64_MAX) - realtime_ns();

		now = kq_now_ns();
		tk->tk_period = 0;
		if (left > TK_MAXNS)
			left = TK_MAXNS;
		tk->tk_deadline = left > 0 ? now + left : now;
	} else {
		v = timer_ns(tk->tk_data, kn->kn_sfflags, TK_MAXNS);
		now = kq_now_ns();
		if (kn->kn_flags & EV_ONESHOT)
			tk->tk_period = 0;
		else {
			if (v == 0)
				v = timer_ns(1, kn->kn_sfflags, TK_MAXNS);
			tk->tk_period = v;
		}
		tk->tk_deadline = now + v;
	}
	if (tk->tk_deadline <= now) {
		tk_fire(kq, tk, 1);	/* already due: fires at once */
		return 0;
	}
	error = heap_insert(h, tk);
	if (error == 0)
		timer_arm(kq, h);
	return error;
}

static int
filt_timermodify(struct kqueue *kq, struct knote *kn, const struct kevent *kev)
{
	int error;

	if (!(kev->flags & EV_ADD))
		return 0;	/* ENABLE/DISABLE alone: keep the timer */
	error = timer_validate(kev);
	if (error != 0)
		return error;
	TK(kn)->tk_data = kev->data;
	kn->kn_sfflags = kev->fflags;
	if (!(kn->kn_status & KN_ATTACHED))
		return 0;	/* new: filt_timerattach starts it */
	/*
	 * Re-add: forget undelivered expirations (a queued knote is then
	 * dropped by the scan, f_event finding nothing) and restart.
	 */
	kn->kn_flags = (uint16_t)((kn->kn_flags & ~EV_CLEAR) |
	    ((kev->fflags & NOTE_ABSTIME) ? (kev->flags & EV_CLEAR) : EV_CLEAR));
	return timer_start(kq, TK(kn));
}

static int
filt_timerattach(struct kqueue *kq, struct knote *kn)
{
	TK(kn)->tk_hidx = TK_NOHEAP;
	/* Relative timers are always EV_CLEAR (returned in flags). */
	if (!(kn->kn_sfflags & NOTE_ABSTIME))
		kn->kn_flags |= EV_CLEAR;
	return timer_start(kq, TK(kn));
}

static int
filt_timerdetach(struct kqueue *kq, struct knote *kn)
{
	struct theap *h = heap_of(kq);

	if (h != NULL)
		heap_remove(h, TK(kn));
	return 0;
}

static int
filt_timerupdate(struct kqueue *kq, struct knote *kn, int readd)
{
	(void)readd;
	if (TK(kn)->tk_count > 0 && !(kn->kn_status & KN_DISABLED))
		knote_enqueue(kq, kn);
	return 0;
}

static int
filt_timerevent(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	(void)kq;
	(void)hint;
	if (TK(kn)->tk_count == 0)
		return 0;
	out->data = (int64_t)TK(kn)->tk_count;
	out->fflags = 0;
	return 1;
}

static void
filt_timerclear(struct kqueue *kq, struct knote *kn)
{
	(void)kq;
	TK(kn)->tk_count = 0;
}

const struct filterops timer_filtops = {
	.f_isfd = 0,
	.f_size = sizeof(struct tknote),
	.f_attach = filt_timerattach,
	.f_detach = filt_timerdetach,
	.f_modify = filt_timermodify,
	.f_update = filt_timerupdate,
	.f_event = filt_timerevent,
	.f_clear = filt_timerclear,
};
