/*
 * bench-threads.c -- threads sharing one kqueue with EV_DISPATCH.
 *
 * A ring of n pipes carries k tokens (one byte each).  Every read end is
 * registered once in one shared kqueue with EV_DISPATCH, so an event is
 * handed to exactly one thread and its knote is disabled until that thread
 * re-arms it.  Each of T threads loops:
 *
 *   wait for one event (pipe i readable); read one byte; write one byte
 *   into pipe i+1; re-arm pipe i with EV_ENABLE.
 *
 * kq carries the EV_ENABLE in the changelist of the thread's next kevent()
 * call (one system call for re-arm + wait, the kqueue idiom).  Raw epoll
 * does the same with EPOLLONESHOT and EPOLL_CTL_MOD after handling, then
 * epoll_wait.  One iteration = one token moved; reported per CPU-second of
 * the whole process (all threads) and per wall-second.
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/event.h>

#define TH_RING		64	/* pipes */
#define TH_TOKENS	4
#define TH_MAXT		2
#define TH_TMO_MS	100

struct th_shared {
	struct fdpairs p;
	int	 bk;
	int	 fd;		/* kq or epoll */
	atomic_int stop;
	long	 limit;		/* stop after this many moves (0: by time) */
	atomic_long done;	/* moves so far, counted when limit != 0 */
};

struct th_worker {
	struct th_shared *sh;
	pthread_t tid;
	long	 iters;
	long	 errors;
	int	 err;
};

static void
th_move(struct th_shared *sh, struct th_worker *w, int i)
{
	char c;
	int nx = i + 1 == sh->p.n ? 0 : i + 1;

	if (read(sh->p.r[i], &c, 1) != 1) {
		w->errors++;
		return;
	}
	if (write(sh->p.w[nx], "t", 1) != 1)
		w->errors++;
	w->iters++;
	if (sh->limit && atomic_fetch_add(&sh->done, 1) + 1 >= sh->limit)
		atomic_store(&sh->stop, 1);
}

static void *
th_kq(void *arg)
{
	struct th_worker *w = arg;
	struct th_shared *sh = w->sh;
	struct timespec tmo = { 0, TH_TMO_MS * 1000000L };
	struct kevent ch, ev;
	int nch = 0;

	for (;;) {
		int m = kevent(sh->fd, &ch, nch, &ev, 1, &tmo);

		nch = 0;
		if (m < 0) {
			if (errno == EINTR)
				continue;
			w->err = errno;
			break;
		}
		if (m == 1) {
			int i = (int)(intptr_t)ev.udata;

			if (ev.flags & EV_ERROR) {
				w->errors++;
				w->err = (int)ev.data;
				break;
			}
			th_move(sh, w, i);
			EV_SET(&ch, sh->p.r[i], EVFILT_READ, EV_ENABLE, 0, 0,
			    (void *)(intptr_t)i);
			nch = 1;
		}
		if (atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
			if (nch && kevent(sh->fd, &ch, nch, NULL, 0, NULL) < 0)
				w->errors++;
			break;
		}
	}
	return NULL;
}

static void *
th_epoll(void *arg)
{
	struct th_worker *w = arg;
	struct th_shared *sh = w->sh;
	struct epoll_event ev, ee;

	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		int m = epoll_wait(sh->fd, &ev, 1, TH_TMO_MS), i;

		if (m < 0) {
			if (errno == EINTR)
				continue;
			w->err = errno;
			break;
		}
		if (m == 0)
			continue;
		i = (int)ev.data.u64;
		th_move(sh, w, i);
		ee.events = EPOLLIN | EPOLLONESHOT;
		ee.data.u64 = (uint64_t)i;
		if (epoll_ctl(sh->fd, EPOLL_CTL_MOD, sh->p.r[i], &ee) < 0) {
			w->errors++;
			w->err = errno;
			break;
		}
	}
	return NULL;
}

static int
th_setup(struct th_shared *sh, int bk)
{
	sh->bk = bk;
	if (bk == BK_KQ) {
		if ((sh->fd = kqueue()) < 0)
			return -1;
		for (int i = 0; i < sh->p.n; i++) {
			struct kevent ch;

			EV_SET(&ch, sh->p.r[i], EVFILT_READ, EV_ADD |
			    EV_DISPATCH, 0, 0, (void *)(intptr_t)i);
			if (kevent(sh->fd, &ch, 1, NULL, 0, NULL) < 0)
				return -1;
		}
	} else {
		if ((sh->fd = epoll_create1(EPOLL_CLOEXEC)) < 0)
			return -1;
		for (int i = 0; i < sh->p.n; i++) {
			struct epoll_event ee = { .events = EPOLLIN |
			    EPOLLONESHOT };

			ee.data.u64 = (uint64_t)i;
			if (epoll_ctl(sh->fd, EPOLL_CTL_ADD, sh->p.r[i],
			    &ee) < 0)
				return -1;
		}
	}
	for (int k = 0; k < TH_TOKENS; k++)
		if (write(sh->p.w[k * sh->p.n / TH_TOKENS], "t", 1) != 1)
			return -1;
	return 0;
}

/* Take every token out so the next run starts from the same state. */
static long
th_drain(struct th_shared *sh)
{
	long got = 0;
	char buf[64];

	for (int i = 0; i < sh->p.n; i++) {
		ssize_t r;

		while ((r = read(sh->p.r[i], buf, sizeof(buf))) > 0)
			got += r;
	}
	return got;
}

/* One timed run; returns 0 or -1 (error text in *why). */
static int
th_once(struct th_shared *sh, int bk, int nthr, double secs,
    struct bench_sample *s, long *errors, char *why, size_t whylen)
{
	struct th_worker w[TH_MAXT];
	long tokens;
	int rc = 0;

	memset(w, 0, sizeof(w));
	if (th_setup(sh, bk) < 0) {
		snprintf(why, whylen, "%s setup: %s", bk_name(bk),
		    strerror(errno));
		if (sh->fd >= 0)
			close(sh->fd);
		th_drain(sh);
		return -1;
	}
	atomic_store(&sh->stop, 0);
	sample_start(s);
	for (int t = 0; t < nthr; t++) {
		w[t].sh = sh;
		if (pthread_create(&w[t].tid, NULL, bk == BK_KQ ? th_kq :
		    th_epoll, &w[t]) != 0) {
			nthr = t;
			rc = -1;
			snprintf(why, whylen, "pthread_create failed");
			break;
		}
	}
	if (nthr > 0 && sh->limit) {
		struct timespec d = { 0, 1000000L };

		while (!atomic_load(&sh->stop))
			nanosleep(&d, NULL);
	} else if (nthr > 0) {
		struct timespec d = { (time_t)secs,
		    (long)((secs - (double)(time_t)secs) * 1e9) };

		while (nanosleep(&d, &d) < 0 && errno == EINTR)
			;
	}
	atomic_store(&sh->stop, 1);
	for (int t = 0; t < nthr; t++)
		pthread_join(w[t].tid, NULL);
	sample_stop(s);
	for (int t = 0; t < nthr; t++) {
		s->iters += w[t].iters;
		*errors += w[t].errors;
		if (w[t].err && !rc) {
			rc = -1;
			snprintf(why, whylen, "%s: %s", bk_name(bk),
			    strerror(w[t].err));
		}
	}
	close(sh->fd);
	sh->fd = -1;
	tokens = th_drain(sh);
	if (tokens != TH_TOKENS && !rc) {
		rc = -1;
		snprintf(why, whylen, "%s: %ld tokens left in the ring, "
		    "expected %d", bk_name(bk), tokens, TH_TOKENS);
	}
	return rc;
}

static int
th_run(const struct bench_opts *o, struct bench_result *res)
{
	static double cpu[2][MAXREPS], wall[2][MAXREPS];
	struct bench_table *t = bt_new(res, "threads",
	    "threads: T threads share one kqueue (EV_DISPATCH) vs one epoll "
	    "(EPOLLONESHOT)");
	struct th_shared sh;
	char errs[512] = "";
	long errors = 0;
	int failed = 0;

	memset(&sh, 0, sizeof(sh));
	sh.fd = -1;
	if (fdpairs_open(&sh.p, TH_RING, 0, 0) < 0) {
		progress("threads: pipes: %s\n", strerror(errno));
		return -1;
	}
	bt_cols(t, "threads|backend|iter/CPU-s|iter/wall-s|spread %|"
	    "x epoll (CPU)|x epoll (wall)");
	for (int nthr = 1; nthr <= TH_MAXT; nthr++) {
		int nrep[2] = { 0, 0 };

		for (int rep = 0; rep < o->reps; rep++) {
			progress("[threads] T=%d rep %d/%d\n", nthr, rep + 1,
			    o->reps);
			for (int b = 0; b < 2; b++) {
				int bk = b ? BK_EPOLL : BK_KQ;
				struct bench_sample s;
				char why[160];

				if (th_once(&sh, bk, nthr, o->run_secs, &s,
				    &errors, why, sizeof(why)) < 0) {
					progress("threads: T=%d %s\n", nthr,
					    why);
					if (strlen(errs) < 300)
						snprintf(errs + strlen(errs),
						    sizeof(errs) - strlen(errs),
						    "T=%d %s. ", nthr, why);
					failed = 1;
					continue;
				}
				cpu[b][nrep[b]] = per_cpu_sec(&s);
				wall[b][nrep[b]] = per_wall_sec(&s);
				nrep[b]++;
			}
		}
		for (int b = 0; b < 2; b++) {
			struct bk_stats sc, sw;
			int r = bt_row(t);

			bt_set(t, r, 0, "%d", nthr);
			bt_set(t, r, 1, "%s", b ? "epoll" : "kq");
			if (!nrep[b]) {
				bt_set(t, r, 2, "failed");
				continue;
			}
			bk_summarize(cpu[b], nrep[1] == nrep[b] ? cpu[1] : NULL,
			    nrep[b], &sc);
			bk_summarize(wall[b], nrep[1] == nrep[b] ? wall[1] :
			    NULL, nrep[b], &sw);
			bt_num(t, r, 2, sc.med);
			bt_num(t, r, 3, sw.med);
			bt_set(t, r, 4, "%.1f", sc.spread);
			bt_set(t, r, 5, "%.2f", sc.ratio);
			bt_set(t, r, 6, "%.2f", sw.ratio);
		}
	}
	fdpairs_close(&sh.p);
	bt_note(t, "Ring of %d pipes, %d tokens; each iteration moves one "
	    "token (wait for one event, read 1 byte, write 1 byte into the "
	    "next pipe, re-arm). kq: EV_DISPATCH, re-armed by EV_ENABLE in "
	    "the next kevent() call's changelist; epoll: EPOLLONESHOT, "
	    "re-armed by EPOLL_CTL_MOD. Throughput: higher is better. CPU "
	    "time counts all threads; with 2 threads on a 2-CPU machine the "
	    "wall rate is the one that can grow. %d repetitions of %.2f s. "
	    "Failed reads/writes/re-arms: %ld.\n", TH_RING, TH_TOKENS,
	    o->reps, o->run_secs, errors);
	if (errs[0])
		bt_note(t, "\nErrors: %s\n", errs);
	return failed ? -1 : 0;
}

/*
 * `kqbench --threads-fixed BACKEND T ITERS`: T threads move ITERS tokens
 * (give or take one per thread) and stop.
 */
static int
th_fixed(int argc, char **argv)
{
	struct th_shared sh;
	struct bench_sample s = { 0 };
	long errors = 0;
	char why[160] = "";
	int bk, nthr;

	if (argc != 3 || ((bk = bk_parse(argv[0])) != BK_KQ &&
	    bk != BK_EPOLL) || (nthr = atoi(argv[1])) < 1 ||
	    nthr > TH_MAXT) {
		fprintf(stderr, "usage: kqbench --threads-fixed kq|epoll T "
		    "ITERS\n");
		return 2;
	}
	memset(&sh, 0, sizeof(sh));
	sh.fd = -1;
	sh.limit = atol(argv[2]);
	if (fdpairs_open(&sh.p, TH_RING, 0, 0) < 0) {
		perror("threads: pipes");
		return 1;
	}
	if (sh.limit > 0 && th_once(&sh, bk, nthr, 0.0, &s, &errors, why,
	    sizeof(why)) < 0) {
		fprintf(stderr, "threads: %s\n", why);
		return 1;
	}
	fdpairs_close(&sh.p);
	printf("%s threads=%d moves=%ld errors=%ld\n", bk_name(bk), nthr,
	    s.iters, errors);
	return errors ? 1 : 0;
}

const struct bench_scenario bench_threads = {
	.name = "threads",
	.title = "1 and 2 threads on one kqueue with EV_DISPATCH, iterations/s",
	.run = th_run,
	.fixed = th_fixed,
};
