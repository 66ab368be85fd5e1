/*
 * test-close.c -- closing descriptors in bulk, as FreeBSD: closefrom() and
 * close_range() remove the knotes of the watched descriptors they close and
 * free the kqueues they close, and leave kqueues below the range working.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include "helpers.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE	(1U << 1)
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC	(1U << 2)
#endif

/* A pipe whose two ends sit at or above lo (fcntl F_DUPFD). */
static void
pipe_above(int lo, int p[2])
{
	int q[2], i;

	assert_int_equal(pipe(q), 0);
	for (i = 0; i < 2; i++) {
		p[i] = fcntl(q[i], F_DUPFD, lo);
		assert_true(p[i] >= lo);
		assert_int_equal(close(q[i]), 0);
	}
}

static int
ready(int kq)
{
	struct kevent ev[4];

	return kevent(kq, NULL, 0, ev, 4, &t_zero);
}

static void
closefrom_drops_knotes_above_and_keeps_kqueue_below(void **state)
{
	int kq, p[2], low[2];
	struct kevent ch;

	(void)state;
	kq = kqueue();
	assert_true(kq >= 0 && kq < 200);
	assert_int_equal(pipe(low), 0);
	pipe_above(300, p);
	/* A timer makes the kqueue create an internal descriptor now. */
	EV_SET(&ch, 1, EVFILT_TIMER, EV_ADD, 0, 1000, NULL);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(ready(kq), 1);
	closefrom(300);
	assert_int_equal(fcntl(p[0], F_GETFD), -1);
	/* The knote went with its descriptor; the kqueue still works. */
	assert_int_equal(ready(kq), 0);
	EV_SET(&ch, low[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	assert_int_equal(write(low[1], "y", 1), 1);
	assert_int_equal(ready(kq), 1);
	close(low[0]);
	close(low[1]);
	assert_int_equal(close(kq), 0);
}

static void
close_range_frees_a_kqueue_in_the_range(void **state)
{
	int kq, p[2];
	struct kevent ch;

	(void)state;
	pipe_above(400, p);
	kq = kqueue();
	assert_true(kq >= 0);
	EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	assert_int_equal(close_range((unsigned)kq, (unsigned)kq, 0), 0);
	assert_int_equal(kevent(kq, NULL, 0, NULL, 0, NULL), -1);
	assert_int_equal(errno, EBADF);
	/* CLOSE_RANGE_CLOEXEC closes nothing. */
	assert_int_equal(close_range((unsigned)p[0], (unsigned)p[1],
	    CLOSE_RANGE_CLOEXEC), 0);
	assert_true(fcntl(p[0], F_GETFD) & FD_CLOEXEC);
	assert_int_equal(close_range((unsigned)p[0], (unsigned)p[1], 0), 0);
	assert_int_equal(fcntl(p[1], F_GETFD), -1);
}

static void
dup2_onto_watched_descriptor_drops_its_knote(void **state)
{
	int kq, a[2], b[2];
	struct kevent ch, ev;

	(void)state;
	kq = t_new_kq();
	assert_int_equal(pipe(a), 0);
	assert_int_equal(pipe(b), 0);
	EV_SET(&ch, a[0], EVFILT_READ, EV_ADD, 0, 0, (void *)1);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	/* a[0] now names b's read end: the old knote is gone... */
	assert_int_equal(dup2(b[0], a[0]), a[0]);
	assert_int_equal(write(b[1], "z", 1), 1);
	assert_int_equal(ready(kq), 0);
	EV_SET(&ch, a[0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), -1);
	assert_int_equal(errno, ENOENT);
	/* ...and a new one watches the new file. */
	EV_SET(&ch, a[0], EVFILT_READ, EV_ADD, 0, 0, (void *)2);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &t_zero), 1);
	assert_ptr_equal(ev.udata, (void *)2);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

/* dup2(2): a bad oldfd fails with EBADF and leaves newfd (and its knote) alone. */
static void
dup2_from_closed_descriptor_fails_ebadf_and_keeps_target_knote(void **state)
{
	int kq, p[2], bad;
	struct kevent ch, ev;

	(void)state;
	kq = t_new_kq();
	assert_int_equal(pipe(p), 0);
	bad = dup(p[1]);
	assert_true(bad >= 0);
	assert_int_equal(close(bad), 0);
	EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	errno = 0;
	assert_int_equal(dup2(bad, p[0]), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &t_zero), 1);
	assert_int_equal(ev.ident, (uintptr_t)p[0]);
	close(p[0]);
	close(p[1]);
}

/* dup2(fd, fd) returns fd and changes nothing: the knote stays. */
static void
dup2_onto_itself_keeps_the_knote(void **state)
{
	int kq, p[2], bad;
	struct kevent ch, ev;

	(void)state;
	kq = t_new_kq();
	assert_int_equal(pipe(p), 0);
	EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	assert_int_equal(dup2(p[0], p[0]), p[0]);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &t_zero), 1);
	assert_int_equal(ev.ident, (uintptr_t)p[0]);
	bad = dup(p[1]);
	assert_true(bad >= 0);
	assert_int_equal(close(bad), 0);
	errno = 0;
	assert_int_equal(dup2(bad, bad), -1);
	assert_int_equal(errno, EBADF);
	close(p[0]);
	close(p[1]);
}

/* A pipe read end watched by a new kqueue: the kqueue; p gets the pipe. */
static int
watched_pipe(int p[2])
{
	int kq = t_new_kq();
	struct kevent ch;

	assert_int_equal(pipe(p), 0);
	EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, (void *)7);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	return kq;
}

/* The knote of p[0] still reports a byte written into the pipe. */
static void
assert_knote_reports(int kq, int p[2])
{
	struct kevent ev;

	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &t_zero), 1);
	assert_int_equal(ev.ident, (uintptr_t)p[0]);
	assert_ptr_equal(ev.udata, (void *)7);
}

/* dup3(2): flags other than O_CLOEXEC fail with EINVAL and close nothing. */
static void
dup3_with_a_bad_flag_fails_einval_and_keeps_target_knote(void **state)
{
	int kq, p[2], q[2];

	(void)state;
	kq = watched_pipe(p);
	assert_int_equal(pipe(q), 0);
	errno = 0;
	assert_int_equal(dup3(q[0], p[0], O_NONBLOCK), -1);
	assert_int_equal(errno, EINVAL);
	/* The flags are checked before oldfd, as the kernel does. */
	errno = 0;
	assert_int_equal(dup3(100000, p[0], O_NONBLOCK), -1);
	assert_int_equal(errno, EINVAL);
	assert_true(fcntl(p[0], F_GETFD) >= 0);
	assert_knote_reports(kq, p);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* dup2(2): a newfd at or above RLIMIT_NOFILE fails with EBADF; a
   descriptor above the limit lowered after it was opened keeps its
   knote. */
static void
dup2_beyond_the_descriptor_limit_fails_ebadf_and_keeps_target_knote(void **state)
{
	int kq, p[2], q[2], hi, r, e;
	struct rlimit old, low;

	(void)state;
	kq = watched_pipe(q);
	assert_int_equal(pipe(p), 0);
	hi = fcntl(p[0], F_DUPFD, 200);
	assert_true(hi >= 200);
	assert_int_equal(close(p[0]), 0);
	p[0] = hi;
	{
		struct kevent ch;

		EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, (void *)7);
		assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	}
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 100;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	errno = 0;
	r = dup2(q[0], hi);
	e = errno;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(r, -1);
	assert_int_equal(e, EBADF);
	assert_knote_reports(kq, p);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* close_range(2): an unknown flag fails with EINVAL and closes nothing:
   neither a watched descriptor's knote nor a kqueue goes. */
static void
close_range_with_an_unknown_flag_fails_einval_and_closes_nothing(void **state)
{
	int kq, p[2];

	(void)state;
	kq = watched_pipe(p);
	errno = 0;
	assert_int_equal(close_range((unsigned)p[0], (unsigned)p[0], 0x80), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(close_range((unsigned)kq, (unsigned)kq, 0x80), -1);
	assert_int_equal(errno, EINVAL);
	assert_knote_reports(kq, p);
	close(p[0]);
	close(p[1]);
}

/*
 * close_range(2) with Linux's CLOSE_RANGE_UNSHARE in a process of one
 * thread: its table is shared with no one, so the kernel closes in it as
 * without the flag, and the kqueues in the range go as close() makes them
 * go -- their number fails with EBADF, and nothing they held stays open.
 * (With other threads the range is closed in a private copy of the table,
 * and the kqueues stay theirs: tests/attack/a10.)  In a child, which has
 * one thread whatever the suite made before -- but for a sanitizer's own
 * thread (ThreadSanitizer's background thread shares the table): then
 * there is nothing to check.
 */
static int
unshare_child(void)
{
	int n0 = t_count_fds(), kq, p[2], i;
	struct kevent ch;
	struct stat st;

	if (n0 < 0)
		return 0;	/* no /proc: nothing to count */
	if (stat("/proc/self/task", &st) != 0 || st.st_nlink != 3)
		return 77;	/* another thread shares the table */
	if (pipe(p) != 0)
		return 10;
	for (i = 0; i < 20; i++) {
		if ((kq = kqueue()) < 0)
			return 11;
		EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
		if (kevent(kq, &ch, 1, NULL, 0, NULL) != 0)
			return 12;
		if (close_range((unsigned)kq, (unsigned)kq,
		    CLOSE_RANGE_UNSHARE) != 0)
			return 13;
		if (kevent(kq, NULL, 0, NULL, 0, NULL) != -1 || errno != EBADF)
			return 14;
	}
	close(p[0]);
	close(p[1]);
	return t_count_fds() == n0 ? 0 : 15;
}

static void
close_range_unsharing_in_a_process_of_one_thread_frees_the_kqueues(
    void **state)
{
	int code;

	(void)state;
	code = t_child_code(unshare_child);
	if (code == 77) {
		fprintf(stderr, "another thread in the child: skip\n");
		skip();
	}
	assert_int_equal(code, 0);
}

/*
 * closefrom() in one thread while another adds and waits for process
 * knotes on a kqueue below the range: on FreeBSD the knotes need no
 * descriptor, so the watcher loses no NOTE_EXIT and gets no error, and the
 * pipes the first thread opens above the range after each closefrom() are
 * never closed behind its back.  (On Linux each knote holds a pidfd, made
 * and closed while the other thread closes everything above LOW.)
 */
static atomic_int cf_stop;
static atomic_long cf_lost, cf_errs, cf_iters;

static void *
cf_watcher(void *arg)
{
	int kq = *(int *)arg;

	while (!atomic_load(&cf_stop)) {
		struct kevent ch, ev;
		struct timespec ts = { 2, 0 };
		pid_t c = fork();

		if (c < 0) {
			atomic_fetch_add(&cf_errs, 1);
			break;
		}
		if (c == 0) {
			usleep(1000);
			T_EXIT(3);
		}
		EV_SET(&ch, c, EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, NULL);
		if (kevent(kq, &ch, 1, NULL, 0, NULL) != 0)
			atomic_fetch_add(&cf_errs, 1);
		else if (kevent(kq, NULL, 0, &ev, 1, &ts) != 1 ||
		    ev.ident != (uintptr_t)c || !(ev.fflags & NOTE_EXIT))
			atomic_fetch_add(&cf_lost, 1);
		(void)waitpid(c, NULL, 0);
		atomic_fetch_add(&cf_iters, 1);
	}
	return NULL;
}

static atomic_int cr_stop, cr_lost;

/* Opens pipes and checks they stay open and pipes until it closes them. */
static void *
cr_opener(void *arg)
{
	struct stat sb;
	int p[2], i;

	(void)arg;
	while (!atomic_load(&cr_stop)) {
		if (pipe(p) != 0)
			continue;
		for (i = 0; i < 50; i++)
			if (fstat(p[0], &sb) != 0 || !S_ISFIFO(sb.st_mode) ||
			    fstat(p[1], &sb) != 0 || !S_ISFIFO(sb.st_mode))
				atomic_store(&cr_lost, 1);
		close(p[0]);
		close(p[1]);
	}
	return NULL;
}

/*
 * close_range() closes each number of its range once: a kqueue's number
 * is not closed a second time after another thread got it for a new file
 * (FreeBSD: each open descriptor in the range is closed, once).
 */
static void
close_range_of_kqueues_closes_no_file_another_thread_opened(void **state)
{
	struct timespec t0, t;
	pthread_t th;
	int n = 0;

	(void)state;
	atomic_store(&cr_stop, 0);
	atomic_store(&cr_lost, 0);
	assert_int_equal(pthread_create(&th, NULL, cr_opener, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int kq = kqueue();

		assert_true(kq >= 0);
		n++;
		assert_int_equal(close_range((unsigned)kq, (unsigned)kq, 0), 0);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!atomic_load(&cr_lost) && (t.tv_sec - t0.tv_sec) *
	    1000000000L + (t.tv_nsec - t0.tv_nsec) < 1000000000L);
	atomic_store(&cr_stop, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	print_message("%d kqueues closed by range\n", n);
	assert_int_equal(atomic_load(&cr_lost), 0);
}

static void *
kq_churner(void *arg)
{
	(void)arg;
	while (!atomic_load(&cr_stop)) {
		int k = kqueue();

		if (k >= 0)
			close(k);
	}
	return NULL;
}

/*
 * close_range() closes a file at a number a kqueue just left: another
 * thread making and closing kqueues gives their numbers to our sockets and
 * takes them back, and each socket close_range() is given is closed.
 */
static void
close_range_closes_a_socket_at_a_number_a_closed_kqueue_just_left(void **state)
{
	struct timespec t0, t;
	pthread_t th;
	long n = 0, open_after = 0;

	(void)state;
	atomic_store(&cr_stop, 0);
	assert_int_equal(pthread_create(&th, NULL, kq_churner, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int sv[2];
		char c;

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
			continue;
		assert_int_equal(close_range((unsigned)sv[0], (unsigned)sv[0],
		    0), 0);
		/* Closed: its peer reads end of file (the number itself is
		   not looked at, it may be the other thread's by now). */
		if (recv(sv[1], &c, 1, MSG_DONTWAIT) != 0)
			open_after++;
		assert_int_equal(close(sv[1]), 0);
		n++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec -
	    t0.tv_nsec) < 1000000000L);
	atomic_store(&cr_stop, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	print_message("%ld sockets, %ld left open\n", n, open_after);
	assert_int_equal(open_after, 0);
}

/*
 * A kqueue number closed behind the C library's back and then used by
 * another kqueue for a timer: close_range() over that number closes
 * nothing the program has (FreeBSD: the number is free), and the other
 * kqueue's timer keeps firing.
 */
static void
close_range_over_a_raw_closed_kqueue_number_keeps_other_kqueues_working(
    void **state)
{
	struct timespec to = { 0, 500 * 1000 * 1000 };
	struct kevent ch, ev;
	int a, b, n, p[2];
	struct stat sb;

	(void)state;
	b = t_track(kqueue());
	a = kqueue();
	assert_true(a >= 0);
	n = a;
	assert_int_equal(syscall(SYS_close, a), 0);
	EV_SET(&ch, 1, EVFILT_TIMER, EV_ADD, 0, 20, NULL);
	assert_int_equal(kevent(b, &ch, 1, NULL, 0, NULL), 0);
	assert_int_equal(close_range((unsigned)n, (unsigned)n, 0), 0);
	assert_int_equal(kevent(b, NULL, 0, &ev, 1, &to), 1);
	assert_int_equal(ev.filter, EVFILT_TIMER);
	assert_int_equal(kevent(b, NULL, 0, &ev, 1, &to), 1);
	/* The program's next files are its own to keep. */
	assert_int_equal(pipe(p), 0);
	t_track(p[0]);
	t_track(p[1]);
	EV_SET(&ch, 1, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
	assert_int_equal(kevent(b, &ch, 1, NULL, 0, NULL), 0);
	assert_int_equal(fstat(p[0], &sb), 0);
	assert_int_equal(fstat(p[1], &sb), 0);
}

static void
closefrom_racing_with_process_knotes_closes_nothing_kq_uses(void **state)
{
	int kq, low, i, closed = 0, bytes = 0;
	pthread_t th;
	time_t end;

	(void)state;
	kq = t_new_kq();
	low = open("/dev/null", O_RDONLY);	/* the lowest free number */
	assert_true(low > kq);
	assert_int_equal(close(low), 0);
	atomic_store(&cf_stop, 0);
	atomic_store(&cf_lost, 0);
	atomic_store(&cf_errs, 0);
	atomic_store(&cf_iters, 0);
	assert_int_equal(pthread_create(&th, NULL, cf_watcher, &kq), 0);
	end = time(NULL) + 3;
	while (time(NULL) < end) {
		int p[4][2], n;

		closefrom(low);
		for (i = 0; i < 4; i++) {
			if (pipe(p[i]) != 0) {
				p[i][0] = -1;
				continue;
			}
			assert_int_equal(write(p[i][1], "0123456789abcdef", 16), 16);
		}
		usleep(300);
		for (i = 0; i < 4; i++) {
			if (p[i][0] < 0)
				continue;
			if (fcntl(p[i][0], F_GETFD) < 0 ||
			    fcntl(p[i][1], F_GETFD) < 0)
				closed++;
			else if (ioctl(p[i][0], FIONREAD, &n) != 0 || n != 16)
				bytes++;
		}
		for (i = 0; i < 4; i++)
			if (p[i][0] >= 0) {
				close(p[i][0]);
				close(p[i][1]);
			}
	}
	atomic_store(&cf_stop, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (closed || bytes || atomic_load(&cf_lost) || atomic_load(&cf_errs))
		fprintf(stderr, "%ld knotes: %d pipes closed, %d pipes "
		    "changed, %ld exits lost, %ld errors\n",
		    atomic_load(&cf_iters), closed, bytes,
		    atomic_load(&cf_lost), atomic_load(&cf_errs));
	assert_true(atomic_load(&cf_iters) > 0);
	assert_int_equal(closed, 0);
	assert_int_equal(bytes, 0);
	assert_int_equal(atomic_load(&cf_lost), 0);
	assert_int_equal(atomic_load(&cf_errs), 0);
}

static int
teardown(void **state)
{
	(void)state;
	t_close_tracked();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(closefrom_drops_knotes_above_and_keeps_kqueue_below, teardown),
		cmocka_unit_test_teardown(close_range_frees_a_kqueue_in_the_range, teardown),
		cmocka_unit_test(close_range_unsharing_in_a_process_of_one_thread_frees_the_kqueues),
		cmocka_unit_test_teardown(dup2_onto_watched_descriptor_drops_its_knote, teardown),
		cmocka_unit_test_teardown(dup2_from_closed_descriptor_fails_ebadf_and_keeps_target_knote, teardown),
		cmocka_unit_test_teardown(dup2_onto_itself_keeps_the_knote, teardown),
		cmocka_unit_test_teardown(dup3_with_a_bad_flag_fails_einval_and_keeps_target_knote, teardown),
		cmocka_unit_test_teardown(dup2_beyond_the_descriptor_limit_fails_ebadf_and_keeps_target_knote, teardown),
		cmocka_unit_test_teardown(close_range_with_an_unknown_flag_fails_einval_and_closes_nothing, teardown),
		cmocka_unit_test_teardown(closefrom_racing_with_process_knotes_closes_nothing_kq_uses, teardown),
		cmocka_unit_test_teardown(close_range_of_kqueues_closes_no_file_another_thread_opened, teardown),
		cmocka_unit_test_teardown(close_range_closes_a_socket_at_a_number_a_closed_kqueue_just_left, teardown),
		cmocka_unit_test_teardown(close_range_over_a_raw_closed_kqueue_number_keeps_other_kqueues_working, teardown),
	};

	return t_run_group(tests, NULL, NULL);
}
