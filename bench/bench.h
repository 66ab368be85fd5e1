/*
 * bench.h -- shared pieces of kqbench: options, clocks, the median, result
 * tables and the scenario registry.
 *
 * A scenario is one file that exports exactly one `const struct
 * bench_scenario`; everything else in it is static.  A scenario measures
 * and fills result tables; the driver (kqbench.c) prints them, writes one
 * TSV file per table and the Markdown report.  Helpers shared by several
 * scenarios are `static inline` here so that no other symbol crosses a file
 * boundary.
 */
#ifndef KQBENCH_BENCH_H
#define KQBENCH_BENCH_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Options the driver hands to every scenario. */
struct bench_opts {
	int	 quick;		/* --quick: short runs */
	int	 tiny;		/* --tiny: smallest size once (smoke test) */
	int	 reps;		/* repetitions per measurement (>= 5) */
	double	 run_secs;	/* duration of one timed run of a throughput loop */
	double	 call_secs;	/* duration of one timed run of a cost loop */
	long	 nofile;	/* RLIMIT_NOFILE soft limit obtained */
	const char *outdir;	/* where TSV files and report.md go */
	const char *self;	/* path of this executable, for re-execution */
};

/*
 * Backends, in the order they run inside each repetition.  Scenarios loop
 * over the first BK_COUNT.  BK_EPOLL_DATA is raw epoll plus, for every
 * event, the system call that learns the byte count kq must report in
 * `data` (one ioctl(FIONREAD)): the floor for exact data on Linux.  Only
 * the scenarios that name it run it (ring and allready, right after epoll);
 * arrays indexed by any backend have BK_NALL entries.
 */
enum bench_backend { BK_KQ, BK_EPOLL, BK_POLL, BK_SELECT, BK_COUNT,
	BK_EPOLL_DATA = BK_COUNT, BK_NALL };

static inline const char *
bk_name(int bk)
{
	switch (bk) {
	case BK_KQ:		return "kq";
	case BK_EPOLL:		return "epoll";
	case BK_POLL:		return "poll";
	case BK_SELECT:		return "select";
	case BK_EPOLL_DATA:	return "epoll+data";
	}
	return "?";
}

/* One of the first BK_COUNT backends by name, or -1. */
static inline int
bk_parse(const char *s)
{
	for (int bk = 0; bk < BK_COUNT; bk++)
		if (strcmp(s, bk_name(bk)) == 0)
			return bk;
	return -1;
}

/* Any backend by name, epoll+data included, or -1. */
static inline int
bk_parse_all(const char *s)
{
	for (int bk = 0; bk < BK_NALL; bk++)
		if (strcmp(s, bk_name(bk)) == 0)
			return bk;
	return -1;
}

/* ---- clocks ------------------------------------------------------------ */

static inline uint64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * A sample is wall and CPU time of the whole process (all threads, user +
 * system).  The CPU clock costs a system call; the monotonic clock is read
 * through the vDSO and is cheap enough to poll inside loops.
 */
struct bench_sample {
	uint64_t wall_ns;
	uint64_t cpu_ns;
	long	 iters;		/* work items done in the sample */
};

static inline void
sample_start(struct bench_sample *s)
{
	s->cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	s->wall_ns = clock_ns(CLOCK_MONOTONIC);
	s->iters = 0;
}

static inline void
sample_stop(struct bench_sample *s)
{
	s->wall_ns = clock_ns(CLOCK_MONOTONIC) - s->wall_ns;
	s->cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - s->cpu_ns;
}

/* Work per CPU-second and per wall-second; CPU-ns and wall-ns per item. */
static inline double
per_cpu_sec(const struct bench_sample *s)
{
	return s->cpu_ns ? (double)s->iters * 1e9 / (double)s->cpu_ns : 0.0;
}

static inline double
per_wall_sec(const struct bench_sample *s)
{
	return s->wall_ns ? (double)s->iters * 1e9 / (double)s->wall_ns : 0.0;
}

static inline double
cpu_ns_per(const struct bench_sample *s)
{
	return s->iters ? (double)s->cpu_ns / (double)s->iters : 0.0;
}

static inline double
wall_ns_per(const struct bench_sample *s)
{
	return s->iters ? (double)s->wall_ns / (double)s->iters : 0.0;
}

/*
 * Call fn(arg, batch) repeatedly until `secs` of wall time have passed and
 * record the total in *s.  The batch grows until one batch takes about a
 * twentieth of the run, so the clocks are read rarely and the run overshoots
 * by at most ~5%.  fn returns 0, or -1 to abort (the caller reports why).
 */
typedef int (*bench_loop_fn)(void *arg, long iters);

static inline int
bench_timed(double secs, bench_loop_fn fn, void *arg, struct bench_sample *s)
{
	uint64_t limit = (uint64_t)(secs * 1e9), step = limit / 20, t0, t1;
	long batch = 1, total = 0;

	sample_start(s);
	t0 = s->wall_ns;
	for (;;) {
		uint64_t b0 = clock_ns(CLOCK_MONOTONIC);

		if (fn(arg, batch) < 0)
			return -1;
		total += batch;
		t1 = clock_ns(CLOCK_MONOTONIC);
		if (t1 - t0 >= limit)
			break;
		if (t1 - b0 < step && batch < (1L << 40))
			batch *= 2;
	}
	sample_stop(s);
	s->iters = total;
	return 0;
}

/* ---- statistics ---------------------------------------------------------- */

static inline int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of v[0..n-1]; v is sorted in place.  0 when n == 0. */
static inline double
median(double *v, int n)
{
	if (n <= 0)
		return 0.0;
	qsort(v, (size_t)n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* Spread (max - min) / median in percent; v must be sorted (see median()). */
static inline double
spread_pct(const double *v, int n, double med)
{
	return n > 0 && med != 0.0 ? 100.0 * (v[n - 1] - v[0]) / med : 0.0;
}

/* ---- result tables ----------------------------------------------------- */

#define BT_MAXCOLS	16
#define BT_MAXROWS	160
#define BT_CELL		64
#define BT_MAXTABLES	4

/*
 * One result table: printed to stdout, written as <outdir>/<name>.tsv and
 * as a Markdown table in report.md with `notes` below it.  Cells are text;
 * numbers are formatted without thousands separators so the TSV parses.
 */
struct bench_table {
	char	name[32];
	char	title[128];
	char	notes[4096];
	int	ncols;
	int	nrows;
	char	cols[BT_MAXCOLS][BT_CELL];
	char	cell[BT_MAXROWS][BT_MAXCOLS][BT_CELL];
};

struct bench_result {
	int		   ntables;
	struct bench_table table[BT_MAXTABLES];
};

static inline struct bench_table *
bt_new(struct bench_result *res, const char *name, const char *title)
{
	struct bench_table *t;

	if (res->ntables >= BT_MAXTABLES)
		abort();
	t = &res->table[res->ntables++];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	snprintf(t->title, sizeof(t->title), "%s", title);
	return t;
}

/* Columns are given as one '|'-separated string: "n|backend|iter/CPU-s". */
static inline void
bt_cols(struct bench_table *t, const char *spec)
{
	const char *p = spec;

	t->ncols = 0;
	while (*p && t->ncols < BT_MAXCOLS) {
		const char *e = strchr(p, '|');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len >= BT_CELL)
			len = BT_CELL - 1;
		memcpy(t->cols[t->ncols], p, len);
		t->cols[t->ncols][len] = '\0';
		t->ncols++;
		p += len;
		if (*p == '|')
			p++;
		if (!e)
			break;
	}
}

/* Start a row; returns its index, or -1 when the table is full. */
static inline int
bt_row(struct bench_table *t)
{
	if (t->nrows >= BT_MAXROWS)
		return -1;
	return t->nrows++;
}

static inline void __attribute__((format(printf, 4, 5)))
bt_set(struct bench_table *t, int row, int col, const char *fmt, ...)
{
	va_list ap;

	if (row < 0 || col < 0 || col >= t->ncols)
		return;
	va_start(ap, fmt);
	vsnprintf(t->cell[row][col], BT_CELL, fmt, ap);
	va_end(ap);
}

static inline void __attribute__((format(printf, 2, 3)))
bt_note(struct bench_table *t, const char *fmt, ...)
{
	size_t len = strlen(t->notes);
	va_list ap;

	if (len + 1 >= sizeof(t->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(t->notes + len, sizeof(t->notes) - len, fmt, ap);
	va_end(ap);
}

/* A number with about four significant digits and no exponent. */
static inline void
bt_num(struct bench_table *t, int row, int col, double v)
{
	double a = v < 0 ? -v : v;

	if (a >= 1000.0)
		bt_set(t, row, col, "%.0f", v);
	else if (a >= 100.0)
		bt_set(t, row, col, "%.1f", v);
	else if (a >= 10.0)
		bt_set(t, row, col, "%.2f", v);
	else
		bt_set(t, row, col, "%.3f", v);
}

/* ---- descriptors --------------------------------------------------------- */

/*
 * Pairs of descriptors: pipes (r = read end, w = write end) or AF_UNIX
 * stream socketpairs (both ends readable and writable).  All are
 * non-blocking and close-on-exec.
 */
struct fdpairs {
	int	 n;
	int	*r;
	int	*w;
	int	 maxfd;
};

static inline void
fdpairs_close(struct fdpairs *p)
{
	for (int i = 0; i < p->n; i++) {
		if (p->r[i] >= 0)
			close(p->r[i]);
		if (p->w[i] >= 0)
			close(p->w[i]);
	}
	free(p->r);
	free(p->w);
	memset(p, 0, sizeof(*p));
}

/*
 * Open n pipes (sock == 0) or socketpairs (sock != 0).  When hi_base > 0
 * the w ends are moved to descriptor numbers >= hi_base so that the r ends
 * stay dense and low (select() needs every descriptor < FD_SETSIZE).
 * Returns 0, or -1 with errno set and nothing left open.
 */
static inline int
fdpairs_open(struct fdpairs *p, int n, int sock, int hi_base)
{
	p->n = 0;
	p->maxfd = -1;
	p->r = malloc(sizeof(int) * (size_t)(n ? n : 1));
	p->w = malloc(sizeof(int) * (size_t)(n ? n : 1));
	if (!p->r || !p->w) {
		free(p->r);
		free(p->w);
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int fds[2], rc;

		if (sock)
			rc = socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
			    SOCK_CLOEXEC, 0, fds);
		else
			rc = pipe2(fds, O_NONBLOCK | O_CLOEXEC);
		if (rc < 0)
			goto fail;
		if (hi_base > 0) {
			int hi = fcntl(fds[1], F_DUPFD_CLOEXEC, hi_base);

			if (hi < 0) {
				close(fds[0]);
				close(fds[1]);
				goto fail;
			}
			close(fds[1]);
			fds[1] = hi;
		}
		p->r[i] = fds[0];
		p->w[i] = fds[1];
		p->n = i + 1;
		if (fds[0] > p->maxfd)
			p->maxfd = fds[0];
		if (fds[1] > p->maxfd)
			p->maxfd = fds[1];
	}
	return 0;
fail:
	{
		int e = errno;

		fdpairs_close(p);
		errno = e;
	}
	return -1;
}

/* ---- repetitions ---------------------------------------------------------- */

#define MAXREPS		101

/*
 * Summary of one backend over the repetitions of one measurement: median
 * and spread of its own values, and the median over repetitions of the
 * per-repetition ratio v[i] / ref[i] (ref = raw epoll measured in the same
 * repetition, so slow drifts of the machine cancel).
 */
struct bk_stats {
	double	med;
	double	spread;		/* (max - min) / median, percent */
	double	ratio;		/* median of v[i] / ref[i]; 0 without ref */
};

static inline void
bk_summarize(const double *v, const double *ref, int n, struct bk_stats *st)
{
	double a[MAXREPS], r[MAXREPS];
	int nr = 0;

	if (n > MAXREPS)
		n = MAXREPS;
	for (int i = 0; i < n; i++) {
		a[i] = v[i];
		if (ref && ref[i] > 0.0)
			r[nr++] = v[i] / ref[i];
	}
	st->med = median(a, n);
	st->spread = spread_pct(a, n, st->med);
	st->ratio = nr ? median(r, nr) : 0.0;
}

/*
 * Summarize backend bk's CPU and wall samples, with ratios to backend
 * ref's when both ran the same repetitions (ratios pair repetitions).
 */
static inline void
bk_summarize_vs(double cpu[][MAXREPS], double wall[][MAXREPS],
    const int *nrep, int bk, int ref, struct bk_stats *c, struct bk_stats *w)
{
	int same = nrep[ref] == nrep[bk];

	bk_summarize(cpu[bk], same ? cpu[ref] : NULL, nrep[bk], c);
	bk_summarize(wall[bk], same ? wall[ref] : NULL, nrep[bk], w);
}

/* ---- progress -------------------------------------------------------------- */

static inline void __attribute__((format(printf, 1, 2)))
progress(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

/* ---- the scenario registry --------------------------------------------------- */

struct bench_scenario {
	const char *name;	/* --scenario NAME; also the TSV file stem */
	const char *title;	/* one line for --list and the report */
	/* Measure; fill res.  Returns 0, or -1 after printing why. */
	int	  (*run)(const struct bench_opts *o, struct bench_result *res);
	/*
	 * Optional hidden entry point used for re-execution of kqbench under
	 * a tracer (see syscalls): args are the words after the option.
	 */
	int	  (*fixed)(int argc, char **argv);
	/*
	 * Optional: run by the driver before the scenario's child, with no
	 * time limit of the driver's (it bounds itself): fetch or build what
	 * the scenario needs.  Returns 0, or -1 after printing why.
	 */
	int	  (*prepare)(const struct bench_opts *o);
	/* Time limits of the scenario's child in seconds; 0: the default. */
	unsigned  limit_quick, limit_full;
};

extern const struct bench_scenario bench_ring;
extern const struct bench_scenario bench_ops;
extern const struct bench_scenario bench_idle;
extern const struct bench_scenario bench_allready;
extern const struct bench_scenario bench_paper;
extern const struct bench_scenario bench_create;
extern const struct bench_scenario bench_memory;
extern const struct bench_scenario bench_syscalls;
extern const struct bench_scenario bench_chain;
extern const struct bench_scenario bench_prefork;
extern const struct bench_scenario bench_threads;
extern const struct bench_scenario bench_timers;
extern const struct bench_scenario bench_httpd;
extern const struct bench_scenario bench_wake;

/* headline.c: the headline table, built from the scenarios' tables. */
void headline_take(const struct bench_table *t);
void headline_write(FILE *md, FILE *txt);

/* clients.c: libevent's test/bench, nginx's and Redis's requests/s figures, when
 * tests/clients wrote them. */
int clients_table(const char *outdir, struct bench_table *t);
int clients_nginx_table(const char *outdir, struct bench_table *t);
int clients_seed003_table(const char *outdir, struct bench_table *t);
int clients_redis_table(const char *outdir, struct bench_table *t);

/* plots.c: gnuplot SVGs of the TSVs in outdir, linked from report.md. */
void bench_plots(const char *outdir, FILE *md);

#endif /* !KQBENCH_BENCH_H */
