/*
 * bench-create.c -- the cost of a queue's whole life when it holds nothing:
 * kqueue() + close() against epoll_create1(0) + close().
 */
#include "bench.h"

#include <sys/epoll.h>
#include <sys/event.h>

#define CREATE_PAIRS	100000

struct create_arg {
	int	 kq;		/* 1: kqueue(), 0: epoll_create1() */
	long	 errors;
	int	 err;
};

static int
create_loop(void *varg, long iters)
{
	struct create_arg *a = varg;

	for (long i = 0; i < iters; i++) {
		int fd = a->kq ? kqueue() : epoll_create1(0);

		if (fd < 0) {
			if (!a->errors++)
				a->err = errno;
			return -1;
		}
		close(fd);
	}
	return 0;
}

static int
create_run(const struct bench_opts *o, struct bench_result *res)
{
	static double cpu[2][MAXREPS], wall[2][MAXREPS];
	struct bench_table *t = bt_new(res, "create",
	    "create: kqueue()+close() vs epoll_create1(0)+close()");
	struct create_arg arg[2] = { { .kq = 1 }, { .kq = 0 } };
	int nrep[2] = { 0, 0 };

	bt_cols(t, "pair|ns/pair CPU|ns/pair wall|spread %|x epoll (CPU)|"
	    "x epoll (wall)");
	/* Let one-time library set-up happen outside the measurement. */
	create_loop(&arg[0], 1);
	for (int rep = 0; rep < o->reps; rep++) {
		progress("[create] rep %d/%d\n", rep + 1, o->reps);
		for (int b = 0; b < 2; b++) {
			struct bench_sample s;

			sample_start(&s);
			if (create_loop(&arg[b], CREATE_PAIRS) < 0) {
				progress("create: %s: %s\n", b ? "epoll" : "kq",
				    strerror(arg[b].err));
				continue;
			}
			sample_stop(&s);
			s.iters = CREATE_PAIRS;
			cpu[b][nrep[b]] = cpu_ns_per(&s);
			wall[b][nrep[b]] = wall_ns_per(&s);
			nrep[b]++;
		}
	}
	for (int b = 0; b < 2; b++) {
		struct bk_stats sc, sw;
		int r = bt_row(t);

		bk_summarize(cpu[b], nrep[1] == nrep[b] ? cpu[1] : NULL,
		    nrep[b], &sc);
		bk_summarize(wall[b], nrep[1] == nrep[b] ? wall[1] : NULL,
		    nrep[b], &sw);
		bt_set(t, r, 0, "%s", b ? "epoll_create1(0) + close()" :
		    "kqueue() + close()");
		bt_num(t, r, 1, sc.med);
		bt_num(t, r, 2, sw.med);
		bt_set(t, r, 3, "%.1f", sc.spread);
		bt_set(t, r, 4, "%.2f", sc.ratio);
		bt_set(t, r, 5, "%.2f", sw.ratio);
	}
	bt_note(t, "Cost: lower is better; `x epoll` = kq's ns per pair / "
	    "epoll's (2.00 = twice as expensive). %d pairs per backend per "
	    "repetition, %d repetitions.", CREATE_PAIRS, o->reps);
	if (arg[0].errors || arg[1].errors)
		bt_note(t, " Errors: kq %ld (%s), epoll %ld (%s).",
		    arg[0].errors, arg[0].errors ? strerror(arg[0].err) : "-",
		    arg[1].errors, arg[1].errors ? strerror(arg[1].err) : "-");
	bt_note(t, "\n");
	return arg[0].errors || arg[1].errors ? -1 : 0;
}

/* `kqbench --create-fixed BACKEND N ITERS`: ITERS pairs (N is unused). */
static int
create_fixed(int argc, char **argv)
{
	struct create_arg a = { 0 };
	int bk;

	if (argc != 3 || ((bk = bk_parse(argv[0])) != BK_KQ &&
	    bk != BK_EPOLL)) {
		fprintf(stderr, "usage: kqbench --create-fixed kq|epoll N "
		    "ITERS\n");
		return 2;
	}
	a.kq = bk == BK_KQ;
	if (create_loop(&a, atol(argv[2])) < 0) {
		fprintf(stderr, "create: %s\n", strerror(a.err));
		return 1;
	}
	return 0;
}

const struct bench_scenario bench_create = {
	.name = "create",
	.title = "kqueue()+close() vs epoll_create1()+close(), ns per pair",
	.run = create_run,
	.fixed = create_fixed,
};
