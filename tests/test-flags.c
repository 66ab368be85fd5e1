/*
 * test-flags: the EV_* flag semantics of kevent().
 *
 * udata handling, the flags echoed on delivered events, level-triggered
 * default, EV_ONESHOT, EV_CLEAR, EV_DISPATCH, EV_ENABLE/EV_DISABLE,
 * EV_FORCEONESHOT, the independence of READ and WRITE knotes on one
 * descriptor, round-robin fairness, and kq's EV_WAKEONE extension.
 * FreeBSD 14's kern_event.c (kqueue_register, kqueue_scan) is the
 * reference; EV_WAKEONE tests are compiled only where the flag exists.
 */
#include "helpers.h"

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

/* ------------------------------------------------------------------ */
/* Descriptor and child bookkeeping, cleaned up by the teardown.       */

static pid_t children[4];
static int n_children;
static char sock_dir[64];
static char sock_path[128];

static int
teardown(void **state)
{
	(void)state;
	alarm(0);
	t_close_tracked();
	while (n_children > 0) {
		pid_t pid = children[--n_children];

		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (sock_path[0] != '\0') {
		unlink(sock_path);
		sock_path[0] = '\0';
	}
	if (sock_dir[0] != '\0') {
		rmdir(sock_dir);
		sock_dir[0] = '\0';
	}
	return 0;
}

static void
new_pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	t_track(sv[0]);
	t_track(sv[1]);
}

static void
put(int fd, size_t n)
{
	char buf[256];

	assert_true(n <= sizeof(buf));
	memset(buf, 'x', n);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
}

static void
take(int fd, size_t n)
{
	char buf[256];

	assert_true(n <= sizeof(buf));
	assert_int_equal(read(fd, buf, n), (ssize_t)n);
}

static int
change1(int kq, uintptr_t ident, short filter, unsigned short flags,
    void *udata)
{
	struct kevent kev;

	EV_SET(&kev, ident, filter, flags, 0, 0, udata);
	return kevent(kq, &kev, 1, NULL, 0, NULL);
}

static void
assert_not_registered(int kq, uintptr_t ident, short filter)
{
	errno = 0;
	assert_int_equal(change1(kq, ident, filter, EV_DELETE, NULL), -1);
	assert_int_equal(errno, ENOENT);
}

/* Find the event for (ident, filter) in ev[0..n); NULL if absent. */
static const struct kevent *
find_ev(const struct kevent *ev, int n, uintptr_t ident, short filter)
{
	int i;

	for (i = 0; i < n; i++)
		if (ev[i].ident == ident && ev[i].filter == filter)
			return &ev[i];
	return NULL;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------------ */
/* udata                                                               */

static void
check_udata_roundtrip(void *udata)
{
	struct kevent ev;
	int kq, sv[2];

	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, udata);
	put(sv[1], 1);
	ev = t_expect_one(kq);
	assert_int_equal((uintptr_t)ev.udata, (uintptr_t)udata);
	t_close_now(sv[0]);
	t_close_now(sv[1]);
	t_close_now(kq);
}

static void
udata_is_returned_bit_exact(void **state)
{
	static long obj;

	(void)state;
	check_udata_roundtrip((void *)((uintptr_t)&obj | 1));
	check_udata_roundtrip((void *)UINTPTR_MAX);
	check_udata_roundtrip((void *)(UINTPTR_MAX - 1));
	check_udata_roundtrip(NULL);
	check_udata_roundtrip((void *)(uintptr_t)0x8000000000000001ull);
}

static void
readd_replaces_udata(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)0x100);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)0x200);
	put(sv[1], 1);
	ev = t_expect_one(kq);
	assert_ptr_equal(ev.udata, (void *)0x200);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_ptr_equal(ev.udata, NULL);
}

static void
keepudata_on_modify_keeps_udata(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)0x111);
	put(sv[1], 1);
	t_change(kq, sv[0], EVFILT_READ, EV_DISABLE | EV_KEEPUDATA, 0, 0,
	    (void *)0x222);
	t_expect_none(kq);
	t_change(kq, sv[0], EVFILT_READ, EV_ENABLE | EV_KEEPUDATA, 0, 0,
	    (void *)0x333);
	ev = t_expect_one(kq);
	assert_ptr_equal(ev.udata, (void *)0x111);
	/* A keepudata enable of an already enabled knote, too. */
	t_change(kq, sv[0], EVFILT_READ, EV_ENABLE | EV_KEEPUDATA, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_ptr_equal(ev.udata, (void *)0x111);
}

/*
 * kqueue_register(): every modify (not only EV_ADD) stores the change's
 * udata unless EV_KEEPUDATA is given.
 */
static void
modify_without_keepudata_replaces_udata(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)0x111);
	put(sv[1], 1);
	t_change(kq, sv[0], EVFILT_READ, EV_DISABLE, 0, 0, (void *)0x222);
	t_change(kq, sv[0], EVFILT_READ, EV_ENABLE, 0, 0, (void *)0x333);
	ev = t_expect_one(kq);
	assert_ptr_equal(ev.udata, (void *)0x333);
}

/* ------------------------------------------------------------------ */
/* Returned flags                                                      */

static void
add_and_enable_are_not_echoed(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_ENABLE, 0, 0, NULL);
	put(sv[1], 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags, 0);
	t_change(kq, sv[0], EVFILT_READ, EV_DISABLE, 0, 0, NULL);
	t_change(kq, sv[0], EVFILT_READ, EV_ENABLE, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags, 0);
}

static void
check_echoed(unsigned short extra)
{
	struct kevent ev;
	int kq, sv[2];

	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | extra, 0, 0, NULL);
	put(sv[1], 1);
	ev = t_expect_one(kq);
	if (ev.flags != extra)
		fprintf(stderr, "given %#x, got flags %#x\n", extra, ev.flags);
	assert_int_equal(ev.flags, extra);
	t_close_now(sv[0]);
	t_close_now(sv[1]);
	t_close_now(kq);
}

static void
oneshot_clear_and_dispatch_are_echoed(void **state)
{
	(void)state;
	check_echoed(EV_ONESHOT);
	check_echoed(EV_CLEAR);
	check_echoed(EV_DISPATCH);
	check_echoed(EV_CLEAR | EV_DISPATCH);
}

static void
receipt_given_with_add_is_echoed_on_events(void **state)
{
	struct kevent ch, ev[2];
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	EV_SET(&ch, sv[0], EVFILT_READ, EV_ADD | EV_RECEIPT, 0, 0, NULL);
	assert_int_equal(kevent(kq, &ch, 1, ev, 2, &t_zero), 1);
	assert_int_equal(ev[0].flags, EV_ERROR);
	assert_int_equal(ev[0].data, 0);
	put(sv[1], 1);
	ev[0] = t_expect_one(kq);
	assert_int_equal(ev[0].flags, EV_RECEIPT);
}

/* ------------------------------------------------------------------ */
/* Level-triggered default                                             */

static void
read_is_level_triggered_by_default(void **state)
{
	struct kevent ev;
	int kq, sv[2], i;

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_expect_none(kq);
	put(sv[1], 1);
	for (i = 0; i < 5; i++) {
		ev = t_expect_one(kq);
		assert_int_equal(ev.ident, (uintptr_t)sv[0]);
		assert_int_equal(ev.filter, EVFILT_READ);
		assert_int_equal(ev.data, 1);
	}
	take(sv[0], 1);
	t_expect_none(kq);
}

static void
read_data_is_bytes_readable_and_shrinks_after_partial_read(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	put(sv[1], 10);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 10);
	take(sv[0], 4);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 6);
	put(sv[1], 100);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 106);
	take(sv[0], 106);
	t_expect_none(kq);
}

/* ------------------------------------------------------------------ */
/* EV_ONESHOT                                                          */

static void
oneshot_is_reported_once_then_deleted(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_ONESHOT, 0, 0, (void *)4);
	t_expect_none(kq);
	put(sv[1], 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	assert_int_equal(ev.flags, EV_ONESHOT);
	assert_ptr_equal(ev.udata, (void *)4);
	t_expect_none(kq);
	put(sv[1], 1);
	t_expect_none(kq);
	assert_not_registered(kq, sv[0], EVFILT_READ);
}

/* ------------------------------------------------------------------ */
/* EV_CLEAR                                                            */

static void
clear_reports_once_per_new_activity(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	t_expect_none(kq);
	put(sv[1], 2);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 2);
	assert_int_equal(ev.flags, EV_CLEAR);
	/* Still readable, but nothing new happened. */
	t_expect_none(kq);
	t_expect_none(kq);
	put(sv[1], 3);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 5);
	t_expect_none(kq);
}

/* FreeBSD read.c test_kevent_socket_clear: a read is not new activity. */
static void
clear_partial_read_does_not_retrigger(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	put(sv[1], 2);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 2);
	take(sv[0], 1);
	t_expect_none(kq);
}

/* ------------------------------------------------------------------ */
/* EV_DISPATCH                                                         */

static void
dispatch_reports_once_then_disables(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	put(sv[1], 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags, EV_DISPATCH);
	assert_int_equal(ev.data, 1);
	t_expect_none(kq);
	/* More data does not wake a disabled knote. */
	put(sv[1], 1);
	t_expect_none(kq);
}

static void
dispatch_enable_rearms_and_fires_when_still_ready(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	put(sv[1], 3);
	ev = t_expect_one(kq);
	t_expect_none(kq);
	t_change(kq, sv[0], EVFILT_READ, EV_ENABLE, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags, EV_DISPATCH);
	assert_int_equal(ev.data, 3);
	t_expect_none(kq);
	/* Drained, re-enabled: quiet until new data, then once. */
	take(sv[0], 3);
	t_change(kq, sv[0], EVFILT_READ, EV_ENABLE, 0, 0, NULL);
	t_expect_none(kq);
	put(sv[1], 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 1);
	t_expect_none(kq);
}

static void
disabled_dispatch_knote_can_be_deleted(void **state)
{
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	put(sv[1], 1);
	(void)t_expect_one(kq);
	t_change(kq, sv[0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
	assert_not_registered(kq, sv[0], EVFILT_READ);
	t_expect_none(kq);
}

/* Fill fd's send buffer (the peer reads nothing). */
static void
fill_sendbuf(int fd)
{
	char buf[4096];

	memset(buf, 'f', sizeof(buf));
	set_nonblock(fd);
	while (write(fd, buf, sizeof(buf)) > 0)
		;
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
}

static void
dispatch_read_event_does_not_silence_write_knote_on_same_socket(void **state)
{
	struct kevent ev;
	char buf[4096];
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	fill_sendbuf(sv[0]);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	t_expect_none(kq);
	put(sv[1], 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.filter, EVFILT_READ);
	t_expect_none(kq);
	/* The peer drains: the still-enabled WRITE knote fires, once. */
	set_nonblock(sv[1]);
	while (read(sv[1], buf, sizeof(buf)) > 0)
		;
	ev = t_expect_one(kq);
	assert_int_equal(ev.filter, EVFILT_WRITE);
	assert_int_equal(ev.flags, EV_DISPATCH);
	t_expect_none(kq);
}

static void
dispatch_event_left_for_lack_of_room_is_reported_next_call(void **state)
{
	struct kevent ev[2];
	int kq, a[2], b[2];

	(void)state;
	kq = t_new_kq();
	new_pair(a);
	new_pair(b);
	t_change(kq, a[0], EVFILT_READ, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	t_change(kq, b[0], EVFILT_READ, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	put(a[1], 1);
	put(b[1], 2);
	assert_int_equal(t_poll(kq, &ev[0], 1), 1);
	assert_int_equal(t_poll(kq, &ev[1], 1), 1);
	assert_true((ev[0].ident == (uintptr_t)a[0] &&
	    ev[1].ident == (uintptr_t)b[0]) ||
	    (ev[0].ident == (uintptr_t)b[0] &&
	    ev[1].ident == (uintptr_t)a[0]));
	t_expect_none(kq);
}

static void
dispatch_knote_whose_data_was_consumed_fires_on_new_data(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	put(sv[1], 1);
	take(sv[0], 1);		/* gone before kevent() looked */
	t_expect_none(kq);
	/* Still enabled: new data is reported, once. */
	put(sv[1], 2);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 2);
	t_expect_none(kq);
}

static void
dispatch_with_lowat_fires_once_the_threshold_is_reached(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_DISPATCH, NOTE_LOWAT, 5,
	    NULL);
	put(sv[1], 1);
	t_expect_none(kq);	/* below the mark: still enabled */
	put(sv[1], 4);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 5);
	t_expect_none(kq);
}

static void
dispatch_event_seen_by_outer_kqueue_then_consumed_fires_on_new_data(
    void **state)
{
	struct kevent ev;
	int kq, outer, sv[2];

	(void)state;
	kq = t_new_kq();
	outer = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	t_change(outer, kq, EVFILT_READ, EV_ADD, 0, 0, NULL);
	put(sv[1], 1);
	ev = t_expect_one(outer);
	assert_int_equal(ev.data, 1);
	take(sv[0], 1);		/* gone before the inner kevent() looked */
	t_expect_none(kq);
	put(sv[1], 3);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 3);
	t_expect_none(kq);
}

static void
dispatch_event_counted_by_outer_kqueue_is_still_delivered(void **state)
{
	struct kevent ev;
	int kq, outer, sv[2];

	(void)state;
	kq = t_new_kq();
	outer = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	t_change(outer, kq, EVFILT_READ, EV_ADD, 0, 0, NULL);
	put(sv[1], 1);
	ev = t_expect_one(outer);
	assert_int_equal(ev.ident, (uintptr_t)kq);
	assert_int_equal(ev.data, 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	t_expect_none(kq);
	t_expect_none(outer);
	/* Re-enabled, still ready: both see it again. */
	t_change(kq, sv[0], EVFILT_READ, EV_ENABLE, 0, 0, NULL);
	ev = t_expect_one(outer);
	assert_int_equal(ev.data, 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
}

/* ------------------------------------------------------------------ */
/* EV_ENABLE / EV_DISABLE                                              */

static void
disable_suppresses_events(void **state)
{
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	put(sv[1], 1);
	t_change(kq, sv[0], EVFILT_READ, EV_DISABLE, 0, 0, NULL);
	t_expect_none(kq);
	put(sv[1], 1);
	t_expect_none(kq);
	/* A disabled knote still exists. */
	t_change(kq, sv[0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
}

static void
add_with_disable_registers_a_disabled_knote(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	put(sv[1], 1);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_DISABLE, 0, 0, NULL);
	t_expect_none(kq);
	t_change(kq, sv[0], EVFILT_READ, EV_ENABLE, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	assert_int_equal(ev.flags, 0);
}

static void
enable_of_ready_knote_fires_at_once(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_change(kq, sv[0], EVFILT_READ, EV_DISABLE, 0, 0, NULL);
	/* Becomes ready while disabled. */
	put(sv[1], 2);
	t_expect_none(kq);
	t_change(kq, sv[0], EVFILT_READ, EV_ENABLE, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	assert_int_equal(ev.data, 2);
	/* Same with an edge-triggered knote: the enable re-evaluates it. */
	t_change(kq, sv[0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
	t_change(kq, sv[1], EVFILT_READ, EV_ADD | EV_CLEAR | EV_DISABLE, 0, 0,
	    NULL);
	put(sv[0], 1);
	t_expect_none(kq);
	t_change(kq, sv[1], EVFILT_READ, EV_ENABLE, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[1]);
	assert_int_equal(ev.data, 1);
}

/* ------------------------------------------------------------------ */
/* EV_ADD on an existing knote, EV_FORCEONESHOT                        */

static void
add_on_existing_knote_keeps_triggered_state(void **state)
{
	struct kevent ev;
	int kq, sv[2], p[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)1);
	put(sv[1], 1);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)2);
	ev = t_expect_one(kq);
	assert_ptr_equal(ev.udata, (void *)2);
	assert_int_equal(ev.data, 1);

	/* Edge-triggered: activity not yet collected survives a re-add. */
	assert_int_equal(pipe(p), 0);
	t_track(p[0]);
	t_track(p[1]);
	t_change(kq, p[0], EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, (void *)3);
	put(p[1], 4);
	t_change(kq, p[0], EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, (void *)4);
	struct kevent evs[4];
	int n = t_poll(kq, evs, 4);
	const struct kevent *e = find_ev(evs, n, p[0], EVFILT_READ);
	assert_non_null(e);
	assert_ptr_equal(e->udata, (void *)4);
	assert_int_equal(e->data, 4);
}

/*
 * kqueue_register(): EV_FORCEONESHOT on an existing knote sets EV_ONESHOT
 * and KNOTE_ACTIVATE()s it, so it is delivered even though the filter's
 * condition is false, and then dropped like any one-shot knote.
 */
static void
forceoneshot_on_existing_knote_fires_now_and_deletes(void **state)
{
	struct kevent ch, ev[2];
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)6);
	t_expect_none(kq);
	EV_SET(&ch, sv[0], EVFILT_READ, EV_FORCEONESHOT, 0, 0, (void *)6);
	assert_int_equal(kevent(kq, &ch, 1, ev, 2, &t_zero), 1);
	assert_int_equal(ev[0].ident, (uintptr_t)sv[0]);
	assert_int_equal(ev[0].filter, EVFILT_READ);
	assert_int_equal(ev[0].flags & (EV_ONESHOT | EV_ERROR), EV_ONESHOT);
	assert_ptr_equal(ev[0].udata, (void *)6);
	t_expect_none(kq);
	assert_not_registered(kq, sv[0], EVFILT_READ);
}

static void
forceoneshot_on_ready_knote_delivers_once(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	put(sv[1], 2);
	t_change(kq, sv[0], EVFILT_READ, EV_FORCEONESHOT, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_ONESHOT, EV_ONESHOT);
	assert_int_equal(ev.data, 2);
	t_expect_none(kq);
	assert_not_registered(kq, sv[0], EVFILT_READ);
}

static void
forceoneshot_on_missing_knote_fails_enoent(void **state)
{
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	errno = 0;
	assert_int_equal(change1(kq, sv[0], EVFILT_READ, EV_FORCEONESHOT,
	    NULL), -1);
	assert_int_equal(errno, ENOENT);
}

/* ------------------------------------------------------------------ */
/* READ and WRITE knotes on one descriptor                             */

static void
clear_on_read_does_not_make_write_edge_triggered(void **state)
{
	struct kevent ev[4];
	int kq, sv[2], n, i;

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	put(sv[1], 1);
	n = t_poll(kq, ev, 4);
	assert_int_equal(n, 2);
	assert_non_null(find_ev(ev, n, sv[0], EVFILT_READ));
	assert_non_null(find_ev(ev, n, sv[0], EVFILT_WRITE));
	for (i = 0; i < 3; i++) {
		n = t_poll(kq, ev, 4);
		assert_int_equal(n, 1);
		assert_int_equal(ev[0].filter, EVFILT_WRITE);
		assert_int_equal(ev[0].flags, 0);
		assert_true(ev[0].data > 0);
	}
}

static void
clear_on_write_does_not_make_read_edge_triggered(void **state)
{
	struct kevent ev[4];
	int kq, sv[2], n, i;

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD | EV_CLEAR, 0, 0, NULL);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	put(sv[1], 1);
	n = t_poll(kq, ev, 4);
	assert_int_equal(n, 2);
	for (i = 0; i < 3; i++) {
		n = t_poll(kq, ev, 4);
		assert_int_equal(n, 1);
		assert_int_equal(ev[0].filter, EVFILT_READ);
		assert_int_equal(ev[0].data, 1);
	}
}

static void
disable_on_write_does_not_stop_read(void **state)
{
	struct kevent ev[4];
	int kq, sv[2], n;

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	t_change(kq, sv[0], EVFILT_WRITE, EV_DISABLE, 0, 0, NULL);
	t_expect_none(kq);
	put(sv[1], 1);
	n = t_poll(kq, ev, 4);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].filter, EVFILT_READ);
	/* And disabling READ leaves an enabled WRITE reporting. */
	t_change(kq, sv[0], EVFILT_READ, EV_DISABLE, 0, 0, NULL);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ENABLE, 0, 0, NULL);
	n = t_poll(kq, ev, 4);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].filter, EVFILT_WRITE);
}

static void
oneshot_on_read_does_not_delete_write(void **state)
{
	struct kevent ev[4];
	int kq, sv[2], n;

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD | EV_ONESHOT, 0, 0, NULL);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	put(sv[1], 1);
	n = t_poll(kq, ev, 4);
	assert_int_equal(n, 2);
	n = t_poll(kq, ev, 4);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].filter, EVFILT_WRITE);
	assert_not_registered(kq, sv[0], EVFILT_READ);
	t_change(kq, sv[0], EVFILT_WRITE, EV_DELETE, 0, 0, NULL);
	t_expect_none(kq);
}

static void
delete_of_read_does_not_delete_write(void **state)
{
	struct kevent ev[4];
	int kq, sv[2], n;

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)1);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD, 0, 0, (void *)2);
	t_change(kq, sv[0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
	put(sv[1], 1);
	n = t_poll(kq, ev, 4);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].filter, EVFILT_WRITE);
	assert_ptr_equal(ev[0].udata, (void *)2);
}

/* ------------------------------------------------------------------ */
/* Fairness                                                            */

/*
 * kqueue_scan() re-appends a delivered level-triggered knote at the tail
 * of the queue, so a short eventlist hands out every ready knote before
 * any repeats.
 */
static void
level_triggered_events_round_robin(void **state)
{
	enum { N = 10, PER_CALL = 3, CALLS = 4 };
	int pairs[N][2], seen[N], order[PER_CALL * CALLS];
	struct kevent ev[PER_CALL];
	int kq, i, j, n, k = 0;

	(void)state;
	kq = t_new_kq();
	for (i = 0; i < N; i++) {
		new_pair(pairs[i]);
		put(pairs[i][1], 1);
		t_change(kq, pairs[i][0], EVFILT_READ, EV_ADD, 0, 0,
		    (void *)(uintptr_t)(i + 1));
	}
	for (j = 0; j < CALLS; j++) {
		n = t_poll(kq, ev, PER_CALL);
		assert_int_equal(n, PER_CALL);
		for (i = 0; i < n; i++) {
			uintptr_t u = (uintptr_t)ev[i].udata;

			assert_true(u >= 1 && u <= N);
			assert_int_equal(ev[i].ident, (uintptr_t)pairs[u - 1][0]);
			order[k++] = (int)u - 1;
		}
	}
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < N; i++) {
		if (seen[order[i]])
			fprintf(stderr, "socket %d repeated at position %d "
			    "before all %d were seen\n", order[i], i, N);
		assert_false(seen[order[i]]);
		seen[order[i]] = 1;
	}
}

struct delayed_write {
	pthread_t	thr;
	int		fd;
	int		delay_ms;
};

static void *
delayed_write_main(void *arg)
{
	struct delayed_write *dw = arg;

	sleep_ms(dw->delay_ms);
	if (write(dw->fd, "w", 1) != 1)
		abort();
	return NULL;
}

static void
delayed_write_start(struct delayed_write *dw, int fd, int delay_ms)
{
	sigset_t set, old;

	dw->fd = fd;
	dw->delay_ms = delay_ms;
	/* The watchdog's SIGALRM must go to the test thread. */
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	assert_int_equal(pthread_create(&dw->thr, NULL, delayed_write_main, dw), 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * A level-triggered knote whose condition went false before the scan is
 * dropped silently; kqueue_scan() then goes back to sleep instead of
 * returning 0, so an infinite wait only returns with a real event.
 */
static void
infinite_wait_never_returns_zero(void **state)
{
	struct delayed_write dw;
	struct kevent ev[4];
	int kq, a[2], b[2], n;

	(void)state;
	kq = t_new_kq();
	new_pair(a);
	new_pair(b);
	t_change(kq, a[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_change(kq, b[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	put(a[1], 1);
	take(a[0], 1);		/* stale: a[0] is no longer readable */
	t_watchdog(20);
	delayed_write_start(&dw, b[1], 100);
	n = kevent(kq, NULL, 0, ev, 4, NULL);
	assert_int_equal(pthread_join(dw.thr, NULL), 0);
	alarm(0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].ident, (uintptr_t)b[0]);
}

/* ------------------------------------------------------------------ */
/* EV_WAKEONE (kq extension)                                           */

#ifdef EV_WAKEONE

static int
new_listener(void)
{
	struct sockaddr_un sun;
	int fd;

	strcpy(sock_dir, "/tmp/kqtest.XXXXXX");
	assert_non_null(mkdtemp(sock_dir));
	snprintf(sock_path, sizeof(sock_path), "%s/s", sock_dir);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, sock_path);
	fd = t_track(socket(AF_UNIX, SOCK_STREAM, 0));
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	return fd;
}

static int
connect_to_listener(void)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, sock_path);
	fd = t_track(socket(AF_UNIX, SOCK_STREAM, 0));
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return fd;
}

static void
wakeone_on_listening_socket_delivers(void **state)
{
	struct kevent ev;
	int kq, lfd, cfd;

	(void)state;
	kq = t_new_kq();
	lfd = new_listener();
	t_change(kq, lfd, EVFILT_READ, EV_ADD | EV_WAKEONE, 0, 0, (void *)8);
	t_expect_none(kq);
	(void)connect_to_listener();
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)lfd);
	assert_int_equal(ev.filter, EVFILT_READ);
	assert_ptr_equal(ev.udata, (void *)8);
	assert_true(ev.data >= 1);
	assert_int_equal(ev.flags & EV_ERROR, 0);
	cfd = accept(lfd, NULL, NULL);
	assert_true(cfd >= 0);
	t_track(cfd);
	t_expect_none(kq);
	t_change(kq, lfd, EVFILT_READ, EV_DELETE, 0, 0, NULL);
}

static void
wakeone_on_write_filter_is_accepted(void **state)
{
	struct kevent ev;
	int kq, sv[2];

	(void)state;
	kq = t_new_kq();
	new_pair(sv);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD | EV_WAKEONE, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	assert_int_equal(ev.filter, EVFILT_WRITE);
}

static void
wakeone_with_oneshot_fails_einval(void **state)
{
	int kq, lfd;

	(void)state;
	kq = t_new_kq();
	lfd = new_listener();
	errno = 0;
	assert_int_equal(change1(kq, lfd, EVFILT_READ,
	    EV_ADD | EV_WAKEONE | EV_ONESHOT, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_not_registered(kq, lfd, EVFILT_READ);
}

static void
wakeone_on_non_fd_filter_fails_einval(void **state)
{
	struct kevent ch;
	int kq;

	(void)state;
	kq = t_new_kq();
	EV_SET(&ch, 1, EVFILT_USER, EV_ADD | EV_WAKEONE, 0, 0, NULL);
	errno = 0;
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), -1);
	assert_int_equal(errno, EINVAL);
	EV_SET(&ch, 2, EVFILT_TIMER, EV_ADD | EV_WAKEONE, 0, 1000, NULL);
	errno = 0;
	assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), -1);
	assert_int_equal(errno, EINVAL);
	/* Neither failed change left a knote behind. */
	assert_not_registered(kq, 1, EVFILT_USER);
	assert_not_registered(kq, 2, EVFILT_TIMER);
	/* Control: without EV_WAKEONE the same registrations succeed. */
	t_change(kq, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
	t_change(kq, 2, EVFILT_TIMER, EV_ADD, 0, 1000, NULL);
	t_change(kq, 1, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	t_change(kq, 2, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
	assert_not_registered(kq, 1, EVFILT_USER);
	assert_not_registered(kq, 2, EVFILT_TIMER);
}

static void
wakeone_on_kqueue_descriptor_fails_einval(void **state)
{
	int kq, inner;

	(void)state;
	kq = t_new_kq();
	inner = t_new_kq();
	errno = 0;
	assert_int_equal(change1(kq, inner, EVFILT_READ, EV_ADD | EV_WAKEONE,
	    NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_not_registered(kq, inner, EVFILT_READ);
	/* Control: without EV_WAKEONE the kqueue can be watched. */
	assert_int_equal(change1(kq, inner, EVFILT_READ, EV_ADD, NULL), 0);
}

/*
 * Child side of the two-process test.  Reports (id, code) byte pairs on
 * rep: 'R' registered and about to wait, 'W' woken by the listener, 'A'
 * accept() succeeded, 'E' nothing to accept, 'T' wait timed out, 'C'
 * released by the parent, 'X' setup failure.  A woken child holds the
 * connection pending for 300 ms before accepting it, so that a second,
 * wrongly woken child would still find it and report 'W' too.
 */
static void
report(int rep, int id, char code)
{
	char msg[2] = { (char)('0' + id), code };

	if (write(rep, msg, 2) != 2)
		T_EXIT(3);
}

static void
wakeone_child(int id, int lfd, int ctl, int rep)
{
	struct kevent ch[2], ev[2];
	struct timespec ts = { 10, 0 };
	int kq, n, i;

	kq = kqueue();
	if (kq < 0) {
		report(rep, id, 'X');
		T_EXIT(1);
	}
	EV_SET(&ch[0], lfd, EVFILT_READ, EV_ADD | EV_WAKEONE, 0, 0, NULL);
	EV_SET(&ch[1], ctl, EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kq, ch, 2, NULL, 0, NULL) != 0) {
		report(rep, id, 'X');
		T_EXIT(1);
	}
	report(rep, id, 'R');
	for (;;) {
		n = kevent(kq, NULL, 0, ev, 2, &ts);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			report(rep, id, n == 0 ? 'T' : 'X');
			T_EXIT(1);
		}
		for (i = 0; i < n; i++) {
			if (ev[i].ident == (uintptr_t)ctl) {
				report(rep, id, 'C');
				T_EXIT(0);
			}
		}
		for (i = 0; i < n; i++) {
			if (ev[i].ident == (uintptr_t)lfd) {
				int c;

				report(rep, id, 'W');
				sleep_ms(300);
				c = accept(lfd, NULL, NULL);
				report(rep, id, c >= 0 ? 'A' : 'E');
				if (c >= 0)
					close(c);
			}
		}
	}
}

/* Read one (id, code) report, waiting at most ms; 0 on timeout/EOF. */
static int
read_report(int rep, int ms, char msg[2])
{
	struct pollfd pfd = { .fd = rep, .events = POLLIN };

	if (poll(&pfd, 1, ms) != 1)
		return 0;
	return read(rep, msg, 2) == 2;
}

#ifdef __linux__
/* Linux: is the process asleep (blocked in a system call)? */
static int
proc_is_sleeping(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 1;	/* cannot tell: rely on the fixed delay */
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p != NULL && p[1] == ' ' && p[2] == 'S';
}
#endif

static void
wait_until_blocked(pid_t pid)
{
#ifdef __linux__
	int i;

	/* Require two sleeping samples in a row, within ~3 s. */
	for (i = 0; i < 300; i++) {
		if (proc_is_sleeping(pid)) {
			sleep_ms(5);
			if (proc_is_sleeping(pid))
				return;
		}
		sleep_ms(10);
	}
#else
	(void)pid;
#endif
}

static void
wakeone_wakes_exactly_one_of_two_processes(void **state)
{
	int lfd, ctl[2], rep[2], i, got, winner, id;
	int woken[2] = { 0, 0 }, accepted[2] = { 0, 0 },
	    missed[2] = { 0, 0 }, released[2] = { 0, 0 };
	char msg[2];

	(void)state;
	lfd = new_listener();
	assert_int_equal(pipe(ctl), 0);
	t_track(ctl[0]);
	t_track(ctl[1]);
	assert_int_equal(pipe(rep), 0);
	t_track(rep[0]);
	t_track(rep[1]);

	for (i = 0; i < 2; i++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			close(ctl[1]);
			close(rep[0]);
			wakeone_child(i, lfd, ctl[0], rep[1]);
			T_EXIT(2);
		}
		children[n_children++] = pid;
	}
	t_close_now(rep[1]);

	/* Both children registered and about to block. */
	for (got = 0; got < 2; got++) {
		assert_true(read_report(rep[0], 5000, msg));
		if (msg[1] != 'R')
			fprintf(stderr, "child %c: %c\n", msg[0], msg[1]);
		assert_int_equal(msg[1], 'R');
	}
	for (i = 0; i < 2; i++)
		wait_until_blocked(children[i]);
	sleep_ms(100);

	/* One connection wakes one child... */
	(void)connect_to_listener();
	assert_true(read_report(rep[0], 5000, msg));
	if (msg[1] != 'W')
		fprintf(stderr, "first report: child %c code %c\n", msg[0],
		    msg[1]);
	assert_int_equal(msg[1], 'W');
	winner = msg[0] - '0';
	assert_true(winner == 0 || winner == 1);
	woken[winner]++;

	/*
	 * ...and the other one stays asleep for 200 ms although the
	 * connection is still pending (the winner holds it for 300 ms).
	 */
	{
		int64_t deadline;
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		deadline = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + 200;
		for (;;) {
			int left;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left = (int)(deadline - ((int64_t)now.tv_sec * 1000 +
			    now.tv_nsec / 1000000));
			if (left <= 0 || !read_report(rep[0], left, msg))
				break;
			id = msg[0] - '0';
			if (id != winner) {
				fprintf(stderr, "second child woke: %c %c\n",
				    msg[0], msg[1]);
				fail();
			}
			if (msg[1] == 'A')
				accepted[id]++;
			else if (msg[1] == 'E')
				missed[id]++;
		}
	}

	/* Release both and collect the rest. */
	put(ctl[1], 1);
	while (read_report(rep[0], 5000, msg)) {
		id = msg[0] - '0';
		assert_true(id == 0 || id == 1);
		switch (msg[1]) {
		case 'W': woken[id]++; break;
		case 'A': accepted[id]++; break;
		case 'E': missed[id]++; break;
		case 'C': released[id]++; break;
		default:
			fprintf(stderr, "child %d: %c\n", id, msg[1]);
			fail();
		}
	}
	for (i = 0; i < 2; i++) {
		int st;

		assert_int_equal(waitpid(children[i], &st, 0), children[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	n_children = 0;
	assert_int_equal(woken[winner], 1);
	assert_int_equal(woken[1 - winner], 0);
	assert_int_equal(accepted[winner], 1);
	assert_int_equal(missed[0] + missed[1], 0);
	assert_int_equal(released[0], 1);
	assert_int_equal(released[1], 1);
}

#endif /* EV_WAKEONE */

#define T(f) cmocka_unit_test_teardown(f, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(udata_is_returned_bit_exact),
		T(readd_replaces_udata),
		T(keepudata_on_modify_keeps_udata),
		T(modify_without_keepudata_replaces_udata),
		T(add_and_enable_are_not_echoed),
		T(oneshot_clear_and_dispatch_are_echoed),
		T(receipt_given_with_add_is_echoed_on_events),
		T(read_is_level_triggered_by_default),
		T(read_data_is_bytes_readable_and_shrinks_after_partial_read),
		T(oneshot_is_reported_once_then_deleted),
		T(clear_reports_once_per_new_activity),
		T(clear_partial_read_does_not_retrigger),
		T(dispatch_reports_once_then_disables),
		T(dispatch_enable_rearms_and_fires_when_still_ready),
		T(disabled_dispatch_knote_can_be_deleted),
		T(dispatch_read_event_does_not_silence_write_knote_on_same_socket),
		T(dispatch_event_left_for_lack_of_room_is_reported_next_call),
		T(dispatch_knote_whose_data_was_consumed_fires_on_new_data),
		T(dispatch_with_lowat_fires_once_the_threshold_is_reached),
		T(dispatch_event_counted_by_outer_kqueue_is_still_delivered),
		T(dispatch_event_seen_by_outer_kqueue_then_consumed_fires_on_new_data),
		T(disable_suppresses_events),
		T(add_with_disable_registers_a_disabled_knote),
		T(enable_of_ready_knote_fires_at_once),
		T(add_on_existing_knote_keeps_triggered_state),
		T(forceoneshot_on_existing_knote_fires_now_and_deletes),
		T(forceoneshot_on_ready_knote_delivers_once),
		T(forceoneshot_on_missing_knote_fails_enoent),
		T(clear_on_read_does_not_make_write_edge_triggered),
		T(clear_on_write_does_not_make_read_edge_triggered),
		T(disable_on_write_does_not_stop_read),
		T(oneshot_on_read_does_not_delete_write),
		T(delete_of_read_does_not_delete_write),
		T(level_triggered_events_round_robin),
		T(infinite_wait_never_returns_zero),
#ifdef EV_WAKEONE
		T(wakeone_on_listening_socket_delivers),
		T(wakeone_on_write_filter_is_accepted),
		T(wakeone_with_oneshot_fails_einval),
		T(wakeone_on_non_fd_filter_fails_einval),
		T(wakeone_on_kqueue_descriptor_fails_einval),
		T(wakeone_wakes_exactly_one_of_two_processes),
#endif
	};

	return t_run_group(tests, NULL, NULL);
}
