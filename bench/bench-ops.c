/*
 * bench-ops.c -- the cost of one registration change.
 *
 * On N = 1000 idle pipe read ends, one round does, for every descriptor in
 * turn: add, disable, enable, delete.  kq submits one change per kevent()
 * call with nevents = 0; raw epoll does the equivalent epoll_ctl():
 *
 *   EV_ADD     <-> EPOLL_CTL_ADD (EPOLLIN)
 *   EV_DISABLE <-> EPOLL_CTL_MOD (events 0)
 *   EV_ENABLE  <-> EPOLL_CTL_MOD (EPOLLIN)
 *   EV_DELETE  <-> EPOLL_CTL_DEL
 *
 * Each phase is timed on its own; a repetition is several rounds of kq then
 * several rounds of epoll.  poll() and select() keep no kernel state, so
 * they have nothing to measure here.
 */
#include "bench.h"

#include <sys/epoll.h>
#include <sys/event.h>

#define OPS_N		1000
#define OPS_NPHASE	4

static const char *const ops_kq_name[OPS_NPHASE] = {
	"EV_ADD", "EV_DISABLE", "EV_ENABLE", "EV_DELETE",
};
static const char *const ops_ep_name[OPS_NPHASE] = {
	"CTL_ADD", "CTL_MOD(0)", "CTL_MOD(IN)", "CTL_DEL",
};

struct ops_acc {
	uint64_t cpu[OPS_NPHASE];
	uint64_t wall[OPS_NPHASE];
	long	 errors;
	int	 err;	/* first errno */
};

static void
ops_err(struct ops_acc *a)
{
	if (!a->errors++)
		a->err = errno;
}

static void
ops_round_kq(int kq, const struct fdpairs *p, struct ops_acc *a)
{
	static const unsigned short fl[OPS_NPHASE] = {
		EV_ADD, EV_DISABLE, EV_ENABLE, EV_DELETE,
	};

	for (int ph = 0; ph < OPS_NPHASE; ph++) {
		struct bench_sample s;

		sample_start(&s);
		for (int i = 0; i < p->n; i++) {
			struct kevent ch;

			EV_SET(&ch, p->r[i], EVFILT_READ, fl[ph], 0, 0,
			    (void *)(intptr_t)i);
			if (kevent(kq, &ch, 1, NULL, 0, NULL) != 0)
				ops_err(a);
		}
		sample_stop(&s);
		a->cpu[ph] += s.cpu_ns;
		a->wall[ph] += s.wall_ns;
	}
}

static void
ops_round_epoll(int ep, const struct fdpairs *p, struct ops_acc *a)
{
	static const int op[OPS_NPHASE] = {
		EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_MOD, EPOLL_CTL_DEL,
	};
	static const uint32_t evs[OPS_NPHASE] = { EPOLLIN, 0, EPOLLIN, 0 };

	for (int ph = 0; ph < OPS_NPHASE; ph++) {
		struct bench_sample s;

		sample_start(&s);
		for (int i = 0; i < p->n; i++) {
			struct epoll_event ee;

			ee.events = evs[ph];
			ee.data.u64 = (uint64_t)i;
			if (epoll_ctl(ep, op[ph], p->r[i], &ee) != 0)
				ops_err(a);
		}
		sample_stop(&s);
		a->cpu[ph] += s.cpu_ns;
		a->wall[ph] += s.wall_ns;
	}
}

static int
ops_run(const struct bench_opts *o, struct bench_result *res)
{
	static double cpu[2][OPS_NPHASE + 1][MAXREPS];
	static double wall[2][OPS_NPHASE + 1][MAXREPS];
	struct bench_table *t = bt_new(res, "ops",
	    "ops: cost of one registration change (N = 1000 pipes)");
	int rounds = o->tiny ? 1 : o->quick ? 10 : 50, n = OPS_N, kq, ep;
	long errors[2] = { 0, 0 };
	int errs[2] = { 0, 0 };
	struct fdpairs p;

	if (2L * n + 64 > o->nofile)
		n = (int)((o->nofile - 64) / 2);
	if (fdpairs_open(&p, n, 0, 0) < 0) {
		progress("ops: pipes: %s\n", strerror(errno));
		return -1;
	}
	if ((kq = kqueue()) < 0 || (ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		progress("ops: kqueue/epoll_create1: %s\n", strerror(errno));
		fdpairs_close(&p);
		return -1;
	}
	for (int rep = 0; rep < o->reps; rep++) {
		progress("[ops] rep %d/%d\n", rep + 1, o->reps);
		for (int b = 0; b < 2; b++) {
			struct ops_acc a;
			uint64_t tc = 0, tw = 0;

			memset(&a, 0, sizeof(a));
			for (int r = 0; r < rounds; r++) {
				if (b == 0)
					ops_round_kq(kq, &p, &a);
				else
					ops_round_epoll(ep, &p, &a);
			}
			for (int ph = 0; ph < OPS_NPHASE; ph++) {
				double ops = (double)rounds * n;

				cpu[b][ph][rep] = (double)a.cpu[ph] / ops;
				wall[b][ph][rep] = (double)a.wall[ph] / ops;
				tc += a.cpu[ph];
				tw += a.wall[ph];
			}
			cpu[b][OPS_NPHASE][rep] = (double)tc / ((double)rounds * n);
			wall[b][OPS_NPHASE][rep] = (double)tw / ((double)rounds * n);
			if (a.errors && !errors[b])
				errs[b] = a.err;
			errors[b] += a.errors;
		}
	}
	close(kq);
	close(ep);
	fdpairs_close(&p);

	bt_cols(t, "operation|kq ns/op CPU|epoll ns/op CPU|kq/epoll CPU|"
	    "kq ns/op wall|epoll ns/op wall|kq/epoll wall|kq spread %");
	for (int ph = 0; ph <= OPS_NPHASE; ph++) {
		struct bk_stats kc, ec, kw, ew;
		int r = bt_row(t);

		bk_summarize(cpu[0][ph], cpu[1][ph], o->reps, &kc);
		bk_summarize(cpu[1][ph], NULL, o->reps, &ec);
		bk_summarize(wall[0][ph], wall[1][ph], o->reps, &kw);
		bk_summarize(wall[1][ph], NULL, o->reps, &ew);
		if (ph < OPS_NPHASE)
			bt_set(t, r, 0, "%s vs %s", ops_kq_name[ph],
			    ops_ep_name[ph]);
		else
			bt_set(t, r, 0, "cycle (sum of 4)");
		bt_num(t, r, 1, kc.med);
		bt_num(t, r, 2, ec.med);
		bt_set(t, r, 3, "%.2f", kc.ratio);
		bt_num(t, r, 4, kw.med);
		bt_num(t, r, 5, ew.med);
		bt_set(t, r, 6, "%.2f", kw.ratio);
		bt_set(t, r, 7, "%.1f", kc.spread);
	}
	bt_note(t, "Cost: lower is better; kq/epoll = kq's cost / raw "
	    "epoll_ctl's cost (1.50 = kq takes 50%% longer). One change per "
	    "kevent() call, nevents = 0. %d descriptors x %d rounds per "
	    "repetition, %d repetitions.", n, rounds, o->reps);
	if (errors[0] || errors[1])
		bt_note(t, " Errors: kq %ld (first: %s), epoll %ld (first: %s).",
		    errors[0], errors[0] ? strerror(errs[0]) : "-", errors[1],
		    errors[1] ? strerror(errs[1]) : "-");
	else
		bt_note(t, " No errors.");
	bt_note(t, "\n");
	return errors[0] || errors[1] ? -1 : 0;
}

/*
 * `kqbench --ops-fixed BACKEND N ITERS`: ITERS rounds of the four changes
 * (add, disable, enable, delete) on each of N pipes; a unit is one change.
 */
static int
ops_fixed(int argc, char **argv)
{
	struct ops_acc a = { 0 };
	struct fdpairs p;
	long rounds;
	int bk, fd;

	if (argc != 3 || ((bk = bk_parse(argv[0])) != BK_KQ &&
	    bk != BK_EPOLL)) {
		fprintf(stderr, "usage: kqbench --ops-fixed kq|epoll N ITERS\n");
		return 2;
	}
	if (fdpairs_open(&p, atoi(argv[1]), 0, 0) < 0) {
		perror("ops: pipes");
		return 1;
	}
	/* ITERS changes: ITERS / (4 N) rounds (the caller picks a multiple). */
	rounds = atol(argv[2]) / (OPS_NPHASE * (long)(p.n ? p.n : 1));
	fd = bk == BK_KQ ? kqueue() : epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0) {
		perror("ops: kqueue/epoll_create1");
		return 1;
	}
	for (long r = 0; r < rounds; r++) {
		if (bk == BK_KQ)
			ops_round_kq(fd, &p, &a);
		else
			ops_round_epoll(fd, &p, &a);
	}
	close(fd);
	fdpairs_close(&p);
	if (a.errors)
		fprintf(stderr, "ops: %ld errors: %s\n", a.errors,
		    strerror(a.err));
	return a.errors ? 1 : 0;
}

const struct bench_scenario bench_ops = {
	.name = "ops",
	.title = "EV_ADD/DISABLE/ENABLE/DELETE vs epoll_ctl, ns per change",
	.run = ops_run,
	.fixed = ops_fixed,
};
