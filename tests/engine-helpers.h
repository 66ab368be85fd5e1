/*
 * engine-helpers.h -- helpers of the engine regression tests
 * (tests/test-engine-*.c), on top of helpers.h.  POSIX only, so these tests
 * also build on FreeBSD against the native kqueue.
 *
 * Scenarios that can hang (a deadlock, a lost wakeup, a busy loop inside
 * kevent()) or that change process-wide state (RLIMIT_NOFILE, many
 * descriptors, threads) run in a child process: e_run() forks, the child
 * runs the scenario and _exit()s with 0 on success, and the parent kills
 * it when it outlives its time limit.  Inside the child, checks use
 * E_CHECK() (never cmocka's assertions, whose longjmp would land in the
 * child's copy of the test runner); E_CHECK() prints where and why and
 * ends the child with status 1, from any thread.
 */
#ifndef KQ_TESTS_ENGINE_HELPERS_H
#define KQ_TESTS_ENGINE_HELPERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "helpers.h"

/* A scenario's child ends with E_EXIT() (T_EXIT() of helpers.h). */
#define E_EXIT(c)	T_EXIT(c)

/* ------------------------------------------------------------------ */
/* Clocks                                                             */
/* ------------------------------------------------------------------ */

static inline int64_t
e_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t
e_now_ns(void)
{
	return e_clock_ns(CLOCK_MONOTONIC);
}

static inline int64_t
e_now_ms(void)
{
	return e_now_ns() / 1000000;
}

/* CPU time of the calling thread. */
static inline int64_t
e_thread_cpu_ns(void)
{
	return e_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* CPU time of the whole process. */
static inline int64_t
e_proc_cpu_ns(void)
{
	return e_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

static inline void
e_sleep_ms(int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
}

static inline struct timespec
e_ts_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	return ts;
}

/* ------------------------------------------------------------------ */
/* Checks inside a child                                              */
/* ------------------------------------------------------------------ */

static inline void
e_fail_at(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: check failed: %s: ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fflush(stderr);
	E_EXIT(1);
}

/* In a child: if cond is false, print the message and end the child. */
#define E_CHECK(cond, ...) do {						\
	if (!(cond))							\
		e_fail_at(__FILE__, __LINE__, #cond, __VA_ARGS__);	\
} while (0)

/* In a child: a system call that must succeed. */
#define E_SYS(expr) E_CHECK((expr) >= 0, "%s", strerror(errno))

/* ------------------------------------------------------------------ */
/* Running a scenario in a child with a time limit                    */
/* ------------------------------------------------------------------ */

/*
 * Fork; the child runs fn(arg) and exits with its return value (0: pass).
 * The parent waits at most limit_s seconds, then kills the child.
 * Returns 0 on a pass; prints why and returns -1 otherwise.
 */
static inline int
e_run_child(int (*fn)(void *), void *arg, unsigned limit_s, const char *what)
{
	int64_t deadline = e_now_ms() + (int64_t)limit_s * 1000;
	int status;
	pid_t pid, r;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", what, strerror(errno));
		return -1;
	}
	if (pid == 0) {
		signal(SIGPIPE, SIG_IGN);
		E_EXIT(fn(arg));
	}
	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			fprintf(stderr, "%s: waitpid: %s\n", what, strerror(errno));
			return -1;
		}
		if (e_now_ms() > deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			fprintf(stderr, "%s: HUNG: still running after %u s "
			    "(deadlock, lost wakeup or busy loop); killed\n",
			    what, limit_s);
			return -1;
		}
		e_sleep_ms(5);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		fprintf(stderr, "%s: child killed by signal %d\n", what,
		    WTERMSIG(status));
	else
		fprintf(stderr, "%s: failed (child exit status %d)\n", what,
		    WEXITSTATUS(status));
	return -1;
}

/* In a cmocka test: run fn in a child, fail the test if it fails. */
#define E_RUN(fn, arg, limit_s) \
	assert_int_equal(e_run_child((fn), (arg), (limit_s), #fn), 0)

/* ------------------------------------------------------------------ */
/* Small kevent helpers for children                                  */
/* ------------------------------------------------------------------ */

/* One change; returns kevent()'s result with errno preserved. */
static inline int
e_change(int kq, uintptr_t ident, short filter, unsigned short flags,
    unsigned int fflags, int64_t data, void *udata)
{
	struct kevent kev;

	EV_SET(&kev, ident, filter, flags, fflags, data, udata);
	return kevent(kq, &kev, 1, NULL, 0, NULL);
}

/* One change that must succeed. */
#define E_CHANGE(kq, ident, filter, flags, fflags, data, udata)		\
	E_CHECK(e_change((kq), (ident), (filter), (flags), (fflags),	\
	    (data), (udata)) == 0, "kevent change ident=%ju filter=%d "	\
	    "flags=%#x: %s", (uintmax_t)(ident), (int)(filter),		\
	    (unsigned)(flags), strerror(errno))

/* kevent() collecting up to n events with a timeout in milliseconds. */
static inline int
e_wait(int kq, struct kevent *ev, int n, int ms)
{
	struct timespec ts = e_ts_ms(ms);

	return kevent(kq, NULL, 0, ev, n, &ts);
}

/* ------------------------------------------------------------------ */
/* Descriptor exhaustion                                              */
/* ------------------------------------------------------------------ */

#define E_EXHAUST_MAX 4096

struct e_exhaust {
	struct rlimit	 old;
	int		 fds[E_EXHAUST_MAX];
	int		 n;
	int		 active;
};

/* The highest open descriptor number below limit, or -1. */
static inline int
e_highest_fd(int limit)
{
	int fd, hi = -1;

	for (fd = 0; fd < limit; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			hi = fd;
	return hi;
}

/*
 * Exhaust the descriptor table: lower RLIMIT_NOFILE's soft limit a little
 * above the highest open descriptor and fill every free slot below it with
 * dup()s of /dev/null; then close leave_free of those, so exactly leave_free
 * descriptors can still be created.  Returns 0, or -1 with errno.
 */
static inline int
e_exhaust(struct e_exhaust *x, int leave_free)
{
	struct rlimit rl;
	int nul, hi, fd = -1;

	memset(x, 0, sizeof(*x));
	if (getrlimit(RLIMIT_NOFILE, &x->old) != 0)
		return -1;
	nul = open("/dev/null", O_RDONLY);
	if (nul < 0)
		return -1;
	hi = e_highest_fd(x->old.rlim_cur < 65536 ? (int)x->old.rlim_cur :
	    65536);
	rl = x->old;
	rl.rlim_cur = (rlim_t)hi + 1 + 16;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		close(nul);
		return -1;
	}
	x->active = 1;
	x->fds[x->n++] = nul;
	while (x->n < E_EXHAUST_MAX && (fd = dup(nul)) >= 0)
		x->fds[x->n++] = fd;
	if (fd >= 0 || (errno != EMFILE && errno != ENFILE)) {
		int e = errno;

		while (x->n > 0)
			close(x->fds[--x->n]);
		setrlimit(RLIMIT_NOFILE, &x->old);
		x->active = 0;
		errno = fd >= 0 ? ENOSPC : e;
		return -1;
	}
	while (leave_free-- > 0 && x->n > 0)
		close(x->fds[--x->n]);
	return 0;
}

/* Undo e_exhaust(): close the fillers and restore the limit. */
static inline void
e_restore(struct e_exhaust *x)
{
	if (!x->active)
		return;
	while (x->n > 0)
		close(x->fds[--x->n]);
	setrlimit(RLIMIT_NOFILE, &x->old);
	x->active = 0;
}

/* ------------------------------------------------------------------ */
/* Descriptor numbers                                                 */
/* ------------------------------------------------------------------ */

/*
 * Make number the lowest free descriptor: it must be closed; every free
 * slot below it is filled with /dev/null (the fillers are returned in
 * hold[], at most nhold, count in *n).  Returns 0, or -1 when number is
 * not free.
 */
static inline int
e_make_lowest_free(int number, int *hold, int nhold, int *n)
{
	*n = 0;
	for (;;) {
		int fd = open("/dev/null", O_RDONLY);

		if (fd < 0)
			return -1;
		if (fd == number) {
			close(fd);
			return 0;
		}
		if (fd > number || *n == nhold) {
			close(fd);
			return -1;
		}
		hold[(*n)++] = fd;
	}
}

static inline void
e_close_all(int *fds, int n)
{
	while (n > 0)
		close(fds[--n]);
}

#endif
