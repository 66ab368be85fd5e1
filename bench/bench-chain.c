/*
 * bench-chain.c -- the chain benchmark of libevent's test/bench.c, which
 * seed 003 used to compare Solaris event ports with poll, select and
 * /dev/poll.  Re-implemented here over raw system calls, without libevent.
 *
 * n AF_UNIX socketpairs; the first end of every pair is registered for
 * reading.  One run:
 *
 *   - a bytes are sent, into pairs 0, n/a, 2n/a, ... (the a active
 *     writers, spread evenly over the descriptors);
 *   - then the event loop runs: for every readable descriptor i, one byte
 *     is read and, while fewer than w writes have been made, one byte is
 *     sent into pair i+1 (mod n), so every byte travels along the chain;
 *   - the run ends when every byte sent has been read (a + w reads).
 *
 * Only the event loop is timed (as in libevent's bench, which times the
 * dispatch phase only); registration happens once per backend and
 * repetition, outside the timing.  Every loop iteration is one wait call
 * with a zero timeout, like libevent's EVLOOP_ONCE | EVLOOP_NONBLOCK.
 */
#include "bench.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/event.h>

#define CH_NEV		1024	/* events per wait call, kq and epoll */
#define CH_EMPTY_MAX	10000000L	/* empty polls before giving up */

struct chain {
	struct fdpairs p;
	int	 n, a, w;
	int	 bk;
	int	 fd;		/* kq or epoll descriptor */
	struct kevent *kev;
	struct epoll_event *eev;
	struct pollfd *pfd;
	fd_set	 set;
	int	 maxfd;
	/* per run */
	long	 count;		/* bytes read */
	long	 fired;		/* bytes sent */
	long	 writes;	/* writes left */
	long	 waits;		/* wait calls */
	long	 failures;	/* reads or writes that did not move 1 byte */
	int	 err;
};

static void
ch_close(struct chain *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->kev);
	free(c->eev);
	free(c->pfd);
	c->kev = NULL;
	c->eev = NULL;
	c->pfd = NULL;
}

static int
ch_select_ok(const struct chain *c)
{
	for (int i = 0; i < c->n; i++)
		if (c->p.r[i] >= FD_SETSIZE)
			return 0;
	return 1;
}

/* Register the first end of every pair with backend bk. */
static int
ch_open(struct chain *c, int bk)
{
	c->bk = bk;
	c->fd = -1;
	switch (bk) {
	case BK_KQ: {
		struct kevent ch[256];
		int k = 0;

		if (!(c->kev = calloc(CH_NEV, sizeof(*c->kev))) ||
		    (c->fd = kqueue()) < 0)
			goto fail;
		for (int i = 0; i < c->n; i++) {
			EV_SET(&ch[k], c->p.r[i], EVFILT_READ, EV_ADD, 0, 0,
			    (void *)(intptr_t)i);
			if (++k == 256 || i == c->n - 1) {
				if (kevent(c->fd, ch, k, NULL, 0, NULL) < 0)
					goto fail;
				k = 0;
			}
		}
		break;
	}
	case BK_EPOLL:
		if (!(c->eev = calloc(CH_NEV, sizeof(*c->eev))) ||
		    (c->fd = epoll_create1(EPOLL_CLOEXEC)) < 0)
			goto fail;
		for (int i = 0; i < c->n; i++) {
			struct epoll_event ee = { .events = EPOLLIN };

			ee.data.u64 = (uint64_t)i;
			if (epoll_ctl(c->fd, EPOLL_CTL_ADD, c->p.r[i], &ee) < 0)
				goto fail;
		}
		break;
	case BK_POLL:
		if (!(c->pfd = calloc((size_t)c->n, sizeof(*c->pfd))))
			goto fail;
		for (int i = 0; i < c->n; i++) {
			c->pfd[i].fd = c->p.r[i];
			c->pfd[i].events = POLLIN;
		}
		break;
	case BK_SELECT:
		if (!ch_select_ok(c)) {
			errno = EBADF;
			goto fail;
		}
		FD_ZERO(&c->set);
		c->maxfd = -1;
		for (int i = 0; i < c->n; i++) {
			FD_SET(c->p.r[i], &c->set);
			if (c->p.r[i] > c->maxfd)
				c->maxfd = c->p.r[i];
		}
		break;
	}
	return 0;
fail:
	{
		int e = errno;

		ch_close(c);
		errno = e;
	}
	return -1;
}

/* The read callback: read one byte from pair i, pass one on to i + 1. */
static inline void
ch_read_cb(struct chain *c, int i)
{
	char ch;
	int nx;

	if (read(c->p.r[i], &ch, 1) == 1)
		c->count++;
	else
		c->failures++;
	if (c->writes > 0) {
		nx = i + 1 == c->n ? 0 : i + 1;
		if (write(c->p.w[nx], "e", 1) != 1)
			c->failures++;
		c->writes--;
		c->fired++;
	}
}

/* One zero-timeout wait and its callbacks; -1 on error. */
static int
ch_step(struct chain *c)
{
	static const struct timespec zero = { 0, 0 };
	struct timeval tv = { 0, 0 };
	fd_set rs;
	int m = -1;

	c->waits++;
	switch (c->bk) {
	case BK_KQ:
		m = kevent(c->fd, NULL, 0, c->kev, CH_NEV, &zero);
		for (int j = 0; j < m; j++) {
			if (c->kev[j].flags & EV_ERROR) {
				c->failures++;
				continue;
			}
			ch_read_cb(c, (int)(intptr_t)c->kev[j].udata);
		}
		break;
	case BK_EPOLL:
		m = epoll_wait(c->fd, c->eev, CH_NEV, 0);
		for (int j = 0; j < m; j++)
			ch_read_cb(c, (int)c->eev[j].data.u64);
		break;
	case BK_POLL:
		m = poll(c->pfd, (nfds_t)c->n, 0);
		for (int i = 0, left = m; i < c->n && left > 0; i++)
			if (c->pfd[i].revents) {
				left--;
				ch_read_cb(c, i);
			}
		break;
	case BK_SELECT:
		rs = c->set;
		m = select(c->maxfd + 1, &rs, NULL, NULL, &tv);
		for (int i = 0, left = m; i < c->n && left > 0; i++)
			if (FD_ISSET(c->p.r[i], &rs)) {
				left--;
				ch_read_cb(c, i);
			}
		break;
	}
	if (m < 0 && errno != EINTR) {
		c->err = errno;
		return -1;
	}
	return m;
}

/* bench_loop_fn: `iters` runs, only the event loops timed. */
static int
ch_runs(void *arg, long iters)
{
	struct chain *c = arg;

	for (long it = 0; it < iters; it++) {
		int space = c->n / c->a;
		long empty = 0;

		c->count = c->fired = 0;
		c->writes = c->w;
		for (int i = 0; i < c->a; i++, c->fired++)
			if (write(c->p.w[i * space], "e", 1) != 1)
				c->failures++;
		while (c->count < c->fired) {
			int m = ch_step(c);

			if (m < 0)
				return -1;
			if (m == 0 && ++empty > CH_EMPTY_MAX) {
				c->err = ETIMEDOUT;
				return -1;
			}
		}
	}
	return 0;
}

static int
ch_run(const struct bench_opts *o, struct bench_result *res)
{
	static const int sizes[] = { 100, 1000, 2500, 5000, 0 /* max */ };
	static const int actives[] = { 1, 100 };
	static double cpu[BK_COUNT][MAXREPS], wall[BK_COUNT][MAXREPS];
	struct bench_table *t = bt_new(res, "chain",
	    "chain: libevent's bench.c chain over n socketpairs (seed 003)");
	int nmax = (int)((o->nofile - 100) / 2), nsizes, w, failed = 0;
	long failures = 0;

	/* Writes per run: libevent's bench defaults to 100; more steadies
	 * the timing of one run. */
	w = o->tiny ? 100 : 1000;
	nsizes = o->tiny ? 1 : o->quick ? 2 : (int)(sizeof(sizes) /
	    sizeof(sizes[0]));
	bt_cols(t, "n|a|backend|us/run CPU|us/run wall|ns/event CPU|"
	    "spread %|x epoll (CPU)|x epoll (wall)|waits/run");
	for (int si = 0; si < nsizes; si++) {
		int n = sizes[si] ? sizes[si] : nmax;
		struct chain c;

		if (n > nmax) {
			bt_note(t, "n=%d skipped: RLIMIT_NOFILE is %ld. ", n,
			    o->nofile);
			continue;
		}
		if (si > 0 && n <= sizes[si - 1])
			continue;
		memset(&c, 0, sizeof(c));
		/* Second ends above the first ones so select() can take part
		 * while every first end is < FD_SETSIZE. */
		if (fdpairs_open(&c.p, n, 1, 2L * n + 200 < o->nofile &&
		    n < FD_SETSIZE - 16 ? n + 100 : 0) < 0) {
			progress("chain: %d socketpairs: %s\n", n,
			    strerror(errno));
			failed = 1;
			continue;
		}
		c.n = n;
		c.w = w;
		for (size_t ai = 0; ai < sizeof(actives) / sizeof(actives[0]);
		    ai++) {
			int nrep[BK_COUNT] = { 0 }, ran[BK_COUNT] = { 0 };
			long waits[BK_COUNT] = { 0 }, runs[BK_COUNT] = { 0 };

			c.a = actives[ai] < n ? actives[ai] : n;
			for (int rep = 0; rep < o->reps; rep++) {
				progress("[chain] n=%d a=%d rep %d/%d\n", n,
				    c.a, rep + 1, o->reps);
				for (int bk = 0; bk < BK_COUNT; bk++) {
					struct bench_sample s;

					if (bk == BK_SELECT && !ch_select_ok(&c))
						continue;
					if (ch_open(&c, bk) < 0) {
						progress("chain: %s setup: %s\n",
						    bk_name(bk),
						    strerror(errno));
						failed = 1;
						continue;
					}
					ran[bk] = 1;
					c.waits = 0;
					c.failures = 0;
					if (bench_timed(o->call_secs, ch_runs, &c,
					    &s) < 0) {
						progress("chain: %s n=%d: %s\n",
						    bk_name(bk), n,
						    strerror(c.err));
						failed = 1;
						ch_close(&c);
						continue;
					}
					failures += c.failures;
					waits[bk] += c.waits;
					runs[bk] += s.iters;
					ch_close(&c);
					cpu[bk][nrep[bk]] = cpu_ns_per(&s) / 1e3;
					wall[bk][nrep[bk]] = wall_ns_per(&s) / 1e3;
					nrep[bk]++;
				}
			}
			for (int bk = 0; bk < BK_COUNT; bk++) {
				struct bk_stats sc, sw;
				int r;

				if (!ran[bk])
					continue;
				r = bt_row(t);
				bt_set(t, r, 0, "%d", n);
				bt_set(t, r, 1, "%d", c.a);
				bt_set(t, r, 2, "%s", bk_name(bk));
				if (!nrep[bk]) {
					bt_set(t, r, 3, "failed");
					continue;
				}
				bk_summarize(cpu[bk], nrep[BK_EPOLL] ==
				    nrep[bk] ? cpu[BK_EPOLL] : NULL, nrep[bk],
				    &sc);
				bk_summarize(wall[bk], nrep[BK_EPOLL] ==
				    nrep[bk] ? wall[BK_EPOLL] : NULL, nrep[bk],
				    &sw);
				bt_num(t, r, 3, sc.med);
				bt_num(t, r, 4, sw.med);
				bt_num(t, r, 5, sc.med * 1e3 / (c.a + w));
				bt_set(t, r, 6, "%.1f", sc.spread);
				bt_set(t, r, 7, "%.2f", sc.ratio);
				bt_set(t, r, 8, "%.2f", sw.ratio);
				bt_num(t, r, 9, runs[bk] ? (double)waits[bk] /
				    (double)runs[bk] : 0.0);
			}
		}
		fdpairs_close(&c.p);
	}
	bt_note(t, "%sOne run: a bytes sent into a evenly spaced pairs, then "
	    "the event loop until %d more bytes have been passed along the "
	    "chain (each read callback reads 1 byte and sends 1 into the next "
	    "pair); a + %d reads per run. Only the loop is timed; every wait "
	    "has a zero timeout (libevent's EVLOOP_NONBLOCK) and room for %d "
	    "events. Cost: lower is better; `x epoll` = backend / raw epoll "
	    "in the same repetition. select() only while every registered "
	    "descriptor < FD_SETSIZE (%d). n = max is (RLIMIT_NOFILE - 100) / "
	    "2 = %d. Failed reads/writes: %ld.\n",
	    t->notes[0] ? "\n\n" : "", w, w, CH_NEV, FD_SETSIZE, nmax,
	    failures);
	return failed ? -1 : 0;
}

/*
 * `kqbench --chain-fixed BACKEND N ITERS`: ITERS runs of the chain over N
 * socketpairs with a = 1 and 1000 writes per run.
 */
static int
ch_fixed(int argc, char **argv)
{
	struct chain c;
	int bk, rc;

	if (argc != 3 || (bk = bk_parse(argv[0])) < 0) {
		fprintf(stderr, "usage: kqbench --chain-fixed BACKEND N ITERS\n");
		return 2;
	}
	memset(&c, 0, sizeof(c));
	c.n = atoi(argv[1]);
	c.a = 1;
	c.w = 1000;
	if (fdpairs_open(&c.p, c.n, 1, 0) < 0 || ch_open(&c, bk) < 0) {
		perror("chain: set-up");
		return 1;
	}
	rc = ch_runs(&c, atol(argv[2]));
	printf("%s n=%d failures=%ld%s%s\n", bk_name(bk), c.n, c.failures,
	    rc ? " error: " : "", rc ? strerror(c.err) : "");
	ch_close(&c);
	fdpairs_close(&c.p);
	return rc < 0 || c.failures ? 1 : 0;
}

const struct bench_scenario bench_chain = {
	.name = "chain",
	.title = "libevent bench.c chain over n socketpairs, us per run",
	.run = ch_run,
	.fixed = ch_fixed,
};
