/*
 * test-sigfuncs.c -- EVFILT_SIGNAL with every way of setting a signal's
 * disposition besides sigaction(): the BSD and System V functions.  As on
 * FreeBSD, the knote counts every delivery whatever the disposition, and
 * the disposition the application chose keeps its meaning (the handler
 * runs, a held signal waits, an ignored one is discarded, a one-shot
 * handler resets).
 */
#include "helpers.h"

/* The point is to call the deprecated System V functions. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static volatile sig_atomic_t t_handled;

static void
t_handler(int signo)
{
	(void)signo;
	t_handled++;
}

/* A kqueue watching signo; returns it. */
static int
watch_signal(int signo)
{
	int kq = t_new_kq();
	struct kevent ch;

	EV_SET(&ch, signo, EVFILT_SIGNAL, EV_ADD | EV_CLEAR, 0, 0, NULL);
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), 0);
	return kq;
}

/* The count the knote reports now (0 if it reports nothing). */
static int64_t
signal_count(int kq, int signo)
{
	struct kevent ev;
	int n = kevent(kq, NULL, 0, &ev, 1, &t_zero);

	assert_true(n >= 0);
	if (n == 0)
		return 0;
	assert_int_equal(ev.filter, EVFILT_SIGNAL);
	assert_int_equal(ev.ident, (uintptr_t)signo);
	return ev.data;
}

static void
restore_default(int signo)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(signo, &sa, NULL);
}

static void
signal_set_with_bsd_signal_runs_handler_and_is_counted(void **state)
{
	int kq = watch_signal(SIGUSR1);

	(void)state;
	t_handled = 0;
	assert_true(signal(SIGUSR1, t_handler) != SIG_ERR);
	raise(SIGUSR1);
	raise(SIGUSR1);
	assert_int_equal(t_handled, 2);
	assert_int_equal(signal_count(kq, SIGUSR1), 2);
	restore_default(SIGUSR1);
	t_close_now(kq);
}

static void
sigignore_discards_the_signal_but_the_knote_counts_it(void **state)
{
	int kq = watch_signal(SIGUSR2);
	struct sigaction cur;

	(void)state;
	assert_int_equal(sigignore(SIGUSR2), 0);
	assert_int_equal(sigaction(SIGUSR2, NULL, &cur), 0);
	assert_true(cur.sa_handler == SIG_IGN);
	raise(SIGUSR2);
	assert_int_equal(signal_count(kq, SIGUSR2), 1);
	restore_default(SIGUSR2);
	t_close_now(kq);
}

static void
sigset_hold_delays_the_signal_until_released(void **state)
{
	int kq = watch_signal(SIGUSR1);

	(void)state;
	t_handled = 0;
	assert_true(sigset(SIGUSR1, t_handler) != SIG_ERR);
	assert_true(sigset(SIGUSR1, SIG_HOLD) != SIG_ERR);
	/* Held already: sigset says so. */
	assert_true(sigset(SIGUSR1, SIG_HOLD) == SIG_HOLD);
	raise(SIGUSR1);
	assert_int_equal(t_handled, 0);
	assert_int_equal(signal_count(kq, SIGUSR1), 0);
	/* Setting a handler again releases it: sigset reports it was held. */
	assert_true(sigset(SIGUSR1, t_handler) == SIG_HOLD);
	assert_int_equal(t_handled, 1);
	assert_int_equal(signal_count(kq, SIGUSR1), 1);
	restore_default(SIGUSR1);
	t_close_now(kq);
}

static void
siginterrupt_clears_and_sets_restart(void **state)
{
	struct sigaction cur;

	(void)state;
	assert_true(signal(SIGUSR2, t_handler) != SIG_ERR);
	assert_int_equal(siginterrupt(SIGUSR2, 1), 0);
	assert_int_equal(sigaction(SIGUSR2, NULL, &cur), 0);
	assert_false(cur.sa_flags & SA_RESTART);
	assert_int_equal(siginterrupt(SIGUSR2, 0), 0);
	assert_int_equal(sigaction(SIGUSR2, NULL, &cur), 0);
	assert_true(cur.sa_flags & SA_RESTART);
	restore_default(SIGUSR2);
}

/* Every function fails with EINVAL for a number that is not a signal. */
static void
invalid_signal_numbers_fail_einval(void **state)
{
	static const int bad[] = { 0, -1, NSIG, 1000 };
	struct sigaction sa;
	size_t i;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = t_handler;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_int_equal(sigaction(bad[i], &sa, NULL), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_true(signal(bad[i], t_handler) == SIG_ERR);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_true(sigset(bad[i], t_handler) == SIG_ERR);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(sigignore(bad[i]), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(siginterrupt(bad[i], 1), -1);
		assert_int_equal(errno, EINVAL);
	}
}

#ifdef __GLIBC__
/* glibc's own variants (not on FreeBSD). */
extern sighandler_t bsd_signal(int, sighandler_t);
extern sighandler_t ssignal(int, sighandler_t);
extern sighandler_t sysv_signal(int, sighandler_t);

static void
glibc_bsd_signal_and_ssignal_keep_the_handler(void **state)
{
	int kq = watch_signal(SIGUSR1);

	(void)state;
	t_handled = 0;
	assert_true(bsd_signal(SIGUSR1, t_handler) != SIG_ERR);
	raise(SIGUSR1);
	assert_true(ssignal(SIGUSR1, t_handler) == t_handler);
	raise(SIGUSR1);
	assert_int_equal(t_handled, 2);
	assert_int_equal(signal_count(kq, SIGUSR1), 2);
	restore_default(SIGUSR1);
	t_close_now(kq);
}

static void
glibc_sysv_signal_handler_runs_once_then_resets(void **state)
{
	int kq = watch_signal(SIGUSR2);
	struct sigaction cur;

	(void)state;
	t_handled = 0;
	assert_true(sysv_signal(SIGUSR2, t_handler) != SIG_ERR);
	raise(SIGUSR2);
	assert_int_equal(t_handled, 1);
	assert_int_equal(sigaction(SIGUSR2, NULL, &cur), 0);
	assert_true(cur.sa_handler == SIG_DFL);
	assert_int_equal(signal_count(kq, SIGUSR2), 1);
	t_close_now(kq);
}
#endif

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
		cmocka_unit_test_teardown(signal_set_with_bsd_signal_runs_handler_and_is_counted, teardown),
		cmocka_unit_test_teardown(sigignore_discards_the_signal_but_the_knote_counts_it, teardown),
		cmocka_unit_test_teardown(sigset_hold_delays_the_signal_until_released, teardown),
		cmocka_unit_test_teardown(siginterrupt_clears_and_sets_restart, teardown),
		cmocka_unit_test_teardown(invalid_signal_numbers_fail_einval, teardown),
#ifdef __GLIBC__
		cmocka_unit_test_teardown(glibc_bsd_signal_and_ssignal_keep_the_handler, teardown),
		cmocka_unit_test_teardown(glibc_sysv_signal_handler_runs_once_then_resets, teardown),
#endif
	};

	return t_run_group(tests, NULL, NULL);
}
