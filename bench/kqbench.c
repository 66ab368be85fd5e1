/*
 * kqbench.c -- the driver: options, the scenario registry, output.
 *
 *   kqbench [--quick | --full] [--scenario NAME[,NAME...]] [--reps N]
 *           [--out DIR] [--list]
 *
 * Every scenario runs all its backends interleaved inside each repetition
 * and reports medians; this file only picks scenarios, raises the
 * descriptor limit, and turns the result tables into text on stdout, one
 * TSV file per table and <out>/report.md.  Progress goes to stderr.
 */
#include "bench.h"

#include <getopt.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

static const struct bench_scenario *const registry[] = {
	&bench_ring,
	&bench_ops,
	&bench_idle,
	&bench_allready,
	&bench_paper,
	&bench_create,
	&bench_memory,
	&bench_syscalls,
	&bench_chain,
	&bench_prefork,
	&bench_threads,
	&bench_timers,
	&bench_httpd,
	&bench_wake,
};
#define NSCEN	((int)(sizeof(registry) / sizeof(registry[0])))

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: kqbench [--tiny | --quick | --full] "
	    "[--scenario NAME[,NAME...]] [--reps N] [--out DIR] [--list]\n"
	    "  --tiny         smoke test: every scenario once at its smallest "
	    "size\n"
	    "  --quick        short runs (a few minutes in all)\n"
	    "  --full         long runs (default)\n"
	    "  --scenario S   run only these scenarios (repeatable)\n"
	    "  --reps N       repetitions per measurement (at least 5)\n"
	    "  --out DIR      TSV files and report.md (default build/bench)\n"
	    "  --list         list the scenarios\n");
}

static long
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	if (rl.rlim_cur != rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1L << 30))
		return 1L << 30;
	return (long)rl.rlim_cur;
}

static int
mkdir_p(const char *path)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0777) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* ---- output ---------------------------------------------------------------- */

static void
print_table(FILE *f, const struct bench_table *t)
{
	int w[BT_MAXCOLS];

	for (int c = 0; c < t->ncols; c++) {
		w[c] = (int)strlen(t->cols[c]);
		for (int r = 0; r < t->nrows; r++)
			if ((int)strlen(t->cell[r][c]) > w[c])
				w[c] = (int)strlen(t->cell[r][c]);
	}
	fprintf(f, "\n== %s ==\n", t->title);
	for (int c = 0; c < t->ncols; c++)
		fprintf(f, "%s%*s", c ? "  " : "", w[c], t->cols[c]);
	fputc('\n', f);
	for (int r = 0; r < t->nrows; r++) {
		for (int c = 0; c < t->ncols; c++)
			fprintf(f, "%s%*s", c ? "  " : "", w[c],
			    t->cell[r][c]);
		fputc('\n', f);
	}
	if (t->notes[0])
		fprintf(f, "%s%s", t->notes,
		    t->notes[strlen(t->notes) - 1] == '\n' ? "" : "\n");
}

static int
write_tsv(const char *dir, const struct bench_table *t)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.tsv", dir, t->name);
	if (!(f = fopen(path, "w")))
		return -1;
	for (int c = 0; c < t->ncols; c++)
		fprintf(f, "%s%s", c ? "\t" : "", t->cols[c]);
	fputc('\n', f);
	for (int r = 0; r < t->nrows; r++) {
		for (int c = 0; c < t->ncols; c++)
			fprintf(f, "%s%s", c ? "\t" : "", t->cell[r][c]);
		fputc('\n', f);
	}
	return fclose(f);
}

static void
md_table(FILE *f, const struct bench_table *t)
{
	fprintf(f, "\n### %s\n\n", t->title);
	for (int c = 0; c < t->ncols; c++)
		fprintf(f, "| %s ", t->cols[c]);
	fprintf(f, "|\n");
	for (int c = 0; c < t->ncols; c++)
		fprintf(f, "|---");
	fprintf(f, "|\n");
	for (int r = 0; r < t->nrows; r++) {
		for (int c = 0; c < t->ncols; c++)
			fprintf(f, "| %s ", t->cell[r][c]);
		fprintf(f, "|\n");
	}
	if (t->notes[0])
		fprintf(f, "\n%s%s", t->notes,
		    t->notes[strlen(t->notes) - 1] == '\n' ? "" : "\n");
}

static void
md_header(FILE *f, const struct bench_opts *o, const char *cmdline)
{
	char cpu[256] = "unknown", line[512], date[64];
	struct utsname u;
	time_t now = time(NULL);
	FILE *ci;

	if ((ci = fopen("/proc/cpuinfo", "r"))) {
		while (fgets(line, sizeof(line), ci))
			if (strncmp(line, "model name", 10) == 0) {
				char *p = strchr(line, ':');

				if (p) {
					snprintf(cpu, sizeof(cpu), "%s", p + 2);
					cpu[strcspn(cpu, "\n")] = '\0';
				}
				break;
			}
		fclose(ci);
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	uname(&u);
	fprintf(f, "# kqbench report\n\n");
	fprintf(f, "- command: `%s`\n", cmdline);
	fprintf(f, "- date: %s\n", date);
	fprintf(f, "- system: %s %s %s, CPU: %s, %ld online CPUs\n",
	    u.sysname, u.release, u.machine, cpu, sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(f, "- mode: %s; %d repetitions per measurement, backends "
	    "interleaved within each repetition; medians reported\n",
	    o->tiny ? "tiny (smoke test; numbers are not measurements)" :
	    o->quick ? "quick" : "full", o->reps);
	fprintf(f, "- timed run: %.2f s (throughput loops), %.2f s (cost "
	    "loops)\n", o->run_secs, o->call_secs);
	fprintf(f, "- RLIMIT_NOFILE: %ld; FD_SETSIZE: %d\n", o->nofile,
	    FD_SETSIZE);
	fprintf(f, "- CPU time = user + system time of the whole process "
	    "(CLOCK_PROCESS_CPUTIME_ID); wall = CLOCK_MONOTONIC\n");
	fprintf(f, "- `x epoll` columns: backend / raw epoll measured in the "
	    "same repetition (median of the per-repetition ratios). For "
	    "throughput higher is better, for costs (ns, µs, syscalls) lower "
	    "is better.\n");
	fprintf(f, "- `epoll+data` (ring, allready, threads): raw epoll plus "
	    "one ioctl(FIONREAD) per event, the byte count kq must report in "
	    "`data`: the floor for exact data on Linux. `x epoll+data` "
	    "columns: kq / epoll+data, same method.\n");
}

/* ---- isolation ------------------------------------------------------------- */

/*
 * Run one scenario in a child process so that a crash or a hang in the
 * library costs that scenario only, and every scenario starts from a fresh
 * process (no kqueue pools, descriptors or heap left by the previous one).
 * The child writes its tables into shared memory.  Returns the scenario's
 * result (0 or -1); `why` says how a child that did not exit normally died.
 */
static int
run_isolated(const struct bench_scenario *s, const struct bench_opts *o,
    struct bench_result *res, char *why, size_t whylen)
{
	unsigned limit = o->quick ? 150 : 1800;
	pid_t pid;
	int st;

	if (o->quick && s->limit_quick)
		limit = s->limit_quick;
	if (!o->quick && s->limit_full)
		limit = s->limit_full;
	why[0] = '\0';
	if (s->prepare && s->prepare(o) != 0) {
		snprintf(why, whylen, "preparation failed");
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		alarm(limit);
		_exit(s->run(o, res) == 0 ? 0 : 1);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			snprintf(why, whylen, "waitpid: %s", strerror(errno));
			return -1;
		}
	if (WIFSIGNALED(st)) {
		if (WTERMSIG(st) == SIGALRM)
			snprintf(why, whylen, "timed out after %u s", limit);
		else
			snprintf(why, whylen, "killed by signal %d (%s)",
			    WTERMSIG(st), strsignal(WTERMSIG(st)));
		return -1;
	}
	return WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* ---- main ---------------------------------------------------------------- */

static int
selected(char *const *names, int nnames, const char *name)
{
	if (nnames == 0)
		return 1;
	for (int i = 0; i < nnames; i++)
		if (strcmp(names[i], name) == 0)
			return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "quick",	no_argument,		NULL, 'q' },
		{ "full",	no_argument,		NULL, 'f' },
		{ "tiny",	no_argument,		NULL, 't' },
		{ "scenario",	required_argument,	NULL, 's' },
		{ "reps",	required_argument,	NULL, 'r' },
		{ "out",	required_argument,	NULL, 'o' },
		{ "list",	no_argument,		NULL, 'l' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL,		0,			NULL, 0 },
	};
	static char self[4096], cmdline[1024];
	struct bench_opts o = { .outdir = "build/bench", .reps = 0 };
	char *names[64];
	int nnames = 0, c, failed = 0, ran = 0;
	struct bench_result *res;
	char path[4096];
	ssize_t sl;
	FILE *md, *rep;
	char *body = NULL;
	size_t bodylen = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Hidden entry points for re-execution (see bench-syscalls.c). */
	if (argc >= 2 && strncmp(argv[1], "--", 2) == 0)
		for (int i = 0; i < NSCEN; i++) {
			char opt[64];

			snprintf(opt, sizeof(opt), "--%s-fixed",
			    registry[i]->name);
			if (registry[i]->fixed && strcmp(argv[1], opt) == 0) {
				raise_nofile();
				return registry[i]->fixed(argc - 2, argv + 2);
			}
		}

	/* Saved first: getopt and strtok rewrite argv. */
	for (int i = 0; i < argc; i++)
		snprintf(cmdline + strlen(cmdline),
		    sizeof(cmdline) - strlen(cmdline), "%s%s", i ? " " : "",
		    argv[i]);
	while ((c = getopt_long(argc, argv, "qfts:r:o:lh", lopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			o.quick = 1;
			o.tiny = 0;
			break;
		case 'f':
			o.quick = 0;
			o.tiny = 0;
			break;
		case 't':
			o.quick = 1;
			o.tiny = 1;
			break;
		case 's':
			for (char *tok = strtok(optarg, ","); tok;
			    tok = strtok(NULL, ",")) {
				int ok = 0;

				for (int i = 0; i < NSCEN; i++)
					ok |= strcmp(registry[i]->name, tok) == 0;
				if (!ok) {
					fprintf(stderr, "kqbench: no scenario "
					    "'%s' (try --list)\n", tok);
					return 2;
				}
				if (nnames < 64)
					names[nnames++] = tok;
			}
			break;
		case 'r':
			o.reps = atoi(optarg);
			break;
		case 'o':
			o.outdir = optarg;
			break;
		case 'l':
			for (int i = 0; i < NSCEN; i++)
				printf("%-10s %s\n", registry[i]->name,
				    registry[i]->title);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (o.reps == 0)
		o.reps = o.tiny ? 1 : o.quick ? 5 : 11;
	if (o.reps < 1)
		o.reps = 1;
	if (o.reps < 5 && !o.tiny) {
		fprintf(stderr, "kqbench: --reps %d raised to 5 (medians need "
		    "at least 5 repetitions)\n", o.reps);
		o.reps = 5;
	}
	if (o.reps > MAXREPS)
		o.reps = MAXREPS;
	o.run_secs = o.tiny ? 0.02 : o.quick ? 0.3 : 2.0;
	o.call_secs = o.tiny ? 0.01 : o.quick ? 0.1 : 0.5;

	sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl > 0)
		self[sl] = '\0';
	else
		snprintf(self, sizeof(self), "%s", argv[0]);
	o.self = self;

	o.nofile = raise_nofile();
	printf("kqbench: RLIMIT_NOFILE raised to %ld\n", o.nofile);
	printf("kqbench: %s mode, %d repetitions, output in %s\n",
	    o.tiny ? "tiny" : o.quick ? "quick" : "full", o.reps, o.outdir);
	if (mkdir_p(o.outdir) < 0) {
		fprintf(stderr, "kqbench: %s: %s\n", o.outdir, strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/report.md", o.outdir);
	/* The scenarios' sections go to memory; the headline comes first. */
	if (!(md = open_memstream(&body, &bodylen))) {
		fprintf(stderr, "kqbench: open_memstream: %s\n",
		    strerror(errno));
		return 1;
	}
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		fclose(md);
		return 1;
	}

	for (int i = 0; i < NSCEN; i++) {
		const struct bench_scenario *s = registry[i];
		uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
		char why[128];
		int rc;

		if (!selected(names, nnames, s->name))
			continue;
		ran++;
		progress("[%s] %s\n", s->name, s->title);
		memset(res, 0, sizeof(*res));
		rc = run_isolated(s, &o, res, why, sizeof(why));
		progress("[%s] done in %.1f s%s%s%s\n", s->name,
		    (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e9,
		    rc ? " - FAILED" : "", why[0] ? ": " : "",
		    rc ? why : "");
		if (rc) {
			failed++;
			printf("\nscenario %s FAILED%s%s\n", s->name,
			    why[0] ? ": " : "", why);
		}
		fprintf(md, "\n## %s\n", s->name);
		if (rc)
			fprintf(md, "\n**Scenario failed%s%s**; the tables "
			    "below may be incomplete (progress and errors "
			    "went to stderr).\n", why[0] ? ": " : "", why);
		for (int k = 0; k < res->ntables; k++) {
			print_table(stdout, &res->table[k]);
			md_table(md, &res->table[k]);
			headline_take(&res->table[k]);
			if (write_tsv(o.outdir, &res->table[k]) != 0)
				fprintf(stderr, "kqbench: writing %s.tsv: %s\n",
				    res->table[k].name, strerror(errno));
		}
		fflush(md);
	}
	munmap(res, sizeof(*res));
	if (!o.tiny) {
		/* A real client's own benchmark, measured by tests/clients. */
		static struct bench_table ct;

		fprintf(md, "\n## libevent-bench\n");
		if (clients_table(o.outdir, &ct)) {
			print_table(stdout, &ct);
			headline_take(&ct);
			md_table(md, &ct);
		} else
			fprintf(md, "\n%s", ct.notes);
		fprintf(md, "\n## nginx-bench\n");
		if (clients_nginx_table(o.outdir, &ct)) {
			print_table(stdout, &ct);
			headline_take(&ct);
			md_table(md, &ct);
		} else
			fprintf(md, "\n%s", ct.notes);
		/* Seed 003's experiment, from `tests/clients/libevent.sh
		   evport`; its TSV goes beside the others for the plots. */
		fprintf(md, "\n## libevent-seed003\n");
		if (clients_seed003_table(o.outdir, &ct)) {
			print_table(stdout, &ct);
			md_table(md, &ct);
			if (write_tsv(o.outdir, &ct) != 0)
				fprintf(stderr, "kqbench: writing %s.tsv: %s\n",
				    ct.name, strerror(errno));
		} else
			fprintf(md, "\n%s", ct.notes);
		fprintf(md, "\n## redis-bench\n");
		if (clients_redis_table(o.outdir, &ct)) {
			print_table(stdout, &ct);
			headline_take(&ct);
			md_table(md, &ct);
		} else
			fprintf(md, "\n%s", ct.notes);
	}
	bench_plots(o.outdir, md);
	fclose(md);
	if (!(rep = fopen(path, "w"))) {
		fprintf(stderr, "kqbench: %s: %s\n", path, strerror(errno));
		free(body);
		return 1;
	}
	md_header(rep, &o, cmdline);
	headline_write(rep, stdout);
	fwrite(body, 1, bodylen, rep);
	free(body);
	if (fclose(rep) != 0)
		fprintf(stderr, "kqbench: %s: %s\n", path, strerror(errno));
	printf("\nkqbench: %d scenario(s), %d failed; report in %s\n", ran,
	    failed, path);
	return failed ? 1 : 0;
}
