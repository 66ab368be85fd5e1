/*
 * fuzz-port.c -- libFuzzer target for the event-port front end (<port.h>):
 * the input is a program of port_* calls over a few ports and descriptors,
 * checked against a shadow of illumos's semantics.
 *
 * Each input byte string is read as at most MAXOPS operations: associate
 * and dissociate descriptors (pipe ends, a socketpair end, a regular file,
 * numbers that are closed, huge objects, bad sources) and the regular file
 * as a PORT_SOURCE_FILE object (with its current times or zero ones),
 * write to, chmod and truncate it, write to and drain
 * the pipes, close and reopen descriptors and ports, port_send and
 * port_sendn (including non-port and closed descriptors), port_alert with
 * any flags, port_get/port_getn with a zero timeout and any max/nget, the
 * queue-length form (max 0), and argument errors (bad timespecs, NULL
 * lists, kevent() on a port).  Every wait has a zero timeout, so every
 * input runs in bounded time.
 *
 * The shadow per port: the associations (descriptor number -> events,
 * user), the user events sent and not yet retrieved (a multiset), the
 * alert (events, user) if set.  Invariants (abort() with a line on stderr):
 *   - every returned call result and errno is the documented one
 *     (ENOENT exactly when the shadow has no association, EBADFD for a
 *     non-port or a bad object, EBUSY for UPDATE on an alerted port ...);
 *   - port_getn never returns more than max, and never blocks;
 *   - while an alert is set every get returns exactly the alert;
 *   - an FD event names an association the shadow has, carries its user,
 *     and revents that are non-zero and within events | POLLERR | POLLHUP
 *     | POLLNVAL; the association is then gone;
 *   - a USER event is one the shadow holds (events, user), retrieved once;
 *   - a FILE event names the port's associated file_obj_t, with its user
 *     and events within those asked for | FILE_EXCEPTION; then it is gone;
 *   - max 0 reports at least the queued user events;
 *   - draining a port (an operation, and at the end of the input) with
 *     its alert cleared returns every user event sent and every
 *     association whose descriptor poll(2) finds ready, and leaves the
 *     port not readable;
 *   - a port that never had an association and holds no user event does
 *     not poll readable once its alert is cleared;
 *   - descriptors: the process's count is back to where it started.
 *
 * Built by `make fuzz` (build-fuzz/fuzz-port), run by tools/fuzz-run.sh
 * (KQ_FUZZ_TARGET=port); tests/fuzz/standalone-main.c runs it over files
 * (tools/coverage.sh).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/event.h>
#include <port.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXOPS		96
#define NPORT		3
#define NFD		6	/* 0,1 pipe A r/w; 2,3 pipe B r/w; 4 socket; 5 file */
#define MAXUSER		256
#define MAXGET		16

#define FAIL(...) do {							\
	fprintf(stderr, "fuzz-port: invariant broken: ");		\
	fprintf(stderr, __VA_ARGS__);					\
	fprintf(stderr, "\n");						\
	abort();							\
} while (0)

struct assoc {
	int		 on;
	int		 events;
	uintptr_t	 user;
};

struct uev {
	int		 events;
	uintptr_t	 user;
};

struct sport {
	int		 fd;		/* -1: closed */
	file_obj_t	 fo;		/* PORT_SOURCE_FILE object */
	struct assoc	 fa;		/* its association */
	struct assoc	 as[NFD];	/* by descriptor slot */
	struct uev	 ue[MAXUSER];
	int		 nue;
	int		 alert;
	int		 touched;	/* has had an association */
	int		 al_events;
	uintptr_t	 al_user;
};

static struct sport ports[NPORT];
static int fds[NFD];
static int peer;		/* the socketpair's other end */
static char tmppath[64];
static int fd_count_start;
static int trace;

static const struct timespec zero_ts = { 0, 0 };

static int
count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;
}

static void
open_fd(int slot)
{
	int p[2];

	switch (slot) {
	case 0: case 1: case 2: case 3:
		if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0)
			FAIL("pipe: %s", strerror(errno));
		if (fds[slot & ~1] >= 0)
			close(fds[slot & ~1]);
		if (fds[slot | 1] >= 0)
			close(fds[slot | 1]);
		fds[slot & ~1] = p[0];
		fds[slot | 1] = p[1];
		break;
	case 4:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0, p) != 0)
			FAIL("socketpair: %s", strerror(errno));
		if (fds[4] >= 0)
			close(fds[4]);
		if (peer >= 0)
			close(peer);
		fds[4] = p[0];
		peer = p[1];
		break;
	default:
		if (fds[5] >= 0)
			close(fds[5]);
		fds[5] = open(tmppath, O_RDWR | O_CLOEXEC);
		if (fds[5] < 0)
			FAIL("open %s: %s", tmppath, strerror(errno));
		break;
	}
}

/* Descriptor slot s was closed: every association with it is gone. */
static void
forget_fd(int s)
{
	int p;

	for (p = 0; p < NPORT; p++)
		ports[p].as[s].on = 0;
}

static void
close_fd(int s)
{
	if (fds[s] < 0)
		return;
	close(fds[s]);
	fds[s] = -1;
	forget_fd(s);
}

static int
slot_of(int fd)
{
	int s;

	for (s = 0; s < NFD; s++)
		if (fds[s] == fd)
			return s;
	return -1;
}

static void
reset_port(struct sport *P)
{
	memset(P->as, 0, sizeof(P->as));
	P->fa.on = 0;
	P->nue = 0;
	P->alert = 0;
	P->touched = 0;
}

static void
open_port(int i)
{
	if (ports[i].fd >= 0)
		close(ports[i].fd);
	reset_port(&ports[i]);
	ports[i].fd = port_create();
	if (ports[i].fd < 0)
		FAIL("port_create: %s", strerror(errno));
	if (!(fcntl(ports[i].fd, F_GETFD) & FD_CLOEXEC))
		FAIL("port %d is not close-on-exec", ports[i].fd);
}

static void
expect_err(const char *what, int r, int want)
{
	if (want == 0 && r != 0)
		FAIL("%s: -1/%s, expected success", what, strerror(errno));
	if (want != 0 && (r != -1 || errno != want))
		FAIL("%s: %d/%s, expected %s", what, r, strerror(errno),
		    strerror(want));
}

/* Check one retrieved event against the shadow of port P. */
static void
check_event(struct sport *P, const port_event_t *pe)
{
	int s, i;

	if (pe->portev_pad != 0)
		FAIL("portev_pad %d", pe->portev_pad);
	switch (pe->portev_source) {
	case PORT_SOURCE_FD:
		s = slot_of((int)pe->portev_object);
		if (s < 0 || !P->as[s].on)
			FAIL("FD event for %lu, not associated",
			    (unsigned long)pe->portev_object);
		if ((uintptr_t)pe->portev_user != P->as[s].user)
			FAIL("FD event user %p, expected %#lx", pe->portev_user,
			    (unsigned long)P->as[s].user);
		if (pe->portev_events == 0 || (pe->portev_events &
		    ~(P->as[s].events | POLLERR | POLLHUP | POLLNVAL)) != 0)
			FAIL("FD revents %#x for events %#x",
			    pe->portev_events, P->as[s].events);
		P->as[s].on = 0;
		break;
	case PORT_SOURCE_USER:
		if (pe->portev_object != 0)
			FAIL("USER event object %lu",
			    (unsigned long)pe->portev_object);
		for (i = 0; i < P->nue; i++)
			if (P->ue[i].events == pe->portev_events &&
			    P->ue[i].user == (uintptr_t)pe->portev_user)
				break;
		if (i == P->nue)
			FAIL("USER event %d/%p never sent (or twice)",
			    pe->portev_events, pe->portev_user);
		P->ue[i] = P->ue[--P->nue];
		break;
	case PORT_SOURCE_FILE:
		if (pe->portev_object != (uintptr_t)&P->fo || !P->fa.on ||
		    (uintptr_t)pe->portev_user != P->fa.user)
			FAIL("FILE event for %#lx (associated %d)",
			    (unsigned long)pe->portev_object, P->fa.on);
		if (pe->portev_events == 0 || (pe->portev_events &
		    ~(P->fa.events | FILE_EXCEPTION)) != 0)
			FAIL("FILE events %#x for %#x", pe->portev_events,
			    P->fa.events);
		P->fa.on = 0;
		break;
	case PORT_SOURCE_ALERT:
		if (!P->alert || pe->portev_events != P->al_events ||
		    (uintptr_t)pe->portev_user != P->al_user)
			FAIL("ALERT event %d/%p (alert %d %d/%#lx)",
			    pe->portev_events, pe->portev_user, P->alert,
			    P->al_events, (unsigned long)P->al_user);
		break;
	default:
		FAIL("event of source %d", pe->portev_source);
	}
}

static void
do_getn(struct sport *P, uint_t max, uint_t want)
{
	port_event_t list[MAXGET + 1];
	struct timespec z = zero_ts;
	uint_t n = want, i;
	int r;

	memset(list, 0x5a, sizeof(list));
	r = port_getn(P->fd, list, max, &n, &z);
	if (want > max) {
		expect_err("port_getn nget > max", r, EINVAL);
		return;
	}
	if (r != 0)
		FAIL("port_getn(max %u, nget %u, zero): %s", max, want,
		    strerror(errno));
	if (n > max)
		FAIL("port_getn returned %u > max %u", n, max);
	if (list[max].portev_pad != 0x5a5a)
		FAIL("port_getn wrote past max");
	if (want == 0 && n != 0)
		FAIL("port_getn with nget 0 returned %u", n);
	if (P->alert && want > 0 && (n != 1 ||
	    list[0].portev_source != PORT_SOURCE_ALERT))
		FAIL("alerted port returned %u events", n);
	if (!P->alert && want > 0 && P->nue > 0 && n == 0)
		FAIL("user events queued, port_getn returned none");
	for (i = 0; i < n; i++)
		check_event(P, &list[i]);
}

static void
do_get(struct sport *P)
{
	struct timespec z = zero_ts;
	port_event_t pe;
	int r;

	r = port_get(P->fd, &pe, &z);
	if (r != 0) {
		if (errno != ETIME)
			FAIL("port_get: %s", strerror(errno));
		if (P->alert || P->nue > 0)
			FAIL("port_get: ETIME with events queued");
		return;
	}
	if (P->alert && pe.portev_source != PORT_SOURCE_ALERT)
		FAIL("alerted port returned source %d", pe.portev_source);
	check_event(P, &pe);
}

/* Drain a port (alert cleared) and check completeness. */
static void
drain(struct sport *P)
{
	port_event_t list[MAXGET];
	struct timespec z = zero_ts;
	uint_t n, i;
	int s, rounds = 0;

	if (port_alert(P->fd, PORT_ALERT_SET, 0, NULL) != 0)
		FAIL("port_alert clear: %s", strerror(errno));
	P->alert = 0;
	do {
		n = 1;
		if (port_getn(P->fd, list, MAXGET, &n, &z) != 0)
			FAIL("drain port_getn: %s", strerror(errno));
		for (i = 0; i < n; i++)
			check_event(P, &list[i]);
		if (++rounds > MAXUSER + NFD + 4)
			FAIL("drain does not end");
	} while (n > 0);
	if (P->nue != 0)
		FAIL("%d user events lost", P->nue);
	for (s = 0; s < NFD; s++) {
		struct pollfd pfd;

		if (!P->as[s].on || fds[s] < 0)
			continue;
		pfd.fd = fds[s];
		pfd.events = (short)P->as[s].events;
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents &
		    (P->as[s].events | POLLERR | POLLHUP)))
			FAIL("fd %d ready (%#x for %#x) but no event",
			    fds[s], pfd.revents, P->as[s].events);
	}
	/* Drained, no alert: nothing pending, so the port does not poll
	   readable (port_create.3; a poll loop would spin). */
	{
		struct pollfd pfd = { .fd = P->fd, .events = POLLIN };

		if (poll(&pfd, 1, 0) != 0)
			FAIL("drained port polls readable (%#x)", pfd.revents);
	}
}

/*
 * Nothing can be pending on P: no user event, and no association ever
 * (a descriptor's registration may still report a hang-up or an error
 * once whatever its interest: epoll's EPOLLHUP and EPOLLERR, kqueue.2
 * LINUX NOTES).
 */
static int
idle(const struct sport *P)
{
	return P->nue == 0 && !P->alert && !P->touched;
}

static const int evmasks[8] = {
	POLLIN, POLLOUT, POLLIN | POLLOUT, POLLPRI, POLLRDNORM | POLLWRNORM,
	0, POLLIN | POLLPRI | POLLOUT, POLLRDHUP | POLLIN,
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd, i;

	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	snprintf(tmppath, sizeof(tmppath), "/tmp/kq-fuzz-port-%ld",
	    (long)getpid());
	fd = open(tmppath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		FAIL("create %s: %s", tmppath, strerror(errno));
	close(fd);
	for (i = 0; i < NPORT; i++)
		ports[i].fd = -1;
	for (i = 0; i < NFD; i++)
		fds[i] = -1;
	peer = -1;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t pos = 0;
	int op, i, nops = 0;
	char buf[256];

#define BYTE()	(pos < size ? data[pos++] : 0)
	fd_count_start = count_fds();
	trace = getenv("KQ_FUZZ_TRACE") != NULL;
	for (i = 0; i < NPORT; i++)
		open_port(i);
	for (i = 0; i < NFD; i += (i < 4 ? 2 : 1))
		open_fd(i);
	while (pos < size && nops++ < MAXOPS) {
		struct sport *P;
		int b1, b2, s, r, e;
		uintptr_t user;

		op = BYTE() % 18;
		b1 = BYTE();
		P = &ports[b1 % NPORT];
		if (trace)	/* KQ_FUZZ_TRACE=1: the operations, on stderr */
			fprintf(stderr, "op %d b1 %#x port %d\n", op, b1,
			    (int)(P - ports));
		switch (op) {
		case 0:		/* associate */
			b2 = BYTE();
			s = b2 % NFD;
			e = evmasks[(b2 >> 3) & 7];
			user = BYTE();
			r = port_associate(P->fd, PORT_SOURCE_FD,
			    fds[s] < 0 ? 100000 : (uintptr_t)fds[s], e,
			    (void *)user);
			expect_err("port_associate", r, fds[s] < 0 ? EBADFD : 0);
			if (r == 0) {
				P->as[s].on = 1;
				P->touched = 1;
				P->as[s].events = e;
				P->as[s].user = user;
			}
			break;
		case 1:		/* dissociate */
			s = BYTE() % NFD;
			r = port_dissociate(P->fd, PORT_SOURCE_FD,
			    fds[s] < 0 ? 100000 : (uintptr_t)fds[s]);
			expect_err("port_dissociate", r, fds[s] < 0 ? EBADFD :
			    P->as[s].on ? 0 : ENOENT);
			P->as[s].on = 0;
			break;
		case 2:		/* write */
			s = (b1 >> 2) % 3;
			if (s < 2 && fds[s * 2 + 1] >= 0)
				(void)!write(fds[s * 2 + 1], "abcdefgh",
				    1 + (b1 & 7));
			else if (s == 2 && peer >= 0)
				(void)!send(peer, "!", 1,
				    (b1 & 1) ? MSG_OOB : 0);
			break;
		case 3:		/* read everything */
			s = (b1 >> 2) % 3;
			if (s < 2 && fds[s * 2] >= 0)
				while (read(fds[s * 2], buf, sizeof(buf)) > 0)
					;
			else if (s == 2 && fds[4] >= 0)
				while (recv(fds[4], buf, sizeof(buf), 0) > 0)
					;
			break;
		case 4:		/* close a descriptor (and maybe reopen) */
			s = (b1 >> 2) % NFD;
			close_fd(s);
			if (b1 & 1) {
				if (s < 4) {
					/* reopening a pipe replaces both ends */
					forget_fd(s ^ 1);
				} else if (s == 4 && peer >= 0) {
					close(peer);
					peer = -1;
				}
				open_fd(s);
			} else if (s == 4 && peer >= 0 && (b1 & 2)) {
				close(peer);	/* hang-up of the other end */
				peer = -1;
			}
			break;
		case 5:		/* port_send */
			e = BYTE();
			user = BYTE();
			if (P->nue == MAXUSER)
				drain(P);	/* room in the shadow */
			r = port_send(P->fd, e, (void *)user);
			expect_err("port_send", r, 0);
			P->ue[P->nue].events = e;
			P->ue[P->nue++].user = user;
			break;
		case 6: {	/* port_sendn to a mix of ports and others */
			int pl[4], errs[4], want[4], n = 1 + (b1 & 3), sent = 0;

			e = BYTE();
			for (i = 0; i < n; i++) {
				int k = (b1 >> (2 + i)) & 3;

				if (k < NPORT && ports[k].nue < MAXUSER) {
					pl[i] = ports[k].fd;
					want[i] = 0;
				} else if (k < NPORT) {
					pl[i] = -5;
					want[i] = EBADF;
				} else {
					pl[i] = fds[5] >= 0 ? fds[5] : -5;
					want[i] = fds[5] >= 0 ? EBADFD : EBADF;
				}
			}
			r = port_sendn(pl, errs, (uint_t)n, e, (void *)7);
			for (i = 0; i < n; i++) {
				if (errs[i] != want[i])
					FAIL("port_sendn errors[%d] %d, expected %d",
					    i, errs[i], want[i]);
				if (want[i] == 0) {
					struct sport *Q = &ports[(b1 >> (2 + i)) & 3];

					Q->ue[Q->nue].events = e;
					Q->ue[Q->nue++].user = 7;
					sent++;
				}
			}
			if (r != sent)
				FAIL("port_sendn returned %d, sent %d", r, sent);
			r = port_sendn(pl, errs, 0, e, NULL);
			expect_err("port_sendn nent 0", r, EINVAL);
			break;
		}
		case 7: {	/* port_alert */
			int fl = (b1 >> 2) & 3;

			e = BYTE() & 3;
			user = BYTE();
			r = port_alert(P->fd, fl, e, (void *)user);
			/* illumos: events 0 clears whatever the flags; else
			   both flags are EINVAL, and 0 sets as SET does. */
			if (e == 0) {
				expect_err("port_alert clear", r, 0);
				P->alert = 0;
				if (idle(P)) {
					struct pollfd pfd = { .fd = P->fd,
					    .events = POLLIN };

					if (poll(&pfd, 1, 0) != 0)
						FAIL("port with nothing pending "
						    "polls readable after its "
						    "alert was cleared");
				}
			} else if (fl == 3)
				expect_err("port_alert flags", r, EINVAL);
			else if (fl == PORT_ALERT_UPDATE && P->alert)
				expect_err("port_alert update", r, EBUSY);
			else {
				expect_err("port_alert", r, 0);
				P->alert = 1;
				P->al_events = e;
				P->al_user = user;
			}
			break;
		}
		case 8:		/* port_getn, zero timeout */
			b2 = BYTE();
			do_getn(P, (uint_t)(b2 & 15) + 1, (uint_t)(b2 >> 4) & 7);
			break;
		case 9:
			do_get(P);
			break;
		case 10: {	/* queue length */
			uint_t n = 0;

			r = port_getn(P->fd, NULL, 0, &n, NULL);
			expect_err("port_getn max 0", r, 0);
			/* The queue, also in alert mode (the alert is not
			   in it). */
			if (n < (uint_t)P->nue)
				FAIL("max 0: %u, %d user events queued", n,
				    P->nue);
			break;
		}
		case 11: {	/* argument errors */
			struct timespec bad = { 0, 1000000000 };
			port_event_t pe;
			struct kevent kev;
			uint_t n = 1;

			switch (b1 & 7) {
			case 0:
				expect_err("getn bad ts", port_getn(P->fd, &pe,
				    1, &n, &bad), EINVAL);
				break;
			case 1:
				expect_err("getn NULL nget", port_getn(P->fd,
				    &pe, 1, NULL, NULL), EINVAL);
				break;
			case 2:
				expect_err("get NULL", port_get(P->fd, NULL,
				    &bad), EINVAL);
				break;
			case 3:
				expect_err("kevent on port", kevent(P->fd, NULL,
				    0, &kev, 1, &zero_ts), EINVAL);
				break;
			case 4:
				expect_err("get on pipe", port_get(fds[0] >= 0 ?
				    fds[0] : -1, &pe, &bad), fds[0] >= 0 ?
				    EBADFD : EBADF);
				break;
			case 5:
				if ((b1 >> 3) == PORT_SOURCE_FILE) {
					/* the object is a pointer: NULL */
					expect_err("associate NULL file",
					    port_associate(P->fd, PORT_SOURCE_FILE,
					    0, FILE_MODIFIED, NULL), EFAULT);
					break;
				}
				expect_err("associate bad source",
				    port_associate(P->fd, b1 >> 3,
				    fds[5] >= 0 ? (uintptr_t)fds[5] : 100000,
				    POLLIN, NULL), (b1 >> 3) == PORT_SOURCE_FD &&
				    fds[5] >= 0 ? 0 : (b1 >> 3) == PORT_SOURCE_FD ?
				    EBADFD : EINVAL);
				if ((b1 >> 3) == PORT_SOURCE_FD && fds[5] >= 0) {
					P->as[5].on = 1;
					P->touched = 1;
					P->as[5].events = POLLIN;
					P->as[5].user = 0;
				}
				break;
			case 6:
				expect_err("associate huge object",
				    port_associate(P->fd, PORT_SOURCE_FD,
				    (uintptr_t)1 << 40, POLLIN, NULL), EBADFD);
				break;
			default:
				expect_err("get NULL event", port_get(P->fd,
				    NULL, NULL), EFAULT);
				break;
			}
			break;
		}
		case 12:	/* close and recreate a port */
			open_port(b1 % NPORT);
			break;
		case 13:	/* drain one port completely */
			drain(P);
			break;
		case 14: {	/* poll the port descriptor */
			struct pollfd pfd = { .fd = P->fd, .events = POLLIN };

			if (poll(&pfd, 1, 0) < 0)
				FAIL("poll port: %s", strerror(errno));
			if (P->alert && !(pfd.revents & POLLIN))
				FAIL("alerted port not readable");
			if (!P->alert && P->nue > 0 && !(pfd.revents & POLLIN))
				FAIL("port with user events not readable");
			break;
		}
		case 16: {	/* associate the file (times now, or zero) */
			static const int fev[4] = { FILE_MODIFIED, FILE_ATTRIB,
			    FILE_ACCESS | FILE_MODIFIED | FILE_ATTRIB,
			    FILE_MODIFIED | FILE_TRUNC };
			struct stat st;

			e = fev[(b1 >> 2) & 3];
			user = BYTE();
			memset(&P->fo, 0, sizeof(P->fo));
			P->fo.fo_name = tmppath;
			if ((b1 & 0x40) && stat(tmppath, &st) == 0) {
				P->fo.fo_atime = st.st_atim;
				P->fo.fo_mtime = st.st_mtim;
				P->fo.fo_ctime = st.st_ctim;
			}
			r = port_associate(P->fd, PORT_SOURCE_FILE,
			    (uintptr_t)&P->fo, e, (void *)user);
			expect_err("port_associate FILE", r, 0);
			P->fa.on = 1;
			P->touched = 1;
			P->fa.events = e;
			P->fa.user = user;
			break;
		}
		case 17: {	/* change the file, or dissociate it */
			int fd;

			switch ((b1 >> 2) & 3) {
			case 0:
				fd = open(tmppath, O_WRONLY | O_APPEND | O_CLOEXEC);
				if (fd >= 0) {
					(void)!write(fd, "zz", 2);
					close(fd);
				}
				break;
			case 1:
				(void)chmod(tmppath, (b1 & 1) ? 0600 : 0640);
				break;
			case 2:
				(void)truncate(tmppath, b1 & 1);
				break;
			default:
				r = port_dissociate(P->fd, PORT_SOURCE_FILE,
				    (uintptr_t)&P->fo);
				expect_err("port_dissociate FILE", r,
				    P->fa.on ? 0 : ENOENT);
				P->fa.on = 0;
				break;
			}
			break;
		}
		default:	/* port_getn with a larger list */
			do_getn(P, MAXGET, 1 + (b1 & 7));
			break;
		}
	}
	for (i = 0; i < NPORT; i++)
		drain(&ports[i]);
	for (i = 0; i < NPORT; i++) {
		close(ports[i].fd);
		ports[i].fd = -1;
	}
	for (i = 0; i < NFD; i++)
		close_fd(i);
	if (peer >= 0)
		close(peer);
	peer = -1;
	if (fd_count_start >= 0 && count_fds() != fd_count_start)
		FAIL("descriptor leak: %d open, %d at start", count_fds(),
		    fd_count_start);
	return 0;
#undef BYTE
}
