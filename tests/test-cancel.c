/*
 * pthread cancellation and kevent(), as FreeBSD's libthr defines it: a
 * kevent() with room for events is a cancellation point at its entry, and
 * in its wait when it has no changes; a wait that returned events is not
 * cancelled; a kevent() that only applies changes is not a cancellation
 * point.  close() stays one.  Nothing a cancellation does may leave a
 * kqueue locked, leak its descriptors or take an event with it, and none
 * acts after the wait returned, where the caller disabled cancellation
 * (the same for the event ports' port_get(), illumos's cancellation point).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <port.h>

#include "helpers.h"

static void *
wait_for_ever(void *arg)
{
	int kq = *(int *)arg;
	struct kevent ev;

	pthread_cleanup_push(t_cancel_cleanup, NULL);
	for (;;)
		(void)kevent(kq, NULL, 0, &ev, 1, NULL);
	pthread_cleanup_pop(0);
	return NULL;
}

/*
 * kevent() is a cancellation point while it sleeps, as on FreeBSD.  A
 * thread cancelled there takes nothing with it: once the kqueue is
 * closed, none of its descriptors is left open, round after round.  Some
 * rounds cancel before the thread reaches the wait, some while it sleeps;
 * the kqueue is closed after the join, or before it while the
 * cancellation may still be under way.  (kq's descriptors are anonymous
 * inodes -- an epoll set, an eventfd -- and only those are counted: a
 * sanitizer's symbolizer has pipes of its own.)
 */
static void
thread_cancelled_while_waiting_leaves_no_descriptor_after_close(void **state)
{
	int p[2], fds0, fds1;

	(void)state;
	assert_int_equal(pipe(p), 0);
	fds0 = t_count_links("anon_inode:");
	for (int i = 0; i < 40; i++) {
		struct kevent ch;
		pthread_t t;
		int kq = kqueue();

		assert_true(kq >= 0);
		EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
		assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
		/* (joined before kq leaves scope) */
		assert_int_equal(pthread_create(&t, NULL, wait_for_ever, &kq),
		    0);
		if (i % 4 != 0)
			usleep(2000 * (i % 4));	/* asleep in the wait */
		assert_int_equal(pthread_cancel(t), 0);
		if (i % 2 == 0) {
			assert_int_equal(pthread_join(t, NULL), 0);
			assert_int_equal(close(kq), 0);
		} else {
			assert_int_equal(close(kq), 0);
			assert_int_equal(pthread_join(t, NULL), 0);
		}
	}
	fds1 = t_count_links("anon_inode:");
	if (fds1 != fds0)
		fprintf(stderr, "kq descriptors: %d before, %d after\n", fds0,
		    fds1);
	assert_int_equal(fds1, fds0);
	close(p[0]);
	close(p[1]);
}

/* Shared by the threads of cancelled_at_any_point_in_kevent_*. */
struct cancel_loop {
	int	kq;
	int	wfd;	/* write end of a pipe whose read end is watched */
};

static void *
trigger_and_collect_for_ever(void *arg)
{
	struct cancel_loop *cl = arg;
	struct kevent ch[2], ev[4];
	struct timespec zero = { 0, 0 };

	pthread_cleanup_push(t_cancel_cleanup, NULL);
	EV_SET(&ch[0], 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	EV_SET(&ch[1], 2, EVFILT_USER, EV_ADD | EV_ONESHOT, NOTE_TRIGGER, 0,
	    NULL);
	for (unsigned i = 0;; i++) {
		/* Triggers ring the kqueue's doorbell, collections quiet
		   it, a byte makes the pipe readable; some calls sleep. */
		if (i % 7 == 0)
			(void)!write(cl->wfd, "x", 1);
		if (i % 2 == 0)
			(void)kevent(cl->kq, ch, i % 3 == 0 ? 2 : 1, NULL, 0,
			    NULL);
		else
			(void)kevent(cl->kq, NULL, 0, ev, 4,
			    i % 16 == 1 ? NULL : &zero);
	}
	pthread_cleanup_pop(0);
	return NULL;
}

/* A UDP socket bound to the loopback with n datagrams queued to itself. */
static int
udp_with_datagrams(int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(s >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(sendto(s, "d", 1, 0, (struct sockaddr *)&a,
		    sizeof(a)), 1);
	return s;
}

/*
 * A thread may be cancelled at any moment of a kevent() call; only its
 * entry and its blocking wait are cancellation points, as on FreeBSD,
 * so no cancellation ever leaves the kqueue locked: after each one, a
 * kevent() from another thread returns (a watchdog would catch a hang),
 * and after every round no kq descriptor is left.  The kqueue has what
 * makes kq call the kernel with its lock held: user events (its
 * doorbell), a pipe, a 50 us timer and a UDP socket with datagrams queued
 * (whose byte count is a walk of the queue).
 */
static void
thread_cancelled_at_any_moment_of_kevent_leaves_the_kqueue_usable(void **state)
{
	struct cancel_loop cl;
	struct kevent ch[4], ev[8];
	int p[2], fds0, udp = udp_with_datagrams(64);
	unsigned seed = 12345;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
	fds0 = t_count_links("anon_inode:");
	signal(SIGALRM, SIG_DFL);	/* a hang ends the test */
	for (int i = 0; i < 300; i++) {
		pthread_t t[2];

		cl.kq = kqueue();
		cl.wfd = p[1];
		assert_true(cl.kq >= 0);
		EV_SET(&ch[0], 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
		EV_SET(&ch[1], p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
		EV_SET(&ch[2], 7, EVFILT_TIMER, EV_ADD, NOTE_USECONDS, 50,
		    NULL);
		EV_SET(&ch[3], udp, EVFILT_READ, EV_ADD, 0, 0, NULL);
		assert_int_equal(kevent(cl.kq, ch, 4, NULL, 0, NULL), 0);
		for (int k = 0; k < 2; k++)
			assert_int_equal(pthread_create(&t[k], NULL,
			    trigger_and_collect_for_ever, &cl), 0);
		seed = seed * 1103515245u + 12345u;
		usleep((seed >> 16) % 400);
		alarm(20);
		for (int k = 0; k < 2; k++) {
			assert_int_equal(pthread_cancel(t[k]), 0);
			assert_int_equal(pthread_join(t[k], NULL), 0);
		}
		/* The kqueue is not left locked. */
		(void)kevent(cl.kq, NULL, 0, ev, 8, &t_zero);
		alarm(0);
		{
			char buf[4096];

			while (read(p[0], buf, sizeof(buf)) > 0)
				;
		}
		assert_int_equal(close(cl.kq), 0);
	}
	assert_int_equal(t_count_links("anon_inode:"), fds0);
	close(p[0]);
	close(p[1]);
	close(udp);
}


/* Shared by waiter_cancelled_as_an_event_arrives_*: events collected. */
static atomic_int collected;

static void *
collect_counting(void *arg)
{
	int kq = *(int *)arg;
	struct kevent ev;

	pthread_cleanup_push(t_cancel_cleanup, NULL);
	for (;;)
		if (kevent(kq, NULL, 0, &ev, 1, NULL) > 0)
			atomic_fetch_add(&collected, 1);
	pthread_cleanup_pop(0);
	return NULL;
}

/*
 * A wait that returned events is not cancelled (libthr acts only when the
 * wait failed): a waiter cancelled just as an EV_CLEAR event arrives
 * either never took it -- another waiter reports it -- or returns it to
 * its caller, and the cancellation acts at its next cancellation point.
 * Three waiters, one cancelled (and replaced) as each byte is written.
 */
static void
waiter_cancelled_as_an_event_arrives_never_takes_the_event_with_it(void **state)
{
	struct kevent ch;
	pthread_t t[3];
	int p[2], kq = kqueue(), lost = 0;
	unsigned seed = 11;

	(void)state;
	assert_true(kq >= 0);
	assert_int_equal(pipe(p), 0);
	EV_SET(&ch, p[0], EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(pthread_create(&t[k], NULL, collect_counting,
		    &kq), 0);
	for (int i = 0; i < 60; i++) {
		int before = atomic_load(&collected), k, ok = 0;

		usleep(1000);
		assert_int_equal(write(p[1], "x", 1), 1);
		seed = seed * 1103515245u + 12345u;
		k = (int)((seed >> 16) % 3);
		for (volatile unsigned spin = (seed >> 8) % 20000; spin > 0;
		    spin--)
			;
		assert_int_equal(pthread_cancel(t[k]), 0);
		assert_int_equal(pthread_join(t[k], NULL), 0);
		assert_int_equal(pthread_create(&t[k], NULL, collect_counting,
		    &kq), 0);
		for (int ms = 0; ms < 2000 && !ok; ms++) {
			if (atomic_load(&collected) > before)
				ok = 1;
			else
				usleep(1000);
		}
		if (!ok)
			lost++;
	}
	for (int k = 0; k < 3; k++) {
		assert_int_equal(pthread_cancel(t[k]), 0);
		assert_int_equal(pthread_join(t[k], NULL), 0);
	}
	if (lost > 0)
		fprintf(stderr, "%d of 60 events collected by nobody\n", lost);
	assert_int_equal(lost, 0);
	close(kq);
	close(p[0]);
	close(p[1]);
}

struct timed_wait {
	int			kq;
	struct timespec		tmo;
	int			lowat;	/* wake once for nothing first */
	int			wfd;
};

static void *
wait_with_timeout(void *arg)
{
	struct timed_wait *tw = arg;
	struct kevent ev;

	pthread_cleanup_push(t_cancel_cleanup, NULL);
	for (;;)
		(void)kevent(tw->kq, NULL, 0, &ev, 1, &tw->tmo);
	pthread_cleanup_pop(0);
	return NULL;
}

static double
seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Whatever its timeout -- whole milliseconds or not, and after a wake-up
 * that gave nothing (a byte below NOTE_LOWAT: the time left is no longer
 * whole) -- a kevent() asleep in its wait acts on a cancellation then,
 * not when its 20 s are over.
 */
static void
blocked_kevent_with_any_timeout_acts_on_cancellation_at_once(void **state)
{
	static const long nsecs[] = { 0, 500000, 1 };
	struct timed_wait tw;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	for (int c = 0; c < 4; c++) {
		struct kevent ch;
		pthread_t t;
		double t0;

		tw.kq = kqueue();
		assert_true(tw.kq >= 0);
		tw.tmo.tv_sec = 20;
		tw.tmo.tv_nsec = nsecs[c % 3];
		EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, NOTE_LOWAT, 100, NULL);
		assert_int_equal(kevent(tw.kq, &ch, 1, NULL, 0, NULL), 0);
		assert_int_equal(pthread_create(&t, NULL, wait_with_timeout,
		    &tw), 0);
		usleep(50000);
		if (c == 3) {
			/* A byte below the low-water mark wakes the wait
			   for nothing; it goes on sleeping. */
			assert_int_equal(write(p[1], "x", 1), 1);
			usleep(50000);
		}
		t0 = seconds_now();
		assert_int_equal(pthread_cancel(t), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		if (seconds_now() - t0 > 10)
			fprintf(stderr, "case %d: the cancellation waited for "
			    "the timeout\n", c);
		assert_true(seconds_now() - t0 < 10);
		close(tw.kq);
		if (c == 3) {
			char b;

			assert_int_equal(read(p[0], &b, 1), 1);
		}
	}
	close(p[0]);
	close(p[1]);
}

/* A thread with a cancellation pending runs one operation (kind). */
struct pending_op {
	int		kind;	/* 0 changes only, 1 nothing, 2 nevents 1,
				   3 close */
	int		kq;
	int		fd;
	int		go[2];
	atomic_int	returned;
};

static void *
run_with_cancel_pending(void *arg)
{
	struct pending_op *po = arg;
	struct kevent ch, ev;
	char c;

	(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	/* Wait for main's pthread_cancel(), which stays pending. */
	if (read(po->go[0], &c, 1) != 1)
		return NULL;
	(void)pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	switch (po->kind) {
	case 0:
		EV_SET(&ch, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
		(void)kevent(po->kq, &ch, 1, NULL, 0, NULL);
		break;
	case 1:
		(void)kevent(po->kq, NULL, 0, NULL, 0, NULL);
		break;
	case 2:
		(void)kevent(po->kq, NULL, 0, &ev, 1, &t_zero);
		break;
	case 3:
		(void)close(po->fd);
		break;
	}
	atomic_store(&po->returned, 1);
	return NULL;
}

/*
 * With a cancellation pending, a kevent() that only applies changes, or
 * has no room for events, returns (libthr does not make it cancellable);
 * one with room for events acts at its entry; so does close().
 */
static void
pending_cancellation_acts_at_kevent_with_room_and_close_only(void **state)
{
	static const int acts[] = { 0, 0, 1, 1 };

	(void)state;
	for (int kind = 0; kind < 4; kind++) {
		struct pending_op po = { .kind = kind };
		pthread_t t;
		void *res;

		po.kq = kqueue();
		assert_true(po.kq >= 0);
		po.fd = dup(0);
		assert_int_equal(pipe(po.go), 0);
		assert_int_equal(pthread_create(&t, NULL, run_with_cancel_pending,
		    &po), 0);
		assert_int_equal(pthread_cancel(t), 0);
		assert_int_equal(write(po.go[1], "g", 1), 1);
		assert_int_equal(pthread_join(t, &res), 0);
		if ((res == PTHREAD_CANCELED) != acts[kind] ||
		    atomic_load(&po.returned) == acts[kind])
			fprintf(stderr, "kind %d: %s\n", kind,
			    res == PTHREAD_CANCELED ? "cancelled" : "returned");
		assert_int_equal(res == PTHREAD_CANCELED, acts[kind]);
		assert_int_equal(atomic_load(&po.returned), !acts[kind]);
		close(po.fd);	/* (close() acted before closing it) */
		close(po.kq);
		close(po.go[0]);
		close(po.go[1]);
	}
}

/*
 * The process's only thread, asleep in kevent() with no timeout, is
 * cancelled by its own signal handler (pthread_cancel of itself): the wait
 * acts on it, as libthr's does after the handler returns: the thread's
 * cleanup runs and kevent() never returns.  The kqueue is not left
 * locked: a kevent() from the cleanup handler works.
 */
static int sc_pipe[2], sc_kq;
static volatile sig_atomic_t sc_returned;	/* kevent() came back */

static void
sc_handler(int sig)
{
	(void)sig;
	(void)pthread_cancel(pthread_self());
}

static void
sc_cleanup(void *arg)
{
	struct kevent ev;
	char c = sc_returned ? 'R' :
	    kevent(sc_kq, NULL, 0, &ev, 1, &t_zero) == 0 ? 'C' : 'L';

	(void)arg;
	(void)write(sc_pipe[1], &c, 1);
	T_EXIT(0);
}

static void
the_only_thread_waiting_is_cancelled_by_its_own_signal_handler(void **state)
{
	pid_t pid;
	int st;
	char c = 0;

	(void)state;
	assert_int_equal(pipe(sc_pipe), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa;
		struct itimerval it = { { 0, 0 }, { 0, 50000 } };
		struct kevent ev;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = sc_handler;
		sigemptyset(&sa.sa_mask);
		if ((sc_kq = kqueue()) < 0 ||
		    sigaction(SIGALRM, &sa, NULL) != 0)
			T_EXIT(3);
		alarm(10);	/* never answered: SIGALRM again, later */
		(void)setitimer(ITIMER_REAL, &it, NULL);
		pthread_cleanup_push(sc_cleanup, NULL);
		(void)kevent(sc_kq, NULL, 0, &ev, 1, NULL);
		/* Returned instead: the write below is a cancellation point
		   too, and the cleanup handler says so. */
		sc_returned = 1;
		pthread_cleanup_pop(0);
		c = 'R';
		(void)write(sc_pipe[1], &c, 1);
		T_EXIT(2);
	}
	close(sc_pipe[1]);
	assert_int_equal(read(sc_pipe[0], &c, 1), 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	close(sc_pipe[0]);
	assert_int_equal(c, 'C');
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/*
 * Shared by thread_with_cancellation_disabled_after_*: a waiter that turns
 * cancellation off as soon as its wait returns and then works (a
 * nanosleep, itself a cancellation point, stands for the reads and writes
 * of handling the events), while another thread cancels waiters at random
 * moments.  POSIX: a thread with cancellation disabled is not cancelled;
 * the cleanup handler counts the cancellations that acted in that region.
 * use_port: the wait is port_get() on an event port fed by port_send().
 */
static int cd_q, cd_use_port;
static atomic_int cd_stop, cd_in_disabled;
static _Thread_local int cd_disabled;

static void
cd_cleanup(void *arg)
{
	if (cd_disabled)
		atomic_fetch_add(&cd_in_disabled, 1);
	t_cancel_cleanup(arg);
}

static void *
cd_waiter(void *arg)
{
	struct timespec work = { 0, 200000 };
	struct kevent ev[8];
	port_event_t pe;
	int old;

	(void)arg;
	pthread_cleanup_push(cd_cleanup, NULL);
	for (;;) {
		if (cd_use_port)
			(void)port_get(cd_q, &pe, NULL);
		else
			(void)kevent(cd_q, NULL, 0, ev, 8, NULL);
		(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		cd_disabled = 1;
		(void)nanosleep(&work, NULL);
		cd_disabled = 0;
		(void)pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static void *
cd_ticker(void *arg)
{
	struct kevent ch;

	(void)arg;
	EV_SET(&ch, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	while (!atomic_load(&cd_stop)) {	/* an event every ~100 us */
		if (cd_use_port)
			(void)port_send(cd_q, 1, NULL);
		else
			(void)kevent(cd_q, &ch, 1, NULL, 0, NULL);
		usleep(100);
	}
	return NULL;
}

static void
cancel_waiters_at_random(int use_port)
{
	struct kevent ch;
	pthread_t w[2], tick;
	unsigned seed = 7;
	int i, k;

	cd_use_port = use_port;
	atomic_store(&cd_stop, 0);
	atomic_store(&cd_in_disabled, 0);
	cd_q = use_port ? port_create() : kqueue();
	assert_true(cd_q >= 0);
	if (!use_port) {
		EV_SET(&ch, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
		assert_int_equal(kevent(cd_q, &ch, 1, NULL, 0, NULL), 0);
	}
	assert_int_equal(pthread_create(&tick, NULL, cd_ticker, NULL), 0);
	for (k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&w[k], NULL, cd_waiter, NULL),
		    0);
	for (i = 0; i < 2000; i++) {
		seed = seed * 1103515245u + 12345u;
		k = (int)((seed >> 16) % 2);
		usleep((seed >> 4) % 400);
		assert_int_equal(pthread_cancel(w[k]), 0);
		assert_int_equal(pthread_join(w[k], NULL), 0);
		assert_int_equal(pthread_create(&w[k], NULL, cd_waiter, NULL),
		    0);
	}
	for (k = 0; k < 2; k++) {
		assert_int_equal(pthread_cancel(w[k]), 0);
		assert_int_equal(pthread_join(w[k], NULL), 0);
	}
	atomic_store(&cd_stop, 1);
	assert_int_equal(pthread_join(tick, NULL), 0);
	if (atomic_load(&cd_in_disabled) > 0)
		fprintf(stderr, "%d of 2002 cancellations acted with "
		    "cancellation disabled\n", atomic_load(&cd_in_disabled));
	assert_int_equal(atomic_load(&cd_in_disabled), 0);
	close(cd_q);
}

/*
 * A cancellation that arrives as kevent()'s wait returns acts at the
 * caller's next cancellation point only while cancellation is enabled:
 * never inside a region the caller disabled once kevent() returned.
 */
static void
thread_with_cancellation_disabled_after_kevent_returned_is_never_cancelled(
    void **state)
{
	(void)state;
	cancel_waiters_at_random(0);
}

/* The same for port_get(). */
static void
thread_with_cancellation_disabled_after_port_get_returned_is_never_cancelled(
    void **state)
{
	(void)state;
	cancel_waiters_at_random(1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thread_cancelled_while_waiting_leaves_no_descriptor_after_close),
		cmocka_unit_test(thread_cancelled_at_any_moment_of_kevent_leaves_the_kqueue_usable),
		cmocka_unit_test(waiter_cancelled_as_an_event_arrives_never_takes_the_event_with_it),
		cmocka_unit_test(blocked_kevent_with_any_timeout_acts_on_cancellation_at_once),
		cmocka_unit_test(pending_cancellation_acts_at_kevent_with_room_and_close_only),
		cmocka_unit_test(the_only_thread_waiting_is_cancelled_by_its_own_signal_handler),
		cmocka_unit_test(thread_with_cancellation_disabled_after_kevent_returned_is_never_cancelled),
		cmocka_unit_test(thread_with_cancellation_disabled_after_port_get_returned_is_never_cancelled),
	};

	return t_run_group(tests, NULL, NULL);
}
