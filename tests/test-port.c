/*
 * test-port: Solaris/illumos event ports (<port.h>) over the kq engine.
 *
 * Reference: illumos's port_create(3C), port_associate(3C), port_get(3C),
 * port_send(3C), port_alert(3C) and the behaviour its os-tests (portfs)
 * and clients (libevent's evport.c) depend on:
 *   - PORT_SOURCE_FD: an association yields at most one event, then the
 *     descriptor is no longer associated; one that is ready when it is
 *     made is queued at once; re-associating replaces the events and the
 *     user cookie; portev_events holds poll(2) revents; closing the
 *     descriptor removes the association; dissociating an object that is
 *     not associated fails with ENOENT; an object that is no descriptor
 *     gives EBADFD.
 *   - PORT_SOURCE_FILE: a file_obj_t names a file and the times last seen;
 *     association compares them with the file's and fires at once if one
 *     that was asked for differs; FILE_ACCESS, FILE_MODIFIED, FILE_ATTRIB,
 *     FILE_TRUNC as asked; the exceptions (FILE_DELETE, FILE_RENAME_FROM,
 *     ...) always; one event per association, like FD.
 *   - PORT_SOURCE_TIMER: timer_create() with SIGEV_PORT and a port_notify_t
 *     sends the timer's expirations to the port: portev_object the timer,
 *     portev_events the expirations since the last retrieval.
 *   - PORT_SOURCE_USER: port_send() queues one event per call (object 0);
 *     port_sendn() sends to several ports, fills errors[] and returns the
 *     number sent; nent 0 is EINVAL.
 *   - PORT_SOURCE_ALERT: port_alert() with events != 0 puts the port in
 *     alert mode and wakes every waiter; while it is set every get returns
 *     at once the one alert event, which is not consumed; UPDATE on an
 *     alerted port is EBUSY; SET|UPDATE is EINVAL; events 0 leaves alert
 *     mode and what was queued meanwhile is still there.
 *   - port_get/port_getn: max 0 reports the queue length in *nget; *nget 0
 *     returns at once; otherwise wait for *nget events and return up to
 *     max; a zero timeout never blocks and returns 0 (port_getn); an
 *     expired timeout is -1/ETIME with *nget set to what was returned;
 *     EBADF, EBADFD, EINVAL, EFAULT, EINTR.
 *   - any number of threads may wait on a port; each event goes to one.
 * Linux differences (LINUX NOTES of port_create(3)): a fork child cannot
 * use the parent's port (EBADF); its descriptor number stays open until
 * the child closes it, as libev does after fork().
 */
#include "helpers.h"

#include <limits.h>
#include <poll.h>
#include <port.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

static int
teardown(void **state)
{
	(void)state;
	t_close_tracked();
	return 0;
}

static struct timespec p_zero = { 0, 0 };

static int
new_port(void)
{
	return t_track(port_create());
}

static void
new_pipe(int p[2])
{
	assert_int_equal(pipe(p), 0);
	t_track(p[0]);
	t_track(p[1]);
}

static void
new_socketpair(int s[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
	t_track(s[0]);
	t_track(s[1]);
}

/* Nothing pending: port_get with a zero timeout fails with ETIME. */
static void
expect_nothing(int port)
{
	port_event_t pe;

	errno = 0;
	assert_int_equal(port_get(port, &pe, &p_zero), -1);
	assert_int_equal(errno, ETIME);
}

/* Exactly the next event, waiting at most 2 s for it. */
static port_event_t
expect_event(int port)
{
	struct timespec ts = { 2, 0 };
	port_event_t pe;

	memset(&pe, 0xa5, sizeof(pe));
	if (port_get(port, &pe, &ts) != 0)
		fail_msg("port_get: %s", strerror(errno));
	assert_int_equal(pe.portev_pad, 0);
	return pe;
}

static int
errno_of(int r)
{
	return r == 0 ? 0 : errno;
}

/* ---- PORT_SOURCE_FD ---- */

static void
fd_association_yields_one_event_then_is_gone(void **state)
{
	int port = new_port(), p[2];
	port_event_t pe;

	(void)state;
	new_pipe(p);
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    (void *)0x11), 0);
	expect_nothing(port);
	assert_int_equal(write(p[1], "ab", 2), 2);
	pe = expect_event(port);
	assert_int_equal(pe.portev_source, PORT_SOURCE_FD);
	assert_int_equal(pe.portev_object, (uintptr_t)p[0]);
	assert_int_equal(pe.portev_events, POLLIN);
	assert_ptr_equal(pe.portev_user, (void *)0x11);
	/* Still readable, but no longer associated. */
	expect_nothing(port);
	assert_int_equal(write(p[1], "c", 1), 1);
	expect_nothing(port);
	errno = 0;
	assert_int_equal(port_dissociate(port, PORT_SOURCE_FD, p[0]), -1);
	assert_int_equal(errno, ENOENT);
}

static void
fd_ready_at_association_is_queued_at_once(void **state)
{
	int port = new_port(), p[2];
	uint_t n = 0;
	port_event_t pe;

	(void)state;
	new_pipe(p);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    NULL), 0);
	assert_int_equal(port_getn(port, NULL, 0, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(port_get(port, &pe, &p_zero), 0);
	assert_int_equal(pe.portev_events, POLLIN);
}

static void
fd_reassociation_replaces_events_and_user(void **state)
{
	int port = new_port(), s[2];
	port_event_t pe;

	(void)state;
	new_socketpair(s);
	/* Not readable yet: POLLIN would not fire. */
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, s[0], POLLIN,
	    (void *)1), 0);
	expect_nothing(port);
	/* Writable now: the new mask fires, with the new cookie, once. */
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, s[0], POLLOUT,
	    (void *)2), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, POLLOUT);
	assert_ptr_equal(pe.portev_user, (void *)2);
	expect_nothing(port);
}

static void
fd_reassociation_of_pending_event_yields_one_event(void **state)
{
	int port = new_port(), p[2];
	port_event_t pe;

	(void)state;
	new_pipe(p);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    (void *)1), 0);
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    (void *)2), 0);
	pe = expect_event(port);
	assert_ptr_equal(pe.portev_user, (void *)2);
	expect_nothing(port);
}

static void
fd_events_are_poll_revents(void **state)
{
	int port = new_port(), s[2], p[2];
	port_event_t pe;

	(void)state;
	new_socketpair(s);
	assert_int_equal(write(s[1], "x", 1), 1);
	/* Readable and writable: both bits, in one event. */
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, s[0],
	    POLLIN | POLLOUT, NULL), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, POLLIN | POLLOUT);
	expect_nothing(port);
	/* POLLRDNORM is reported as asked for. */
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, s[0],
	    POLLRDNORM, NULL), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, POLLRDNORM);
	/* Hang-up is reported without being asked for. */
	new_pipe(p);
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    NULL), 0);
	t_close_now(p[1]);
	pe = expect_event(port);
	assert_true(pe.portev_events & POLLHUP);
	assert_int_equal(pe.portev_events & ~(POLLIN | POLLHUP), 0);
}

static void
fd_pollpri_reports_out_of_band_data(void **state)
{
	int port = new_port(), l, c, a;
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	port_event_t pe;

	(void)state;
	l = t_track(socket(AF_INET, SOCK_STREAM, 0));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sin, &len), 0);
	c = t_track(socket(AF_INET, SOCK_STREAM, 0));
	assert_int_equal(connect(c, (struct sockaddr *)&sin, sizeof(sin)), 0);
	a = t_track(accept(l, NULL, NULL));
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, a, POLLPRI,
	    NULL), 0);
	expect_nothing(port);
	assert_int_equal(send(c, "!", 1, MSG_OOB), 1);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, POLLPRI);
}

static void
fd_regular_file_is_always_ready(void **state)
{
	char path[] = "/tmp/kq-port-XXXXXX";
	int port = new_port(), fd;
	port_event_t pe;

	(void)state;
	fd = t_track(mkstemp(path));
	unlink(path);
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, fd,
	    POLLIN | POLLOUT, NULL), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, POLLIN | POLLOUT);
	expect_nothing(port);
}

static void
fd_close_removes_association(void **state)
{
	int port = new_port(), p[2], q[2], num;

	(void)state;
	new_pipe(p);
	num = p[0];
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    NULL), 0);
	t_close_now(p[0]);
	/* The number is closed: no longer associated, and no descriptor. */
	errno = 0;
	assert_int_equal(port_dissociate(port, PORT_SOURCE_FD, num), -1);
	assert_int_equal(errno, EBADFD);
	/* A new file under the number inherits nothing. */
	new_pipe(q);
	assert_int_equal(q[0], num);
	assert_int_equal(write(q[1], "x", 1), 1);
	expect_nothing(port);
	errno = 0;
	assert_int_equal(port_dissociate(port, PORT_SOURCE_FD, q[0]), -1);
	assert_int_equal(errno, ENOENT);
}

static void
fd_close_with_dup_open_removes_association(void **state)
{
	int port = new_port(), p[2], d;

	(void)state;
	new_pipe(p);
	d = t_track(dup(p[0]));
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    NULL), 0);
	t_close_now(p[0]);
	assert_int_equal(write(p[1], "x", 1), 1);
	expect_nothing(port);
	(void)d;
}

static void
fd_dissociate_prevents_the_event(void **state)
{
	int port = new_port(), p[2];

	(void)state;
	new_pipe(p);
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    NULL), 0);
	assert_int_equal(port_dissociate(port, PORT_SOURCE_FD, p[0]), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	expect_nothing(port);
	errno = 0;
	assert_int_equal(port_dissociate(port, PORT_SOURCE_FD, p[0]), -1);
	assert_int_equal(errno, ENOENT);
}

static void
fd_dissociate_of_never_associated_gives_enoent(void **state)
{
	int port = new_port(), p[2];

	(void)state;
	new_pipe(p);
	errno = 0;
	assert_int_equal(port_dissociate(port, PORT_SOURCE_FD, p[0]), -1);
	assert_int_equal(errno, ENOENT);
}

static void
fd_associate_of_bad_descriptor_gives_ebadfd(void **state)
{
	int port = new_port();

	(void)state;
	errno = 0;
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, 100000, POLLIN,
	    NULL), -1);
	assert_int_equal(errno, EBADFD);
	errno = 0;
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, (uintptr_t)-1,
	    POLLIN, NULL), -1);
	assert_int_equal(errno, EBADFD);
}

static void
associate_of_unsupported_source_gives_einval(void **state)
{
	int port = new_port(), p[2];

	(void)state;
	new_pipe(p);
	errno = 0;
	assert_int_equal(port_associate(port, PORT_SOURCE_TIMER, p[0], POLLIN,
	    NULL), -1);	/* timers come from timer_create() */
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(port_associate(port, PORT_SOURCE_USER, p[0], POLLIN,
	    NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(port_associate(port, 99, p[0], POLLIN, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(port_dissociate(port, PORT_SOURCE_ALERT, 0), -1);
	assert_int_equal(errno, EINVAL);
}

static void
fd_same_descriptor_on_two_ports_fires_on_both(void **state)
{
	int a = new_port(), b = new_port(), p[2];

	(void)state;
	new_pipe(p);
	assert_int_equal(port_associate(a, PORT_SOURCE_FD, p[0], POLLIN,
	    (void *)1), 0);
	assert_int_equal(port_associate(b, PORT_SOURCE_FD, p[0], POLLIN,
	    (void *)2), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_ptr_equal(expect_event(a).portev_user, (void *)1);
	assert_ptr_equal(expect_event(b).portev_user, (void *)2);
}

/* ---- PORT_SOURCE_TIMER ---- */

static timer_t
new_port_timer(int port, void *user)
{
	port_notify_t pn = { .portnfy_port = port, .portnfy_user = user };
	struct sigevent sev;
	timer_t t;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_PORT;
	sev.sigev_value.sival_ptr = &pn;
	if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0)
		fail_msg("timer_create: %s", strerror(errno));
	return t;
}

/*
 * POSIX and illumos: timer_create() without the resources for another
 * timer fails with EAGAIN -- here with no descriptor free -- and works
 * again once there are.
 */
static void
timer_sigev_port_with_no_descriptor_free_fails_eagain(void **state)
{
	int port = new_port(), fill[512], n = 0, r, e;
	port_notify_t pn = { .portnfy_port = port, .portnfy_user = NULL };
	struct sigevent sev;
	struct rlimit old, low;
	timer_t t;

	(void)state;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_PORT;
	sev.sigev_value.sival_ptr = &pn;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 256 + 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 512 && (fill[n] = open("/dev/null", O_RDONLY)) >= 0)
		n++;
	errno = 0;
	r = timer_create(CLOCK_MONOTONIC, &sev, &t);
	e = errno;
	while (n > 0)
		close(fill[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(r, -1);
	assert_int_equal(e, EAGAIN);
	t = new_port_timer(port, NULL);
	assert_int_equal(timer_delete(t), 0);
}

static void
timer_sigev_port_delivers_timer_events(void **state)
{
	struct itimerspec its = { { 0, 0 }, { 0, 20000000 } };
	int port = new_port();
	timer_t t = new_port_timer(port, (void *)0x77);
	port_event_t pe;

	(void)state;
	expect_nothing(port);
	assert_int_equal(timer_settime(t, 0, &its, NULL), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_source, PORT_SOURCE_TIMER);
	assert_int_equal(pe.portev_object, (uintptr_t)t);
	assert_int_equal(pe.portev_events, 1);
	assert_ptr_equal(pe.portev_user, (void *)0x77);
	expect_nothing(port);
	assert_int_equal(timer_delete(t), 0);
}

static void
timer_events_count_expirations_since_last_retrieval(void **state)
{
	struct itimerspec its = { { 0, 5000000 }, { 0, 5000000 } }, cur;
	int port = new_port();
	timer_t t = new_port_timer(port, NULL);
	port_event_t pe;

	(void)state;
	assert_int_equal(timer_settime(t, 0, &its, NULL), 0);
	usleep(60000);
	pe = expect_event(port);
	assert_true(pe.portev_events >= 5);	/* ~12 periods */
	/* Periodic: it keeps coming, once per retrieval. */
	pe = expect_event(port);
	assert_true(pe.portev_events >= 1);
	assert_int_equal(timer_gettime(t, &cur), 0);
	assert_int_equal(cur.it_interval.tv_nsec, 5000000);
	assert_int_equal(timer_getoverrun(t), 0);
	assert_int_equal(timer_delete(t), 0);
	usleep(20000);
	/* Deleted: nothing more (an event already queued may remain). */
	(void)port_get(port, &pe, &p_zero);
	expect_nothing(port);
	errno = 0;
	assert_int_equal(timer_settime(t, 0, &its, NULL), -1);
	assert_int_equal(errno, EINVAL);
}

static void
timer_other_notifications_go_to_the_c_library(void **state)
{
	struct itimerspec its = { { 0, 0 }, { 0, 1000000 } }, cur;
	struct sigevent sev;
	timer_t t;

	(void)state;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_NONE;
	assert_int_equal(timer_create(CLOCK_MONOTONIC, &sev, &t), 0);
	assert_int_equal(timer_settime(t, 0, &its, NULL), 0);
	usleep(5000);
	assert_int_equal(timer_gettime(t, &cur), 0);
	assert_int_equal(cur.it_value.tv_sec, 0);
	assert_int_equal(cur.it_value.tv_nsec, 0);
	assert_int_equal(timer_getoverrun(t), 0);
	assert_int_equal(timer_delete(t), 0);
}

static void
timer_sigev_port_errors(void **state)
{
	port_notify_t pn = { .portnfy_port = -1 };
	struct sigevent sev;
	int kq = t_new_kq();
	timer_t t;

	(void)state;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_PORT;
	sev.sigev_value.sival_ptr = &pn;
	errno = 0;
	assert_int_equal(timer_create(CLOCK_MONOTONIC, &sev, &t), -1);
	assert_int_equal(errno, EBADF);
	pn.portnfy_port = kq;
	errno = 0;
	assert_int_equal(timer_create(CLOCK_MONOTONIC, &sev, &t), -1);
	assert_int_equal(errno, EBADFD);
	sev.sigev_value.sival_ptr = NULL;
	errno = 0;
	assert_int_equal(timer_create(CLOCK_MONOTONIC, &sev, &t), -1);
	assert_int_equal(errno, EINVAL);
}

static void
timer_of_closed_port_is_inert(void **state)
{
	struct itimerspec its = { { 0, 0 }, { 0, 1000000 } };
	int port = port_create();
	timer_t t;

	(void)state;
	assert_true(port >= 0);
	t = new_port_timer(port, NULL);
	assert_int_equal(close(port), 0);
	errno = 0;
	assert_int_equal(timer_settime(t, 0, &its, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(timer_delete(t), 0);
}

/* ---- PORT_SOURCE_USER ---- */

static void
user_send_queues_event_with_object_zero(void **state)
{
	int port = new_port();
	port_event_t pe;

	(void)state;
	assert_int_equal(port_send(port, 0x1234, (void *)0x55), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_source, PORT_SOURCE_USER);
	assert_int_equal(pe.portev_events, 0x1234);
	assert_int_equal(pe.portev_object, 0);
	assert_ptr_equal(pe.portev_user, (void *)0x55);
	expect_nothing(port);
}

static void
user_sends_are_separate_events_in_order(void **state)
{
	int port = new_port(), i;
	port_event_t l[8];
	uint_t n = 1;

	(void)state;
	for (i = 0; i < 5; i++)
		assert_int_equal(port_send(port, i, (void *)7), 0);
	assert_int_equal(port_getn(port, l, 8, &n, NULL), 0);
	assert_int_equal(n, 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(l[i].portev_events, i);
	expect_nothing(port);
}

static void
user_sendn_sends_to_each_port_and_fills_errors(void **state)
{
	int ports[3], errors[3] = { -1, -1, -1 }, p[2];

	(void)state;
	new_pipe(p);
	ports[0] = new_port();
	ports[1] = p[0];	/* not a port */
	ports[2] = new_port();
	assert_int_equal(port_sendn(ports, errors, 3, 9, (void *)3), 2);
	assert_int_equal(errors[0], 0);
	assert_int_equal(errors[1], EBADFD);
	assert_int_equal(errors[2], 0);
	assert_int_equal(expect_event(ports[0]).portev_events, 9);
	assert_int_equal(expect_event(ports[2]).portev_events, 9);
}

static void
user_sendn_with_no_entries_gives_einval(void **state)
{
	int port = new_port(), err;

	(void)state;
	errno = 0;
	assert_int_equal(port_sendn(&port, &err, 0, 1, NULL), -1);
	assert_int_equal(errno, EINVAL);
}

/* ---- PORT_SOURCE_ALERT ---- */

static void
alert_is_returned_by_every_get_and_not_consumed(void **state)
{
	int port = new_port(), i;
	port_event_t pe, l[4];
	uint_t n;

	(void)state;
	assert_int_equal(port_send(port, 1, NULL), 0);
	assert_int_equal(port_alert(port, PORT_ALERT_SET, 0x77, (void *)9), 0);
	for (i = 0; i < 3; i++) {
		pe = expect_event(port);
		assert_int_equal(pe.portev_source, PORT_SOURCE_ALERT);
		assert_int_equal(pe.portev_events, 0x77);
		assert_ptr_equal(pe.portev_user, (void *)9);
	}
	/* One alert event only, even with room and nget for more. */
	n = 2;
	assert_int_equal(port_getn(port, l, 4, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(l[0].portev_source, PORT_SOURCE_ALERT);
}

static void
alert_set_on_alerted_port_replaces_it(void **state)
{
	int port = new_port();
	port_event_t pe;

	(void)state;
	assert_int_equal(port_alert(port, PORT_ALERT_SET, 1, (void *)1), 0);
	assert_int_equal(port_alert(port, PORT_ALERT_SET, 2, (void *)2), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, 2);
	assert_ptr_equal(pe.portev_user, (void *)2);
}

static void
alert_update_on_alerted_port_gives_ebusy(void **state)
{
	int port = new_port();
	port_event_t pe;

	(void)state;
	assert_int_equal(port_alert(port, PORT_ALERT_UPDATE, 5, (void *)5), 0);
	errno = 0;
	assert_int_equal(port_alert(port, PORT_ALERT_UPDATE, 6, (void *)6), -1);
	assert_int_equal(errno, EBUSY);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, 5);
	assert_ptr_equal(pe.portev_user, (void *)5);
}

/*
 * illumos's port_alert: both flags are EINVAL; any other value sets (0
 * acts as PORT_ALERT_SET); events 0 leaves alert mode whatever the flags.
 */
static void
alert_flags_both_einval_other_sets_events_zero_always_clears(void **state)
{
	int port = new_port();
	port_event_t pe;

	(void)state;
	errno = 0;
	assert_int_equal(port_alert(port, PORT_ALERT_SET | PORT_ALERT_UPDATE,
	    1, NULL), -1);
	assert_int_equal(errno, EINVAL);
	expect_nothing(port);
	assert_int_equal(port_alert(port, 0, 5, (void *)0x5), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_source, PORT_SOURCE_ALERT);
	assert_int_equal(pe.portev_events, 5);
	assert_ptr_equal(pe.portev_user, (void *)0x5);
	assert_int_equal(port_alert(port, PORT_ALERT_SET | PORT_ALERT_UPDATE,
	    0, NULL), 0);
	expect_nothing(port);
}

/*
 * A port is readable while events are pending (port_create.3): an alert
 * set and then cleared before anyone retrieved it leaves nothing pending,
 * so the port stops polling readable, and a port that watches it
 * (PORT_SOURCE_FD, POLLIN) gets no event for it.
 */
static void
port_whose_alert_was_cleared_polls_not_readable(void **state)
{
	int port = new_port(), outer = new_port();
	struct pollfd p = { .fd = port, .events = POLLIN };
	port_event_t pe;
	struct timespec zero = { 0, 0 };

	(void)state;
	assert_int_equal(port_associate(outer, PORT_SOURCE_FD,
	    (uintptr_t)port, POLLIN, NULL), 0);
	assert_int_equal(port_alert(port, PORT_ALERT_SET, 1, NULL), 0);
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_int_equal(port_alert(port, 0, 0, NULL), 0);
	assert_int_equal(poll(&p, 1, 0), 0);
	errno = 0;
	assert_int_equal(port_get(outer, &pe, &zero), -1);
	assert_int_equal(errno, ETIME);
	expect_nothing(port);
	/* The association is still there: an event on port reaches it. */
	assert_int_equal(port_send(port, 7, NULL), 0);
	assert_int_equal(port_get(outer, &pe, &zero), 0);
	assert_int_equal(pe.portev_source, PORT_SOURCE_FD);
	assert_int_equal(pe.portev_object, (uintptr_t)port);
}

/*
 * The form with max 0 counts the queue in alert mode too (illumos's
 * portq_nent; the alert is not in the queue).
 */
static void
getn_with_max_zero_counts_the_queue_in_alert_mode(void **state)
{
	int port = new_port(), i;
	uint_t n = 99;

	(void)state;
	assert_int_equal(port_alert(port, PORT_ALERT_SET, 1, NULL), 0);
	assert_int_equal(port_getn(port, NULL, 0, &n, NULL), 0);
	assert_int_equal(n, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(port_send(port, i, NULL), 0);
	n = 0;
	assert_int_equal(port_getn(port, NULL, 0, &n, NULL), 0);
	assert_int_equal(n, 3);
}

struct getn4 {
	int		port;
	port_event_t	l[8];
	uint_t		n;
	int		ret;
};

static void *
getn4_main(void *arg)
{
	struct getn4 *g = arg;

	g->n = 4;
	g->ret = port_getn(g->port, g->l, 8, &g->n, NULL);
	return NULL;
}

/*
 * A port_getn() waiting for four events while two were sent returns when
 * the alert is set, with the alert alone (illumos) or with what it took
 * (kq, port_alert.3 LINUX NOTES) -- never both -- and no event is lost
 * or returned twice.
 */
static void
getn_waiting_for_more_when_alerted_returns_alert_alone_or_its_events(
    void **state)
{
	struct getn4 g;
	port_event_t l[8];
	int port = new_port(), seen[2] = { 0, 0 }, alerts = 0;
	uint_t i, n;
	pthread_t t;

	(void)state;
	g.port = port;
	assert_int_equal(pthread_create(&t, NULL, getn4_main, &g), 0);
	usleep(50000);
	assert_int_equal(port_send(port, 0, NULL), 0);
	assert_int_equal(port_send(port, 1, NULL), 0);
	usleep(50000);
	assert_int_equal(port_alert(port, PORT_ALERT_SET, 9, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(g.ret, 0);
	assert_true(g.n >= 1 && g.n <= 2);
	for (i = 0; i < g.n; i++) {
		if (g.l[i].portev_source == PORT_SOURCE_ALERT) {
			assert_int_equal(g.n, 1);	/* alone */
			alerts++;
			continue;
		}
		assert_int_equal(g.l[i].portev_source, PORT_SOURCE_USER);
		seen[g.l[i].portev_events]++;
	}
	/* The next call returns the alert. */
	n = 1;
	assert_int_equal(port_getn(port, l, 8, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(l[0].portev_source, PORT_SOURCE_ALERT);
	assert_int_equal(port_alert(port, 0, 0, NULL), 0);
	n = 1;
	assert_int_equal(port_getn(port, l, 8, &n, &(struct timespec){ 0, 0 }),
	    0);
	for (i = 0; i < n; i++) {
		assert_int_equal(l[i].portev_source, PORT_SOURCE_USER);
		seen[l[i].portev_events]++;
	}
	assert_int_equal(seen[0], 1);
	assert_int_equal(seen[1], 1);
	assert_true(alerts <= 1);
}

static void
alert_events_zero_leaves_alert_mode_and_keeps_queued_events(void **state)
{
	int port = new_port(), p[2];
	port_event_t pe;

	(void)state;
	new_pipe(p);
	assert_int_equal(port_alert(port, PORT_ALERT_SET, 1, NULL), 0);
	assert_int_equal(port_send(port, 42, NULL), 0);
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    NULL), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(expect_event(port).portev_source, PORT_SOURCE_ALERT);
	assert_int_equal(port_alert(port, PORT_ALERT_SET, 0, NULL), 0);
	pe = expect_event(port);
	if (pe.portev_source == PORT_SOURCE_USER) {
		assert_int_equal(pe.portev_events, 42);
		pe = expect_event(port);
		assert_int_equal(pe.portev_source, PORT_SOURCE_FD);
	} else {
		assert_int_equal(pe.portev_source, PORT_SOURCE_FD);
		pe = expect_event(port);
		assert_int_equal(pe.portev_source, PORT_SOURCE_USER);
	}
	expect_nothing(port);
	/* Leaving alert mode when not in it is harmless. */
	assert_int_equal(port_alert(port, PORT_ALERT_SET, 0, NULL), 0);
}

struct waiter {
	int		port;
	int		ret;
	int		err;
	port_event_t	pe;
	pthread_t	tid;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct timespec ts = { 10, 0 };

	w->ret = port_get(w->port, &w->pe, &ts);
	w->err = errno;
	return NULL;
}

static void
alert_wakes_every_waiter(void **state)
{
	struct waiter w[4];
	int port = new_port(), i;

	(void)state;
	for (i = 0; i < 4; i++) {
		w[i].port = port;
		assert_int_equal(pthread_create(&w[i].tid, NULL, waiter_main,
		    &w[i]), 0);
	}
	usleep(100000);
	assert_int_equal(port_alert(port, PORT_ALERT_SET, 3, NULL), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(w[i].tid, NULL), 0);
		assert_int_equal(w[i].ret, 0);
		assert_int_equal(w[i].pe.portev_source, PORT_SOURCE_ALERT);
		assert_int_equal(w[i].pe.portev_events, 3);
	}
}

/* ---- port_get / port_getn ---- */

static void
getn_with_max_zero_reports_the_queue_length(void **state)
{
	int port = new_port(), i;
	uint_t n = 99;

	(void)state;
	assert_int_equal(port_getn(port, NULL, 0, &n, NULL), 0);
	assert_int_equal(n, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(port_send(port, i, NULL), 0);
	n = 0;
	assert_int_equal(port_getn(port, NULL, 0, &n, NULL), 0);
	assert_int_equal(n, 3);
	/* Nothing was consumed. */
	n = 0;
	assert_int_equal(port_getn(port, NULL, 0, &n, NULL), 0);
	assert_int_equal(n, 3);
}

static void
getn_with_nget_zero_returns_at_once(void **state)
{
	int port = new_port();
	port_event_t l[2];
	uint_t n = 0;

	(void)state;
	assert_int_equal(port_send(port, 1, NULL), 0);
	assert_int_equal(port_getn(port, l, 2, &n, NULL), 0);	/* no wait */
	assert_int_equal(n, 0);
	assert_int_equal(expect_event(port).portev_events, 1);
}

static void *
sender_main(void *arg)
{
	int port = *(int *)arg, i;

	for (i = 0; i < 3; i++) {
		usleep(30000);
		(void)port_send(port, i + 1, NULL);
	}
	return NULL;
}

static void
getn_waits_for_nget_events(void **state)
{
	int port = new_port();
	port_event_t l[8];
	uint_t n = 3;
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, sender_main, &port), 0);
	assert_int_equal(port_getn(port, l, 8, &n, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(n, 3);
	assert_int_equal(l[0].portev_events, 1);
	assert_int_equal(l[2].portev_events, 3);
}

static void
getn_returns_up_to_max(void **state)
{
	int port = new_port(), i;
	port_event_t l[4];
	uint_t n = 1;

	(void)state;
	for (i = 0; i < 6; i++)
		assert_int_equal(port_send(port, i, NULL), 0);
	assert_int_equal(port_getn(port, l, 4, &n, NULL), 0);
	assert_int_equal(n, 4);
	n = 1;
	assert_int_equal(port_getn(port, l, 4, &n, NULL), 0);
	assert_int_equal(n, 2);
}

static void
getn_zero_timeout_never_blocks_and_returns_zero(void **state)
{
	int port = new_port();
	port_event_t l[4];
	uint_t n = 2;

	(void)state;
	assert_int_equal(port_getn(port, l, 4, &n, &p_zero), 0);
	assert_int_equal(n, 0);
	/* What is there is returned, even fewer than asked for. */
	assert_int_equal(port_send(port, 8, NULL), 0);
	n = 2;
	assert_int_equal(port_getn(port, l, 4, &n, &p_zero), 0);
	assert_int_equal(n, 1);
	assert_int_equal(l[0].portev_events, 8);
}

static void
getn_expired_timeout_gives_etime_with_nget_set(void **state)
{
	struct timespec ts = { 0, 50000000 }, t0, t1;
	int port = new_port();
	port_event_t l[4];
	uint_t n = 2;

	(void)state;
	assert_int_equal(port_send(port, 8, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	errno = 0;
	assert_int_equal(port_getn(port, l, 4, &n, &ts), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(errno, ETIME);
	assert_int_equal(n, 1);
	assert_int_equal(l[0].portev_events, 8);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000000000L +
	    (t1.tv_nsec - t0.tv_nsec) >= 45000000L);
	/* With nothing at all. */
	n = 1;
	errno = 0;
	assert_int_equal(port_getn(port, l, 4, &n, &ts), -1);
	assert_int_equal(errno, ETIME);
	assert_int_equal(n, 0);
}

static void
get_expired_timeout_gives_etime(void **state)
{
	struct timespec ts = { 0, 20000000 };
	int port = new_port();
	port_event_t pe;

	(void)state;
	errno = 0;
	assert_int_equal(port_get(port, &pe, &ts), -1);
	assert_int_equal(errno, ETIME);
	errno = 0;
	assert_int_equal(port_get(port, &pe, &p_zero), -1);
	assert_int_equal(errno, ETIME);
}

static void
getn_bad_arguments_give_einval(void **state)
{
	struct timespec bad = { 0, 1000000000 }, neg = { -1, 0 };
	int port = new_port();
	port_event_t l[2];
	uint_t n = 1;

	(void)state;
	errno = 0;
	assert_int_equal(port_getn(port, l, 2, &n, &bad), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(port_getn(port, l, 2, &n, &neg), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(port_getn(port, l, 2, NULL, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(port_getn(port, NULL, 2, &n, NULL), -1);
	assert_int_equal(errno, EINVAL);
	n = 3;
	errno = 0;
	assert_int_equal(port_getn(port, l, 2, &n, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(port_get(port, l, &bad), -1);
	assert_int_equal(errno, EINVAL);
}

static void
get_with_null_event_gives_efault(void **state)
{
	int port = new_port();

	(void)state;
	errno = 0;
	assert_int_equal(port_get(port, NULL, &p_zero), -1);
	assert_int_equal(errno, EFAULT);
}

static void
functions_on_non_port_give_ebadfd_and_on_closed_ebadf(void **state)
{
	int kq = t_new_kq(), p[2], fds[3], i, err;
	port_event_t pe;
	uint_t n = 1;

	(void)state;
	new_pipe(p);
	fds[0] = kq;
	fds[1] = p[0];
	fds[2] = 100000;	/* not open */
	for (i = 0; i < 3; i++) {
		int want = i == 2 ? EBADF : EBADFD;

		errno = 0;
		assert_int_equal(port_get(fds[i], &pe, &p_zero), -1);
		assert_int_equal(errno, want);
		assert_int_equal(errno_of(port_getn(fds[i], &pe, 1, &n,
		    &p_zero)), want);
		assert_int_equal(errno_of(port_associate(fds[i],
		    PORT_SOURCE_FD, p[0], POLLIN, NULL)), want);
		assert_int_equal(errno_of(port_dissociate(fds[i],
		    PORT_SOURCE_FD, p[0])), want);
		assert_int_equal(errno_of(port_send(fds[i], 1, NULL)), want);
		assert_int_equal(errno_of(port_alert(fds[i], PORT_ALERT_SET,
		    1, NULL)), want);
		assert_int_equal(port_sendn(&fds[i], &err, 1, 1, NULL), 0);
		assert_int_equal(err, want);
	}
}

static void
kevent_on_port_gives_einval(void **state)
{
	int port = new_port();
	struct kevent kev;

	(void)state;
	errno = 0;
	assert_int_equal(kevent(port, NULL, 0, &kev, 1, &t_zero), -1);
	assert_int_equal(errno, EINVAL);
	EV_SET(&kev, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
	errno = 0;
	assert_int_equal(kevent(port, &kev, 1, NULL, 0, NULL), -1);
	assert_int_equal(errno, EINVAL);
}

static void
kevent_refuses_the_private_filters_of_ports(void **state)
{
	int kq = t_new_kq(), f;
	struct kevent kev;

	(void)state;
	for (f = -EVFILT_SYSCOUNT - 1; f >= -EVFILT_SYSCOUNT - 4; f--) {
		EV_SET(&kev, 0, f, EV_ADD, 0, 0, NULL);
		errno = 0;
		assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), -1);
		assert_int_equal(errno, EINVAL);
	}
}

static void
on_usr1(int sig)
{
	(void)sig;
}

struct killer {
	pthread_t	target;
};

static void *
killer_main(void *arg)
{
	struct killer *k = arg;

	usleep(100000);
	pthread_kill(k->target, SIGUSR1);
	return NULL;
}

static void
get_interrupted_by_signal_gives_eintr(void **state)
{
	struct sigaction sa, old;
	struct killer k;
	int port = new_port();
	port_event_t pe;
	pthread_t t;
	int r, e;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART */
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	k.target = pthread_self();
	assert_int_equal(pthread_create(&t, NULL, killer_main, &k), 0);
	errno = 0;
	r = port_get(port, &pe, NULL);
	e = errno;
	pthread_join(t, NULL);
	sigaction(SIGUSR1, &old, NULL);
	assert_int_equal(r, -1);
	assert_int_equal(e, EINTR);
}

/* ---- PORT_SOURCE_FILE ---- */

struct tfile {
	char		path[64];
	file_obj_t	fo;
};

/* A new file, its file_obj_t filled with its current times. */
static void
new_file(struct tfile *f)
{
	struct stat st;
	int fd;

	snprintf(f->path, sizeof(f->path), "/tmp/kq-portf-%ld-XXXXXX",
	    (long)getpid());
	fd = mkstemp(f->path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	assert_int_equal(stat(f->path, &st), 0);
	memset(&f->fo, 0, sizeof(f->fo));
	f->fo.fo_atime = st.st_atim;
	f->fo.fo_mtime = st.st_mtim;
	f->fo.fo_ctime = st.st_ctim;
	f->fo.fo_name = f->path;
}

static void
file_association_fires_at_once_when_times_differ(void **state)
{
	struct tfile f;
	int port = new_port();
	port_event_t pe;

	(void)state;
	new_file(&f);
	f.fo.fo_mtime.tv_sec -= 10;
	assert_int_equal(port_associate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo, FILE_MODIFIED | FILE_ATTRIB, (void *)6), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_source, PORT_SOURCE_FILE);
	assert_int_equal(pe.portev_object, (uintptr_t)&f.fo);
	assert_int_equal(pe.portev_events, FILE_MODIFIED);
	assert_ptr_equal(pe.portev_user, (void *)6);
	expect_nothing(port);
	unlink(f.path);
}

static void
file_same_times_fire_nothing_until_a_change(void **state)
{
	struct tfile f;
	int port = new_port(), fd;
	port_event_t pe;

	(void)state;
	new_file(&f);
	assert_int_equal(port_associate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo, FILE_MODIFIED, NULL), 0);
	expect_nothing(port);
	fd = open(f.path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "!", 1), 1);
	close(fd);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, FILE_MODIFIED);
	/* One-shot, like PORT_SOURCE_FD. */
	fd = open(f.path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "!", 1), 1);
	close(fd);
	expect_nothing(port);
	errno = 0;
	assert_int_equal(port_dissociate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo), -1);
	assert_int_equal(errno, ENOENT);
	unlink(f.path);
}

static void
file_attrib_and_access_are_reported_as_asked(void **state)
{
	struct tfile f;
	int port = new_port(), fd;
	char c;
	port_event_t pe;

	(void)state;
	new_file(&f);
	assert_int_equal(port_associate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo, FILE_ATTRIB, NULL), 0);
	assert_int_equal(chmod(f.path, 0640), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, FILE_ATTRIB);
	new_file(&f);	/* fresh times */
	assert_int_equal(port_associate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo, FILE_ACCESS, NULL), 0);
	fd = open(f.path, O_RDONLY);
	assert_int_equal(read(fd, &c, 1), 1);
	close(fd);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, FILE_ACCESS);
	unlink(f.path);
}

static void
file_truncation_is_file_trunc(void **state)
{
	struct tfile f;
	int port = new_port();
	port_event_t pe;

	(void)state;
	new_file(&f);
	assert_int_equal(port_associate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo, FILE_MODIFIED | FILE_TRUNC, NULL), 0);
	assert_int_equal(truncate(f.path, 1), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, FILE_MODIFIED | FILE_TRUNC);
	unlink(f.path);
}

static void
file_exceptions_are_reported_even_when_not_asked(void **state)
{
	struct tfile f;
	char to[80];
	int port = new_port();
	port_event_t pe;

	(void)state;
	new_file(&f);
	assert_int_equal(port_associate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo, FILE_ACCESS, NULL), 0);
	snprintf(to, sizeof(to), "%s.moved", f.path);
	assert_int_equal(rename(f.path, to), 0);
	pe = expect_event(port);
	assert_int_equal(pe.portev_events, FILE_RENAME_FROM);
	/* Associated again by its new name: deleting it is FILE_DELETE. */
	f.fo.fo_name = to;
	assert_int_equal(port_associate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo, 0, NULL), 0);
	expect_nothing(port);
	assert_int_equal(unlink(to), 0);
	pe = expect_event(port);
	assert_true(pe.portev_events & FILE_DELETE);
	assert_int_equal(pe.portev_events & ~FILE_EXCEPTION, 0);
}

static void
file_dissociate_and_missing_file(void **state)
{
	struct tfile f;
	int port = new_port(), fd;

	(void)state;
	new_file(&f);
	assert_int_equal(port_associate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo, FILE_MODIFIED, NULL), 0);
	assert_int_equal(port_dissociate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo), 0);
	fd = open(f.path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "!", 1), 1);
	close(fd);
	expect_nothing(port);
	unlink(f.path);
	errno = 0;
	assert_int_equal(port_associate(port, PORT_SOURCE_FILE,
	    (uintptr_t)&f.fo, FILE_MODIFIED, NULL), -1);
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_int_equal(port_associate(port, PORT_SOURCE_FILE, 0,
	    FILE_MODIFIED, NULL), -1);
	assert_int_equal(errno, EFAULT);
}

/* ---- the port descriptor ---- */

static void
port_descriptor_is_close_on_exec(void **state)
{
	int port = new_port();

	(void)state;
	assert_true(fcntl(port, F_GETFD) & FD_CLOEXEC);
}

static void
port_descriptor_is_readable_while_events_are_pending(void **state)
{
	int port = new_port(), p[2];
	struct pollfd pfd = { .fd = port, .events = POLLIN };
	port_event_t pe;

	(void)state;
	new_pipe(p);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(port_send(port, 1, NULL), 0);
	assert_int_equal(poll(&pfd, 1, 0), 1);
	assert_int_equal(port_get(port, &pe, &p_zero), 0);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    NULL), 0);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(poll(&pfd, 1, 1000), 1);
	assert_int_equal(port_get(port, &pe, &p_zero), 0);
	assert_int_equal(poll(&pfd, 1, 0), 0);
}

static void
close_of_port_wakes_waiter_with_ebadf(void **state)
{
	struct waiter w;
	int port = port_create();

	(void)state;
	assert_true(port >= 0);
	w.port = port;
	assert_int_equal(pthread_create(&w.tid, NULL, waiter_main, &w), 0);
	usleep(100000);
	assert_int_equal(close(port), 0);
	assert_int_equal(pthread_join(w.tid, NULL), 0);
	assert_int_equal(w.ret, -1);
	assert_int_equal(w.err, EBADF);
}

/* ---- threads ---- */

#define NTHR	4
#define NPIPE	8
#define NSEND	2000
#define NWRITE	200

struct pool {
	int		 port;
	int		 pipes[NPIPE][2];
	_Atomic int	 user_seen[NSEND];
	_Atomic int	 fd_events;
	_Atomic int	 bytes;
	_Atomic int	 stop;
	_Atomic int	 bad;
};

static void *
pool_main(void *arg)
{
	struct pool *P = arg;
	struct timespec ts = { 0, 20000000 };
	port_event_t l[8];
	uint_t n, i;

	while (!atomic_load(&P->stop)) {
		n = 1;
		if (port_getn(P->port, l, 8, &n, &ts) != 0 && errno != ETIME) {
			atomic_fetch_add(&P->bad, 1);
			break;
		}
		for (i = 0; i < n; i++) {
			if (l[i].portev_source == PORT_SOURCE_USER) {
				int k = l[i].portev_events;

				if (k < 0 || k >= NSEND ||
				    atomic_fetch_add(&P->user_seen[k], 1) != 0)
					atomic_fetch_add(&P->bad, 1);
			} else if (l[i].portev_source == PORT_SOURCE_FD) {
				int fd = (int)l[i].portev_object;
				char buf[64];
				ssize_t r;

				atomic_fetch_add(&P->fd_events, 1);
				while ((r = read(fd, buf, sizeof(buf))) > 0)
					atomic_fetch_add(&P->bytes, (int)r);
				if (port_associate(P->port, PORT_SOURCE_FD,
				    (uintptr_t)fd, POLLIN, l[i].portev_user) != 0)
					atomic_fetch_add(&P->bad, 1);
			} else
				atomic_fetch_add(&P->bad, 1);
		}
	}
	return NULL;
}

static void
threads_each_event_goes_to_exactly_one_waiter_and_none_is_lost(void **state)
{
	static struct pool P;
	pthread_t t[NTHR];
	int i, k;

	(void)state;
	memset(&P, 0, sizeof(P));
	P.port = new_port();
	for (i = 0; i < NPIPE; i++) {
		assert_int_equal(pipe2(P.pipes[i], O_NONBLOCK), 0);
		t_track(P.pipes[i][0]);
		t_track(P.pipes[i][1]);
		assert_int_equal(port_associate(P.port, PORT_SOURCE_FD,
		    P.pipes[i][0], POLLIN, NULL), 0);
	}
	for (i = 0; i < NTHR; i++)
		assert_int_equal(pthread_create(&t[i], NULL, pool_main, &P), 0);
	for (k = 0; k < NSEND; k++) {
		assert_int_equal(port_send(P.port, k, NULL), 0);
		if (k < NWRITE)
			assert_int_equal(write(P.pipes[k % NPIPE][1], "x", 1),
			    1);
		if (k % 64 == 0)
			sched_yield();
	}
	for (i = 0; i < 500; i++) {
		int done = atomic_load(&P.bytes) == NWRITE;

		for (k = 0; done && k < NSEND; k++)
			done = atomic_load(&P.user_seen[k]) == 1;
		if (done)
			break;
		usleep(10000);
	}
	atomic_store(&P.stop, 1);
	for (i = 0; i < NTHR; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&P.bad), 0);
	for (k = 0; k < NSEND; k++)
		assert_int_equal(atomic_load(&P.user_seen[k]), 1);
	assert_int_equal(atomic_load(&P.bytes), NWRITE);
	assert_true(atomic_load(&P.fd_events) >= NPIPE);
}

/* ---- fork ---- */

/* The program's fork child handler: a self-pipe, as a library makes. */
static _Atomic int child_pipe_armed;
static int child_pipe[2] = { -1, -1 };

static void
child_makes_pipe(void)
{
	if (atomic_load(&child_pipe_armed) && pipe(child_pipe) != 0)
		child_pipe[0] = child_pipe[1] = -1;
}

static void
fork_child_keeps_the_descriptors_its_own_fork_handler_opened(void **state)
{
	struct itimerspec its = { { 0, 0 }, { 10, 0 } };
	int port = new_port(), st;
	timer_t t;
	pid_t pid;

	(void)state;
	/* After the first port, before the first port timer: where a
	   library made in between registers its handler. */
	assert_int_equal(pthread_atfork(NULL, NULL, child_makes_pipe), 0);
	t = new_port_timer(port, NULL);
	assert_int_equal(timer_settime(t, 0, &its, NULL), 0);
	atomic_store(&child_pipe_armed, 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		T_EXIT(child_pipe[0] < 0 || fcntl(child_pipe[0], F_GETFD) < 0 ||
		    fcntl(child_pipe[1], F_GETFD) < 0);
	atomic_store(&child_pipe_armed, 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(timer_delete(t), 0);
	close(port);
}

static _Atomic int churn_stop;

/* timer_create() with SIGEV_PORT naming a pipe: each call fails, EBADFD. */
static void *
failing_port_timers(void *arg)
{
	port_notify_t pn = { .portnfy_port = *(int *)arg };
	struct sigevent sev;
	timer_t t;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_PORT;
	sev.sigev_value.sival_ptr = &pn;
	while (!atomic_load(&churn_stop))
		if (timer_create(CLOCK_MONOTONIC, &sev, &t) == 0)
			(void)timer_delete(t);
	return NULL;
}

static void
failed_port_timer_create_leaves_no_timerfd_in_fork_children(void **state)
{
	int p[2], bad = 0, i, st;
	pthread_t th;

	(void)state;
	assert_int_equal(pipe(p), 0);
	atomic_store(&churn_stop, 0);
	assert_int_equal(pthread_create(&th, NULL, failing_port_timers, &p[0]),
	    0);
	for (i = 0; i < 300; i++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0)	/* the program made no timerfd */
			T_EXIT(t_count_links("anon_inode:[timerfd]") != 0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		bad += WEXITSTATUS(st) != 0;
	}
	atomic_store(&churn_stop, 1);
	pthread_join(th, NULL);
	assert_int_equal(bad, 0);
	close(p[0]);
	close(p[1]);
}

static void
fork_child_keeps_the_number_but_cannot_use_the_port(void **state)
{
	int port = new_port(), p[2], st;
	port_event_t pe;
	pid_t pid;

	(void)state;
	new_pipe(p);
	assert_int_equal(port_associate(port, PORT_SOURCE_FD, p[0], POLLIN,
	    (void *)4), 0);
	assert_int_equal(port_send(port, 1, NULL), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/*
		 * The number stays open (illumos children inherit it, and
		 * libev closes it after fork), but the port is unusable:
		 * EBADF.  Closing it and making a new port works.
		 */
		int ok = port_get(port, &pe, &p_zero) == -1 && errno == EBADF &&
		    port_send(port, 1, NULL) == -1 && errno == EBADF &&
		    fcntl(port, F_GETFD) >= 0 && close(port) == 0;
		int q = port_create();

		ok = ok && q >= 0 && port_send(q, 3, NULL) == 0 &&
		    port_get(q, &pe, &p_zero) == 0 && pe.portev_events == 3;
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* The parent's port is untouched. */
	assert_int_equal(expect_event(port).portev_source, PORT_SOURCE_USER);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_ptr_equal(expect_event(port).portev_user, (void *)4);
}

#define T(f)	cmocka_unit_test_teardown(f, teardown)

struct port_waiter {
	int		port;
	int		go[2];		/* -1: wait at once */
	struct timespec	tmo;
	atomic_int	returned;
};

static void *
port_get_after_go(void *arg)
{
	struct port_waiter *pw = arg;
	port_event_t pe;
	char c;

	pthread_cleanup_push(t_cancel_cleanup, NULL);
	if (pw->go[0] >= 0) {
		(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (read(pw->go[0], &c, 1) != 1)
			return NULL;
		(void)pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	}
	(void)port_get(pw->port, &pe, &pw->tmo);
	atomic_store(&pw->returned, 1);
	pthread_cleanup_pop(0);
	return NULL;
}

/*
 * port_get() is a cancellation point, as illumos's: a thread asleep in it
 * with a timeout (whole milliseconds or not) acts on a cancellation at
 * once, not when its 20 s are over; one with a cancellation already
 * pending acts at its entry, even with a zero timeout.
 */
static void
port_get_acts_on_cancellation_in_its_wait_and_at_its_entry(void **state)
{
	static const long nsecs[] = { 0, 500000 };

	(void)state;
	for (int c = 0; c < 3; c++) {
		struct port_waiter pw = { .go = { -1, -1 } };
		struct timespec t0, t1;
		pthread_t t;
		void *res;

		pw.port = port_create();
		assert_true(pw.port >= 0);
		if (c < 2) {
			pw.tmo.tv_sec = 20;
			pw.tmo.tv_nsec = nsecs[c];
		} else
			assert_int_equal(pipe(pw.go), 0);	/* pending */
		assert_int_equal(pthread_create(&t, NULL, port_get_after_go,
		    &pw), 0);
		if (c < 2)
			usleep(50000);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(pthread_cancel(t), 0);
		if (c == 2)
			assert_int_equal(write(pw.go[1], "g", 1), 1);
		assert_int_equal(pthread_join(t, &res), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		assert_true(res == PTHREAD_CANCELED);
		assert_int_equal(atomic_load(&pw.returned), 0);
		assert_true(t1.tv_sec - t0.tv_sec < 10);
		if (c == 2) {
			close(pw.go[0]);
			close(pw.go[1]);
		}
		close(pw.port);
	}
}

/*
 * port_getn() on a thread with the smallest stack the C library allows
 * (four times that under sanitizers, whose frames are larger): 600
 * readable pipes associated, a user event sent, room for 1 to 1000, no
 * wait, a short wait and a long one.  Each call returns at least
 * min(room, 600) events, no descriptor twice.  A port_getn() is a system
 * call on illumos; kq's collection under it once overflowed such a
 * stack.  Runs in a child: an overflow kills only it.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GETN_STACK_FACTOR	4
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GETN_STACK_FACTOR	4
#endif
#endif
#ifndef GETN_STACK_FACTOR
#define GETN_STACK_FACTOR	1
#endif
#define GETN_FDS	600

struct getn_small {
	int		 port;
	int		 fd[GETN_FDS];
	int		 bad;
	port_event_t	 pe[1000];
	unsigned char	 seen[65536];
};

static void *
getn_small_thread(void *arg)
{
	static const int room[] = { 1, 2, 8, 9, 31, 32, 33, 64, 255, 256,
	    257, 511, 512, 513, 600, 1000 };
	struct getn_small *g = arg;
	struct timespec tmo[3] = { { 0, 0 }, { 0, 1000000 }, { 1, 0 } };
	int i, k, j;

	for (i = 0; i < (int)(sizeof(room) / sizeof(room[0])); i++)
		for (k = 0; k < 3; k++) {
			uint_t nget = 1, want = room[i] < GETN_FDS ?
			    (uint_t)room[i] : GETN_FDS;

			for (j = 0; j < GETN_FDS; j++)
				if (port_associate(g->port, PORT_SOURCE_FD,
				    (uintptr_t)g->fd[j], POLLIN, NULL) != 0)
					g->bad++;
			if (port_send(g->port, 1, NULL) != 0)
				g->bad++;
			if (port_getn(g->port, g->pe, (uint_t)room[i], &nget,
			    &tmo[k]) != 0 || nget < want ||
			    nget > (uint_t)room[i])
				g->bad++;
			memset(g->seen, 0, sizeof(g->seen));
			for (j = 0; j < (int)nget && j < room[i]; j++) {
				if (g->pe[j].portev_source != PORT_SOURCE_FD)
					continue;
				if (g->pe[j].portev_object >= sizeof(g->seen) ||
				    g->seen[g->pe[j].portev_object]++)
					g->bad++;
			}
		}
	return NULL;
}

static void
getn_on_a_thread_with_the_smallest_stack_returns_every_event(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static struct getn_small g;
		long min = sysconf(_SC_THREAD_STACK_MIN);
		pthread_attr_t at;
		pthread_t t;
		int i, p[2];

		if (min < PTHREAD_STACK_MIN)
			min = PTHREAD_STACK_MIN;
		if ((g.port = port_create()) < 0)
			_exit(2);
		for (i = 0; i < GETN_FDS; i++) {
			if (pipe(p) != 0 || write(p[1], "x", 1) != 1)
				_exit(3);
			g.fd[i] = p[0];
		}
		if (pthread_attr_init(&at) != 0 ||
		    pthread_attr_setstacksize(&at, (size_t)min *
		    GETN_STACK_FACTOR) != 0 ||
		    pthread_create(&t, &at, getn_small_thread, &g) != 0 ||
		    pthread_join(t, NULL) != 0)
			_exit(4);
		_exit(g.bad == 0 ? 0 : 5);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("the small-stack thread died of signal %d",
		    WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(fd_association_yields_one_event_then_is_gone),
		T(fd_ready_at_association_is_queued_at_once),
		T(fd_reassociation_replaces_events_and_user),
		T(fd_reassociation_of_pending_event_yields_one_event),
		T(fd_events_are_poll_revents),
		T(fd_pollpri_reports_out_of_band_data),
		T(fd_regular_file_is_always_ready),
		T(fd_close_removes_association),
		T(fd_close_with_dup_open_removes_association),
		T(fd_dissociate_prevents_the_event),
		T(fd_dissociate_of_never_associated_gives_enoent),
		T(fd_associate_of_bad_descriptor_gives_ebadfd),
		T(associate_of_unsupported_source_gives_einval),
		T(fd_same_descriptor_on_two_ports_fires_on_both),
		T(file_association_fires_at_once_when_times_differ),
		T(file_same_times_fire_nothing_until_a_change),
		T(file_attrib_and_access_are_reported_as_asked),
		T(file_truncation_is_file_trunc),
		T(file_exceptions_are_reported_even_when_not_asked),
		T(file_dissociate_and_missing_file),
		T(timer_sigev_port_with_no_descriptor_free_fails_eagain),
		T(timer_sigev_port_delivers_timer_events),
		T(timer_events_count_expirations_since_last_retrieval),
		T(timer_other_notifications_go_to_the_c_library),
		T(timer_sigev_port_errors),
		T(timer_of_closed_port_is_inert),
		T(user_send_queues_event_with_object_zero),
		T(user_sends_are_separate_events_in_order),
		T(user_sendn_sends_to_each_port_and_fills_errors),
		T(user_sendn_with_no_entries_gives_einval),
		T(alert_is_returned_by_every_get_and_not_consumed),
		T(alert_set_on_alerted_port_replaces_it),
		T(alert_update_on_alerted_port_gives_ebusy),
		T(alert_flags_both_einval_other_sets_events_zero_always_clears),
		T(port_whose_alert_was_cleared_polls_not_readable),
		T(getn_with_max_zero_counts_the_queue_in_alert_mode),
		T(getn_waiting_for_more_when_alerted_returns_alert_alone_or_its_events),
		T(alert_events_zero_leaves_alert_mode_and_keeps_queued_events),
		T(alert_wakes_every_waiter),
		T(getn_with_max_zero_reports_the_queue_length),
		T(getn_with_nget_zero_returns_at_once),
		T(getn_waits_for_nget_events),
		T(getn_returns_up_to_max),
		T(getn_zero_timeout_never_blocks_and_returns_zero),
		T(getn_expired_timeout_gives_etime_with_nget_set),
		T(get_expired_timeout_gives_etime),
		T(getn_bad_arguments_give_einval),
		T(get_with_null_event_gives_efault),
		T(functions_on_non_port_give_ebadfd_and_on_closed_ebadf),
		T(kevent_on_port_gives_einval),
		T(kevent_refuses_the_private_filters_of_ports),
		T(get_interrupted_by_signal_gives_eintr),
		T(port_descriptor_is_close_on_exec),
		T(port_descriptor_is_readable_while_events_are_pending),
		T(close_of_port_wakes_waiter_with_ebadf),
		T(threads_each_event_goes_to_exactly_one_waiter_and_none_is_lost),
		T(fork_child_keeps_the_number_but_cannot_use_the_port),
		T(fork_child_keeps_the_descriptors_its_own_fork_handler_opened),
		T(failed_port_timer_create_leaves_no_timerfd_in_fork_children),
		T(port_get_acts_on_cancellation_in_its_wait_and_at_its_entry),
		T(getn_on_a_thread_with_the_smallest_stack_returns_every_event),
	};

	return t_run_group(tests, NULL, NULL);
}
