/*
 * bench-syscalls.c -- system calls per ring iteration, kq against raw epoll.
 *
 * kqbench re-executes itself under `strace -f -c` with the hidden option
 * `--ring-fixed BACKEND N ITERS` (bench-ring.c), which runs the ring for
 * exactly ITERS iterations.  Each configuration is traced twice, with 0 and
 * with ITERS iterations; the difference of the per-syscall counts divided
 * by ITERS is the cost of one iteration with set-up and tear-down removed.
 *
 * Raw epoll needs 3 calls per iteration (epoll_wait, epoll_ctl, and a read
 * or a write).  kq emulated over epoll cannot do better than that, because
 * kevent()'s change-and-wait in one call becomes epoll_ctl + epoll_wait;
 * and since it must also report each event's byte count in `data`, which
 * costs one ioctl(FIONREAD) per event on Linux, its real floor is
 * epoll+data's 4 (traced too, for the ring, allready and threads
 * workloads).
 * Anything above that is the library's own overhead.
 */
#include "bench.h"

#include <sys/stat.h>
#include <sys/wait.h>

#define SC_MAX		160

struct sc_count {
	char	name[32];
	long	calls;
	long	errors;
};

struct sc_list {
	int	n;
	struct sc_count c[SC_MAX];
};

static struct sc_count *
sc_find(struct sc_list *l, const char *name, int create)
{
	for (int i = 0; i < l->n; i++)
		if (strcmp(l->c[i].name, name) == 0)
			return &l->c[i];
	if (!create || l->n >= SC_MAX)
		return NULL;
	memset(&l->c[l->n], 0, sizeof(l->c[0]));
	snprintf(l->c[l->n].name, sizeof(l->c[0].name), "%s", name);
	return &l->c[l->n++];
}

/*
 * Parse a `strace -c` summary.  With `-U name,calls,errors` a row is
 * "name calls [errors]"; the classic layout is "% seconds usecs/call calls
 * [errors] name".  Separator lines and the total row are skipped.
 */
static int
sc_parse(const char *path, struct sc_list *l)
{
	char line[512], *tok[8];
	int classic = 0;
	FILE *f;

	memset(l, 0, sizeof(*l));
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct sc_count *c;
		int nt = 0;

		for (char *s = strtok(line, " \t\n"); s && nt < 8;
		    s = strtok(NULL, " \t\n"))
			tok[nt++] = s;
		if (nt == 0 || tok[0][0] == '-')
			continue;
		if (strcmp(tok[0], "%") == 0) {
			classic = 1;
			continue;
		}
		if (strcmp(tok[0], "syscall") == 0)
			continue;
		if (classic) {
			if (nt < 5 || strcmp(tok[nt - 1], "total") == 0)
				continue;
			if ((c = sc_find(l, tok[nt - 1], 1))) {
				c->calls += atol(tok[3]);
				c->errors += nt >= 6 ? atol(tok[4]) : 0;
			}
		} else {
			if (nt < 2 || strcmp(tok[0], "total") == 0)
				continue;
			if ((c = sc_find(l, tok[0], 1))) {
				c->calls += atol(tok[1]);
				c->errors += nt >= 3 ? atol(tok[2]) : 0;
			}
		}
	}
	fclose(f);
	return 0;
}

/* One traced workload: `kqbench --<scen>-fixed BACKEND n iters [arg]`. */
struct sc_work {
	const char *scen;	/* a scenario with a `fixed` entry point */
	int	 n;		/* its size argument */
	const char *unit;	/* what one of `iters` is */
	long	 iters;		/* units traced in quick mode */
	int	 data;		/* also trace epoll+data */
	const char *arg;	/* a last argument (threads: variant), or NULL */
};

/* The workload's name in tables and files: scen, or scen/arg. */
static const char *
sc_label(const struct sc_work *w)
{
	static char buf[64];

	if (w->arg == NULL)
		return w->scen;
	snprintf(buf, sizeof(buf), "%s/%s", w->scen, w->arg);
	return buf;
}

/*
 * Run `strace -f -c [-U ...] -o trace self --<scen>-fixed bk n iters`,
 * child output into `outf`.  Returns the exit status (127: no strace).
 */
static int
sc_exec(const struct bench_opts *o, int columns, const char *trace,
    const char *outf, const struct sc_work *w, const char *bk, long iters)
{
	char ns[32], is[32], opt[64];
	const char *argv[16];
	int k = 0, st;
	pid_t pid;

	snprintf(ns, sizeof(ns), "%d", w->n);
	snprintf(is, sizeof(is), "%ld", iters);
	snprintf(opt, sizeof(opt), "--%s-fixed", w->scen);
	argv[k++] = "strace";
	argv[k++] = "-f";
	argv[k++] = "-c";
	if (columns) {
		argv[k++] = "-U";
		argv[k++] = "name,calls,errors";
	}
	argv[k++] = "-o";
	argv[k++] = trace;
	argv[k++] = o->self;
	argv[k++] = opt;
	argv[k++] = bk;
	argv[k++] = ns;
	argv[k++] = is;
	if (w->arg)
		argv[k++] = w->arg;
	argv[k] = NULL;
	fflush(NULL);
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		int fd = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0666);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execvp("strace", (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Trace one configuration; fills l.  Returns 0, or -1 with a message. */
static int
sc_trace(const struct bench_opts *o, const struct sc_work *w, const char *bk,
    long iters, struct sc_list *l, char *msg, size_t msglen)
{
	static int columns = 1;
	char trace[4096], outf[4096];
	int rc;

	snprintf(trace, sizeof(trace), "%s/strace/%s%s%s-%s-%d-%ld.txt",
	    o->outdir, w->scen, w->arg ? "-" : "", w->arg ? w->arg : "", bk,
	    w->n, iters);
	snprintf(outf, sizeof(outf), "%s/strace/%s%s%s-%s-%d-%ld.out",
	    o->outdir, w->scen, w->arg ? "-" : "", w->arg ? w->arg : "", bk,
	    w->n, iters);
	rc = sc_exec(o, columns, trace, outf, w, bk, iters);
	if (rc != 0 && rc != 127 && columns) {
		/* Older strace without -U: use the classic layout. */
		columns = 0;
		rc = sc_exec(o, columns, trace, outf, w, bk, iters);
	}
	if (rc != 0) {
		snprintf(msg, msglen, rc == 127 ? "strace not found" :
		    "strace/%s-fixed exited with %d (see %.180s)", w->scen, rc,
		    outf);
		return -1;
	}
	if (sc_parse(trace, l) < 0 || l->n == 0) {
		snprintf(msg, msglen, "cannot parse %.200s", trace);
		return -1;
	}
	return 0;
}

static int
sc_cmp(const void *a, const void *b)
{
	const struct sc_count *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Per-unit counts of one backend: traced(iters) - traced(0), sorted. */
static int
sc_measure(const struct bench_opts *o, const struct sc_work *w,
    const char *bk, long iters, struct sc_list *run, char *msg, size_t ml)
{
	static struct sc_list base;

	progress("[syscalls] %s n=%d %s: strace, 0 and %ld %ss\n",
	    sc_label(w), w->n, bk, iters, w->unit);
	if (sc_trace(o, w, bk, 0, &base, msg, ml) < 0 ||
	    sc_trace(o, w, bk, iters, run, msg, ml) < 0)
		return -1;
	for (int i = 0; i < base.n; i++) {
		struct sc_count *c = sc_find(run, base.c[i].name, 1);

		if (c) {
			c->calls -= base.c[i].calls;
			c->errors -= base.c[i].errors;
		}
	}
	qsort(run->c, (size_t)run->n, sizeof(run->c[0]), sc_cmp);
	return 0;
}

static void __attribute__((format(printf, 3, 4)))
sc_cat(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

/* Append which system calls kq makes more (or fewer) of than `epname`. */
static void
sc_note_diff(char *buf, size_t len, const struct sc_work *w,
    const struct sc_list *kq, const struct sc_list *ep, const char *epname,
    long iters)
{
	int any = 0;

	sc_cat(buf, len, "- %s n=%d, kq - %s per %s:", sc_label(w), w->n,
	    epname, w->unit);
	for (int pass = 0; pass < 2; pass++) {
		const struct sc_list *a = pass ? ep : kq;
		const struct sc_list *b = pass ? kq : ep;

		for (int i = 0; i < a->n; i++) {
			const struct sc_count *c = NULL;
			double d;

			for (int j = 0; j < b->n; j++)
				if (strcmp(b->c[j].name, a->c[i].name) == 0)
					c = &b->c[j];
			if (pass && c)
				continue;	/* done in the first pass */
			d = (double)(a->c[i].calls - (c ? c->calls : 0)) /
			    iters;
			if (pass)
				d = -d;
			if (d < 0.005 && d > -0.005)
				continue;
			sc_cat(buf, len, "%s %s %+.2f", any ? "," : "",
			    a->c[i].name, d);
			any = 1;
		}
	}
	sc_cat(buf, len, "%s\n", any ? "" : " none");
}

static int
sc_run(const struct bench_opts *o, struct bench_result *res)
{
	static const struct sc_work works[] = {
		{ "ring", 8, "iteration", 10000, 1, NULL },
		{ "ring", 1000, "iteration", 10000, 1, NULL },
		{ "idle", 1000, "call", 10000, 0, NULL },
		{ "allready", 1000, "call", 50, 1, NULL },
		{ "ops", 1000, "change", 8000, 0, NULL },
		{ "chain", 100, "run", 10, 0, NULL },
		{ "chain", 1000, "run", 10, 0, NULL },
		{ "threads", 2, "move", 3000, 1, "level" },
		{ "threads", 2, "move", 3000, 1, "clear" },
		{ "threads", 2, "move", 3000, 1, "dispatch" },
		{ "create", 0, "pair", 5000, 0, NULL },
	};
	/* epoll+data last: it is traced only for works with `data`. */
	static const int bks[] = { BK_KQ, BK_EPOLL, BK_EPOLL_DATA };
	static struct sc_list lists[3];
	struct bench_table *t = bt_new(res, "syscalls",
	    "syscalls: system calls per unit of work, kq vs epoll (strace -f -c)");
	struct bench_table *b = bt_new(res, "syscalls-breakdown",
	    "syscalls-breakdown: calls per unit of work by system call");
	char dir[4096], msg[256] = "", diffs[3072] = "";
	int failed = 0;

	bt_cols(t, "workload|n|backend|units|syscalls/unit|x epoll|"
	    "errors/unit|main calls per unit");
	bt_cols(b, "workload|n|backend|syscall|calls/unit|errors/unit");
	snprintf(dir, sizeof(dir), "%s/strace", o->outdir);
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		progress("syscalls: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (size_t wi = 0; wi < sizeof(works) / sizeof(works[0]); wi++) {
		const struct sc_work *w = &works[wi];
		/* ops: whole rounds of 4 changes on each of the n pipes. */
		long iters = o->tiny ? (w->iters / 20 > 0 ? w->iters / 20 : 1) :
		    o->quick ? w->iters : w->iters * 5;
		double per[3] = { 0, 0, 0 };
		int ok[3] = { 0, 0, 0 };

		if (strcmp(w->scen, "ops") == 0 && iters < 4L * w->n)
			iters = 4L * w->n;
		for (size_t bi = 0; bi < sizeof(bks) / sizeof(bks[0]); bi++) {
			const char *bk = bk_name(bks[bi]);
			struct sc_list *run = &lists[bi];
			char summary[BT_CELL] = "";
			long tot = 0, errs = 0;
			int r;

			if (bks[bi] == BK_EPOLL_DATA && !w->data)
				continue;
			if (sc_measure(o, w, bk, iters, run, msg,
			    sizeof(msg)) < 0) {
				progress("syscalls: %s\n", msg);
				bt_note(t, "%s n=%d %s: %s. ", sc_label(w), w->n,
				    bk, msg);
				failed = 1;
				continue;
			}
			ok[bi] = 1;
			for (int i = 0; i < run->n; i++) {
				double cpi = (double)run->c[i].calls / iters;
				double epi = (double)run->c[i].errors / iters;
				size_t sl = strlen(summary);

				tot += run->c[i].calls;
				errs += run->c[i].errors;
				if (cpi < 0.0005 && cpi > -0.0005)
					continue;
				r = bt_row(b);
				bt_set(b, r, 0, "%s", sc_label(w));
				bt_set(b, r, 1, "%d", w->n);
				bt_set(b, r, 2, "%s", bk);
				bt_set(b, r, 3, "%s", run->c[i].name);
				bt_set(b, r, 4, "%.3f", cpi);
				bt_set(b, r, 5, "%.3f", epi);
				if (cpi >= 0.05 && sl + 24 < sizeof(summary))
					snprintf(summary + sl,
					    sizeof(summary) - sl, "%s%s %.2f",
					    sl ? ", " : "", run->c[i].name, cpi);
			}
			per[bi] = (double)tot / iters;
			r = bt_row(t);
			bt_set(t, r, 0, "%s", sc_label(w));
			bt_set(t, r, 1, "%d", w->n);
			bt_set(t, r, 2, "%s", bk);
			bt_set(t, r, 3, "%ld %ss", iters, w->unit);
			bt_set(t, r, 4, "%.3f", per[bi]);
			bt_set(t, r, 5, "%s", "-");
			bt_set(t, r, 6, "%.3f", (double)errs / iters);
			bt_set(t, r, 7, "%s", summary);
			if (bi == 1 && ok[0] && per[1] > 0.0) {
				/* Fill kq's ratio now that epoll is known. */
				bt_set(t, r - 1, 5, "%.2f", per[0] / per[1]);
				bt_set(t, r, 5, "1.00");
			}
			if (bi == 2 && ok[1] && per[1] > 0.0)
				bt_set(t, r, 5, "%.2f", per[2] / per[1]);
		}
		if (ok[0] && ok[1])
			sc_note_diff(diffs, sizeof(diffs), w, &lists[0],
			    &lists[1], "epoll", iters);
		if (ok[0] && ok[2])
			sc_note_diff(diffs, sizeof(diffs), w, &lists[0],
			    &lists[2], "epoll+data", iters);
	}
	bt_note(t, "Cost: lower is better; `x epoll` = kq's (or "
	    "epoll+data's) system calls per unit / raw epoll's. epoll+data "
	    "(ring, allready, threads) is raw epoll plus one ioctl(FIONREAD) per "
	    "event, the byte count kq must report in `data`. Units: a ring "
	    "iteration (one wait, one read "
	    "or write, one re-arm); one zero-timeout wait over n idle "
	    "descriptors (idle) or returning all n ready ones (allready); one "
	    "registration change, EV_ADD/DISABLE/ENABLE/DELETE against the "
	    "matching epoll_ctl (ops, n pipes); one chain run of 1000 writes "
	    "with a = 1 (chain, n socketpairs); one token moved by n threads "
	    "sharing one kqueue or epoll set, level-triggered, EV_CLEAR/"
	    "EPOLLET or EV_DISPATCH/EPOLLONESHOT (threads/VARIANT; futex "
	    "calls are lock contention and wake-ups, and the tracer, which "
	    "slows every call, multiplies them: the threads scenario counts "
	    "them without one); one "
	    "kqueue()+close() against epoll_create1()+close() (create). "
	    "Counts are (traced run with K units) - (traced run "
	    "with 0 units), divided by K, so set-up and tear-down cancel. "
	    "Raw epoll needs 3 calls per ring iteration (epoll_wait, "
	    "epoll_ctl, read or write); epoll+data needs 4, and so does any "
	    "kq over epoll that reports exact data: that is its floor. "
	    "Raw strace output: %s/.\n\nDifferences, kq - epoll and kq - "
	    "epoll+data (positive = kq makes more):\n\n%s", dir, diffs);
	bt_note(b, "Rows with |calls/unit| < 0.0005 are left out. Errors are "
	    "calls that failed (e.g. EAGAIN).\n");
	return failed ? -1 : 0;
}

const struct bench_scenario bench_syscalls = {
	.name = "syscalls",
	.title = "system calls per unit of work of each scenario, strace",
	.run = sc_run,
};
