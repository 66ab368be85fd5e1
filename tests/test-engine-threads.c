/*
 * test-engine-threads.c -- regression tests of several threads in
 * kevent() on one kqueue: every activation wakes a sleeper (none is lost
 * when several sleep), no sleeper spins, nested kqueues watched across a
 * reused number never deadlock, fork() from a threaded parent, and
 * descriptors closed and reopened under a waiting thread.
 *
 * FreeBSD reference: any number of threads may sleep in kevent() on one
 * kqueue; an activation wakes all sleepers (wakeup(kq)) and each rescans;
 * an EV_CLEAR/EV_DISPATCH/EV_ONESHOT knote is copied out by exactly one of
 * them, a level-triggered one may be copied out by several (it is
 * re-queued after each copy).  A sleeper that finds nothing goes back to
 * sleep: it never spins.  Closing a descriptor drops its knotes in every
 * kqueue (by number) before close() returns; a kqueue is not inherited
 * across fork() (the child's slot is empty: EBADF).
 *
 * Every scenario runs in a child process with a time limit (see
 * engine-helpers.h): a lost wakeup, a spinning sleeper or a deadlock fails
 * the test instead of hanging the suite.  Threads check with E_CHECK or
 * count problems in atomics that the scenario's main thread checks.
 */
#include <sched.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/stat.h>

#include "engine-helpers.h"

#define MS	1000000LL	/* nanoseconds */
#define BURN_NS	(50 * MS)	/* CPU one blocked call may use */

/* ------------------------------------------------------------------ */
/* Local helpers                                                      */
/* ------------------------------------------------------------------ */

/* Wait until *v >= want or timeout_ms passes; returns the last value. */
static int
wait_count(atomic_int *v, int want, int timeout_ms)
{
	int64_t deadline = e_now_ms() + timeout_ms;
	int x;

	while ((x = atomic_load(v)) < want && e_now_ms() < deadline)
		e_sleep_ms(1);
	return x;
}

/* ------------------------------------------------------------------ */
/* 1. Sleepers, one call each                                         */
/* ------------------------------------------------------------------ */

#define SL_MAX	10

enum { K_LEVEL, K_CLEAR, K_ONESHOT, K_DISPATCH, K_USER, K_TIMER, K_NKINDS };
static const char *const kind_name[] = {
	"level", "EV_CLEAR", "EV_ONESHOT", "EV_DISPATCH", "EVFILT_USER",
	"EVFILT_TIMER",
};

struct sleeper {
	pthread_t	 thr;
	struct sl_ctx	*c;
	int		 r;		/* kevent()'s result */
	int		 err;
	struct kevent	 ev;
	int64_t		 cpu_ns;	/* CPU of the kevent() call */
	int64_t		 wall_ns;
	int		 consumed;	/* read the byte / took the event */
};

struct sl_ctx {
	int		 kq;
	int		 fd[2];		/* the watched pipe or socketpair */
	int		 kind;
	int		 consume;	/* read one byte after the event */
	int		 timeout_ms;
	atomic_int	 started;
	atomic_int	 done;
	atomic_int	 got;		/* calls that returned an event */
	struct sleeper	 s[SL_MAX];
};

static void *
sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	struct sl_ctx *c = s->c;
	int64_t c0, t0;

	atomic_fetch_add(&c->started, 1);
	t0 = e_now_ns();
	c0 = e_thread_cpu_ns();
	s->r = e_wait(c->kq, &s->ev, 1, c->timeout_ms);
	s->err = errno;
	s->cpu_ns = e_thread_cpu_ns() - c0;
	s->wall_ns = e_now_ns() - t0;
	if (s->r == 1) {
		if (c->consume && s->ev.filter == EVFILT_READ) {
			char ch;

			s->consumed = read(c->fd[0], &ch, 1) == 1;
		} else
			s->consumed = 1;
		if (c->kind == K_ONESHOT)
			E_CHANGE(c->kq, c->fd[0], EVFILT_READ,
			    EV_ADD | EV_ONESHOT, 0, 0, NULL);
		atomic_fetch_add(&c->got, 1);
	}
	atomic_fetch_add(&c->done, 1);
	return NULL;
}

static void
sleepers_start(struct sl_ctx *c, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		c->s[i].c = c;
		E_CHECK(pthread_create(&c->s[i].thr, NULL, sleeper_main,
		    &c->s[i]) == 0, "pthread_create");
	}
	wait_count(&c->started, n, 2000);
	e_sleep_ms(100);	/* let them block */
}

static void
sleepers_join(struct sl_ctx *c, int n)
{
	int i;

	for (i = 0; i < n; i++)
		E_CHECK(pthread_join(c->s[i].thr, NULL) == 0, "pthread_join");
}

/*
 * (a) Two threads sleep on one EV_CLEAR socket: the first byte completes
 * one of them, a second byte (after the first was read) the other.
 */
static int
two_sleepers_clear_child(void *arg)
{
	static struct sl_ctx c;
	int i, d;

	(void)arg;
	memset(&c, 0, sizeof(c));
	E_SYS(c.kq = kqueue());
	E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, c.fd));
	c.consume = 1;
	c.kind = K_CLEAR;
	c.timeout_ms = 4000;
	E_CHANGE(c.kq, c.fd[0], EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	sleepers_start(&c, 2);
	E_CHECK(write(c.fd[1], "1", 1) == 1, "write");
	d = wait_count(&c.got, 1, 2000);
	E_CHECK(d >= 1, "the first byte woke no sleeper within 2 s");
	e_sleep_ms(20);
	E_CHECK(atomic_load(&c.got) == 1, "one EV_CLEAR activation reported "
	    "to %d threads", atomic_load(&c.got));
	E_CHECK(write(c.fd[1], "2", 1) == 1, "write");
	d = wait_count(&c.got, 2, 2000);
	E_CHECK(d == 2, "the second byte, written after the first was read, "
	    "did not complete the other sleeper within 2 s");
	sleepers_join(&c, 2);
	for (i = 0; i < 2; i++) {
		E_CHECK(c.s[i].r == 1 && c.s[i].ev.ident == (uintptr_t)c.fd[0],
		    "sleeper %d: r=%d", i, c.s[i].r);
		E_CHECK(c.s[i].consumed, "sleeper %d found nothing to read", i);
		E_CHECK(c.s[i].cpu_ns < BURN_NS, "sleeper %d used %jd ms CPU "
		    "while blocked", i, (intmax_t)(c.s[i].cpu_ns / MS));
	}
	close(c.fd[0]);
	close(c.fd[1]);
	close(c.kq);
	return 0;
}

static void
second_clear_event_wakes_second_of_two_sleepers(void **state)
{
	(void)state;
	E_RUN(two_sleepers_clear_child, NULL, 20);
}

/*
 * (b) Two threads sleep (500 ms) on one level-triggered socket that
 * nobody reads: one byte arrives; each thread may return it, but neither
 * may spin while it waits.
 */
static int
two_sleepers_level_child(void *arg)
{
	static struct sl_ctx c;
	int i;

	(void)arg;
	memset(&c, 0, sizeof(c));
	E_SYS(c.kq = kqueue());
	E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, c.fd));
	c.kind = K_LEVEL;
	c.timeout_ms = 500;
	E_CHANGE(c.kq, c.fd[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	sleepers_start(&c, 2);
	E_CHECK(write(c.fd[1], "1", 1) == 1, "write");
	sleepers_join(&c, 2);
	E_CHECK(atomic_load(&c.got) >= 1, "no sleeper reported the byte");
	for (i = 0; i < 2; i++) {
		E_CHECK(c.s[i].r == 0 || c.s[i].r == 1, "sleeper %d: r=%d %s",
		    i, c.s[i].r, strerror(c.s[i].err));
		E_CHECK(c.s[i].cpu_ns < BURN_NS, "sleeper %d (returned %d after "
		    "%jd ms) used %jd ms CPU: it spun", i, c.s[i].r,
		    (intmax_t)(c.s[i].wall_ns / MS),
		    (intmax_t)(c.s[i].cpu_ns / MS));
	}
	close(c.fd[0]);
	close(c.fd[1]);
	close(c.kq);
	return 0;
}

static void
second_sleeper_on_unread_level_socket_does_not_spin(void **state)
{
	(void)state;
	E_RUN(two_sleepers_level_child, NULL, 20);
}

/*
 * (c) Ten threads sleep on one source; ten activations, each made 20 ms
 * after the previous one was taken: every thread returns with an event
 * within 2 s of its activation, none spinning.
 */
static int
ten_sleepers_child(void *arg)
{
	static struct sl_ctx c;
	int kind = (int)(intptr_t)arg, i, d;

	memset(&c, 0, sizeof(c));
	c.kind = kind;
	c.timeout_ms = 10000;
	E_SYS(c.kq = kqueue());
	if (kind == K_USER) {
		E_CHANGE(c.kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	} else {
		E_SYS(pipe(c.fd));
		c.consume = 1;
		E_CHANGE(c.kq, c.fd[0], EVFILT_READ, EV_ADD |
		    (kind == K_ONESHOT ? EV_ONESHOT : EV_CLEAR), 0, 0, NULL);
	}
	sleepers_start(&c, SL_MAX);
	for (i = 0; i < SL_MAX; i++) {
		if (kind == K_USER)
			E_CHANGE(c.kq, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
		else
			E_CHECK(write(c.fd[1], "x", 1) == 1, "write");
		d = wait_count(&c.got, i + 1, 2000);
		E_CHECK(d >= i + 1, "%s: activation %d reached none of the %d "
		    "sleeping threads within 2 s", kind_name[kind], i + 1,
		    SL_MAX - i);
		e_sleep_ms(20);
	}
	sleepers_join(&c, SL_MAX);
	for (i = 0; i < SL_MAX; i++) {
		E_CHECK(c.s[i].r == 1, "%s: sleeper %d returned %d",
		    kind_name[kind], i, c.s[i].r);
		E_CHECK(c.s[i].consumed, "%s: sleeper %d: nothing to read",
		    kind_name[kind], i);
		E_CHECK(c.s[i].cpu_ns < BURN_NS, "%s: sleeper %d used %jd ms "
		    "CPU in %jd ms", kind_name[kind], i,
		    (intmax_t)(c.s[i].cpu_ns / MS),
		    (intmax_t)(c.s[i].wall_ns / MS));
	}
	if (kind != K_USER) {
		close(c.fd[0]);
		close(c.fd[1]);
	}
	close(c.kq);
	return 0;
}

static void
ten_clear_pipe_writes_wake_all_ten_sleepers(void **state)
{
	(void)state;
	E_RUN(ten_sleepers_child, (void *)(intptr_t)K_CLEAR, 20);
}

static void
ten_user_triggers_wake_all_ten_sleepers(void **state)
{
	(void)state;
	E_RUN(ten_sleepers_child, (void *)(intptr_t)K_USER, 20);
}

static void
ten_oneshot_pipe_writes_readded_wake_all_ten_sleepers(void **state)
{
	(void)state;
	E_RUN(ten_sleepers_child, (void *)(intptr_t)K_ONESHOT, 20);
}

/* ------------------------------------------------------------------ */
/* 2. The matrix: sleepers x kinds x patterns                         */
/* ------------------------------------------------------------------ */

#define MX_MAXTHR	8
#define MX_ROUNDS	4
#define MX_STOP		0x5709
#define MX_TMO_MS	1500	/* per call; longer than MX_BOUND_MS */
#define MX_BOUND_MS	1000	/* an event must reach a thread in this */

struct mx {
	int		 kq;
	int		 kind;
	int		 nthr;
	int		 nsrc;
	int		 sv[MX_MAXTHR][2];
	atomic_int	 started;
	atomic_int	 total;		/* events consumed */
	atomic_int	 dups;		/* reports with nothing to consume */
	atomic_int	 burns;		/* calls that used > BURN_NS CPU */
	atomic_llong	 maxcpu;
	atomic_llong	 maxcpu_wall;	/* wall time of that call */
	atomic_int	 maxcpu_n;	/* and its result */
	atomic_int	 early;		/* empty returns long before timeout */
	atomic_int	 errors;
	atomic_int	 consumed[MX_MAXTHR];
};

static void
mx_take(struct mx *m, const struct kevent *e)
{
	intptr_t i = (intptr_t)e->udata;

	E_CHECK(i >= 0 && i < m->nsrc, "udata %jd", (intmax_t)i);
	if (m->kind == K_USER || m->kind == K_TIMER) {
		E_CHECK(e->filter == (m->kind == K_USER ? EVFILT_USER :
		    EVFILT_TIMER) && e->ident == (uintptr_t)i,
		    "filter %d ident %ju", e->filter, (uintmax_t)e->ident);
		atomic_fetch_add(&m->consumed[i], 1);
		atomic_fetch_add(&m->total, 1);
		return;
	}
	E_CHECK(e->filter == EVFILT_READ && e->ident == (uintptr_t)m->sv[i][0],
	    "filter %d ident %ju", e->filter, (uintmax_t)e->ident);
	{
		char ch;
		ssize_t r = recv(m->sv[i][0], &ch, 1, MSG_DONTWAIT);

		if (m->kind == K_ONESHOT)
			E_CHANGE(m->kq, m->sv[i][0], EVFILT_READ,
			    EV_ADD | EV_ONESHOT, 0, 0, (void *)i);
		else if (m->kind == K_DISPATCH)
			E_CHANGE(m->kq, m->sv[i][0], EVFILT_READ, EV_ENABLE,
			    0, 0, (void *)i);
		if (r == 1) {
			atomic_fetch_add(&m->consumed[i], 1);
			atomic_fetch_add(&m->total, 1);
		} else if (m->kind != K_LEVEL)
			atomic_fetch_add(&m->dups, 1);
	}
}

static void *
mx_worker(void *arg)
{
	struct mx *m = arg;
	struct kevent ev;
	int stop = 0;

	atomic_fetch_add(&m->started, 1);
	while (!stop) {
		int64_t t0 = e_now_ns(), c0 = e_thread_cpu_ns(), cpu, wall;
		int n = e_wait(m->kq, &ev, 1, MX_TMO_MS);

		cpu = e_thread_cpu_ns() - c0;
		wall = e_now_ns() - t0;
		if (cpu > BURN_NS)
			atomic_fetch_add(&m->burns, 1);
		if (cpu > atomic_load(&m->maxcpu)) {
			atomic_store(&m->maxcpu, cpu);
			atomic_store(&m->maxcpu_wall, wall);
			atomic_store(&m->maxcpu_n, n);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			atomic_fetch_add(&m->errors, 1);
			break;
		}
		if (n == 0 && wall < MX_TMO_MS * MS / 2)
			atomic_fetch_add(&m->early, 1);
		if (n == 1 && ev.filter == EVFILT_USER &&
		    ev.ident == MX_STOP) {
			stop = 1;
			continue;
		}
		if (n == 1)
			mx_take(m, &ev);
	}
	return NULL;
}

static void
mx_produce(struct mx *m, int i)
{
	switch (m->kind) {
	case K_USER:
		E_CHANGE(m->kq, i, EVFILT_USER, 0, NOTE_TRIGGER, 0,
		    (void *)(intptr_t)i);
		break;
	case K_TIMER:
		E_CHANGE(m->kq, i, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 5,
		    (void *)(intptr_t)i);
		break;
	default:
		E_CHECK(send(m->sv[i][1], "m", 1, MSG_NOSIGNAL) == 1, "send");
		break;
	}
}

static void
mx_run(int kind, int nthr, int burst)
{
	static struct mx m;
	static const unsigned short fl[] = {
		[K_LEVEL] = 0, [K_CLEAR] = EV_CLEAR, [K_ONESHOT] = EV_ONESHOT,
		[K_DISPATCH] = EV_DISPATCH,
	};
	pthread_t th[MX_MAXTHR];
	const char *pat = burst ? "burst" : "one by one";
	int i, e, expect;

	memset(&m, 0, sizeof(m));
	m.kind = kind;
	m.nthr = nthr;
	m.nsrc = nthr;
	E_SYS(m.kq = kqueue());
	for (i = 0; i < m.nsrc; i++) {
		if (kind == K_USER)
			E_CHANGE(m.kq, i, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0,
			    (void *)(intptr_t)i);
		else if (kind != K_TIMER) {
			E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, m.sv[i]));
			E_CHANGE(m.kq, m.sv[i][0], EVFILT_READ, EV_ADD | fl[kind],
			    0, 0, (void *)(intptr_t)i);
		}
	}
	E_CHANGE(m.kq, MX_STOP, EVFILT_USER, EV_ADD, 0, 0, NULL);
	for (i = 0; i < nthr; i++)
		E_CHECK(pthread_create(&th[i], NULL, mx_worker, &m) == 0,
		    "pthread_create");
	wait_count(&m.started, nthr, 2000);
	e_sleep_ms(30);

	expect = 0;
	if (!burst) {
		for (e = 0; e < MX_ROUNDS * m.nsrc; e++) {
			mx_produce(&m, e % m.nsrc);
			expect++;
			E_CHECK(wait_count(&m.total, expect, MX_BOUND_MS) >=
			    expect, "%s, %d sleepers, %s: event %d (source %d) "
			    "reached no thread within 1 s (%d of %d consumed)",
			    kind_name[kind], nthr, pat, e, e % m.nsrc,
			    atomic_load(&m.total), expect);
		}
	} else {
		for (e = 0; e < MX_ROUNDS; e++) {
			for (i = 0; i < m.nsrc; i++)
				mx_produce(&m, i);
			expect += m.nsrc;
			E_CHECK(wait_count(&m.total, expect, MX_BOUND_MS) >=
			    expect, "%s, %d sleepers, %s: round %d: %d of %d "
			    "events reached a thread within 1 s", kind_name[kind],
			    nthr, pat, e, atomic_load(&m.total) -
			    (expect - m.nsrc), m.nsrc);
		}
	}
	e_sleep_ms(30);		/* room for a duplicate to show */
	E_CHANGE(m.kq, MX_STOP, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	for (i = 0; i < nthr; i++)
		E_CHECK(pthread_join(th[i], NULL) == 0, "pthread_join");
	E_CHECK(atomic_load(&m.errors) == 0, "%s, %d sleepers, %s: kevent "
	    "failed in a thread", kind_name[kind], nthr, pat);
	E_CHECK(atomic_load(&m.total) == expect, "%s, %d sleepers, %s: %d "
	    "events consumed, expected %d", kind_name[kind], nthr, pat,
	    atomic_load(&m.total), expect);
	E_CHECK(atomic_load(&m.dups) == 0, "%s, %d sleepers, %s: %d reports "
	    "with nothing to read (one activation reported twice)",
	    kind_name[kind], nthr, pat, atomic_load(&m.dups));
	E_CHECK(atomic_load(&m.burns) == 0, "%s, %d sleepers, %s: %d kevent() "
	    "calls used more than 50 ms CPU (worst: %lld ms CPU in %lld ms, "
	    "returned %d): a waiting thread spun", kind_name[kind], nthr, pat,
	    atomic_load(&m.burns), (long long)(atomic_load(&m.maxcpu) / MS),
	    (long long)(atomic_load(&m.maxcpu_wall) / MS),
	    atomic_load(&m.maxcpu_n));
	E_CHECK(atomic_load(&m.early) <= 10, "%s, %d sleepers, %s: %d "
	    "kevent() calls returned 0 long before their timeout",
	    kind_name[kind], nthr, pat, atomic_load(&m.early));
	if (kind != K_USER && kind != K_TIMER)
		for (i = 0; i < m.nsrc; i++) {
			close(m.sv[i][0]);
			close(m.sv[i][1]);
		}
	close(m.kq);
}

static int
mx_child(void *arg)
{
	int v = (int)(intptr_t)arg, kind = v / 2, burst = v % 2;
	static const int sleepers[] = { 2, 4, 8 };
	int i;

	for (i = 0; i < 3; i++)
		mx_run(kind, sleepers[i], burst);
	return 0;
}

#define MX_TEST(name, kind, burst)					\
static void								\
name(void **state)							\
{									\
	(void)state;							\
	E_RUN(mx_child, (void *)(intptr_t)((kind) * 2 + (burst)), 20);	\
}
MX_TEST(sleepers_level_one_by_one_every_event_consumed_without_spinning, K_LEVEL, 0)
MX_TEST(sleepers_level_burst_every_event_consumed_without_spinning, K_LEVEL, 1)
MX_TEST(sleepers_clear_one_by_one_every_event_delivered_once, K_CLEAR, 0)
MX_TEST(sleepers_clear_burst_every_event_delivered_once, K_CLEAR, 1)
MX_TEST(sleepers_oneshot_readded_one_by_one_every_event_delivered_once, K_ONESHOT, 0)
MX_TEST(sleepers_oneshot_readded_burst_every_event_delivered_once, K_ONESHOT, 1)
MX_TEST(sleepers_dispatch_reenabled_one_by_one_every_event_delivered_once, K_DISPATCH, 0)
MX_TEST(sleepers_dispatch_reenabled_burst_every_event_delivered_once, K_DISPATCH, 1)
MX_TEST(sleepers_user_one_by_one_every_trigger_delivered_once, K_USER, 0)
MX_TEST(sleepers_user_burst_every_trigger_delivered_once, K_USER, 1)
MX_TEST(sleepers_timer_one_by_one_every_expiry_delivered_once, K_TIMER, 0)
MX_TEST(sleepers_timer_burst_every_expiry_delivered_once, K_TIMER, 1)

/* ------------------------------------------------------------------ */
/* 3. Nested kqueues across a reused number: no deadlock              */
/* ------------------------------------------------------------------ */

#define NEST_ITERS	2000

struct nest {
	int		 kq;
	atomic_int	*go;
	atomic_int	 iters;		/* calls made so far */
	struct nest	*other;
	int		 errors;
	int		 stale;		/* reports of the closed kqueue */
	int		 stale_ident;
};

static void *
nest_loop(void *arg)
{
	struct nest *n = arg;
	struct kevent ev[4];
	int i, j, r;

	while (!atomic_load(n->go))
		;
	/* at least NEST_ITERS calls, and until the other thread made as many
	   (so that the two loops overlap even if one starts late) */
	for (i = 0; i < NEST_ITERS || (atomic_load(&n->other->iters) <
	    NEST_ITERS && i < 100 * NEST_ITERS); i++) {
		struct timespec ts = { 0, (i & 1) ? 1000000L : 0 };

		atomic_store(&n->iters, i + 1);

		r = kevent(n->kq, NULL, 0, ev, 4, &ts);
		if (r < 0 && errno != EINTR) {
			n->errors++;
			continue;
		}
		for (j = 0; j < r; j++)
			if (ev[j].filter == EVFILT_READ &&
			    ev[j].ident == (uintptr_t)n->stale_ident)
				n->stale++;
	}
	return NULL;
}

/*
 * A watches B; B has an event, and A reported B once (so a level or
 * emulated knote is kept on A's active list); B is closed without
 * EV_DELETE, D = kqueue() gets B's number, D watches A and reported it
 * once.  Then kevent(A) and kevent(D) run concurrently.
 */
static int
nest_setup(int lowat, int *pa, int *pd, int *hold, int *nhold)
{
	struct kevent ev[4];
	int a, b, d, r;

	E_SYS(a = kqueue());
	E_SYS(b = kqueue());
	E_CHANGE(b, 7, EVFILT_USER, EV_ADD, 0, 0, NULL);
	E_CHANGE(b, 7, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	/* A watches B and sees it readable */
	E_CHANGE(a, b, EVFILT_READ, EV_ADD, lowat ? NOTE_LOWAT : 0,
	    lowat ? 1 : 0, NULL);
	r = kevent(a, NULL, 0, ev, 4, &t_zero);
	E_CHECK(r == 1 && ev[0].ident == (uintptr_t)b, "A on B: r=%d", r);
	/* B closed without EV_DELETE; D gets its number and watches A */
	E_SYS(close(b));
	E_CHECK(e_make_lowest_free(b, hold, 64, nhold) == 0, "number %d", b);
	E_SYS(d = kqueue());
	E_CHECK(d == b, "kqueue() returned %d, not the freed %d", d, b);
	E_CHANGE(a, 8, EVFILT_USER, EV_ADD, 0, 0, NULL);
	E_CHANGE(a, 8, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	E_CHANGE(d, 9, EVFILT_USER, EV_ADD, 0, 0, NULL);
	E_CHANGE(d, 9, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	E_CHANGE(d, a, EVFILT_READ, EV_ADD, lowat ? NOTE_LOWAT : 0,
	    lowat ? 1 : 0, NULL);
	r = kevent(d, NULL, 0, ev, 4, &t_zero);
	E_CHECK(r >= 1, "D: r=%d", r);
	*pa = a;
	*pd = d;
	return b;
}

static int
nest_child(void *arg)
{
	int lowat = (int)(intptr_t)arg;
	int a, b, d, hold[64], nhold;
	atomic_int go;
	struct nest na, nd;
	pthread_t ta, td;

	b = nest_setup(lowat, &a, &d, hold, &nhold);
	atomic_init(&go, 0);
	memset(&na, 0, sizeof(na));
	memset(&nd, 0, sizeof(nd));
	na.kq = a;
	na.go = &go;
	na.stale_ident = b;	/* A's knote on the closed B */
	na.other = &nd;
	nd.kq = d;
	nd.go = &go;
	nd.stale_ident = -1;
	nd.other = &na;
	E_CHECK(pthread_create(&ta, NULL, nest_loop, &na) == 0, "create");
	E_CHECK(pthread_create(&td, NULL, nest_loop, &nd) == 0, "create");
	atomic_store(&go, 1);
	E_CHECK(pthread_join(ta, NULL) == 0, "join");
	E_CHECK(pthread_join(td, NULL) == 0, "join");
	E_CHECK(na.errors == 0 && nd.errors == 0, "kevent failed: %d on A, %d "
	    "on D", na.errors, nd.errors);
	close(a);
	close(d);
	e_close_all(hold, nhold);
	return 0;
}

static void
kqueues_watching_each_other_across_reused_number_do_not_deadlock(void **state)
{
	(void)state;
	E_RUN(nest_child, (void *)0, 10);
}

static void
kqueues_watching_each_other_with_lowat_do_not_deadlock(void **state)
{
	(void)state;
	E_RUN(nest_child, (void *)1, 10);
}

/*
 * The same setup, single-threaded: after B's close, A holds no knote for
 * B's number, so A never reports an EVFILT_READ for it (D, which now has
 * that number, is not watched by A).
 */
static int
nest_stale_child(void *arg)
{
	int lowat = (int)(intptr_t)arg;
	int a, b, d, hold[64], nhold, r, i, k;
	struct kevent ev[8];

	b = nest_setup(lowat, &a, &d, hold, &nhold);
	for (k = 0; k < 3; k++) {
		r = kevent(a, NULL, 0, ev, 8, &t_zero);
		E_CHECK(r >= 0, "kevent(A): %s", strerror(errno));
		for (i = 0; i < r; i++)
			E_CHECK(!(ev[i].filter == EVFILT_READ &&
			    ev[i].ident == (uintptr_t)b), "A reported "
			    "EVFILT_READ on %d: its knote on the closed kqueue "
			    "B now watches D", b);
	}
	/* and deleting it gives ENOENT: close() dropped it */
	E_CHECK(e_change(a, b, EVFILT_READ, EV_DELETE, 0, 0, NULL) == -1 &&
	    errno == ENOENT, "EV_DELETE of A's knote on the closed B: %s",
	    errno == ENOENT ? "succeeded" : strerror(errno));
	close(a);
	close(d);
	e_close_all(hold, nhold);
	return 0;
}

static void
closed_nested_kqueue_not_reported_after_number_reused(void **state)
{
	(void)state;
	E_RUN(nest_stale_child, (void *)0, 20);
}

static void
closed_nested_lowat_kqueue_not_reported_after_number_reused(void **state)
{
	(void)state;
	E_RUN(nest_stale_child, (void *)1, 20);
}

/* ------------------------------------------------------------------ */
/* 4. fork() from a threaded parent                                   */
/* ------------------------------------------------------------------ */

static int
fork_grandchild(int kq)
{
	int k2, p[2], r;
	struct kevent ev;

	signal(SIGALRM, SIG_DFL);
	alarm(5);		/* default action: a hang ends the process */
	if (fcntl(kq, F_GETFD) != -1 || errno != EBADF) {
		fprintf(stderr, "child: the parent's kqueue %d is open in the "
		    "child (fcntl F_GETFD: %s)\n", kq,
		    fcntl(kq, F_GETFD) == -1 ? strerror(errno) : "open");
		return 10;
	}
	if (kevent(kq, NULL, 0, &ev, 1, &t_zero) != -1 || errno != EBADF) {
		fprintf(stderr, "child: kevent on the parent's kqueue: not "
		    "EBADF\n");
		return 11;
	}
	if ((k2 = kqueue()) < 0) {
		fprintf(stderr, "child: kqueue: %s\n", strerror(errno));
		return 12;
	}
	if (e_change(k2, 5, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL) != 0 ||
	    e_change(k2, 5, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL) != 0)
		return 13;
	r = e_wait(k2, &ev, 1, 1000);
	if (r != 1 || ev.filter != EVFILT_USER || ev.ident != 5) {
		fprintf(stderr, "child: user event: r=%d\n", r);
		return 14;
	}
	if (pipe(p) != 0)
		return 15;
	if (e_change(k2, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL) != 0)
		return 16;
	if (write(p[1], "c", 1) != 1)
		return 17;
	r = e_wait(k2, &ev, 1, 1000);
	if (r != 1 || ev.filter != EVFILT_READ || ev.ident != (uintptr_t)p[0]
	    || ev.data != 1) {
		fprintf(stderr, "child: pipe event: r=%d\n", r);
		return 18;
	}
	close(p[0]);
	close(p[1]);
	close(k2);
	return 0;
}

static int
fork_threaded_child(void *arg)
{
	static struct sl_ctx c;
	int status = 0, r;
	int64_t deadline;
	pid_t pid;
	struct kevent ev;

	(void)arg;
	memset(&c, 0, sizeof(c));
	E_SYS(c.kq = kqueue());
	c.kind = K_USER;
	c.timeout_ms = 5000;
	E_CHANGE(c.kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	sleepers_start(&c, 1);		/* a thread blocked in kevent(kq) */
	E_SYS(pid = fork());
	if (pid == 0)
		E_EXIT(fork_grandchild(c.kq));
	deadline = e_now_ms() + 8000;
	while ((r = waitpid(pid, &status, WNOHANG)) == 0 &&
	    e_now_ms() < deadline)
		e_sleep_ms(5);
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		E_CHECK(0, "the child of a parent with a thread in kevent() hung");
	}
	E_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "child failed: %s %d", WIFEXITED(status) ? "exit status" :
	    "signal", WIFEXITED(status) ? WEXITSTATUS(status) :
	    WTERMSIG(status));
	/* the parent's kqueue still works: wake the blocked thread */
	E_CHANGE(c.kq, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	E_CHECK(wait_count(&c.done, 1, 2000) == 1, "the parent's blocked "
	    "thread was not woken after the child exited");
	sleepers_join(&c, 1);
	E_CHECK(c.s[0].r == 1 && c.s[0].ev.ident == 1, "blocked thread: r=%d",
	    c.s[0].r);
	E_CHANGE(c.kq, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	E_CHECK(kevent(c.kq, NULL, 0, &ev, 1, &t_zero) == 1 && ev.ident == 1,
	    "the parent's kqueue after the fork");
	close(c.kq);
	return 0;
}

static void
fork_with_thread_in_kevent_child_has_no_kqueue_parent_keeps_it(void **state)
{
	(void)state;
	E_RUN(fork_threaded_child, NULL, 20);
}

/* ------------------------------------------------------------------ */
/* 5. Descriptors closed and reopened under a waiting thread          */
/* ------------------------------------------------------------------ */

#define RC_ITERS	2000

struct rc {
	int		 kq;
	int		 del;		/* EV_DELETE before close */
	unsigned short	 mode;
	atomic_int	 stop;
	atomic_long	 retired;	/* every generation <= is gone */
	atomic_long	 cur;		/* generation registered now */
	atomic_int	 curfd;
	long		 stale;
	long		 wrongfd;
	long		 reports;
	long		 first_stale_gen, first_stale_retired;
	int		 errors;
};

static void *
rc_waiter(void *arg)
{
	struct rc *c = arg;
	struct kevent ev[8];
	int i, n;

	while (!atomic_load(&c->stop)) {
		long retired = atomic_load(&c->retired);

		n = e_wait(c->kq, ev, 8, 10);
		if (n < 0) {
			if (errno != EINTR)
				c->errors++;
			continue;
		}
		for (i = 0; i < n; i++) {
			long gen = (long)(intptr_t)ev[i].udata;

			c->reports++;
			if (gen <= retired) {
				if (c->stale++ == 0) {
					c->first_stale_gen = gen;
					c->first_stale_retired = retired;
				}
			} else if (gen == atomic_load(&c->cur) &&
			    ev[i].ident != (uintptr_t)atomic_load(&c->curfd))
				c->wrongfd++;
		}
	}
	return NULL;
}

static int
rc_child(void *arg)
{
	static struct rc c;
	int v = (int)(intptr_t)arg, i, p[2];
	pthread_t th;

	memset(&c, 0, sizeof(c));
	c.del = v & 1;
	c.mode = (v & 2) ? EV_CLEAR : 0;
	E_SYS(c.kq = kqueue());
	E_CHECK(pthread_create(&th, NULL, rc_waiter, &c) == 0, "create");
	for (i = 1; i <= RC_ITERS; i++) {
		E_SYS(pipe(p));
		atomic_store(&c.curfd, p[0]);
		atomic_store(&c.cur, i);
		E_CHANGE(c.kq, p[0], EVFILT_READ, EV_ADD | c.mode, 0, 0,
		    (void *)(intptr_t)i);
		E_CHECK(write(p[1], "r", 1) == 1, "write");
		if (i % 3 == 0)
			sched_yield();
		if (c.del)
			E_CHANGE(c.kq, p[0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
		E_SYS(close(p[0]));
		E_SYS(close(p[1]));
		atomic_store(&c.retired, i);
	}
	e_sleep_ms(30);
	atomic_store(&c.stop, 1);
	E_CHECK(pthread_join(th, NULL) == 0, "join");
	E_CHECK(c.errors == 0, "kevent failed in the waiting thread");
	E_CHECK(c.stale == 0, "%s: %ld of %ld reports were of knotes already "
	    "%s when the kevent() call began (first: generation %ld, retired "
	    "up to %ld)", c.del ? "EV_DELETE+close" : "close", c.stale,
	    c.reports, c.del ? "deleted" : "closed", c.first_stale_gen,
	    c.first_stale_retired);
	E_CHECK(c.wrongfd == 0, "%ld reports with a wrong ident", c.wrongfd);
	close(c.kq);
	return 0;
}

static void
closed_pipe_never_reported_to_waiting_thread_level(void **state)
{
	(void)state;
	E_RUN(rc_child, (void *)0, 20);
}

static void
closed_pipe_never_reported_to_waiting_thread_clear(void **state)
{
	(void)state;
	E_RUN(rc_child, (void *)2, 20);
}

static void
deleted_pipe_never_reported_to_waiting_thread_level(void **state)
{
	(void)state;
	E_RUN(rc_child, (void *)1, 20);
}

static void
deleted_pipe_never_reported_to_waiting_thread_clear(void **state)
{
	(void)state;
	E_RUN(rc_child, (void *)3, 20);
}

/*
 * Several threads share one kqueue watching the read ends of a ring of
 * pipes through which a few one-byte tokens travel: each thread waits for
 * one event, reads the pipe (non-blocking) and forwards what it got.  A
 * pipe is reported readable only with bytes in it (FreeBSD's filt_piperead:
 * data is the byte count, and an empty pipe does not fire), even though
 * another thread may empty it between epoll's report and the count: every
 * event's data must be 1..RING_TOKENS, for level, EV_CLEAR and EV_DISPATCH.
 */
#define RING_PIPES	32
#define RING_TOKENS	8
#define RING_THREADS	4
#define RING_MS		400

struct ring {
	int		 kq;
	int		 r[RING_PIPES], w[RING_PIPES];
	unsigned short	 mode;
	_Atomic int	 stop, bad, moves, errors;
};

static void *
ring_worker(void *arg)
{
	struct ring *g = arg;
	struct timespec to = { 0, 50 * MS };
	struct kevent ch, ev;
	int nch = 0;

	while (!atomic_load(&g->stop)) {
		int n = kevent(g->kq, &ch, nch, &ev, 1, &to), i;
		unsigned char buf[64];
		ssize_t got;

		nch = 0;
		if (n < 0) {
			if (errno != EINTR)
				atomic_fetch_add(&g->errors, 1);
			continue;
		}
		if (n == 0)
			continue;
		i = (int)(intptr_t)ev.udata;
		if (ev.data < 1 || ev.data > RING_TOKENS)
			atomic_fetch_add(&g->bad, 1);
		got = read(g->r[i], buf, sizeof(buf));
		for (ssize_t k = 0; k < got; k++)
			if (write(g->w[(i + 1 + 2 * buf[k]) % RING_PIPES],
			    &buf[k], 1) != 1)
				atomic_fetch_add(&g->errors, 1);
		if (got > 0)
			atomic_fetch_add(&g->moves, (int)got);
		if (g->mode == EV_DISPATCH) {
			EV_SET(&ch, g->r[i], EVFILT_READ, EV_ENABLE, 0, 0,
			    (void *)(intptr_t)i);
			nch = 1;
		}
	}
	return NULL;
}

static void
ring_run(unsigned short mode)
{
	struct ring g;
	pthread_t th[RING_THREADS];
	int p[2];

	memset(&g, 0, sizeof(g));
	g.mode = mode;
	g.kq = kqueue();
	assert_true(g.kq >= 0);
	for (int i = 0; i < RING_PIPES; i++) {
		assert_int_equal(pipe(p), 0);
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		g.r[i] = p[0];
		g.w[i] = p[1];
		t_change(g.kq, p[0], EVFILT_READ, EV_ADD | mode, 0, 0,
		    (void *)(intptr_t)i);
	}
	for (unsigned char k = 0; k < RING_TOKENS; k++)
		assert_int_equal(write(g.w[k * 3 % RING_PIPES], &k, 1), 1);
	for (int t = 0; t < RING_THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, ring_worker, &g),
		    0);
	e_sleep_ms(RING_MS);
	atomic_store(&g.stop, 1);
	for (int t = 0; t < RING_THREADS; t++)
		pthread_join(th[t], NULL);
	assert_int_equal(atomic_load(&g.errors), 0);
	assert_true(atomic_load(&g.moves) > 100);
	assert_int_equal(atomic_load(&g.bad), 0);
	for (int i = 0; i < RING_PIPES; i++) {
		close(g.r[i]);
		close(g.w[i]);
	}
	close(g.kq);
}

static void
pipe_data_never_zero_with_threads_racing_readers_level(void **state)
{
	(void)state;
	ring_run(0);
}

static void
pipe_data_never_zero_with_threads_racing_readers_clear(void **state)
{
	(void)state;
	ring_run(EV_CLEAR);
}

static void
pipe_data_never_zero_with_threads_racing_readers_dispatch(void **state)
{
	(void)state;
	ring_run(EV_DISPATCH);
}

/*
 * A signal handler's kevent() on a kqueue whose lock another thread holds,
 * while the thread it interrupted only waits for that lock: on FreeBSD
 * kevent() is a system call and the handler's call simply waits its turn.
 * The holder runs changelists of 4 096 changes, so the interrupted
 * thread, whose own calls change nothing, spends nearly all its time
 * waiting for the lock and very little holding it.  (kq refuses a
 * handler's call with EDEADLK only when its thread holds the lock --
 * kevent.2, LINUX NOTES -- which here is the rare case; the handler's
 * calls must nearly all work.)  The handler arms the next signal as it
 * returns, so handlers never follow each other without a gap.
 *
 * Not under ThreadSanitizer: kq installs its signal handlers in the C
 * library's place, so there the handler runs where the signal lands,
 * inside TSan's runtime too, and its instrumented kevent() takes TSan's
 * own locks again (the tool deadlocks itself: seen here, as in
 * test-engine-scan's UDP handler and attacks a14-a17).
 */
#define WL_CHANGES	4096

#if defined(__SANITIZE_THREAD__)
#define WL_TSAN	1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WL_TSAN	1
#endif
#endif

static struct {
	int kq;
	atomic_int stop;
	volatile sig_atomic_t ok, deadlk, other;
} wl;

/* SIGALRM once, 300 us from now (it goes to the one thread that does not
   block it). */
static void
wl_arm(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 300 } };

	if (!atomic_load(&wl.stop))
		(void)setitimer(ITIMER_REAL, &it, NULL);
}

static void
wl_on_alarm(int sig)
{
	struct kevent c;
	struct timespec zero = { 0, 0 };
	int e = errno;

	(void)sig;
	EV_SET(&c, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	if (kevent(wl.kq, &c, 1, NULL, 0, &zero) == 0)
		wl.ok++;
	else if (errno == EDEADLK)
		wl.deadlk++;
	else
		wl.other++;
	wl_arm();
	errno = e;
}

static void *
wl_holder(void *arg)
{
	static struct kevent add[WL_CHANGES], del[WL_CHANGES];
	struct timespec zero = { 0, 0 };
	sigset_t set;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < WL_CHANGES; i++) {
		EV_SET(&add[i], 100 + i, EVFILT_USER, EV_ADD, 0, 0, NULL);
		EV_SET(&del[i], 100 + i, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	}
	while (!atomic_load(&wl.stop)) {
		E_CHECK(kevent(wl.kq, add, WL_CHANGES, NULL, 0, &zero) == 0,
		    "%s", strerror(errno));
		E_CHECK(kevent(wl.kq, del, WL_CHANGES, NULL, 0, &zero) == 0,
		    "%s", strerror(errno));
	}
	return NULL;
}

static int
wl_scenario(void *arg)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct timespec zero = { 0, 0 };
	struct sigaction sa;
	struct kevent ev;
	pthread_t holder;
	int64_t end;

	(void)arg;
	E_SYS(wl.kq = kqueue());
	E_CHANGE(wl.kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = wl_on_alarm;
	sa.sa_flags = SA_RESTART;
	E_SYS(sigaction(SIGALRM, &sa, NULL));
	E_CHECK(pthread_create(&holder, NULL, wl_holder, NULL) == 0,
	    "create");
	wl_arm();
	end = e_now_ms() + 2000;
	while (e_now_ms() < end)
		E_CHECK(kevent(wl.kq, NULL, 0, &ev, 1, &zero) >= 0 ||
		    errno == EINTR, "%s", strerror(errno));
	atomic_store(&wl.stop, 1);
	E_SYS(setitimer(ITIMER_REAL, &off, NULL));
	pthread_join(holder, NULL);
	fprintf(stderr, "# handler's kevent: %d worked, %d EDEADLK, %d other\n",
	    (int)wl.ok, (int)wl.deadlk, (int)wl.other);
	E_CHECK(wl.other == 0, "%d handler calls failed otherwise",
	    (int)wl.other);
	E_CHECK(wl.ok >= 5 && wl.ok >= 4 * wl.deadlk,
	    "%d handler calls refused with EDEADLK, %d worked",
	    (int)wl.deadlk, (int)wl.ok);
	close(wl.kq);
	return 0;
}

static void
kevent_from_handler_of_thread_waiting_for_the_kqueue_waits_its_turn(
    void **state)
{
	(void)state;
#ifdef WL_TSAN
	fprintf(stderr, "a signal handler inside TSan's runtime: skip\n");
	skip();
#endif
	E_RUN(wl_scenario, NULL, 30);
}

/*
 * Two threads, each making changes on its own kqueue, whose signal
 * handlers make changes on the other thread's kqueue.  On FreeBSD every
 * kevent() is a system call and all of them complete.  kq's handler
 * calls wait for a lock another thread holds only while the code they
 * interrupted holds none of kq's (else that thread may be waiting for
 * the interrupted code's lock: each handler waited for the other's for
 * ever, attack helper 24's F2): they work or fail with EDEADLK, and both
 * threads keep going.  Not under TSan, for wl_scenario's reason.
 */
static struct {
	int kq[2];
	pthread_t t[2];
	atomic_int stop;
	atomic_long progress[2];
	atomic_long ok, deadlk, other;
} xk;
static _Thread_local int xk_other = -1;

static void
xk_on_signal(int sig)
{
	struct kevent c;
	int e = errno;

	(void)sig;
	if (xk_other < 0)
		return;
	EV_SET(&c, 999, EVFILT_USER, EV_ADD | EV_CLEAR, NOTE_TRIGGER, 0, NULL);
	if (kevent(xk.kq[xk_other], &c, 1, NULL, 0, NULL) == 0)
		atomic_fetch_add(&xk.ok, 1);
	else if (errno == EDEADLK)
		atomic_fetch_add(&xk.deadlk, 1);
	else
		atomic_fetch_add(&xk.other, 1);
	errno = e;
}

static void *
xk_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	struct kevent ch[64], ev[64];
	struct timespec zero = { 0, 0 };

	xk_other = 1 - me;
	while (!atomic_load(&xk.stop)) {
		for (int i = 0; i < 64; i++)
			EV_SET(&ch[i], 1000 + i, EVFILT_USER, EV_ADD | EV_CLEAR,
			    NOTE_TRIGGER, 0, NULL);
		(void)kevent(xk.kq[me], ch, 64, ev, 64, &zero);
		for (int i = 0; i < 64; i++)
			EV_SET(&ch[i], 1000 + i, EVFILT_USER, EV_DELETE, 0, 0,
			    NULL);
		(void)kevent(xk.kq[me], ch, 64, NULL, 0, &zero);
		atomic_fetch_add(&xk.progress[me], 1);
	}
	return NULL;
}

static int
xk_scenario(void *arg)
{
	struct sigaction sa;
	long last[2] = { -1, -1 };
	int64_t end, check;
	unsigned n = 0;

	(void)arg;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = xk_on_signal;
	sa.sa_flags = SA_RESTART;
	E_SYS(sigaction(SIGUSR1, &sa, NULL));
	E_SYS(xk.kq[0] = kqueue());
	E_SYS(xk.kq[1] = kqueue());
	for (intptr_t i = 0; i < 2; i++)
		E_CHECK(pthread_create(&xk.t[i], NULL, xk_worker, (void *)i) ==
		    0, "create");
	end = e_now_ms() + 2000;
	check = e_now_ms() + 1500;
	while (e_now_ms() < end) {
		pthread_kill(xk.t[n++ & 1], SIGUSR1);
		usleep(50);
		if (e_now_ms() >= check) {
			/* Each thread moved in the last 1.5 s. */
			for (int i = 0; i < 2; i++) {
				long p = atomic_load(&xk.progress[i]);

				E_CHECK(p != last[i], "thread %d stuck at %ld "
				    "(handler calls: %ld worked, %ld EDEADLK)",
				    i, p, atomic_load(&xk.ok),
				    atomic_load(&xk.deadlk));
				last[i] = p;
			}
			check = e_now_ms() + 1500;
		}
	}
	atomic_store(&xk.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(xk.t[i], NULL);
	fprintf(stderr, "# handlers' kevent: %ld worked, %ld EDEADLK, %ld "
	    "other\n", atomic_load(&xk.ok), atomic_load(&xk.deadlk),
	    atomic_load(&xk.other));
	E_CHECK(atomic_load(&xk.other) == 0, "handler calls failed otherwise");
	E_CHECK(atomic_load(&xk.ok) > 0, "no handler call worked");
	close(xk.kq[0]);
	close(xk.kq[1]);
	return 0;
}

static void
kevent_from_handlers_on_each_others_kqueue_never_hangs(void **state)
{
	(void)state;
#ifdef WL_TSAN
	fprintf(stderr, "a signal handler inside TSan's runtime: skip\n");
	skip();
#endif
	E_RUN(xk_scenario, NULL, 30);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(second_clear_event_wakes_second_of_two_sleepers),
		cmocka_unit_test(pipe_data_never_zero_with_threads_racing_readers_level),
		cmocka_unit_test(pipe_data_never_zero_with_threads_racing_readers_clear),
		cmocka_unit_test(pipe_data_never_zero_with_threads_racing_readers_dispatch),
		cmocka_unit_test(kevent_from_handler_of_thread_waiting_for_the_kqueue_waits_its_turn),
		cmocka_unit_test(kevent_from_handlers_on_each_others_kqueue_never_hangs),
		cmocka_unit_test(second_sleeper_on_unread_level_socket_does_not_spin),
		cmocka_unit_test(ten_clear_pipe_writes_wake_all_ten_sleepers),
		cmocka_unit_test(ten_user_triggers_wake_all_ten_sleepers),
		cmocka_unit_test(ten_oneshot_pipe_writes_readded_wake_all_ten_sleepers),
		cmocka_unit_test(sleepers_level_one_by_one_every_event_consumed_without_spinning),
		cmocka_unit_test(sleepers_level_burst_every_event_consumed_without_spinning),
		cmocka_unit_test(sleepers_clear_one_by_one_every_event_delivered_once),
		cmocka_unit_test(sleepers_clear_burst_every_event_delivered_once),
		cmocka_unit_test(sleepers_oneshot_readded_one_by_one_every_event_delivered_once),
		cmocka_unit_test(sleepers_oneshot_readded_burst_every_event_delivered_once),
		cmocka_unit_test(sleepers_dispatch_reenabled_one_by_one_every_event_delivered_once),
		cmocka_unit_test(sleepers_dispatch_reenabled_burst_every_event_delivered_once),
		cmocka_unit_test(sleepers_user_one_by_one_every_trigger_delivered_once),
		cmocka_unit_test(sleepers_user_burst_every_trigger_delivered_once),
		cmocka_unit_test(sleepers_timer_one_by_one_every_expiry_delivered_once),
		cmocka_unit_test(sleepers_timer_burst_every_expiry_delivered_once),
		cmocka_unit_test(kqueues_watching_each_other_across_reused_number_do_not_deadlock),
		cmocka_unit_test(kqueues_watching_each_other_with_lowat_do_not_deadlock),
		cmocka_unit_test(closed_nested_kqueue_not_reported_after_number_reused),
		cmocka_unit_test(closed_nested_lowat_kqueue_not_reported_after_number_reused),
		cmocka_unit_test(fork_with_thread_in_kevent_child_has_no_kqueue_parent_keeps_it),
		cmocka_unit_test(closed_pipe_never_reported_to_waiting_thread_level),
		cmocka_unit_test(closed_pipe_never_reported_to_waiting_thread_clear),
		cmocka_unit_test(deleted_pipe_never_reported_to_waiting_thread_level),
		cmocka_unit_test(deleted_pipe_never_reported_to_waiting_thread_clear),
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, NULL, NULL);
}
