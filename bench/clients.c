/*
 * clients.c -- figures measured by real kqueue clients outside kqbench,
 * brought into the report: libevent's own test/bench (seed 003's chain
 * benchmark) on libevent's kqueue backend over kq and on its epoll
 * backend, as written by tests/clients/libevent.sh to
 * build/clients/libevent-bench.tsv (columns: backend, n, a, w, samples,
 * median_us, min_us, max_us, x_epoll).
 *
 * And nginx's requests per second on a 4 KiB static file, its kqueue
 * module over kq against its epoll build, as written by
 * tests/clients/nginx.sh to build/clients/nginx-bench.tsv (columns: mode,
 * concurrency, requests, runs, kq_rps, epoll_rps, kq_over_epoll, kq_all,
 * epoll_all; the rates are medians over the runs).
 *
 * And Redis's requests per second under redis-benchmark (PING, SET, GET),
 * its ae_kqueue.c over kq against ae_epoll.c, as written by
 * tests/clients/redis.sh to build/clients/redis-bench.tsv (columns: test,
 * clients, requests, runs, kq_rps, epoll_rps, kq_over_epoll, kq_all,
 * epoll_all).
 *
 * Contract: clients_table(), clients_nginx_table() and
 * clients_redis_table() fill *t from their
 * file when it exists and return 1, else return 0 and kqbench says how to
 * produce it.  The figures are copied, never re-measured; the note gives
 * the file's date so a stale run is visible.  Runs in the driver process
 * only.
 */
#include "bench.h"

#include <sys/stat.h>

/* <outdir>/../clients/<file>, or $<env> when set. */
static void
clients_path(const char *outdir, const char *env, const char *file,
    char *path, size_t len)
{
	const char *e = getenv(env);

	if (e && *e)
		snprintf(path, len, "%s", e);
	else
		snprintf(path, len, "%s/../clients/%s", outdir, file);
}

int
clients_table(const char *outdir, struct bench_table *t)
{
	char path[4096], line[1024], date[64];
	struct stat sb;
	int hdr = 1;
	FILE *f;

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "libevent-bench");
	snprintf(t->title, sizeof(t->title), "libevent-bench: libevent's own "
	    "test/bench (seed 003), kqueue backend over kq vs epoll backend");
	clients_path(outdir, "KQBENCH_LIBEVENT_TSV", "libevent-bench.tsv",
	    path, sizeof(path));
	if (stat(path, &sb) != 0 || !(f = fopen(path, "r"))) {
		bt_note(t, "No figures: run `tests/clients/libevent.sh` (it "
		    "builds libevent 2.1.12 against kq and writes %s), then "
		    "kqbench again.\n", path);
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *tok;
		int r, c = 0;

		line[strcspn(line, "\n")] = '\0';
		if (hdr) {
			/* The TSV's header row names the columns. */
			bt_cols(t, "n|a|w|backend|samples|us/round median|"
			    "us/round min|us/round max|x epoll");
			hdr = 0;
			continue;
		}
		if ((r = bt_row(t)) < 0)
			break;
		for (tok = strtok_r(line, "\t", &save); tok && c < t->ncols;
		    tok = strtok_r(NULL, "\t", &save), c++) {
			/* kqueue-kq: libevent's kqueue backend over kq */
			if (c == 0 && strcmp(tok, "kqueue-kq") == 0)
				tok = "kq";
			/* the backend moves behind the size columns */
			bt_set(t, r, c == 0 ? 3 : c <= 3 ? c - 1 : c, "%s", tok);
		}
	}
	fclose(f);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z",
	    localtime(&sb.st_mtime));
	bt_note(t, "Copied from %s (written %s by tests/clients/libevent.sh, "
	    "not by this kqbench run). Rows `kq`: libevent's kqueue backend "
	    "(forced with EVENT_NOEPOLL/EVENT_NOPOLL/EVENT_NOSELECT) linked "
	    "with kq; rows `epoll`: libevent's epoll backend. libevent's bench "
	    "prints the microseconds of one round (a writes passed along n "
	    "socketpairs, w writes in all); the median over the samples is "
	    "shown. `x epoll` = kq / epoll, lower is better.\n", path, date);
	return 1;
}

/*
 * The rows of a requests/s TSV (tests/clients/nginx.sh, redis.sh: a header
 * row, then first column, concurrency, requests, runs, kq_rps, epoll_rps,
 * kq_over_epoll, kq_all, epoll_all) as two rows each, kq then epoll.
 */
static void
rate_rows(FILE *f, struct bench_table *t)
{
	char line[1024];
	int hdr = 1;

	while (fgets(line, sizeof(line), f)) {
		char *v[9], *save = NULL, *tok;
		int n = 0;

		line[strcspn(line, "\n")] = '\0';
		if (hdr) {	/* the header row names the columns */
			hdr = 0;
			continue;
		}
		for (tok = strtok_r(line, "\t", &save); tok && n < 9;
		    tok = strtok_r(NULL, "\t", &save))
			v[n++] = tok;
		if (n < 9)
			continue;
		for (int b = 0; b < 2; b++) {
			int r = bt_row(t);

			if (r < 0)
				break;
			bt_set(t, r, 0, "%s", v[0]);
			bt_set(t, r, 1, "%s", v[1]);
			bt_set(t, r, 2, "%s", b ? "epoll" : "kq");
			bt_set(t, r, 3, "%s", v[2]);
			bt_set(t, r, 4, "%s", v[3]);
			bt_set(t, r, 5, "%s", v[b ? 5 : 4]);
			bt_set(t, r, 6, "%s", v[b ? 8 : 7]);
			bt_set(t, r, 7, "%s", b ? "1.00" : v[6]);
		}
	}
}

int
clients_nginx_table(const char *outdir, struct bench_table *t)
{
	char path[4096], date[64];
	struct stat sb;
	FILE *f;

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "nginx-bench");
	snprintf(t->title, sizeof(t->title), "nginx-bench: nginx 1.22.1, "
	    "requests/s of a 4 KiB static file, kqueue module over kq vs "
	    "epoll");
	clients_path(outdir, "KQBENCH_NGINX_TSV", "nginx-bench.tsv", path,
	    sizeof(path));
	if (stat(path, &sb) != 0 || !(f = fopen(path, "r"))) {
		bt_note(t, "No figures: run `tests/clients/nginx.sh` (it "
		    "builds nginx 1.22.1 with its kqueue module over kq and "
		    "writes %s), then kqbench again.\n", path);
		return 0;
	}
	bt_cols(t, "mode|concurrency|backend|requests/run|runs|"
	    "req/s median|req/s every run|x epoll (req/s)");
	rate_rows(f, t);
	fclose(f);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z",
	    localtime(&sb.st_mtime));
	bt_note(t, "Copied from %s (written %s by tests/clients/nginx.sh, "
	    "not by this kqbench run). nginx 1.22.1 (Debian's source), one "
	    "worker, `access_log off`, a 4 KiB file; rows `kq`: its kqueue "
	    "module linked with kq (tests/clients/nginx-kqueue.patch selects "
	    "it on Linux), rows `epoll`: the same source unmodified. Load "
	    "from ab (apache2-utils) on the same machine, keep-alive or a new "
	    "connection per request; each run lasts 2 s at most, the builds "
	    "are taken in turn, the median run is shown. `x epoll` = kq / "
	    "epoll requests per second, higher is better.\n", path, date);
	return 1;
}

int
clients_redis_table(const char *outdir, struct bench_table *t)
{
	char path[4096], date[64];
	struct stat sb;
	FILE *f;

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "redis-bench");
	snprintf(t->title, sizeof(t->title), "redis-bench: Redis 7.0.15, "
	    "redis-benchmark requests/s, ae_kqueue.c over kq vs ae_epoll.c");
	clients_path(outdir, "KQBENCH_REDIS_TSV", "redis-bench.tsv", path,
	    sizeof(path));
	if (stat(path, &sb) != 0 || !(f = fopen(path, "r"))) {
		bt_note(t, "No figures: run `tests/clients/redis.sh` (it "
		    "builds Redis 7.0.15 with its kqueue event loop over kq and "
		    "writes %s), then kqbench again.\n", path);
		return 0;
	}
	bt_cols(t, "test|clients|backend|requests/run|runs|"
	    "req/s median|req/s every run|x epoll (req/s)");
	rate_rows(f, t);
	fclose(f);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z",
	    localtime(&sb.st_mtime));
	bt_note(t, "Copied from %s (written %s by tests/clients/redis.sh, "
	    "not by this kqbench run). Redis 7.0.15 (Debian's source); rows "
	    "`kq`: redis-server with ae_kqueue.c linked with kq "
	    "(tests/clients/redis-kqueue.patch selects it on Linux), rows "
	    "`epoll`: the same source unmodified (ae_epoll.c). Load from "
	    "redis-benchmark (the epoll build's) on the same machine, "
	    "against each server in turn; the median run is shown. `x epoll` "
	    "= kq / epoll requests per second, higher is better.\n", path,
	    date);
	return 1;
}

/*
 * Seed 003's experiment: libevent's test/bench over its evport backend on
 * kq's event ports, beside its kqueue backend on kq, epoll, poll and select,
 * from 50 to 15000 descriptors with 1 and 100 active connections, as
 * written by `tests/clients/libevent.sh evport` to
 * <outdir>/../clients/libevent-seed003.tsv ($KQBENCH_SEED003_TSV; columns
 * backend, n, fds, a, w, samples, median_us, min_us, max_us).  Copied,
 * never re-measured; `x epoll` is computed here.  Returns 1 when the file
 * was there.
 */
int
clients_seed003_table(const char *outdir, struct bench_table *t)
{
	char path[4096], line[1024], date[64];
	const char *env = getenv("KQBENCH_SEED003_TSV");
	struct stat sb;
	int hdr = 1;
	FILE *f;

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "libevent-seed003");
	snprintf(t->title, sizeof(t->title), "libevent-seed003: seed 003, "
	    "libevent test/bench over evport on kq vs poll, select, epoll, "
	    "kqueue on kq");
	if (env && *env)
		snprintf(path, sizeof(path), "%s", env);
	else
		snprintf(path, sizeof(path),
		    "%s/../clients/libevent-seed003.tsv", outdir);
	if (stat(path, &sb) != 0 || !(f = fopen(path, "r"))) {
		bt_note(t, "No figures: run `tests/clients/libevent.sh evport` "
		    "(it builds libevent 2.1.12 against kq and writes %s), then "
		    "kqbench again.\n", path);
		return 0;
	}
	bt_cols(t, "fds|a|backend|n|us/round median|us/round min|"
	    "us/round max|x epoll");
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *tok, *v[9];
		int r, c = 0;

		line[strcspn(line, "\n")] = '\0';
		if (hdr) {
			hdr = 0;
			continue;
		}
		for (tok = strtok_r(line, "\t", &save); tok && c < 9;
		    tok = strtok_r(NULL, "\t", &save))
			v[c++] = tok;
		if (c < 9 || (r = bt_row(t)) < 0)
			continue;
		bt_set(t, r, 0, "%s", v[2]);
		bt_set(t, r, 1, "%s", v[3]);
		bt_set(t, r, 2, "%s", v[0]);
		bt_set(t, r, 3, "%s", v[1]);
		bt_set(t, r, 4, "%s", v[6]);
		bt_set(t, r, 5, "%s", v[7]);
		bt_set(t, r, 6, "%s", v[8]);
		bt_set(t, r, 7, "-");
	}
	fclose(f);
	/* x epoll: the row's median over epoll's at the same fds and a. */
	for (int r = 0; r < t->nrows; r++) {
		for (int e = 0; e < t->nrows; e++) {
			double m = atof(t->cell[e][4]);

			if (strcmp(t->cell[e][2], "epoll") != 0 ||
			    strcmp(t->cell[e][0], t->cell[r][0]) != 0 ||
			    strcmp(t->cell[e][1], t->cell[r][1]) != 0 || m <= 0)
				continue;
			bt_num(t, r, 7, atof(t->cell[r][4]) / m);
		}
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z",
	    localtime(&sb.st_mtime));
	bt_note(t, "Copied from %s (written %s by `tests/clients/libevent.sh "
	    "evport`, not by this kqbench run). libevent's own test/bench, "
	    "unmodified, with `-m BACKEND` (libevent avoids every other "
	    "method): `evport-kq` is its Solaris event-port backend over kq's "
	    "<port.h>, `kqueue-kq` its kqueue backend over kq; `epoll`, "
	    "`poll`, `select` are Linux's. One round passes `a` active writes "
	    "along n socketpairs (fds = 2n), 1000 writes in all; the median "
	    "of 25 rounds is shown (us, lower is better). select only up to "
	    "1000 descriptors, as in the seed. Plots: seed003-a1.svg, "
	    "seed003-a100.svg.\n", path, date);
	return 1;
}
