/*
 * bench-timers.c -- many one-shot timers in one kqueue.
 *
 * N EVFILT_TIMER one-shot timers (EV_ADD | EV_ONESHOT, NOTE_USECONDS) are
 * added to one kqueue, 1024 changes per kevent() call, with deadlines
 * spread evenly over ~1 s but added in a scrambled order.  Three phases
 * are timed apart:
 *
 *   init      creating the queue and adding the N timers;
 *   dispatch  collecting all N expirations (kevent() blocks between them);
 *   cleanup   closing the queue.
 *
 * Reference ("epoll heap+timerfd"): what a userspace timer library on
 * Linux cannot beat -- a hand-written binary min-heap of deadlines and one
 * timerfd in an epoll set, re-armed (absolute, CLOCK_MONOTONIC) only when
 * the earliest deadline changes, i.e. after each batch of 1024 adds and
 * after each expiry pass.  Also measured: "epoll timerfd/timer", one timerfd
 * per timer, as many as the descriptor limit allows; where it stops is
 * reported.
 *
 * Every expiry is checked: a timer must never be reported before its
 * deadline (measured from a clock read before its batch was added), and
 * the latest collection after its deadline is reported.
 */
#include "bench.h"

#include <sys/epoll.h>
#include <sys/event.h>
#include <sys/timerfd.h>

#define TM_BATCH	1024
#define TM_NEV		4096
#define TM_TMO_S	5		/* no expiry for this long: lost */
#define TM_PRIME	1000003u	/* scrambles the order of the adds */

enum { TM_KQ, TM_HEAP, TM_TFD, TM_NBK };

static const char *const tm_names[TM_NBK] = {
	"kq", "epoll heap+timerfd", "epoll timerfd/timer",
};

struct tm_phase {
	uint64_t cpu, wall;
};

struct tm_run {
	int	 n;
	uint64_t spread_us;
	uint64_t *dl;		/* deadline of timer i, CLOCK_MONOTONIC ns */
	struct tm_phase ph[3];	/* init, dispatch, cleanup */
	long	 got;
	long	 waits;		/* wait calls that returned expirations */
	long	 early;		/* reported before the deadline */
	long	 bad;		/* wrong filter, EV_ERROR, unknown id */
	uint64_t late_max;	/* ns */
	uint64_t t_disp;	/* start of dispatch, CLOCK_MONOTONIC ns */
	int	 err;
	char	 what[64];
};

struct tm_heap {
	uint64_t *when;
	uint32_t *id;
	int	  n;
};

static void
tm_fail(struct tm_run *r, const char *what)
{
	if (!r->err) {
		r->err = errno ? errno : EIO;
		snprintf(r->what, sizeof(r->what), "%s", what);
	}
}

/* Offset of timer i in microseconds: 1 .. spread, scrambled over i. */
static inline uint64_t
tm_off_us(const struct tm_run *r, int i)
{
	uint64_t slot = ((uint64_t)i * TM_PRIME) % (uint64_t)r->n;

	return 1 + slot * r->spread_us / (uint64_t)r->n;
}

static void
ph_start(struct tm_phase *p)
{
	p->cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	p->wall = clock_ns(CLOCK_MONOTONIC);
}

static void
ph_stop(struct tm_phase *p)
{
	p->wall = clock_ns(CLOCK_MONOTONIC) - p->wall;
	p->cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p->cpu;
}

static inline void
tm_seen(struct tm_run *r, uint64_t now, long i)
{
	if (i < 0 || i >= r->n) {
		r->bad++;
		return;
	}
	/* Timers that expired during init cannot be collected earlier than
	 * the start of dispatch: lateness counts from then. */
	uint64_t due = r->dl[i] > r->t_disp ? r->dl[i] : r->t_disp;

	if (now < r->dl[i])
		r->early++;
	else if (now > due && now - due > r->late_max)
		r->late_max = now - due;
	r->got++;
}

/* ---- kq ---------------------------------------------------------------- */

static void
tm_kq(struct tm_run *r)
{
	static struct kevent ch[TM_BATCH], ev[TM_NEV];
	struct timespec tmo = { TM_TMO_S, 0 };
	int kq = -1, k = 0;

	ph_start(&r->ph[0]);
	if ((kq = kqueue()) < 0) {
		tm_fail(r, "kqueue");
		return;
	}
	for (int i = 0; i < r->n; i++) {
		uint64_t off = tm_off_us(r, i);

		if (k == 0) {
			uint64_t now = clock_ns(CLOCK_MONOTONIC);

			for (int j = i; j < r->n && j < i + TM_BATCH; j++)
				r->dl[j] = now + tm_off_us(r, j) * 1000;
		}
		EV_SET(&ch[k], (uintptr_t)i, EVFILT_TIMER, EV_ADD | EV_ONESHOT,
		    NOTE_USECONDS, (int64_t)off, (void *)(intptr_t)i);
		if (++k == TM_BATCH || i == r->n - 1) {
			if (kevent(kq, ch, k, NULL, 0, NULL) < 0) {
				tm_fail(r, "kevent(add)");
				close(kq);
				return;
			}
			k = 0;
		}
	}
	ph_stop(&r->ph[0]);
	ph_start(&r->ph[1]);
	r->t_disp = r->ph[1].wall;
	while (r->got < r->n) {
		int m = kevent(kq, NULL, 0, ev, TM_NEV, &tmo);
		uint64_t now;

		if (m < 0) {
			if (errno == EINTR)
				continue;
			tm_fail(r, "kevent(wait)");
			break;
		}
		if (m == 0) {
			errno = ETIMEDOUT;
			tm_fail(r, "kevent: timers lost");
			break;
		}
		r->waits++;
		now = clock_ns(CLOCK_MONOTONIC);
		for (int j = 0; j < m; j++) {
			if (ev[j].filter != EVFILT_TIMER ||
			    (ev[j].flags & EV_ERROR) || ev[j].data < 1) {
				r->bad++;
				continue;
			}
			tm_seen(r, now, (long)ev[j].ident);
		}
	}
	ph_stop(&r->ph[1]);
	ph_start(&r->ph[2]);
	close(kq);
	ph_stop(&r->ph[2]);
}

/* ---- epoll + min-heap + one timerfd ----------------------------------- */

static void
heap_push(struct tm_heap *h, uint64_t when, uint32_t id)
{
	int i = h->n++;

	while (i > 0) {
		int p = (i - 1) / 2;

		if (h->when[p] <= when)
			break;
		h->when[i] = h->when[p];
		h->id[i] = h->id[p];
		i = p;
	}
	h->when[i] = when;
	h->id[i] = id;
}

static void
heap_pop(struct tm_heap *h)
{
	uint64_t when;
	uint32_t id;
	int i = 0, n;

	if (--h->n == 0)
		return;
	n = h->n;
	when = h->when[n];
	id = h->id[n];
	for (;;) {
		int c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && h->when[c + 1] < h->when[c])
			c++;
		if (when <= h->when[c])
			break;
		h->when[i] = h->when[c];
		h->id[i] = h->id[c];
		i = c;
	}
	h->when[i] = when;
	h->id[i] = id;
}

static int
tfd_arm(int tfd, uint64_t when)
{
	struct itimerspec its = { { 0, 0 }, { (time_t)(when / 1000000000u),
	    (long)(when % 1000000000u) } };

	return timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void
tm_heap(struct tm_run *r)
{
	struct epoll_event ev, ee = { .events = EPOLLIN };
	struct tm_heap h = { NULL, NULL, 0 };
	uint64_t armed = 0;
	int ep = -1, tfd = -1;

	ph_start(&r->ph[0]);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK |
	    TFD_CLOEXEC)) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ee) < 0 ||
	    !(h.when = malloc(sizeof(*h.when) * (size_t)r->n)) ||
	    !(h.id = malloc(sizeof(*h.id) * (size_t)r->n))) {
		tm_fail(r, "epoll heap setup");
		goto out;
	}
	for (int i = 0; i < r->n; i += TM_BATCH) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);

		for (int j = i; j < r->n && j < i + TM_BATCH; j++) {
			r->dl[j] = now + tm_off_us(r, j) * 1000;
			heap_push(&h, r->dl[j], (uint32_t)j);
		}
		if (h.when[0] != armed) {
			if (tfd_arm(tfd, h.when[0]) < 0) {
				tm_fail(r, "timerfd_settime");
				goto out;
			}
			armed = h.when[0];
		}
	}
	ph_stop(&r->ph[0]);
	ph_start(&r->ph[1]);
	r->t_disp = r->ph[1].wall;
	while (r->got < r->n) {
		int m = epoll_wait(ep, &ev, 1, TM_TMO_S * 1000);
		uint64_t now, exp;

		if (m < 0) {
			if (errno == EINTR)
				continue;
			tm_fail(r, "epoll_wait");
			break;
		}
		if (m == 0) {
			errno = ETIMEDOUT;
			tm_fail(r, "epoll_wait: timers lost");
			break;
		}
		if (read(tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN) {
			tm_fail(r, "read(timerfd)");
			break;
		}
		r->waits++;
		now = clock_ns(CLOCK_MONOTONIC);
		while (h.n > 0 && h.when[0] <= now) {
			tm_seen(r, now, (long)h.id[0]);
			heap_pop(&h);
		}
		if (h.n > 0 && h.when[0] != armed) {
			if (tfd_arm(tfd, h.when[0]) < 0) {
				tm_fail(r, "timerfd_settime");
				break;
			}
			armed = h.when[0];
		}
	}
	ph_stop(&r->ph[1]);
out:
	ph_start(&r->ph[2]);
	free(h.when);
	free(h.id);
	if (tfd >= 0)
		close(tfd);
	if (ep >= 0)
		close(ep);
	ph_stop(&r->ph[2]);
}

/* ---- epoll + one timerfd per timer -------------------------------------- */

static void
tm_tfd(struct tm_run *r)
{
	static struct epoll_event ev[TM_NEV];
	int ep = -1, *fds = calloc((size_t)r->n, sizeof(int)), made = 0;

	if (!fds) {
		tm_fail(r, "calloc");
		return;
	}
	ph_start(&r->ph[0]);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		tm_fail(r, "epoll_create1");
		goto out;
	}
	for (int i = 0; i < r->n; i++, made++) {
		uint64_t off = tm_off_us(r, i) * 1000;
		struct itimerspec its = { { 0, 0 }, { (time_t)(off /
		    1000000000u), (long)(off % 1000000000u) } };
		struct epoll_event ee = { .events = EPOLLIN };

		if (i % TM_BATCH == 0) {
			uint64_t now = clock_ns(CLOCK_MONOTONIC);

			for (int j = i; j < r->n && j < i + TM_BATCH; j++)
				r->dl[j] = now + tm_off_us(r, j) * 1000;
		}
		ee.data.u64 = (uint64_t)i;
		if ((fds[i] = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK |
		    TFD_CLOEXEC)) < 0) {
			tm_fail(r, "timerfd_create");
			goto out;
		}
		if (timerfd_settime(fds[i], 0, &its, NULL) < 0 ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ee) < 0) {
			made++;
			tm_fail(r, "timerfd_settime/epoll_ctl");
			goto out;
		}
	}
	ph_stop(&r->ph[0]);
	ph_start(&r->ph[1]);
	r->t_disp = r->ph[1].wall;
	while (r->got < r->n) {
		int m = epoll_wait(ep, ev, TM_NEV, TM_TMO_S * 1000);
		uint64_t now, exp;

		if (m < 0) {
			if (errno == EINTR)
				continue;
			tm_fail(r, "epoll_wait");
			break;
		}
		if (m == 0) {
			errno = ETIMEDOUT;
			tm_fail(r, "epoll_wait: timers lost");
			break;
		}
		r->waits++;
		now = clock_ns(CLOCK_MONOTONIC);
		for (int j = 0; j < m; j++) {
			long i = (long)ev[j].data.u64;

			if (i < 0 || i >= r->n ||
			    read(fds[i], &exp, sizeof(exp)) != sizeof(exp)) {
				r->bad++;
				continue;
			}
			tm_seen(r, now, i);
		}
	}
	ph_stop(&r->ph[1]);
out:
	ph_start(&r->ph[2]);
	for (int i = 0; i < made; i++)
		close(fds[i]);
	if (ep >= 0)
		close(ep);
	ph_stop(&r->ph[2]);
	free(fds);
}

/*
 * How many timerfds fit: create them until timerfd_create fails or `want`
 * exist; *err is the errno of the failure (0 if none).
 */
static int
tm_probe_tfd(int want, int *err)
{
	int *fds = calloc((size_t)want, sizeof(int)), n = 0;

	*err = 0;
	if (!fds)
		return 0;
	for (; n < want; n++)
		if ((fds[n] = timerfd_create(CLOCK_MONOTONIC,
		    TFD_CLOEXEC)) < 0) {
			*err = errno;
			break;
		}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	return n;
}

static void
tm_one(int bk, struct tm_run *r)
{
	switch (bk) {
	case TM_KQ:	tm_kq(r);	break;
	case TM_HEAP:	tm_heap(r);	break;
	case TM_TFD:	tm_tfd(r);	break;
	}
}

static int
tm_run(const struct bench_opts *o, struct bench_result *res)
{
	/* [bk][phase: init, dispatch, cleanup, total][rep] */
	static double cpu[TM_NBK][4][MAXREPS], dwall[TM_NBK][MAXREPS];
	static double wk[TM_NBK][MAXREPS];
	struct bench_table *t = bt_new(res, "timers",
	    "timers: N one-shot EVFILT_TIMER timers in one kqueue");
	int big = o->tiny ? 1000 : o->quick ? 100000 : 1000000;
	uint64_t spread_us = o->tiny ? 50000 : 1000000;
	int sizes[2], nsizes = 1, perr, ptfd, failed = 0;
	char errs[512] = "";

	ptfd = tm_probe_tfd(big, &perr);
	sizes[0] = big;
	if (ptfd < big) {
		/* Room for the epoll descriptor and a few spares. */
		sizes[1] = ptfd > 16 ? ptfd - 16 : 0;
		nsizes = sizes[1] > 0 ? 2 : 1;
	}
	bt_cols(t, "timers|backend|init ns/timer CPU|dispatch ns/timer CPU|"
	    "cleanup ns/timer CPU|total ns/timer CPU|dispatch ms wall|"
	    "latest ms|wake-ups/1000|x epoll init|x epoll dispatch|x epoll cleanup|"
	    "x epoll total");
	for (int si = 0; si < nsizes; si++) {
		int n = sizes[si], nrep[TM_NBK] = { 0 }, ran[TM_NBK] = { 0 };
		uint64_t late[TM_NBK] = { 0 };
		long early[TM_NBK] = { 0 }, bad[TM_NBK] = { 0 };
		uint64_t *dl = malloc(sizeof(uint64_t) * (size_t)n);

		if (!dl)
			return -1;
		for (int rep = 0; rep < o->reps; rep++) {
			progress("[timers] N=%d rep %d/%d\n", n, rep + 1,
			    o->reps);
			for (int bk = 0; bk < TM_NBK; bk++) {
				struct tm_run r;

				if (bk == TM_TFD && n > ptfd)
					continue;
				memset(&r, 0, sizeof(r));
				r.n = n;
				r.spread_us = spread_us;
				r.dl = dl;
				errno = 0;
				tm_one(bk, &r);
				ran[bk] = 1;
				early[bk] += r.early;
				bad[bk] += r.bad;
				if (r.late_max > late[bk])
					late[bk] = r.late_max;
				if (r.err) {
					progress("timers: %s N=%d: %s: %s\n",
					    tm_names[bk], n, r.what,
					    strerror(r.err));
					if (strlen(errs) < 300)
						snprintf(errs + strlen(errs),
						    sizeof(errs) - strlen(errs),
						    "%s N=%d: %s: %s. ",
						    tm_names[bk], n, r.what,
						    strerror(r.err));
					failed = 1;
					continue;
				}
				for (int ph = 0; ph < 3; ph++)
					cpu[bk][ph][nrep[bk]] =
					    (double)r.ph[ph].cpu / n;
				cpu[bk][3][nrep[bk]] = (double)(r.ph[0].cpu +
				    r.ph[1].cpu + r.ph[2].cpu) / n;
				dwall[bk][nrep[bk]] = (double)r.ph[1].wall / 1e6;
				wk[bk][nrep[bk]] = 1000.0 * (double)r.waits / n;
				nrep[bk]++;
			}
		}
		for (int bk = 0; bk < TM_NBK; bk++) {
			int r;

			if (!ran[bk])
				continue;
			r = bt_row(t);
			bt_set(t, r, 0, "%d", n);
			bt_set(t, r, 1, "%s", tm_names[bk]);
			if (!nrep[bk]) {
				bt_set(t, r, 2, "failed");
				continue;
			}
			for (int ph = 0; ph < 4; ph++) {
				struct bk_stats st;

				bk_summarize(cpu[bk][ph], nrep[TM_HEAP] ==
				    nrep[bk] ? cpu[TM_HEAP][ph] : NULL,
				    nrep[bk], &st);
				bt_num(t, r, 2 + ph, st.med);
				bt_set(t, r, 9 + ph, "%.2f", st.ratio);
			}
			{
				struct bk_stats st;

				bk_summarize(dwall[bk], NULL, nrep[bk], &st);
				bt_num(t, r, 6, st.med);
				bk_summarize(wk[bk], NULL, nrep[bk], &st);
				bt_num(t, r, 8, st.med);
			}
			bt_num(t, r, 7, (double)late[bk] / 1e6);
			if (early[bk] || bad[bk])
				bt_note(t, "N=%d %s: %ld expirations reported "
				    "before their deadline, %ld bad events. ",
				    n, tm_names[bk], early[bk], bad[bk]);
		}
		free(dl);
	}
	if (ptfd < big)
		bt_note(t, "%s`epoll timerfd/timer` stops at %d timers: "
		    "timerfd_create failed with %s (RLIMIT_NOFILE %ld); the "
		    "second row set (N=%d) compares all three there.",
		    t->notes[0] ? "\n\n" : "", ptfd, strerror(perr),
		    o->nofile, nsizes > 1 ? sizes[1] : 0);
	bt_note(t, "%sTimers are one-shot with deadlines 1 us .. %.2f s after "
	    "they are added (scrambled order), %d adds per call. Cost: lower "
	    "is better, CPU ns per timer; `x epoll` = backend / `epoll "
	    "heap+timerfd` (a hand-written binary heap + one timerfd in epoll, "
	    "the lower bound for userspace timers) in the same repetition. "
	    "`dispatch ms wall` is about the spread minus the time init took "
	    "(the earliest timers expire during init). `latest ms` = the "
	    "worst delay between a deadline (or the start of dispatch, if "
	    "later) and its collection, over all repetitions; no expiration "
	    "may come before its deadline. When dispatch CPU is close to "
	    "dispatch wall the loop was busy the whole time (expirations "
	    "arrive faster than it collects them) and `latest ms` says "
	    "whether it kept up. "
	    "`wake-ups/1000` = wait calls that returned expirations, per 1000 "
	    "timers (fewer wake-ups = expirations collected in batches).\n",
	    t->notes[0] ? "\n\n" : "", (double)spread_us / 1e6, TM_BATCH);
	if (errs[0])
		bt_note(t, "\nErrors: %s\n", errs);
	return failed ? -1 : 0;
}

const struct bench_scenario bench_timers = {
	.name = "timers",
	.title = "1M one-shot EVFILT_TIMER timers: init, dispatch, cleanup",
	.run = tm_run,
};
