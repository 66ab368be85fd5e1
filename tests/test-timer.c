/*
 * test-timer: EVFILT_TIMER.
 *
 * FreeBSD reference (kern_event.c filt_timer*, tests/sys/kqueue timer.c):
 * ident is any number; data is the period (or, with NOTE_ABSTIME, a
 * wall-clock deadline) in the unit given by fflags: NOTE_SECONDS,
 * NOTE_MSECONDS (also fflags 0), NOTE_USECONDS, NOTE_NSECONDS.  Relative
 * timers are periodic unless EV_ONESHOT and are forced EV_CLEAR; the
 * delivered data counts the expirations since the last retrieval
 * (overruns included) and fflags is 0.  A NOTE_ABSTIME timer fires once
 * and is not forced EV_CLEAR.  data < 0, an unknown fflags bit or two
 * units give EINVAL; a periodic 0 is raised to 1 unit and a one-shot 0
 * fires at once; re-EV_ADD discards undelivered expirations and restarts
 * the timer; a disabled timer keeps running.
 *
 * Timing: a timer must never fire before its deadline, so lower bounds are
 * strict; the machine may be loaded, so upper bounds are generous.  Times
 * taken before a registration bound its deadline from below, times taken
 * after a delivery bound the firing from above.
 */
#include "helpers.h"

#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif
#if defined(__FreeBSD__)
#include <sys/sysctl.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define T_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T_ASAN 1
#endif
#endif

#define MS	INT64_C(1000000)	/* nanoseconds */
#define SEC	INT64_C(1000000000)

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

#if defined(__linux__)
/*
 * The wall clock this process sees is the system's plus wall_shift_ns (0
 * but in the tests that move it): this clock_gettime() takes the place of
 * the C library's in the whole program, libkq.a's calls included, so a
 * test can put "now" after 2043 without touching the system clock.
 * CLOCK_MONOTONIC is untouched.  (On FreeBSD the kernel reads its own
 * clock: the tests that need the shift are skipped.)
 */
static int64_t wall_shift_ns;

int
clock_gettime(clockid_t clk, struct timespec *ts)
{
	int64_t t;

	if (syscall(SYS_clock_gettime, clk, ts) != 0)
		return -1;
	if (clk == CLOCK_REALTIME && wall_shift_ns != 0) {
		t = (int64_t)ts->tv_sec * SEC + ts->tv_nsec + wall_shift_ns;
		ts->tv_sec = (time_t)(t / SEC);
		ts->tv_nsec = (long)(t % SEC);
	}
	return 0;
}
#define T_WALL_SHIFT 1
#else
#define T_WALL_SHIFT 0
#endif

static int
teardown(void **state)
{
	(void)state;
	alarm(0);
	t_close_tracked();
#if T_WALL_SHIFT
	wall_shift_ns = 0;
#endif
	return 0;
}

static int64_t
mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * SEC + t.tv_nsec;
}

static int64_t
real_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * SEC + t.tv_nsec;
}

/* Make the wall clock read `when` (ns since the epoch) from now on. */
static void
set_wall_clock(int64_t when)
{
#if T_WALL_SHIFT
	wall_shift_ns = 0;
	wall_shift_ns = when - real_ns();
#else
	(void)when;
	skip();
#endif
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Sleep until the monotonic clock reads at least t (ns). */
static void
sleep_until(int64_t t)
{
	int64_t left;

	while ((left = t - mono_ns()) > 0) {
		struct timespec ts = { left / SEC, left % SEC };

		nanosleep(&ts, NULL);
	}
}

/* Wait up to ms for events; returns the count. */
static int
wait_ev(int kq, struct kevent *ev, int n, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	int r = kevent(kq, NULL, 0, ev, n, &ts);

	if (r < 0) {
		fprintf(stderr, "kevent wait: %s\n", strerror(errno));
		fail();
	}
	return r;
}

/* Wait up to ms for exactly one event and return it. */
static struct kevent
wait_one(int kq, int ms)
{
	struct kevent ev[2];
	int r = wait_ev(kq, ev, 2, ms);

	if (r != 1)
		fprintf(stderr, "expected one event within %d ms, got %d\n",
		    ms, r);
	assert_int_equal(r, 1);
	return ev[0];
}

/* Apply one change without an event list: 0 or the errno. */
static int
change_errno(int kq, uintptr_t ident, unsigned short flags,
    unsigned int fflags, int64_t data)
{
	struct kevent kev;

	EV_SET(&kev, ident, EVFILT_TIMER, flags, fflags, data, NULL);
	if (kevent(kq, &kev, 1, NULL, 0, NULL) == 0)
		return 0;
	return errno;
}

/*
 * Apply one change with room for one event: the failing change must come
 * back as an EV_ERROR entry carrying err, and the kevent() call succeeds.
 */
static void
expect_error_entry(int kq, uintptr_t ident, unsigned short flags,
    unsigned int fflags, int64_t data, int err)
{
	struct kevent kev, out;
	int r;

	EV_SET(&kev, ident, EVFILT_TIMER, flags, fflags, data, (void *)0x5a);
	memset(&out, 0, sizeof(out));
	r = kevent(kq, &kev, 1, &out, 1, &t_zero);
	assert_int_equal(r, 1);
	assert_int_equal(out.flags, EV_ERROR);
	assert_int_equal(out.data, err);
	assert_int_equal(out.ident, ident);
	assert_int_equal(out.filter, EVFILT_TIMER);
	assert_ptr_equal(out.udata, (void *)0x5a);
	/* The same change without an event list: kevent() itself fails. */
	assert_int_equal(change_errno(kq, ident, flags, fflags, data), err);
}

static void
assert_not_registered(int kq, uintptr_t ident)
{
	assert_int_equal(change_errno(kq, ident, EV_DELETE, 0, 0), ENOENT);
}

/* ------------------------------------------------------------------ */
/* Units                                                               */

/* A one-shot timer of `ns` nanoseconds given as (fflags, data). */
static void
check_unit(unsigned int fflags, int64_t data, int64_t ns)
{
	struct kevent ev;
	int64_t t0, t1;
	int kq;

	kq = t_new_kq();
	t0 = mono_ns();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, fflags, data, NULL);
	ev = wait_one(kq, (int)(ns / MS) + 2000);
	t1 = mono_ns();
	if (t1 - t0 < ns)
		fprintf(stderr, "fired after %jd ns, asked %jd ns\n",
		    (intmax_t)(t1 - t0), (intmax_t)ns);
	assert_true(t1 - t0 >= ns);
	assert_true(t1 - t0 <= ns + 2 * SEC);
	assert_int_equal(ev.ident, 1);
	assert_int_equal(ev.filter, EVFILT_TIMER);
	assert_int_equal(ev.data, 1);
	assert_int_equal(ev.fflags, 0);
}

static void
timer_note_seconds_fires_no_earlier_than_asked(void **state)
{
	(void)state;
	check_unit(NOTE_SECONDS, 1, SEC);
}

static void
timer_default_unit_is_milliseconds(void **state)
{
	(void)state;
	check_unit(0, 80, 80 * MS);
}

static void
timer_note_mseconds_fires_no_earlier_than_asked(void **state)
{
	(void)state;
	check_unit(NOTE_MSECONDS, 80, 80 * MS);
}

static void
timer_note_useconds_fires_no_earlier_than_asked(void **state)
{
	(void)state;
	check_unit(NOTE_USECONDS, 80000, 80 * MS);
}

static void
timer_note_nseconds_fires_no_earlier_than_asked(void **state)
{
	(void)state;
	check_unit(NOTE_NSECONDS, 80 * MS, 80 * MS);
}

/* ------------------------------------------------------------------ */
/* Periodic timers                                                     */

/*
 * Drained as each period ends, a periodic timer reports one expiration
 * per delivery, and the k-th delivery never comes before k periods.
 */
static void
timer_periodic_fires_repeatedly_with_data_one(void **state)
{
	const int64_t period = 100 * MS;
	struct kevent ev;
	int64_t t0, now, sum = 0;
	int kq, k, ones = 0;

	(void)state;
	kq = t_new_kq();
	t0 = mono_ns();
	t_change(kq, 3, EVFILT_TIMER, EV_ADD, 0, 100, (void *)0x33);
	for (k = 1; k <= 5; k++) {
		ev = wait_one(kq, 2000);
		now = mono_ns();
		assert_int_equal(ev.ident, 3);
		assert_ptr_equal(ev.udata, (void *)0x33);
		/*
		 * One expiration per retrieval when the waiter keeps up; a
		 * machine that stalls the waiter for a whole period makes it
		 * 2 (an overrun), never more than the periods that passed.
		 */
		assert_true(ev.data >= 1);
		sum += ev.data;
		ones += ev.data == 1;
		assert_true(now - t0 >= sum * period);
	}
	assert_true(ones >= 3);
	t_change(kq, 3, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
}

/*
 * Periods that pass without a retrieval are counted in data: after five
 * periods unread, data >= 4 (and never more periods than have passed).
 */
static void
timer_periodic_counts_overruns_in_data(void **state)
{
	const int64_t period = 20 * MS;
	struct kevent ev;
	int64_t t0, t_added, t_before, t_after;
	int kq;

	(void)state;
	kq = t_new_kq();
	t0 = mono_ns();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_MSECONDS, 20, NULL);
	t_added = mono_ns();
	sleep_until(t_added + 5 * period + period / 2);
	t_before = mono_ns();
	ev = t_expect_one(kq);
	t_after = mono_ns();
	assert_true(ev.data >= 4);
	assert_true(ev.data >= (t_before - t_added) / period - 1);
	assert_true(ev.data <= (t_after - t0) / period);
	/* Cleared by the retrieval. */
	t_expect_none(kq);
}

/* Relative timers come back with EV_CLEAR added and fflags 0. */
static void
timer_relative_returns_ev_clear_and_fflags_zero(void **state)
{
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_USECONDS, 10000, NULL);
	ev = wait_one(kq, 2000);
	assert_int_equal(ev.flags, EV_CLEAR);
	assert_int_equal(ev.fflags, 0);
	t_change(kq, 2, EVFILT_TIMER, EV_ADD | EV_ONESHOT, NOTE_NSECONDS,
	    10 * MS, NULL);
	t_change(kq, 1, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
	ev = wait_one(kq, 2000);
	assert_int_equal(ev.ident, 2);
	assert_int_equal(ev.flags, EV_ONESHOT | EV_CLEAR);
	assert_int_equal(ev.fflags, 0);
}

static void
timer_oneshot_fires_once_then_delete_gives_enoent(void **state)
{
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 4, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 20, NULL);
	ev = wait_one(kq, 2000);
	assert_int_equal(ev.ident, 4);
	assert_true(ev.flags & EV_ONESHOT);
	assert_int_equal(ev.data, 1);
	sleep_ms(100);
	t_expect_none(kq);
	assert_not_registered(kq, 4);
}

/* A periodic timer of 0 is one of 1 unit: it fires, again and again. */
static void
timer_periodic_zero_fires_repeatedly_as_one_unit(void **state)
{
	struct kevent ev;
	int64_t t0, t1, sum = 0;
	int kq, k;

	(void)state;
	kq = t_new_kq();
	t0 = mono_ns();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, 0, 0, NULL);
	for (k = 0; k < 5; k++) {
		ev = wait_one(kq, 2000);
		assert_true(ev.data >= 1);
		sum += ev.data;
	}
	t1 = mono_ns();
	/* 1 ms periods: never more expirations than milliseconds passed. */
	assert_true(sum <= (t1 - t0) / MS);
	assert_true(t1 - t0 >= 5 * MS);
	t_change(kq, 1, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
}

/* A one-shot timer of 0 fires at once. */
static void
timer_oneshot_zero_fires_at_once(void **state)
{
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 0, NULL);
	ev = wait_one(kq, 2000);
	assert_int_equal(ev.data, 1);
	t_expect_none(kq);
	assert_not_registered(kq, 1);
}

/* ------------------------------------------------------------------ */
/* NOTE_ABSTIME                                                        */

/*
 * A wall-clock deadline 100 ms ahead: the timer fires once, not before
 * the deadline.  It is not forced EV_CLEAR: as FreeBSD's
 * filt_timertouch(EVENT_PROCESS) resets data only for EV_CLEAR knotes, it
 * stays triggered (data 1, never more) until it is deleted.
 */
static void
timer_abstime_fires_once_not_before_deadline_and_stays_triggered(void **state)
{
	struct kevent ev;
	int64_t deadline_us;
	int kq, i;

	(void)state;
	kq = t_new_kq();
	deadline_us = real_ns() / 1000 + 100000;
	t_change(kq, 9, EVFILT_TIMER, EV_ADD, NOTE_ABSTIME | NOTE_USECONDS,
	    deadline_us, (void *)0x99);
	t_expect_none(kq);
	ev = wait_one(kq, 2000);
	assert_true(real_ns() / 1000 >= deadline_us);
	assert_int_equal(ev.ident, 9);
	assert_ptr_equal(ev.udata, (void *)0x99);
	assert_int_equal(ev.data, 1);
	assert_int_equal(ev.fflags, 0);
	assert_int_equal(ev.flags & EV_CLEAR, 0);
	/* Still triggered, still one expiration. */
	for (i = 0; i < 3; i++) {
		sleep_ms(50);
		ev = t_expect_one(kq);
		assert_int_equal(ev.ident, 9);
		assert_int_equal(ev.data, 1);
	}
	t_change(kq, 9, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
	t_expect_none(kq);
}

/*
 * Many absolute deadlines a few hundred microseconds to a few milliseconds
 * ahead, in nanoseconds: none fires before its wall-clock time (kq once
 * read the monotonic clock first and could fire up to the time between
 * its two clock reads early: attack helper 28's F5).
 */
static void
timer_abstime_never_fires_before_its_wall_clock_time(void **state)
{
	struct kevent ev;
	int64_t deadline_ns, early = 0;
	int kq, i;

	(void)state;
	kq = t_new_kq();
	for (i = 0; i < 400; i++) {
		deadline_ns = real_ns() + 200000 + (i % 8) * 250000;
		t_change(kq, 7, EVFILT_TIMER, EV_ADD | EV_ONESHOT,
		    NOTE_ABSTIME | NOTE_NSECONDS, deadline_ns, NULL);
		ev = wait_one(kq, 2000);
		assert_int_equal(ev.ident, 7);
		if (real_ns() < deadline_ns)
			early++;
	}
	assert_int_equal(early, 0);
}

/* With EV_CLEAR given, an absolute timer is reported once. */
static void
timer_abstime_with_ev_clear_is_reported_once(void **state)
{
	struct kevent ev;
	int64_t deadline_ms;
	int kq;

	(void)state;
	kq = t_new_kq();
	deadline_ms = real_ns() / MS + 50;
	t_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_CLEAR, NOTE_ABSTIME,
	    deadline_ms, NULL);
	ev = wait_one(kq, 2000);
	assert_true(real_ns() / MS >= deadline_ms);
	assert_int_equal(ev.data, 1);
	assert_true(ev.flags & EV_CLEAR);
	sleep_ms(100);
	t_expect_none(kq);
	t_change(kq, 1, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
}

/* FreeBSD's test_abstime: EV_ONESHOT with NOTE_ABSTIME, gone after. */
static void
timer_abstime_oneshot_fires_once_then_is_gone(void **state)
{
	struct kevent ev;
	int64_t deadline_ns;
	int kq;

	(void)state;
	kq = t_new_kq();
	deadline_ns = real_ns() + 60 * MS;
	t_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT,
	    NOTE_ABSTIME | NOTE_NSECONDS, deadline_ns, NULL);
	ev = wait_one(kq, 2000);
	assert_true(real_ns() >= deadline_ns);
	assert_int_equal(ev.data, 1);
	assert_true(ev.flags & EV_ONESHOT);
	sleep_ms(100);
	t_expect_none(kq);
	assert_not_registered(kq, 1);
}

static void
check_abstime_fires_at_once(unsigned int unit, int64_t data)
{
	struct kevent ev;
	int kq;

	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_ABSTIME | unit, data, NULL);
	ev = wait_one(kq, 2000);
	assert_int_equal(ev.ident, 1);
	assert_int_equal(ev.data, 1);
	assert_int_equal(ev.fflags, 0);
	t_change(kq, 1, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
}

static void
timer_abstime_in_the_past_fires_at_once(void **state)
{
	(void)state;
	check_abstime_fires_at_once(NOTE_SECONDS, real_ns() / SEC - 10);
	check_abstime_fires_at_once(NOTE_USECONDS, real_ns() / 1000 - 1);
}

static void
timer_abstime_epoch_zero_fires_at_once(void **state)
{
	(void)state;
	check_abstime_fires_at_once(0, 0);
	check_abstime_fires_at_once(NOTE_NSECONDS, 0);
}

/*
 * Far deadlines.  kq once saturated every time at INT64_MAX / 4 ns, for a
 * NOTE_ABSTIME deadline too: any deadline after that instant,
 * 2043-01-25 23:56:49 UTC, fired then, and once the wall clock is past it
 * every NOTE_ABSTIME timer fired at once.  A deadline too far to wait for
 * is a very long wait, never an early expiry.
 */
#define Y2043_NS	(INT64_MAX / 4)
#define Y2044_S		INT64_C(2335219200)	/* 2044-01-01 00:00:00 UTC */
#define Y2050_S		INT64_C(2524608000)	/* 2050-01-01 00:00:00 UTC */

/* Timer 1 at (NOTE_ABSTIME | unit, data) is not reported within 100 ms. */
static void
check_abstime_does_not_fire(unsigned int unit, int64_t data)
{
	struct kevent ev[2];
	int kq, r;

	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_ABSTIME | unit, data, NULL);
	r = wait_ev(kq, ev, 2, 100);
	if (r != 0)
		fprintf(stderr, "NOTE_ABSTIME unit %#x data %jd fired at "
		    "%jd ns\n", unit, (intmax_t)data, (intmax_t)real_ns());
	assert_int_equal(r, 0);
	t_close_now(kq);
}

/* Deadlines after 2043 and up to INT64_MAX in every unit. */
static void
check_far_deadlines_do_not_fire(void)
{
	const int64_t y2050 = Y2050_S;

	check_abstime_does_not_fire(NOTE_SECONDS, y2050);
	check_abstime_does_not_fire(NOTE_SECONDS, INT64_MAX / 2);
	check_abstime_does_not_fire(NOTE_SECONDS, INT64_MAX);
	check_abstime_does_not_fire(0, y2050 * 1000);
	check_abstime_does_not_fire(NOTE_MSECONDS, INT64_MAX);
	check_abstime_does_not_fire(NOTE_USECONDS, y2050 * 1000000);
	check_abstime_does_not_fire(NOTE_USECONDS, INT64_MAX);
	check_abstime_does_not_fire(NOTE_NSECONDS, y2050 * SEC);
	check_abstime_does_not_fire(NOTE_NSECONDS, INT64_MAX);
}

static void
timer_abstime_after_2043_or_near_int64_max_does_not_fire(void **state)
{
	(void)state;
	check_far_deadlines_do_not_fire();
}

/* The same with the wall clock on 2044-01-01 (where kq fired them all). */
static void
timer_abstime_far_deadlines_wait_when_the_wall_clock_is_after_2043(
    void **state)
{
	(void)state;
	set_wall_clock(Y2044_S * SEC);
	check_far_deadlines_do_not_fire();
}

/*
 * With the wall clock on 2044-01-01, a deadline an hour ahead in any unit
 * waits, and one 50 ms ahead (in any unit finer than seconds) fires once,
 * not before its time.
 */
static void
timer_abstime_after_2043_fires_at_its_deadline_not_at_once(void **state)
{
	static const struct { unsigned int unit; int64_t ns; } u[] = {
		{ NOTE_SECONDS, SEC }, { 0, MS }, { NOTE_MSECONDS, MS },
		{ NOTE_USECONDS, 1000 }, { NOTE_NSECONDS, 1 },
	};
	struct kevent ev;
	int64_t deadline;
	size_t i;
	int kq;

	(void)state;
	set_wall_clock(Y2044_S * SEC);
	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		check_abstime_does_not_fire(u[i].unit,
		    (real_ns() + 3600 * SEC) / u[i].ns);
	for (i = 1; i < sizeof(u) / sizeof(u[0]); i++) {
		kq = t_new_kq();
		deadline = real_ns() / u[i].ns + 50 * MS / u[i].ns;
		t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_ABSTIME | u[i].unit,
		    deadline, NULL);
		ev = wait_one(kq, 2000);
		assert_true(real_ns() / u[i].ns >= deadline);
		assert_int_equal(ev.data, 1);
		t_close_now(kq);
	}
}

/*
 * A wall clock that passes 2043-01-25 23:56:49 UTC while a 2050 deadline
 * is armed: the timer does not fire at that instant.
 */
static void
timer_abstime_2050_does_not_fire_when_the_wall_clock_passes_2043(
    void **state)
{
	(void)state;
	set_wall_clock(Y2043_NS - 30 * MS);
	check_abstime_does_not_fire(NOTE_SECONDS, Y2050_S);
	assert_true(real_ns() > Y2043_NS);
}

/*
 * Re-EV_ADD of a running timer, relative or absolute, to a deadline after
 * 2043 (wall clock in 2044): it waits; back to a near deadline, it fires.
 */
static void
timer_readd_to_far_abstime_waits_and_back_to_near_fires(void **state)
{
	struct kevent ev[2];
	int64_t deadline_ms;
	int kq;

	(void)state;
	set_wall_clock(Y2044_S * SEC);
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_MSECONDS, 30, NULL);
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_ABSTIME | NOTE_SECONDS,
	    Y2050_S, NULL);
	assert_int_equal(wait_ev(kq, ev, 2, 100), 0);
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_ABSTIME | NOTE_NSECONDS,
	    INT64_MAX, NULL);
	assert_int_equal(wait_ev(kq, ev, 2, 100), 0);
	deadline_ms = real_ns() / MS + 50;
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_ABSTIME, deadline_ms, NULL);
	ev[0] = wait_one(kq, 2000);
	assert_true(real_ns() / MS >= deadline_ms);
	assert_int_equal(ev[0].data, 1);
}

/* ------------------------------------------------------------------ */
/* Re-EV_ADD (FreeBSD's update tests)                                  */

/*
 * Re-adding a periodic timer whose expirations were not retrieved throws
 * them away and restarts it with the new period.
 */
static void
timer_readd_discards_expirations_and_restarts(void **state)
{
	struct kevent ev;
	int64_t t1;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, 0, 20, (void *)1);
	sleep_ms(100);		/* several expirations pending */
	t1 = mono_ns();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, 0, 300, (void *)2);
	t_expect_none(kq);
	ev = wait_one(kq, 3000);
	assert_true(mono_ns() - t1 >= 300 * MS);
	assert_ptr_equal(ev.udata, (void *)2);
	assert_true(ev.data >= 1);
	t_change(kq, 1, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
}

/* A one-shot that expired but was not retrieved is re-armed by re-add. */
static void
timer_readd_of_expired_oneshot_restarts_it(void **state)
{
	struct kevent ev;
	int64_t t1;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 10, NULL);
	sleep_ms(60);		/* expired, not retrieved */
	t1 = mono_ns();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 200, NULL);
	t_expect_none(kq);
	ev = wait_one(kq, 3000);
	assert_true(mono_ns() - t1 >= 200 * MS);
	assert_int_equal(ev.data, 1);
	sleep_ms(50);
	t_expect_none(kq);
	assert_not_registered(kq, 1);
}

/* Re-adding with a shorter period: the new period is in force. */
static void
timer_readd_changes_the_period(void **state)
{
	const int64_t period = 20 * MS;
	struct kevent ev;
	int64_t t1, t2, t3;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_SECONDS, 5, NULL);
	sleep_ms(50);
	t_expect_none(kq);
	t1 = mono_ns();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, NOTE_MSECONDS, 20, NULL);
	t2 = mono_ns();
	sleep_ms(300);
	t3 = mono_ns();
	ev = t_expect_one(kq);
	/* At least the periods surely elapsed, at most those possible. */
	assert_true(ev.data >= (t3 - t2) / period);
	assert_true(ev.data <= (mono_ns() - t1) / period);
	t_change(kq, 1, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
}

/* ------------------------------------------------------------------ */
/* Validation                                                          */

static void
timer_negative_data_gives_einval_entry(void **state)
{
	int kq;

	(void)state;
	kq = t_new_kq();
	expect_error_entry(kq, 1, EV_ADD, 0, -1, EINVAL);
	expect_error_entry(kq, 1, EV_ADD | EV_ONESHOT, NOTE_SECONDS,
	    INT64_MIN, EINVAL);
	expect_error_entry(kq, 1, EV_ADD, NOTE_ABSTIME | NOTE_NSECONDS, -1,
	    EINVAL);
	assert_not_registered(kq, 1);
}

static void
timer_unknown_fflags_bit_gives_einval(void **state)
{
	static const unsigned int bad[] = {
		0x20, 0x40, 0x100, 0x80000000u, NOTE_MSECONDS | 0x1000,
	};
	size_t i;
	int kq;

	(void)state;
	kq = t_new_kq();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_error_entry(kq, 1, EV_ADD, bad[i], 100, EINVAL);
	assert_not_registered(kq, 1);
}

static void
timer_two_units_give_einval(void **state)
{
	int kq;

	(void)state;
	kq = t_new_kq();
	expect_error_entry(kq, 1, EV_ADD, NOTE_SECONDS | NOTE_MSECONDS, 1,
	    EINVAL);
	expect_error_entry(kq, 1, EV_ADD, NOTE_USECONDS | NOTE_NSECONDS, 1,
	    EINVAL);
	expect_error_entry(kq, 1, EV_ADD | EV_ONESHOT,
	    NOTE_SECONDS | NOTE_MSECONDS | NOTE_USECONDS | NOTE_NSECONDS, 1,
	    EINVAL);
	assert_not_registered(kq, 1);
}

/* ------------------------------------------------------------------ */
/* Enable, disable, delete                                             */

/*
 * A disabled timer keeps running on its original schedule: the periods
 * that pass while it is disabled are delivered on EV_ENABLE, and enabling
 * does not restart the period.  Checked by total count: by time t at
 * least floor((t - added) / period) expirations must have been reported.
 */
static void
timer_disable_keeps_period_and_enable_delivers_missed(void **state)
{
	const int64_t period = 100 * MS;
	struct kevent ev;
	int64_t t0, t_added, t_en, t_check, t_end, total;
	int kq;

	(void)state;
	kq = t_new_kq();
	t0 = mono_ns();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, 0, 100, NULL);
	t_added = mono_ns();
	t_change(kq, 1, EVFILT_TIMER, EV_DISABLE, 0, 0, NULL);
	sleep_until(t_added + 250 * MS);
	t_expect_none(kq);
	t_en = mono_ns();
	t_change(kq, 1, EVFILT_TIMER, EV_ENABLE, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_true(ev.data >= (t_en - t_added) / period);
	assert_true(ev.data >= 2);
	total = ev.data;
	/* Restarted at enable, only one more period would end by 4.2. */
	sleep_until(t_added + 420 * MS);
	t_check = mono_ns();
	ev = t_expect_one(kq);
	total += ev.data;
	t_end = mono_ns();
	assert_true(total >= (t_check - t_added) / period);
	assert_true(total <= (t_end - t0) / period);
	t_change(kq, 1, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
}

/* EV_DELETE stops a timer and drops its undelivered expirations. */
static void
timer_delete_stops_it(void **state)
{
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, 0, 10, NULL);
	(void)wait_one(kq, 2000);
	sleep_ms(50);		/* expirations pending */
	t_change(kq, 1, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
	t_expect_none(kq);
	sleep_ms(100);
	t_expect_none(kq);
	assert_not_registered(kq, 1);
}

/* ------------------------------------------------------------------ */
/* Many timers                                                         */

/*
 * N one-shot timers in one kqueue with deadlines staggered over about a
 * second: each is delivered exactly once, none before its deadline, and
 * the process holds no descriptor per timer.  udata carries a lower bound
 * of the deadline (ns since t0): the batch's start time plus the offset.
 */
static void
timer_million_oneshots_each_delivered_once_never_early(void **state)
{
#ifdef T_ASAN
	size_t n = 200000;
#else
	size_t n = 1000000;
#endif
	const size_t batch = 10000;
	struct kevent *ch, *ev;
	unsigned char *seen;
	size_t i, j, got = 0, dup = 0, early = 0, bad = 0;
	int64_t t0, deadline;
	int kq, fds0, fds1;

	(void)state;
#if defined(__FreeBSD__)
	{
		/* FreeBSD caps timers at kern.kq_calloutmax. */
		unsigned int max = 0;
		size_t len = sizeof(max);

		if (sysctlbyname("kern.kq_calloutmax", &max, &len, NULL, 0) == 0 &&
		    max > 64 && n > max - 64)
			n = max - 64;
	}
#endif
	seen = calloc(n, 1);
	ch = calloc(batch, sizeof(*ch));
	ev = calloc(4096, sizeof(*ev));
	assert_non_null(seen);
	assert_non_null(ch);
	assert_non_null(ev);
	fds0 = t_count_fds();
	kq = t_new_kq();
	t0 = mono_ns();
	for (i = 0; i < n; i += batch) {
		int64_t start = mono_ns() - t0;
		size_t m = n - i < batch ? n - i : batch;

		for (j = 0; j < m; j++) {
			int64_t off = 1 * MS + (int64_t)((i + j) * (SEC / n));

			EV_SET(&ch[j], i + j, EVFILT_TIMER, EV_ADD | EV_ONESHOT,
			    NOTE_NSECONDS, off, (void *)(intptr_t)(start + off));
		}
		assert_int_equal(kevent(kq, ch, (int)m, NULL, 0, NULL), 0);
	}
	fds1 = t_count_fds();
	if (fds0 >= 0)
		assert_true(fds1 - fds0 <= 5);	/* the kqueue and a few */

	deadline = mono_ns() + 60 * SEC;
	while (got < n && mono_ns() < deadline) {
		int r = wait_ev(kq, ev, 4096, 200);
		int64_t now = mono_ns() - t0;

		for (int k = 0; k < r; k++) {
			uintptr_t id = ev[k].ident;

			if (ev[k].filter != EVFILT_TIMER || id >= n ||
			    ev[k].data != 1 || (ev[k].flags & EV_ERROR)) {
				bad++;
				continue;
			}
			if (seen[id]++)
				dup++;
			else
				got++;
			if (now < (int64_t)(intptr_t)ev[k].udata)
				early++;
		}
	}
	sleep_ms(20);
	t_expect_none(kq);
	if (got != n || dup || early || bad)
		fprintf(stderr, "%zu timers: %zu delivered, %zu duplicates, "
		    "%zu early, %zu malformed\n", n, got, dup, early, bad);
	assert_int_equal(bad, 0);
	assert_int_equal(dup, 0);
	assert_int_equal(early, 0);
	assert_int_equal(got, n);
	free(seen);
	free(ch);
	free(ev);
}

/* The number of timers is not bound by RLIMIT_NOFILE. */
static void
timer_count_is_not_limited_by_rlimit_nofile(void **state)
{
	const int n = 2000;	/* below FreeBSD's default kq_calloutmax */
	struct rlimit old, low;
	struct kevent ch;
	int kq, fds, i, failed = 0;

	(void)state;
	kq = t_new_kq();
	fds = t_count_fds();
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)(fds > 0 ? fds : kq + 1) + 16;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (i = 0; i < n; i++) {
		EV_SET(&ch, (uintptr_t)i, EVFILT_TIMER, EV_ADD, NOTE_SECONDS,
		    60, NULL);
		if (kevent(kq, &ch, 1, NULL, 0, NULL) != 0) {
			if (failed++ == 0)
				fprintf(stderr, "timer %d: %s\n", i,
				    strerror(errno));
		}
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(failed, 0);
	for (i = 0; i < n; i++)
		assert_int_equal(change_errno(kq, (uintptr_t)i, EV_DELETE, 0, 0),
		    0);
}

/*
 * kqueue() + a timer + close(), many times: no descriptor is leaked.  kq
 * cannot see close(): a closed kqueue's internal descriptors go when its
 * number is reused, so the count is taken after a first cycle (steady
 * state) and must not grow from there.
 */
static void
timer_kqueue_create_close_cycles_leak_no_fds(void **state)
{
#ifdef T_ASAN
	const int cycles = 20000;
#else
	const int cycles = 100000;
#endif
	struct kevent ch[2];
	int i, kq, fds0 = -1, fds1, errors = 0;

	(void)state;
	for (i = 0; i <= cycles; i++) {
		if (i == 1)
			fds0 = t_count_fds();
		kq = kqueue();
		if (kq < 0) {
			errors++;
			break;
		}
		EV_SET(&ch[0], 1, EVFILT_TIMER, EV_ADD, 0, 1000, NULL);
		EV_SET(&ch[1], 2, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 0, NULL);
		if (kevent(kq, ch, 2, NULL, 0, NULL) != 0)
			errors++;
		if ((i & 1) && kevent(kq, NULL, 0, ch, 2, &t_zero) < 0)
			errors++;
		if (close(kq) != 0)
			errors++;
	}
	fds1 = t_count_fds();
	assert_int_equal(errors, 0);
	if (fds1 != fds0)
		fprintf(stderr, "descriptors: %d after one cycle, %d after %d\n",
		    fds0, fds1, cycles + 1);
	assert_int_equal(fds1, fds0);
}

/* ------------------------------------------------------------------ */
/* Wake-up and independence                                            */

static void
timer_wakes_kevent_blocked_without_timeout(void **state)
{
	struct kevent ev;
	int64_t t0;
	int kq, r;

	(void)state;
	kq = t_new_kq();
	t0 = mono_ns();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 100, NULL);
	t_watchdog(5);
	r = kevent(kq, NULL, 0, &ev, 1, NULL);
	alarm(0);
	if (r < 0)
		fprintf(stderr, "kevent: %s\n", strerror(errno));
	assert_int_equal(r, 1);
	assert_true(mono_ns() - t0 >= 100 * MS);
	assert_int_equal(ev.ident, 1);
	assert_int_equal(ev.filter, EVFILT_TIMER);
}

/* Timers with different idents run and are deleted independently. */
static void
timer_different_idents_are_independent(void **state)
{
	struct kevent ev;
	int64_t t0;
	int kq;

	(void)state;
	kq = t_new_kq();
	t0 = mono_ns();
	/* Far apart, so that a stalled machine does not bring two at once
	   (attack helper 53: 1 at 30 ms and 3 at 50 ms came together). */
	t_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 30, (void *)1);
	t_change(kq, 2, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 300, (void *)2);
	t_change(kq, 3, EVFILT_TIMER, EV_ADD, 0, 1000, (void *)3);
	ev = wait_one(kq, 2000);
	assert_int_equal(ev.ident, 1);
	assert_ptr_equal(ev.udata, (void *)1);
	/* Deleting 3 leaves 2 alone, and 3 never fires. */
	t_change(kq, 3, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
	ev = wait_one(kq, 3000);
	assert_int_equal(ev.ident, 2);
	assert_ptr_equal(ev.udata, (void *)2);
	assert_true(mono_ns() - t0 >= 300 * MS);
	while (mono_ns() - t0 < 1100 * MS)
		sleep_ms(50);
	t_expect_none(kq);
}

/* The same ident in two kqueues names two independent timers. */
static void
timer_same_ident_in_two_kqueues_is_independent(void **state)
{
	struct kevent ev;
	int64_t t0;
	int kq1, kq2;

	(void)state;
	kq1 = t_new_kq();
	kq2 = t_new_kq();
	t0 = mono_ns();
	t_change(kq1, 7, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 30, (void *)1);
	t_change(kq2, 7, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 300, (void *)2);
	ev = wait_one(kq1, 2000);
	assert_ptr_equal(ev.udata, (void *)1);
	if (mono_ns() - t0 < 300 * MS)
		t_expect_none(kq2);
	assert_not_registered(kq1, 7);
	ev = wait_one(kq2, 3000);
	assert_ptr_equal(ev.udata, (void *)2);
	assert_true(mono_ns() - t0 >= 300 * MS);
	/* Deleting in one kqueue does not touch the other. */
	t_change(kq1, 8, EVFILT_TIMER, EV_ADD, 0, 20, NULL);
	t_change(kq2, 8, EVFILT_TIMER, EV_ADD, 0, 20, NULL);
	t_change(kq1, 8, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
	ev = wait_one(kq2, 2000);
	assert_int_equal(ev.ident, 8);
	sleep_ms(60);
	t_expect_none(kq1);
}

#define T(f) cmocka_unit_test_teardown(f, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(timer_note_seconds_fires_no_earlier_than_asked),
		T(timer_default_unit_is_milliseconds),
		T(timer_note_mseconds_fires_no_earlier_than_asked),
		T(timer_note_useconds_fires_no_earlier_than_asked),
		T(timer_note_nseconds_fires_no_earlier_than_asked),
		T(timer_periodic_fires_repeatedly_with_data_one),
		T(timer_periodic_counts_overruns_in_data),
		T(timer_relative_returns_ev_clear_and_fflags_zero),
		T(timer_oneshot_fires_once_then_delete_gives_enoent),
		T(timer_periodic_zero_fires_repeatedly_as_one_unit),
		T(timer_oneshot_zero_fires_at_once),
		T(timer_abstime_fires_once_not_before_deadline_and_stays_triggered),
		T(timer_abstime_with_ev_clear_is_reported_once),
		T(timer_abstime_never_fires_before_its_wall_clock_time),
		T(timer_abstime_oneshot_fires_once_then_is_gone),
		T(timer_abstime_in_the_past_fires_at_once),
		T(timer_abstime_epoch_zero_fires_at_once),
		T(timer_abstime_after_2043_or_near_int64_max_does_not_fire),
		T(timer_abstime_far_deadlines_wait_when_the_wall_clock_is_after_2043),
		T(timer_abstime_after_2043_fires_at_its_deadline_not_at_once),
		T(timer_abstime_2050_does_not_fire_when_the_wall_clock_passes_2043),
		T(timer_readd_to_far_abstime_waits_and_back_to_near_fires),
		T(timer_readd_discards_expirations_and_restarts),
		T(timer_readd_of_expired_oneshot_restarts_it),
		T(timer_readd_changes_the_period),
		T(timer_negative_data_gives_einval_entry),
		T(timer_unknown_fflags_bit_gives_einval),
		T(timer_two_units_give_einval),
		T(timer_disable_keeps_period_and_enable_delivers_missed),
		T(timer_delete_stops_it),
		T(timer_million_oneshots_each_delivered_once_never_early),
		T(timer_count_is_not_limited_by_rlimit_nofile),
		T(timer_kqueue_create_close_cycles_leak_no_fds),
		T(timer_wakes_kevent_blocked_without_timeout),
		T(timer_different_idents_are_independent),
		T(timer_same_ident_in_two_kqueues_is_independent),
	};

	return t_run_group(tests, NULL, NULL);
}
