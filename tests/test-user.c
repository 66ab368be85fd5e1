/*
 * test-user: EVFILT_USER.
 *
 * FreeBSD reference (kern_event.c kqueue_register, filt_userattach,
 * filt_usertouch): a user knote holds a triggered bit, 24 stored user
 * flags and a stored data.  On a change to an existing knote, NOTE_TRIGGER
 * sets the triggered bit, the op in the top two bits (NOTE_FFNOP, FFAND,
 * FFOR, FFCOPY) applies the low 24 input bits to the stored flags, data is
 * stored verbatim, and EV_CLEAR in the change resets the triggered bit.
 * Delivery reports the stored flags and data; with EV_CLEAR on the knote
 * it resets the triggered bit, without it the event stays triggered.
 * kqueue_register zeroes the change's fflags before attaching a new knote,
 * so NOTE_TRIGGER in the first EV_ADD does not fire.  A change never
 * updates the stored EV_ flags of an existing knote (only
 * EV_FORCEONESHOT does).
 */
#include "helpers.h"

#include <limits.h>
#include <poll.h>

static int
teardown(void **state)
{
	(void)state;
	t_close_tracked();
	return 0;
}

/* Apply one change without an event list: 0 or the errno. */
static int
change_errno(int kq, uintptr_t ident, unsigned short flags,
    unsigned int fflags, int64_t data)
{
	struct kevent kev;

	EV_SET(&kev, ident, EVFILT_USER, flags, fflags, data, NULL);
	if (kevent(kq, &kev, 1, NULL, 0, NULL) == 0)
		return 0;
	return errno;
}

static void
trigger(int kq, uintptr_t ident, unsigned int fflags, int64_t data)
{
	t_change(kq, ident, EVFILT_USER, 0, NOTE_TRIGGER | fflags, data, NULL);
}

/* Expect exactly one pending event: the user event ident. */
static struct kevent
expect_user(int kq, uintptr_t ident)
{
	struct kevent ev = t_expect_one(kq);

	assert_int_equal(ev.ident, ident);
	assert_int_equal(ev.filter, EVFILT_USER);
	assert_int_equal(ev.flags & EV_ERROR, 0);
	return ev;
}

/* ------------------------------------------------------------------ */
/* Trigger, stored fflags and data                                     */

static void
user_trigger_fires_with_stored_fflags_and_data(void **state)
{
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0x000123, 42,
	    (void *)0xab);
	t_expect_none(kq);
	t_change(kq, 1, EVFILT_USER, 0, NOTE_TRIGGER | NOTE_FFNOP, 42,
	    (void *)0xab);
	ev = expect_user(kq, 1);
	assert_int_equal(ev.fflags, 0x000123);
	assert_int_equal(ev.data, 42);
	assert_ptr_equal(ev.udata, (void *)0xab);
	assert_int_equal(ev.flags, EV_CLEAR);
	t_expect_none(kq);
}

/* The stored data keeps its 64 bits (struct kevent's data is int64_t). */
static void
user_data_keeps_all_64_bits(void **state)
{
	const int64_t big = INT64_C(0x123456789abcdef0), neg = -INT64_C(5000000000);
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 2, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	t_change(kq, 2, EVFILT_USER, 0, NOTE_TRIGGER, big, NULL);
	ev = expect_user(kq, 2);
	assert_true(ev.data == big);
	t_change(kq, 2, EVFILT_USER, 0, NOTE_TRIGGER, neg, NULL);
	ev = expect_user(kq, 2);
	assert_true(ev.data == neg);
}

/* Apply (op | bits) with a trigger to stored `from`; expect `want`. */
static void
check_ffop(unsigned int from, unsigned int op, unsigned int bits,
    unsigned int want)
{
	struct kevent ev;
	int kq;

	kq = t_new_kq();
	t_change(kq, 5, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	/* Set the stored flags with FFCOPY first (the add stores as given). */
	t_change(kq, 5, EVFILT_USER, 0, NOTE_FFCOPY | from, 0, NULL);
	t_expect_none(kq);
	t_change(kq, 5, EVFILT_USER, 0, NOTE_TRIGGER | op | bits, 0, NULL);
	ev = expect_user(kq, 5);
	if (ev.fflags != want)
		fprintf(stderr, "stored %#x, op %#x bits %#x: got %#x, want "
		    "%#x\n", from, op, bits, ev.fflags, want);
	assert_int_equal(ev.fflags, want);
	/* Stored: the next trigger without an op reports the same. */
	trigger(kq, 5, NOTE_FFNOP, 0);
	ev = expect_user(kq, 5);
	assert_int_equal(ev.fflags, want);
}

static void
user_ffnop_keeps_stored_flags(void **state)
{
	(void)state;
	check_ffop(0x00a5a5a5, NOTE_FFNOP, 0x00ffffff, 0x00a5a5a5);
}

static void
user_ffand_ands_the_user_bits(void **state)
{
	(void)state;
	check_ffop(0x000f0f0f, NOTE_FFAND, 0x0000ff00, 0x00000f00);
	check_ffop(0x00ffffff, NOTE_FFAND, 0, 0);
}

static void
user_ffor_ors_the_user_bits(void **state)
{
	(void)state;
	check_ffop(0x00000f0f, NOTE_FFOR, 0x00f00000, 0x00f00f0f);
}

static void
user_ffcopy_copies_the_user_bits(void **state)
{
	(void)state;
	check_ffop(0x00ffffff, NOTE_FFCOPY, 0x00000001, 0x00000001);
	check_ffop(0x00123456, NOTE_FFCOPY, 0, 0);
}

/* Only the low 24 bits are ever stored: not the op, not NOTE_TRIGGER. */
static void
user_op_bits_and_trigger_are_not_stored(void **state)
{
	(void)state;
	check_ffop(0, NOTE_FFCOPY, 0xffffffffu & ~NOTE_FFCTRLMASK, 0x00ffffff);
	check_ffop(0, NOTE_FFOR, 0x3effffff, 0x00ffffff);
	check_ffop(0x00ffffff, NOTE_FFAND, 0x3f00ff00, 0x0000ff00);
}

/* data is stored verbatim from the last change, with or without trigger. */
static void
user_data_is_stored_from_the_last_change(void **state)
{
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 2, EVFILT_USER, EV_ADD, 0, 1, NULL);
	trigger(kq, 2, 0, INT64_MAX);
	ev = expect_user(kq, 2);
	assert_true(ev.data == INT64_MAX);
	t_change(kq, 2, EVFILT_USER, 0, 0, -7, NULL);	/* no trigger */
	ev = expect_user(kq, 2);
	assert_int_equal(ev.data, -7);
	t_change(kq, 2, EVFILT_USER, EV_ADD, 0, INT64_MIN, NULL);
	ev = expect_user(kq, 2);
	assert_true(ev.data == INT64_MIN);
	t_change(kq, 2, EVFILT_USER, EV_DISABLE, 0, 0, NULL);
	t_change(kq, 2, EVFILT_USER, EV_ENABLE, 0, 5, NULL);
	ev = expect_user(kq, 2);
	assert_int_equal(ev.data, 5);
}

/* ------------------------------------------------------------------ */
/* Level (no EV_CLEAR) and edge (EV_CLEAR)                              */

static void
user_without_ev_clear_stays_triggered_until_clear_change(void **state)
{
	struct kevent ev;
	int kq, i;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 3, EVFILT_USER, EV_ADD, 0, 0, NULL);
	trigger(kq, 3, NOTE_FFCOPY | 0x11, 9);
	for (i = 0; i < 4; i++) {
		ev = expect_user(kq, 3);
		assert_int_equal(ev.fflags, 0x11);
		assert_int_equal(ev.data, 9);
		assert_int_equal(ev.flags & EV_CLEAR, 0);
	}
	/* A change with EV_CLEAR resets the trigger ... */
	t_change(kq, 3, EVFILT_USER, EV_CLEAR, 0, 9, NULL);
	t_expect_none(kq);
	t_expect_none(kq);
	/* ... but does not make the knote EV_CLEAR: level again. */
	trigger(kq, 3, 0, 9);
	ev = expect_user(kq, 3);
	assert_int_equal(ev.flags & EV_CLEAR, 0);
	ev = expect_user(kq, 3);
}

static void
user_with_ev_clear_is_delivered_once_per_trigger(void **state)
{
	struct kevent ev;
	int kq, i;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 4, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	for (i = 0; i < 3; i++) {
		trigger(kq, 4, 0, i);
		ev = expect_user(kq, 4);
		assert_int_equal(ev.data, i);
		assert_true(ev.flags & EV_CLEAR);
		t_expect_none(kq);
	}
	/* Two triggers before a retrieval: one delivery. */
	trigger(kq, 4, 0, 0);
	trigger(kq, 4, 0, 0);
	(void)expect_user(kq, 4);
	t_expect_none(kq);
}

/* EV_CLEAR in a modify resets a pending trigger, on either kind. */
static void
user_ev_clear_in_modify_resets_trigger(void **state)
{
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	t_change(kq, 2, EVFILT_USER, EV_ADD, 0, 0, NULL);
	trigger(kq, 1, 0, 0);
	trigger(kq, 2, 0, 0);
	t_change(kq, 1, EVFILT_USER, EV_CLEAR, 0, 0, NULL);
	t_change(kq, 2, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	t_expect_none(kq);
	/* NOTE_TRIGGER and EV_CLEAR in one change: the clear comes last. */
	t_change(kq, 1, EVFILT_USER, EV_CLEAR, NOTE_TRIGGER, 0, NULL);
	t_expect_none(kq);
	/* Both still work afterwards. */
	trigger(kq, 1, 0, 0);
	(void)expect_user(kq, 1);
}

/* ------------------------------------------------------------------ */
/* Enable and disable                                                  */

static void
user_trigger_while_disabled_is_delivered_on_enable(void **state)
{
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 6, EVFILT_USER, EV_ADD | EV_CLEAR | EV_DISABLE, 0, 0,
	    NULL);
	trigger(kq, 6, NOTE_FFCOPY | 0x6, 66);
	t_expect_none(kq);
	t_expect_none(kq);
	t_change(kq, 6, EVFILT_USER, EV_ENABLE, 0, 66, NULL);
	ev = expect_user(kq, 6);
	assert_int_equal(ev.fflags, 0x6);
	assert_int_equal(ev.data, 66);
	t_expect_none(kq);
	/* Also when disabled after the add. */
	t_change(kq, 6, EVFILT_USER, EV_DISABLE, 0, 0, NULL);
	trigger(kq, 6, 0, 0);
	t_expect_none(kq);
	t_change(kq, 6, EVFILT_USER, EV_ENABLE, 0, 0, NULL);
	(void)expect_user(kq, 6);
}

/*
 * NOTE_TRIGGER in the EV_ADD that creates the knote does not fire:
 * kqueue_register zeroes the change's fflags before filt_userattach looks
 * at them.
 */
static void
user_trigger_in_first_add_does_not_fire(void **state)
{
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 7, EVFILT_USER, EV_ADD, NOTE_TRIGGER | 0x70, 0, NULL);
	t_expect_none(kq);
	t_change(kq, 8, EVFILT_USER, EV_ADD | EV_CLEAR, NOTE_TRIGGER, 0, NULL);
	t_expect_none(kq);
	/* The knotes exist and take triggers from now on. */
	trigger(kq, 7, 0, 0);
	ev = expect_user(kq, 7);
	assert_int_equal(ev.fflags & NOTE_FFLAGSMASK, 0x70);
	t_change(kq, 7, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	trigger(kq, 8, 0, 0);
	(void)expect_user(kq, 8);
	/* A second EV_ADD|NOTE_TRIGGER is a modify, and does fire. */
	t_change(kq, 8, EVFILT_USER, EV_ADD, NOTE_TRIGGER, 0, NULL);
	(void)expect_user(kq, 8);
}

static void
user_trigger_of_missing_knote_gives_enoent(void **state)
{
	int kq;

	(void)state;
	kq = t_new_kq();
	assert_int_equal(change_errno(kq, 9, 0, NOTE_TRIGGER, 0), ENOENT);
	assert_int_equal(change_errno(kq, 9, EV_DELETE, 0, 0), ENOENT);
	t_change(kq, 9, EVFILT_USER, EV_ADD, 0, 0, NULL);
	t_change(kq, 9, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	assert_int_equal(change_errno(kq, 9, 0, NOTE_TRIGGER, 0), ENOENT);
	t_expect_none(kq);
}

/* A pending trigger goes with EV_DELETE; a new knote starts untriggered. */
static void
user_delete_drops_pending_trigger(void **state)
{
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
	trigger(kq, 1, 0, 0);
	t_change(kq, 1, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	t_expect_none(kq);
	t_change(kq, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
	t_expect_none(kq);
}

/*
 * FreeBSD's knote_drop dequeues a queued knote: a kqueue whose only
 * pending event was deleted before anyone collected it is no longer
 * readable (kqueue_poll sees kq_count 0), for poll() and for a kqueue
 * that watches it.  Each of many knotes so triggered and deleted leaves
 * nothing behind either.
 */
static void
kqueue_whose_queued_events_were_deleted_polls_not_readable(void **state)
{
	struct pollfd p;
	struct kevent ev;
	int kq, outer, i;

	(void)state;
	kq = t_new_kq();
	outer = t_new_kq();
	t_change(outer, (uintptr_t)kq, EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_change(kq, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
	trigger(kq, 1, 0, 0);
	p.fd = kq;
	p.events = POLLIN;
	p.revents = 0;
	assert_int_equal(poll(&p, 1, 0), 1);
	t_change(kq, 1, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	assert_int_equal(poll(&p, 1, 0), 0);
	t_expect_none(outer);
	for (i = 0; i < 1000; i++) {
		t_change(kq, (uintptr_t)(100 + i), EVFILT_USER, EV_ADD, 0, 0,
		    NULL);
		trigger(kq, (uintptr_t)(100 + i), 0, 0);
	}
	for (i = 0; i < 1000; i++) {
		t_change(kq, (uintptr_t)(100 + i), EVFILT_USER, EV_DELETE, 0,
		    0, NULL);
		assert_int_equal(poll(&p, 1, 0), i < 999);
	}
	t_expect_none(kq);
	t_expect_none(outer);
	/* Still live: a new trigger makes both readable again. */
	t_change(kq, 2, EVFILT_USER, EV_ADD, 0, 0, NULL);
	trigger(kq, 2, 0, 0);
	assert_int_equal(poll(&p, 1, 0), 1);
	ev = t_expect_one(outer);
	assert_int_equal(ev.ident, (uintptr_t)kq);
	assert_int_equal(ev.filter, EVFILT_READ);
	close(outer);
}

/* ------------------------------------------------------------------ */
/* Client patterns                                                     */

/* libevent and nginx: EV_ADD|EV_CLEAR once, then flags 0 + NOTE_TRIGGER. */
static void
user_libevent_nginx_wakeup_pattern(void **state)
{
	struct kevent ev;
	int kq, i;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 0, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	t_expect_none(kq);
	for (i = 0; i < 3; i++) {
		t_change(kq, 0, EVFILT_USER, 0, NOTE_TRIGGER, 0,
		    (void *)(intptr_t)(0x100 + i));
		ev = expect_user(kq, 0);
		assert_ptr_equal(ev.udata, (void *)(intptr_t)(0x100 + i));
		t_expect_none(kq);
	}
}

/*
 * Go's runtime: EV_ADD once (level), EV_ENABLE|NOTE_TRIGGER to wake,
 * EV_DISABLE to drain.
 */
static void
user_go_wakeup_pattern(void **state)
{
	int kq, i;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 0, EVFILT_USER, EV_ADD, 0, 0, NULL);
	t_expect_none(kq);
	for (i = 0; i < 3; i++) {
		t_change(kq, 0, EVFILT_USER, EV_ENABLE, NOTE_TRIGGER, 0, NULL);
		(void)expect_user(kq, 0);
		(void)expect_user(kq, 0);	/* level: until drained */
		t_change(kq, 0, EVFILT_USER, EV_DISABLE, 0, 0, NULL);
		t_expect_none(kq);
	}
}

/*
 * mio: EV_ADD|EV_CLEAR once, then EV_ADD|EV_ONESHOT|NOTE_TRIGGER to wake.
 * The wake is a modify, and a modify does not change the stored flags: the
 * knote stays EV_CLEAR, not EV_ONESHOT, and survives the delivery.
 */
static void
user_mio_wakeup_pattern_oneshot_on_modify_is_ignored(void **state)
{
	struct kevent ev;
	int kq, i;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 0, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	for (i = 0; i < 3; i++) {
		t_change(kq, 0, EVFILT_USER, EV_ADD | EV_ONESHOT, NOTE_TRIGGER,
		    0, NULL);
		ev = expect_user(kq, 0);
		assert_int_equal(ev.flags & EV_ONESHOT, 0);
		assert_true(ev.flags & EV_CLEAR);
		t_expect_none(kq);
	}
	/* Still registered. */
	t_change(kq, 0, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	assert_int_equal(change_errno(kq, 0, EV_DELETE, 0, 0), ENOENT);
}

/* EV_FORCEONESHOT is the one change that makes an existing knote one-shot. */
static void
user_forceoneshot_makes_existing_knote_oneshot(void **state)
{
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
	t_change(kq, 1, EVFILT_USER, EV_FORCEONESHOT, NOTE_TRIGGER, 0, NULL);
	ev = expect_user(kq, 1);
	assert_true(ev.flags & EV_ONESHOT);
	t_expect_none(kq);
	assert_int_equal(change_errno(kq, 1, EV_DELETE, 0, 0), ENOENT);
}

/* ------------------------------------------------------------------ */
/* EV_DISPATCH, EV_ONESHOT, EV_RECEIPT                                 */

static void
user_dispatch_is_rearmed_by_enable(void **state)
{
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	/* With EV_CLEAR: one delivery per trigger, held while dispatched. */
	t_change(kq, 1, EVFILT_USER, EV_ADD | EV_DISPATCH | EV_CLEAR, 0, 0,
	    NULL);
	trigger(kq, 1, 0, 0);
	ev = expect_user(kq, 1);
	assert_true(ev.flags & EV_DISPATCH);
	t_expect_none(kq);
	trigger(kq, 1, 0, 0);
	t_expect_none(kq);		/* disabled by the dispatch */
	t_change(kq, 1, EVFILT_USER, EV_ENABLE, 0, 0, NULL);
	(void)expect_user(kq, 1);
	t_expect_none(kq);
	t_change(kq, 1, EVFILT_USER, EV_ENABLE, 0, 0, NULL);
	t_expect_none(kq);		/* no trigger since: nothing */

	/* Without EV_CLEAR: still triggered, so EV_ENABLE reports again. */
	t_change(kq, 2, EVFILT_USER, EV_ADD | EV_DISPATCH, 0, 0, NULL);
	trigger(kq, 2, 0, 0);
	(void)expect_user(kq, 2);
	t_expect_none(kq);
	t_change(kq, 2, EVFILT_USER, EV_ENABLE, 0, 0, NULL);
	(void)expect_user(kq, 2);
	t_expect_none(kq);
}

static void
user_oneshot_is_delivered_once_then_gone(void **state)
{
	struct kevent ev;
	int kq;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_USER, EV_ADD | EV_ONESHOT, 0, 0, NULL);
	trigger(kq, 1, 0, 3);
	ev = expect_user(kq, 1);
	assert_true(ev.flags & EV_ONESHOT);
	assert_int_equal(ev.data, 3);
	t_expect_none(kq);
	assert_int_equal(change_errno(kq, 1, 0, NOTE_TRIGGER, 0), ENOENT);
}

/*
 * EV_RECEIPT: each change comes back as an EV_ERROR entry with data 0
 * (or the error), and the call then returns without collecting events.
 */
static void
user_receipt_entries(void **state)
{
	struct kevent ch[3], out[4];
	int kq, r, i;

	(void)state;
	kq = t_new_kq();
	EV_SET(&ch[0], 1, EVFILT_USER, EV_ADD | EV_RECEIPT, 0, 0, (void *)1);
	EV_SET(&ch[1], 1, EVFILT_USER, EV_RECEIPT, NOTE_TRIGGER, 0, (void *)2);
	EV_SET(&ch[2], 2, EVFILT_USER, EV_RECEIPT, NOTE_TRIGGER, 0, (void *)3);
	memset(out, 0, sizeof(out));
	r = kevent(kq, ch, 3, out, 4, &t_zero);
	assert_int_equal(r, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(out[i].flags, EV_ERROR);
		assert_int_equal(out[i].filter, EVFILT_USER);
		assert_ptr_equal(out[i].udata, (void *)(intptr_t)(i + 1));
	}
	assert_int_equal(out[0].ident, 1);
	assert_int_equal(out[0].data, 0);
	assert_int_equal(out[1].ident, 1);
	assert_int_equal(out[1].data, 0);
	assert_int_equal(out[2].ident, 2);
	assert_int_equal(out[2].data, ENOENT);
	/* The trigger took effect; the event comes with the next call. */
	out[0] = expect_user(kq, 1);
	assert_ptr_equal(out[0].udata, (void *)2);
}

/* ------------------------------------------------------------------ */
/* Scale and independence                                              */

/* User events cost no descriptor: 10 000 of them, count unchanged. */
static void
user_events_use_no_descriptors(void **state)
{
	enum { N = 10000 };
	static struct kevent ch[N];
	struct kevent ev[512];
	static unsigned char seen[N];
	int kq, fds0, fds1, i, got = 0, dup = 0, r;

	(void)state;
	kq = t_new_kq();
	/*
	 * One user event triggered and collected first, for whatever the
	 * kqueue sets up once (kq: the doorbell that wakes other threads).
	 */
	t_change(kq, N, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	trigger(kq, N, 0, N);
	(void)expect_user(kq, N);
	fds0 = t_count_fds();
	for (i = 0; i < N; i++)
		EV_SET(&ch[i], (uintptr_t)i, EVFILT_USER, EV_ADD | EV_CLEAR, 0,
		    0, NULL);
	assert_int_equal(kevent(kq, ch, N, NULL, 0, NULL), 0);
	for (i = 0; i < N; i++)
		EV_SET(&ch[i], (uintptr_t)i, EVFILT_USER, 0, NOTE_TRIGGER, i,
		    NULL);
	assert_int_equal(kevent(kq, ch, N, NULL, 0, NULL), 0);
	fds1 = t_count_fds();
	assert_int_equal(fds1, fds0);
	memset(seen, 0, sizeof(seen));
	while ((r = t_poll(kq, ev, 512)) > 0) {
		for (i = 0; i < r; i++) {
			uintptr_t id = ev[i].ident;

			assert_int_equal(ev[i].filter, EVFILT_USER);
			assert_true(id < N);
			assert_int_equal(ev[i].data, (int64_t)id);
			if (seen[id]++)
				dup++;
			else
				got++;
		}
	}
	assert_int_equal(dup, 0);
	assert_int_equal(got, N);
}

static void
user_idents_and_kqueues_are_independent(void **state)
{
	struct kevent ev;
	int kq1, kq2;

	(void)state;
	kq1 = t_new_kq();
	kq2 = t_new_kq();
	t_change(kq1, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, (void *)11);
	t_change(kq1, 2, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, (void *)12);
	t_change(kq2, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, (void *)21);
	/* (A change stores its udata: each trigger repeats the knote's.) */
	t_change(kq1, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, (void *)11);
	t_expect_none(kq2);
	ev = expect_user(kq1, 1);
	assert_ptr_equal(ev.udata, (void *)11);
	t_change(kq2, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, (void *)21);
	t_expect_none(kq1);
	ev = expect_user(kq2, 1);
	assert_ptr_equal(ev.udata, (void *)21);
	t_change(kq1, 1, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	t_change(kq2, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, (void *)21);
	t_change(kq1, 2, EVFILT_USER, 0, NOTE_TRIGGER, 0, (void *)12);
	ev = expect_user(kq2, 1);
	assert_ptr_equal(ev.udata, (void *)21);
	ev = expect_user(kq1, 2);
	assert_ptr_equal(ev.udata, (void *)12);
}

#define T(f) cmocka_unit_test_teardown(f, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(user_trigger_fires_with_stored_fflags_and_data),
		T(user_data_keeps_all_64_bits),
		T(user_ffnop_keeps_stored_flags),
		T(user_ffand_ands_the_user_bits),
		T(user_ffor_ors_the_user_bits),
		T(user_ffcopy_copies_the_user_bits),
		T(user_op_bits_and_trigger_are_not_stored),
		T(user_data_is_stored_from_the_last_change),
		T(user_without_ev_clear_stays_triggered_until_clear_change),
		T(user_with_ev_clear_is_delivered_once_per_trigger),
		T(user_ev_clear_in_modify_resets_trigger),
		T(user_trigger_while_disabled_is_delivered_on_enable),
		T(user_trigger_in_first_add_does_not_fire),
		T(user_trigger_of_missing_knote_gives_enoent),
		T(user_delete_drops_pending_trigger),
		T(kqueue_whose_queued_events_were_deleted_polls_not_readable),
		T(user_libevent_nginx_wakeup_pattern),
		T(user_go_wakeup_pattern),
		T(user_mio_wakeup_pattern_oneshot_on_modify_is_ignored),
		T(user_forceoneshot_makes_existing_knote_oneshot),
		T(user_dispatch_is_rearmed_by_enable),
		T(user_oneshot_is_delivered_once_then_gone),
		T(user_receipt_entries),
		T(user_events_use_no_descriptors),
		T(user_idents_and_kqueues_are_independent),
	};

	return t_run_group(tests, NULL, NULL);
}
