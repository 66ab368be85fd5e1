/*
 * test-threads.c -- concurrency: several threads in kevent() on one
 * kqueue, registration churn against waiting threads, kqueue creation and
 * destruction in parallel, close(kq) under a blocked kevent(), and
 * EVFILT_USER/EVFILT_TIMER: a trigger from another thread waking a blocked
 * kevent(), exactly-once delivery of user events and timers to several
 * waiters.
 *
 * FreeBSD reference: any number of threads may sleep in kevent() on one
 * kqueue; an EV_CLEAR or EV_DISPATCH knote is handed to exactly one
 * collector per activation; once EV_DELETE (or close of the descriptor)
 * returned, no later kevent() call reports the knote.  A kevent() in
 * progress holds a reference on the kqueue, so closing the descriptor
 * under it is safe (the call simply times out).
 *
 * Threads never call cmocka assertions: they count problems in atomics,
 * and the main thread asserts.  This file also runs under ThreadSanitizer.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <dirent.h>

#include "helpers.h"

/*
 * ThreadSanitizer's symbolizer holds descriptors of its own once it has
 * reported something: descriptor counts are only compared without it
 * (T_TSAN, helpers.h).
 */

/* ------------------------------------------------------------------ */
/* Local helpers                                                      */
/* ------------------------------------------------------------------ */

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
}


static int
count_fds(void)
{
	return T_TSAN ? -1 : t_count_fds();
}

/* xorshift32: a deterministic sequence of choices for the churn thread. */
static uint32_t
rnd(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

/* ------------------------------------------------------------------ */
/* 1. Many waiters, each event delivered exactly once                 */
/* ------------------------------------------------------------------ */

#define MW_THREADS	4
#define MW_SOCKS	4
#define MW_ROUNDS	200

struct mw_ctx {
	int		 kq;
	int		 sv[MW_SOCKS][2];
	int		 dispatch;	/* EV_DISPATCH, else EV_CLEAR */
	atomic_int	 stop;
	atomic_int	 errors;
	atomic_int	 waiting;	/* threads that entered the loop */
	atomic_long	 delivered[MW_SOCKS];
	atomic_long	 rearmed[MW_SOCKS];
};

static void *
mw_thread(void *arg)
{
	struct mw_ctx *c = arg;
	struct timespec to = { 0, 20 * 1000000L };

	atomic_fetch_add(&c->waiting, 1);
	while (!atomic_load(&c->stop)) {
		struct kevent ev[4];
		int n = kevent(c->kq, NULL, 0, ev, 4, &to);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			atomic_fetch_add(&c->errors, 1);
			break;
		}
		for (int i = 0; i < n; i++) {
			intptr_t idx = (intptr_t)ev[i].udata;
			char ch;

			if (idx < 0 || idx >= MW_SOCKS ||
			    ev[i].filter != EVFILT_READ ||
			    (ev[i].flags & EV_ERROR) ||
			    ev[i].ident != (uintptr_t)c->sv[idx][0]) {
				atomic_fetch_add(&c->errors, 1);
				continue;
			}
			atomic_fetch_add(&c->delivered[idx], 1);
			/* Consume the one byte this activation stands for. */
			if (recv(c->sv[idx][0], &ch, 1, MSG_DONTWAIT) != 1) {
				/* Nothing to read: a second report of the
				   same activation. */
				if (atomic_fetch_add(&c->errors, 1) < 3)
					fprintf(stderr, "socket %d reported with"
					    " nothing to read (data %jd, flags "
					    "%#x)\n", (int)idx,
					    (intmax_t)ev[i].data, ev[i].flags);
			}
			if (c->dispatch) {
				struct kevent ch_en;

				EV_SET(&ch_en, c->sv[idx][0], EVFILT_READ,
				    EV_ENABLE, 0, 0, (void *)idx);
				if (kevent(c->kq, &ch_en, 1, NULL, 0, NULL) != 0)
					atomic_fetch_add(&c->errors, 1);
			}
			atomic_fetch_add(&c->rearmed[idx], 1);
		}
	}
	return NULL;
}

static void
many_waiters_each_event_delivered_once(int dispatch)
{
	static struct mw_ctx c;
	pthread_t th[MW_THREADS];
	unsigned short mode = dispatch ? EV_DISPATCH : EV_CLEAR;
	int timed_out = 0;

	memset(&c, 0, sizeof(c));
	c.dispatch = dispatch;
	assert_true((c.kq = kqueue()) >= 0);
	for (int i = 0; i < MW_SOCKS; i++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, c.sv[i]), 0);
		t_change(c.kq, c.sv[i][0], EVFILT_READ, EV_ADD | mode, 0, 0,
		    (void *)(intptr_t)i);
	}
	for (int i = 0; i < MW_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, mw_thread, &c), 0);
	while (atomic_load(&c.waiting) < MW_THREADS)
		sleep_ms(1);

	for (int r = 0; r < MW_ROUNDS && !timed_out; r++) {
		int64_t deadline = now_ms() + 5000;

		for (int i = 0; i < MW_SOCKS; i++)
			assert_int_equal(send(c.sv[i][1], "k", 1, MSG_NOSIGNAL), 1);
		/* Wait until every socket's event was handled this round. */
		for (;;) {
			int done = 1;

			for (int i = 0; i < MW_SOCKS; i++)
				if (atomic_load(&c.rearmed[i]) < r + 1)
					done = 0;
			if (done)
				break;
			if (now_ms() > deadline) {
				timed_out = 1;
				break;
			}
			struct timespec d = { 0, 100000L };
			nanosleep(&d, NULL);
		}
	}
	/* Leave time for any duplicate to show up before stopping. */
	sleep_ms(50);
	atomic_store(&c.stop, 1);
	for (int i = 0; i < MW_THREADS; i++)
		pthread_join(th[i], NULL);

	for (int i = 0; i < MW_SOCKS; i++) {
		long d = atomic_load(&c.delivered[i]);

		if (d != MW_ROUNDS)
			fprintf(stderr, "socket %d: %ld deliveries for %d "
			    "activations\n", i, d, MW_ROUNDS);
	}
	assert_int_equal(timed_out, 0);
	assert_int_equal(atomic_load(&c.errors), 0);
	for (int i = 0; i < MW_SOCKS; i++)
		assert_int_equal(atomic_load(&c.delivered[i]), MW_ROUNDS);
	t_expect_none(c.kq);

	close(c.kq);
	for (int i = 0; i < MW_SOCKS; i++) {
		close(c.sv[i][0]);
		close(c.sv[i][1]);
	}
}

static void
many_waiters_clear_event_delivered_once(void **state)
{
	(void)state;
	many_waiters_each_event_delivered_once(0);
}

static void
many_waiters_dispatch_event_delivered_once(void **state)
{
	(void)state;
	many_waiters_each_event_delivered_once(1);
}

/* ------------------------------------------------------------------ */
/* 2. Registration churn against waiting threads                      */
/* ------------------------------------------------------------------ */

/*
 * Every registration gets a fresh token (its udata).  The churn thread
 * publishes the token and its descriptor before EV_ADD, and after the
 * EV_DELETE (or close of the descriptor) has returned it stamps the token
 * with a new value of a global epoch counter.  A waiter reads the epoch
 * just before calling kevent(); any event it then receives must carry a
 * token that was not stamped at or before that reading: the deletion of
 * such a token completed before the call began.
 */
#define CH_WAITERS	3
#define CH_SLOTS	8
#define CH_MAXTOK	(1 << 17)
#define CH_MILLIS	500

static _Atomic uint64_t ch_dead_at[CH_MAXTOK];
static atomic_int ch_tok_fd[CH_MAXTOK];
static _Atomic uint64_t ch_epoch;
static atomic_uint ch_ntok;		/* tokens handed out so far */

struct ch_ctx {
	int		 kq;
	atomic_int	 stop;
	atomic_long	 events;
	atomic_long	 violations;
	atomic_long	 errors;
	atomic_long	 churns;
};

struct ch_slot {
	int		 sv[2];
	unsigned	 tok;		/* 0: not registered */
	unsigned short	 mode;
};

static void *
ch_waiter(void *arg)
{
	struct ch_ctx *c = arg;
	struct timespec to = { 0, 10 * 1000000L };

	while (!atomic_load(&c->stop)) {
		struct kevent ev[8];
		uint64_t start = atomic_load(&ch_epoch);
		int n = kevent(c->kq, NULL, 0, ev, 8, &to);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			atomic_fetch_add(&c->errors, 1);
			continue;
		}
		for (int i = 0; i < n; i++) {
			uintptr_t tok = (uintptr_t)ev[i].udata;
			uint64_t dead;

			atomic_fetch_add(&c->events, 1);
			if (tok == 0 || tok >= atomic_load(&ch_ntok) ||
			    (ev[i].flags & EV_ERROR)) {
				atomic_fetch_add(&c->errors, 1);
				continue;
			}
			if (ev[i].ident != (uintptr_t)atomic_load(&ch_tok_fd[tok]))
				atomic_fetch_add(&c->errors, 1);
			dead = atomic_load(&ch_dead_at[tok]);
			if (dead != 0 && dead <= start) {
				if (atomic_fetch_add(&c->violations, 1) < 5)
					fprintf(stderr, "token %ju (fd %ju) "
					    "reported by a kevent() that began "
					    "after its deletion\n",
					    (uintmax_t)tok,
					    (uintmax_t)ev[i].ident);
			}
		}
	}
	return NULL;
}

static void
ch_mark_dead(unsigned tok)
{
	uint64_t e = atomic_fetch_add(&ch_epoch, 1) + 1;

	atomic_store(&ch_dead_at[tok], e);
}

/* Register slot s under a fresh token; returns 0 when tokens ran out. */
static int
ch_register(struct ch_ctx *c, struct ch_slot *s, uint32_t *seed)
{
	static const unsigned short modes[] = {
		0, EV_CLEAR, EV_ONESHOT, EV_DISPATCH
	};
	struct kevent kev;
	unsigned tok = atomic_load(&ch_ntok);

	if (tok + 1 >= CH_MAXTOK)
		return 0;
	atomic_store(&ch_tok_fd[tok], s->sv[0]);
	atomic_store(&ch_ntok, tok + 1);	/* publish before EV_ADD */
	s->mode = modes[rnd(seed) % 4];
	EV_SET(&kev, s->sv[0], EVFILT_READ, EV_ADD | s->mode, 0, 0,
	    (void *)(uintptr_t)tok);
	if (kevent(c->kq, &kev, 1, NULL, 0, NULL) != 0) {
		atomic_fetch_add(&c->errors, 1);
		s->tok = 0;
		return 1;
	}
	s->tok = tok;
	return 1;
}

static void *
ch_churner(void *arg)
{
	struct ch_ctx *c = arg;
	struct ch_slot slots[CH_SLOTS];
	uint32_t seed = 0x2545f491u;
	int64_t end;

	for (int i = 0; i < CH_SLOTS; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, slots[i].sv) != 0) {
			atomic_fetch_add(&c->errors, 1);
			atomic_store(&c->stop, 1);
			return NULL;
		}
		fcntl(slots[i].sv[0], F_SETFL, O_NONBLOCK);
		slots[i].tok = 0;
		ch_register(c, &slots[i], &seed);
	}

	end = now_ms() + CH_MILLIS;
	while (now_ms() < end) {
		struct ch_slot *s = &slots[rnd(&seed) % CH_SLOTS];
		struct kevent kev;
		char buf[64];
		int more = 1;

		atomic_fetch_add(&c->churns, 1);
		switch (rnd(&seed) % 5) {
		case 0:		/* EV_DELETE, then register anew */
			if (s->tok != 0) {
				EV_SET(&kev, s->sv[0], EVFILT_READ, EV_DELETE,
				    0, 0, NULL);
				if (kevent(c->kq, &kev, 1, NULL, 0, NULL) != 0 &&
				    !(errno == ENOENT && s->mode == EV_ONESHOT))
					atomic_fetch_add(&c->errors, 1);
				ch_mark_dead(s->tok);
				s->tok = 0;
			}
			more = ch_register(c, s, &seed);
			break;
		case 1:		/* close the watched socket, reopen, register */
			close(s->sv[0]);
			if (s->tok != 0)
				ch_mark_dead(s->tok);
			s->tok = 0;
			close(s->sv[1]);
			if (socketpair(AF_UNIX, SOCK_STREAM, 0, s->sv) != 0) {
				atomic_fetch_add(&c->errors, 1);
				more = 0;
				s->sv[0] = s->sv[1] = -1;
				break;
			}
			fcntl(s->sv[0], F_SETFL, O_NONBLOCK);
			more = ch_register(c, s, &seed);
			break;
		case 2:		/* make it readable */
		case 3:
			(void)send(s->sv[1], "c", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			break;
		case 4:		/* drain it; re-enable a dispatched knote */
			while (recv(s->sv[0], buf, sizeof(buf), MSG_DONTWAIT) > 0)
				;
			if (s->tok != 0 && s->mode == EV_DISPATCH) {
				EV_SET(&kev, s->sv[0], EVFILT_READ, EV_ENABLE,
				    0, 0, (void *)(uintptr_t)s->tok);
				if (kevent(c->kq, &kev, 1, NULL, 0, NULL) != 0)
					atomic_fetch_add(&c->errors, 1);
			}
			break;
		}
		if (!more)
			break;
	}
	atomic_store(&c->stop, 1);

	for (int i = 0; i < CH_SLOTS; i++) {
		if (slots[i].sv[0] >= 0)
			close(slots[i].sv[0]);
		if (slots[i].sv[1] >= 0)
			close(slots[i].sv[1]);
	}
	return NULL;
}

static void
deleted_knote_never_reported_to_later_kevent(void **state)
{
	static struct ch_ctx c;
	pthread_t w[CH_WAITERS], ch;
	int fds0 = count_fds();

	(void)state;
	memset(&c, 0, sizeof(c));
	atomic_store(&ch_ntok, 1);	/* token 0 is never used */
	atomic_store(&ch_epoch, 0);
	assert_true((c.kq = kqueue()) >= 0);

	for (int i = 0; i < CH_WAITERS; i++)
		assert_int_equal(pthread_create(&w[i], NULL, ch_waiter, &c), 0);
	assert_int_equal(pthread_create(&ch, NULL, ch_churner, &c), 0);
	pthread_join(ch, NULL);
	for (int i = 0; i < CH_WAITERS; i++)
		pthread_join(w[i], NULL);

	fprintf(stderr, "churn: %ld operations, %u registrations, %ld events\n",
	    atomic_load(&c.churns), atomic_load(&ch_ntok) - 1,
	    atomic_load(&c.events));
	assert_int_equal(atomic_load(&c.violations), 0);
	assert_int_equal(atomic_load(&c.errors), 0);
	assert_true(atomic_load(&c.events) > 0);

	/* Every watched descriptor is closed: nothing can be pending. */
	t_expect_none(c.kq);
	close(c.kq);
	if (fds0 >= 0)
		assert_int_equal(count_fds(), fds0);
}

/* ------------------------------------------------------------------ */
/* 3. kqueue()/close() in parallel with kevent() on other kqueues     */
/* ------------------------------------------------------------------ */

#define PC_CREATORS	4
#define PC_USERS	2
#define PC_ROUNDS	1000

struct pc_ctx {
	atomic_int	 stop;
	atomic_long	 errors;
	atomic_long	 user_calls;
};

struct pc_arg {
	struct pc_ctx	*c;
	int		 id;
};

/* Creates, uses and closes kqueues on its own readable pipe. */
static void *
pc_creator(void *arg)
{
	struct pc_arg *a = arg;
	struct pc_ctx *c = a->c;
	void *tag = (void *)(uintptr_t)(0x100 + a->id);
	int p[2];

	if (pipe(p) != 0 || write(p[1], "p", 1) != 1) {
		atomic_fetch_add(&c->errors, 1);
		return NULL;
	}
	for (int i = 0; i < PC_ROUNDS; i++) {
		struct kevent ch, ev[2];
		int kq = kqueue(), n;

		if (kq < 0) {
			atomic_fetch_add(&c->errors, 1);
			continue;
		}
		EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, tag);
		if (kevent(kq, &ch, 1, NULL, 0, NULL) != 0)
			atomic_fetch_add(&c->errors, 1);
		n = kevent(kq, NULL, 0, ev, 2, &t_zero);
		if (n != 1 || ev[0].udata != tag ||
		    ev[0].ident != (uintptr_t)p[0] || ev[0].data != 1)
			atomic_fetch_add(&c->errors, 1);
		if (close(kq) != 0)
			atomic_fetch_add(&c->errors, 1);
	}
	close(p[0]);
	close(p[1]);
	return NULL;
}

/* Polls its own long-lived kqueue, which must keep working throughout. */
static void *
pc_user(void *arg)
{
	struct pc_arg *a = arg;
	struct pc_ctx *c = a->c;
	void *tag = (void *)(uintptr_t)(0x200 + a->id);
	struct kevent ch, ev[2];
	int sv[2], kq;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 ||
	    send(sv[1], "u", 1, MSG_NOSIGNAL) != 1 || (kq = kqueue()) < 0) {
		atomic_fetch_add(&c->errors, 1);
		return NULL;
	}
	EV_SET(&ch, sv[0], EVFILT_READ, EV_ADD, 0, 0, tag);
	if (kevent(kq, &ch, 1, NULL, 0, NULL) != 0)
		atomic_fetch_add(&c->errors, 1);
	while (!atomic_load(&c->stop)) {
		int n = kevent(kq, NULL, 0, ev, 2, &t_zero);

		atomic_fetch_add(&c->user_calls, 1);
		if (n != 1 || ev[0].udata != tag ||
		    ev[0].ident != (uintptr_t)sv[0] || ev[0].data != 1)
			atomic_fetch_add(&c->errors, 1);
	}
	close(kq);
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

static void
parallel_kqueue_create_close_with_kevent_elsewhere(void **state)
{
	static struct pc_ctx c;
	struct pc_arg ca[PC_CREATORS], ua[PC_USERS];
	pthread_t ct[PC_CREATORS], ut[PC_USERS];
	int fds0 = count_fds();

	(void)state;
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < PC_USERS; i++) {
		ua[i].c = &c;
		ua[i].id = i;
		assert_int_equal(pthread_create(&ut[i], NULL, pc_user, &ua[i]), 0);
	}
	for (int i = 0; i < PC_CREATORS; i++) {
		ca[i].c = &c;
		ca[i].id = i;
		assert_int_equal(pthread_create(&ct[i], NULL, pc_creator, &ca[i]),
		    0);
	}
	for (int i = 0; i < PC_CREATORS; i++)
		pthread_join(ct[i], NULL);
	atomic_store(&c.stop, 1);
	for (int i = 0; i < PC_USERS; i++)
		pthread_join(ut[i], NULL);

	assert_int_equal(atomic_load(&c.errors), 0);
	assert_true(atomic_load(&c.user_calls) > 0);
	if (fds0 >= 0)
		assert_int_equal(count_fds(), fds0);
}

/* ------------------------------------------------------------------ */
/* 4. close(kq) while another thread is blocked in kevent() on it     */
/* ------------------------------------------------------------------ */

#define CB_ITER		10
#define CB_WAIT_MS	300

struct cb_ctx {
	int		 kq;
	atomic_int	 entering;
	int		 rc;
	int		 err;
	int		 nbad;		/* returned events with a foreign udata */
	int64_t		 elapsed_ms;
};

static void *
cb_waiter(void *arg)
{
	struct cb_ctx *c = arg;
	struct timespec to = { 0, CB_WAIT_MS * 1000000L };
	struct kevent ev[4];
	int64_t t0 = now_ms();

	atomic_store(&c->entering, 1);
	c->rc = kevent(c->kq, NULL, 0, ev, 4, &to);
	c->err = errno;
	c->elapsed_ms = now_ms() - t0;
	for (int i = 0; i < c->rc; i++)
		if (ev[i].udata != (void *)0xAA)
			c->nbad++;
	return NULL;
}

/*
 * The waiter must come back (timeout or error), must not report events of
 * a kqueue that reuses the closed number, and must not consume them: the
 * new kqueue still delivers its event to the main thread.
 */
static void
close_of_kqueue_under_blocked_kevent_is_safe(void **state)
{
	int sv[2], idle[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, idle), 0);
	set_nonblock(sv[0]);
	assert_int_equal(send(sv[1], "b", 1, MSG_NOSIGNAL), 1);

	for (int it = 0; it < CB_ITER; it++) {
		struct cb_ctx c;
		pthread_t th;
		int kq2;
		struct kevent ev;

		memset(&c, 0, sizeof(c));
		assert_true((c.kq = kqueue()) >= 0);
		/* A knote that never fires: the waiter has to sleep. */
		t_change(c.kq, idle[0], EVFILT_READ, EV_ADD, 0, 0, (void *)0xAA);
		assert_int_equal(pthread_create(&th, NULL, cb_waiter, &c), 0);
		while (!atomic_load(&c.entering))
			sleep_ms(1);
		sleep_ms(20);		/* let it block (not asserted) */
		assert_int_equal(close(c.kq), 0);

		/* Probably the same number: a new, ready kqueue. */
		assert_true((kq2 = kqueue()) >= 0);
		t_change(kq2, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)0xBB);

		pthread_join(th, NULL);
		if (c.rc > 0 || c.nbad != 0)
			fprintf(stderr, "iteration %d: waiter returned %d "
			    "(%d foreign)\n", it, c.rc, c.nbad);
		if (c.rc < 0)
			fprintf(stderr, "iteration %d: waiter error %s\n", it,
			    strerror(c.err));
		assert_true(c.rc == 0 || c.rc == -1);
		assert_int_equal(c.nbad, 0);
		assert_true(c.elapsed_ms < 10000);

		ev = t_expect_one(kq2);
		assert_ptr_equal(ev.udata, (void *)0xBB);
		assert_int_equal(ev.ident, sv[0]);
		close(kq2);
	}
	close(sv[0]);
	close(sv[1]);
	close(idle[0]);
	close(idle[1]);
}

/* ------------------------------------------------------------------ */
/* 6. EVFILT_USER and EVFILT_TIMER across threads                      */
/* ------------------------------------------------------------------ */

struct ut_ctx {
	int		 kq;
	int		 delay_ms;
	atomic_int	 errors;
};

static void *
ut_trigger_thread(void *arg)
{
	struct ut_ctx *c = arg;
	struct kevent ch;

	sleep_ms(c->delay_ms);
	EV_SET(&ch, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, (void *)0x77);
	if (kevent(c->kq, &ch, 1, NULL, 0, NULL) != 0)
		atomic_fetch_add(&c->errors, 1);
	return NULL;
}

/* A NOTE_TRIGGER from another thread wakes a kevent() blocked here. */
static void
user_trigger_from_other_thread_wakes_blocked_kevent(void **state)
{
	static struct ut_ctx c;
	struct timespec to = { 10, 0 };
	struct kevent ev;
	pthread_t th;
	int64_t t0, t1;
	int r;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.delay_ms = 100;
	assert_true((c.kq = kqueue()) >= 0);
	t_change(c.kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	t0 = now_ms();
	assert_int_equal(pthread_create(&th, NULL, ut_trigger_thread, &c), 0);
	r = kevent(c.kq, NULL, 0, &ev, 1, &to);
	t1 = now_ms();
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&c.errors), 0);
	assert_int_equal(r, 1);
	assert_int_equal(ev.ident, 1);
	assert_int_equal(ev.filter, EVFILT_USER);
	assert_ptr_equal(ev.udata, (void *)0x77);
	assert_true(t1 - t0 >= 100);
	assert_true(t1 - t0 < 5000);	/* woken, not timed out */
	close(c.kq);
}

/*
 * Four threads wait on one kqueue holding EV_CLEAR user events, one-shot
 * timers and periodic (auto-EV_CLEAR) timers: every user trigger is
 * delivered once, every one-shot timer once, and the periodic timers'
 * data adds up to the periods that passed, never more.
 */
#define XW_THREADS	4
#define XW_USERS	8
#define XW_ROUNDS	200
#define XW_ONESHOTS	1000
#define XW_PERIODIC	2
#define XW_PERIOD_MS	5
#define XW_TBASE	1000	/* first one-shot timer ident */
#define XW_PBASE	5000	/* first periodic timer ident */

struct xw_ctx {
	int		 kq;
	atomic_int	 stop;
	atomic_int	 errors;
	atomic_int	 waiting;
	atomic_long	 user[XW_USERS];
	atomic_int	 oneshot[XW_ONESHOTS];
	atomic_long	 periodic[XW_PERIODIC];
};

static void *
xw_thread(void *arg)
{
	struct xw_ctx *c = arg;
	struct timespec to = { 0, 20 * 1000000L };

	atomic_fetch_add(&c->waiting, 1);
	while (!atomic_load(&c->stop)) {
		struct kevent ev[8];
		int n = kevent(c->kq, NULL, 0, ev, 8, &to);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			atomic_fetch_add(&c->errors, 1);
			break;
		}
		for (int i = 0; i < n; i++) {
			uintptr_t id = ev[i].ident;

			if (ev[i].flags & EV_ERROR) {
				atomic_fetch_add(&c->errors, 1);
			} else if (ev[i].filter == EVFILT_USER && id < XW_USERS) {
				atomic_fetch_add(&c->user[id], 1);
			} else if (ev[i].filter == EVFILT_TIMER &&
			    id >= XW_TBASE && id < XW_TBASE + XW_ONESHOTS &&
			    ev[i].data == 1) {
				atomic_fetch_add(&c->oneshot[id - XW_TBASE], 1);
			} else if (ev[i].filter == EVFILT_TIMER &&
			    id >= XW_PBASE && id < XW_PBASE + XW_PERIODIC &&
			    ev[i].data >= 1) {
				atomic_fetch_add(&c->periodic[id - XW_PBASE],
				    (long)ev[i].data);
			} else {
				atomic_fetch_add(&c->errors, 1);
			}
		}
	}
	return NULL;
}

static void
clear_user_events_and_timers_delivered_once_to_four_waiters(void **state)
{
	static struct xw_ctx c;
	pthread_t th[XW_THREADS];
	struct kevent ch, ev[16];
	int64_t t_added0, t_added1, t_end0, t_end1;
	int timed_out = 0, i, n;

	(void)state;
	memset(&c, 0, sizeof(c));
	assert_true((c.kq = kqueue()) >= 0);
	for (i = 0; i < XW_USERS; i++)
		t_change(c.kq, (uintptr_t)i, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0,
		    NULL);
	for (i = 0; i < XW_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, xw_thread, &c), 0);
	while (atomic_load(&c.waiting) < XW_THREADS)
		sleep_ms(1);

	t_added0 = now_ms();
	for (i = 0; i < XW_PERIODIC; i++)
		t_change(c.kq, XW_PBASE + (uintptr_t)i, EVFILT_TIMER, EV_ADD, 0,
		    XW_PERIOD_MS, NULL);
	t_added1 = now_ms();
	/* One-shots spread over about 400 ms, while the triggers run. */
	for (i = 0; i < XW_ONESHOTS; i++)
		t_change(c.kq, XW_TBASE + (uintptr_t)i, EVFILT_TIMER,
		    EV_ADD | EV_ONESHOT, NOTE_USECONDS, 400 * (int64_t)i, NULL);

	for (int r = 0; r < XW_ROUNDS && !timed_out; r++) {
		int64_t deadline = now_ms() + 5000;

		for (i = 0; i < XW_USERS; i++)
			t_change(c.kq, (uintptr_t)i, EVFILT_USER, 0, NOTE_TRIGGER,
			    r, NULL);
		for (;;) {
			int done = 1;

			for (i = 0; i < XW_USERS; i++)
				if (atomic_load(&c.user[i]) < r + 1)
					done = 0;
			if (done)
				break;
			if (now_ms() > deadline) {
				timed_out = 1;
				break;
			}
			struct timespec d = { 0, 100000L };
			nanosleep(&d, NULL);
		}
	}
	/* Every one-shot is due by now + 400 ms; leave time for duplicates. */
	sleep_ms(600);
	atomic_store(&c.stop, 1);
	for (i = 0; i < XW_THREADS; i++)
		pthread_join(th[i], NULL);
	/* Collect what the periodic timers counted since, then stop them. */
	t_end0 = now_ms();
	n = kevent(c.kq, NULL, 0, ev, 16, &t_zero);
	t_end1 = now_ms();
	assert_true(n >= 0);
	for (int k = 0; k < n; k++) {
		if (ev[k].filter == EVFILT_TIMER && ev[k].ident >= XW_PBASE &&
		    ev[k].ident < XW_PBASE + XW_PERIODIC)
			atomic_fetch_add(&c.periodic[ev[k].ident - XW_PBASE],
			    (long)ev[k].data);
		else
			atomic_fetch_add(&c.errors, 1);
	}
	for (i = 0; i < XW_PERIODIC; i++) {
		EV_SET(&ch, XW_PBASE + (uintptr_t)i, EVFILT_TIMER, EV_DELETE, 0,
		    0, NULL);
		assert_int_equal(kevent(c.kq, &ch, 1, NULL, 0, NULL), 0);
	}

	assert_int_equal(timed_out, 0);
	assert_int_equal(atomic_load(&c.errors), 0);
	for (i = 0; i < XW_USERS; i++) {
		if (atomic_load(&c.user[i]) != XW_ROUNDS)
			fprintf(stderr, "user %d: %ld deliveries for %d "
			    "triggers\n", i, atomic_load(&c.user[i]), XW_ROUNDS);
		assert_int_equal(atomic_load(&c.user[i]), XW_ROUNDS);
	}
	for (i = 0; i < XW_ONESHOTS; i++) {
		if (atomic_load(&c.oneshot[i]) != 1)
			fprintf(stderr, "one-shot timer %d: %d deliveries\n", i,
			    atomic_load(&c.oneshot[i]));
		assert_int_equal(atomic_load(&c.oneshot[i]), 1);
	}
	for (i = 0; i < XW_PERIODIC; i++) {
		long got = atomic_load(&c.periodic[i]);
		long lo = (long)((t_end0 - t_added1) / XW_PERIOD_MS) - 1;
		long hi = (long)((t_end1 - t_added0) / XW_PERIOD_MS) + 1;

		if (got < lo || got > hi)
			fprintf(stderr, "periodic timer %d: %ld expirations, "
			    "expected %ld..%ld\n", i, got, lo, hi);
		assert_true(got >= lo);
		assert_true(got <= hi);
	}
	t_expect_none(c.kq);
	close(c.kq);
}

/* ------------------------------------------------------------------ */
/* 7. EVFILT_SIGNAL with several threads                              */
/* ------------------------------------------------------------------ */

/*
 * FreeBSD records a signal when it is generated, for the process, whether
 * it is directed at the process (kill) or at one thread (pthread_kill),
 * and whichever thread the kernel picks to take it.  Handlers only touch
 * atomics; the main thread asserts.
 */

static atomic_int sg_hits;		/* handler runs */
static atomic_int sg_hits_target;	/* ... in the designated thread */
static atomic_int sg_hits_blocked;	/* ... in a thread that blocks it */
static _Thread_local int sg_is_target;
static _Thread_local int sg_blocks;

static void
sg_handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&sg_hits, 1);
	if (sg_is_target)
		atomic_fetch_add(&sg_hits_target, 1);
	if (sg_blocks)
		atomic_fetch_add(&sg_hits_blocked, 1);
}

static void
sg_reset(void)
{
	atomic_store(&sg_hits, 0);
	atomic_store(&sg_hits_target, 0);
	atomic_store(&sg_hits_blocked, 0);
}

static void
sg_set(int sig, void (*h)(int), struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(sig, &sa, old), 0);
}

/* Block (how = SIG_BLOCK) or unblock sig in the calling thread. */
static void
sg_mask(int how, int sig, sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, sig);
	assert_int_equal(pthread_sigmask(how, &set, old), 0);
}

/* Wait (at most ~5 s) until *v reaches want; returns the value. */
static int
sg_wait_for(atomic_int *v, int want)
{
	int i;

	for (i = 0; i < 5000 && atomic_load(v) < want; i++)
		sleep_ms(1);
	return atomic_load(v);
}

struct sg_worker {
	pthread_t	 thr;
	int		 block;		/* block SIGUSR1 in this thread */
	int		 target;	/* mark as the designated thread */
	int		 raise_after_ms; /* > 0: raise(SIGUSR1) then */
	atomic_int	*stop;
	atomic_int	*ready;
	int		 err;
};

static void *
sg_worker_main(void *arg)
{
	struct sg_worker *w = arg;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (pthread_sigmask(w->block ? SIG_BLOCK : SIG_UNBLOCK, &set,
	    NULL) != 0)
		w->err = 1;
	sg_is_target = w->target;
	sg_blocks = w->block;
	atomic_fetch_add(w->ready, 1);
	if (w->raise_after_ms > 0) {
		sleep_ms(w->raise_after_ms);
		if (raise(SIGUSR1) != 0)
			w->err = 2;
	}
	while (!atomic_load(w->stop))
		sleep_ms(1);
	return NULL;
}

static void
sg_start(struct sg_worker *w, atomic_int *stop, atomic_int *ready)
{
	w->stop = stop;
	w->ready = ready;
	w->err = 0;
	assert_int_equal(pthread_create(&w->thr, NULL, sg_worker_main, w), 0);
}

/* A signal sent to one other thread with pthread_kill() is counted. */
static void
thread_directed_signal_is_counted_whatever_the_disposition(void **state)
{
	struct timespec to = { 5, 0 };
	struct sigaction old;
	struct kevent ev;
	int kq, mode, r;

	(void)state;
	assert_int_equal(sigaction(SIGUSR1, NULL, &old), 0);
	for (mode = 0; mode < 2; mode++) {
		struct sg_worker w;
		atomic_int stop, ready;

		sg_reset();
		atomic_init(&stop, 0);
		atomic_init(&ready, 0);
		sg_set(SIGUSR1, mode == 0 ? sg_handler : SIG_IGN, NULL);
		assert_true((kq = kqueue()) >= 0);
		t_change(kq, SIGUSR1, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
		memset(&w, 0, sizeof(w));
		w.target = 1;
		sg_start(&w, &stop, &ready);
		sg_wait_for(&ready, 1);
		assert_int_equal(pthread_kill(w.thr, SIGUSR1), 0);
		r = kevent(kq, NULL, 0, &ev, 1, &to);
		if (mode == 0)
			sg_wait_for(&sg_hits, 1);
		atomic_store(&stop, 1);
		assert_int_equal(pthread_join(w.thr, NULL), 0);
		assert_int_equal(w.err, 0);
		assert_int_equal(r, 1);
		assert_int_equal(ev.ident, SIGUSR1);
		assert_int_equal(ev.data, 1);
		assert_int_equal(atomic_load(&sg_hits), mode == 0 ? 1 : 0);
		assert_int_equal(atomic_load(&sg_hits_target), mode == 0);
		t_expect_none(kq);
		close(kq);
	}
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
}

#define SG_THREADS	8
#define SG_KILLS	64

/*
 * kill() of the process with 8 threads, half of them (and the main
 * thread) blocking the signal: the kernel picks a thread, and every kill
 * is counted.  Each kill waits for the handler to run before the next, so
 * standard signals never coalesce.
 */
static void
process_directed_signals_to_eight_threads_are_all_counted(void **state)
{
	struct sg_worker w[SG_THREADS];
	atomic_int stop, ready;
	struct sigaction old;
	sigset_t omask;
	struct kevent ev;
	int kq, i, n, acked = 0;

	(void)state;
	sg_reset();
	atomic_init(&stop, 0);
	atomic_init(&ready, 0);
	sg_set(SIGUSR1, sg_handler, &old);
	sg_mask(SIG_BLOCK, SIGUSR1, &omask);
	sg_blocks = 1;
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, SIGUSR1, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	memset(w, 0, sizeof(w));
	for (i = 0; i < SG_THREADS; i++) {
		w[i].block = i % 2;
		sg_start(&w[i], &stop, &ready);
	}
	sg_wait_for(&ready, SG_THREADS);
	for (i = 1; i <= SG_KILLS; i++) {
		if (kill(getpid(), SIGUSR1) != 0)
			break;
		acked = sg_wait_for(&sg_hits, i);
		if (acked != i)
			break;
	}
	n = t_poll(kq, &ev, 1);
	atomic_store(&stop, 1);
	for (i = 0; i < SG_THREADS; i++) {
		assert_int_equal(pthread_join(w[i].thr, NULL), 0);
		assert_int_equal(w[i].err, 0);
	}
	sg_blocks = 0;
	close(kq);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &omask, NULL), 0);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);

	assert_int_equal(acked, SG_KILLS);
	assert_int_equal(atomic_load(&sg_hits_blocked), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev.ident, SIGUSR1);
	assert_int_equal(ev.data, SG_KILLS);
}

/*
 * A kevent() sleeping in a thread that blocks the signal is woken when the
 * signal is delivered to another thread, and returns the event (the
 * handler ran elsewhere, so this thread is not interrupted).
 */
static void
kevent_blocked_in_one_thread_is_woken_by_signal_to_another(void **state)
{
	struct timespec to = { 10, 0 };
	struct sigaction old;
	sigset_t omask;
	int kq, mode;

	(void)state;
	assert_int_equal(sigaction(SIGUSR1, NULL, &old), 0);
	sg_mask(SIG_BLOCK, SIGUSR1, &omask);
	for (mode = 0; mode < 2; mode++) {
		struct sg_worker w;
		atomic_int stop, ready;
		struct kevent ev;
		int64_t t0, elapsed;
		int r, err;

		sg_reset();
		atomic_init(&stop, 0);
		atomic_init(&ready, 0);
		sg_set(SIGUSR1, mode == 0 ? sg_handler : SIG_IGN, NULL);
		assert_true((kq = kqueue()) >= 0);
		t_change(kq, SIGUSR1, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
		memset(&w, 0, sizeof(w));
		w.target = 1;
		w.raise_after_ms = 100;
		sg_start(&w, &stop, &ready);
		t0 = now_ms();
		r = kevent(kq, NULL, 0, &ev, 1, &to);
		err = errno;
		elapsed = now_ms() - t0;
		if (mode == 0)
			sg_wait_for(&sg_hits, 1);
		atomic_store(&stop, 1);
		assert_int_equal(pthread_join(w.thr, NULL), 0);
		close(kq);
		assert_int_equal(w.err, 0);
		if (r < 0)
			fprintf(stderr, "kevent: %s\n", strerror(err));
		assert_int_equal(r, 1);
		assert_int_equal(ev.ident, SIGUSR1);
		assert_int_equal(ev.data, 1);
		assert_true(elapsed < 5000);
		assert_int_equal(atomic_load(&sg_hits_target), mode == 0);
	}
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &omask, NULL), 0);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(many_waiters_clear_event_delivered_once),
		cmocka_unit_test(many_waiters_dispatch_event_delivered_once),
		cmocka_unit_test(deleted_knote_never_reported_to_later_kevent),
		cmocka_unit_test(parallel_kqueue_create_close_with_kevent_elsewhere),
		cmocka_unit_test(close_of_kqueue_under_blocked_kevent_is_safe),
		cmocka_unit_test(user_trigger_from_other_thread_wakes_blocked_kevent),
		cmocka_unit_test(clear_user_events_and_timers_delivered_once_to_four_waiters),
		cmocka_unit_test(thread_directed_signal_is_counted_whatever_the_disposition),
		cmocka_unit_test(process_directed_signals_to_eight_threads_are_all_counted),
		cmocka_unit_test(kevent_blocked_in_one_thread_is_woken_by_signal_to_another),
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, NULL, NULL);
}
