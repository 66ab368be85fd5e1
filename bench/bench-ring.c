/*
 * bench-ring.c -- the xpoll "looptest" ring (seed 004).
 *
 * n pipes; every read end is registered for reading, every write end for
 * writing but disabled.  One byte (the token) is written into pipe 0.  Each
 * wait returns exactly one event:
 *
 *   read end i ready  -> read the byte, enable the write end of pipe i+1;
 *   write end i ready -> disable it, write one byte into pipe i.
 *
 * so the token walks around the ring and every other wait is a read.  One
 * iteration is one wait call.  kq queues its EV_ENABLE/EV_DISABLE and hands
 * them to the *next* kevent() call (the natural kqueue idiom: one system
 * call per iteration for change + wait); raw epoll calls epoll_ctl(MOD) at
 * once; poll() and select() flip a bit in their (user-space) interest set.
 *
 * kq's `data` is checked on every event: EVFILT_READ must say 1 byte,
 * EVFILT_WRITE must give the free space, which is > 0 and at most the pipe
 * capacity (the pipe is empty at that point, so exactly the capacity on a
 * BSD-faithful implementation).
 *
 * epoll+data is raw epoll that also learns, for every event, exactly the
 * `data` kq reports: ioctl(FIONREAD) on a read end (bytes readable), and
 * capacity - ioctl(FIONREAD) on a write end (free space; each pipe's
 * capacity is read once with F_GETPIPE_SZ at set-up, as kq reads it once
 * per knote).  epoll only reports readiness, and one FIONREAD per event is
 * the cheapest way Linux offers to learn a pipe's byte count (there is no
 * batched query; io_uring's SIOCINQ command covers only some sockets, not
 * pipes nor AF_UNIX), so this is the floor for any epoll loop wanting kq's
 * data.  Its values get the same check as kq's.
 *
 * Also exports the hidden `--ring-fixed BACKEND N ITERS` entry point that
 * the syscalls scenario runs under strace.
 */
#include "bench.h"

#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/event.h>
#include <sys/ioctl.h>

#define RING_WBIT	(UINT64_C(1) << 32)	/* epoll: write end tag */
#define RING_TMO_MS	1000			/* a lost token is an error */
#define RING_NEV	8

struct ring {
	struct fdpairs p;
	int	 n;
	long	 limit;		/* fixed number of iterations, or -1 */
	uint64_t limit_ns;	/* otherwise run this long */
	int	 pos;		/* pipe the token is in, or is to be written to */
	int	 in_pipe;	/* 1: byte is in pipe pos; 0: waiting to write */
	int	*caps;		/* capacity of each pipe (F_GETPIPE_SZ) */
	int	 cap, capmin;	/* largest and smallest of caps[] */
};

struct ring_stats {
	struct bench_sample s;
	long	 events;	/* events returned by the waits */
	long	 unexpected;	/* events that do not match the token */
	long	 data_bad;	/* kq, epoll+data: data not exact */
	long	 rdata_other;	/* read data != 1 (subset of data_bad) */
	int64_t	 wmin, wmax;	/* range of write data seen */
	int	 failed;	/* the run stopped on an error */
	char	 err[160];
};

static void
ring_fail(struct ring_stats *st, const char *what)
{
	if (!st->failed)
		snprintf(st->err, sizeof(st->err), "%s: %s", what,
		    strerror(errno));
	st->failed = 1;
}

static int
ring_done(const struct ring *rg, long it, uint64_t t0)
{
	if (rg->limit >= 0)
		return it >= rg->limit;
	if (it & 15)
		return 0;
	return clock_ns(CLOCK_MONOTONIC) - t0 >= rg->limit_ns;
}

static int
ring_token_in(struct ring *rg)
{
	rg->pos = 0;
	rg->in_pipe = 1;
	return write(rg->p.w[0], "t", 1) == 1 ? 0 : -1;
}

/* Take the token out of the ring so the next run starts clean. */
static void
ring_drain(struct ring *rg)
{
	char c;

	if (rg->in_pipe && read(rg->p.r[rg->pos], &c, 1) != 1)
		progress("ring: token lost in pipe %d\n", rg->pos);
	rg->in_pipe = 0;
}

/* ---- kq ----------------------------------------------------------------- */

static int
ring_kq_register(int kq, const struct ring *rg)
{
	struct kevent ch[128];
	int k = 0;

	for (int i = 0; i < rg->n; i++) {
		EV_SET(&ch[k], rg->p.r[i], EVFILT_READ, EV_ADD, 0, 0,
		    (void *)(intptr_t)i);
		k++;
		EV_SET(&ch[k], rg->p.w[i], EVFILT_WRITE, EV_ADD | EV_DISABLE,
		    0, 0, (void *)(intptr_t)i);
		k++;
		if (k == 128 || i == rg->n - 1) {
			if (kevent(kq, ch, k, NULL, 0, NULL) < 0)
				return -1;
			k = 0;
		}
	}
	return 0;
}

static void
ring_kq(struct ring *rg, struct ring_stats *st)
{
	struct timespec tmo = { RING_TMO_MS / 1000, 0 };
	struct kevent chg[RING_NEV], ev[RING_NEV];
	int kq, nchg = 0;
	uint64_t t0;
	long it;
	char c;

	if ((kq = kqueue()) < 0) {
		ring_fail(st, "kqueue");
		return;
	}
	if (ring_kq_register(kq, rg) < 0) {
		ring_fail(st, "kevent(register)");
		close(kq);
		return;
	}
	if (ring_token_in(rg) < 0) {
		ring_fail(st, "write(token)");
		close(kq);
		return;
	}
	sample_start(&st->s);
	t0 = st->s.wall_ns;
	for (it = 0; !ring_done(rg, it, t0); it++) {
		int m = kevent(kq, chg, nchg, ev, RING_NEV, &tmo);

		nchg = 0;
		if (m < 0) {
			if (errno == EINTR)
				continue;
			ring_fail(st, "kevent(wait)");
			break;
		}
		if (m == 0) {
			errno = ETIMEDOUT;
			ring_fail(st, "kevent: token lost");
			break;
		}
		st->events += m;
		for (int j = 0; j < m; j++) {
			const struct kevent *e = &ev[j];
			int i = (int)(intptr_t)e->udata;

			if (e->flags & EV_ERROR) {
				errno = (int)e->data;
				ring_fail(st, "kevent: EV_ERROR");
				st->unexpected++;
			} else if (e->filter == EVFILT_READ && rg->in_pipe &&
			    i == rg->pos && e->ident == (uintptr_t)rg->p.r[i]) {
				if (e->data != 1) {
					st->data_bad++;
					st->rdata_other++;
				}
				if (read(rg->p.r[i], &c, 1) != 1)
					st->unexpected++;
				rg->pos = (i + 1) % rg->n;
				rg->in_pipe = 0;
				EV_SET(&chg[nchg], rg->p.w[rg->pos],
				    EVFILT_WRITE, EV_ENABLE, 0, 0,
				    (void *)(intptr_t)rg->pos);
				nchg++;
			} else if (e->filter == EVFILT_WRITE && !rg->in_pipe &&
			    i == rg->pos && e->ident == (uintptr_t)rg->p.w[i]) {
				if (e->data <= 0 || e->data > rg->caps[i])
					st->data_bad++;
				if (e->data < st->wmin)
					st->wmin = e->data;
				if (e->data > st->wmax)
					st->wmax = e->data;
				EV_SET(&chg[nchg], rg->p.w[i], EVFILT_WRITE,
				    EV_DISABLE, 0, 0, (void *)(intptr_t)i);
				nchg++;
				if (write(rg->p.w[i], "t", 1) != 1)
					st->unexpected++;
				rg->in_pipe = 1;
			} else {
				st->unexpected++;
			}
		}
	}
	sample_stop(&st->s);
	st->s.iters = it;
	ring_drain(rg);
	close(kq);
}

/* ---- raw epoll, and epoll+data ------------------------------------------ */

/* epoll+data: the byte count kq would report, by one ioctl. */
static void
ring_epoll_rdata(const struct ring *rg, int i, struct ring_stats *st)
{
	int n;

	if (ioctl(rg->p.r[i], FIONREAD, &n) != 0 || n != 1) {
		st->data_bad++;
		st->rdata_other++;
	}
}

/* epoll+data: the free space kq would report, by one ioctl. */
static void
ring_epoll_wdata(const struct ring *rg, int i, struct ring_stats *st)
{
	int64_t d;
	int q;

	if (ioctl(rg->p.w[i], FIONREAD, &q) != 0) {
		st->data_bad++;
		return;
	}
	d = (int64_t)rg->caps[i] - q;
	if (d <= 0 || d > rg->caps[i])
		st->data_bad++;
	if (d < st->wmin)
		st->wmin = d;
	if (d > st->wmax)
		st->wmax = d;
}

/*
 * The raw epoll loop; with `data` (epoll+data) every event first gets its
 * byte count.  Always inlined into its two callers, where `data` is a
 * constant, so raw epoll's loop carries no trace of the option.
 */
static inline __attribute__((always_inline)) void
ring_epoll_run(struct ring *rg, struct ring_stats *st, int data)
{
	struct epoll_event ev[RING_NEV], ee;
	uint64_t t0;
	long it;
	int ep;
	char c;

	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		ring_fail(st, "epoll_create1");
		return;
	}
	for (int i = 0; i < rg->n; i++) {
		ee.events = EPOLLIN;
		ee.data.u64 = (uint64_t)i;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, rg->p.r[i], &ee) < 0)
			goto fail;
		ee.events = 0;
		ee.data.u64 = (uint64_t)i | RING_WBIT;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, rg->p.w[i], &ee) < 0)
			goto fail;
	}
	if (ring_token_in(rg) < 0)
		goto fail;
	sample_start(&st->s);
	t0 = st->s.wall_ns;
	for (it = 0; !ring_done(rg, it, t0); it++) {
		int m = epoll_wait(ep, ev, RING_NEV, RING_TMO_MS);

		if (m < 0) {
			if (errno == EINTR)
				continue;
			ring_fail(st, "epoll_wait");
			break;
		}
		if (m == 0) {
			errno = ETIMEDOUT;
			ring_fail(st, "epoll_wait: token lost");
			break;
		}
		st->events += m;
		for (int j = 0; j < m; j++) {
			int i = (int)(ev[j].data.u64 & 0xffffffffu);

			if (!(ev[j].data.u64 & RING_WBIT) && rg->in_pipe &&
			    i == rg->pos) {
				if (data)
					ring_epoll_rdata(rg, i, st);
				if (read(rg->p.r[i], &c, 1) != 1)
					st->unexpected++;
				rg->pos = (i + 1) % rg->n;
				rg->in_pipe = 0;
				ee.events = EPOLLOUT;
				ee.data.u64 = (uint64_t)rg->pos | RING_WBIT;
				epoll_ctl(ep, EPOLL_CTL_MOD, rg->p.w[rg->pos],
				    &ee);
			} else if ((ev[j].data.u64 & RING_WBIT) &&
			    !rg->in_pipe && i == rg->pos) {
				if (data)
					ring_epoll_wdata(rg, i, st);
				ee.events = 0;
				ee.data.u64 = (uint64_t)i | RING_WBIT;
				epoll_ctl(ep, EPOLL_CTL_MOD, rg->p.w[i], &ee);
				if (write(rg->p.w[i], "t", 1) != 1)
					st->unexpected++;
				rg->in_pipe = 1;
			} else {
				st->unexpected++;
			}
		}
	}
	sample_stop(&st->s);
	st->s.iters = it;
	ring_drain(rg);
	close(ep);
	return;
fail:
	ring_fail(st, "epoll setup");
	close(ep);
}

static void
ring_epoll(struct ring *rg, struct ring_stats *st)
{
	ring_epoll_run(rg, st, 0);
}

static void
ring_epoll_data(struct ring *rg, struct ring_stats *st)
{
	ring_epoll_run(rg, st, 1);
}

/* ---- poll() ---------------------------------------------------------------- */

static void
ring_poll(struct ring *rg, struct ring_stats *st)
{
	int nfds = 2 * rg->n;
	struct pollfd *pfd = calloc((size_t)nfds, sizeof(*pfd));
	uint64_t t0;
	long it;
	char c;

	if (!pfd) {
		ring_fail(st, "calloc");
		return;
	}
	for (int i = 0; i < rg->n; i++) {
		pfd[2 * i].fd = rg->p.r[i];
		pfd[2 * i].events = POLLIN;
		pfd[2 * i + 1].fd = rg->p.w[i];
		pfd[2 * i + 1].events = 0;
	}
	if (ring_token_in(rg) < 0) {
		ring_fail(st, "write(token)");
		free(pfd);
		return;
	}
	sample_start(&st->s);
	t0 = st->s.wall_ns;
	for (it = 0; !ring_done(rg, it, t0); it++) {
		int m = poll(pfd, (nfds_t)nfds, RING_TMO_MS);

		if (m < 0) {
			if (errno == EINTR)
				continue;
			ring_fail(st, "poll");
			break;
		}
		if (m == 0) {
			errno = ETIMEDOUT;
			ring_fail(st, "poll: token lost");
			break;
		}
		st->events += m;
		for (int k = 0; k < nfds && m > 0; k++) {
			int i = k / 2;

			if (!pfd[k].revents)
				continue;
			m--;
			if (!(k & 1) && rg->in_pipe && i == rg->pos) {
				if (read(rg->p.r[i], &c, 1) != 1)
					st->unexpected++;
				rg->pos = (i + 1) % rg->n;
				rg->in_pipe = 0;
				pfd[2 * rg->pos + 1].events = POLLOUT;
			} else if ((k & 1) && !rg->in_pipe && i == rg->pos) {
				pfd[k].events = 0;
				if (write(rg->p.w[i], "t", 1) != 1)
					st->unexpected++;
				rg->in_pipe = 1;
			} else {
				st->unexpected++;
			}
		}
	}
	sample_stop(&st->s);
	st->s.iters = it;
	ring_drain(rg);
	free(pfd);
}

/* ---- select() -------------------------------------------------------------- */

static void
ring_select(struct ring *rg, struct ring_stats *st)
{
	fd_set rset, wset, rs, ws;
	uint64_t t0;
	long it;
	char c;

	FD_ZERO(&rset);
	FD_ZERO(&wset);
	for (int i = 0; i < rg->n; i++)
		FD_SET(rg->p.r[i], &rset);
	if (ring_token_in(rg) < 0) {
		ring_fail(st, "write(token)");
		return;
	}
	sample_start(&st->s);
	t0 = st->s.wall_ns;
	for (it = 0; !ring_done(rg, it, t0); it++) {
		struct timeval tv = { RING_TMO_MS / 1000, 0 };
		int m;

		rs = rset;
		ws = wset;
		m = select(rg->p.maxfd + 1, &rs, &ws, NULL, &tv);
		if (m < 0) {
			if (errno == EINTR)
				continue;
			ring_fail(st, "select");
			break;
		}
		if (m == 0) {
			errno = ETIMEDOUT;
			ring_fail(st, "select: token lost");
			break;
		}
		st->events += m;
		for (int i = 0; i < rg->n && m > 0; i++) {
			if (FD_ISSET(rg->p.r[i], &rs)) {
				m--;
				if (rg->in_pipe && i == rg->pos) {
					if (read(rg->p.r[i], &c, 1) != 1)
						st->unexpected++;
					rg->pos = (i + 1) % rg->n;
					rg->in_pipe = 0;
					FD_SET(rg->p.w[rg->pos], &wset);
				} else {
					st->unexpected++;
				}
			}
			if (FD_ISSET(rg->p.w[i], &ws)) {
				m--;
				if (!rg->in_pipe && i == rg->pos) {
					FD_CLR(rg->p.w[i], &wset);
					if (write(rg->p.w[i], "t", 1) != 1)
						st->unexpected++;
					rg->in_pipe = 1;
				} else {
					st->unexpected++;
				}
			}
		}
	}
	sample_stop(&st->s);
	st->s.iters = it;
	ring_drain(rg);
}

/* ---- driver -------------------------------------------------------------- */

static int
ring_open(struct ring *rg, int n)
{
	memset(rg, 0, sizeof(*rg));
	if (fdpairs_open(&rg->p, n, 0, 0) < 0)
		return -1;
	rg->n = n;
	rg->limit = -1;
	if (!(rg->caps = calloc((size_t)(n > 0 ? n : 1), sizeof(int)))) {
		fdpairs_close(&rg->p);
		errno = ENOMEM;
		return -1;
	}
	/*
	 * Each pipe's own: once a user holds pipe-user-pages-soft pages, new
	 * pipes get one page instead of the default.
	 */
	rg->cap = 0;
	rg->capmin = INT32_MAX;
	for (int i = 0; i < n; i++) {
		int c = fcntl(rg->p.w[i], F_GETPIPE_SZ);

		rg->caps[i] = c > 0 ? c : 65536;
		if (rg->caps[i] > rg->cap)
			rg->cap = rg->caps[i];
		if (rg->caps[i] < rg->capmin)
			rg->capmin = rg->caps[i];
	}
	return 0;
}

static void
ring_close(struct ring *rg)
{
	fdpairs_close(&rg->p);
	free(rg->caps);
	rg->caps = NULL;
}

static int
ring_select_ok(const struct ring *rg)
{
	return rg->p.maxfd < FD_SETSIZE;
}

static void
ring_one(struct ring *rg, int bk, struct ring_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->wmin = INT64_MAX;
	st->wmax = INT64_MIN;
	switch (bk) {
	case BK_KQ:		ring_kq(rg, st);		break;
	case BK_EPOLL:		ring_epoll(rg, st);		break;
	case BK_EPOLL_DATA:	ring_epoll_data(rg, st);	break;
	case BK_POLL:		ring_poll(rg, st);		break;
	case BK_SELECT:		ring_select(rg, st);		break;
	}
}

/* `kqbench --ring-fixed BACKEND N ITERS`: exactly ITERS iterations. */
static int
ring_fixed(int argc, char **argv)
{
	struct ring_stats st;
	struct ring rg;
	int bk;

	if (argc != 3 || (bk = bk_parse_all(argv[0])) < 0) {
		fprintf(stderr, "usage: kqbench --ring-fixed BACKEND N ITERS\n");
		return 2;
	}
	if (ring_open(&rg, atoi(argv[1])) < 0) {
		perror("ring: pipes");
		return 1;
	}
	rg.limit = atol(argv[2]);
	if (bk == BK_SELECT && !ring_select_ok(&rg)) {
		fprintf(stderr, "ring: descriptors exceed FD_SETSIZE\n");
		return 1;
	}
	ring_one(&rg, bk, &st);
	ring_close(&rg);
	printf("%s n=%d iters=%ld events=%ld unexpected=%ld data_bad=%ld%s%s\n",
	    bk_name(bk), rg.n, st.s.iters, st.events, st.unexpected,
	    st.data_bad, st.failed ? " error: " : "", st.failed ? st.err : "");
	return st.failed || st.unexpected ? 1 : 0;
}

static int
ring_run(const struct bench_opts *o, struct bench_result *res)
{
	/* Seed 004's n = 8, 100, 1000, max, and 9000 (the engine's target). */
	static const int sizes[] = { 8, 100, 1000, 9000, 0 /* max */ };
	/* Run order inside a repetition, and row order. */
	static const int order[] = { BK_KQ, BK_EPOLL, BK_EPOLL_DATA, BK_POLL,
	    BK_SELECT };
	struct bench_table *t = bt_new(res, "ring",
	    "ring: token passed around n pipes (xpoll looptest)");
	long data_bad_total = 0, unexpected_total = 0, epd_bad_total = 0;
	int64_t wmin = INT64_MAX, wmax = INT64_MIN;
	char errs[256] = "";
	int cap = 0, capmin = INT32_MAX;

	bt_cols(t, "n|backend|iter/CPU-s|iter/wall-s|spread %|"
	    "x epoll (CPU)|x epoll (wall)|x epoll+data (CPU)|"
	    "x epoll+data (wall)|unexpected|data errors");
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		static double cpu[BK_NALL][MAXREPS], wall[BK_NALL][MAXREPS];
		long unexp[BK_NALL] = { 0 }, dbad[BK_NALL] = { 0 };
		int ran[BK_NALL] = { 0 }, nrep[BK_NALL] = { 0 };
		int n = sizes[si], clipped = 0;
		struct ring rg;

		if (o->tiny && si > 0)
			break;
		if (n == 0) {
			/* max: every descriptor the limit leaves (2 per pipe) */
			n = (int)((o->nofile - 100) / 2);
			if (n <= sizes[si - 1])
				continue;
		}
		if (2L * n + 64 > o->nofile) {
			n = (int)((o->nofile - 64) / 2);
			clipped = 1;
		}
		if (ring_open(&rg, n) < 0) {
			progress("ring: cannot open %d pipes: %s\n", n,
			    strerror(errno));
			continue;
		}
		if (rg.cap > cap)
			cap = rg.cap;
		if (rg.capmin < capmin)
			capmin = rg.capmin;
		for (int rep = 0; rep < o->reps; rep++) {
			progress("[ring] n=%d rep %d/%d\n", n, rep + 1, o->reps);
			for (size_t k = 0; k < sizeof(order) / sizeof(order[0]);
			    k++) {
				struct ring_stats st;
				int bk = order[k];

				if (bk == BK_SELECT && !ring_select_ok(&rg))
					continue;
				rg.limit_ns = (uint64_t)(o->run_secs * 1e9);
				ring_one(&rg, bk, &st);
				ran[bk] = 1;
				unexp[bk] += st.unexpected;
				dbad[bk] += st.data_bad;
				if (bk == BK_KQ && st.s.iters > 0) {
					if (st.wmin < wmin)
						wmin = st.wmin;
					if (st.wmax > wmax)
						wmax = st.wmax;
				}
				if (st.failed) {
					progress("ring: %s n=%d: %s\n",
					    bk_name(bk), n, st.err);
					if (!strstr(errs, bk_name(bk)) &&
					    strlen(errs) < 160)
						snprintf(errs + strlen(errs),
						    sizeof(errs) - strlen(errs),
						    "%s n=%d: %s. ", bk_name(bk),
						    n, st.err);
					continue;
				}
				cpu[bk][nrep[bk]] = per_cpu_sec(&st.s);
				wall[bk][nrep[bk]] = per_wall_sec(&st.s);
				nrep[bk]++;
			}
		}
		for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
			struct bk_stats sc, sw, fc, fw;
			int bk = order[k], r;

			if (!ran[bk])
				continue;
			r = bt_row(t);
			bt_set(t, r, 0, "%d%s", n, clipped ? "*" : "");
			bt_set(t, r, 1, "%s", bk_name(bk));
			if (nrep[bk] == 0) {
				bt_set(t, r, 2, "failed");
				continue;
			}
			bk_summarize_vs(cpu, wall, nrep, bk, BK_EPOLL, &sc, &sw);
			bk_summarize_vs(cpu, wall, nrep, bk, BK_EPOLL_DATA, &fc,
			    &fw);
			bt_num(t, r, 2, sc.med);
			bt_num(t, r, 3, sw.med);
			bt_set(t, r, 4, "%.1f", sc.spread);
			bt_set(t, r, 5, "%.2f", sc.ratio);
			bt_set(t, r, 6, "%.2f", sw.ratio);
			/* Against the floor: only kq delivers the same data. */
			if (bk == BK_KQ || bk == BK_EPOLL_DATA) {
				bt_set(t, r, 7, "%.2f", fc.ratio);
				bt_set(t, r, 8, "%.2f", fw.ratio);
				bt_set(t, r, 10, "%ld", dbad[bk]);
			} else {
				bt_set(t, r, 7, "-");
				bt_set(t, r, 8, "-");
				bt_set(t, r, 10, "-");
			}
			bt_set(t, r, 9, "%ld", unexp[bk]);
			unexpected_total += unexp[bk];
			if (bk == BK_KQ)
				data_bad_total += dbad[bk];
			if (bk == BK_EPOLL_DATA)
				epd_bad_total += dbad[bk];
		}
		ring_close(&rg);
	}
	bt_note(t, "One iteration = one wait call (each returns one event; "
	    "half are reads). Throughput: higher is better; `x epoll` = "
	    "backend / raw epoll, median of per-repetition ratios "
	    "(0.91 = 91%% of epoll's iterations per second). %d repetitions "
	    "of %.2f s per backend, interleaved in the order of the rows. "
	    "select() only where every descriptor < FD_SETSIZE (%d).\n\n",
	    o->reps, o->run_secs, FD_SETSIZE);
	bt_note(t, "epoll+data is raw epoll that also learns, for every "
	    "event, the `data` kq must report: ioctl(FIONREAD) on a read end "
	    "(bytes readable), pipe capacity - ioctl(FIONREAD) on a write end "
	    "(free space; each pipe's capacity read once at set-up with "
	    "F_GETPIPE_SZ, as kq reads it once per knote). epoll "
	    "reports readiness only, and one FIONREAD per event is the "
	    "cheapest way Linux offers to learn the byte count: there is no "
	    "batched query for pipes, and io_uring's SIOCINQ command does not "
	    "cover pipes or AF_UNIX sockets. So epoll+data is the floor for "
	    "exact data on Linux, and `x epoll+data` (kq / epoll+data, same "
	    "repetition, median of the ratios) is what kq costs beyond it; "
	    "kq's distance from epoll that epoll+data also shows is the "
	    "price of the data, not of the library.\n\n");
	if (wmax >= 0 && capmin == cap)
		bt_note(t, "Data check: EVFILT_READ data must be 1; "
		    "EVFILT_WRITE data must be in 1..%d (pipe capacity; the "
		    "pipe is empty, so exactly %d on FreeBSD). ", cap, cap);
	else if (wmax >= 0)
		bt_note(t, "Data check: EVFILT_READ data must be 1; "
		    "EVFILT_WRITE data must be in 1..the pipe's capacity "
		    "(F_GETPIPE_SZ, %d..%d here; the pipe is empty, so exactly "
		    "its capacity on FreeBSD). ", capmin, cap);
	if (wmax >= 0)
		bt_note(t, "kq: seen write data %lld..%lld, mismatches over "
		    "all runs: %ld. epoll+data (same check on its FIONREAD "
		    "results): mismatches %ld. Unexpected events (any "
		    "backend): %ld.\n", (long long)wmin, (long long)wmax,
		    data_bad_total, epd_bad_total, unexpected_total);
	if (errs[0])
		bt_note(t, "\nErrors: %s\n", errs);
	return 0;
}

const struct bench_scenario bench_ring = {
	.name = "ring",
	.title = "token ring over n pipes, iterations per CPU-second",
	.run = ring_run,
	.fixed = ring_fixed,
};
