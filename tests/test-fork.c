/*
 * test-fork.c -- fork() and vfork() beside kqueues, from the program's
 * side: a fork never waits on a lock the program's own fork handlers
 * hold, a fork child inherits none of the descriptors kq makes for
 * itself (only what the program opened), and a vfork() child's close()
 * leaves its parent's kqueues alone, as on FreeBSD, where a kqueue is not
 * in the child's descriptor table.
 *
 * main() registers the program's fork handlers before its first kqueue(),
 * the order in which a library with such handlers meets kq.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "helpers.h"

/* ---- the program's fork handlers, armed by each test that needs them */

static pthread_mutex_t prog_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int lock_armed;		/* prepare/parent/child take it */
static _Atomic int parent_adds;		/* the parent handler adds knotes */
static int parent_kq = -1;
static _Atomic int parent_added;	/* knotes it added, all told */

static void
prog_prepare(void)
{
	if (atomic_load(&lock_armed))
		pthread_mutex_lock(&prog_lock);
}

static void
prog_parent(void)
{
	if (atomic_load(&lock_armed))
		pthread_mutex_unlock(&prog_lock);
	if (atomic_load(&parent_adds)) {
		/* A fresh kqueue's first timer, and a process knote. */
		struct kevent kev[2];
		int kq = kqueue();

		if (kq < 0)
			return;
		EV_SET(&kev[0], 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 60000,
		    NULL);
		EV_SET(&kev[1], (uintptr_t)getpid(), EVFILT_PROC, EV_ADD,
		    NOTE_EXIT, 0, NULL);
		if (kevent(kq, kev, 2, NULL, 0, NULL) == 0)
			atomic_fetch_add(&parent_added, 2);
		close(kq);
		EV_SET(&kev[0], 7, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 60000,
		    NULL);
		if (kevent(parent_kq, kev, 1, NULL, 0, NULL) == 0)
			atomic_fetch_add(&parent_added, 1);
	}
}

static void
prog_child(void)
{
	if (atomic_load(&lock_armed))
		pthread_mutex_unlock(&prog_lock);
}

/* ---- helpers */

static volatile sig_atomic_t watchdog_fired;

static void
on_watchdog(int s)
{
	(void)s;
	watchdog_fired = 1;
	_exit(97);	/* a hang: the test process dies, the test fails */
}

/* Fork and reap a child that exits at once; fail if that takes 20 s. */
static void
fork_and_reap(void)
{
	pid_t p;
	int st;

	signal(SIGALRM, on_watchdog);
	alarm(20);
	p = fork();
	assert_true(p >= 0);
	if (p == 0)
		T_EXIT(0);
	assert_int_equal(waitpid(p, &st, 0), p);
	alarm(0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Fork n times; each child exits with the count of links under prefix. */
static int
forks_with_links(int n, const char *prefix)
{
	int bad = 0, st, i;

	for (i = 0; i < n; i++) {
		pid_t p = fork();

		assert_true(p >= 0);
		if (p == 0)
			T_EXIT(t_count_links(prefix) != 0);
		assert_int_equal(waitpid(p, &st, 0), p);
		assert_true(WIFEXITED(st));
		bad += WEXITSTATUS(st) != 0;
	}
	return bad;
}

/* ---- a fork and the program's own fork handlers */

static _Atomic int stop;

/* Holds the program's lock while it adds and deletes process knotes and
   makes kqueues with a first timer: each a descriptor kq makes. */
static void *
locked_registrar(void *arg)
{
	pid_t self = getpid();

	(void)arg;
	while (!atomic_load(&stop)) {
		struct kevent kev[2];
		int kq;

		pthread_mutex_lock(&prog_lock);
		kq = kqueue();
		if (kq >= 0) {
			EV_SET(&kev[0], (uintptr_t)self, EVFILT_PROC, EV_ADD,
			    NOTE_EXIT, 0, NULL);
			EV_SET(&kev[1], 1, EVFILT_TIMER, EV_ADD, 0, 1000, NULL);
			(void)kevent(kq, kev, 2, NULL, 0, NULL);
			EV_SET(&kev[0], (uintptr_t)self, EVFILT_PROC,
			    EV_DELETE, 0, 0, NULL);
			(void)kevent(kq, kev, 1, NULL, 0, NULL);
			close(kq);
		}
		pthread_mutex_unlock(&prog_lock);
	}
	return NULL;
}

static void
fork_never_waits_for_a_thread_holding_the_programs_fork_handler_lock(
    void **state)
{
	pthread_t t;
	int i;

	(void)state;
	atomic_store(&lock_armed, 1);
	atomic_store(&stop, 0);
	assert_int_equal(pthread_create(&t, NULL, locked_registrar, NULL), 0);
	for (i = 0; i < 200; i++)
		fork_and_reap();
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	atomic_store(&lock_armed, 0);
}

static void
parent_fork_handler_may_add_timer_and_proc_knotes(void **state)
{
	int i;

	(void)state;
	parent_kq = kqueue();
	assert_true(parent_kq >= 0);
	atomic_store(&parent_added, 0);
	atomic_store(&parent_adds, 1);
	for (i = 0; i < 20; i++)
		fork_and_reap();
	atomic_store(&parent_adds, 0);
	assert_int_equal(atomic_load(&parent_added), 3 * 20);
	close(parent_kq);
}

/* ---- what a fork child inherits */

static void *
eventfd_reader(void *arg)
{
	int kq = *(int *)arg;

	while (!atomic_load(&stop)) {
		struct kevent ev;

		(void)kevent(kq, NULL, 0, &ev, 1, NULL);
	}
	return NULL;
}

/* A kqueue with a level-triggered READ knote on an eventfd that is always
   ready (*efd), so every collection looks at it. */
static int
kq_with_ready_eventfd(int *efd)
{
	int kq = kqueue();
	struct kevent kev;

	*efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(kq >= 0 && *efd >= 0);
	EV_SET(&kev, (uintptr_t)*efd, EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	return kq;
}

static void
fork_child_of_a_thread_collecting_eventfd_events_inherits_no_kq_file(
    void **state)
{
	int efd, kq = kq_with_ready_eventfd(&efd);
	pthread_t t;

	(void)state;
	atomic_store(&stop, 0);
	assert_int_equal(pthread_create(&t, NULL, eventfd_reader, &kq), 0);
	/* The program opens nothing under /proc: any such file is kq's. */
	assert_int_equal(forks_with_links(300, "/proc/"), 0);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	close(efd);
	close(kq);
}

static void *
timer_churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		struct kevent kev;
		int kq = kqueue();

		if (kq < 0)
			continue;
		EV_SET(&kev, 1, EVFILT_TIMER, EV_ADD, 0, 1000, NULL);
		(void)kevent(kq, &kev, 1, NULL, 0, NULL);
		close(kq);
	}
	return NULL;
}

static void
fork_child_of_threads_making_kqueues_with_timers_inherits_no_timer(
    void **state)
{
	pthread_t t;

	(void)state;
	atomic_store(&stop, 0);
	assert_int_equal(pthread_create(&t, NULL, timer_churn, NULL), 0);
	/* The program makes no timerfd: any in a child is kq's. */
	assert_int_equal(forks_with_links(300, "anon_inode:[timerfd]"), 0);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
}

static void *
empty_churn(void *arg)
{
	int sv[2];

	(void)arg;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return NULL;
	while (!atomic_load(&stop)) {
		struct kevent kev;
		int kq = kqueue();

		if (kq < 0)
			continue;
		EV_SET(&kev, (uintptr_t)sv[0], EVFILT_EMPTY, EV_ADD | EV_CLEAR,
		    0, 0, NULL);
		(void)kevent(kq, &kev, 1, NULL, 0, NULL);
		close(kq);
	}
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

/*
 * A fork() while another thread of the parent counts the datagrams queued
 * on a UDP socket for its kqueue (FreeBSD's data is every queued byte,
 * which Linux can only count by walking the queue): the child watches the
 * same inherited socket with a kqueue of its own, and its kevent()
 * returns at once with the socket readable, as on FreeBSD.  (The walk's
 * lock, held by a thread that is not in the child, made the child wait
 * for ever: attack helper 24's F3.)
 */
static int dg_kq;

static void *
dgram_poller(void *arg)
{
	struct kevent ev[4];
	struct timespec zero = { 0, 0 };

	(void)arg;
	while (!atomic_load(&stop))
		(void)kevent(dg_kq, NULL, 0, ev, 4, &zero);
	return NULL;
}

static int
dgram_child(int u)
{
	struct kevent kev;
	struct timespec sec = { 1, 0 };
	int kq = kqueue();

	alarm(5);	/* a child that waits for ever fails, not hangs */
	if (kq < 0)
		return 2;
	EV_SET(&kev, (uintptr_t)u, EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kq, &kev, 1, &kev, 1, &sec) != 1 || kev.data <= 0)
		return 3;
	return 0;
}

static void
fork_child_of_a_thread_counting_datagrams_watches_the_socket_itself(
    void **state)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	struct kevent kev;
	char msg[512];
	pthread_t t;
	int s, u, i, st;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s = t_track(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	u = t_track(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	assert_int_equal(bind(u, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(u, (struct sockaddr *)&a, &len), 0);
	memset(msg, 'x', sizeof(msg));
	for (i = 0; i < 200; i++)
		assert_int_equal(sendto(s, msg, sizeof(msg), 0,
		    (struct sockaddr *)&a, sizeof(a)), (ssize_t)sizeof(msg));
	dg_kq = t_track(kqueue());
	EV_SET(&kev, (uintptr_t)u, EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(dg_kq, &kev, 1, NULL, 0, NULL), 0);
	atomic_store(&stop, 0);
	assert_int_equal(pthread_create(&t, NULL, dgram_poller, NULL), 0);
	for (i = 0; i < 50; i++) {
		pid_t p = fork();

		assert_true(p >= 0);
		if (p == 0)
			T_EXIT(dgram_child(u));
		assert_int_equal(waitpid(p, &st, 0), p);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fprintf(stderr, "fork %d: child status %#x\n", i, st);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
}

/* An EVFILT_EMPTY knote's first makes an epoll set of kq's own. */
static void
fork_child_of_threads_adding_empty_knotes_inherits_no_epoll_set(
    void **state)
{
	pthread_t t;

	(void)state;
	atomic_store(&stop, 0);
	assert_int_equal(pthread_create(&t, NULL, empty_churn, NULL), 0);
	/* The program makes no epoll set: any in a child is kq's. */
	assert_int_equal(forks_with_links(300, "anon_inode:[eventpoll]"), 0);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
}

/* ---- vfork(): the child's close() is its own */

static int
pending(int kq)
{
	struct kevent ev[8];
	struct timespec zero = { 0, 0 };

	return kevent(kq, NULL, 0, ev, 8, &zero);
}

/* A kqueue with a READ knote on the read end of pipe p, which is ready. */
static int
kq_with_ready_pipe(int p[2])
{
	int kq = kqueue();
	struct kevent kev;

	assert_true(kq >= 0);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	EV_SET(&kev, (uintptr_t)p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	assert_int_equal(pending(kq), 1);
	return kq;
}

/* A vfork() child that closes fd (closefrom(fd) if all) and exits. */
static void
vfork_child_closes(int fd, int all)
{
	int st;
	pid_t c = vfork();

	assert_true(c >= 0);
	if (c == 0) {
		if (all)
			closefrom(fd);
		else
			close(fd);
		_exit(0);
	}
	assert_int_equal(waitpid(c, &st, 0), c);
}

static void
vfork_child_closing_a_watched_descriptor_keeps_the_parents_knote(
    void **state)
{
	int p[2], kq = kq_with_ready_pipe(p);

	(void)state;
	vfork_child_closes(p[0], 0);
	assert_int_equal(pending(kq), 1);
	close(p[0]);
	close(p[1]);
	close(kq);
}

static void
vfork_child_closing_the_kqueue_keeps_the_parents_kqueue(void **state)
{
	int p[2], kq = kq_with_ready_pipe(p);
	struct kevent kev;

	(void)state;
	vfork_child_closes(kq, 0);
	assert_int_equal(pending(kq), 1);
	/* Still a working kqueue: a new registration is reported too. */
	EV_SET(&kev, (uintptr_t)p[1], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	assert_int_equal(pending(kq), 2);
	close(p[0]);
	close(p[1]);
	close(kq);
}

static void
vfork_child_closing_every_descriptor_keeps_the_parents_kqueues(
    void **state)
{
	int p[2], kq = kq_with_ready_pipe(p);

	(void)state;
	vfork_child_closes(3, 1);
	assert_int_equal(pending(kq), 1);
	close(p[0]);
	close(p[1]);
	close(kq);
}

static void
vfork_child_setting_a_disposition_leaves_the_parents_signal_knote(
    void **state)
{
	struct kevent kev;
	struct timespec zero = { 0, 0 };
	int kq = kqueue(), st;
	pid_t c;

	(void)state;
	assert_true(kq >= 0);
	signal(SIGUSR1, SIG_IGN);
	EV_SET(&kev, SIGUSR1, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	c = vfork();
	assert_true(c >= 0);
	if (c == 0) {
		signal(SIGUSR1, SIG_DFL);	/* as before an exec */
		_exit(0);
	}
	assert_int_equal(waitpid(c, &st, 0), c);
	/* Still ignored here, and still counted. */
	assert_int_equal(raise(SIGUSR1), 0);
	assert_int_equal(kevent(kq, NULL, 0, &kev, 1, &zero), 1);
	assert_int_equal(kev.ident, SIGUSR1);
	close(kq);
	signal(SIGUSR1, SIG_DFL);
}

static void *
collect_for_ever(void *arg)
{
	int kq = *(int *)arg;
	struct kevent ev;
	struct timespec zero = { 0, 0 };

	pthread_cleanup_push(t_cancel_cleanup, NULL);
	for (;;)
		(void)kevent(kq, NULL, 0, &ev, 1, &zero);
	pthread_cleanup_pop(0);
	return NULL;
}

static void
thread_cancelled_in_kevent_leaves_the_kqueue_usable(void **state)
{
	int efd, kq = kq_with_ready_eventfd(&efd);
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, collect_for_ever, &kq), 0);
	usleep(50000);
	/* kevent() with room for events is a cancellation point. */
	assert_int_equal(pthread_cancel(t), 0);
	signal(SIGALRM, on_watchdog);
	alarm(20);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(pending(kq), 1);
	fork_and_reap();
	alarm(0);
	close(efd);
	close(kq);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fork_never_waits_for_a_thread_holding_the_programs_fork_handler_lock),
		cmocka_unit_test(parent_fork_handler_may_add_timer_and_proc_knotes),
		cmocka_unit_test(fork_child_of_a_thread_collecting_eventfd_events_inherits_no_kq_file),
		cmocka_unit_test(fork_child_of_threads_making_kqueues_with_timers_inherits_no_timer),
		cmocka_unit_test(fork_child_of_threads_adding_empty_knotes_inherits_no_epoll_set),
		cmocka_unit_test(fork_child_of_a_thread_counting_datagrams_watches_the_socket_itself),
		cmocka_unit_test(vfork_child_closing_a_watched_descriptor_keeps_the_parents_knote),
		cmocka_unit_test(vfork_child_closing_the_kqueue_keeps_the_parents_kqueue),
		cmocka_unit_test(vfork_child_closing_every_descriptor_keeps_the_parents_kqueues),
		cmocka_unit_test(vfork_child_setting_a_disposition_leaves_the_parents_signal_knote),
		cmocka_unit_test(thread_cancelled_in_kevent_leaves_the_kqueue_usable),
	};

	/* Before the first kqueue(), as a library's handlers would be. */
	pthread_atfork(prog_prepare, prog_parent, prog_child);
	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, NULL, NULL);
}
