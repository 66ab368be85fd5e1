/*
 * A kqueue watched by other kqueues, driven by generated sequences and
 * checked against FreeBSD's rules (filt_kqueue: data is the watched
 * kqueue's queue length; the watching knote is activated when a knote is
 * queued there, as knote_enqueue's kqueue_wakeup does).
 *
 * The inner kqueue watches the reading ends of NPAIR socketpairs with
 * EVFILT_READ, each knote level-triggered or EV_CLEAR at random.  Two
 * outer kqueues watch the inner one: one with EV_CLEAR, one
 * level-triggered.  Random steps write to a pair, read a pair empty,
 * collect the inner kqueue (with room for everything) or look at an outer
 * one.  The oracle keeps FreeBSD's queue state of every inner knote and
 * says, at each look, whether the outer knote must be reported, may be
 * (where kevent.2's LINUX NOTES allow kq to differ: an approximate count,
 * a report again when more arrives for an event already pending), or must
 * not be.
 *
 * KQ_NESTED_SEED=N runs seed N alone (KQ_NESTED_SEEDS=M: M seeds from N),
 * KQ_NESTED_VERBOSE=1 prints every step.
 */
#include "helpers.h"

#include <stdint.h>
#include <stdlib.h>

#define NPAIR	6
#define STEPS	600

struct inner_kn {
	int	fd[2];		/* [0] watched, [1] written */
	int	clear;		/* EV_CLEAR, else level */
	long	bytes;		/* readable at fd[0] */
	int	queued;		/* FreeBSD: on the inner kqueue's queue */
	int	act;		/* queued since the EV_CLEAR outer's last look */
	int	more;		/* written to while queued since that look */
	/*
	 * kevent.2's LINUX NOTES: an EV_CLEAR knote that a watching
	 * kqueue's count moved to kq's active list (looked), written to
	 * again there (spur), may be reported once more, without new
	 * activity, by the collection after the one that reports it (extra).
	 */
	int	looked, spur, extra;
};

static uint64_t rng;
static int verbose;	/* KQ_NESTED_VERBOSE=1: print every step */

static unsigned
rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

/* May the EV_CLEAR outer knote be reported, must it (returns 2), or not? */
static int
clear_outer_verdict(const struct inner_kn *k, int may_all)
{
	int must = 0, may = may_all;

	for (int i = 0; i < NPAIR; i++) {
		/* Read empty since, the knote is still queued on FreeBSD,
		   but epoll no longer hands its event to kq's count. */
		if (k[i].act && k[i].bytes > 0)
			must = 1;
		if (k[i].act || k[i].more || k[i].extra)
			may = 1;
	}
	return must ? 2 : may;
}

/* The level outer knote: 2 must, 1 may, 0 must not be reported. */
static int
level_outer_verdict(const struct inner_kn *k)
{
	int must = 0, may = 0;

	for (int i = 0; i < NPAIR; i++) {
		if (k[i].bytes > 0 && (!k[i].clear || k[i].queued))
			must = 1;
		/* FreeBSD counts a queued knote until a collection finds
		   it false; kq counts what is readable. */
		if (k[i].queued || k[i].extra)
			may = 1;
	}
	return must ? 2 : may;
}

static void
look_outer(int outer, int inner, int verdict, const char *which, int step)
{
	struct kevent ev[2];
	int n = t_poll(outer, ev, 2);

	if ((verdict == 2 && n != 1) || (verdict == 0 && n != 0) || n > 1) {
		fprintf(stderr, "step %d: %s outer returned %d, verdict %s\n",
		    step, which, n, verdict == 2 ? "must" : verdict ? "may" :
		    "must not");
		fail();
	}
	if (n == 1) {
		assert_int_equal(ev[0].ident, (uintptr_t)inner);
		assert_int_equal(ev[0].filter, EVFILT_READ);
		assert_true(ev[0].data >= 1);
	}
}

static void
collect_inner(int inner, struct inner_kn *k, int step)
{
	struct kevent ev[NPAIR + 1];
	int n = t_poll(inner, ev, NPAIR + 1), seen[NPAIR] = { 0 };

	for (int j = 0; j < n; j++) {
		int i = (int)(intptr_t)ev[j].udata;

		assert_true(i >= 0 && i < NPAIR && !seen[i]);
		seen[i] = 1;
		assert_int_equal(ev[j].ident, (uintptr_t)k[i].fd[0]);
		assert_int_equal(ev[j].data, k[i].bytes);
	}
	for (int i = 0; i < NPAIR; i++) {
		int want = k[i].bytes > 0 && (!k[i].clear || k[i].queued);
		int extra = k[i].extra;

		k[i].extra = want && k[i].spur;
		k[i].looked = k[i].spur = 0;
		if (seen[i] != want && !(seen[i] && extra)) {
			fprintf(stderr, "step %d: inner knote %d (%s, %ld bytes"
			    ", queued %d) %s\n", step, i, k[i].clear ?
			    "EV_CLEAR" : "level", k[i].bytes, k[i].queued,
			    seen[i] ? "reported" : "not reported");
			fail();
		}
		/* The collection went through the whole queue. */
		k[i].queued = !k[i].clear && k[i].bytes > 0;
	}
}

static void
run_seed(uint64_t seed)
{
	struct inner_kn k[NPAIR];
	char buf[64];
	int inner, oc, ol, may_all = 0, echo = 0;

	rng = seed * 0x9e3779b97f4a7c15ULL | 1;
	inner = t_new_kq();
	oc = t_new_kq();
	ol = t_new_kq();
	for (int i = 0; i < NPAIR; i++) {
		memset(&k[i], 0, sizeof(k[i]));
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, k[i].fd),
		    0);
		t_track(k[i].fd[0]);
		t_track(k[i].fd[1]);
		set_nonblock(k[i].fd[0]);
		k[i].clear = rnd(2);
		t_change(inner, k[i].fd[0], EVFILT_READ,
		    EV_ADD | (k[i].clear ? EV_CLEAR : 0), 0, 0,
		    (void *)(intptr_t)i);
	}
	t_change(oc, inner, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	t_change(ol, inner, EVFILT_READ, EV_ADD, 0, 0, NULL);
	for (int step = 0; step < STEPS; step++) {
		int i = rnd(NPAIR), w, op = rnd(5), side = rnd(2);

		if (verbose)
			fprintf(stderr, "step %d: op %d pair %d (%s) side %d\n",
			    step, op, i, k[i].clear ? "clear" : "level", side);
		switch (op) {
		case 0:
		case 1:
			w = 1 + rnd(8);
			memset(buf, 'x', (size_t)w);
			assert_int_equal(write(k[i].fd[1], buf, (size_t)w), w);
			k[i].bytes += w;
			if (k[i].queued && k[i].looked)
				k[i].spur = 1;
			if (k[i].queued)
				k[i].more = 1;
			else
				k[i].queued = k[i].act = 1;
			break;
		case 2:
			while (read(k[i].fd[0], buf, sizeof(buf)) > 0)
				;
			k[i].bytes = 0;
			break;
		case 3:
			collect_inner(inner, k, step);
			/*
			 * A collection is not an activation, but kq may
			 * report the EV_CLEAR outer again after one: for an
			 * activation it saw before (FreeBSD does when the
			 * queue is not empty), or for the doorbell it rang
			 * at the outer's last look, which it no longer
			 * tells from new activity (echo).
			 */
			for (int j = 0; j < NPAIR; j++)
				if (k[j].act || k[j].more)
					may_all = 1;
			if (echo)
				may_all = 1;
			for (int j = 0; j < NPAIR; j++)
				k[j].act = 0;
			break;
		default:
			for (int j = 0; j < NPAIR; j++)
				if (k[j].clear && k[j].queued)
					k[j].looked = 1;
			if (side) {
				look_outer(oc, inner,
				    clear_outer_verdict(k, may_all), "EV_CLEAR",
				    step);
				echo = 0;
				for (int j = 0; j < NPAIR; j++)
					if (k[j].clear && k[j].queued)
						echo = 1;
				for (int j = 0; j < NPAIR; j++)
					k[j].act = k[j].more = 0;
				may_all = 0;
			} else
				look_outer(ol, inner, level_outer_verdict(k),
				    "level", step);
		}
	}
	t_close_tracked();
	close(inner);
	close(oc);
	close(ol);
}

/*
 * The EV_CLEAR watcher is reported at its first look after a knote was
 * queued on the watched kqueue and never twice for one queueing; the
 * level watcher while the watched kqueue holds a reportable event, and not
 * when it holds none; the watched kqueue itself reports what FreeBSD's
 * would.
 */
static void
kqueue_watchers_follow_the_watched_queue_in_generated_sequences(void **state)
{
	const char *s = getenv("KQ_NESTED_SEED"), *c = getenv("KQ_NESTED_SEEDS");
	uint64_t first = s != NULL ? strtoull(s, NULL, 0) : 1;
	int seeds = c != NULL ? atoi(c) : s != NULL ? 1 : 200;

	(void)state;
	verbose = getenv("KQ_NESTED_VERBOSE") != NULL;
	for (int j = 0; j < seeds; j++)
		run_seed(first + (uint64_t)j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    kqueue_watchers_follow_the_watched_queue_in_generated_sequences),
	};

	return t_run_group(tests, NULL, NULL);
}
