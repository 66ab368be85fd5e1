/*
 * clients.c -- figures measured by real kqueue clients outside kqbench,
 * brought into the report: libevent's own test/bench (seed 003's chain
 * benchmark) on libevent's kqueue backend over kq and on its epoll
 * backend, as written by tests/clients/libevent.sh to
 * build/clients/libevent-bench.tsv (columns: backend, n, a, w, samples,
 * median_us, min_us, max_us, x_epoll).
 *
 * Contract: clients_table() fills *t from that file when it exists and
 * returns 1, else returns 0 and kqbench says how to produce it.  The
 * figures are copied, never re-measured; the note gives the file's date so
 * a stale run is visible.  Runs in the driver process only.
 */
#include "bench.h"

#include <sys/stat.h>

/* <outdir>/../clients/libevent-bench.tsv, or $KQBENCH_LIBEVENT_TSV. */
static void
clients_path(const char *outdir, char *path, size_t len)
{
	const char *env = getenv("KQBENCH_LIBEVENT_TSV");

	if (env && *env)
		snprintf(path, len, "%s", env);
	else
		snprintf(path, len, "%s/../clients/libevent-bench.tsv", outdir);
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
	clients_path(outdir, path, sizeof(path));
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
