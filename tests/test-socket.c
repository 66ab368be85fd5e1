/*
 * test-socket.c -- the two socket details FreeBSD programs such as nginx
 * read from an event: the socket's error in fflags with EV_EOF, and the
 * payload of every queued datagram in a datagram socket's READ data.
 *
 * FreeBSD (filt_soread / filt_sowrite): at EOF, fflags = so_error, and
 * so_error stays for the application's getsockopt(SO_ERROR); READ data is
 * sbavail - sb_ctl, the protocol data of the whole receive buffer, which
 * for UDP and datagram AF_UNIX sockets is every queued datagram's payload
 * (addresses are control data, not counted).  Only <sys/event.h> and POSIX
 * are used (SO_PEEK_OFF, a Linux option, only where it exists).
 */
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#ifdef __linux__
#include <linux/net_tstamp.h>
#endif

#include "helpers.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

/* Wait up to ms milliseconds for one event matching filter on ident. */
static int
wait_for(int kq, uintptr_t ident, short filter, struct kevent *out, int ms)
{
	struct timespec ts = { 0, 10 * 1000000L };

	for (int i = 0; i < ms / 10 + 1; i++) {
		struct kevent ev[4];
		int n = kevent(kq, NULL, 0, ev, 4, &ts);

		assert_true(n >= 0);
		for (int k = 0; k < n; k++)
			if (ev[k].ident == ident && ev[k].filter == filter) {
				*out = ev[k];
				return 1;
			}
	}
	return 0;
}

/* A loopback TCP port with no listener (bound then closed). */
static struct sockaddr_in
dead_port(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(s >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&sin, &len), 0);
	close(s);
	return sin;
}

/*
 * A non-blocking connect() to a port with no listener, in progress or
 * refused already (the error then pending).  Returns the socket.
 */
static int
refused_connect(void)
{
	struct sockaddr_in sin = dead_port();
	int c = socket(AF_INET, SOCK_STREAM, 0), r;

	assert_true(c >= 0);
	set_nonblock(c);
	r = connect(c, (struct sockaddr *)&sin, sizeof(sin));
	/* connect() itself may consume a refusal seen at once: retry. */
	if (r < 0 && errno == ECONNREFUSED) {
		close(c);
		return refused_connect();
	}
	assert_true(r < 0 && errno == EINPROGRESS);
	return c;
}

/* Wait until fd's error is pending (poll reports it, nothing read). */
static void
wait_error_pending(int fd)
{
	struct pollfd p = { fd, POLLOUT, 0 };

	for (int i = 0; i < 200; i++) {
		assert_true(poll(&p, 1, 10) >= 0);
		if (p.revents & (POLLERR | POLLHUP))
			return;
	}
	fail_msg("no error became pending");
}

static int
tcp_listener(struct sockaddr_in *sin)
{
	socklen_t len = sizeof(*sin);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(s >= 0);
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)sin, sizeof(*sin)), 0);
	assert_int_equal(listen(s, 8), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)sin, &len), 0);
	return s;
}

/* ------------------------------------------------------------------ */
/* Socket errors in fflags                                            */
/* ------------------------------------------------------------------ */

static void
refused(short filter, unsigned short flags)
{
	int kq = t_new_kq(), c = refused_connect();
	struct kevent ev;

	t_change(kq, c, filter, EV_ADD | flags, 0, 0, NULL);
	assert_int_equal(wait_for(kq, c, filter, &ev, 2000), 1);
	assert_true(ev.flags & EV_EOF);
	assert_int_equal(ev.fflags, ECONNREFUSED);
	/* Still the program's to read, once (FreeBSD leaves so_error). */
	assert_int_equal(t_so_error(c), ECONNREFUSED);
	assert_int_equal(t_so_error(c), 0);
	close(c);
	close(kq);
}

static void
refused_connect_puts_econnrefused_in_read_fflags(void **state)
{
	(void)state;
	refused(EVFILT_READ, 0);
}

static void
refused_connect_puts_econnrefused_in_write_fflags(void **state)
{
	(void)state;
	refused(EVFILT_WRITE, 0);
}

static void
refused_connect_puts_econnrefused_in_read_fflags_with_ev_clear(void **state)
{
	(void)state;
	refused(EVFILT_READ, EV_CLEAR);
}

static void
refused_connect_puts_econnrefused_in_write_fflags_with_ev_clear(void **state)
{
	(void)state;
	refused(EVFILT_WRITE, EV_CLEAR);
}

static void
refused_connect_reports_the_error_on_read_and_write_knotes_both(void **state)
{
	int kq = t_new_kq(), c = refused_connect();
	struct kevent ev[2];
	int got = 0, n;

	(void)state;
	t_change(kq, c, EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_change(kq, c, EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	wait_error_pending(c);
	n = t_poll(kq, ev, 2);
	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++) {
		assert_true(ev[i].flags & EV_EOF);
		assert_int_equal(ev[i].fflags, ECONNREFUSED);
		got |= ev[i].filter == EVFILT_READ ? 1 : 2;
	}
	assert_int_equal(got, 3);
	assert_int_equal(t_so_error(c), ECONNREFUSED);
	close(c);
	close(kq);
}

static void
level_triggered_report_repeats_the_error_until_it_is_read(void **state)
{
	int kq = t_new_kq(), c = refused_connect();
	struct kevent ev;

	(void)state;
	t_change(kq, c, EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	assert_int_equal(wait_for(kq, c, EVFILT_WRITE, &ev, 2000), 1);
	assert_int_equal(ev.fflags, ECONNREFUSED);
	ev = t_expect_one(kq);
	assert_true(ev.flags & EV_EOF);
	assert_int_equal(ev.fflags, ECONNREFUSED);
	assert_int_equal(t_so_error(c), ECONNREFUSED);
	close(c);
	close(kq);
}

static void
error_pending_before_ev_add_is_reported_at_once(void **state)
{
	int kq = t_new_kq(), c = refused_connect();
	struct kevent ev;

	(void)state;
	wait_error_pending(c);
	t_change(kq, c, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, c);
	assert_true(ev.flags & EV_EOF);
	assert_int_equal(ev.fflags, ECONNREFUSED);
	assert_int_equal(t_so_error(c), ECONNREFUSED);
	close(c);
	close(kq);
}

static void
reset_connection_puts_econnreset_in_write_fflags(void **state)
{
	struct sockaddr_in sin;
	struct linger lg = { 1, 0 };
	int kq = t_new_kq(), ls = tcp_listener(&sin), c, s;
	struct kevent ev;

	(void)state;
	c = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(c >= 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_true((s = accept(ls, NULL, NULL)) >= 0);
	close(ls);
	t_change(kq, c, EVFILT_WRITE, EV_ADD | EV_CLEAR, 0, 0, NULL);
	ev = t_expect_one(kq);		/* writable */
	assert_false(ev.flags & EV_EOF);
	assert_int_equal(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg,
	    sizeof(lg)), 0);
	close(s);			/* a reset */
	assert_int_equal(wait_for(kq, c, EVFILT_WRITE, &ev, 2000), 1);
	assert_true(ev.flags & EV_EOF);
	assert_int_equal(ev.fflags, ECONNRESET);
	assert_int_equal(t_so_error(c), ECONNRESET);
	close(c);
	close(kq);
}

static void
clean_close_by_peer_leaves_fflags_zero(void **state)
{
	struct sockaddr_in sin;
	int kq = t_new_kq(), ls = tcp_listener(&sin), c, s;
	struct kevent ev;

	(void)state;
	c = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(c >= 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_true((s = accept(ls, NULL, NULL)) >= 0);
	close(ls);
	t_change(kq, c, EVFILT_READ, EV_ADD, 0, 0, NULL);
	close(s);			/* a FIN */
	assert_int_equal(wait_for(kq, c, EVFILT_READ, &ev, 2000), 1);
	assert_true(ev.flags & EV_EOF);
	assert_int_equal(ev.fflags, 0);
	assert_int_equal(t_so_error(c), 0);
	close(c);
	close(kq);
}

static void
new_socket_on_the_number_of_a_failed_one_has_no_error(void **state)
{
	struct sockaddr_in sin;
	int kq = t_new_kq(), ls = tcp_listener(&sin), c = refused_connect(), d;
	struct kevent ev;

	(void)state;
	t_change(kq, c, EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	assert_int_equal(wait_for(kq, c, EVFILT_WRITE, &ev, 2000), 1);
	assert_int_equal(ev.fflags, ECONNREFUSED);
	close(c);			/* its error never read */
	d = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(d, (struct sockaddr *)&sin, sizeof(sin)), 0);
	if (d != c) {
		/* Put the new socket on the old number. */
		assert_int_equal(dup2(d, c), c);
		close(d);
		d = c;
	}
	assert_int_equal(t_so_error(d), 0);
	close(d);
	close(ls);
	close(kq);
}

/* ------------------------------------------------------------------ */
/* Datagram sockets: data is every queued datagram's payload          */
/* ------------------------------------------------------------------ */

struct dgpair {
	int rx, tx;
	int family;
	int connected;
};

/* A receiving and a sending datagram socket on the loopback address. */
static int
dg_open(struct dgpair *p, int family, int type, int connected)
{
	struct sockaddr_storage ss;
	socklen_t len;

	memset(&ss, 0, sizeof(ss));
	p->family = family;
	p->connected = connected;
	if (family == AF_UNIX) {
		int sv[2];

		assert_int_equal(socketpair(AF_UNIX, type, 0, sv), 0);
		p->rx = sv[0];
		p->tx = sv[1];
		p->connected = 1;
		return 1;
	}
	p->rx = socket(family, type, 0);
	if (p->rx < 0 && family == AF_INET6)
		return 0;
	assert_true(p->rx >= 0);
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	if (bind(p->rx, (struct sockaddr *)&ss, len) != 0) {
		/* No IPv6 loopback address here. */
		assert_int_equal(family, AF_INET6);
		close(p->rx);
		return 0;
	}
	assert_int_equal(getsockname(p->rx, (struct sockaddr *)&ss, &len), 0);
	p->tx = socket(family, type, 0);
	assert_true(p->tx >= 0);
	assert_int_equal(connect(p->tx, (struct sockaddr *)&ss, len), 0);
	if (connected) {
		struct sockaddr_storage me;
		socklen_t ml = sizeof(me);

		assert_int_equal(getsockname(p->tx, (struct sockaddr *)&me,
		    &ml), 0);
		assert_int_equal(connect(p->rx, (struct sockaddr *)&me, ml),
		    0);
	}
	set_nonblock(p->rx);
	return 1;
}

static void
dg_close(struct dgpair *p)
{
	close(p->rx);
	close(p->tx);
}

/* Datagram i of a burst: sizes 1, 8, 15, ... bytes, content i. */
static size_t
dg_size(int i)
{
	return (size_t)(1 + 7 * i);
}

static int64_t
dg_send(struct dgpair *p, int count)
{
	char buf[512];
	int64_t total = 0;

	for (int i = 0; i < count; i++) {
		memset(buf, 'a' + i % 26, sizeof(buf));
		assert_int_equal(send(p->tx, buf, dg_size(i), 0),
		    (ssize_t)dg_size(i));
		total += (int64_t)dg_size(i);
	}
	return total;
}

/* Wait until the receiver holds count datagrams' worth of payload. */
static void
dg_settle(int kq, struct dgpair *p, int64_t total)
{
	struct kevent ev;

	for (int i = 0; i < 200; i++) {
		if (wait_for(kq, p->rx, EVFILT_READ, &ev, 10) &&
		    ev.data == total)
			return;
	}
	fail_msg("data never reached %lld", (long long)total);
}

static void
dg_check(int family, int type, int connected, int count)
{
	struct dgpair p;
	int kq = t_new_kq();
	int64_t total;
	struct kevent ev;

	if (!dg_open(&p, family, type, connected)) {
		close(kq);
		skip();
	}
	t_change(kq, p.rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	total = dg_send(&p, count);
	dg_settle(kq, &p, total);
	/* Level-triggered: the same count again, nothing consumed. */
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, total);
	/* Reading the first leaves the others' payload. */
	{
		char buf[512];

		assert_int_equal(recv(p.rx, buf, sizeof(buf), 0),
		    (ssize_t)dg_size(0));
	}
	if (count > 1) {
		ev = t_expect_one(kq);
		assert_int_equal(ev.data, total - (int64_t)dg_size(0));
	} else
		t_expect_none(kq);
	dg_close(&p);
	close(kq);
}

/*
 * A datagram socket whose reading side the application shut down reports
 * EV_EOF with data 0: FreeBSD's shutdown(SHUT_RD) discards what is queued
 * (sorflush).  first: the size of the datagram that heads the queue (0:
 * an empty one), before one of 5 bytes.
 */
static void
dg_shut_for_reading(size_t first)
{
	struct dgpair p;
	struct kevent ev;
	char buf[16] = "0123456789";
	int kq = t_new_kq();

	if (!dg_open(&p, AF_INET, SOCK_DGRAM, 1)) {
		close(kq);
		skip();
	}
	t_change(kq, p.rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(send(p.tx, buf, first, 0), (ssize_t)first);
	assert_int_equal(send(p.tx, "hello", 5, 0), 5);
	assert_true(wait_for(kq, p.rx, EVFILT_READ, &ev, 1000));
	assert_int_equal(shutdown(p.rx, SHUT_RD), 0);
	assert_true(wait_for(kq, p.rx, EVFILT_READ, &ev, 1000));
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 0);
	dg_close(&p);
	close(kq);
}

static void
udp4_shut_for_reading_reports_eof_with_no_data(void **state)
{
	(void)state;
	dg_shut_for_reading(0);
}

static void
udp4_shut_for_reading_with_data_queued_reports_eof_with_no_data(void **state)
{
	(void)state;
	dg_shut_for_reading(10);
}

static void
udp4_data_is_one_datagram_payload(void **state)
{
	(void)state;
	dg_check(AF_INET, SOCK_DGRAM, 0, 1);
}

static void
udp4_data_is_two_datagrams_payload(void **state)
{
	(void)state;
	dg_check(AF_INET, SOCK_DGRAM, 0, 2);
}

static void
udp4_data_is_fifty_datagrams_payload(void **state)
{
	(void)state;
	dg_check(AF_INET, SOCK_DGRAM, 0, 50);
}

static void
udp4_connected_data_is_fifty_datagrams_payload(void **state)
{
	(void)state;
	dg_check(AF_INET, SOCK_DGRAM, 1, 50);
}

static void
udp4_connected_data_is_two_datagrams_payload(void **state)
{
	(void)state;
	dg_check(AF_INET, SOCK_DGRAM, 1, 2);
}

static void
udp6_data_is_one_datagram_payload(void **state)
{
	(void)state;
	dg_check(AF_INET6, SOCK_DGRAM, 0, 1);
}

static void
udp6_data_is_two_datagrams_payload(void **state)
{
	(void)state;
	dg_check(AF_INET6, SOCK_DGRAM, 0, 2);
}

static void
udp6_data_is_fifty_datagrams_payload(void **state)
{
	(void)state;
	dg_check(AF_INET6, SOCK_DGRAM, 0, 50);
}

static void
udp6_connected_data_is_fifty_datagrams_payload(void **state)
{
	(void)state;
	dg_check(AF_INET6, SOCK_DGRAM, 1, 50);
}

static void
unix_dgram_data_is_fifty_datagrams_payload(void **state)
{
	(void)state;
	dg_check(AF_UNIX, SOCK_DGRAM, 1, 50);
}

static void
unix_seqpacket_data_is_every_record_payload(void **state)
{
	(void)state;
	dg_check(AF_UNIX, SOCK_SEQPACKET, 1, 20);
}

/*
 * nginx's way under EV_CLEAR: take data as the bytes available, read
 * datagrams until that many were read (or EAGAIN), then wait for the next
 * event.  Every datagram of a burst must be received.
 */
static void
reader_trusting_data(int family, int connected)
{
	struct dgpair p;
	int kq = t_new_kq(), got = 0, count = 50;
	struct kevent ev;
	char buf[512];

	if (!dg_open(&p, family, SOCK_DGRAM, connected)) {
		close(kq);
		skip();
	}
	t_change(kq, p.rx, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	(void)dg_send(&p, count);
	while (got < count && wait_for(kq, p.rx, EVFILT_READ, &ev, 500)) {
		int64_t available = ev.data;

		assert_true(available > 0);
		while (available > 0) {
			ssize_t n = recv(p.rx, buf, sizeof(buf), 0);

			if (n < 0) {
				assert_int_equal(errno, EAGAIN);
				break;
			}
			assert_int_equal(n, (ssize_t)dg_size(got));
			got++;
			available -= n;
		}
	}
	assert_int_equal(got, count);
	dg_close(&p);
	close(kq);
}

static void
udp4_reader_trusting_data_gets_every_datagram_with_ev_clear(void **state)
{
	(void)state;
	reader_trusting_data(AF_INET, 0);
}

static void
udp6_reader_trusting_data_gets_every_datagram_with_ev_clear(void **state)
{
	(void)state;
	reader_trusting_data(AF_INET6, 1);
}

static void
udp_note_lowat_counts_every_datagram(void **state)
{
	struct dgpair p;
	int kq = t_new_kq();
	struct kevent ev;

	(void)state;
	assert_int_equal(dg_open(&p, AF_INET, SOCK_DGRAM, 0), 1);
	/* 1 + 8 = 9 bytes in two datagrams, then 10; mark at 20. */
	t_change(kq, p.rx, EVFILT_READ, EV_ADD, NOTE_LOWAT, 20, NULL);
	(void)dg_send(&p, 2);
	usleep(20000);
	t_expect_none(kq);
	(void)dg_send(&p, 1);	/* another 1-byte datagram: 10 bytes */
	usleep(20000);
	t_expect_none(kq);
	{
		char buf[16];

		memset(buf, 'z', sizeof(buf));
		assert_int_equal(send(p.tx, buf, 12, 0), 12);
	}
	assert_int_equal(wait_for(kq, p.rx, EVFILT_READ, &ev, 2000), 1);
	assert_int_equal(ev.data, 22);
	dg_close(&p);
	close(kq);
}

/*
 * A nonblocking UDP socket connected to a port with nothing bound
 * (dead_port's TCP number, as UDP), with IP_RECVERR set if recverr, whose
 * one datagram came back as an ICMP error: the socket polls POLLERR.
 * Returns it, or -1 if no such error came back here (the caller skips).
 */
static int
udp_refused(int recverr)
{
	struct sockaddr_in sin = dead_port();
	int u = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
	struct pollfd pfd;

	assert_true(u >= 0);
#ifdef IP_RECVERR
	if (recverr)
		assert_int_equal(setsockopt(u, SOL_IP, IP_RECVERR, &one,
		    sizeof(one)), 0);
#else
	(void)recverr;
	(void)one;
#endif
	assert_int_equal(connect(u, (struct sockaddr *)&sin, sizeof(sin)), 0);
	set_nonblock(u);
	assert_int_equal(send(u, "x", 1, 0), 1);
	pfd.fd = u;
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (poll(&pfd, 1, 2000) != 1 || !(pfd.revents & POLLERR)) {
		close(u);
		return -1;	/* no ICMP error came back here */
	}
	return u;
}

/*
 * A connected UDP socket whose datagram met a closed port holds the ICMP
 * error (FreeBSD's so_error): EVFILT_READ reports it readable, and the
 * program's next recv() still fails with ECONNREFUSED -- reporting the
 * event must not take the error.  (Linux's recv() returns a socket's error
 * once, MSG_PEEK or not, and kq counts a datagram socket's queue by
 * peeking.)
 */
static void
connected_udp_socket_readable_by_its_error_still_fails_recv_with_it(
    void **state)
{
	int kq = t_new_kq(), u = udp_refused(0);
	struct kevent ev;
	char c;

	(void)state;
	if (u < 0) {
		close(kq);
		skip();		/* no ICMP error came back here */
	}
	t_change(kq, (uintptr_t)u, EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(wait_for(kq, (uintptr_t)u, EVFILT_READ, &ev, 1000), 1);
	assert_int_equal(ev.data, 0);
	errno = 0;
	assert_int_equal(recv(u, &c, 1, 0), -1);
	assert_int_equal(errno, ECONNREFUSED);
	close(u);
	close(kq);
}

/*
 * Several processes counting one UDP socket at once: a fork() child and
 * its parent (a prefork server's workers share their sockets) each watch
 * it with a kqueue of their own.  FreeBSD's count (sbavail) is the
 * queue's, whoever else looks: with nothing read or sent, every report of
 * either process is the whole queue.  Linux counts the queue with the
 * socket's peek offset, which the processes share; kq keeps their walks
 * apart, but waits at most 50 ms for another process's (a
 * process stopped mid-walk must not stop the others), so a walk may still
 * meet another on a loaded machine: at most one report in a hundred may
 * be off, and never below one datagram.  Once they stop, the queue's count
 * comes back exact, and MSG_PEEK looks at the head datagram without
 * consuming it: no peek offset was left behind.
 */
#define SH_COUNT	64	/* datagrams queued */
#define SH_SIZE		32	/* bytes each; the first four its number */
#define SH_ROUNDS	20000

static atomic_int sh_stop;

/* 0: every report within the bounds (exact: at most 1 % off); else 3. */
static int
sh_watch(int rx, int exact)
{
	struct timespec zero = { 0, 0 };
	struct kevent ev;
	int kq = kqueue(), bad = 0, off = 0, seen = 0;
	const int64_t queue = (int64_t)SH_COUNT * SH_SIZE;

	if (kq < 0)
		return 2;
	EV_SET(&ev, (uintptr_t)rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kq, &ev, 1, NULL, 0, NULL) != 0)
		return 2;
	for (int i = 0; i < SH_ROUNDS && !atomic_load(&sh_stop); i++) {
		int n = kevent(kq, NULL, 0, &ev, 1, &zero);

		if (n < 0)
			return 2;
		if (n != 1)
			continue;
		seen++;
		if (ev.data < SH_SIZE || ev.data % SH_SIZE != 0 ||
		    ev.data >= 2 * queue) {
			if (bad++ == 0)
				fprintf(stderr, "data %lld\n",
				    (long long)ev.data);
		} else if (exact && ev.data != queue)
			off++;
	}
	close(kq);
	if (off > seen / 100)
		fprintf(stderr, "%d of %d counts off\n", off, seen);
	return bad == 0 && off <= seen / 100 ? 0 : 3;
}

struct sh_cycle {
	struct dgpair *p;
	int cycles;
};

/* Take one datagram, send one: the queue holds SH_COUNT - 1 or SH_COUNT. */
static void *
sh_cycler(void *arg)
{
	struct sh_cycle *c = arg;
	char buf[SH_SIZE];

	while (!atomic_load(&sh_stop)) {
		if (recv(c->p->rx, buf, sizeof(buf), 0) != SH_SIZE)
			continue;
		if (send(c->p->tx, buf, sizeof(buf), 0) == SH_SIZE)
			c->cycles++;
	}
	return NULL;
}

/* The parent and a fork child count at once; with cycle, a thread reads. */
static void
sh_share(struct dgpair *p, int cycle)
{
	struct sh_cycle cyc;
	pthread_t t;
	pid_t pid;
	int st;

	atomic_store(&sh_stop, 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(30);
		T_EXIT(sh_watch(p->rx, !cycle));
	}
	cyc.p = p;
	cyc.cycles = 0;
	if (cycle)
		assert_int_equal(pthread_create(&t, NULL, sh_cycler, &cyc),
		    0);
	assert_int_equal(sh_watch(p->rx, !cycle), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	atomic_store(&sh_stop, 1);
	if (cycle)
		pthread_join(t, NULL);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void
sh_fill(struct dgpair *p, int *kq)
{
	char buf[SH_SIZE];

	assert_int_equal(dg_open(p, AF_INET, SOCK_DGRAM, 0), 1);
	for (int i = 0; i < SH_COUNT; i++) {
		memset(buf, 0, sizeof(buf));
		memcpy(buf, &i, sizeof(i));
		assert_int_equal(send(p->tx, buf, sizeof(buf), 0), SH_SIZE);
	}
	*kq = t_new_kq();
	t_change(*kq, p->rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	dg_settle(*kq, p, (int64_t)SH_COUNT * SH_SIZE);
}

static void
processes_sharing_a_udp_socket_each_count_its_whole_queue(void **state)
{
	struct dgpair p;
	char buf[SH_SIZE], again[SH_SIZE];
	int kq;

	(void)state;
	sh_fill(&p, &kq);
	sh_share(&p, 0);
	dg_settle(kq, &p, (int64_t)SH_COUNT * SH_SIZE);
	assert_int_equal(recv(p.rx, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT),
	    SH_SIZE);
	assert_int_equal(recv(p.rx, again, sizeof(again),
	    MSG_PEEK | MSG_DONTWAIT), SH_SIZE);
	assert_memory_equal(buf, again, SH_SIZE);
	assert_int_equal(recv(p.rx, again, sizeof(again), MSG_DONTWAIT),
	    SH_SIZE);
	assert_memory_equal(buf, again, SH_SIZE);
	dg_close(&p);
	close(kq);
}

/*
 * As above, with a thread of the parent taking one datagram and sending
 * one back all the while: every report is whole datagrams, at least one,
 * below twice the queue (Linux moves the offset for a read without a lock:
 * a count a datagram or two off, kevent.2 LINUX NOTES), and once they stop
 * the count is the queue's again.
 */
static void
processes_sharing_a_udp_socket_read_meanwhile_count_whole_datagrams(
    void **state)
{
	struct dgpair p;
	int kq;

	(void)state;
	sh_fill(&p, &kq);
	sh_share(&p, 1);
	dg_settle(kq, &p, (int64_t)SH_COUNT * SH_SIZE);
	dg_close(&p);
	close(kq);
}

/*
 * A process stopped (SIGSTOP) or killed (SIGKILL) while it counts a
 * datagram socket it shares with its parent -- in the middle of a count,
 * as often as not -- stops no one else: every kevent() of the parent
 * returns, with at least one datagram in data (on FreeBSD the child's
 * count is the kernel's, and nothing of it is left behind).  Once the
 * killed child is reaped, the count is exact again and MSG_PEEK looks at
 * the head datagram without consuming it (the offset the child left in
 * the middle of its count is not put back).
 */
#define ST_COUNT	250	/* datagrams: a count takes a while, below the cap */

static void
process_stopped_or_killed_while_counting_a_shared_socket_stops_no_one(
    void **state)
{
	struct dgpair p;
	struct timespec zero = { 0, 0 };
	struct kevent ev;
	char buf[SH_SIZE], again[SH_SIZE];
	const int64_t queue = (int64_t)ST_COUNT * SH_SIZE;
	int kq, st, rcv = 4 << 20;
	pid_t pid;

	(void)state;
	assert_int_equal(dg_open(&p, AF_INET, SOCK_DGRAM, 0), 1);
	(void)setsockopt(p.rx, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	for (int i = 0; i < ST_COUNT; i++) {
		memset(buf, 0, sizeof(buf));
		memcpy(buf, &i, sizeof(i));
		assert_int_equal(send(p.tx, buf, sizeof(buf), 0), SH_SIZE);
	}
	kq = t_new_kq();
	t_change(kq, p.rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	dg_settle(kq, &p, queue);
	atomic_store(&sh_stop, 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int ckq = kqueue();

		alarm(60);
		EV_SET(&ev, (uintptr_t)p.rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
		if (ckq < 0 || kevent(ckq, &ev, 1, NULL, 0, NULL) != 0)
			T_EXIT(2);
		for (;;)	/* counts until killed */
			(void)kevent(ckq, NULL, 0, &ev, 1, &zero);
	}
	alarm(60);	/* a kevent() that waits for the child fails */
	srand(7);
	for (int round = 0; round < 40; round++) {
		usleep((useconds_t)(rand() % 3000));
		assert_int_equal(kill(pid, SIGSTOP), 0);
		for (int i = 0; i < 5; i++) {
			assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &zero),
			    1);
			assert_true(ev.data >= SH_SIZE);
			assert_true(ev.data % SH_SIZE == 0);
		}
		assert_int_equal(kill(pid, SIGCONT), 0);
	}
	usleep((useconds_t)(rand() % 3000));
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &zero), 1);
	assert_true(ev.data >= SH_SIZE);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	alarm(0);
	dg_settle(kq, &p, queue);
	assert_int_equal(recv(p.rx, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT),
	    SH_SIZE);
	assert_int_equal(recv(p.rx, again, sizeof(again),
	    MSG_PEEK | MSG_DONTWAIT), SH_SIZE);
	assert_memory_equal(buf, again, SH_SIZE);
	dg_close(&p);
	close(kq);
}

/*
 * Workers of a prefork server count the datagram socket they share, and
 * are killed -- at a reload, in the middle of a count or while waiting for
 * another's to end, as often as not.  Nothing of them slows the family
 * down: the parent's zero-timeout counts that follow never sleep (a count
 * that waited for a dead worker's turn would, and show as a voluntary
 * context switch; 2 000 counts may make a few for other reasons).  The
 * same when the killed workers are not reaped yet (zombies) while the
 * parent counts, once a second has passed (FreeBSD's counts do not wait
 * at all).
 */
#define KW_PAIRS	24	/* pairs of workers killed */
#define KW_COUNTS	2000

/*
 * Forks a worker that watches rx with a kqueue of its own: returns the
 * child's pid in the parent; in the child, *kq (the child ends with
 * status 2 if it cannot be made, and by SIGALRM after secs).
 */
static pid_t
dg_counter_fork(int rx, unsigned int secs, int *kq)
{
	struct kevent ev;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid != 0)
		return pid;
	alarm(secs);
	*kq = kqueue();
	EV_SET(&ev, (uintptr_t)rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (*kq < 0 || kevent(*kq, &ev, 1, NULL, 0, NULL) != 0)
		T_EXIT(2);
	return 0;
}

static pid_t
kw_worker(int rx)
{
	struct timespec zero = { 0, 0 };
	struct kevent ev;
	int kq = -1;
	pid_t pid = dg_counter_fork(rx, 30, &kq);

	if (pid != 0)
		return pid;
	for (;;)	/* counts until killed */
		(void)kevent(kq, NULL, 0, &ev, 1, &zero);
}

static void
kw_reap(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
}

static void
kw_run(int reap_late)
{
	struct dgpair p;
	struct timespec zero = { 0, 0 };
	struct kevent ev;
	struct rusage before, after;
	char buf[SH_SIZE];
	const int64_t queue = (int64_t)ST_COUNT * SH_SIZE;
	pid_t dead[2 * KW_PAIRS];
	int kq, rcv = 4 << 20, ndead = 0;
	long sleeps;

	assert_int_equal(dg_open(&p, AF_INET, SOCK_DGRAM, 0), 1);
	(void)setsockopt(p.rx, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	memset(buf, 0, sizeof(buf));
	for (int i = 0; i < ST_COUNT; i++)
		assert_int_equal(send(p.tx, buf, sizeof(buf), 0), SH_SIZE);
	kq = t_new_kq();
	t_change(kq, p.rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	dg_settle(kq, &p, queue);
	srand(11);
	for (int round = 0; round < KW_PAIRS; round++) {
		pid_t a = kw_worker(p.rx), b = kw_worker(p.rx);

		usleep((useconds_t)(2000 + rand() % 3000));
		assert_int_equal(kill(b, SIGKILL), 0);
		usleep((useconds_t)(rand() % 500));
		assert_int_equal(kill(a, SIGKILL), 0);
		dead[ndead++] = a;
		dead[ndead++] = b;
		if (!reap_late) {
			kw_reap(a);
			kw_reap(b);
		}
	}
	if (reap_late) {	/* every worker has died before the counts */
		for (int i = 0; i < ndead; i++) {
			siginfo_t si;

			memset(&si, 0, sizeof(si));
			assert_int_equal(waitid(P_PID, (id_t)dead[i], &si,
			    WEXITED | WNOWAIT), 0);
		}
		/* A zombie that held the word when killed keeps it for the
		   second no walk lasts (kill(pid, 0) cannot tell a zombie);
		   what the counts check here is the zombies that waited. */
		usleep(1100000);
	}
	dg_settle(kq, &p, queue);
	assert_int_equal(getrusage(RUSAGE_SELF, &before), 0);
	for (int i = 0; i < KW_COUNTS; i++) {
		assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &zero), 1);
		assert_int_equal(ev.data, queue);
	}
	assert_int_equal(getrusage(RUSAGE_SELF, &after), 0);
	sleeps = after.ru_nvcsw - before.ru_nvcsw;
	if (sleeps >= KW_COUNTS / 20)
		fprintf(stderr, "%ld of %d counts slept\n", sleeps,
		    KW_COUNTS);
	if (reap_late)
		for (int i = 0; i < ndead; i++)
			kw_reap(dead[i]);
	assert_true(sleeps < KW_COUNTS / 20);
	dg_close(&p);
	close(kq);
}

static void
workers_killed_while_counting_a_shared_socket_leave_no_wait_behind(
    void **state)
{
	(void)state;
	kw_run(0);
}

static void
workers_killed_while_counting_a_shared_socket_and_not_yet_reaped_leave_no_wait_behind(
    void **state)
{
	(void)state;
	kw_run(1);
}

/*
 * Two workers of a prefork server count the datagram socket they share in
 * loops, and one of them is stopped and continued over and over (job
 * control, a debugger), mostly while it waits for the other's count to
 * end.  Nobody reads the socket, so every count is the whole queue: a
 * worker that, continued, counted beside the other would see the queue
 * walked twice or from its middle.  (FreeBSD's count is the kernel's.)
 * A few wrong counts are allowed for the walks kq makes without waiting;
 * a waiter that gave up on its first look after a stop made 20-70.
 */
#define SW_CYCLES	40
#define SW_STOP_US	80000	/* past the 50 ms a count waits for another */

struct sw_shared {
	_Atomic long	 counts[2], wrong[2];
	_Atomic int	 stop;
};

static pid_t
sw_worker(int rx, struct sw_shared *sh, int id, int64_t queue)
{
	struct timespec zero = { 0, 0 };
	struct kevent ev;
	int kq = -1;
	pid_t pid = dg_counter_fork(rx, 60, &kq);

	if (pid != 0)
		return pid;
	while (!atomic_load(&sh->stop)) {
		int n = kevent(kq, NULL, 0, &ev, 1, &zero);

		atomic_fetch_add(&sh->counts[id], 1);
		if (n != 1 || ev.data != queue)
			atomic_fetch_add(&sh->wrong[id], 1);
	}
	_exit(0);
}

static void
worker_stopped_while_waiting_for_another_count_does_not_count_beside_it(
    void **state)
{
	struct dgpair p;
	char buf[SH_SIZE];
	const int64_t queue = 40 * SH_SIZE;
	struct sw_shared *sh;
	pid_t a, b;
	int st;

	(void)state;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	assert_int_equal(dg_open(&p, AF_INET, SOCK_DGRAM, 0), 1);
	memset(buf, 0, sizeof(buf));
	for (int i = 0; i < 40; i++)
		assert_int_equal(send(p.tx, buf, sizeof(buf), 0), SH_SIZE);
	{
		int kq = t_new_kq();

		t_change(kq, p.rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
		dg_settle(kq, &p, queue);
		close(kq);
	}
	a = sw_worker(p.rx, sh, 0, queue);
	b = sw_worker(p.rx, sh, 1, queue);
	usleep(20000);
	for (int i = 0; i < SW_CYCLES; i++) {
		assert_int_equal(kill(b, SIGSTOP), 0);
		usleep(SW_STOP_US);
		assert_int_equal(kill(b, SIGCONT), 0);
		usleep(3000);
	}
	atomic_store(&sh->stop, 1);
	assert_int_equal(waitpid(a, &st, 0), a);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(waitpid(b, &st, 0), b);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (sh->wrong[0] + sh->wrong[1] > 5)
		fprintf(stderr, "wrong counts: %ld of %ld, %ld of %ld\n",
		    (long)sh->wrong[0], (long)sh->counts[0],
		    (long)sh->wrong[1], (long)sh->counts[1]);
	assert_true(sh->counts[0] > 0 && sh->counts[1] > 0);
	assert_true(sh->wrong[0] + sh->wrong[1] <= 5);
	dg_close(&p);
	munmap(sh, sizeof(*sh));
}

/*
 * A queue of hundreds of datagrams under EV_CLEAR, read nginx's way (as
 * many datagrams as data says are queued, then wait for the next event):
 * none is left unread when the events stop.  On FreeBSD data is exact; kq
 * counts a UDP socket's first 256 datagrams exactly and, past them,
 * reports more than the rest rather than less (counting further takes
 * time in the square of the queue's length: kevent.2 LINUX NOTES), and an
 * AF_UNIX socket's first 4096.  A queue of 200 is counted exactly.
 */
static void
deep_queue(int family)
{
	struct dgpair p;
	struct kevent ev;
	int kq = t_new_kq(), sent = 0, got = 0, big = 1 << 22;
	char c = 'q', buf[8];

	assert_int_equal(dg_open(&p, family, SOCK_DGRAM, 1), 1);
	(void)setsockopt(p.rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	(void)setsockopt(p.tx, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	/* 200 first: counted exactly. */
	for (; sent < 200; sent++)
		assert_int_equal(send(p.tx, &c, 1, MSG_DONTWAIT), 1);
	t_change(kq, p.rx, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	assert_int_equal(wait_for(kq, p.rx, EVFILT_READ, &ev, 1000), 1);
	assert_int_equal(ev.data, 200);
	/* Up to 600 (a full AF_UNIX queue refuses more: EAGAIN). */
	while (sent < 600 && send(p.tx, &c, 1, MSG_DONTWAIT) == 1)
		sent++;
	if (sent <= 256 + 8) {
		dg_close(&p);
		close(kq);
		skip();		/* the queue here holds too few */
	}
	while (wait_for(kq, p.rx, EVFILT_READ, &ev, 300)) {
		int64_t available = ev.data;

		assert_true(available > 0);
		while (available > 0) {
			ssize_t n = recv(p.rx, buf, sizeof(buf), 0);

			if (n < 0) {
				assert_int_equal(errno, EAGAIN);
				break;
			}
			got++;
			available -= n > 0 ? n : 1;
		}
	}
	/* Nothing left behind once the events stopped. */
	assert_int_equal(recv(p.rx, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	if (family == AF_UNIX)
		assert_int_equal(got, sent);	/* a UDP queue may drop */
	assert_true(got > 256);
	dg_close(&p);
	close(kq);
}

static void
udp_deep_queue_read_as_data_says_under_ev_clear_leaves_nothing(void **state)
{
	(void)state;
	deep_queue(AF_INET);
}

static void
unix_dgram_deep_queue_read_as_data_says_under_ev_clear_leaves_nothing(
    void **state)
{
	(void)state;
	deep_queue(AF_UNIX);
}

/*
 * ICMP errors on a connected UDP socket that holds a queue.  A socket
 * bound where the errors come from (E) sends to a bound-then-closed port
 * B, and the unreachable comes back to E's address, which the socket
 * under test (R) shares (SO_REUSEADDR) and is connected from B: R gets
 * the error.  FreeBSD reports R readable with data the queue's payload,
 * keeps the error for getsockopt(SO_ERROR) (or the recv() that empties the
 * queue), and a program that reads as much as data says leaves nothing
 * behind.
 */
struct icmp_rig {
	int fam, r, e;
	struct sockaddr_storage b;
	socklen_t bl;
	int64_t payload;
};

static void
icmp_addr(int fam, struct sockaddr_storage *a, socklen_t *l)
{
	memset(a, 0, sizeof(*a));
	if (fam == AF_INET) {
		struct sockaddr_in *x = (struct sockaddr_in *)a;

		x->sin_family = AF_INET;
		x->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*l = sizeof(*x);
	} else {
		struct sockaddr_in6 *x = (struct sockaddr_in6 *)a;

		x->sin6_family = AF_INET6;
		x->sin6_addr = in6addr_loopback;
		*l = sizeof(*x);
	}
}

/* 0 if the rig cannot be made here (no IPv6 loopback). */
static int
icmp_rig_open(struct icmp_rig *g, int fam, int n)
{
	struct sockaddr_storage a;
	socklen_t al;
	int one = 1, big = 8 << 20, b;
	char buf[128];

	g->fam = fam;
	g->payload = 0;
	b = socket(fam, SOCK_DGRAM, 0);
	if (b < 0)
		return 0;
	icmp_addr(fam, &a, &al);
	if (bind(b, (struct sockaddr *)&a, al) != 0) {
		close(b);
		return 0;
	}
	g->bl = sizeof(g->b);
	assert_int_equal(getsockname(b, (struct sockaddr *)&g->b, &g->bl), 0);
	g->r = socket(fam, SOCK_DGRAM, 0);
	g->e = socket(fam, SOCK_DGRAM, 0);
	assert_true(g->r >= 0 && g->e >= 0);
	(void)setsockopt(g->r, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	(void)setsockopt(g->e, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	(void)setsockopt(g->r, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	assert_int_equal(bind(g->r, (struct sockaddr *)&a, al), 0);
	al = sizeof(a);
	assert_int_equal(getsockname(g->r, (struct sockaddr *)&a, &al), 0);
	assert_int_equal(bind(g->e, (struct sockaddr *)&a, al), 0);
	assert_int_equal(connect(g->r, (struct sockaddr *)&g->b, g->bl), 0);
	set_nonblock(g->r);
	memset(buf, 'i', sizeof(buf));
	for (int i = 0; i < n; i++) {
		size_t sz = 1 + (size_t)(i * 7) % sizeof(buf);

		assert_int_equal(sendto(b, buf, sz, 0, (struct sockaddr *)&a,
		    al), (ssize_t)sz);
		g->payload += (int64_t)sz;
	}
	close(b);	/* B's port is closed from now on */
	return 1;
}

static void
icmp_rig_close(struct icmp_rig *g)
{
	close(g->r);
	close(g->e);
}

/* One unreachable for R; 1 once it is there (poll says POLLERR). */
static int
icmp_rig_error(struct icmp_rig *g)
{
	struct pollfd pfd = { g->r, POLLIN, 0 };

	(void)sendto(g->e, "x", 1, 0, (struct sockaddr *)&g->b, g->bl);
	for (int i = 0; i < 200; i++) {
		if (poll(&pfd, 1, 10) == 1 && (pfd.revents & POLLERR))
			return 1;
	}
	return 0;
}

static void
icmp_error_with_a_queue_read_as_data_says_leaves_nothing(int fam)
{
	struct icmp_rig g;
	struct kevent ev;
	int kq, got = 0, errs = 0;
	int64_t bytes = 0;
	char buf[256];

	if (!icmp_rig_open(&g, fam, 200))
		skip();
	if (!icmp_rig_error(&g)) {
		icmp_rig_close(&g);
		skip();		/* no ICMP error came back here */
	}
	kq = t_new_kq();
	t_change(kq, (uintptr_t)g.r, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0,
	    NULL);
	while (wait_for(kq, (uintptr_t)g.r, EVFILT_READ, &ev, 300)) {
		int64_t available = ev.data;

		assert_true(ev.data >= g.payload - bytes);
		while (available > 0) {
			ssize_t n = recv(g.r, buf, sizeof(buf), 0);

			if (n < 0 && errno == ECONNREFUSED) {
				errs++;
				continue;
			}
			if (n < 0) {
				assert_int_equal(errno, EAGAIN);
				break;
			}
			got++;
			bytes += n;
			available -= n;
		}
	}
	assert_int_equal(got, 200);
	assert_int_equal(bytes, g.payload);
	assert_int_equal(errs, 1);
	icmp_rig_close(&g);
	close(kq);
}

static void
udp_icmp_error_with_a_queue_read_as_data_says_leaves_nothing(void **state)
{
	(void)state;
	icmp_error_with_a_queue_read_as_data_says_leaves_nothing(AF_INET);
}

static void
udp6_icmp_error_with_a_queue_read_as_data_says_leaves_nothing(void **state)
{
	(void)state;
	icmp_error_with_a_queue_read_as_data_says_leaves_nothing(AF_INET6);
}

/*
 * Errors that arrive while kevent() counts the queue (a thread makes them
 * at random moments), below and past 256 datagrams: every one is still
 * the program's (getsockopt(SO_ERROR) after each), and no count is below
 * the queue's payload.
 */
struct icmp_shot {
	struct icmp_rig *g;
	atomic_int go, sent, stop;
};

static void *
icmp_shooter(void *arg)
{
	struct icmp_shot *s = arg;
	unsigned int seed = 11;

	while (!atomic_load(&s->stop)) {
		if (!atomic_exchange(&s->go, 0))
			continue;
		usleep((useconds_t)(rand_r(&seed) % 300));
		(void)sendto(s->g->e, "x", 1, 0, (struct sockaddr *)&s->g->b,
		    s->g->bl);
		atomic_store(&s->sent, 1);
	}
	return NULL;
}

static void
icmp_errors_during_counts(int n)
{
	struct icmp_rig g;
	struct icmp_shot shot;
	struct timespec zero = { 0, 0 };
	struct kevent ev;
	pthread_t t;
	int kq, lost = 0, under = 0;

	if (!icmp_rig_open(&g, AF_INET, n))
		skip();
	if (!icmp_rig_error(&g)) {
		icmp_rig_close(&g);
		skip();
	}
	{
		int e = 0;
		socklen_t el = sizeof(e);

		assert_int_equal(getsockopt(g.r, SOL_SOCKET, SO_ERROR, &e,
		    &el), 0);	/* the rig's own error, taken */
	}
	kq = t_new_kq();
	t_change(kq, (uintptr_t)g.r, EVFILT_READ, EV_ADD, 0, 0, NULL);
	shot.g = &g;
	atomic_store(&shot.go, 0);
	atomic_store(&shot.stop, 0);
	assert_int_equal(pthread_create(&t, NULL, icmp_shooter, &shot), 0);
	for (int round = 0; round < 300; round++) {
		int e = 0, after = 0;
		socklen_t el = sizeof(e);

		atomic_store(&shot.sent, 0);
		atomic_store(&shot.go, 1);
		/* Counting while the error is on its way, and a little on. */
		for (int k = 0; k < 2000 && after < 4; k++) {
			assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &zero), 1);
			if (ev.data < g.payload)
				under++;
			if (atomic_load(&shot.sent))
				after++;
		}
		usleep(500);	/* the error is in by now */
		assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &zero), 1);
		if (ev.data < g.payload)
			under++;
		assert_int_equal(getsockopt(g.r, SOL_SOCKET, SO_ERROR, &e,
		    &el), 0);
		if (e != ECONNREFUSED)
			lost++;
	}
	atomic_store(&shot.stop, 1);
	pthread_join(t, NULL);
	if (lost || under)
		fprintf(stderr, "%d errors lost, %d counts short\n", lost,
		    under);
	assert_int_equal(lost, 0);
	assert_int_equal(under, 0);
	icmp_rig_close(&g);
	close(kq);
}

static void
icmp_errors_while_kevent_counts_stay_the_programs(void **state)
{
	(void)state;
	icmp_errors_during_counts(200);
}

static void
icmp_errors_while_kevent_counts_past_256_stay_the_programs(void **state)
{
	(void)state;
	icmp_errors_during_counts(300);
}

#ifdef SO_PEEK_OFF
static void
udp_data_leaves_the_programs_peek_offset_alone(void **state)
{
	struct dgpair p;
	int kq = t_new_kq(), off = 3, v = 0;
	socklen_t len = sizeof(v);
	struct kevent ev;
	char buf[64];

	(void)state;
	assert_int_equal(dg_open(&p, AF_INET, SOCK_DGRAM, 0), 1);
	t_change(kq, p.rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	(void)dg_send(&p, 3);	/* 1, 8, 15 bytes */
	dg_settle(kq, &p, 24);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 24);
	/* Without a peek offset, MSG_PEEK still sees the first datagram. */
	assert_int_equal(recv(p.rx, buf, sizeof(buf), MSG_PEEK), 1);
	assert_int_equal(getsockopt(p.rx, SOL_SOCKET, SO_PEEK_OFF, &v, &len),
	    0);
	assert_int_equal(v, -1);
	/* A program's own offset is kept across kevent(). */
	assert_int_equal(setsockopt(p.rx, SOL_SOCKET, SO_PEEK_OFF, &off,
	    sizeof(off)), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 24);
	assert_int_equal(getsockopt(p.rx, SOL_SOCKET, SO_PEEK_OFF, &v, &len),
	    0);
	assert_int_equal(v, 3);
	dg_close(&p);
	close(kq);
}

/*
 * A peek offset the program set on one socket is that socket's: another
 * socket's offset, left on by someone else (another process's count of a
 * socket they share; here set behind libkq's back, by the raw system
 * call), is not taken for the program's and kept by a count -- MSG_PEEK
 * then looks at the head, as on FreeBSD, which has no peek offset.
 */
static void
peek_offset_set_on_another_socket_is_not_kept_on_this_one(void **state)
{
	struct dgpair p, other;
	int kq = t_new_kq(), off = 5, stray = 8;
	struct kevent ev;
	char buf[64], again[64];

	(void)state;
	assert_int_equal(dg_open(&p, AF_INET, SOCK_DGRAM, 0), 1);
	assert_int_equal(dg_open(&other, AF_INET, SOCK_DGRAM, 0), 1);
	assert_int_equal(setsockopt(other.rx, SOL_SOCKET, SO_PEEK_OFF, &off,
	    sizeof(off)), 0);
	(void)dg_send(&p, 3);	/* 1, 8, 15 bytes */
	t_change(kq, p.rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	dg_settle(kq, &p, 24);
	assert_int_equal(syscall(SYS_setsockopt, p.rx, SOL_SOCKET,
	    SO_PEEK_OFF, &stray, (socklen_t)sizeof(stray)), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 24);
	assert_int_equal(recv(p.rx, buf, sizeof(buf), MSG_PEEK), 1);
	assert_int_equal(recv(p.rx, again, sizeof(again), MSG_PEEK), 1);
	dg_close(&p);
	dg_close(&other);
	close(kq);
}

/*
 * The program's own peek offset is the socket's, whatever number the
 * socket is watched under: kept across a count of a dup() of it.  And a
 * setting made while another thread's kevent() counts the socket is not
 * undone by that count.
 */
static void
peek_offset_the_program_set_is_kept_when_a_dup_is_watched(void **state)
{
	struct dgpair p;
	int kq = t_new_kq(), off = 1, v = -2, d;
	socklen_t len = sizeof(v);
	struct kevent ev;

	(void)state;
	assert_int_equal(dg_open(&p, AF_INET, SOCK_DGRAM, 0), 1);
	d = dup(p.rx);
	assert_true(d >= 0);
	(void)dg_send(&p, 3);	/* 1, 8, 15 bytes */
	assert_int_equal(setsockopt(p.rx, SOL_SOCKET, SO_PEEK_OFF, &off,
	    sizeof(off)), 0);
	t_change(kq, (uintptr_t)d, EVFILT_READ, EV_ADD, 0, 0, NULL);
	for (int i = 0; i < 200; i++)	/* the three datagrams are in */
		if (wait_for(kq, (uintptr_t)d, EVFILT_READ, &ev, 10) &&
		    ev.data == 24)
			break;
	assert_int_equal(ev.data, 24);
	assert_int_equal(getsockopt(p.rx, SOL_SOCKET, SO_PEEK_OFF, &v, &len),
	    0);
	assert_int_equal(v, 1);
	close(d);
	dg_close(&p);
	close(kq);
}

struct po_counter {
	int kq;
	atomic_int stop, pause, paused;
};

/* Counts the socket until stopped; sits out while paused. */
static void *
po_count(void *arg)
{
	struct po_counter *c = arg;
	struct timespec zero = { 0, 0 };
	struct kevent ev;

	while (!atomic_load(&c->stop)) {
		if (atomic_load(&c->pause)) {
			atomic_store(&c->paused, 1);
			continue;
		}
		atomic_store(&c->paused, 0);
		(void)kevent(c->kq, NULL, 0, &ev, 1, &zero);
	}
	return NULL;
}

/*
 * Each setting is made while the other thread counts; the offset is
 * looked at once that thread sits out (during a count it is the count's:
 * kevent.2 LINUX NOTES).
 */
static void
peek_offset_set_while_another_thread_counts_is_kept(void **state)
{
	struct dgpair p;
	struct po_counter c;
	pthread_t t;
	int lost = 0;

	(void)state;
	assert_int_equal(dg_open(&p, AF_INET, SOCK_DGRAM, 0), 1);
	(void)dg_send(&p, 40);
	c.kq = t_new_kq();
	atomic_store(&c.stop, 0);
	atomic_store(&c.pause, 0);
	atomic_store(&c.paused, 0);
	t_change(c.kq, p.rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(pthread_create(&t, NULL, po_count, &c), 0);
	for (int i = 0; i < 300; i++) {
		int want = (i & 1) ? -1 : 0, v = -2;
		socklen_t len = sizeof(v);

		atomic_store(&c.pause, 0);
		while (atomic_load(&c.paused))
			;
		usleep((useconds_t)(i % 7) * 20);
		assert_int_equal(setsockopt(p.rx, SOL_SOCKET, SO_PEEK_OFF,
		    &want, sizeof(want)), 0);
		atomic_store(&c.pause, 1);
		while (!atomic_load(&c.paused))
			;
		assert_int_equal(getsockopt(p.rx, SOL_SOCKET, SO_PEEK_OFF,
		    &v, &len), 0);
		if (v != want)
			lost++;
	}
	atomic_store(&c.stop, 1);
	pthread_join(t, NULL);
	assert_int_equal(lost, 0);
	dg_close(&p);
	close(c.kq);
}
#endif

#ifdef SO_TIMESTAMPING
/*
 * A UDP socket that asks for transmit timestamps (Linux's error queue,
 * which raises EPOLLERR without an error any read returns) still counts
 * its queue: data is every queued datagram's payload.
 */
static void
udp_socket_with_transmit_timestamps_counts_its_whole_queue(void **state)
{
	struct dgpair p;
	int kq = t_new_kq(), ts = SOF_TIMESTAMPING_TX_SOFTWARE |
	    SOF_TIMESTAMPING_SOFTWARE;
	struct pollfd pfd;
	struct kevent ev;

	(void)state;
	assert_int_equal(dg_open(&p, AF_INET, SOCK_DGRAM, 1), 1);
	if (setsockopt(p.rx, SOL_SOCKET, SO_TIMESTAMPING, &ts,
	    sizeof(ts)) != 0) {
		dg_close(&p);
		close(kq);
		skip();
	}
	/* rx sends one datagram to tx: its timestamp joins rx's error
	   queue. */
	assert_int_equal(send(p.rx, "t", 1, 0), 1);
	pfd.fd = p.rx;
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (poll(&pfd, 1, 1000) != 1 || !(pfd.revents & POLLERR)) {
		dg_close(&p);
		close(kq);
		skip();		/* no timestamp came */
	}
	(void)dg_send(&p, 3);	/* 1, 8, 15 bytes */
	t_change(kq, p.rx, EVFILT_READ, EV_ADD, 0, 0, NULL);
	dg_settle(kq, &p, 24);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 24);
	dg_close(&p);
	close(kq);
}
#endif

#ifdef IP_RECVERR
/*
 * A UDP socket that asks for its ICMP errors' details (IP_RECVERR, which
 * sets the socket's error as well) still fails its next recv() with the
 * error once EVFILT_READ reported it: reporting the event does not take
 * it (FreeBSD has no IP_RECVERR; its so_error stays for the program).
 */
static void
udp_socket_with_ip_recverr_still_fails_recv_with_its_error(void **state)
{
	int kq = t_new_kq(), u = udp_refused(1);
	struct kevent ev;
	char c;

	(void)state;
	if (u < 0) {
		close(kq);
		skip();
	}
	t_change(kq, (uintptr_t)u, EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(wait_for(kq, (uintptr_t)u, EVFILT_READ, &ev, 1000), 1);
	errno = 0;
	assert_int_equal(recv(u, &c, 1, 0), -1);
	assert_int_equal(errno, ECONNREFUSED);
	close(u);
	close(kq);
}
#endif

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(refused_connect_puts_econnrefused_in_read_fflags),
		cmocka_unit_test(refused_connect_puts_econnrefused_in_write_fflags),
		cmocka_unit_test(refused_connect_puts_econnrefused_in_read_fflags_with_ev_clear),
		cmocka_unit_test(refused_connect_puts_econnrefused_in_write_fflags_with_ev_clear),
		cmocka_unit_test(refused_connect_reports_the_error_on_read_and_write_knotes_both),
		cmocka_unit_test(level_triggered_report_repeats_the_error_until_it_is_read),
		cmocka_unit_test(error_pending_before_ev_add_is_reported_at_once),
		cmocka_unit_test(reset_connection_puts_econnreset_in_write_fflags),
		cmocka_unit_test(clean_close_by_peer_leaves_fflags_zero),
		cmocka_unit_test(new_socket_on_the_number_of_a_failed_one_has_no_error),
		cmocka_unit_test(udp4_data_is_one_datagram_payload),
		cmocka_unit_test(udp4_data_is_two_datagrams_payload),
		cmocka_unit_test(udp4_data_is_fifty_datagrams_payload),
		cmocka_unit_test(udp4_connected_data_is_two_datagrams_payload),
		cmocka_unit_test(udp4_connected_data_is_fifty_datagrams_payload),
		cmocka_unit_test(udp6_data_is_one_datagram_payload),
		cmocka_unit_test(udp6_data_is_two_datagrams_payload),
		cmocka_unit_test(udp6_data_is_fifty_datagrams_payload),
		cmocka_unit_test(udp6_connected_data_is_fifty_datagrams_payload),
		cmocka_unit_test(unix_dgram_data_is_fifty_datagrams_payload),
		cmocka_unit_test(udp4_shut_for_reading_reports_eof_with_no_data),
		cmocka_unit_test(udp4_shut_for_reading_with_data_queued_reports_eof_with_no_data),
		cmocka_unit_test(unix_seqpacket_data_is_every_record_payload),
		cmocka_unit_test(udp4_reader_trusting_data_gets_every_datagram_with_ev_clear),
		cmocka_unit_test(udp6_reader_trusting_data_gets_every_datagram_with_ev_clear),
		cmocka_unit_test(udp_note_lowat_counts_every_datagram),
		cmocka_unit_test(processes_sharing_a_udp_socket_each_count_its_whole_queue),
		cmocka_unit_test(processes_sharing_a_udp_socket_read_meanwhile_count_whole_datagrams),
		cmocka_unit_test(process_stopped_or_killed_while_counting_a_shared_socket_stops_no_one),
		cmocka_unit_test(workers_killed_while_counting_a_shared_socket_leave_no_wait_behind),
		cmocka_unit_test(workers_killed_while_counting_a_shared_socket_and_not_yet_reaped_leave_no_wait_behind),
		cmocka_unit_test(worker_stopped_while_waiting_for_another_count_does_not_count_beside_it),
		cmocka_unit_test(udp_deep_queue_read_as_data_says_under_ev_clear_leaves_nothing),
		cmocka_unit_test(unix_dgram_deep_queue_read_as_data_says_under_ev_clear_leaves_nothing),
		cmocka_unit_test(udp_icmp_error_with_a_queue_read_as_data_says_leaves_nothing),
		cmocka_unit_test(udp6_icmp_error_with_a_queue_read_as_data_says_leaves_nothing),
		cmocka_unit_test(icmp_errors_while_kevent_counts_stay_the_programs),
		cmocka_unit_test(icmp_errors_while_kevent_counts_past_256_stay_the_programs),
		cmocka_unit_test(connected_udp_socket_readable_by_its_error_still_fails_recv_with_it),
#ifdef SO_PEEK_OFF
		cmocka_unit_test(udp_data_leaves_the_programs_peek_offset_alone),
		cmocka_unit_test(peek_offset_set_on_another_socket_is_not_kept_on_this_one),
		cmocka_unit_test(peek_offset_the_program_set_is_kept_when_a_dup_is_watched),
		cmocka_unit_test(peek_offset_set_while_another_thread_counts_is_kept),
#endif
#ifdef SO_TIMESTAMPING
		cmocka_unit_test(udp_socket_with_transmit_timestamps_counts_its_whole_queue),
#endif
#ifdef IP_RECVERR
		cmocka_unit_test(udp_socket_with_ip_recverr_still_fails_recv_with_its_error),
#endif
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, NULL, NULL);
}
