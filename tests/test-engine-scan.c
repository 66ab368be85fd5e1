/*
 * test-engine-scan.c -- regression tests of the collection loop of one
 * thread: an event that becomes ready after any number of empty kevent()
 * calls is reported (no call-counter wrap loses it), and a kevent() with a
 * zero timeout over many ready level-triggered, EV_CLEAR or EV_DISPATCH
 * registrations returns min(ready, nevents) events at once, never one
 * (ident, filter) twice in a call, and round-robins over the ready ones.
 *
 * FreeBSD reference: kqueue_scan() keeps no per-call counter that can
 * wrap; an activation queues the knote and the next scan copies it out.
 * A scan copies out up to nevents queued knotes; a level-triggered knote
 * that is still active is re-queued at the tail (after the scan's
 * marker), so it is not reported twice in one call and successive calls
 * with a small eventlist walk through all ready knotes.  EV_CLEAR and
 * EV_DISPATCH knotes are dequeued once reported.
 */
#include "engine-helpers.h"

#include <arpa/inet.h>
#include <netinet/in.h>

/* ------------------------------------------------------------------ */
/* 1. Events after many empty calls                                   */
/* ------------------------------------------------------------------ */

#define SW_CALLS	200000

/*
 * After exactly `empty` zero-timeout kevent() calls that return nothing,
 * one byte written to the peer must be reported by the next call (allow
 * two).
 */
static void
byte_after_empty_polls_is_reported(unsigned short mode, int empty)
{
	struct kevent ev[4];
	int kq, sv[2], i, r, got = 0, call;
	char ch;

	t_watchdog(20);
	kq = t_new_kq();
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	t_track(sv[0]);
	t_track(sv[1]);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | mode, 0, 0, NULL);
	for (i = 0; i < empty; i++) {
		r = kevent(kq, NULL, 0, ev, 4, &t_zero);
		if (r != 0)
			fprintf(stderr, "empty poll %d returned %d\n", i, r);
		assert_int_equal(r, 0);
	}
	assert_int_equal(send(sv[1], "x", 1, MSG_NOSIGNAL), 1);
	for (call = 1; call <= 2 && !got; call++) {
		r = kevent(kq, NULL, 0, ev, 4, &t_zero);
		assert_true(r >= 0);
		for (i = 0; i < r; i++)
			if (ev[i].ident == (uintptr_t)sv[0] &&
			    ev[i].filter == EVFILT_READ)
				got = 1;
	}
	if (!got)
		fprintf(stderr, "byte written after %d empty polls (%s) not "
		    "reported by the next two calls\n", empty,
		    mode ? "EV_CLEAR" : "level");
	assert_true(got);
	assert_int_equal(recv(sv[0], &ch, 1, MSG_DONTWAIT), 1);
	alarm(0);
	t_close_tracked();
}

static void
edge_after_65534_empty_polls_is_reported(void **state)
{
	(void)state;
	byte_after_empty_polls_is_reported(EV_CLEAR, 65534);
}

static void
level_after_65534_empty_polls_is_reported(void **state)
{
	(void)state;
	byte_after_empty_polls_is_reported(0, 65534);
}

static void
edge_after_131070_empty_polls_is_reported(void **state)
{
	(void)state;
	byte_after_empty_polls_is_reported(EV_CLEAR, 131070);
}

/*
 * The sweep: SW_CALLS zero-timeout calls; before call number b of a set of
 * boundaries (every power of two, and the calls around 65536, 131072 and
 * 196608), one byte is written to socket "every" (which gets a byte at
 * every boundary) and to the boundary's own socket (which gets that one
 * byte only, so its knote was last reported long ago, or never).  Each
 * byte must be reported by call b or b+1, and is then read; a socket is
 * never reported when no byte is pending.
 */
static const int sw_extra[] = {
	65533, 65534, 65535, 65536, 65537,
	131069, 131070, 131071, 131072, 131073,
	196605, 196606, 196607, 196608, 196609,
};

#define SW_MAXB	64

struct sw_sock {
	int	 sv[2];
	int	 pending;	/* call number of the unreported byte, or 0 */
	int	 boundary;	/* its own boundary (0: the "every" socket) */
};

static void
edge_sweep(unsigned short mode)
{
	static struct sw_sock s[SW_MAXB + 1];
	int bounds[SW_MAXB], nb = 0, kq, call, i, j, r, bi;
	int lost = 0, spurious = 0, nlost_shown = 0;
	struct kevent ev[8];

	t_watchdog(20);
	for (i = 1; i <= SW_CALLS; i *= 2)
		bounds[nb++] = i;
	for (j = 0; j < (int)(sizeof(sw_extra) / sizeof(sw_extra[0])); j++) {
		for (i = 0; i < nb; i++)
			if (bounds[i] == sw_extra[j])
				break;
		if (i == nb)
			bounds[nb++] = sw_extra[j];
	}
	/* sort */
	for (i = 1; i < nb; i++)
		for (j = i; j > 0 && bounds[j - 1] > bounds[j]; j--) {
			int t = bounds[j];

			bounds[j] = bounds[j - 1];
			bounds[j - 1] = t;
		}
	assert_true(nb <= SW_MAXB);

	assert_true((kq = kqueue()) >= 0);
	for (i = 0; i <= nb; i++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, s[i].sv), 0);
		s[i].pending = 0;
		s[i].boundary = i == 0 ? 0 : bounds[i - 1];
		t_change(kq, s[i].sv[0], EVFILT_READ, EV_ADD | mode, 0, 0,
		    (void *)(intptr_t)i);
	}

	bi = 0;
	for (call = 1; call <= SW_CALLS; call++) {
		if (bi < nb && bounds[bi] == call) {
			assert_int_equal(send(s[0].sv[1], "e", 1, MSG_NOSIGNAL), 1);
			if (s[0].pending == 0)
				s[0].pending = call;
			assert_int_equal(send(s[bi + 1].sv[1], "b", 1,
			    MSG_NOSIGNAL), 1);
			s[bi + 1].pending = call;
			bi++;
		}
		r = kevent(kq, NULL, 0, ev, 8, &t_zero);
		if (r < 0)
			fprintf(stderr, "call %d: %s\n", call, strerror(errno));
		assert_true(r >= 0);
		for (i = 0; i < r; i++) {
			intptr_t k = (intptr_t)ev[i].udata;
			char buf[8];

			assert_true(k >= 0 && k <= nb);
			assert_int_equal(ev[i].ident, s[k].sv[0]);
			if (s[k].pending == 0) {
				if (spurious++ < 5)
					fprintf(stderr, "call %d: socket of "
					    "boundary %d reported with nothing "
					    "pending\n", call, s[k].boundary);
				continue;
			}
			while (recv(s[k].sv[0], buf, sizeof(buf),
			    MSG_DONTWAIT) > 0)
				;
			s[k].pending = 0;
		}
		for (i = 0; i <= nb; i++) {
			if (s[i].pending == 0 || call - s[i].pending < 1)
				continue;
			/* written before call `pending`: that call or the
			   next must have reported it */
			if (call >= s[i].pending + 1) {
				char buf[8];

				if (nlost_shown++ < 12)
					fprintf(stderr, "%s: byte written before"
					    " call %d (socket %s %d) not reported"
					    " by calls %d..%d\n",
					    mode ? "EV_CLEAR" : "level",
					    s[i].pending, i == 0 ? "every" :
					    "of boundary", i == 0 ?
					    s[i].pending : s[i].boundary,
					    s[i].pending, call);
				lost++;
				while (recv(s[i].sv[0], buf, sizeof(buf),
				    MSG_DONTWAIT) > 0)
					;
				s[i].pending = 0;
			}
		}
	}
	alarm(0);
	for (i = 0; i <= nb; i++) {
		close(s[i].sv[0]);
		close(s[i].sv[1]);
	}
	close(kq);
	if (lost || spurious)
		fprintf(stderr, "%s sweep: %d bytes lost, %d spurious reports "
		    "over %d boundaries\n", mode ? "EV_CLEAR" : "level", lost,
		    spurious, nb);
	assert_int_equal(lost, 0);
	assert_int_equal(spurious, 0);
}

static void
edge_at_every_boundary_of_200000_polls_is_reported(void **state)
{
	(void)state;
	edge_sweep(EV_CLEAR);
}

static void
level_at_every_boundary_of_200000_polls_is_reported(void **state)
{
	(void)state;
	edge_sweep(0);
}

/* ------------------------------------------------------------------ */
/* 2. Many ready registrations, one collecting thread                 */
/* ------------------------------------------------------------------ */

/*
 * `ready` socketpairs; EVFILT_WRITE on one end of each (always writable).
 * Modes: level-triggered, EV_CLEAR, EV_DISPATCH.
 */
enum { M_LEVEL, M_CLEAR, M_DISPATCH };
static const char *const mode_name[] = { "level", "clear", "dispatch" };

struct busy {
	int	 ready;
	int	 mode;
	char	 name[96];
};

struct busy_set {
	int	 kq;
	int	 n;
	int	*wfd;		/* [n] the watched ends */
	int	*pfd;		/* [n] the peers */
	int	*index;		/* descriptor number -> index, or -1 */
	int	 maxfd;
	int	*stamp;		/* [n] last call that reported it */
	int	*lastseen;	/* [n] last call that reported it (round robin) */
	struct kevent *ev;
};

static void
busy_open(struct busy_set *b, int ready)
{
	int i, sv[2];

	memset(b, 0, sizeof(*b));
	b->n = ready;
	b->wfd = calloc((size_t)ready, sizeof(int));
	b->pfd = calloc((size_t)ready, sizeof(int));
	b->stamp = calloc((size_t)ready, sizeof(int));
	b->lastseen = calloc((size_t)ready, sizeof(int));
	b->ev = calloc((size_t)(3 * ready + 5 + 520), sizeof(struct kevent));
	E_CHECK(b->wfd && b->pfd && b->stamp && b->lastseen && b->ev, "calloc");
	for (i = 0; i < ready; i++) {
		E_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0,
		    "socketpair %d: %s", i, strerror(errno));
		b->wfd[i] = sv[0];
		b->pfd[i] = sv[1];
		if (sv[0] > b->maxfd)
			b->maxfd = sv[0];
	}
	b->index = malloc(sizeof(int) * (size_t)(b->maxfd + 1));
	E_CHECK(b->index != NULL, "malloc");
	for (i = 0; i <= b->maxfd; i++)
		b->index[i] = -1;
	for (i = 0; i < ready; i++)
		b->index[b->wfd[i]] = i;
	b->kq = -1;
}

static void
busy_register(struct busy_set *b, int mode)
{
	static const unsigned short fl[] = { 0, EV_CLEAR, EV_DISPATCH };
	struct kevent *ch;
	int i;

	E_SYS(b->kq = kqueue());
	ch = calloc((size_t)b->n, sizeof(*ch));
	E_CHECK(ch != NULL, "calloc");
	for (i = 0; i < b->n; i++)
		EV_SET(&ch[i], b->wfd[i], EVFILT_WRITE, EV_ADD | fl[mode], 0, 0,
		    (void *)(intptr_t)i);
	E_CHECK(kevent(b->kq, ch, b->n, NULL, 0, NULL) == 0,
	    "registering %d sockets: %s", b->n, strerror(errno));
	free(ch);
	for (i = 0; i < b->n; i++) {
		b->stamp[i] = 0;
		b->lastseen[i] = 0;
	}
}

/*
 * One zero-timeout call with room for nevents.  Checks the count against
 * `expect`, that every entry is a watched descriptor's EVFILT_WRITE, not
 * an error, and that no descriptor appears twice.  call is a unique
 * number >0 for the stamps.  Returns the count.
 */
static char busy_what[200];

/* A zero-timeout kevent() that has not returned after 3 s: say which. */
static void
busy_on_alarm(int sig)
{
	static const char m[] = "HUNG: a zero-timeout kevent() did not return"
	    " within 3 s: ";
	ssize_t w;

	(void)sig;
	w = write(2, m, sizeof(m) - 1);
	w = write(2, busy_what, strlen(busy_what));
	w = write(2, "\n", 1);
	(void)w;
	E_EXIT(1);
}

static int
busy_call(struct busy_set *b, int nevents, int expect, int call,
    const char *what)
{
	int64_t t0 = e_now_ms();
	int r, i;

	snprintf(busy_what, sizeof(busy_what), "%s, call %d", what, call);
	signal(SIGALRM, busy_on_alarm);
	alarm(3);
	r = kevent(b->kq, NULL, 0, b->ev, nevents, &t_zero);
	alarm(0);
	E_CHECK(r >= 0, "%s: kevent: %s", what, strerror(errno));
	E_CHECK(e_now_ms() - t0 < 5000, "%s: a zero-timeout kevent() took "
	    "%jd ms", what, (intmax_t)(e_now_ms() - t0));
	E_CHECK(r == expect, "%s: call %d with room for %d returned %d, "
	    "expected %d", what, call, nevents, r, expect);
	for (i = 0; i < r; i++) {
		struct kevent *e = &b->ev[i];
		intptr_t k = (intptr_t)e->udata;

		E_CHECK(!(e->flags & EV_ERROR), "%s: error entry data=%jd",
		    what, (intmax_t)e->data);
		E_CHECK(e->filter == EVFILT_WRITE, "%s: filter %d", what,
		    e->filter);
		E_CHECK(e->ident <= (uintptr_t)b->maxfd &&
		    b->index[e->ident] >= 0 && b->index[e->ident] == k,
		    "%s: unknown ident %ju udata %jd", what,
		    (uintmax_t)e->ident, (intmax_t)k);
		E_CHECK(b->stamp[k] != call, "%s: call %d reported "
		    "descriptor %ju twice", what, call, (uintmax_t)e->ident);
		b->stamp[k] = call;
	}
	return r;
}

static void
busy_close(struct busy_set *b)
{
	int i;

	if (b->kq >= 0)
		close(b->kq);
	for (i = 0; i < b->n; i++) {
		close(b->wfd[i]);
		close(b->pfd[i]);
	}
	free(b->wfd);
	free(b->pfd);
	free(b->stamp);
	free(b->lastseen);
	free(b->index);
	free(b->ev);
}

static int
busy_sizes(int ready, int *sz)
{
	int cand[] = { 1, 2, ready - 1, ready, ready + 1, 511, 512, 513,
	    2 * ready, 3 * ready + 5 };
	int n = 0, i, j;

	for (i = 0; i < (int)(sizeof(cand) / sizeof(cand[0])); i++) {
		if (cand[i] < 1)
			continue;
		for (j = 0; j < n; j++)
			if (sz[j] == cand[i])
				break;
		if (j == n)
			sz[n++] = cand[i];
	}
	return n;
}

static int
busy_child(void *arg)
{
	const struct busy *p = arg;
	struct busy_set b;
	int sizes[16], ns, si, call = 0;
	char what[160];

	busy_open(&b, p->ready);
	ns = busy_sizes(p->ready, sizes);
	for (si = 0; si < ns; si++) {
		int nev = sizes[si], calls, c, i, total = 0;

		busy_register(&b, p->mode);
		snprintf(what, sizeof(what), "%s, %d ready, room for %d",
		    mode_name[p->mode], p->ready, nev);
		calls = (p->ready + nev - 1) / nev + 1;
		for (c = 1; c <= calls; c++) {
			int expect, r;

			if (p->mode == M_LEVEL)
				expect = p->ready < nev ? p->ready : nev;
			else {
				int left = p->ready - total;

				expect = left < nev ? left : nev;
			}
			r = busy_call(&b, nev, expect, ++call, what);
			total += r;
			for (i = 0; i < r; i++)
				b.lastseen[(intptr_t)b.ev[i].udata] = c;
		}
		/* every descriptor reported within ceil(ready/nevents)+1 calls */
		for (i = 0; i < p->ready; i++)
			E_CHECK(b.lastseen[i] != 0, "%s: descriptor %d never "
			    "reported in %d calls (round robin)", what,
			    b.wfd[i], calls);
		if (p->mode != M_LEVEL) {
			E_CHECK(total == p->ready, "%s: %d reports in all, "
			    "expected each of %d once", what, total, p->ready);
			/* nothing more until new activity / EV_ENABLE */
			(void)busy_call(&b, nev, 0, ++call, what);
		}
		if (p->mode == M_DISPATCH) {
			/* re-enable all: each is reported once more */
			struct kevent *ch = calloc((size_t)p->ready, sizeof(*ch));

			E_CHECK(ch != NULL, "calloc");
			for (i = 0; i < p->ready; i++)
				EV_SET(&ch[i], b.wfd[i], EVFILT_WRITE, EV_ENABLE,
				    0, 0, (void *)(intptr_t)i);
			E_CHECK(kevent(b.kq, ch, p->ready, NULL, 0, NULL) == 0,
			    "%s: EV_ENABLE: %s", what, strerror(errno));
			free(ch);
			total = 0;
			for (c = 1; c <= calls - 1; c++) {
				int left = p->ready - total;

				total += busy_call(&b, nev, left < nev ? left :
				    nev, ++call, what);
			}
			E_CHECK(total == p->ready, "%s: after EV_ENABLE %d "
			    "reports, expected %d", what, total, p->ready);
		}
		close(b.kq);
		b.kq = -1;
	}
	busy_close(&b);
	return 0;
}

static void
busy_test(void **state)
{
	struct busy *p = *state;

	E_RUN(busy_child, p, 20);
}

/* The reported case: 600 ready level-triggered sockets, room for 1700. */
static int
six_hundred_child(void *arg)
{
	struct busy_set b;

	(void)arg;
	busy_open(&b, 600);
	busy_register(&b, M_LEVEL);
	(void)busy_call(&b, 1700, 600, 1, "600 ready, room for 1700");
	(void)busy_call(&b, 1700, 600, 2, "600 ready, room for 1700, again");
	busy_close(&b);
	return 0;
}

static void
six_hundred_ready_sockets_returned_at_once_with_room_for_1700(void **state)
{
	(void)state;
	E_RUN(six_hundred_child, NULL, 20);
}

/*
 * One event a call from a queue that never runs dry: a user event that is
 * triggered again each time it is reported, and np pipes that stay
 * readable.  FreeBSD keeps one queue, re-queueing each at its tail, so
 * every source comes round within np + 1 calls.  kq may favour the user
 * event (it alternates its two sources), but neither may take the slot
 * call after call: the user event within np + 1 calls, each pipe within
 * 2 (np + 1).
 */
static int
user_and_pipes_child(void *arg)
{
	int np = (int)(intptr_t)arg, kq, i, call, (*p)[2];
	int last_user = -1, *last;
	int user_gap = 0, pipe_gap = 0;
	struct kevent ev;

	E_SYS(kq = kqueue());
	E_CHANGE(kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	E_CHANGE(kq, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	E_CHECK((p = calloc((size_t)np, sizeof(*p))) != NULL, "calloc");
	E_CHECK((last = calloc((size_t)np, sizeof(*last))) != NULL, "calloc");
	for (i = 0; i < np; i++) {
		E_SYS(pipe(p[i]));
		E_SYS(write(p[i][1], "x", 1));
		E_CHANGE(kq, p[i][0], EVFILT_READ, EV_ADD, 0, 0,
		    (void *)(intptr_t)(i + 1));
		last[i] = -1;
	}
	for (call = 0; call < 20000; call++) {
		E_CHECK(kevent(kq, NULL, 0, &ev, 1, &t_zero) == 1,
		    "call %d returned no event", call);
		if (ev.filter == EVFILT_USER) {
			if (call - last_user > user_gap)
				user_gap = call - last_user;
			last_user = call;
			E_CHANGE(kq, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
		} else {
			i = (int)(intptr_t)ev.udata - 1;
			E_CHECK(ev.filter == EVFILT_READ && i >= 0 && i < np,
			    "unexpected event %d", ev.filter);
			if (call - last[i] > pipe_gap)
				pipe_gap = call - last[i];
			last[i] = call;
		}
	}
	/* (and the calls after the last report of each) */
	if (call - last_user > user_gap)
		user_gap = call - last_user;
	for (i = 0; i < np; i++)
		if (call - last[i] > pipe_gap)
			pipe_gap = call - last[i];
	E_CHECK(user_gap <= np + 1, "%d pipes: the user event waited %d "
	    "calls", np, user_gap);
	E_CHECK(pipe_gap <= 2 * (np + 1), "%d pipes: a pipe waited %d calls",
	    np, pipe_gap);
	for (i = 0; i < np; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	free(p);
	free(last);
	close(kq);
	return 0;
}

static void
queued_user_event_and_ready_pipes_each_come_round_when_calls_take_one(
    void **state)
{
	(void)state;
	E_RUN(user_and_pipes_child, (void *)(intptr_t)10, 30);
	E_RUN(user_and_pipes_child, (void *)(intptr_t)200, 30);
}

/*
 * kevent() on a thread with the smallest stack the C library allows: 600
 * ready registrations, room for 1 to 1700, with a zero timeout, with a
 * timeout and no changes (a wait that is a cancellation point), and with
 * a timeout and a change.  Each call returns min(600, room) distinct
 * events.  FreeBSD's kevent() is a system call and uses next to no user
 * stack; kq's collection must fit a thread made with PTHREAD_STACK_MIN
 * (a regression once needed 22 KiB here).  Sanitizer builds, whose frames
 * are several times larger, get four times the minimum.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SMALL_STACK_FACTOR	4
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SMALL_STACK_FACTOR	4
#endif
#endif
#ifndef SMALL_STACK_FACTOR
#define SMALL_STACK_FACTOR	1
#endif

/* Start fn(arg) on a new thread with the smallest stack. */
static pthread_t
smallest_stack_start(void *(*fn)(void *), void *arg)
{
	long min = sysconf(_SC_THREAD_STACK_MIN);
	pthread_attr_t at;
	pthread_t t;

	if (min < PTHREAD_STACK_MIN)
		min = PTHREAD_STACK_MIN;
	E_CHECK(pthread_attr_init(&at) == 0, "pthread_attr_init");
	E_CHECK(pthread_attr_setstacksize(&at, (size_t)min *
	    SMALL_STACK_FACTOR) == 0, "pthread_attr_setstacksize");
	E_CHECK(pthread_create(&t, &at, fn, arg) == 0, "pthread_create");
	pthread_attr_destroy(&at);
	return t;
}

/* Run fn(arg) on a new thread with the smallest stack, and join it. */
static void
smallest_stack_run(void *(*fn)(void *), void *arg)
{
	E_CHECK(pthread_join(smallest_stack_start(fn, arg), NULL) == 0,
	    "pthread_join");
}

static void *
small_stack_thread(void *arg)
{
	static const int room[] = { 1, 2, 8, 9, 31, 32, 33, 64, 255, 511, 512,
	    513, 599, 600, 601, 1024, 1700 };
	static const struct timespec second = { 1, 0 };
	struct busy_set *b = arg;
	struct kevent change;
	int i, k, call = 0;

	EV_SET(&change, b->wfd[0], EVFILT_WRITE, EV_ADD, 0, 0, (void *)0);
	for (i = 0; i < (int)(sizeof(room) / sizeof(room[0])); i++)
		for (k = 0; k < 3; k++) {
			int want = room[i] < 600 ? room[i] : 600, r, j;

			call++;
			r = kevent(b->kq, k == 2 ? &change : NULL, k == 2,
			    b->ev, room[i], k == 0 ? &t_zero : &second);
			E_CHECK(r == want, "room for %d, %s: %d events, "
			    "expected %d (%s)", room[i], k == 0 ? "no wait" :
			    k == 1 ? "a wait" : "a change and a wait", r, want,
			    r < 0 ? strerror(errno) : "");
			for (j = 0; j < r; j++) {
				intptr_t x = (intptr_t)b->ev[j].udata;

				E_CHECK(x >= 0 && x < b->n &&
				    b->ev[j].filter == EVFILT_WRITE &&
				    b->stamp[x] != call, "room for %d: entry "
				    "%d unknown or twice", room[i], j);
				b->stamp[x] = call;
			}
		}
	return NULL;
}

static int
small_stack_child(void *arg)
{
	struct busy_set b;

	(void)arg;
	busy_open(&b, 600);
	busy_register(&b, M_LEVEL);
	smallest_stack_run(small_stack_thread, &b);
	busy_close(&b);
	return 0;
}

static void
six_hundred_ready_returned_on_a_thread_with_the_smallest_stack(void **state)
{
	(void)state;
	E_RUN(small_stack_child, NULL, 30);
}

/*
 * The same smallest stack, with the ready registrations one level down: an
 * outer kqueue watches (EVFILT_READ) a kqueue with 100 ready
 * registrations, and 500 ready ones of its own fill its batch.  Asking the
 * inner kqueue for its count runs inside the outer collection, so the two
 * must fit together (they needed 20 KiB once).  The inner kqueue's event
 * carries data 100: the events pending on it.
 */
struct nested_set {
	struct busy_set inner, outer;
	int		 okq;
};

static void *
nested_stack_thread(void *arg)
{
	static const int room[] = { 1, 2, 8, 32, 33, 64, 255, 501, 511, 512,
	    513, 1024, 1700 };
	static const struct timespec second = { 1, 0 };
	struct nested_set *s = arg;
	int i, k;

	for (i = 0; i < (int)(sizeof(room) / sizeof(room[0])); i++)
		for (k = 0; k < 2; k++) {
			int want = room[i] < 501 ? room[i] : 501, r, j, seen = 0;

			r = kevent(s->okq, NULL, 0, s->outer.ev, room[i],
			    k == 0 ? &t_zero : &second);
			E_CHECK(r == want, "room for %d, %s: %d events, "
			    "expected %d (%s)", room[i], k == 0 ? "no wait" :
			    "a wait", r, want, r < 0 ? strerror(errno) : "");
			for (j = 0; j < r; j++) {
				struct kevent *e = &s->outer.ev[j];

				if (e->ident != (uintptr_t)s->inner.kq)
					continue;
				seen++;
				E_CHECK(e->filter == EVFILT_READ &&
				    e->data == 100 && !(e->flags & EV_ERROR),
				    "room for %d: the inner kqueue's event "
				    "has filter %d, data %lld, flags %#x",
				    room[i], e->filter, (long long)e->data,
				    e->flags);
			}
			E_CHECK(seen <= 1, "inner kqueue reported %d times",
			    seen);
			if (room[i] >= 501)
				E_CHECK(seen == 1, "room for %d: no event of "
				    "the inner kqueue", room[i]);
		}
	return NULL;
}

static int
nested_stack_child(void *arg)
{
	struct nested_set s;
	struct kevent ch;

	(void)arg;
	busy_open(&s.inner, 100);
	busy_register(&s.inner, M_LEVEL);
	busy_open(&s.outer, 500);
	busy_register(&s.outer, M_LEVEL);
	s.okq = s.outer.kq;
	EV_SET(&ch, s.inner.kq, EVFILT_READ, EV_ADD, 0, 0, (void *)0);
	E_CHECK(kevent(s.okq, &ch, 1, NULL, 0, NULL) == 0,
	    "watching the inner kqueue: %s", strerror(errno));
	smallest_stack_run(nested_stack_thread, &s);
	busy_close(&s.outer);
	busy_close(&s.inner);
	return 0;
}

static void
ready_nested_kqueue_counted_on_a_thread_with_the_smallest_stack(
    void **state)
{
	(void)state;
	E_RUN(nested_stack_child, NULL, 30);
}

/*
 * The smallest stack again, with a kqueue's internal sources to read
 * during the collection: hundreds of queued inotify events behind an
 * EVFILT_VNODE knote, or process-connector messages behind EVFILT_PROC
 * with NOTE_TRACK (a child that forks 50 times).  Collected directly and
 * through an outer kqueue (whose scan asks the inner one for its count and
 * so reads its sources); 500 ready sockets beside them keep every call
 * from waiting.  The event is reported, and nothing overflows the stack
 * (the sources' read buffers, 8 and 16 KiB, were on it once).
 */
struct src_stack {
	struct busy_set	 ready;		/* 500 ready sockets on target */
	int		 target;	/* the kqueue collected */
	uintptr_t	 ident;		/* the event looked for */
	short		 filter;
	int		 seen;
};

static void *
src_stack_thread(void *arg)
{
	static const int room[] = { 1, 8, 33, 512, 1700 };
	static const struct timespec second = { 1, 0 };
	struct src_stack *s = arg;
	int i, k, j, r;

	for (i = 0; i < (int)(sizeof(room) / sizeof(room[0])); i++)
		for (k = 0; k < 2; k++) {
			r = kevent(s->target, NULL, 0, s->ready.ev, room[i],
			    k == 0 ? &t_zero : &second);
			E_CHECK(r >= 1 && r <= room[i], "room for %d: %d "
			    "events (%s)", room[i], r, r < 0 ?
			    strerror(errno) : "");
			for (j = 0; j < r; j++)
				if (s->ready.ev[j].ident == s->ident &&
				    s->ready.ev[j].filter == s->filter) {
					E_CHECK(!(s->ready.ev[j].flags &
					    EV_ERROR), "error %lld",
					    (long long)s->ready.ev[j].data);
					s->seen++;
				}
		}
	return NULL;
}

/* Makes the source's events on kq; returns the knote's ident. */
static uintptr_t
src_make(int kq, int proc, short *filter)
{
	if (!proc) {
		char path[] = "/tmp/kq-test-stack-XXXXXX";
		int fd = mkstemp(path), i;

		E_CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
		E_CHANGE(kq, fd, EVFILT_VNODE, EV_ADD | EV_CLEAR,
		    NOTE_WRITE | NOTE_ATTRIB | NOTE_EXTEND, 0, NULL);
		for (i = 0; i < 300; i++) {
			E_CHECK(write(fd, "x", 1) == 1, "write");
			E_SYS(fchmod(fd, (i & 1) ? 0600 : 0644));
		}
		unlink(path);
		*filter = EVFILT_VNODE;
		return (uintptr_t)fd;
	} else {
		int go[2], done[2], i;
		char c = 0;
		pid_t pid;

		E_SYS(pipe(go));
		E_SYS(pipe(done));
		E_SYS(pid = fork());
		if (pid == 0) {
			close(go[1]);
			close(done[0]);
			if (read(go[0], &c, 1) != 1)
				_exit(1);
			for (i = 0; i < 50; i++) {
				pid_t g = fork();

				if (g == 0)
					_exit(0);
				if (g > 0)
					(void)waitpid(g, NULL, 0);
			}
			(void)write(done[1], &c, 1);
			(void)read(go[0], &c, 1);	/* until the parent's end */
			_exit(0);
		}
		E_CHANGE(kq, pid, EVFILT_PROC, EV_ADD,
		    NOTE_FORK | NOTE_EXIT | NOTE_TRACK, 0, NULL);
		E_CHECK(write(go[1], &c, 1) == 1, "write");
		E_CHECK(read(done[0], &c, 1) == 1, "read");
		close(done[0]);
		close(done[1]);
		close(go[0]);	/* go[1] stays: the child exits with us */
		e_sleep_ms(100);	/* the connector's last messages */
		*filter = EVFILT_PROC;
		return (uintptr_t)pid;
	}
}

static int
src_stack_child(void *arg)
{
	int mode = (int)(intptr_t)arg;	/* bit 0: proc; bit 1: nested */
	struct src_stack s;
	int inner = -1;

	memset(&s, 0, sizeof(s));
	busy_open(&s.ready, 500);
	busy_register(&s.ready, M_LEVEL);
	s.target = s.ready.kq;
	if (mode & 2) {
		E_SYS(inner = kqueue());
		(void)src_make(inner, mode & 1, &s.filter);
		E_CHANGE(s.target, inner, EVFILT_READ, EV_ADD, 0, 0, NULL);
		s.ident = (uintptr_t)inner;
		s.filter = EVFILT_READ;
	} else
		s.ident = src_make(s.target, mode & 1, &s.filter);
	smallest_stack_run(src_stack_thread, &s);
	E_CHECK(s.seen >= 1, "%s %s event never reported",
	    mode & 2 ? "nested" : "direct", mode & 1 ? "process" : "vnode");
	if (inner >= 0)
		close(inner);
	busy_close(&s.ready);
	return 0;
}

/*
 * The smallest stack with a signal handler on top: 50 UDP sockets with 100
 * datagrams each (EVFILT_READ's data is their bytes, counted by peeking
 * the queue) collected with room for 256, while another thread sends the
 * collecting one SIGUSR1 every 20 microseconds.  The handler's frame (about 3 KiB
 * with AVX-512 state) lands on whatever the call has on the stack; the
 * call's batch and the datagram count's headers (4 KiB each) once left no
 * room for it.
 */
static _Atomic int udp_stop;			/* between the threads */
static volatile sig_atomic_t udp_signals;	/* set by the handler */

/*
 * Not instrumented by ThreadSanitizer: kq provides sigaction() in the C
 * library's place, so under TSan this handler runs where the signal lands,
 * possibly inside TSan's own runtime, whose locks its instrumentation
 * would take again (a self-deadlock of the tool, seen here).
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UDP_NO_TSAN	__attribute__((no_sanitize("thread")))
#endif
#endif
#if !defined(UDP_NO_TSAN) && defined(__SANITIZE_THREAD__)
#define UDP_NO_TSAN	__attribute__((no_sanitize_thread))
#endif
#ifndef UDP_NO_TSAN
#define UDP_NO_TSAN
#endif

static UDP_NO_TSAN void
udp_on_signal(int sig)
{
	(void)sig;
	udp_signals = 1;
}

struct udp_stack {
	int	 kq;
	int	 fd[50];
	struct kevent ev[256];
};

static void *
udp_stack_thread(void *arg)
{
	struct udp_stack *u = arg;
	int i, r, j;

	for (i = 0; i < 300; i++) {
		r = kevent(u->kq, NULL, 0, u->ev, 256, &t_zero);
		E_CHECK(r == 50, "call %d: %d events (%s)", i, r,
		    r < 0 ? strerror(errno) : "");
		for (j = 0; j < r; j++)
			E_CHECK(u->ev[j].filter == EVFILT_READ &&
			    u->ev[j].data == 100 * 8, "call %d: data %lld, "
			    "expected the 800 queued bytes", i,
			    (long long)u->ev[j].data);
	}
	atomic_store(&udp_stop, 1);
	return NULL;
}

static int
udp_stack_child(void *arg)
{
	static struct udp_stack u;
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	struct sigaction sa;
	pthread_t t;
	int i, k;

	(void)arg;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = udp_on_signal;
	E_SYS(sigaction(SIGUSR1, &sa, NULL));
	E_SYS(u.kq = kqueue());
	for (i = 0; i < 50; i++) {
		int tx;

		E_SYS(u.fd[i] = socket(AF_INET, SOCK_DGRAM, 0));
		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		E_SYS(bind(u.fd[i], (struct sockaddr *)&a, sizeof(a)));
		E_SYS(getsockname(u.fd[i], (struct sockaddr *)&a, &len));
		E_SYS(tx = socket(AF_INET, SOCK_DGRAM, 0));
		for (k = 0; k < 100; k++)
			E_CHECK(sendto(tx, "datagram", 8, 0,
			    (struct sockaddr *)&a, sizeof(a)) == 8, "sendto");
		close(tx);
		E_CHANGE(u.kq, u.fd[i], EVFILT_READ, EV_ADD, 0, 0, NULL);
	}
	t = smallest_stack_start(udp_stack_thread, &u);
	while (!atomic_load(&udp_stop)) {
		struct timespec gap = { 0, 20000 };	/* 20 us */

		(void)pthread_kill(t, SIGUSR1);
		(void)nanosleep(&gap, NULL);
	}
	E_CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	E_CHECK(udp_signals, "no signal handled");
	for (i = 0; i < 50; i++)
		close(u.fd[i]);
	close(u.kq);
	return 0;
}

static void
udp_counts_collected_on_the_smallest_stack_under_signals(void **state)
{
	(void)state;
	E_RUN(udp_stack_child, NULL, 60);
}

static void
vnode_events_collected_on_the_smallest_stack_directly_and_nested(
    void **state)
{
	(void)state;
	E_RUN(src_stack_child, (void *)(intptr_t)0, 30);
	E_RUN(src_stack_child, (void *)(intptr_t)2, 30);
}

static void
process_events_collected_on_the_smallest_stack_directly_and_nested(
    void **state)
{
	int kq = kqueue();
	struct kevent k;

	(void)state;
	/* NOTE_TRACK needs the process connector (CAP_NET_ADMIN). */
	EV_SET(&k, getpid(), EVFILT_PROC, EV_ADD, NOTE_FORK | NOTE_TRACK, 0,
	    NULL);
	if (kevent(kq, &k, 1, NULL, 0, NULL) != 0 && errno == EPERM) {
		close(kq);
		fprintf(stderr, "process events not permitted: skip\n");
		skip();
	}
	close(kq);
	E_RUN(src_stack_child, (void *)(intptr_t)1, 30);
	E_RUN(src_stack_child, (void *)(intptr_t)3, 30);
}

static const int busy_ready[] = {
	1, 2, 100, 255, 256, 257, 511, 512, 513, 600, 1023, 1024, 1025, 2000,
	4000,
};

#define NBUSY	((int)(sizeof(busy_ready) / sizeof(busy_ready[0])) * 3)

int
main(void)
{
	static struct busy params[NBUSY];
	struct CMUnitTest tests[14 + NBUSY];
	int n = 0, i, m;

	memset(tests, 0, sizeof(tests));
#define ADD(f) do { tests[n].name = #f; tests[n].test_func = f; n++; } while (0)
	ADD(edge_after_65534_empty_polls_is_reported);
	ADD(level_after_65534_empty_polls_is_reported);
	ADD(edge_after_131070_empty_polls_is_reported);
	ADD(edge_at_every_boundary_of_200000_polls_is_reported);
	ADD(level_at_every_boundary_of_200000_polls_is_reported);
	ADD(six_hundred_ready_sockets_returned_at_once_with_room_for_1700);
	ADD(six_hundred_ready_returned_on_a_thread_with_the_smallest_stack);
	ADD(ready_nested_kqueue_counted_on_a_thread_with_the_smallest_stack);
	ADD(udp_counts_collected_on_the_smallest_stack_under_signals);
	ADD(queued_user_event_and_ready_pipes_each_come_round_when_calls_take_one);
	ADD(vnode_events_collected_on_the_smallest_stack_directly_and_nested);
	ADD(process_events_collected_on_the_smallest_stack_directly_and_nested);
#undef ADD
	for (m = 0; m < 3; m++)
		for (i = 0; i < NBUSY / 3; i++) {
			struct busy *p = &params[m * (NBUSY / 3) + i];

			p->ready = busy_ready[i];
			p->mode = m;
			snprintf(p->name, sizeof(p->name),
			    "%s_%d_ready_each_call_returns_min_ready_nevents"
			    "_and_round_robins", mode_name[m], p->ready);
			tests[n].name = p->name;
			tests[n].test_func = busy_test;
			tests[n].initial_state = p;
			n++;
		}
	signal(SIGPIPE, SIG_IGN);
	return t_run_group_("test-engine-scan", tests, (size_t)n,
	    NULL, NULL);
}
