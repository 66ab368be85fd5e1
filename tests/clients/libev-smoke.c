/*
 * libev-smoke.c -- a smoke test of libev 4.33 on the backend LIBEV_FLAGS
 * selects (32: event ports, 8: kqueue, 4: epoll), run by
 * tests/clients/libev.sh against a libev built on kq.
 *
 * Checks, each printed as "ok NAME" or "FAIL NAME (why)":
 *   backend	the default loop runs on the backend asked for
 *   io		200 rounds of write / readable callback / read on a pipe
 *		(an event port re-associates the descriptor every round)
 *   io-two	two watchers (read and write) on a socketpair end
 *   eof		a read watcher on a pipe whose writer closes fires, and
 *		read() returns 0 (end of file)
 *   timer	a 20 ms one-shot timer fires once, not before 20 ms
 *   periodic	a 5 ms repeating timer fires 5 times
 *   signal	an ev_signal sees a raised SIGUSR1
 *   async	ev_async_send from another thread wakes the loop
 *   child	an ev_child sees a child's exit status 7
 *   fork	after fork() and ev_loop_fork() the child's loop still
 *		delivers io and timer events, and the parent's too
 * Then a ring benchmark (not a check): RING_PIPES pipes in a ring, one
 * read watcher each, one token passed from pipe to pipe RING_HOPS times;
 * printed as "ring: N pipes, H hops, X us/hop" (libev.sh puts the backends
 * side by side).
 * Exits 0 when every check passed.
 */
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <ev.h>

static int failures;

static void
result(const char *name, int ok, const char *why)
{
	if (ok)
		printf("ok %s\n", name);
	else {
		printf("FAIL %s (%s)\n", name, why);
		failures++;
	}
	fflush(stdout);
}

/* ---- io ---- */

static int io_rounds, io_fd[2];

static void
io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	char c;

	if (!(revents & EV_READ) || read(w->fd, &c, 1) != 1) {
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	if (++io_rounds == 200) {
		ev_io_stop(loop, w);
		return;
	}
	if (write(io_fd[1], "x", 1) != 1)
		ev_break(loop, EVBREAK_ALL);
}

static void
guard_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

/* Run the loop with a 5 s guard timer. */
static void
run_guarded(struct ev_loop *loop)
{
	ev_timer guard;

	ev_timer_init(&guard, guard_cb, 5., 0.);
	ev_timer_start(loop, &guard);
	ev_unref(loop);		/* the guard alone does not keep it running */
	ev_run(loop, 0);
	ev_ref(loop);
	ev_timer_stop(loop, &guard);
}

static void
check_io(struct ev_loop *loop, const char *name)
{
	ev_io w;

	io_rounds = 0;
	if (pipe(io_fd) != 0) {
		result(name, 0, strerror(errno));
		return;
	}
	ev_io_init(&w, io_cb, io_fd[0], EV_READ);
	ev_io_start(loop, &w);
	if (write(io_fd[1], "x", 1) != 1)
		result(name, 0, "write");
	run_guarded(loop);
	ev_io_stop(loop, &w);
	close(io_fd[0]);
	close(io_fd[1]);
	result(name, io_rounds == 200, "fewer than 200 rounds");
}

/* ---- read and write watchers on one descriptor ---- */

static int two_r, two_w;

static void
two_rcb(struct ev_loop *loop, ev_io *w, int revents)
{
	char buf[16];

	(void)revents;
	if (read(w->fd, buf, sizeof(buf)) > 0)
		two_r++;
	ev_io_stop(loop, w);
}

static void
two_wcb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)revents;
	two_w++;
	ev_io_stop(loop, w);
}

static void
check_io_two(struct ev_loop *loop)
{
	ev_io r, w;
	int s[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0) {
		result("io-two", 0, strerror(errno));
		return;
	}
	if (write(s[1], "hi", 2) != 2)
		result("io-two", 0, "write");
	two_r = two_w = 0;
	ev_io_init(&r, two_rcb, s[0], EV_READ);
	ev_io_init(&w, two_wcb, s[0], EV_WRITE);
	ev_io_start(loop, &r);
	ev_io_start(loop, &w);
	run_guarded(loop);
	ev_io_stop(loop, &r);
	ev_io_stop(loop, &w);
	close(s[0]);
	close(s[1]);
	result("io-two", two_r == 1 && two_w == 1, "read or write callback missing");
}

/* ---- timers ---- */

static int t_fired, p_fired;

static void
t_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	t_fired++;
}

static void
p_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	if (++p_fired == 5)
		ev_timer_stop(loop, w);
}

static void
check_timers(struct ev_loop *loop)
{
	ev_timer t, p;
	ev_tstamp t0;

	t_fired = p_fired = 0;
	ev_now_update(loop);
	t0 = ev_time();
	ev_timer_init(&t, t_cb, 0.02, 0.);
	ev_timer_start(loop, &t);
	run_guarded(loop);
	result("timer", t_fired == 1 && ev_time() - t0 >= 0.019,
	    "did not fire once after 20 ms");
	ev_timer_init(&p, p_cb, 0.005, 0.005);
	ev_timer_start(loop, &p);
	run_guarded(loop);
	ev_timer_stop(loop, &p);
	result("periodic", p_fired == 5, "did not fire 5 times");
}

/* ---- signal ---- */

static int sig_seen;

static void
sig_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	sig_seen++;
	ev_signal_stop(loop, w);
}

static void
raise_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	raise(SIGUSR1);
}

static void
check_signal(struct ev_loop *loop)
{
	ev_signal s;
	ev_timer t;

	sig_seen = 0;
	ev_signal_init(&s, sig_cb, SIGUSR1);
	ev_signal_start(loop, &s);
	ev_timer_init(&t, raise_cb, 0.01, 0.);
	ev_timer_start(loop, &t);
	run_guarded(loop);
	ev_signal_stop(loop, &s);
	result("signal", sig_seen == 1, "SIGUSR1 not seen");
}

/* ---- async ---- */

static ev_async as;
static int as_seen;
static struct ev_loop *as_loop;

static void
as_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)revents;
	as_seen++;
	ev_async_stop(loop, w);
}

static void *
as_thread(void *arg)
{
	(void)arg;
	usleep(20000);
	ev_async_send(as_loop, &as);
	return NULL;
}

static void
check_async(struct ev_loop *loop)
{
	pthread_t t;

	as_seen = 0;
	as_loop = loop;
	ev_async_init(&as, as_cb);
	ev_async_start(loop, &as);
	pthread_create(&t, NULL, as_thread, NULL);
	run_guarded(loop);
	pthread_join(t, NULL);
	result("async", as_seen == 1, "not woken");
}

/* ---- child ---- */

static int child_status = -1;

static void
child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	(void)revents;
	child_status = w->rstatus;
	ev_child_stop(loop, w);
}

static void
check_child(struct ev_loop *loop)
{
	ev_child c;
	pid_t pid = fork();

	if (pid == 0) {
		usleep(10000);
		_exit(7);
	}
	ev_child_init(&c, child_cb, pid, 0);
	ev_child_start(loop, &c);
	run_guarded(loop);
	ev_child_stop(loop, &c);
	result("child", WIFEXITED(child_status) &&
	    WEXITSTATUS(child_status) == 7, "exit status 7 not seen");
}

/* ---- end of file ---- */

static int eof_seen;

static void
eof_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	char c;

	(void)revents;
	eof_seen = read(w->fd, &c, 1) == 0;
	ev_io_stop(loop, w);
}

static void
check_eof(struct ev_loop *loop)
{
	int p[2];
	ev_io w;

	eof_seen = 0;
	if (pipe(p) != 0) {
		result("eof", 0, strerror(errno));
		return;
	}
	ev_io_init(&w, eof_cb, p[0], EV_READ);
	ev_io_start(loop, &w);
	close(p[1]);
	run_guarded(loop);
	ev_io_stop(loop, &w);
	close(p[0]);
	result("eof", eof_seen, "no readable end of file");
}

/* ---- ring benchmark ---- */

#define RING_PIPES	100
#define RING_HOPS	20000

static int ring_fd[RING_PIPES][2], ring_hops;

static void
ring_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	int i = (int)(intptr_t)w->data;
	char c;

	(void)revents;
	if (read(w->fd, &c, 1) != 1)
		return;
	if (++ring_hops == RING_HOPS) {
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	if (write(ring_fd[(i + 1) % RING_PIPES][1], &c, 1) != 1)
		ev_break(loop, EVBREAK_ALL);
}

static void
ring_bench(struct ev_loop *loop)
{
	static ev_io w[RING_PIPES];
	struct timespec t0, t1;
	int i, n = 0;
	double us;

	for (i = 0; i < RING_PIPES; i++, n++) {
		if (pipe(ring_fd[i]) != 0)
			break;
		ev_io_init(&w[i], ring_cb, ring_fd[i][0], EV_READ);
		w[i].data = (void *)(intptr_t)i;
		ev_io_start(loop, &w[i]);
	}
	ring_hops = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (n == RING_PIPES && write(ring_fd[0][1], "t", 1) == 1)
		run_guarded(loop);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = ((double)(t1.tv_sec - t0.tv_sec) * 1e6 +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) /
	    (ring_hops ? ring_hops : 1);
	printf("ring: %d pipes, %d hops, %.2f us/hop\n", n, ring_hops, us);
	for (i = 0; i < n; i++) {
		ev_io_stop(loop, &w[i]);
		close(ring_fd[i][0]);
		close(ring_fd[i][1]);
	}
}

/* ---- fork ---- */

static void
check_fork(struct ev_loop *loop)
{
	pid_t pid;
	int st;

	pid = fork();
	if (pid < 0) {
		result("fork", 0, strerror(errno));
		return;
	}
	if (pid == 0) {
		ev_loop_fork(loop);
		failures = 0;
		check_io(loop, "fork-child-io");
		check_timers(loop);
		_exit(failures == 0 ? 0 : 1);
	}
	check_io(loop, "fork-parent-io");
	if (waitpid(pid, &st, 0) != pid) {
		result("fork", 0, "waitpid");
		return;
	}
	result("fork", WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "the child's loop failed");
}

static const char *
backend_name(unsigned b)
{
	switch (b) {
	case EVBACKEND_SELECT:	return "select";
	case EVBACKEND_POLL:	return "poll";
	case EVBACKEND_EPOLL:	return "epoll";
	case EVBACKEND_KQUEUE:	return "kqueue";
	case EVBACKEND_PORT:	return "port";
	default:		return "other";
	}
}

int
main(int argc, char **argv)
{
	struct ev_loop *loop;
	unsigned want;
	char why[64];

	if (argc != 2) {
		fprintf(stderr, "usage: libev-smoke port|kqueue|epoll\n");
		return 2;
	}
	want = strcmp(argv[1], "port") == 0 ? EVBACKEND_PORT :
	    strcmp(argv[1], "kqueue") == 0 ? EVBACKEND_KQUEUE : EVBACKEND_EPOLL;
	/* LIBEV_FLAGS in the environment selects the backend. */
	loop = ev_default_loop(EVFLAG_AUTO);
	if (loop == NULL) {
		result("backend", 0, "no loop");
		return 1;
	}
	snprintf(why, sizeof(why), "runs on %s", backend_name(ev_backend(loop)));
	result("backend", ev_backend(loop) == want, why);
	check_io(loop, "io");
	check_io_two(loop);
	check_eof(loop);
	check_timers(loop);
	check_signal(loop);
	check_async(loop);
	check_child(loop);
	check_fork(loop);
	ring_bench(loop);
	printf("%s: %d failed\n", backend_name(ev_backend(loop)), failures);
	return failures == 0 ? 0 : 1;
}
