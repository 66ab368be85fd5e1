/*
 * bench-paper.c -- seed 000 (Lemon, "Kqueue: A generic and scalable event
 * notification facility", section 7), Figures 10, 11 and 12.
 *
 * N descriptors of one kind are registered for reading:
 *
 *   - sockets: both ends of N/2 AF_UNIX stream socketpairs, so N can reach
 *     RLIMIT_NOFILE - 200;
 *   - pipes (the paper's "files"): the read ends of N pipes; the write ends
 *     stay open, so N can reach (RLIMIT_NOFILE - 200) / 2.  Where they fit,
 *     the write ends are moved above the read ends so that select() can
 *     watch N = 1000 read ends below FD_SETSIZE.
 *
 * N = 10, 100, 1000, 10000 and the largest N the descriptor limit allows
 * (sizes above it are skipped, and said so in the notes).  Each N is
 * measured twice: idle (nothing readable) and active (every registered
 * descriptor readable: one byte written into each pipe; for socketpairs
 * one byte each way, so both registered ends are readable).
 *
 * Two costs are timed for every backend, interleaved in each repetition
 * (kq, epoll, poll, select):
 *
 *   - the initial call (Figure 10 idle, Figure 11 active): for kq,
 *     kevent(kq, changes, N, events, N, &zero) on a fresh kqueue, carrying
 *     N EV_ADD|EVFILT_READ changes and polling at once; for raw epoll, N
 *     epoll_ctl(EPOLL_CTL_ADD) and one epoll_wait(.., 0) on a fresh epoll
 *     set.  kqueue()/epoll_create1() and close() are outside the timed
 *     region: a batch of fresh sets is created, the batch of initial calls
 *     is timed, then the sets are closed; batches repeat until the timed
 *     part lasts call_secs / 4.  poll() and select() keep no state, so
 *     every call is an initial call: their initial-call value is their
 *     per-call value from the same repetition.
 *   - a later call (Figure 10's "kq descriptor" line when idle, Figure 11
 *     when active): one zero-timeout wait over the registered set, as in
 *     waitset.h (the idle and allready scenarios), for call_secs / 4.
 *
 * Contract checked: an initial or later call returns 0 events when idle
 * and exactly N when active (calls that do not are counted in `bad`);
 * before timing, one kq initial call per N and state is checked event by
 * event (EVFILT_READ, no EV_ERROR, data >= 1 when active, each descriptor
 * exactly once).
 *
 * Figure 12 (accumulated cost of checking the descriptors over k polls)
 * is computed from the medians: poll costs k * P, kq costs F + (k - 1) * C
 * (F = initial call, C = later call of the same state).  The break-even is
 * the smallest k from which kq stays cheaper, "never" when C >= P.
 */
#include "waitset.h"

#include <math.h>

#define PA_BATCH_FDS	2048	/* registrations per timed batch, about */
#define PA_BATCH_MAX	256	/* fresh sets per batch, at most */

enum { PA_IDLE, PA_ACTIVE, PA_NSTATE };

static const char *const pa_state[PA_NSTATE] = { "idle", "active" };

/* One (kind, N): the descriptors and the results of both states. */
struct pa_case {
	int		 sock;
	int		 n;
	const int	*fds;
	int		 maxfd;
	struct kevent	*ch;	/* N EV_ADD changes, udata = index */
	struct kevent	*kev;	/* room for N events */
	struct epoll_event *eev;
	int		*sets;	/* batch of fresh kq / epoll descriptors */
	int		 batch;
	/* [state][backend][rep], microseconds */
	double		 fc[PA_NSTATE][BK_COUNT][MAXREPS];
	double		 fw[PA_NSTATE][BK_COUNT][MAXREPS];
	double		 cc[PA_NSTATE][BK_COUNT][MAXREPS];
	double		 cw[PA_NSTATE][BK_COUNT][MAXREPS];
	int		 nrep[PA_NSTATE][BK_COUNT];
	long		 bad[PA_NSTATE][BK_COUNT];
	long		 calls[PA_NSTATE][BK_COUNT];
	int		 have[PA_NSTATE][BK_COUNT];
	double		 F[PA_NSTATE][BK_COUNT];	/* median CPU us */
	double		 C[PA_NSTATE][BK_COUNT];
	int		 err;
};

static const char *
pa_kind(int sock)
{
	return sock ? "sockets" : "pipes";
}

/*
 * Check one kq initial call event by event (untimed).  Returns the number
 * of problems: a wrong count, a bad event, a missing descriptor.
 */
static long
pa_check_kq(struct pa_case *c, int active)
{
	static const struct timespec zero = { 0, 0 };
	unsigned char *seen = calloc((size_t)c->n, 1);
	long bad = 0;
	int kq, m;

	if (!seen || (kq = kqueue()) < 0) {
		free(seen);
		return 1;
	}
	m = kevent(kq, c->ch, c->n, c->kev, c->n, &zero);
	if (m != (active ? c->n : 0))
		bad++;
	for (int j = 0; j < m; j++) {
		const struct kevent *e = &c->kev[j];
		intptr_t i = (intptr_t)e->udata;

		if (e->filter != EVFILT_READ || (e->flags & EV_ERROR) ||
		    e->data < 1 || i < 0 || i >= c->n ||
		    e->ident != (uintptr_t)c->fds[i] || seen[i])
			bad++;
		else
			seen[i] = 1;
	}
	for (int i = 0; active && m >= 0 && i < c->n; i++)
		if (!seen[i])
			bad++;
	close(kq);
	free(seen);
	return bad;
}

/*
 * Time initial calls of backend bk (kq or epoll) for about `secs` of timed
 * wall time; *cpu_us and *wall_us get the time per call.  Returns 0, or -1
 * with c->err set.
 */
static int
pa_first(struct pa_case *c, int bk, int expect, double secs, double *cpu_us,
    double *wall_us, long *bad, long *calls)
{
	static const struct timespec zero = { 0, 0 };
	uint64_t limit = (uint64_t)(secs * 1e9), t_cpu = 0, t_wall = 0;
	uint64_t began = clock_ns(CLOCK_MONOTONIC);
	long done = 0;

	do {
		struct bench_sample s;
		int b, fail = 0;

		for (b = 0; b < c->batch; b++) {
			c->sets[b] = bk == BK_KQ ? kqueue() :
			    epoll_create1(EPOLL_CLOEXEC);
			if (c->sets[b] < 0)
				break;
		}
		if (b < c->batch) {
			c->err = errno;
			while (b-- > 0)
				close(c->sets[b]);
			return -1;
		}
		sample_start(&s);
		for (b = 0; b < c->batch && !fail; b++) {
			int m;

			if (bk == BK_KQ) {
				m = kevent(c->sets[b], c->ch, c->n, c->kev,
				    c->n, &zero);
			} else {
				for (int i = 0; i < c->n; i++) {
					struct epoll_event ee;

					ee.events = EPOLLIN;
					ee.data.u64 = (uint64_t)i;
					if (epoll_ctl(c->sets[b], EPOLL_CTL_ADD,
					    c->fds[i], &ee) < 0) {
						fail = 1;
						break;
					}
				}
				m = fail ? -1 : epoll_wait(c->sets[b], c->eev,
				    c->n, 0);
			}
			if (m < 0) {
				c->err = errno;
				fail = 1;
			} else if (m != expect)
				(*bad)++;
		}
		sample_stop(&s);
		for (b = 0; b < c->batch; b++)
			close(c->sets[b]);
		if (fail)
			return -1;
		t_cpu += s.cpu_ns;
		t_wall += s.wall_ns;
		done += c->batch;
	} while (t_wall < limit &&
	    clock_ns(CLOCK_MONOTONIC) - began < 8 * limit);
	*calls += done;
	*cpu_us = (double)t_cpu / (double)done / 1000.0;
	*wall_us = (double)t_wall / (double)done / 1000.0;
	return 0;
}

/* Measure both states of one case; fills c's result arrays. */
static int
pa_measure(const struct bench_opts *o, struct pa_case *c, struct fdpairs *p,
    struct bench_table *tab[PA_NSTATE])
{
	double secs = o->call_secs / 4;
	int failed = 0;

	for (int st = 0; st < PA_NSTATE; st++) {
		int expect = st == PA_ACTIVE ? c->n : 0;
		struct waitset ws[BK_COUNT];
		int opened[BK_COUNT] = { 0 };
		long chk;

		if (st == PA_ACTIVE)
			for (int i = 0; i < p->n; i++)
				if (write(p->w[i], "x", 1) != 1 || (c->sock &&
				    write(p->r[i], "x", 1) != 1)) {
					progress("paper: %s N=%d: write: %s\n",
					    pa_kind(c->sock), c->n,
					    strerror(errno));
					return -1;
				}
		for (int bk = 0; bk < BK_COUNT; bk++) {
			c->have[st][bk] = 0;
			if (bk == BK_SELECT && !waitset_select_ok(c->fds, c->n))
				continue;
			if (waitset_open(&ws[bk], bk, c->fds, c->n, expect) < 0) {
				progress("paper: %s N=%d %s setup: %s\n",
				    pa_kind(c->sock), c->n, bk_name(bk),
				    strerror(errno));
				bt_note(tab[st], "%s N=%d %s setup failed: "
				    "%s. ", pa_kind(c->sock), c->n,
				    bk_name(bk), strerror(errno));
				failed = 1;
				continue;
			}
			c->have[st][bk] = opened[bk] = 1;
		}
		if ((chk = pa_check_kq(c, st == PA_ACTIVE)) != 0) {
			c->bad[st][BK_KQ] += chk;
			bt_note(tab[st], "%s N=%d: the checked kq initial call "
			    "had %ld problems (count, EV_ERROR, filter, data, "
			    "ident/udata, duplicate or missing). ",
			    pa_kind(c->sock), c->n, chk);
		}
		for (int rep = 0; rep < o->reps; rep++) {
			progress("[paper] %s N=%d %s rep %d/%d\n",
			    pa_kind(c->sock), c->n, pa_state[st], rep + 1,
			    o->reps);
			for (int bk = 0; bk < BK_COUNT; bk++) {
				struct bench_sample s;
				int k = c->nrep[st][bk];

				if (!c->have[st][bk])
					continue;
				if ((bk == BK_KQ || bk == BK_EPOLL) &&
				    pa_first(c, bk, expect, secs,
				    &c->fc[st][bk][k], &c->fw[st][bk][k],
				    &c->bad[st][bk], &c->calls[st][bk]) < 0) {
					progress("paper: %s N=%d %s initial "
					    "call: %s\n", pa_kind(c->sock),
					    c->n, bk_name(bk),
					    strerror(c->err));
					c->have[st][bk] = 0;
					failed = 1;
					continue;
				}
				if (bench_timed(secs, waitset_loop, &ws[bk],
				    &s) < 0) {
					progress("paper: %s: %s\n",
					    bk_name(bk), strerror(ws[bk].err));
					c->have[st][bk] = 0;
					failed = 1;
					continue;
				}
				c->cc[st][bk][k] = cpu_ns_per(&s) / 1000.0;
				c->cw[st][bk][k] = wall_ns_per(&s) / 1000.0;
				if (bk == BK_POLL || bk == BK_SELECT) {
					c->fc[st][bk][k] = c->cc[st][bk][k];
					c->fw[st][bk][k] = c->cw[st][bk][k];
				}
				c->nrep[st][bk]++;
			}
		}
		for (int bk = 0; bk < BK_COUNT; bk++) {
			if (!opened[bk])
				continue;
			c->bad[st][bk] += ws[bk].bad;
			c->calls[st][bk] += ws[bk].calls;
			waitset_close(&ws[bk]);
		}
	}
	return failed ? -1 : 0;
}

/* One row per backend of state st into t; keeps the medians in c. */
static void
pa_rows(struct bench_table *t, struct pa_case *c, int st)
{
	for (int bk = 0; bk < BK_COUNT; bk++) {
		struct bk_stats f, fw, k, kw;
		const double *ref;
		int n = c->nrep[st][bk], r;

		if (!c->have[st][bk] || n == 0)
			continue;
		ref = c->have[st][BK_EPOLL] && c->nrep[st][BK_EPOLL] == n ?
		    c->fc[st][BK_EPOLL] : NULL;
		bk_summarize(c->fc[st][bk], ref, n, &f);
		ref = ref ? c->fw[st][BK_EPOLL] : NULL;
		bk_summarize(c->fw[st][bk], ref, n, &fw);
		ref = ref ? c->cc[st][BK_EPOLL] : NULL;
		bk_summarize(c->cc[st][bk], ref, n, &k);
		ref = ref ? c->cw[st][BK_EPOLL] : NULL;
		bk_summarize(c->cw[st][bk], ref, n, &kw);
		c->F[st][bk] = f.med;
		c->C[st][bk] = k.med;
		if ((r = bt_row(t)) < 0)
			continue;
		bt_set(t, r, 0, "%s", pa_kind(c->sock));
		bt_set(t, r, 1, "%d", c->n);
		bt_set(t, r, 2, "%s", bk_name(bk));
		bt_num(t, r, 3, f.med);
		bt_num(t, r, 4, fw.med);
		bt_set(t, r, 5, "%.2f", f.ratio);
		bt_set(t, r, 6, "%.1f", f.spread);
		bt_num(t, r, 7, k.med);
		bt_num(t, r, 8, kw.med);
		bt_set(t, r, 9, "%.2f", k.ratio);
		bt_set(t, r, 10, "%.1f", k.spread);
		bt_set(t, r, 11, "%ld", c->bad[st][bk]);
		if (c->bad[st][bk])
			bt_note(t, "%s N=%d %s: %ld of %ld calls did not "
			    "return %d events. ", pa_kind(c->sock), c->n,
			    bk_name(bk), c->bad[st][bk], c->calls[st][bk],
			    st == PA_ACTIVE ? c->n : 0);
	}
}

/*
 * Break-even of an initial call F plus later calls C against a stateless
 * call P: the smallest k with F + (k - 1) C < k P, which then holds for
 * every larger k; "never" when C >= P.
 */
static void
pa_breakeven(struct bench_table *t, int r, int col, const struct pa_case *c,
    int st, int bk, int vs)
{
	double F = c->F[st][bk], C = c->C[st][bk], P = c->C[st][vs], k;

	if (!c->have[st][bk] || !c->have[st][vs] || P <= 0.0) {
		bt_set(t, r, col, "-");
		return;
	}
	if (C >= P) {
		bt_set(t, r, col, "never");
		return;
	}
	k = floor((F - C) / (P - C)) + 1.0;
	bt_set(t, r, col, "%.0f", k < 1.0 ? 1.0 : k);
}

/* The N = 100 idle row next to the paper's own numbers, in the notes. */
static void
pa_summary(struct bench_table *be, int r, const struct pa_case *c)
{
	bt_note(be, "Here, %s N=100 idle: kq's initial call costs %s x a "
	    "poll() and pays off from poll number %s on (paper: about 2 x, "
	    "and from fewer than 4 polls on); raw epoll's: %s x, from %s on. ",
	    pa_kind(c->sock), be->cell[r][3], be->cell[r][5], be->cell[r][4],
	    be->cell[r][7]);
}

/* The sizes measured for one kind: the fixed ones that fit, then max. */
static int
pa_sizes(const struct bench_opts *o, int sock, int *out, char *skipped,
    size_t skiplen)
{
	static const int fixed[] = { 10, 100, 1000, 10000 };
	long max = sock ? (o->nofile - 200) & ~1L : (o->nofile - 200) / 2;
	int n = 0;

	skipped[0] = '\0';
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (fixed[i] <= max)
			out[n++] = fixed[i];
		else
			snprintf(skipped + strlen(skipped),
			    skiplen - strlen(skipped), "%s%d", skipped[0] ?
			    ", " : "", fixed[i]);
		if (o->tiny)
			return n;
	}
	if (max > 0 && (n == 0 || max > out[n - 1]))
		out[n++] = (int)max;
	return n;
}

/* Release what pa_run allocated for one size. */
static void
pa_free(struct pa_case *c, int *fds, struct fdpairs *p)
{
	free(fds);
	free(c->ch);
	free(c->kev);
	free(c->eev);
	free(c->sets);
	fdpairs_close(p);
}

static int
pa_run(const struct bench_opts *o, struct bench_result *res)
{
	static struct pa_case c;
	struct bench_table *tab[PA_NSTATE], *be;
	int failed = 0;

	tab[PA_IDLE] = bt_new(res, "paper", "paper: Lemon Fig. 10, initial "
	    "call with N EV_ADDs vs one poll(), nothing ready; later call "
	    "(\"kq descriptor\")");
	tab[PA_ACTIVE] = bt_new(res, "paper-active", "paper-active: Lemon "
	    "Fig. 11, all N descriptors readable; initial and later call");
	be = bt_new(res, "paper-breakeven", "paper-breakeven: Lemon Fig. 12, "
	    "polls of a descriptor set from which kq (or epoll) is cheaper");
	for (int st = 0; st < PA_NSTATE; st++)
		bt_cols(tab[st], "kind|N|backend|first us CPU|first us wall|"
		    "first x epoll|first spread %|call us CPU|call us wall|"
		    "call x epoll|call spread %|bad");
	bt_cols(be, "kind|N|state|kq first/poll|epoll first/poll|"
	    "kq vs poll|kq vs select|epoll vs poll|epoll vs select");
	bt_note(be, "Accumulated CPU cost of checking the N descriptors k "
	    "times (Fig. 12): poll (or select) pays k * P, kq pays F + (k - "
	    "1) * C, with F = kq's `first`, C = kq's `call` and P = poll's "
	    "`call` (CPU medians from the `paper` table for idle, the "
	    "best case, and `paper-active` for active, the worst case). Each "
	    "cell is the break-even: the smallest number of polls k from "
	    "which kq (or raw epoll, with its own F and C) is cheaper than "
	    "poll (or select) for good; 1 = cheaper from the first call; "
	    "\"never\" = its later call is not cheaper than poll's; \"-\" = "
	    "not measured (select needs descriptors < FD_SETSIZE). `kq "
	    "first/poll` = F / P (the paper found about 2). Paper (Fig. 12, "
	    "100 descriptors): kqueue is cheaper than poll unless a "
	    "descriptor is polled fewer than 4 times. ");

	for (int sock = 1; sock >= 0; sock--) {
		int sizes[8], nsizes;
		char skipped[64];

		nsizes = pa_sizes(o, sock, sizes, skipped, sizeof(skipped));
		if (skipped[0]) {
			progress("[paper] %s N=%s skipped: RLIMIT_NOFILE %ld\n",
			    pa_kind(sock), skipped, o->nofile);
			bt_note(tab[PA_IDLE], "%s N=%s skipped: they do not "
			    "fit under RLIMIT_NOFILE %ld. ", pa_kind(sock),
			    skipped, o->nofile);
		}
		for (int si = 0; si < nsizes; si++) {
			int n = sizes[si], pairs = sock ? n / 2 : n, *fds;
			long freefd;
			struct fdpairs p;

			memset(&c, 0, sizeof(c));
			c.sock = sock;
			c.n = n;
			if (fdpairs_open(&p, pairs, sock, !sock &&
			    2L * n + 200 < o->nofile ? n + 100 : 0) < 0) {
				progress("paper: %s N=%d: %s\n", pa_kind(sock),
				    n, strerror(errno));
				bt_note(tab[PA_IDLE], "%s N=%d: opening the "
				    "descriptors failed: %s. ", pa_kind(sock),
				    n, strerror(errno));
				failed = 1;
				continue;
			}
			fds = malloc(sizeof(int) * (size_t)n);
			c.ch = calloc((size_t)n, sizeof(*c.ch));
			c.kev = calloc((size_t)n, sizeof(*c.kev));
			c.eev = calloc((size_t)n, sizeof(*c.eev));
			/* Fresh sets per batch: ~PA_BATCH_FDS registrations,
			 * within the descriptors left free. */
			c.batch = PA_BATCH_FDS / n;
			freefd = o->nofile - (p.maxfd + 1) - 100;
			if (c.batch > PA_BATCH_MAX)
				c.batch = PA_BATCH_MAX;
			if (c.batch > freefd)
				c.batch = (int)freefd;
			if (c.batch < 1)
				c.batch = 1;
			c.sets = calloc((size_t)c.batch, sizeof(int));
			if (!fds || !c.ch || !c.kev || !c.eev || !c.sets) {
				pa_free(&c, fds, &p);
				return -1;
			}
			for (int i = 0; i < n; i++) {
				fds[i] = sock ? (i % 2 ? p.w[i / 2] :
				    p.r[i / 2]) : p.r[i];
				EV_SET(&c.ch[i], fds[i], EVFILT_READ, EV_ADD,
				    0, 0, (void *)(intptr_t)i);
			}
			c.fds = fds;
			if (pa_measure(o, &c, &p, tab) < 0)
				failed = 1;
			for (int st = 0; st < PA_NSTATE; st++) {
				int r;

				pa_rows(tab[st], &c, st);
				if ((r = bt_row(be)) < 0)
					continue;
				bt_set(be, r, 0, "%s", pa_kind(sock));
				bt_set(be, r, 1, "%d", n);
				bt_set(be, r, 2, "%s", pa_state[st]);
				for (int bk = BK_KQ; bk <= BK_EPOLL; bk++) {
					if (c.have[st][bk] &&
					    c.have[st][BK_POLL] &&
					    c.C[st][BK_POLL] > 0)
						bt_set(be, r, 3 + bk, "%.2f",
						    c.F[st][bk] /
						    c.C[st][BK_POLL]);
					else
						bt_set(be, r, 3 + bk, "-");
				}
				pa_breakeven(be, r, 5, &c, st, BK_KQ, BK_POLL);
				pa_breakeven(be, r, 6, &c, st, BK_KQ,
				    BK_SELECT);
				pa_breakeven(be, r, 7, &c, st, BK_EPOLL,
				    BK_POLL);
				pa_breakeven(be, r, 8, &c, st, BK_EPOLL,
				    BK_SELECT);
				if (n == 100 && st == PA_IDLE)
					pa_summary(be, r, &c);
			}
			pa_free(&c, fds, &p);
		}
	}

	bt_note(tab[PA_IDLE], "%sCost in µs per call, lower is better; `x "
	    "epoll` = backend / raw epoll in the same repetition (median of "
	    "the ratios). `first` = the initial call on a fresh set: kq = one "
	    "kevent(kq, N EV_ADD changes, N, events, N, {0, 0}); epoll = N "
	    "epoll_ctl(ADD) + one epoll_wait(0); poll/select keep no state, "
	    "so their `first` is their ordinary call (same measurement as "
	    "`call`). kqueue()/epoll_create1() and close() are not timed. "
	    "`call` = a later zero-timeout wait over the N registered idle "
	    "descriptors (for kq, the paper's \"kq descriptor\" line). "
	    "sockets = both ends of N/2 AF_UNIX socketpairs; pipes = N read "
	    "ends (the paper's \"files\"). select() only where every "
	    "descriptor < FD_SETSIZE. Paper (FreeBSD 4.3, kernel kqueue): "
	    "adding a knote took about twice as long as a poll() of the same "
	    "descriptor (Fig. 10), and the \"kq descriptor\" line was flat in "
	    "N. Compare `kq first/poll` in paper-breakeven with that 2.\n",
	    tab[PA_IDLE]->notes[0] ? "\n\n" : "");
	bt_note(tab[PA_ACTIVE], "%sAs the `paper` table, but every "
	    "registered descriptor is readable (one byte in each pipe; one "
	    "byte each way in each socketpair), so every call must return "
	    "all N events (`bad` counts calls that did not). `first` = the "
	    "initial EV_ADD call, which already returns the N events; `call` "
	    "= a later wait (the paper's worst case for kq). Paper (Fig. 11): "
	    "kq's worst-case call stayed below poll()'s at every N; its best "
	    "case is the idle `call` of the `paper` table.\n",
	    tab[PA_ACTIVE]->notes[0] ? "\n\n" : "");
	bt_note(be, "\n");
	return failed ? -1 : 0;
}

const struct bench_scenario bench_paper = {
	.name = "paper",
	.title = "kqueue paper Figs. 10-12: initial EV_ADD call vs poll, "
	    "active, break-even",
	.run = pa_run,
};
