/*
 * test-close.c -- closing descriptors in bulk, as FreeBSD: closefrom() and
 * close_range() remove the knotes of the watched descriptors they close and
 * free the kqueues they close, and leave kqueues below the range working.
 */
#include <sys/syscall.h>
#include "helpers.h"

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
		cmocka_unit_test_teardown(dup2_onto_watched_descriptor_drops_its_knote, teardown),
		cmocka_unit_test_teardown(dup2_from_closed_descriptor_fails_ebadf_and_keeps_target_knote, teardown),
		cmocka_unit_test_teardown(dup2_onto_itself_keeps_the_knote, teardown),
	};

	return t_run_group(tests, NULL, NULL);
}
