/*
 * headline.c -- the report's headline table: one row per scenario and
 * size, with kq's, poll()'s and select()'s figure as a ratio to raw epoll
 * measured in the same run, and the system calls per unit of work of kq
 * and of raw epoll from the syscalls scenario.  Where a scenario also runs
 * epoll+data (raw epoll plus one FIONREAD per event: the floor for kq's
 * exact `data`), the row also has epoll+data's ratio to epoll and kq's
 * ratio to epoll+data.  threads adds its futex calls per event (kq and
 * epoll+data), for T = 2 and 4 only.
 *
 * Contract: the driver hands every result table to headline_take() as soon
 * as its scenario has finished (tables live in shared memory that the next
 * scenario overwrites, so what is needed is copied here), then calls
 * headline_write() once.  Nothing is measured here: every figure is a cell
 * of a scenario's table, picked by column name, so the headline can never
 * disagree with the tables below it.  Runs in the driver process only.
 */
#include "bench.h"

#define HL_MAX		128
#define HL_SCMAX	32

struct hl_row {
	char	scen[32];	/* table name */
	char	key[64];	/* the size columns, "n=8" or "N=100, pipes" */
	char	n[16];		/* the first size cell, to join syscalls */
	char	measure[64];	/* which column the ratios come from */
	char	kq[16], poll[16], sel[16];
	char	epd[16];	/* epoll+data x epoll */
	char	kqf[16];	/* kq x epoll+data */
	char	xkq[16], xepd[16];	/* the spec's xcol: kq, epoll+data */
	char	sckey[48];	/* syscalls workload, when not scen */
};

struct hl_sc {
	char	scen[32];
	char	n[16];
	char	unit[24];
	char	kq[16], ep[16];
};

static struct hl_row rows[HL_MAX];
static int nrows;
static struct hl_sc scs[HL_SCMAX];
static int nscs;

/*
 * Which column of a table carries the ratio to epoll, what it is, (fcol,
 * or NULL) which carries kq's ratio to epoll+data, (xcol, or NULL) which
 * carries the futex calls per event, and (only, or NULL) the values of
 * the first column whose rows are kept, comma-separated.
 */
struct hl_spec {
	const char *table;
	const char *col;
	const char *measure;
	const char *fcol;
	const char *xcol;
	const char *only;
};

static const struct hl_spec specs[] = {
	{ "ring", "x epoll (CPU)", "iterations per CPU-s (higher wins)",
	    "x epoll+data (CPU)", NULL, NULL },
	{ "ops", "kq/epoll CPU", "ns per change", NULL, NULL, NULL },
	{ "idle", "x epoll (CPU)", "ns per idle wait", NULL, NULL, NULL },
	{ "allready", "x epoll (CPU)", "us per call returning all N",
	    "x epoll+data (CPU)", NULL, NULL },
	{ "paper", "first x epoll", "first call: N EV_ADDs + wait (Fig. 10)",
	    NULL, NULL, NULL },
	{ "paper-active", "call x epoll", "us per call, all N ready (Fig. 11)",
	    NULL, NULL, NULL },
	{ "create", "x epoll (CPU)", "ns per create + close", NULL, NULL,
	    NULL },
	{ "chain", "x epoll (CPU)", "us per chain run", NULL, NULL, NULL },
	{ "prefork", "x epoll (req/s)", "requests per s (higher wins)", NULL,
	    NULL, NULL },
	{ "threads", "x epoll (wall)", "moves per wall-s (higher wins)",
	    "x epoll+data (wall)", "futex/event", "2,4" },
	{ "timers", "x epoll total", "ns per timer, all phases", NULL, NULL,
	    NULL },
	{ "libevent-bench", "x epoll", "libevent test/bench, us per round",
	    NULL, NULL, NULL },
	{ "nginx-bench", "x epoll (req/s)", "nginx static 4 KiB, requests per s "
	    "(higher wins)", NULL, NULL, NULL },
	{ "redis-bench", "x epoll (req/s)", "redis-benchmark, requests per s "
	    "(higher wins)", NULL, NULL, NULL },
};

static int
col_of(const struct bench_table *t, const char *name)
{
	for (int c = 0; c < t->ncols; c++)
		if (strcmp(t->cols[c], name) == 0)
			return c;
	return -1;
}

static struct hl_row *
row_for(const char *scen, const char *key, const char *n,
    const char *measure)
{
	for (int i = 0; i < nrows; i++)
		if (strcmp(rows[i].scen, scen) == 0 &&
		    strcmp(rows[i].key, key) == 0)
			return &rows[i];
	if (nrows >= HL_MAX)
		return NULL;
	memset(&rows[nrows], 0, sizeof(rows[0]));
	snprintf(rows[nrows].scen, sizeof(rows[0].scen), "%s", scen);
	snprintf(rows[nrows].key, sizeof(rows[0].key), "%s", key);
	snprintf(rows[nrows].n, sizeof(rows[0].n), "%s", n);
	snprintf(rows[nrows].measure, sizeof(rows[0].measure), "%s", measure);
	return &rows[nrows++];
}

static void
take_syscalls(const struct bench_table *t)
{
	int cw = col_of(t, "workload"), cn = col_of(t, "n"),
	    cb = col_of(t, "backend"), cu = col_of(t, "units"),
	    cs = col_of(t, "syscalls/unit");

	if (cw < 0 || cn < 0 || cb < 0 || cs < 0)
		return;
	for (int r = 0; r < t->nrows; r++) {
		struct hl_sc *s = NULL;

		for (int i = 0; i < nscs; i++)
			if (strcmp(scs[i].scen, t->cell[r][cw]) == 0 &&
			    strcmp(scs[i].n, t->cell[r][cn]) == 0)
				s = &scs[i];
		if (s == NULL) {
			if (nscs >= HL_SCMAX)
				continue;
			s = &scs[nscs++];
			memset(s, 0, sizeof(*s));
			snprintf(s->scen, sizeof(s->scen), "%s",
			    t->cell[r][cw]);
			snprintf(s->n, sizeof(s->n), "%s", t->cell[r][cn]);
		}
		if (cu >= 0) {
			/* "20000 iterations" -> "iteration" */
			const char *u = strchr(t->cell[r][cu], ' ');

			snprintf(s->unit, sizeof(s->unit), "%s", u ? u + 1 :
			    t->cell[r][cu]);
			if (strlen(s->unit) > 1 &&
			    s->unit[strlen(s->unit) - 1] == 's')
				s->unit[strlen(s->unit) - 1] = '\0';
		}
		if (strcmp(t->cell[r][cb], "kq") == 0)
			snprintf(s->kq, sizeof(s->kq), "%s", t->cell[r][cs]);
		else if (strcmp(t->cell[r][cb], "epoll") == 0)
			snprintf(s->ep, sizeof(s->ep), "%s", t->cell[r][cs]);
	}
}

void
headline_take(const struct bench_table *t)
{
	const struct hl_spec *sp = NULL;
	int cr, cb, cf, cx, cv;

	if (strcmp(t->name, "syscalls") == 0) {
		take_syscalls(t);
		return;
	}
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		if (strcmp(specs[i].table, t->name) == 0)
			sp = &specs[i];
	if (sp == NULL || (cr = col_of(t, sp->col)) < 0)
		return;
	cf = sp->fcol ? col_of(t, sp->fcol) : -1;
	cx = sp->xcol ? col_of(t, sp->xcol) : -1;
	cv = col_of(t, "variant");
	cb = col_of(t, "backend");
	if (cb < 0)
		cb = col_of(t, "server");
	for (int r = 0; r < t->nrows; r++) {
		char key[64] = "", measure[64];
		const char *bk = cb >= 0 ? t->cell[r][cb] : "kq";
		struct hl_row *h;
		int nkey = cb >= 0 ? cb : 1;

		snprintf(measure, sizeof(measure), "%s", sp->measure);
		if (sp->only) {
			char list[64], want[BT_CELL + 2];

			snprintf(list, sizeof(list), ",%s,", sp->only);
			snprintf(want, sizeof(want), ",%s,", t->cell[r][0]);
			if (strstr(list, want) == NULL)
				continue;
		}
		if (cb < 0 && strcmp(t->name, "create") == 0 &&
		    strncmp(t->cell[r][0], "kqueue", 6) != 0)
			continue;	/* create: the epoll row is 1.00 */
		if (strcmp(bk, "kq EV_WAKEONE") == 0)
			snprintf(measure, sizeof(measure), "%s",
			    "req/s, EV_WAKEONE vs EPOLLEXCLUSIVE (higher wins)");
		else if (strcmp(bk, "kq") != 0 && strcmp(bk, "poll") != 0 &&
		    strcmp(bk, "select") != 0 && strcmp(bk, "epoll+data") != 0)
			continue;	/* the epoll baseline, other variants */
		for (int c = 0; c < nkey; c++) {
			size_t l = strlen(key);

			snprintf(key + l, sizeof(key) - l, "%s%s=%s",
			    c ? ", " : "", t->cols[c], t->cell[r][c]);
		}
		if (cb < 0 && strcmp(t->name, "create") == 0)
			snprintf(key, sizeof(key), "%s", "pair");
		if (strcmp(bk, "kq EV_WAKEONE") == 0) {
			size_t l = strlen(key);

			snprintf(key + l, sizeof(key) - l, "%s", ", EV_WAKEONE");
		}
		if (!(h = row_for(t->name, key, cb < 0 &&
		    strcmp(t->name, "create") == 0 ? "0" : t->cell[r][0],
		    measure)))
			return;
		if (cv >= 0 && !h->sckey[0])
			snprintf(h->sckey, sizeof(h->sckey), "%s/%s", t->name,
			    t->cell[r][cv]);
		if (cx >= 0 && strcmp(bk, "kq") == 0)
			snprintf(h->xkq, sizeof(h->xkq), "%s", t->cell[r][cx]);
		else if (cx >= 0 && strcmp(bk, "epoll+data") == 0)
			snprintf(h->xepd, sizeof(h->xepd), "%s",
			    t->cell[r][cx]);
		if (strcmp(bk, "poll") == 0)
			snprintf(h->poll, sizeof(h->poll), "%s", t->cell[r][cr]);
		else if (strcmp(bk, "select") == 0)
			snprintf(h->sel, sizeof(h->sel), "%s", t->cell[r][cr]);
		else if (strcmp(bk, "epoll+data") == 0)
			snprintf(h->epd, sizeof(h->epd), "%s", t->cell[r][cr]);
		else {
			snprintf(h->kq, sizeof(h->kq), "%s", t->cell[r][cr]);
			if (cf >= 0)
				snprintf(h->kqf, sizeof(h->kqf), "%s",
				    t->cell[r][cf]);
		}
	}
}

/* Syscall counts for a headline row: same workload and size, or nearest. */
static const struct hl_sc *
sc_for(const struct hl_row *h, int *exact)
{
	const struct hl_sc *best = NULL;
	const char *a = strstr(h->key, ", a=");
	long n = atol(h->n), bd = 0;
	const char *scen = h->sckey[0] ? h->sckey :
	    strncmp(h->scen, "paper", 5) == 0 ? "paper" : h->scen;

	*exact = 0;
	for (int i = 0; i < nscs; i++) {
		long d;

		if (strcmp(scs[i].scen, scen) != 0)
			continue;
		/* chain is traced with a = 1 only */
		if (strcmp(scs[i].n, h->n) == 0 && (a == NULL ||
		    atoi(a + 4) == 1)) {
			*exact = 1;
			return &scs[i];
		}
		d = labs(atol(scs[i].n) - n);
		if (best == NULL || d < bd) {
			best = &scs[i];
			bd = d;
		}
	}
	return best;
}

void
headline_write(FILE *md, FILE *txt)
{
	if (nrows == 0)
		return;
	fprintf(md, "\n## Headline\n\n"
	    "Every figure is a ratio to raw epoll measured in the same run "
	    "(median of the per-repetition ratios), copied from the tables "
	    "below: for costs lower is better (1.20 = 20%% more than epoll), "
	    "for rates marked *higher wins* higher is better (0.85 = 85%% of "
	    "epoll's rate). `-`: not run (select() only below FD_SETSIZE; "
	    "poll and select have no counterpart). epoll+data (ring, "
	    "allready, threads only) is raw epoll plus one ioctl(FIONREAD) "
	    "per event, "
	    "the byte count kq must report in `data`: the floor for exact "
	    "data on Linux; its column is its ratio to epoll, and `kq x "
	    "epoll+data` is kq's ratio to it, same run. System calls per unit "
	    "of work come from the syscalls scenario (strace); \"traced at\" "
	    "gives the size it was traced at when that is not this row's "
	    "(chain is traced with a = 1; threads at T = 2). `futex/event` "
	    "(threads, T = 2 and 4 only): futex system calls per event "
	    "returned, kq (epoll+data), counted in the timed runs by a perf "
	    "counter, no tracer.\n\n"
	    "| scenario | size | measure | kq | epoll+data | kq x epoll+data "
	    "| poll | select | syscalls/unit kq | syscalls/unit epoll | unit "
	    "| futex/event kq (epoll+data) |\n"
	    "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	if (txt)
		fprintf(txt, "\n== headline: ratios to raw epoll, same run ==\n");
	for (int i = 0; i < nrows; i++) {
		const struct hl_row *h = &rows[i];
		int exact;
		const struct hl_sc *s = sc_for(h, &exact);
		char skq[48] = "-", sep[48] = "-", fx[40] = "-";

		if (s && s->kq[0])
			snprintf(skq, sizeof(skq), "%s%s%s%s", s->kq,
			    exact ? "" : " (traced at n=", exact ? "" : s->n,
			    exact ? "" : ")");
		if (s && s->ep[0])
			snprintf(sep, sizeof(sep), "%s", s->ep);
		if (h->xkq[0])
			snprintf(fx, sizeof(fx), "%s (%s)", h->xkq,
			    h->xepd[0] ? h->xepd : "-");
		fprintf(md, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | "
		    "%s | %s | %s |\n", h->scen, h->key, h->measure,
		    h->kq[0] ? h->kq : "-", h->epd[0] ? h->epd : "-",
		    h->kqf[0] ? h->kqf : "-", h->poll[0] ? h->poll : "-",
		    h->sel[0] ? h->sel : "-", skq, sep, s ? s->unit : "-", fx);
		if (txt)
			fprintf(txt, "%-12s %-28s kq %6s  poll %9s  select %9s"
			    "  syscalls kq %s epoll %s%s%s%s%s%s%s\n", h->scen,
			    h->key, h->kq[0] ? h->kq : "-",
			    h->poll[0] ? h->poll : "-",
			    h->sel[0] ? h->sel : "-", skq, sep,
			    h->epd[0] ? "  epoll+data " : "", h->epd,
			    h->kqf[0] ? "  kq x epoll+data " : "", h->kqf,
			    h->xkq[0] ? "  futex/event kq (epoll+data) " : "",
			    h->xkq[0] ? fx : "");
	}
}
