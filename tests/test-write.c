/*
 * test-write.c -- EVFILT_WRITE and EVFILT_EMPTY.
 *
 * FreeBSD reports the space left in the write buffer as `data` for pipes
 * and sockets, sets EV_EOF once the reading side is gone, and fires
 * EVFILT_EMPTY when a socket's send buffer holds no unacknowledged data.
 */
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <time.h>

#include "helpers.h"

/* ------------------------------------------------------------------ */
/* Local helpers                                                      */
/* ------------------------------------------------------------------ */



static int
wait_events(int kq, struct kevent *ev, int nev, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	int r;

	do
		r = kevent(kq, NULL, 0, ev, nev, &ts);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		fprintf(stderr, "kevent wait: %s\n", strerror(errno));
		fail();
	}
	return r;
}

/* Write to a non-blocking descriptor until it reports EAGAIN. */
static size_t
fill_until_eagain(int fd)
{
	static char buf[4096];
	size_t total = 0;
	ssize_t n;

	memset(buf, 'f', sizeof(buf));
	for (;;) {
		n = write(fd, buf, sizeof(buf));
		if (n > 0) {
			total += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n < 0);
		assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
		break;
	}
	/* Top up byte by byte so that no space at all is left. */
	for (;;) {
		n = write(fd, buf, 1);
		if (n == 1) {
			total++;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n < 0);
		assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
		break;
	}
	return total;
}

static size_t
drain(int fd)
{
	char buf[4096];
	size_t total = 0;
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			total += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n < 0);
		assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
		break;
	}
	return total;
}

/* A connected TCP pair over 127.0.0.1: *cli connected to *srv. */
static void
tcp_pair(int *cli, int *srv)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int ls;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(ls >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = 0;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(ls, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(ls, 1), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&sin, &len), 0);

	*cli = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*cli >= 0);
	assert_int_equal(connect(*cli, (struct sockaddr *)&sin, sizeof(sin)), 0);
	*srv = accept(ls, NULL, NULL);
	assert_true(*srv >= 0);
	close(ls);
}

/* ------------------------------------------------------------------ */
/* Pipes                                                              */
/* ------------------------------------------------------------------ */

/*
 * The write end of a fresh pipe is writable with data = free space, and
 * data drops by exactly the number of bytes written (FreeBSD:
 * pipe_buffer.size - pipe_buffer.cnt).
 */
static void
pipe_write_data_is_free_space(void **state)
{
	int kq, p[2];
	struct kevent ev;
	int64_t space0;
	char buf[1000];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, p[1], EVFILT_WRITE, EV_ADD, 0, 0, (void *)0x77);

	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, p[1]);
	assert_int_equal(ev.filter, EVFILT_WRITE);
	assert_ptr_equal(ev.udata, (void *)0x77);
	assert_int_equal(ev.flags & EV_EOF, 0);
	assert_true(ev.data > 1000);
	space0 = ev.data;

	memset(buf, 'w', sizeof(buf));
	write_all(p[1], buf, sizeof(buf));
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, space0 - 1000);

	/* Reading it back restores the space. */
	set_nonblock(p[0]);
	assert_int_equal(drain(p[0]), 1000);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, space0);

	close(kq);
	close(p[0]);
	close(p[1]);
}

/* A full pipe is not writable; draining it makes it writable again. */
static void
pipe_full_not_writable_until_drained(void **state)
{
	int kq, p[2];
	struct kevent ev;
	int64_t space0;
	size_t filled;

	(void)state;
	assert_int_equal(pipe(p), 0);
	set_nonblock(p[0]);
	set_nonblock(p[1]);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, p[1], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	ev = t_expect_one(kq);
	space0 = ev.data;

	filled = fill_until_eagain(p[1]);
	assert_true(filled > 0);
	t_expect_none(kq);

	assert_int_equal(drain(p[0]), filled);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, p[1]);
	assert_int_equal(ev.data, space0);
	assert_int_equal(ev.flags & EV_EOF, 0);

	close(kq);
	close(p[0]);
	close(p[1]);
}

/* The same with EV_CLEAR: the drain is a new edge. */
static void
pipe_full_clear_knote_fires_after_drain(void **state)
{
	int kq, p[2];
	struct kevent ev;
	size_t filled;

	(void)state;
	assert_int_equal(pipe(p), 0);
	set_nonblock(p[0]);
	set_nonblock(p[1]);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, p[1], EVFILT_WRITE, EV_ADD | EV_CLEAR, 0, 0, NULL);
	ev = t_expect_one(kq);
	t_expect_none(kq);

	filled = fill_until_eagain(p[1]);
	t_expect_none(kq);

	assert_int_equal(drain(p[0]), filled);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, p[1]);
	assert_true(ev.data > 0);
	t_expect_none(kq);

	close(kq);
	close(p[0]);
	close(p[1]);
}

/* Closing the read end sets EV_EOF on the write end's knote. */
static void
pipe_write_eof_when_reader_closes(void **state)
{
	int kq, p[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, p[1], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, 0);

	assert_int_equal(close(p[0]), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, p[1]);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);

	close(kq);
	close(p[1]);
}

/* A full pipe whose reader goes away reports EV_EOF although no space. */
static void
pipe_full_write_eof_when_reader_closes(void **state)
{
	int kq, p[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(pipe(p), 0);
	set_nonblock(p[1]);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, p[1], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	(void)t_expect_one(kq);
	(void)fill_until_eagain(p[1]);
	t_expect_none(kq);

	assert_int_equal(close(p[0]), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);

	close(kq);
	close(p[1]);
}

/* ------------------------------------------------------------------ */
/* Sockets                                                            */
/* ------------------------------------------------------------------ */

/* A connected socket is writable with data > 0; peer close → EV_EOF. */
static void
socket_writable_and_eof_on_peer_close(void **state)
{
	int kq, sv[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD, 0, 0, (void *)0x88);

	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, sv[0]);
	assert_int_equal(ev.filter, EVFILT_WRITE);
	assert_ptr_equal(ev.udata, (void *)0x88);
	assert_true(ev.data > 0);
	assert_int_equal(ev.flags & EV_EOF, 0);

	assert_int_equal(close(sv[1]), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, sv[0]);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);

	close(kq);
	close(sv[0]);
}

/*
 * NOTE_LOWAT: the write filter fires only once the free space reaches
 * data; a later EV_ADD with a lower mark fires at once.
 */
static void
write_note_lowat_fires_only_at_the_mark(void **state)
{
	int kq, sv[2];
	struct kevent ev;
	int64_t space;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	ev = t_expect_one(kq);
	space = ev.data;
	assert_true(space > 0);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD, NOTE_LOWAT, space * 2, NULL);
	t_expect_none(kq);
	t_change(kq, sv[0], EVFILT_WRITE, EV_ADD, NOTE_LOWAT, space, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, sv[0]);
	assert_int_equal(ev.filter, EVFILT_WRITE);
	assert_true(ev.data >= space);
	close(kq);
	close(sv[0]);
	close(sv[1]);
}

/*
 * TCP: a FIN from the peer only ends the peer's sending (we may still
 * send, so no EV_EOF on the write filter yet); once our send draws a
 * reset, the socket can send no more and EVFILT_WRITE reports EV_EOF with
 * fflags = the socket error (FreeBSD: SBS_CANTSENDMORE, so_error).
 */
static void
tcp_write_eof_after_peer_reset(void **state)
{
	int kq, c, s, r = 0;
	struct kevent ev;

	(void)state;
	tcp_pair(&c, &s);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, c, EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_true(ev.data > 0);
	assert_int_equal(ev.flags & EV_EOF, 0);

	assert_int_equal(close(s), 0);
	/* Give the FIN a moment, then provoke the reset. */
	{
		struct timespec d = { 0, 50 * 1000000L };

		nanosleep(&d, NULL);
	}
	assert_int_equal(send(c, "x", 1, MSG_NOSIGNAL), 1);

	/* The reset travels through the stack: allow up to 1 s. */
	memset(&ev, 0, sizeof(ev));
	for (int i = 0; i < 50; i++) {
		r = wait_events(kq, &ev, 1, 20);
		if (r == 1 && (ev.flags & EV_EOF))
			break;
		struct timespec d = { 0, 10 * 1000000L };
		nanosleep(&d, NULL);
	}
	assert_int_equal(r, 1);
	assert_int_equal(ev.ident, c);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	/* FreeBSD: fflags is so_error, which stays for the application. */
	assert_true(ev.fflags != 0);
	assert_int_equal(t_so_error(c), (int)ev.fflags);

	close(kq);
	close(c);
}

/* ------------------------------------------------------------------ */
/* EVFILT_EMPTY                                                       */
/* ------------------------------------------------------------------ */

/* An idle connected TCP socket has an empty send buffer: fires at once. */
static void
empty_fires_at_once_on_idle_connected_socket(void **state)
{
	int kq, c, s;
	struct kevent ev;

	(void)state;
	tcp_pair(&c, &s);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, c, EVFILT_EMPTY, EV_ADD, 0, 0, (void *)0x99);

	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, c);
	assert_int_equal(ev.filter, EVFILT_EMPTY);
	assert_ptr_equal(ev.udata, (void *)0x99);

	close(kq);
	close(c);
	close(s);
}

/*
 * A level-triggered EMPTY knote that stays true stays pending (FreeBSD's
 * scan re-queues it): its kqueue keeps polling readable after each
 * report, and a kqueue that watches it sees it, as a zero-timeout
 * kevent() keeps returning it.
 */
static void
empty_knote_still_true_keeps_its_kqueue_readable(void **state)
{
	int kq, outer, s[2];
	struct pollfd p;
	struct kevent ev;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
	assert_true((kq = kqueue()) >= 0);
	assert_true((outer = kqueue()) >= 0);
	t_change(kq, s[0], EVFILT_EMPTY, EV_ADD, 0, 0, NULL);
	p.fd = kq;
	p.events = POLLIN;
	for (int i = 0; i < 4; i++) {
		ev = t_expect_one(kq);
		assert_int_equal(ev.filter, EVFILT_EMPTY);
		p.revents = 0;
		assert_int_equal(poll(&p, 1, 0), 1);
	}
	t_change(outer, kq, EVFILT_READ, EV_ADD, 0, 0, NULL);
	ev = t_expect_one(outer);
	assert_int_equal(ev.ident, kq);
	close(outer);
	close(kq);
	close(s[0]);
	close(s[1]);
}

/*
 * An EMPTY knote with EV_DISPATCH on a socket whose peer has not read
 * what it was sent is not true, and kevent() sleeps for its timeout: it
 * used CPU for the whole of it (a one-shot registration of the writable
 * socket re-armed and fired again at once), and the kqueue polled
 * readable with nothing to report.
 */
static void
empty_dispatch_knote_of_unsent_data_lets_kevent_sleep(void **state)
{
	static const int flags[] = { EV_DISPATCH, EV_DISPATCH | EV_CLEAR };
	struct timespec tmo = { 0, 200000000 };
	struct kevent ev;
	struct pollfd p;
	int kq, s[2];

	(void)state;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct timespec c0, c1;
		int64_t used;

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
		assert_int_equal(write(s[1], "x", 1), 1);
		assert_true((kq = kqueue()) >= 0);
		t_change(kq, s[1], EVFILT_EMPTY, EV_ADD | flags[i], 0, 0,
		    NULL);
		assert_int_equal(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0),
		    0);
		assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &tmo), 0);
		assert_int_equal(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1),
		    0);
		used = (c1.tv_sec - c0.tv_sec) * 1000000000LL +
		    (c1.tv_nsec - c0.tv_nsec);
		/* A sleep costs next to nothing; the spin cost it all. */
		assert_true(used < 100000000);
		p.fd = kq;
		p.events = POLLIN;
		p.revents = 0;
		assert_int_equal(poll(&p, 1, 0), 0);
		close(kq);
		close(s[0]);
		close(s[1]);
	}
}

/*
 * A listening socket has no send buffer: FreeBSD reports it empty, at
 * once, and with EV_CLEAR only once.
 */
static void
empty_fires_at_once_on_listening_socket(void **state)
{
	struct sockaddr_in a;
	struct kevent ev;
	int kq, l;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((l = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 5), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, l, EVFILT_EMPTY, EV_ADD, 0, 0, NULL);
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.ident, l);
	assert_int_equal(ev.filter, EVFILT_EMPTY);
	assert_int_equal(ev.data, 0);
	close(kq);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, l, EVFILT_EMPTY, EV_ADD | EV_CLEAR, 0, 0, NULL);
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.filter, EVFILT_EMPTY);
	assert_int_equal(wait_events(kq, &ev, 1, 50), 0);
	close(kq);
	close(l);
}

/*
 * FreeBSD evaluates a knote's filter again after every change that keeps
 * it: an EV_CLEAR EMPTY knote on a socket that stays empty, reported once,
 * is reported again after another EV_ADD, and after EV_DISABLE and
 * EV_ENABLE (a connected TCP socket, a Unix-domain one, a listener).
 */
static void
empty_clear_knote_added_or_enabled_again_reports_an_empty_socket_again(
    void **state)
{
	struct sockaddr_in a;
	struct kevent ev;
	int kq, fds[5], i;

	(void)state;
	tcp_pair(&fds[0], &fds[1]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, &fds[2]), 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((fds[4] = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(fds[4], (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fds[4], 5), 0);
	for (i = 0; i < 5; i += 2) {	/* fds 0, 2, 4 */
		assert_true((kq = kqueue()) >= 0);
		t_change(kq, fds[i], EVFILT_EMPTY, EV_ADD | EV_CLEAR, 0, 0,
		    NULL);
		assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
		assert_int_equal(wait_events(kq, &ev, 1, 20), 0);
		t_change(kq, fds[i], EVFILT_EMPTY, EV_ADD | EV_CLEAR, 0, 0,
		    NULL);
		assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
		assert_int_equal(ev.filter, EVFILT_EMPTY);
		assert_int_equal(wait_events(kq, &ev, 1, 20), 0);
		t_change(kq, fds[i], EVFILT_EMPTY, EV_DISABLE, 0, 0, NULL);
		t_change(kq, fds[i], EVFILT_EMPTY, EV_ENABLE, 0, 0, NULL);
		assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
		assert_int_equal(ev.filter, EVFILT_EMPTY);
		assert_int_equal(wait_events(kq, &ev, 1, 20), 0);
		close(kq);
	}
	for (i = 0; i < 5; i++)
		close(fds[i]);
}

/* Receive exactly len bytes on a blocking socket. */
static void
recv_exact(int fd, size_t len)
{
	char buf[256];

	while (len > 0) {
		ssize_t n = recv(fd, buf, len < sizeof(buf) ? len : sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n > 0);
		len -= (size_t)n;
	}
}

/*
 * With EV_CLEAR: after the initial event, sending data and having it
 * acknowledged by the peer (which reads it) fires EVFILT_EMPTY again.
 */
static void
empty_fires_again_when_sent_data_acknowledged(void **state)
{
	int kq, c, s;
	struct kevent ev;
	char buf[100];

	(void)state;
	tcp_pair(&c, &s);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, c, EVFILT_EMPTY, EV_ADD | EV_CLEAR, 0, 0, NULL);
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.filter, EVFILT_EMPTY);

	memset(buf, 'e', sizeof(buf));
	assert_int_equal(send(c, buf, sizeof(buf), MSG_NOSIGNAL), 100);
	recv_exact(s, 100);

	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.ident, c);
	assert_int_equal(ev.filter, EVFILT_EMPTY);

	close(kq);
	close(c);
	close(s);
}

/*
 * With EV_CLEAR on a Unix-domain socket, whose send queue has no count of
 * bytes the peer took: data sent and read by the peer before kevent() is
 * called fires EVFILT_EMPTY again, once a round (FreeBSD wakes the
 * sender's filters on every read of its peer).
 */
static void
empty_clear_on_unix_socket_fires_when_the_peer_drains_before_a_check(
    void **state)
{
	struct kevent ev;
	char buf[100];
	int kq, sv[2], round;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, sv[0], EVFILT_EMPTY, EV_ADD | EV_CLEAR, 0, 0, NULL);
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(wait_events(kq, &ev, 1, 20), 0);
	memset(buf, 'u', sizeof(buf));
	for (round = 0; round < 5; round++) {
		assert_int_equal(write(sv[0], buf, sizeof(buf)), 100);
		assert_int_equal(read(sv[1], buf, sizeof(buf)), 100);
		assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
		assert_int_equal(ev.ident, sv[0]);
		assert_int_equal(ev.filter, EVFILT_EMPTY);
		assert_int_equal(wait_events(kq, &ev, 1, 20), 0);
	}
	close(kq);
	close(sv[0]);
	close(sv[1]);
}

/*
 * With EV_CLEAR on a Unix-domain socket, each drain to empty is reported
 * once, also when a call looks at the socket while it is not empty, and
 * the calls after the drain take one event at a time or several (FreeBSD:
 * one activation per drain, and a knote reported is not reported again
 * until the next one).  Stream and datagram sockets, 40 rounds each.
 */
static void
empty_clear_on_unix_socket_reports_each_drain_once(void **state)
{
	static const int types[] = { SOCK_STREAM, SOCK_DGRAM };
	struct kevent ev[8];
	char buf[100];
	int kq, sv[2], t, round, k, got;

	(void)state;
	memset(buf, 'u', sizeof(buf));
	for (t = 0; t < 2; t++) {
		assert_int_equal(socketpair(AF_UNIX, types[t], 0, sv), 0);
		assert_true((kq = kqueue()) >= 0);
		t_change(kq, sv[0], EVFILT_EMPTY, EV_ADD | EV_CLEAR, 0, 0,
		    NULL);
		assert_int_equal(wait_events(kq, ev, 8, 1000), 1);
		for (round = 0; round < 40; round++) {
			assert_int_equal(write(sv[0], buf, sizeof(buf)), 100);
			assert_int_equal(wait_events(kq, ev, 8, 0), 0);
			assert_int_equal(read(sv[1], buf, sizeof(buf)), 100);
			got = 0;
			for (k = 0; k < 6; k++) {
				got += wait_events(kq, ev, round % 2 ? 1 : 8,
				    0);
				usleep(200);
			}
			got += wait_events(kq, ev, 8, 20);
			if (got != 1)
				fprintf(stderr, "%s round %d: %d reports\n",
				    t ? "dgram" : "stream", round, got);
			assert_int_equal(got, 1);
		}
		close(kq);
		close(sv[0]);
		close(sv[1]);
	}
}

/*
 * EVFILT_EMPTY on a closed number fails with EBADF, also as the kqueue's
 * first EMPTY knote (kq then makes a descriptor of its own, which may
 * take that very number), and the kqueue goes on working.
 */
static void
empty_added_on_a_closed_number_fails_ebadf(void **state)
{
	struct kevent ch, ev;
	int kq, fd, sv[2], i;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, sv[1], EVFILT_WRITE, EV_ADD | EV_DISABLE, 0, 0, NULL);
	for (i = 0; i < 2; i++) {
		fd = dup(sv[0]);
		assert_true(fd >= 0);
		assert_int_equal(close(fd), 0);	/* the lowest free number */
		EV_SET(&ch, fd, EVFILT_EMPTY, EV_ADD, 0, 0, NULL);
		errno = 0;
		assert_int_equal(kevent(kq, &ch, 1, NULL, 0, NULL), -1);
		assert_int_equal(errno, EBADF);
	}
	t_change(kq, sv[0], EVFILT_EMPTY, EV_ADD, 0, 0, NULL);
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.ident, sv[0]);
	assert_int_equal(ev.filter, EVFILT_EMPTY);
	close(kq);
	close(sv[0]);
	close(sv[1]);
}

/*
 * Data sent after the peer closed its socket is answered with a reset:
 * it is never acknowledged, but the connection is gone, and FreeBSD
 * empties the send buffer when it drops (soisdisconnected), so
 * EVFILT_EMPTY fires, once with EV_CLEAR.
 */
static void
empty_fires_when_connection_dropped_with_data_unacknowledged(void **state)
{
	int kq, c, s, r = 0;
	struct kevent ev;

	(void)state;
	tcp_pair(&c, &s);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, c, EVFILT_EMPTY, EV_ADD | EV_CLEAR, 0, 0, NULL);
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(wait_events(kq, &ev, 1, 20), 0);
	assert_int_equal(close(s), 0);
	usleep(20000);
	assert_int_equal(send(c, "hello", 5, MSG_NOSIGNAL), 5);
	for (int i = 0; i < 100 && r == 0; i++)
		r = wait_events(kq, &ev, 1, 10);
	assert_int_equal(r, 1);
	assert_int_equal(ev.ident, c);
	assert_int_equal(ev.filter, EVFILT_EMPTY);
	assert_int_equal(ev.data, 0);
	/* Reported once: the buffer stays empty. */
	assert_int_equal(wait_events(kq, &ev, 1, 30), 0);

	close(kq);
	close(c);
}

/*
 * EVFILT_EMPTY knotes on several sockets: deleting one (EV_DELETE),
 * closing the socket of another and disabling a third leave the others
 * reporting, each once per call; the disabled one reports again when
 * enabled.
 */
static void
empty_knotes_outlive_their_neighbours_deleted_closed_or_disabled(void **state)
{
	enum { NS = 6 };
	int kq, c[NS], s[NS], seen[NS], r;
	struct kevent ev[NS + 1];

	(void)state;
	assert_true((kq = kqueue()) >= 0);
	for (int i = 0; i < NS; i++) {
		tcp_pair(&c[i], &s[i]);
		t_change(kq, c[i], EVFILT_EMPTY, EV_ADD, 0, 0,
		    (void *)(intptr_t)i);
	}
	t_change(kq, c[1], EVFILT_EMPTY, EV_DELETE, 0, 0, NULL);
	assert_int_equal(close(c[3]), 0);
	t_change(kq, c[4], EVFILT_EMPTY, EV_DISABLE, 0, 0, NULL);
	for (int round = 0; round < 3; round++) {
		memset(seen, 0, sizeof(seen));
		r = wait_events(kq, ev, NS + 1, 1000);
		for (int k = 0; k < r; k++) {
			int i = (int)(intptr_t)ev[k].udata;

			assert_int_equal(ev[k].filter, EVFILT_EMPTY);
			assert_true(i >= 0 && i < NS);
			assert_int_equal(ev[k].ident, c[i]);
			seen[i]++;
		}
		assert_int_equal(r, 3);
		assert_int_equal(seen[0] + seen[2] + seen[5], 3);
	}
	t_change(kq, c[4], EVFILT_EMPTY, EV_ENABLE, 0, 0, NULL);
	r = wait_events(kq, ev, NS + 1, 1000);
	assert_int_equal(r, 4);
	for (int i = 0; i < NS; i++) {
		if (i != 3)
			close(c[i]);
		close(s[i]);
	}
	close(kq);
}

/* Level-triggered, registered after the send: fires once acknowledged. */
static void
empty_fires_after_send_acknowledged_level(void **state)
{
	int kq, c, s;
	struct kevent ev;
	char buf[100];

	(void)state;
	tcp_pair(&c, &s);
	assert_true((kq = kqueue()) >= 0);

	memset(buf, 'e', sizeof(buf));
	assert_int_equal(send(c, buf, sizeof(buf), MSG_NOSIGNAL), 100);
	t_change(kq, c, EVFILT_EMPTY, EV_ADD, 0, 0, NULL);
	recv_exact(s, 100);

	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.ident, c);
	assert_int_equal(ev.filter, EVFILT_EMPTY);

	close(kq);
	close(c);
	close(s);
}

/*
 * A socket whose send buffer is full is shut down for writing: FreeBSD
 * reports its WRITE knote at once (EV_EOF, no more can be sent).
 */
static void
write_knote_of_full_socket_shut_down_for_writing_fires_at_once(void **state)
{
	int kq, c, s, fl;
	struct kevent ev;
	char buf[65536];

	(void)state;
	tcp_pair(&c, &s);
	assert_true((kq = kqueue()) >= 0);
	fl = fcntl(c, F_GETFL);
	assert_int_equal(fcntl(c, F_SETFL, fl | O_NONBLOCK), 0);
	memset(buf, 'f', sizeof(buf));
	while (send(c, buf, sizeof(buf), MSG_NOSIGNAL) > 0)
		;
	t_change(kq, c, EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	assert_int_equal(shutdown(c, SHUT_WR), 0);
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.ident, c);
	assert_int_equal(ev.filter, EVFILT_WRITE);
	close(kq);
	close(c);
	close(s);
}

#ifdef F_SETPIPE_SZ
/*
 * Linux: a pipe grown with F_SETPIPE_SZ after its WRITE knote was first
 * reported has room beyond its old size; the knote reports that room.
 */
static void
write_knote_of_pipe_grown_after_its_first_report_reports_the_new_room(
    void **state)
{
	int kq, p[2], cap;
	struct kevent ev;
	static char buf[65536];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, p[1], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.data, 65536);
	cap = fcntl(p[1], F_SETPIPE_SZ, 1 << 18);
	assert_true(cap >= 1 << 18);
	assert_int_equal(write(p[1], buf, sizeof(buf)), (ssize_t)sizeof(buf));
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.data, cap - (int)sizeof(buf));
	close(kq);
	close(p[0]);
	close(p[1]);
}
#endif

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pipe_write_data_is_free_space),
		cmocka_unit_test(pipe_full_not_writable_until_drained),
		cmocka_unit_test(pipe_full_clear_knote_fires_after_drain),
		cmocka_unit_test(pipe_write_eof_when_reader_closes),
		cmocka_unit_test(pipe_full_write_eof_when_reader_closes),
		cmocka_unit_test(socket_writable_and_eof_on_peer_close),
		cmocka_unit_test(write_note_lowat_fires_only_at_the_mark),
		cmocka_unit_test(tcp_write_eof_after_peer_reset),
		cmocka_unit_test(empty_fires_at_once_on_idle_connected_socket),
		cmocka_unit_test(empty_knote_still_true_keeps_its_kqueue_readable),
		cmocka_unit_test(empty_dispatch_knote_of_unsent_data_lets_kevent_sleep),
		cmocka_unit_test(empty_fires_at_once_on_listening_socket),
		cmocka_unit_test(empty_clear_knote_added_or_enabled_again_reports_an_empty_socket_again),
		cmocka_unit_test(empty_fires_again_when_sent_data_acknowledged),
		cmocka_unit_test(empty_clear_on_unix_socket_fires_when_the_peer_drains_before_a_check),
		cmocka_unit_test(empty_clear_on_unix_socket_reports_each_drain_once),
		cmocka_unit_test(empty_added_on_a_closed_number_fails_ebadf),
		cmocka_unit_test(empty_fires_when_connection_dropped_with_data_unacknowledged),
		cmocka_unit_test(empty_knotes_outlive_their_neighbours_deleted_closed_or_disabled),
		cmocka_unit_test(empty_fires_after_send_acknowledged_level),
		cmocka_unit_test(write_knote_of_full_socket_shut_down_for_writing_fires_at_once),
#ifdef F_SETPIPE_SZ
		cmocka_unit_test(write_knote_of_pipe_grown_after_its_first_report_reports_the_new_room),
#endif
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, NULL, NULL);
}
