/*
 * plots.c -- SVG plots of the result tables, drawn by gnuplot.
 *
 * After all scenarios have run, the driver calls bench_plots().  For every
 * plot below whose TSV file exists in the output directory, the rows are
 * read back, grouped into one line per series (usually per backend) and
 * written as inline data blocks into <outdir>/plots.gp, which gnuplot turns
 * into <name>.svg beside report.md.  The plots have the shape of the
 * kqueue paper's Figures 10-12 (seed 000): a cost or throughput against the
 * number of descriptors, one line per mechanism.  When gnuplot is missing
 * the report says so and no plot is drawn.
 */
#include "bench.h"

#include <sys/stat.h>
#include <sys/wait.h>

struct plot_spec {
	const char *name;	/* <name>.svg */
	const char *tsv;	/* table stem */
	const char *title;
	const char *xcol, *ycol;
	const char *series;	/* series = these columns, ','-separated */
	const char *fcol;	/* only rows whose fcol equals fval */
	const char *fval;
	const char *xlabel, *ylabel;
	int	    logx, logy;
	/*
	 * Optional second y column, drawn only for rows whose y2fcol equals
	 * y2fval; its series are named "<series> <y2title>".
	 */
	const char *ycol2, *y2fcol, *y2fval, *y2title;
};

static const struct plot_spec plots[] = {
	{ "idle", "idle", "Idle descriptors: one zero-timeout wait (cf. "
	    "Lemon, Fig. 10)", "N", "ns/call CPU", "backend", NULL, NULL,
	    "registered descriptors N (none ready)", "CPU ns per call", 1, 1,
	    NULL, NULL, NULL, NULL },
	{ "allready", "allready", "All N descriptors ready: one call returns "
	    "N events (cf. Lemon, Fig. 11)", "N", "us/call CPU",
	    "backend,fds", NULL, NULL, "ready descriptors N",
	    "CPU us per call", 1, 1,
	    NULL, NULL, NULL, NULL },
	{ "ring", "ring", "Token ring over n pipes (xpoll looptest)", "n",
	    "iter/CPU-s", "backend", NULL, NULL, "pipes in the ring n",
	    "iterations per CPU-second (higher is better)", 1, 1,
	    NULL, NULL, NULL, NULL },
	{ "chain-a1", "chain", "libevent chain benchmark, 1 active writer",
	    "n", "us/run CPU", "backend", "a", "1", "socketpairs n",
	    "CPU us per run (dispatch only)", 1, 1,
	    NULL, NULL, NULL, NULL },
	{ "chain-a100", "chain", "libevent chain benchmark, 100 active "
	    "writers", "n", "us/run CPU", "backend", "a", "100",
	    "socketpairs n", "CPU us per run (dispatch only)", 1, 1,
	    NULL, NULL, NULL, NULL },
	{ "seed003-a1", "libevent-seed003", "Seed 003: libevent test/bench, "
	    "1 active connection (evport and kqueue on kq)", "fds",
	    "us/round median", "backend", "a", "1", "file descriptors",
	    "us per round (median)", 1, 1,
	    NULL, NULL, NULL, NULL },
	{ "seed003-a100", "libevent-seed003", "Seed 003: libevent test/bench, "
	    "100 active connections (evport and kqueue on kq)", "fds",
	    "us/round median", "backend", "a", "100", "file descriptors",
	    "us per round (median)", 1, 1,
	    NULL, NULL, NULL, NULL },
	{ "paper-fig10-sockets", "paper", "Lemon Fig. 10, socketpairs: "
	    "initial call (kq: one kevent() adding N; epoll: N ctl + wait)",
	    "N", "first us CPU", "backend", "kind", "sockets",
	    "descriptors N (none ready)", "CPU us per call", 1, 1,
	    "call us CPU", "backend", "kq", "descriptor" },
	{ "paper-fig10-pipes", "paper", "Lemon Fig. 10, pipes: initial call "
	    "(kq: one kevent() adding N; epoll: N ctl + wait)", "N",
	    "first us CPU", "backend", "kind", "pipes",
	    "descriptors N (none ready)", "CPU us per call", 1, 1,
	    "call us CPU", "backend", "kq", "descriptor" },
	{ "paper-fig11-sockets", "paper-active", "Lemon Fig. 11, socketpairs: "
	    "all N readable, one call returns N events", "N", "call us CPU",
	    "backend", "kind", "sockets", "descriptors N (all ready)",
	    "CPU us per call", 1, 1, "first us CPU", "backend", "kq",
	    "initial call" },
	{ "paper-fig11-pipes", "paper-active", "Lemon Fig. 11, pipes: all N "
	    "readable, one call returns N events", "N", "call us CPU",
	    "backend", "kind", "pipes", "descriptors N (all ready)",
	    "CPU us per call", 1, 1, "first us CPU", "backend", "kq",
	    "initial call" },
	{ "httpd-reply", "httpd", "Web server (Lemon §7.2): lighttpd's reply "
	    "time under httperf vs idle connections", "N", "reply ms",
	    "handler,rate/s", NULL, NULL, "idle connections N",
	    "httperf reply time, ms (0.1 ms steps)", 0, 1,
	    NULL, NULL, NULL, NULL },
	{ "httpd-cpu", "httpd", "Web server (Lemon §7.2): server CPU per "
	    "request vs idle connections", "N", "CPU us/req",
	    "handler,rate/s", NULL, NULL, "idle connections N",
	    "lighttpd CPU us per request", 0, 1,
	    NULL, NULL, NULL, NULL },
	{ "httpd-probe", "httpd", "Web server: reply time of kqbench's probe "
	    "requests (median) vs idle connections", "N", "probe us",
	    "handler,rate/s", NULL, NULL, "idle connections N",
	    "probe reply time, median us", 0, 1,
	    NULL, NULL, NULL, NULL },
};

#define PL_MAXROWS	BT_MAXROWS
#define PL_MAXSER	16

struct tsv {
	int	ncols, nrows;
	char	cols[BT_MAXCOLS][BT_CELL];
	char	cell[PL_MAXROWS][BT_MAXCOLS][BT_CELL];
};

static void
split_tabs(char *line, char out[][BT_CELL], int *n)
{
	char *p = line;

	*n = 0;
	line[strcspn(line, "\r\n")] = '\0';
	while (*n < BT_MAXCOLS) {
		char *e = strchr(p, '\t');

		if (e)
			*e = '\0';
		snprintf(out[*n], BT_CELL, "%s", p);
		(*n)++;
		if (!e)
			break;
		p = e + 1;
	}
}

static int
tsv_read(const char *dir, const char *stem, struct tsv *t)
{
	char path[4096], line[BT_MAXCOLS * BT_CELL + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.tsv", dir, stem);
	if (!(f = fopen(path, "r")))
		return -1;
	memset(t, 0, sizeof(*t));
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	split_tabs(line, t->cols, &t->ncols);
	while (t->nrows < PL_MAXROWS && fgets(line, sizeof(line), f)) {
		int n;

		split_tabs(line, t->cell[t->nrows], &n);
		t->nrows++;
	}
	fclose(f);
	return 0;
}

static int
tsv_col(const struct tsv *t, const char *name)
{
	for (int c = 0; c < t->ncols; c++)
		if (strcmp(t->cols[c], name) == 0)
			return c;
	return -1;
}

/* The series key of row r: the series columns joined by spaces. */
static void
series_key(const struct tsv *t, int r, const char *spec, char *key,
    size_t len)
{
	char buf[128];

	key[0] = '\0';
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		int c = tsv_col(t, tok);

		if (c < 0)
			continue;
		snprintf(key + strlen(key), len - strlen(key), "%s%s",
		    key[0] ? " " : "", t->cell[r][c]);
	}
}

/*
 * The series key of row r for y column `which` (0: ycol, 1: ycol2) into
 * key; returns 0 when the row has no point in that column.
 */
static int
row_key(const struct tsv *t, int r, const struct plot_spec *ps, int which,
    char *key, size_t len)
{
	int fc = ps->fcol ? tsv_col(t, ps->fcol) : -1;

	if (fc >= 0 && strcmp(t->cell[r][fc], ps->fval) != 0)
		return 0;
	if (which == 1) {
		int c = ps->y2fcol ? tsv_col(t, ps->y2fcol) : -1;

		if (ps->y2fcol && (c < 0 ||
		    strcmp(t->cell[r][c], ps->y2fval) != 0))
			return 0;
	}
	series_key(t, r, ps->series, key, len);
	if (which == 1)
		snprintf(key + strlen(key), len - strlen(key), " %s",
		    ps->y2title);
	return 1;
}

/* Writes one plot into the script; returns 1 if drawn, 0 if no data. */
static int
plot_one(FILE *gp, int pi, const struct plot_spec *ps, const struct tsv *t)
{
	char keys[PL_MAXSER][BT_CELL * 2];
	int kwhich[PL_MAXSER], yc[2], nser = 0, nwhich = 1;
	int xc = tsv_col(t, ps->xcol);

	yc[0] = tsv_col(t, ps->ycol);
	yc[1] = ps->ycol2 ? tsv_col(t, ps->ycol2) : -1;
	if (yc[1] >= 0)
		nwhich = 2;
	if (xc < 0 || yc[0] < 0 || (ps->fcol && tsv_col(t, ps->fcol) < 0))
		return 0;
	for (int w = 0; w < nwhich; w++)
		for (int r = 0; r < t->nrows; r++) {
			char key[BT_CELL * 2];
			int k;

			if (!row_key(t, r, ps, w, key, sizeof(key)))
				continue;
			for (k = 0; k < nser; k++)
				if (strcmp(keys[k], key) == 0)
					break;
			if (k == nser && nser < PL_MAXSER) {
				kwhich[nser] = w;
				snprintf(keys[nser++], sizeof(keys[0]), "%s",
				    key);
			}
		}
	if (nser == 0)
		return 0;
	/* Two passes: count the points, then write them.  A plot without
	   one point (every value 0 on a log scale: nothing was measured) is
	   not drawn; gnuplot would fail on its empty range. */
	for (int pass = 0, npt = 0; pass < 2; pass++) {
		for (int k = 0; k < nser; k++) {
			int w = kwhich[k];

			if (pass)
				fprintf(gp, "$p%d_%d << EOD\n", pi, k);
			for (int r = 0; r < t->nrows; r++) {
				char key[BT_CELL * 2], *end;
				double x, y;

				if (!row_key(t, r, ps, w, key, sizeof(key)) ||
				    strcmp(key, keys[k]) != 0)
					continue;
				x = strtod(t->cell[r][xc], &end);
				if (end == t->cell[r][xc])
					continue;
				y = strtod(t->cell[r][yc[w]], &end);
				if (end == t->cell[r][yc[w]] ||
				    (ps->logy && y <= 0))
					continue;
				if (pass)
					fprintf(gp, "%g %g\n", x, y);
				npt++;
			}
			if (pass)
				fprintf(gp, "EOD\n");
		}
		if (npt == 0)
			return 0;
	}
	fprintf(gp, "reset\nset terminal svg size 800,500 dynamic "
	    "font 'sans,12'\nset output '%s.svg'\n", ps->name);
	fprintf(gp, "set title \"%s\"\nset xlabel \"%s\"\nset ylabel \"%s\"\n",
	    ps->title, ps->xlabel, ps->ylabel);
	fprintf(gp, "set grid\nset key outside right top\n%s%s",
	    ps->logx ? "set logscale x\n" : "",
	    ps->logy ? "set logscale y\n" : "");
	fprintf(gp, "plot ");
	for (int k = 0; k < nser; k++)
		fprintf(gp, "%s$p%d_%d using 1:2 with linespoints lw 2 pt %d "
		    "title \"%s\"", k ? ", \\\n     " : "", pi, k,
		    5 + 2 * (k % 4), keys[k]);
	fprintf(gp, "\nunset output\n");
	return 1;
}

static int
have_gnuplot(void)
{
	const char *path = getenv("PATH");
	char buf[4096], dir[4096];
	struct stat st;

	snprintf(buf, sizeof(buf), "%s", path ? path : "/usr/bin:/bin");
	for (char *tok = strtok(buf, ":"); tok; tok = strtok(NULL, ":")) {
		snprintf(dir, sizeof(dir), "%s/gnuplot", tok);
		if (stat(dir, &st) == 0 && (st.st_mode & S_IXUSR))
			return 1;
	}
	return 0;
}

void
bench_plots(const char *outdir, FILE *md)
{
	static struct tsv t;
	int drawn[sizeof(plots) / sizeof(plots[0])] = { 0 }, any = 0, st;
	char path[4096];
	pid_t pid;
	FILE *gp;

	for (size_t i = 0; i < sizeof(plots) / sizeof(plots[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s.tsv", outdir, plots[i].tsv);
		if (access(path, R_OK) == 0)
			any = 1;
	}
	if (!any)
		return;
	fprintf(md, "\n## plots\n\n");
	if (!have_gnuplot()) {
		fprintf(md, "gnuplot is not installed (tools/deps.sh installs "
		    "gnuplot-nox), so no plots were drawn.\n");
		progress("kqbench: gnuplot not found; no plots\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/plots.gp", outdir);
	if (!(gp = fopen(path, "w")))
		return;
	fprintf(gp, "# written by kqbench; run in this directory: "
	    "gnuplot plots.gp\n");
	for (size_t i = 0; i < sizeof(plots) / sizeof(plots[0]); i++) {
		if (tsv_read(outdir, plots[i].tsv, &t) == 0)
			drawn[i] = plot_one(gp, (int)i, &plots[i], &t);
	}
	fclose(gp);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		if (chdir(outdir) < 0)
			_exit(127);
		execlp("gnuplot", "gnuplot", "plots.gp", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		fprintf(md, "gnuplot failed on plots.gp; see stderr.\n");
		progress("kqbench: gnuplot failed\n");
		return;
	}
	for (size_t i = 0; i < sizeof(plots) / sizeof(plots[0]); i++)
		if (drawn[i])
			fprintf(md, "- [%s](%s.svg): %s\n\n  ![%s](%s.svg)\n\n",
			    plots[i].name, plots[i].name, plots[i].title,
			    plots[i].name, plots[i].name);
	progress("kqbench: plots in %s\n", outdir);
}
