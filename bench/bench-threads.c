/*
 * bench-threads.c -- T threads sharing one kqueue, in three trigger modes.
 *
 * A ring of TH_RING pipes carries TH_TOKENS tokens (one byte each).  Every
 * read end is registered once in one shared kqueue (or epoll set) and each
 * of T = 1, 2, 4, 8 threads loops:
 *
 *   wait for one event (pipe i readable); read(pipe i, 64 bytes); send
 *   each byte actually read on to its next pipe; [re-arm pipe i].
 *
 * Token k (byte value k) steps 2k + 1 pipes at each move, so tokens that
 * meet in a pipe part again.  One move is one token read and forwarded.
 * The reads are non-blocking and only bytes actually read are forwarded,
 * so two threads handed the same pipe (level-triggered) cannot break the
 * token count: the loser's read fails with EAGAIN (an "empty" event).  One
 * read of 64 bytes always empties a pipe (there are fewer tokens than
 * that), which is what the edge-triggered modes need.  After each run the
 * ring is drained and must hold every token exactly once.
 *
 * The variants and their epoll equivalents:
 *
 *   level     kq: EV_ADD              epoll: EPOLLIN
 *   clear     kq: EV_CLEAR            epoll: EPOLLIN | EPOLLET
 *   dispatch  kq: EV_DISPATCH, the    epoll: EPOLLONESHOT, re-armed by
 *             EV_ENABLE in the next   EPOLL_CTL_MOD after the move
 *             kevent()'s changelist
 *
 * Backends: kq; raw epoll; and epoll+data, raw epoll plus one
 * ioctl(FIONREAD) per event, the byte count kq reports in `data` (the floor
 * for kq, see bench/README.md).  kq's `data` is checked on every event: it
 * must be 1..TH_TOKENS (FreeBSD reports a pipe readable only when bytes
 * are there, and there are only TH_TOKENS of them).  After each run every
 * token must be found exactly once.
 *
 * Futex system calls (lock contention and wake-ups inside the library, or
 * inside glibc) are counted by a perf counter on the tracepoint
 * syscalls:sys_enter_futex, inherited by the worker threads: no tracer, so
 * the timing is not disturbed, and every timed run is counted.  Where
 * perf_event_open() is refused the column says "-"; the syscalls scenario
 * still gives futex calls per move from strace.
 *
 * The timed window starts when the threads are released together and ends
 * before they are told to stop; a stop pipe registered level-triggered in
 * the same set wakes every blocked thread at once.
 *
 * Also exports `--threads-fixed BACKEND T MOVES [VARIANT]` for the syscalls
 * scenario.
 */
#include "bench.h"

#include <limits.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#define TH_RING		64	/* pipes */
#define TH_TOKENS	16	/* bytes travelling; 2 per thread at T = 8 */
#define TH_MAXT		8
#define TH_NT		4	/* T = 1, 2, 4, TH_MAXT */
#define TH_TMO_MS	100	/* safety net only: the stop pipe wakes */
#define TH_BUF		64	/* read size: > TH_TOKENS, one read drains */

enum th_variant { TV_LEVEL, TV_CLEAR, TV_DISPATCH, TV_COUNT };

static const char *const tv_name[TV_COUNT] = { "level", "clear",
    "dispatch" };

static int
tv_parse(const char *s)
{
	for (int v = 0; v < TV_COUNT; v++)
		if (strcmp(s, tv_name[v]) == 0)
			return v;
	return -1;
}

struct th_shared {
	struct fdpairs p;
	int	 stop_r, stop_w; /* stop pipe, udata/data = p.n */
	int	 done_r, done_w; /* fixed mode: blocking, "limit reached" */
	int	 bk;
	int	 var;
	int	 fd;		/* kq or epoll */
	atomic_int stop;
	pthread_rwlock_t go;	/* write-held by main until the start */
	long	 limit;		/* fixed mode: stop after this many moves */
	int	 baseline;	/* fixed mode, 0 moves: set up, stop at once */
	atomic_long done;	/* moves so far, counted when limit != 0 */
};

/*
 * One worker.  The counters are published with relaxed stores (plain
 * moves on x86) so that the main thread can read them while the workers
 * run; each worker has its own cache lines.
 */
struct th_worker {
	_Alignas(64) atomic_long moves;	/* bytes read and forwarded */
	atomic_long events;	/* events returned (stop pipe excluded) */
	atomic_long empty;	/* events whose read found nothing */
	struct th_shared *sh;
	pthread_t tid;
	long	 nmoves, nevents, nempty;	/* the worker's own copies */
	long	 errors;
	long	 data_bad;	/* kq: data not in 1..TH_TOKENS */
	long	 dmin, dmax;	/* kq: range of data seen */
	long	 sink;		/* sum of data, so it is used */
	int	 err;
};

/* The futex counter: -1 when perf_event_open() was refused. */
static int th_pfd = -1;
static char th_pwhy[128];

static void
th_perf_open(void)
{
	static const char *const ids[] = {
		"/sys/kernel/tracing/events/syscalls/sys_enter_futex/id",
		"/sys/kernel/debug/tracing/events/syscalls/sys_enter_futex/id",
	};
	struct perf_event_attr a;
	long long id = -1;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && id < 0; i++) {
		FILE *f = fopen(ids[i], "r");

		if (f) {
			if (fscanf(f, "%lld", &id) != 1)
				id = -1;
			fclose(f);
		}
	}
	if (id < 0) {
		snprintf(th_pwhy, sizeof(th_pwhy), "tracepoint "
		    "syscalls:sys_enter_futex not found (tracefs)");
		return;
	}
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_TRACEPOINT;
	a.size = sizeof(a);
	a.config = (unsigned long long)id;
	a.inherit = 1;		/* threads created from now on */
	th_pfd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
	    PERF_FLAG_FD_CLOEXEC);
	if (th_pfd < 0)
		snprintf(th_pwhy, sizeof(th_pwhy), "perf_event_open: %s",
		    strerror(errno));
}

/* Futex calls so far by this process's threads, or -1. */
static long
th_perf_read(void)
{
	uint64_t v;

	if (th_pfd < 0 || read(th_pfd, &v, sizeof(v)) != sizeof(v))
		return -1;
	return (long)v;
}

static void
th_publish(struct th_worker *w)
{
	atomic_store_explicit(&w->moves, w->nmoves, memory_order_relaxed);
	atomic_store_explicit(&w->events, w->nevents, memory_order_relaxed);
	atomic_store_explicit(&w->empty, w->nempty, memory_order_relaxed);
}

/*
 * Handle one event for pipe i: read what is there and send each token on.
 * Token k (the byte value k) always steps 2k + 1 pipes ahead, an odd
 * stride, so it visits every pipe; two tokens that met in one pipe go on
 * to different pipes.  (Forwarding all bytes read into pipe i+1 would glue
 * tokens that once met together for good, and the ring would end up with
 * one 16-byte token and no parallelism.)
 */
static void
th_move(struct th_shared *sh, struct th_worker *w, int i)
{
	unsigned char buf[TH_BUF];
	ssize_t r = read(sh->p.r[i], buf, sizeof(buf));

	w->nevents++;
	if (r <= 0) {
		if (r < 0 && errno == EAGAIN)
			w->nempty++;	/* another thread took it */
		else
			w->errors++;
		th_publish(w);
		return;
	}
	for (ssize_t k = 0; k < r; k++) {
		int nx = (i + 1 + 2 * (buf[k] % TH_TOKENS)) % sh->p.n;

		/* A failure shows as a lost token at the end too. */
		if (write(sh->p.w[nx], &buf[k], 1) != 1)
			w->errors++;
	}
	w->nmoves += r;
	th_publish(w);
	if (sh->limit) {
		long before = atomic_fetch_add(&sh->done, r);

		/* One thread crosses the limit; it wakes the main thread. */
		if (before < sh->limit && before + r >= sh->limit) {
			atomic_store(&sh->stop, 1);
			if (write(sh->done_w, "d", 1) != 1)
				w->errors++;
		}
	}
}

static void
th_start(struct th_shared *sh)
{
	pthread_rwlock_rdlock(&sh->go);
	pthread_rwlock_unlock(&sh->go);
}

static void *
th_kq(void *arg)
{
	struct th_worker *w = arg;
	struct th_shared *sh = w->sh;
	struct timespec tmo = { 0, TH_TMO_MS * 1000000L };
	struct kevent ch, ev;
	int nch = 0;

	th_start(sh);
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		int m = kevent(sh->fd, &ch, nch, &ev, 1, &tmo), i;

		nch = 0;
		if (m < 0) {
			if (errno == EINTR)
				continue;
			w->err = errno;
			break;
		}
		if (m == 1) {
			if (ev.flags & EV_ERROR) {
				w->errors++;
				w->err = (int)ev.data;
				break;
			}
			i = (int)(intptr_t)ev.udata;
			if (i == sh->p.n)
				break;		/* the stop pipe */
			if (ev.data < 1 || ev.data > TH_TOKENS)
				w->data_bad++;
			if (ev.data < w->dmin)
				w->dmin = (long)ev.data;
			if (ev.data > w->dmax)
				w->dmax = (long)ev.data;
			w->sink += ev.data;
			th_move(sh, w, i);
			if (sh->var == TV_DISPATCH) {
				EV_SET(&ch, sh->p.r[i], EVFILT_READ, EV_ENABLE,
				    0, 0, (void *)(intptr_t)i);
				nch = 1;
			}
		}
		if (atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
			if (nch && kevent(sh->fd, &ch, nch, NULL, 0, NULL) < 0)
				w->errors++;
			break;
		}
	}
	return NULL;
}

static uint32_t
th_epoll_events(int var)
{
	return var == TV_CLEAR ? EPOLLIN | EPOLLET : var == TV_DISPATCH ?
	    EPOLLIN | EPOLLONESHOT : EPOLLIN;
}

/* Raw epoll, and with bk == BK_EPOLL_DATA one FIONREAD per event. */
static void *
th_epoll(void *arg)
{
	struct th_worker *w = arg;
	struct th_shared *sh = w->sh;
	struct epoll_event ev, ee;
	int data = sh->bk == BK_EPOLL_DATA;

	th_start(sh);
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
		i = (int)ev.data.u32;
		if (i == sh->p.n)
			break;			/* the stop pipe */
		if (data) {
			int q;

			/* 0 is possible: another thread read it first. */
			if (ioctl(sh->p.r[i], FIONREAD, &q) != 0)
				w->errors++;
			else
				w->sink += q;
		}
		th_move(sh, w, i);
		if (sh->var == TV_DISPATCH) {
			ee.events = th_epoll_events(sh->var);
			ee.data.u64 = (uint64_t)i;
			if (epoll_ctl(sh->fd, EPOLL_CTL_MOD, sh->p.r[i],
			    &ee) < 0) {
				w->errors++;
				w->err = errno;
				break;
			}
		}
	}
	return NULL;
}

static int
th_register(struct th_shared *sh, int fd, int i, int var)
{
	if (sh->bk == BK_KQ) {
		static const unsigned short kflags[TV_COUNT] = { 0, EV_CLEAR,
		    EV_DISPATCH };
		struct kevent ch;

		EV_SET(&ch, fd, EVFILT_READ, EV_ADD | kflags[var], 0, 0,
		    (void *)(intptr_t)i);
		return kevent(sh->fd, &ch, 1, NULL, 0, NULL);
	} else {
		struct epoll_event ee = { .events = th_epoll_events(var) };

		ee.data.u64 = (uint64_t)i;
		return epoll_ctl(sh->fd, EPOLL_CTL_ADD, fd, &ee);
	}
}

static int
th_setup(struct th_shared *sh, int bk, int var)
{
	sh->bk = bk;
	sh->var = var;
	sh->fd = bk == BK_KQ ? kqueue() : epoll_create1(EPOLL_CLOEXEC);
	if (sh->fd < 0)
		return -1;
	for (int i = 0; i < sh->p.n; i++)
		if (th_register(sh, sh->p.r[i], i, var) < 0)
			return -1;
	/* The stop pipe is level-triggered in every variant. */
	if (th_register(sh, sh->stop_r, sh->p.n, TV_LEVEL) < 0)
		return -1;
	for (int k = 0; k < TH_TOKENS; k++) {
		unsigned char c = (unsigned char)k;

		if (write(sh->p.w[k * sh->p.n / TH_TOKENS], &c, 1) != 1)
			return -1;
	}
	return 0;
}

/*
 * Take every token out so the next run starts from the same state.
 * Returns the number of bytes found; *bad counts the tokens missing or
 * found more than once.
 */
static long
th_drain(struct th_shared *sh, long *bad)
{
	int seen[TH_TOKENS] = { 0 };
	unsigned char buf[64];
	long got = 0;
	ssize_t r;

	*bad = 0;
	for (int i = 0; i < sh->p.n; i++)
		while ((r = read(sh->p.r[i], buf, sizeof(buf))) > 0) {
			got += r;
			for (ssize_t k = 0; k < r; k++)
				if (buf[k] < TH_TOKENS)
					seen[buf[k]]++;
				else
					(*bad)++;
		}
	for (int k = 0; k < TH_TOKENS; k++)
		*bad += seen[k] != 1;
	while (read(sh->stop_r, buf, sizeof(buf)) > 0)
		;
	return got;
}

/* What one run measured, over the timed window. */
struct th_res {
	struct bench_sample s;	/* iters = moves */
	long	 events;
	long	 empty;
	long	 futex;		/* -1: not counted */
	long	 errors;
	long	 data_bad;
	long	 dmin, dmax;	/* kq: range of data seen */
};

/* One run; returns 0 or -1 (error text in why). */
static int
th_once(struct th_shared *sh, int bk, int var, int nthr, double secs,
    struct th_res *res, char *why, size_t whylen)
{
	static struct th_worker w[TH_MAXT];
	long tokens, bad, f0, f1;
	uint64_t c0;
	int rc = 0, created = 0;

	memset(res, 0, sizeof(*res));
	memset(w, 0, sizeof(w));
	if (th_setup(sh, bk, var) < 0) {
		snprintf(why, whylen, "%s setup: %s", bk_name(bk),
		    strerror(errno));
		if (sh->fd >= 0)
			close(sh->fd);
		sh->fd = -1;
		th_drain(sh, &tokens);
		return -1;
	}
	atomic_store(&sh->stop, 0);
	atomic_store(&sh->done, 0);
	pthread_rwlock_wrlock(&sh->go);
	res->dmin = LONG_MAX;
	res->dmax = LONG_MIN;
	for (int t = 0; t < nthr; t++) {
		w[t].sh = sh;
		w[t].dmin = LONG_MAX;
		w[t].dmax = LONG_MIN;
		if (pthread_create(&w[t].tid, NULL, bk == BK_KQ ? th_kq :
		    th_epoll, &w[t]) != 0) {
			rc = -1;
			snprintf(why, whylen, "pthread_create failed");
			atomic_store(&sh->stop, 1);
			break;
		}
		created++;
	}
	if (sh->baseline)
		atomic_store(&sh->stop, 1);
	/* The window: from the release of all threads to the stop. */
	f0 = th_perf_read();
	c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	res->s.wall_ns = clock_ns(CLOCK_MONOTONIC);
	pthread_rwlock_unlock(&sh->go);
	if (rc == 0 && sh->limit && !sh->baseline) {
		char c;

		/* One blocking read: no polling calls in the trace. */
		while (read(sh->done_r, &c, 1) < 0 && errno == EINTR)
			;
	} else if (rc == 0) {
		struct timespec d = { (time_t)secs,
		    (long)((secs - (double)(time_t)secs) * 1e9) };

		while (nanosleep(&d, &d) < 0 && errno == EINTR)
			;
	}
	res->s.wall_ns = clock_ns(CLOCK_MONOTONIC) - res->s.wall_ns;
	for (int t = 0; t < created; t++) {
		res->s.iters += atomic_load_explicit(&w[t].moves,
		    memory_order_relaxed);
		res->events += atomic_load_explicit(&w[t].events,
		    memory_order_relaxed);
		res->empty += atomic_load_explicit(&w[t].empty,
		    memory_order_relaxed);
	}
	f1 = th_perf_read();
	res->s.cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	res->futex = f0 >= 0 && f1 >= f0 ? f1 - f0 : -1;
	/* Stop: the flag for busy threads, the stop pipe for blocked ones. */
	atomic_store(&sh->stop, 1);
	if (write(sh->stop_w, "s", 1) != 1)
		res->errors++;
	for (int t = 0; t < created; t++)
		pthread_join(w[t].tid, NULL);
	for (int t = 0; t < created; t++) {
		res->errors += w[t].errors;
		res->data_bad += w[t].data_bad;
		if (w[t].dmin < res->dmin)
			res->dmin = w[t].dmin;
		if (w[t].dmax > res->dmax)
			res->dmax = w[t].dmax;
		if (w[t].err && !rc) {
			rc = -1;
			snprintf(why, whylen, "%s %s T=%d: %s", bk_name(bk),
			    tv_name[var], nthr, strerror(w[t].err));
		}
	}
	close(sh->fd);
	sh->fd = -1;
	tokens = th_drain(sh, &bad);
	if ((tokens != TH_TOKENS || bad) && !rc) {
		rc = -1;
		snprintf(why, whylen, "%s %s T=%d: %ld bytes left in the "
		    "ring, expected %d, %ld tokens missing or doubled",
		    bk_name(bk), tv_name[var], nthr, tokens, TH_TOKENS, bad);
	}
	if (res->s.iters == 0 && !sh->baseline && !rc) {
		rc = -1;
		snprintf(why, whylen, "%s %s T=%d: no token moved in %.3f s",
		    bk_name(bk), tv_name[var], nthr,
		    (double)res->s.wall_ns / 1e9);
	}
	return rc;
}

static int
th_open(struct th_shared *sh)
{
	int fds[2], dfds[2];

	memset(sh, 0, sizeof(*sh));
	sh->fd = -1;
	if (pthread_rwlock_init(&sh->go, NULL) != 0)
		return -1;
	if (fdpairs_open(&sh->p, TH_RING, 0, 0) < 0)
		return -1;
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
		fdpairs_close(&sh->p);
		return -1;
	}
	if (pipe2(dfds, O_CLOEXEC) < 0) {
		close(fds[0]);
		close(fds[1]);
		fdpairs_close(&sh->p);
		return -1;
	}
	sh->stop_r = fds[0];
	sh->stop_w = fds[1];
	sh->done_r = dfds[0];
	sh->done_w = dfds[1];
	return 0;
}

static void
th_close(struct th_shared *sh)
{
	fdpairs_close(&sh->p);
	close(sh->stop_r);
	close(sh->stop_w);
	close(sh->done_r);
	close(sh->done_w);
	pthread_rwlock_destroy(&sh->go);
}

/* Run order inside a repetition (as ring), and row order. */
static const int th_order[] = { BK_KQ, BK_EPOLL, BK_EPOLL_DATA };
#define TH_NBK	((int)(sizeof(th_order) / sizeof(th_order[0])))

static int
th_run(const struct bench_opts *o, struct bench_result *res)
{
	static const int nthreads[TH_NT] = { 1, 2, 4, TH_MAXT };
	struct bench_table *t = bt_new(res, "threads",
	    "threads: T threads share one kqueue (level, EV_CLEAR, "
	    "EV_DISPATCH) vs one epoll set, moves per second");
	/*
	 * Short runs: 12 configurations x 3 backends x reps.  Quick mode
	 * takes at least 9 repetitions of 0.2 s: with 2 to 8 threads on a
	 * few CPUs a single 0.08 s window varies by a third from one
	 * repetition to the next, too much for the median of the ratios to
	 * say whether kq is within 15 % of epoll.
	 */
	double secs = o->tiny ? o->run_secs : o->quick ? 0.2 : 0.5;
	int reps = o->quick && o->reps < 9 ? 9 : o->reps;
	long errors = 0, data_bad = 0, dmin = LONG_MAX, dmax = LONG_MIN;
	struct th_shared sh;
	char errs[512] = "";
	int failed = 0;

	th_perf_open();
	if (th_open(&sh) < 0) {
		progress("threads: pipes: %s\n", strerror(errno));
		return -1;
	}
	bt_cols(t, "threads|variant|backend|moves/wall-s|moves/CPU-s|"
	    "spread %|x epoll (wall)|x epoll+data (wall)|x epoll (CPU)|"
	    "x epoll+data (CPU)|futex/event|empty %|moves/event|data errors");
	/* Configurations: variant-major, T within each variant. */
	for (int cf = 0; cf < TV_COUNT * TH_NT; cf++) {
		static double cpu[BK_NALL][MAXREPS], wall[BK_NALL][MAXREPS],
		    fut[BK_NALL][MAXREPS];
		long ev[BK_NALL] = { 0 }, mv[BK_NALL] = { 0 },
		    emp[BK_NALL] = { 0 }, dbad[BK_NALL] = { 0 };
		int nrep[BK_NALL] = { 0 }, nfut[BK_NALL] = { 0 };
		int var = cf / TH_NT, nthr = nthreads[cf % TH_NT];

		for (int rep = 0; rep < reps; rep++) {
			progress("[threads] %s T=%d rep %d/%d\n", tv_name[var],
			    nthr, rep + 1, reps);
			for (int k = 0; k < TH_NBK; k++) {
				int bk = th_order[k];
				struct th_res r;
				char why[160];

				if (th_once(&sh, bk, var, nthr, secs, &r, why,
				    sizeof(why)) < 0) {
					progress("threads: %s\n", why);
					if (strlen(errs) < 300)
						snprintf(errs + strlen(errs),
						    sizeof(errs) - strlen(errs),
						    "%s. ", why);
					failed = 1;
				}
				errors += r.errors;
				dbad[bk] += r.data_bad;
				if (r.dmin < dmin)
					dmin = r.dmin;
				if (r.dmax > dmax)
					dmax = r.dmax;
				if (r.s.iters == 0)
					continue;
				cpu[bk][nrep[bk]] = per_cpu_sec(&r.s);
				wall[bk][nrep[bk]] = per_wall_sec(&r.s);
				nrep[bk]++;
				ev[bk] += r.events;
				mv[bk] += r.s.iters;
				emp[bk] += r.empty;
				if (r.futex >= 0 && r.events > 0)
					fut[bk][nfut[bk]++] = (double)r.futex /
					    (double)r.events;
			}
		}
		for (int k = 0; k < TH_NBK; k++) {
			struct bk_stats sc, sw, fc, fw;
			int bk = th_order[k], r = bt_row(t);

			bt_set(t, r, 0, "%d", nthr);
			bt_set(t, r, 1, "%s", tv_name[var]);
			bt_set(t, r, 2, "%s", bk_name(bk));
			if (nrep[bk] == 0) {
				bt_set(t, r, 3, "failed");
				continue;
			}
			bk_summarize_vs(cpu, wall, nrep, bk, BK_EPOLL, &sc, &sw);
			bk_summarize_vs(cpu, wall, nrep, bk, BK_EPOLL_DATA, &fc,
			    &fw);
			bt_num(t, r, 3, sw.med);
			bt_num(t, r, 4, sc.med);
			bt_set(t, r, 5, "%.1f", sw.spread);
			bt_set(t, r, 6, "%.2f", sw.ratio);
			bt_set(t, r, 8, "%.2f", sc.ratio);
			if (bk == BK_EPOLL) {
				bt_set(t, r, 7, "-");
				bt_set(t, r, 9, "-");
			} else {
				bt_set(t, r, 7, "%.2f", fw.ratio);
				bt_set(t, r, 9, "%.2f", fc.ratio);
			}
			if (nfut[bk])
				bt_set(t, r, 10, "%.3f", median(fut[bk],
				    nfut[bk]));
			else
				bt_set(t, r, 10, "-");
			bt_set(t, r, 11, "%.1f", ev[bk] ? 100.0 *
			    (double)emp[bk] / (double)ev[bk] : 0.0);
			bt_set(t, r, 12, "%.3f", ev[bk] ? (double)mv[bk] /
			    (double)ev[bk] : 0.0);
			if (bk == BK_KQ) {
				bt_set(t, r, 13, "%ld", dbad[bk]);
				data_bad += dbad[bk];
			} else
				bt_set(t, r, 13, "-");
		}
	}
	th_close(&sh);
	bt_note(t, "Ring of %d pipes carrying %d one-byte tokens, all read "
	    "ends in one kqueue or epoll set shared by T threads. Each thread "
	    "waits for one event (pipe i readable), reads up to %d bytes "
	    "(non-blocking), sends each byte it got on to that token's next "
	    "pipe (token k steps 2k+1 pipes, so tokens that meet part again) "
	    "and, in the dispatch variant, re-arms pipe i. A move is one "
	    "token read and forwarded; after each run every token must be "
	    "in the ring exactly once. Variants: level (kq EV_ADD / epoll EPOLLIN), "
	    "clear (EV_CLEAR / EPOLLET), dispatch (EV_DISPATCH re-armed by "
	    "EV_ENABLE in the next kevent() call's changelist / EPOLLONESHOT "
	    "re-armed by EPOLL_CTL_MOD). epoll+data is raw epoll plus one "
	    "ioctl(FIONREAD) per event, the byte count kq reports in `data`: "
	    "the floor for kq.\n\n", TH_RING, TH_TOKENS, TH_BUF);
	bt_note(t, "Throughput: higher is better. `x epoll` and `x epoll+data` "
	    "are the backend's rate / that backend's rate in the same "
	    "repetition, median of the ratios; wall rates are the ones that "
	    "can grow with T (CPU time counts all threads; this machine has "
	    "%ld online CPUs). `spread %%` is of the wall rate. %d "
	    "repetitions of %.2f s per backend, interleaved in row order; "
	    "the window opens when all T threads are released and closes "
	    "before they are stopped.\n\n", sysconf(_SC_NPROCESSORS_ONLN),
	    reps, secs);
	if (th_pfd >= 0)
		bt_note(t, "`futex/event`: futex system calls made by the "
		    "process in the window (perf counter on the tracepoint "
		    "syscalls:sys_enter_futex, inherited by the threads; no "
		    "tracer), divided by the events returned by the waits, "
		    "median over the repetitions. The issue's target for kq: "
		    "at most 1.2. ");
	else
		bt_note(t, "`futex/event`: not counted (%s); the syscalls "
		    "scenario has futex calls per move from strace. ",
		    th_pwhy);
	bt_note(t, "`empty %%`: events whose read found the pipe already "
	    "emptied by another thread (level-triggered: several threads "
	    "can be handed the same ready pipe). `moves/event` > 1: "
	    "several tokens in one pipe moved by one event. `data errors`: "
	    "kq events whose `data` was not 1..%d. Failed reads/writes/"
	    "re-arms: %ld; kq data errors: %ld", TH_TOKENS, errors, data_bad);
	if (dmin <= dmax)
		bt_note(t, " (kq data seen: %ld..%ld)", dmin, dmax);
	bt_note(t, ".\n");
	if (errs[0])
		bt_note(t, "\nErrors: %s\n", errs);
	return failed ? -1 : 0;
}

/*
 * `kqbench --threads-fixed BACKEND T MOVES [VARIANT]`: T threads move
 * MOVES tokens (a few more, as they stop) and stop.  BACKEND is kq, epoll
 * or epoll+data; VARIANT level, clear or dispatch (default).
 */
static int
th_fixed(int argc, char **argv)
{
	struct th_shared sh;
	struct th_res r;
	char why[160] = "";
	int bk, nthr, var = TV_DISPATCH;

	if (argc < 3 || argc > 4 || ((bk = bk_parse_all(argv[0])) != BK_KQ &&
	    bk != BK_EPOLL && bk != BK_EPOLL_DATA) ||
	    (nthr = atoi(argv[1])) < 1 || nthr > TH_MAXT ||
	    (argc == 4 && (var = tv_parse(argv[3])) < 0)) {
		fprintf(stderr, "usage: kqbench --threads-fixed "
		    "kq|epoll|epoll+data T MOVES [level|clear|dispatch]\n");
		return 2;
	}
	th_perf_open();
	if (th_open(&sh) < 0) {
		perror("threads: pipes");
		return 1;
	}
	/* 0 moves: the same set-up and tear-down, for strace to subtract. */
	sh.limit = atol(argv[2]);
	sh.baseline = sh.limit <= 0;
	if (sh.baseline)
		sh.limit = 1;
	memset(&r, 0, sizeof(r));
	if (th_once(&sh, bk, var, nthr, 0.0, &r, why, sizeof(why)) < 0) {
		fprintf(stderr, "threads: %s\n", why);
		return 1;
	}
	th_close(&sh);
	printf("%s threads=%d variant=%s moves=%ld events=%ld empty=%ld "
	    "futex=%ld errors=%ld data_errors=%ld\n", bk_name(bk), nthr,
	    tv_name[var], r.s.iters, r.events, r.empty, r.futex, r.errors,
	    r.data_bad);
	if (bk == BK_KQ && r.dmin <= r.dmax)
		printf("kq data seen: %ld..%ld\n", r.dmin, r.dmax);
	return r.errors ? 1 : 0;
}

const struct bench_scenario bench_threads = {
	.name = "threads",
	.title = "1-8 threads on one kqueue, level/EV_CLEAR/EV_DISPATCH, "
	    "moves/s",
	.run = th_run,
	.fixed = th_fixed,
};
