/*
 * Shared helpers for the kq test suite.  Tests include only <sys/event.h>
 * and standard POSIX headers, so the suite also builds on FreeBSD against
 * the native kqueue.
 */
#ifndef KQ_TESTS_HELPERS_H
#define KQ_TESTS_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/event.h>
#include <cmocka.h>
#include "inherited.h"

/*
 * A test's forked child ends with T_EXIT(), never a bare _exit(): in the
 * coverage build (SAN=cov, -DKQ_COVERAGE) it writes the child's gcov
 * counters first, or nothing the child ran (the fork handlers, whatever
 * the child did with kq) would be counted.
 */
#ifdef KQ_COVERAGE
void	__gcov_dump(void);
#define T_EXIT(c)	do { int t_c_ = (c); __gcov_dump(); _exit(t_c_); } while (0)
#else
#define T_EXIT(c)	_exit(c)
#endif

/* T_TSAN: 1 in a ThreadSanitizer build (gcc or clang), else 0. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define T_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(T_TSAN)
#define T_TSAN 1
#endif
#ifndef T_TSAN
#define T_TSAN 0
#endif
/* T_SAN: 1 under any sanitizer (its allocator keeps freed memory). */
#if T_TSAN || defined(__SANITIZE_ADDRESS__)
#define T_SAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T_SAN 1
#endif
#endif
#ifndef T_SAN
#define T_SAN 0
#endif

/* CPU time of the calling thread, in nanoseconds (a wait that spins). */
static inline int64_t
t_thread_cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/*
 * Descriptor bookkeeping: a test tracks what it opens, and the group's
 * teardown closes it with t_close_tracked(), also when an assertion fails
 * half way.
 */
#define T_MAXFDS 128
static int t_fds[T_MAXFDS];
static int t_nfds;

/* Assert fd is open and remember it; returns fd. */
static inline int
t_track(int fd)
{
	if (fd < 0)
		fprintf(stderr, "open failed: %s\n", strerror(errno));
	assert_true(fd >= 0);
	assert_true(t_nfds < T_MAXFDS);
	t_fds[t_nfds++] = fd;
	return fd;
}

/* Close a tracked descriptor now (the test needs it closed). */
static inline void
t_close_now(int fd)
{
	int i;

	for (i = 0; i < t_nfds; i++) {
		if (t_fds[i] == fd) {
			t_fds[i] = t_fds[--t_nfds];
			break;
		}
	}
	assert_int_equal(close(fd), 0);
}

/* Close every tracked descriptor (teardown). */
static inline void
t_close_tracked(void)
{
	while (t_nfds > 0)
		close(t_fds[--t_nfds]);
}

/* A new, tracked kqueue. */
static inline int
t_new_kq(void)
{
	return t_track(kqueue());
}

/* A zero timeout: poll without sleeping. */
static const struct timespec t_zero = { 0, 0 };

/* Register one change; assert it succeeded. */
static inline void
t_change(int kq, uintptr_t ident, short filter, unsigned short flags,
    unsigned int fflags, int64_t data, void *udata)
{
	struct kevent kev;

	EV_SET(&kev, ident, filter, flags, fflags, data, udata);
	if (kevent(kq, &kev, 1, NULL, 0, NULL) != 0) {
		fprintf(stderr, "kevent change ident=%ju filter=%d flags=%#x: %s\n",
		    (uintmax_t)ident, filter, flags, strerror(errno));
		fail();
	}
}

/* Collect pending events without waiting; returns the count. */
static inline int
t_poll(int kq, struct kevent *ev, int n)
{
	int r = kevent(kq, NULL, 0, ev, n, &t_zero);

	if (r < 0) {
		fprintf(stderr, "kevent poll: %s\n", strerror(errno));
		fail();
	}
	return r;
}

/* Assert that nothing is pending. */
static inline void
t_expect_none(int kq)
{
	struct kevent ev;
	int r = t_poll(kq, &ev, 1);

	if (r != 0)
		fprintf(stderr, "unexpected event ident=%ju filter=%d flags=%#x data=%jd\n",
		    (uintmax_t)ev.ident, ev.filter, ev.flags, (intmax_t)ev.data);
	assert_int_equal(r, 0);
}

/* Assert that exactly one event is pending and return it. */
static inline struct kevent
t_expect_one(int kq)
{
	struct kevent ev[2];
	int r = t_poll(kq, ev, 2);

	assert_int_equal(r, 1);
	return ev[0];
}

static inline void
t_on_alarm(int sig)
{
	(void)sig;
}

/*
 * Watchdog for calls that must not block: SIGALRM (no SA_RESTART) turns a
 * hang into EINTR and a failed assertion instead of a stuck binary.
 */
static inline void
t_watchdog_h(unsigned seconds, void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	alarm(seconds);
}

static inline void
t_watchdog(unsigned seconds)
{
	t_watchdog_h(seconds, t_on_alarm);
}

/* Make fd non-blocking. */
static inline void
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	assert_true(fl >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

/* Write all of buf, retrying short writes and EINTR. */
static inline void
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

/*
 * A child that waits for a byte on go[0] (a pipe this creates), then exits
 * with code (100 if go[1] is closed first).  Returns its pid.
 */
static inline pid_t
t_spawn_waiting(int go[2], int code)
{
	pid_t pid;
	char c;

	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			T_EXIT(100);
		T_EXIT(code);
	}
	close(go[0]);
	return pid;
}

/*
 * Run fn in a forked child, which ends with T_EXIT(fn()); returns the
 * child's exit code (a child killed by a signal fails the test).
 */
static inline int
t_child_code(int (*fn)(void))
{
	pid_t pid, r;
	int st = 0;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		T_EXIT(fn());
	while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	assert_int_equal(r, pid);
	if (!WIFEXITED(st))
		fprintf(stderr, "child killed by signal %d\n", WTERMSIG(st));
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

#if defined(__SANITIZE_ADDRESS__) && defined(__linux__)
#include <pthread.h>
#include <sanitizer/asan_interface.h>
/*
 * A cleanup handler for a thread a test cancels.  AddressSanitizer does not
 * unpoison the redzones of the frames a cancellation unwinds, and its own
 * thread teardown then writes into them (a false stack-buffer-overflow in
 * sigaltstack): the dying thread's stack is unpoisoned whole as it unwinds.
 */
static inline void
t_cancel_cleanup(void *arg)
{
	pthread_attr_t a;
	void *lo;
	size_t sz;

	(void)arg;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &lo, &sz) == 0)
		__asan_unpoison_memory_region(lo, sz);
	pthread_attr_destroy(&a);
}
#else
static inline void
t_cancel_cleanup(void *arg)
{
	(void)arg;
}
#endif

/* Number of open descriptors, or -1 when /proc/self/fd is absent. */
static inline int
t_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return n - 1;	/* the directory stream's own descriptor */
}

/*
 * How many open descriptors are links whose target starts with prefix in
 * /proc/self/fd (such as "anon_inode:[timerfd]"); 0 where there is no
 * /proc.  Only async-signal-safe enough for a fork child of a threaded
 * parent that then exits: it allocates (opendir).
 */
static inline int
t_count_links(const char *prefix)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], target[256];
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		ssize_t l;

		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d) ||
		    t_inherited(atoi(e->d_name)))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		l = readlink(path, target, sizeof(target) - 1);
		if (l <= 0)
			continue;
		target[l] = 0;
		if (strncmp(target, prefix, strlen(prefix)) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/*
 * Follow process pid on kq (EVFILT_PROC, EV_ADD, fflags with NOTE_TRACK
 * or the like), or skip the test where process events are refused
 * (EPERM: before Linux 6.6 without CAP_NET_ADMIN), killing and reaping
 * pid first.
 */
static inline void
t_follow_or_skip(int kq, pid_t pid, unsigned int fflags)
{
	struct kevent kev;

	EV_SET(&kev, (uintptr_t)pid, EVFILT_PROC, EV_ADD, fflags, 0, NULL);
	if (kevent(kq, &kev, 1, NULL, 0, NULL) != 0) {
		assert_int_equal(errno, EPERM);	/* no process events */
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, NULL, 0), pid);
		skip();
	}
}

/* The pending socket error of fd (read, and so cleared, with SO_ERROR). */
static inline int
t_so_error(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	return err;
}

/*
 * Run a group of tests as cmocka_run_group_tests() does, honouring two
 * variables of the environment that tools/run-tests.sh uses to run each test
 * in its own process:
 *   KQ_TEST_LIST=1       print the names of the tests, one a line, and exit 0;
 *   KQ_TEST_FILTER=NAME  run only the tests whose name matches NAME (a
 *                        cmocka_set_test_filter() pattern: * and ? are wild).
 */
#define t_run_group(tests, setup, teardown) \
	t_run_group_(#tests, tests, sizeof(tests) / sizeof((tests)[0]), \
	    setup, teardown)

static inline int
t_run_group_(const char *group, const struct CMUnitTest *tests, size_t n,
    CMFixtureFunction setup, CMFixtureFunction teardown)
{
	const char *list = getenv("KQ_TEST_LIST");
	const char *filter = getenv("KQ_TEST_FILTER");

	if (list != NULL && strcmp(list, "1") == 0) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	if (filter != NULL && *filter != '\0')
		cmocka_set_test_filter(filter);
	return _cmocka_run_group_tests(group, tests, n, setup, teardown);
}

#endif
