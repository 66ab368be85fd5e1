/*
 * bench-idle.c -- the price of idle descriptors.
 *
 * N descriptors are registered for reading and none is ever ready; each
 * call is one wait with a zero timeout that returns nothing.  The
 * descriptors are both ends of N/2 AF_UNIX socketpairs, so N can approach
 * RLIMIT_NOFILE (19 000 needs 19 000 descriptors).  kq keeps its interest
 * set in the kernel, like epoll, so its cost should not depend on N;
 * poll() and select() hand the whole set to the kernel on every call.
 */
#include "waitset.h"

static int
idle_run(const struct bench_opts *o, struct bench_result *res)
{
	static const int sizes[] = { 10, 100, 1000, 10000, 19000 };
	static double cpu[BK_COUNT][MAXREPS], wall[BK_COUNT][MAXREPS];
	struct bench_table *t = bt_new(res, "idle",
	    "idle: one zero-timeout wait over N idle descriptors");
	double kq_first = 0, kq_last = 0, ep_first = 0, ep_last = 0;
	int first_n = 0, last_n = 0, failed = 0;

	bt_cols(t, "N|backend|ns/call CPU|ns/call wall|spread %|"
	    "x epoll (CPU)|x epoll (wall)|bad calls");
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		int n = sizes[si], pairs, nrep[BK_COUNT] = { 0 };
		struct waitset ws[BK_COUNT];
		int open_ok[BK_COUNT] = { 0 };
		struct fdpairs p;
		int *fds;

		if (o->tiny && si > 0)
			break;
		/* Leave room for stdio, kq's own descriptors and epoll. */
		if (n + 64 > o->nofile) {
			progress("[idle] N=%d skipped: RLIMIT_NOFILE %ld\n",
			    n, o->nofile);
			bt_note(t, "N=%d skipped: RLIMIT_NOFILE is %ld. ", n,
			    o->nofile);
			continue;
		}
		pairs = (n + 1) / 2;
		if (fdpairs_open(&p, pairs, 1, 0) < 0) {
			progress("idle: %d socketpairs: %s\n", pairs,
			    strerror(errno));
			failed = 1;
			continue;
		}
		if (!(fds = malloc(sizeof(int) * (size_t)n))) {
			fdpairs_close(&p);
			return -1;
		}
		for (int i = 0; i < n; i++)
			fds[i] = i % 2 ? p.w[i / 2] : p.r[i / 2];
		for (int bk = 0; bk < BK_COUNT; bk++) {
			if (bk == BK_SELECT && !waitset_select_ok(fds, n))
				continue;
			if (waitset_open(&ws[bk], bk, fds, n, 0) < 0) {
				progress("idle: N=%d %s setup: %s\n", n,
				    bk_name(bk), strerror(errno));
				bt_note(t, "N=%d %s setup failed: %s. ", n,
				    bk_name(bk), strerror(errno));
				failed = 1;
				continue;
			}
			open_ok[bk] = 1;
		}
		for (int rep = 0; rep < o->reps; rep++) {
			progress("[idle] N=%d rep %d/%d\n", n, rep + 1, o->reps);
			for (int bk = 0; bk < BK_COUNT; bk++) {
				struct bench_sample s;

				if (!open_ok[bk])
					continue;
				if (bench_timed(o->call_secs, waitset_loop,
				    &ws[bk], &s) < 0) {
					progress("idle: %s: %s\n", bk_name(bk),
					    strerror(ws[bk].err));
					failed = 1;
					continue;
				}
				cpu[bk][nrep[bk]] = cpu_ns_per(&s);
				wall[bk][nrep[bk]] = wall_ns_per(&s);
				nrep[bk]++;
			}
		}
		for (int bk = 0; bk < BK_COUNT; bk++) {
			struct bk_stats sc, sw;
			int r;

			if (!open_ok[bk])
				continue;
			r = bt_row(t);
			bk_summarize(cpu[bk], nrep[BK_EPOLL] == nrep[bk] ?
			    cpu[BK_EPOLL] : NULL, nrep[bk], &sc);
			bk_summarize(wall[bk], nrep[BK_EPOLL] == nrep[bk] ?
			    wall[BK_EPOLL] : NULL, nrep[bk], &sw);
			bt_set(t, r, 0, "%d", n);
			bt_set(t, r, 1, "%s", bk_name(bk));
			bt_num(t, r, 2, sc.med);
			bt_num(t, r, 3, sw.med);
			bt_set(t, r, 4, "%.1f", sc.spread);
			bt_set(t, r, 5, "%.2f", sc.ratio);
			bt_set(t, r, 6, "%.2f", sw.ratio);
			bt_set(t, r, 7, "%ld", ws[bk].bad);
			if (ws[bk].bad)
				bt_note(t, "N=%d %s: %ld of %ld calls returned "
				    "events (%d..%d) on idle descriptors. ", n,
				    bk_name(bk), ws[bk].bad, ws[bk].calls,
				    ws[bk].got_min, ws[bk].got_max);
			if (bk == BK_KQ || bk == BK_EPOLL) {
				double *f = bk == BK_KQ ? &kq_first : &ep_first;
				double *l = bk == BK_KQ ? &kq_last : &ep_last;

				if (*f == 0.0) {
					*f = sc.med;
					first_n = n;
				}
				*l = sc.med;
				last_n = n;
			}
			waitset_close(&ws[bk]);
		}
		free(fds);
		fdpairs_close(&p);
	}
	bt_note(t, "%sCost: lower is better; `x epoll` = backend's ns per "
	    "call / epoll_wait's (1.20 = 20%% slower). Descriptors: both ends "
	    "of N/2 socketpairs, registered for reading, never ready; timeout "
	    "{0, 0}. select() only where every descriptor < FD_SETSIZE.",
	    t->notes[0] ? "\n\n" : "");
	if (kq_first > 0 && ep_first > 0)
		bt_note(t, " Flatness, CPU ns/call at N=%d over N=%d: kq %.2f, "
		    "epoll %.2f (1.00 = flat).", last_n, first_n,
		    kq_last / kq_first, ep_last / ep_first);
	bt_note(t, "\n");
	return failed ? -1 : 0;
}

/*
 * `kqbench --idle-fixed BACKEND N ITERS`: exactly ITERS zero-timeout waits
 * over N idle descriptors (the syscalls scenario traces it).
 */
static int
idle_fixed(int argc, char **argv)
{
	struct waitset ws;
	struct fdpairs p;
	int bk, n, *fds, rc;

	if (argc != 3 || (bk = bk_parse(argv[0])) < 0 ||
	    (n = atoi(argv[1])) < 2) {
		fprintf(stderr, "usage: kqbench --idle-fixed BACKEND N ITERS\n");
		return 2;
	}
	if (fdpairs_open(&p, n / 2, 1, 0) < 0 ||
	    !(fds = malloc(sizeof(int) * (size_t)n))) {
		perror("idle: socketpairs");
		return 1;
	}
	for (int i = 0; i < n / 2 * 2; i++)
		fds[i] = i % 2 ? p.w[i / 2] : p.r[i / 2];
	if (waitset_open(&ws, bk, fds, n / 2 * 2, 0) < 0) {
		perror("idle: set-up");
		return 1;
	}
	rc = waitset_loop(&ws, atol(argv[2]));
	printf("%s n=%d calls=%ld bad=%ld\n", bk_name(bk), n, ws.calls,
	    ws.bad);
	waitset_close(&ws);
	free(fds);
	fdpairs_close(&p);
	return rc < 0 || ws.bad ? 1 : 0;
}

const struct bench_scenario bench_idle = {
	.name = "idle",
	.title = "zero-timeout wait over N idle descriptors, ns per call",
	.run = idle_run,
	.fixed = idle_fixed,
};
