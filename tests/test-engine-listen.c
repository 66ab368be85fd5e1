/*
 * test-engine-listen.c -- EVFILT_READ on listening TCP sockets, checked
 * against an oracle over generated sequences of connections, accepts,
 * scans and re-arms, in every registration mode; and with threads sharing
 * the kqueue.
 *
 * FreeBSD reference (filt_solisten): a listening socket is readable while
 * its queue of completed connections is not empty, and data is that
 * queue's length; NOTE_LOWAT does not apply.  Each new connection
 * activates the knote (what EV_CLEAR reports again); accept() does not.
 * EV_DISPATCH disables the knote when it is reported, EV_ONESHOT deletes
 * it; a re-enabled or re-added knote is reported if connections wait.
 * The same holds for AF_UNIX listeners, but for data, which kq (Linux)
 * reports as 1: the oracle asks only for 1 <= data <= queue there.
 *
 * Every scenario runs in a child with a time limit (engine-helpers.h).
 * KQ_LISTEN_SEED picks the first seed of the generated sequences.
 */
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/un.h>
#ifdef __linux__
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#endif

#include "engine-helpers.h"

#define L_BACKLOG	128
#define L_QMAX		40	/* connections left waiting at most */
#define L_STEPS		300	/* steps per sequence */
#define L_SEEDS		6	/* sequences per mode */

/* ------------------------------------------------------------------ */
/* Local helpers                                                      */
/* ------------------------------------------------------------------ */

static uint32_t
l_rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* A listening socket and where to connect to it. */
struct l_addr {
	int			 fam;	/* AF_INET or AF_UNIX */
	struct sockaddr_in	 sin;
	struct sockaddr_un	 sun;
};

static const struct sockaddr *
l_sa(const struct l_addr *a, socklen_t *len)
{
	if (a->fam == AF_UNIX) {
		*len = sizeof(a->sun);
		return (const struct sockaddr *)&a->sun;
	}
	*len = sizeof(a->sin);
	return (const struct sockaddr *)&a->sin;
}

/*
 * A non-blocking listener of family fam: TCP on the loopback, or AF_UNIX
 * at a fresh path under /tmp (removed again at once: connect() needs it
 * only while the test runs, and l_unlink() removes it).
 */
static int
l_listener_fam(int fam, struct l_addr *a)
{
	static int seq;
	socklen_t len;
	int s;

	memset(a, 0, sizeof(*a));
	a->fam = fam;
	E_SYS(s = socket(fam, SOCK_STREAM, 0));
	if (fam == AF_UNIX) {
		a->sun.sun_family = AF_UNIX;
		snprintf(a->sun.sun_path, sizeof(a->sun.sun_path),
		    "/tmp/kq-listen-%d-%d", (int)getpid(), seq++);
		(void)unlink(a->sun.sun_path);
	} else {
		a->sin.sin_family = AF_INET;
		a->sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	{
		const struct sockaddr *sa = l_sa(a, &len);

		E_SYS(bind(s, sa, len));
	}
	E_SYS(listen(s, L_BACKLOG));
	if (fam == AF_INET) {
		len = sizeof(a->sin);
		E_SYS(getsockname(s, (struct sockaddr *)&a->sin, &len));
	}
	E_SYS(fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK));
	return s;
}

static void
l_unlink(const struct l_addr *a)
{
	if (a->fam == AF_UNIX)
		(void)unlink(a->sun.sun_path);
}

/* A non-blocking TCP listener on the loopback; its address in *sin. */
static int
l_listener(struct sockaddr_in *sin)
{
	struct l_addr a;
	int s = l_listener_fam(AF_INET, &a);

	*sin = a.sin;
	return s;
}

/*
 * Connect to a and close the client end at once: the connection stays
 * in the listener's queue (with a FIN behind it) until it is accepted.
 */
static void
l_connect_to(const struct l_addr *a)
{
	socklen_t len;
	const struct sockaddr *sa = l_sa(a, &len);
	int c;

	E_SYS(c = socket(a->fam, SOCK_STREAM, 0));
	E_SYS(connect(c, sa, len));
	close(c);
}

static void
l_connect(const struct sockaddr_in *sin)
{
	struct l_addr a = { .fam = AF_INET, .sin = *sin };

	l_connect_to(&a);
}

/*
 * Wait until the level-triggered probe knote (kqueue probe) reports that
 * exactly q connections wait: the handshakes complete asynchronously.
 */
static void
l_settle_fam(int probe, int ls, int q, int fam)
{
	int64_t deadline = e_now_ms() + 2000;
	struct kevent ev;
	int r;

	for (;;) {
		r = e_wait(probe, &ev, 1, 5);
		E_CHECK(r >= 0, "probe kevent: %s", strerror(errno));
		if (q == 0 ? r == 0 : (r == 1 && (int)ev.ident == ls &&
		    (fam == AF_UNIX ? ev.data >= 1 : ev.data == q)))
			return;
		E_CHECK(e_now_ms() < deadline, "the probe knote never "
		    "reported %d waiting connections (last: %d events, "
		    "data %jd)", q, r, r == 1 ? (intmax_t)ev.data : -1);
	}
}

static void
l_settle(int probe, int ls, int q)
{
	l_settle_fam(probe, ls, q, AF_INET);
}

/* ------------------------------------------------------------------ */
/* Generated sequences against the oracle                             */
/* ------------------------------------------------------------------ */

enum l_mode { L_LEVEL, L_CLEAR, L_DISPATCH, L_ONESHOT, L_NMODES };

static const char *const l_mode_name[L_NMODES] = {
	"level", "EV_CLEAR", "EV_DISPATCH", "EV_ONESHOT"
};

static const unsigned short l_mode_flags[L_NMODES] = {
	0, EV_CLEAR, EV_DISPATCH, EV_ONESHOT
};

/*
 * The oracle: q connections wait; the knote exists (armed: enabled and,
 * for EV_ONESHOT, present); for EV_CLEAR, pending says an activation
 * (a new connection, or an EV_ADD while connections waited) has not been
 * reported yet.  A scan reports the knote iff it is armed, q > 0 and,
 * for EV_CLEAR, pending.
 */
struct l_oracle {
	int	q;
	int	armed;
	int	pending;
};

static void
l_scan(int kq, int ls, enum l_mode m, int fam, struct l_oracle *o,
    uint32_t seed, int step)
{
	struct kevent ev[4];
	int want = o->armed && o->q > 0 && (m != L_CLEAR || o->pending);
	int r = e_wait(kq, ev, 4, 0);

	E_CHECK(r == want, "%s, seed %#x, step %d: %d events, expected %d "
	    "(%d connections waiting, armed %d, pending %d; data %jd)",
	    l_mode_name[m], seed, step, r, want, o->q, o->armed, o->pending,
	    r > 0 ? (intmax_t)ev[0].data : -1);
	if (r == 0)
		return;
	E_CHECK((int)ev[0].ident == ls && ev[0].filter == EVFILT_READ &&
	    ev[0].udata == (void *)&o->q, "%s, seed %#x, step %d: a foreign "
	    "event (ident %ju, filter %d)", l_mode_name[m], seed, step,
	    (uintmax_t)ev[0].ident, ev[0].filter);
	E_CHECK((fam == AF_UNIX ? ev[0].data >= 1 && ev[0].data <= o->q :
	    ev[0].data == o->q) && !(ev[0].flags & EV_EOF),
	    "%s, %s, seed %#x, step %d: data %jd flags %#x, expected %d "
	    "waiting connections", l_mode_name[m], fam == AF_UNIX ? "AF_UNIX" :
	    "TCP", seed, step, (intmax_t)ev[0].data, ev[0].flags, o->q);
	o->pending = 0;
	if (m == L_DISPATCH || m == L_ONESHOT)
		o->armed = 0;
}

static void
l_sequence(enum l_mode m, int fam, uint32_t seed)
{
	struct l_addr la;
	struct l_oracle o = { 0, 1, 0 };
	int kq, probe, ls, a;
	uint32_t s = seed;

	ls = l_listener_fam(fam, &la);
	E_SYS(kq = kqueue());
	E_SYS(probe = kqueue());
	E_CHANGE(probe, ls, EVFILT_READ, EV_ADD, 0, 0, NULL);
	E_CHANGE(kq, ls, EVFILT_READ, EV_ADD | l_mode_flags[m], 0, 0,
	    &o.q);
	for (int step = 0; step < L_STEPS; step++) {
		switch (l_rnd(&s) % 6) {
		case 0:		/* new connections */
		case 1: {
			int n = 1 + (int)(l_rnd(&s) % 3);

			if (o.q + n > L_QMAX)
				break;
			for (int i = 0; i < n; i++)
				l_connect_to(&la);
			o.q += n;
			o.pending = 1;
			l_settle_fam(probe, ls, o.q, fam);
			break;
		}
		case 2: {	/* accept some */
			int n = o.q > 0 ? 1 + (int)(l_rnd(&s) % o.q) : 0;

			for (int i = 0; i < n; i++) {
				a = accept(ls, NULL, NULL);
				E_CHECK(a >= 0, "accept %d of %d: %s", i, n,
				    strerror(errno));
				close(a);
			}
			o.q -= n;
			break;
		}
		case 3:		/* re-arm the knote the mode's way */
			if (m == L_DISPATCH)
				E_CHANGE(kq, ls, EVFILT_READ, EV_ENABLE, 0, 0,
				    &o.q);
			else
				E_CHANGE(kq, ls, EVFILT_READ,
				    EV_ADD | l_mode_flags[m], 0, 0, &o.q);
			o.armed = 1;
			/* FreeBSD re-evaluates the knote on EV_ADD. */
			if (m == L_CLEAR && o.q > 0)
				o.pending = 1;
			break;
		default:	/* scan */
			l_scan(kq, ls, m, fam, &o, seed, step);
			break;
		}
	}
	/* Drain: the queue empties, and nothing more is reported. */
	while ((a = accept(ls, NULL, NULL)) >= 0)
		close(a), o.q--;
	E_CHECK(errno == EAGAIN || errno == EWOULDBLOCK, "accept: %s",
	    strerror(errno));
	E_CHECK(o.q == 0, "%s, seed %#x: %d connections never arrived or "
	    "came twice", l_mode_name[m], seed, o.q);
	l_scan(kq, ls, m, fam, &o, seed, L_STEPS);
	l_unlink(&la);
	close(ls);
	close(probe);
	close(kq);
}

/* arg: the mode, | L_UNIX for an AF_UNIX listener. */
#define L_UNIX	0x100

static int
l_sequences_child(void *arg)
{
	enum l_mode m = (enum l_mode)((intptr_t)arg & 0xff);
	int fam = ((intptr_t)arg & L_UNIX) ? AF_UNIX : AF_INET;
	const char *v = getenv("KQ_LISTEN_SEED");
	uint32_t seed = v ? (uint32_t)strtoul(v, NULL, 0) : 0x9e3779b9u;

	for (int i = 0; i < L_SEEDS; i++) {
		uint32_t sd = seed + (uint32_t)i * 0x61c88647u;

		l_sequence(m, fam, sd != 0 ? sd : 1);
	}
	return 0;
}

/* The cmocka test: its initial state is l_sequences_child's arg. */
static void
l_sequences_test(void **state)
{
	E_RUN(l_sequences_child, *state, 60);
}

/* ------------------------------------------------------------------ */
/* Threads sharing the kqueue                                         */
/* ------------------------------------------------------------------ */

#define LT_THREADS	3
#define LT_CONNS	3000
#define LT_INFLIGHT	100	/* connections queued at most */

struct lt_ctx {
	int		 kq;
	int		 ls;
	enum l_mode	 mode;
	int		 fam;
	atomic_int	 accepted;
	atomic_int	 stop;
	atomic_int	 events;
};

/*
 * A consumer: wait, accept what the event says waits, re-arm.  Every
 * report must count at least one connection (another thread may have
 * taken it since: accept() then says EAGAIN).
 */
static void *
lt_main(void *arg)
{
	struct lt_ctx *c = arg;
	struct kevent ev;
	int r, a;

	while (!atomic_load(&c->stop)) {
		r = e_wait(c->kq, &ev, 1, 20);
		E_CHECK(r >= 0, "kevent: %s", strerror(errno));
		if (r == 0)
			continue;
		atomic_fetch_add(&c->events, 1);
		E_CHECK((int)ev.ident == c->ls && ev.data >= 1 &&
		    !(ev.flags & (EV_EOF | EV_ERROR)), "%s: a report of the "
		    "listener with data %jd flags %#x", l_mode_name[c->mode],
		    (intmax_t)ev.data, ev.flags);
		/* EV_CLEAR needs the queue drained; the others take what
		   the report counted. */
		for (int64_t i = 0; c->mode == L_CLEAR || i < ev.data; i++) {
			if ((a = accept(c->ls, NULL, NULL)) < 0) {
				E_CHECK(errno == EAGAIN || errno == EWOULDBLOCK,
				    "accept: %s", strerror(errno));
				break;
			}
			close(a);
			atomic_fetch_add(&c->accepted, 1);
		}
		if (c->mode == L_DISPATCH)
			E_CHANGE(c->kq, c->ls, EVFILT_READ, EV_ENABLE, 0, 0,
			    NULL);
		else if (c->mode == L_ONESHOT)
			E_CHANGE(c->kq, c->ls, EVFILT_READ,
			    EV_ADD | EV_ONESHOT, 0, 0, NULL);
	}
	return NULL;
}

static int
lt_child(void *arg)
{
	struct lt_ctx c;
	struct l_addr la;
	pthread_t thr[LT_THREADS];
	int64_t deadline;

	memset(&c, 0, sizeof(c));
	c.mode = (enum l_mode)((intptr_t)arg & 0xff);
	c.fam = ((intptr_t)arg & L_UNIX) ? AF_UNIX : AF_INET;
	c.ls = l_listener_fam(c.fam, &la);
	E_SYS(c.kq = kqueue());
	E_CHANGE(c.kq, c.ls, EVFILT_READ, EV_ADD | l_mode_flags[c.mode], 0,
	    0, NULL);
	for (int i = 0; i < LT_THREADS; i++)
		E_CHECK(pthread_create(&thr[i], NULL, lt_main, &c) == 0,
		    "pthread_create");
	deadline = e_now_ms() + 30000;
	for (int n = 0; n < LT_CONNS; n++) {
		while (n - atomic_load(&c.accepted) >= LT_INFLIGHT) {
			E_CHECK(e_now_ms() < deadline, "%s: %d of %d "
			    "connections accepted, the rest stuck",
			    l_mode_name[c.mode], atomic_load(&c.accepted), n);
			e_sleep_ms(1);
		}
		l_connect_to(&la);
	}
	while (atomic_load(&c.accepted) < LT_CONNS) {
		E_CHECK(e_now_ms() < deadline, "%s: %d of %d connections "
		    "accepted, a wake-up lost", l_mode_name[c.mode],
		    atomic_load(&c.accepted), LT_CONNS);
		e_sleep_ms(1);
	}
	atomic_store(&c.stop, 1);
	for (int i = 0; i < LT_THREADS; i++)
		pthread_join(thr[i], NULL);
	E_CHECK(atomic_load(&c.accepted) == LT_CONNS, "%d accepted of %d",
	    atomic_load(&c.accepted), LT_CONNS);
	l_unlink(&la);
	close(c.ls);
	close(c.kq);
	return 0;
}

/* The cmocka test: its initial state is lt_child's arg. */
static void
lt_test(void **state)
{
	E_RUN(lt_child, *state, 60);
}

/* ------------------------------------------------------------------ */
/* A listener that stops listening (Linux)                            */
/* ------------------------------------------------------------------ */

#ifdef __linux__
/*
 * Linux lets a listening socket be disconnected (connect() with
 * AF_UNSPEC) and connected elsewhere: the same file, now a stream whose
 * read data is the bytes queued.  (FreeBSD refuses connect() on a
 * listening socket, so the case does not arise there.)
 */
/*
 * Accept what waits on listener ls, stop it listening (connect() with
 * AF_UNSPEC) and connect it to the listener other at sin2, blocking.
 * Returns other's end of that connection.
 */
static int
l_unlisten(int ls, int other, const struct sockaddr_in *sin2)
{
	struct sockaddr un = { .sa_family = AF_UNSPEC };
	int a, peer;

	while ((a = accept(ls, NULL, NULL)) >= 0)
		close(a);
	E_SYS(connect(ls, &un, sizeof(un)));
	E_SYS(fcntl(ls, F_SETFL, fcntl(ls, F_GETFL) & ~O_NONBLOCK));
	E_SYS(connect(ls, (const struct sockaddr *)sin2, sizeof(*sin2)));
	E_SYS(fcntl(other, F_SETFL, fcntl(other, F_GETFL) & ~O_NONBLOCK));
	E_SYS(peer = accept(other, NULL, NULL));
	return peer;
}

static int
l_unlisten_child(void *arg)
{
	unsigned short flags = (unsigned short)(intptr_t)arg;
	struct sockaddr_in sin, sin2;
	struct kevent ev;
	int kq, probe, ls, other, peer, r;

	ls = l_listener(&sin);
	other = l_listener(&sin2);
	E_SYS(kq = kqueue());
	E_SYS(probe = kqueue());
	E_CHANGE(probe, ls, EVFILT_READ, EV_ADD, 0, 0, NULL);
	E_CHANGE(kq, ls, EVFILT_READ, EV_ADD | flags, 0, 0, NULL);
	/* Two reports as a listener, so that it is known as one. */
	for (int i = 1; i <= 2; i++) {
		l_connect(&sin);
		l_settle(probe, ls, i);
		r = e_wait(kq, &ev, 1, 1000);
		E_CHECK(r == 1 && ev.data == i, "listener report %d: %d "
		    "events, data %jd", i, r, r == 1 ? (intmax_t)ev.data : -1);
	}
	peer = l_unlisten(ls, other, &sin2);
	E_CHECK(write(peer, "hello", 5) == 5, "write: %s", strerror(errno));
	r = e_wait(kq, &ev, 1, 2000);
	E_CHECK(r == 1 && (int)ev.ident == ls && ev.data == 5 &&
	    !(ev.flags & EV_EOF), "the former listener, now a stream with 5 "
	    "bytes queued: %d events, data %jd flags %#x", r,
	    r == 1 ? (intmax_t)ev.data : -1, r == 1 ? ev.flags : 0);
	close(peer);
	r = e_wait(kq, &ev, 1, 2000);
	E_CHECK(r == 1 && ev.data == 5 && (ev.flags & EV_EOF), "after the "
	    "peer's close: %d events, data %jd flags %#x", r,
	    r == 1 ? (intmax_t)ev.data : -1, r == 1 ? ev.flags : 0);
	close(ls);
	close(other);
	close(probe);
	close(kq);
	return 0;
}

static void
l_unlisten_test(void **state)
{
	E_RUN(l_unlisten_child, *state, 20);
}

/*
 * The same with a WRITE knote beside an EV_CLEAR READ one (whose events
 * never look at the listen queue again): once connected, the socket's
 * send space is reported, and a NOTE_LOWAT mark below it fires.
 */
static int
l_unlisten_write_child(void *arg)
{
	unsigned int lowat = (unsigned int)(intptr_t)arg;
	struct sockaddr_in sin, sin2;
	struct kevent ev;
	int kq, probe, ls, other, peer, r;

	ls = l_listener(&sin);
	other = l_listener(&sin2);
	E_SYS(kq = kqueue());
	E_SYS(probe = kqueue());
	E_CHANGE(probe, ls, EVFILT_READ, EV_ADD, 0, 0, NULL);
	E_CHANGE(kq, ls, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	E_CHANGE(kq, ls, EVFILT_WRITE, EV_ADD, lowat ? NOTE_LOWAT : 0,
	    lowat, NULL);
	l_connect(&sin);
	l_settle(probe, ls, 1);
	r = e_wait(kq, &ev, 1, 1000);
	E_CHECK(r == 1 && ev.filter == EVFILT_READ && ev.data == 1,
	    "listener report: %d events, filter %d, data %jd", r,
	    r == 1 ? ev.filter : 0, r == 1 ? (intmax_t)ev.data : -1);
	peer = l_unlisten(ls, other, &sin2);
	r = e_wait(kq, &ev, 1, 2000);
	E_CHECK(r == 1 && ev.filter == EVFILT_WRITE && ev.data > 0 &&
	    ev.data >= (int64_t)lowat, "the former listener, connected: %d "
	    "events, filter %d, data %jd (NOTE_LOWAT %u)", r,
	    r == 1 ? ev.filter : 0, r == 1 ? (intmax_t)ev.data : -1, lowat);
	close(peer);
	close(ls);
	close(other);
	close(probe);
	close(kq);
	return 0;
}

static void
l_unlisten_write_test(void **state)
{
	E_RUN(l_unlisten_write_child, *state, 20);
}

/*
 * A socket that is no listener and has no byte count (FIONREAD fails on
 * netlink): NOTE_LOWAT still holds its event back while data (1) is
 * below the mark.
 */
static int
l_netlink_lowat_child(void *arg)
{
	struct {
		struct nlmsghdr	h;
		struct rtgenmsg	g;
	} req;
	struct kevent ev;
	int s, kq, r;

	(void)arg;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = RTM_GETLINK;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.h.nlmsg_seq = 1;
	req.g.rtgen_family = AF_UNSPEC;
	E_SYS(s = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
	E_SYS(kq = kqueue());
	E_CHANGE(kq, s, EVFILT_READ, EV_ADD, NOTE_LOWAT, 1 << 30, NULL);
	E_CHECK(send(s, &req, sizeof(req), 0) == (ssize_t)sizeof(req),
	    "send: %s", strerror(errno));
	r = e_wait(kq, &ev, 1, 300);
	E_CHECK(r == 0, "reported below its NOTE_LOWAT mark: data %jd",
	    r == 1 ? (intmax_t)ev.data : -1);
	E_CHANGE(kq, s, EVFILT_READ, EV_ADD, 0, 0, NULL);
	r = e_wait(kq, &ev, 1, 2000);
	E_CHECK(r == 1 && ev.data >= 1, "without the mark: %d events", r);
	close(s);
	close(kq);
	return 0;
}

static void
socket_without_byte_count_keeps_note_lowat(void **state)
{
	(void)state;
	E_RUN(l_netlink_lowat_child, NULL, 20);
}

#endif

/* A test of one scenario in one mode: arg is its cmocka initial state. */
#define L_TEST(name, fn, arg) \
	{ #name, fn, NULL, NULL, (void *)(intptr_t)(arg) }

int
main(void)
{
	const struct CMUnitTest tests[] = {
		L_TEST(listen_queue_length_matches_oracle_level,
		    l_sequences_test, L_LEVEL),
		L_TEST(listen_queue_length_matches_oracle_clear,
		    l_sequences_test, L_CLEAR),
		L_TEST(listen_queue_length_matches_oracle_dispatch,
		    l_sequences_test, L_DISPATCH),
		L_TEST(listen_queue_length_matches_oracle_oneshot,
		    l_sequences_test, L_ONESHOT),
		L_TEST(unix_listener_readiness_matches_oracle_level,
		    l_sequences_test, L_LEVEL | L_UNIX),
		L_TEST(unix_listener_readiness_matches_oracle_clear,
		    l_sequences_test, L_CLEAR | L_UNIX),
		L_TEST(unix_listener_readiness_matches_oracle_dispatch,
		    l_sequences_test, L_DISPATCH | L_UNIX),
		L_TEST(unix_listener_readiness_matches_oracle_oneshot,
		    l_sequences_test, L_ONESHOT | L_UNIX),
		L_TEST(listen_threads_accept_every_connection_level,
		    lt_test, L_LEVEL),
		L_TEST(listen_threads_accept_every_connection_clear,
		    lt_test, L_CLEAR),
		L_TEST(listen_threads_accept_every_connection_dispatch,
		    lt_test, L_DISPATCH),
		L_TEST(listen_threads_accept_every_connection_oneshot,
		    lt_test, L_ONESHOT),
		L_TEST(unix_listener_threads_accept_every_connection_level,
		    lt_test, L_LEVEL | L_UNIX),
		L_TEST(unix_listener_threads_accept_every_connection_clear,
		    lt_test, L_CLEAR | L_UNIX),
#ifdef __linux__
		L_TEST(listener_that_stops_listening_reports_bytes_level,
		    l_unlisten_test, 0),
		L_TEST(listener_that_stops_listening_reports_bytes_clear,
		    l_unlisten_test, EV_CLEAR),
		L_TEST(former_listener_reports_send_space,
		    l_unlisten_write_test, 0),
		L_TEST(former_listener_fires_write_low_water_mark,
		    l_unlisten_write_test, 1),
		cmocka_unit_test(socket_without_byte_count_keeps_note_lowat),
#endif
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, NULL, NULL);
}
