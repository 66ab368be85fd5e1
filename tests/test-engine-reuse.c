/*
 * test-engine-reuse.c -- regression tests of descriptor identity: a
 * kqueue's number closed (under a blocked kevent() or not) and reused by
 * something else -- a pipe, a new kqueue, an epoll instance of another
 * library -- keeps that something intact, and kevent() on the old number
 * never touches it.
 *
 * FreeBSD reference: kevent() resolves its descriptor with fget() at the
 * start of the call and holds that file until it returns; close() only
 * empties the table slot.  A kevent() blocked on a kqueue whose number is
 * closed keeps sleeping on that kqueue (and so times out with 0); it
 * never sees the descriptor that takes the number afterwards.  kevent()
 * on a closed number fails with EBADF, on a descriptor that is not a
 * kqueue with EBADF or EINVAL (kqueue_acquire), and leaves that
 * descriptor alone.  Closing a descriptor drops its knotes (by number),
 * even if a dup() keeps the file open.
 *
 * Every scenario runs in a child process with a time limit (see
 * engine-helpers.h).
 */
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif

#include "engine-helpers.h"

/* ------------------------------------------------------------------ */
/* Local helpers                                                      */
/* ------------------------------------------------------------------ */

struct blocked {
	pthread_t	 thr;
	int		 kq;
	int		 timeout_ms;
	atomic_int	 started;
	atomic_int	 done;
	int		 r;
	int		 err;
	struct kevent	 ev[4];
};

static void *
blocked_main(void *arg)
{
	struct blocked *b = arg;

	atomic_store(&b->started, 1);
	b->r = e_wait(b->kq, b->ev, 4, b->timeout_ms);
	b->err = errno;
	atomic_store(&b->done, 1);
	return NULL;
}

/* Start a thread blocked in kevent(kq) and give it time to block. */
static void
blocked_start(struct blocked *b, int kq, int timeout_ms)
{
	memset(b, 0, sizeof(*b));
	b->kq = kq;
	b->timeout_ms = timeout_ms;
	E_CHECK(pthread_create(&b->thr, NULL, blocked_main, b) == 0,
	    "pthread_create");
	while (!atomic_load(&b->started))
		e_sleep_ms(1);
	e_sleep_ms(100);
}

/* Join it (it must return within limit_ms). */
static void
blocked_join(struct blocked *b, int limit_ms)
{
	int64_t deadline = e_now_ms() + limit_ms;

	while (!atomic_load(&b->done) && e_now_ms() < deadline)
		e_sleep_ms(2);
	E_CHECK(atomic_load(&b->done), "the blocked kevent() did not return "
	    "within %d ms", limit_ms);
	E_CHECK(pthread_join(b->thr, NULL) == 0, "pthread_join");
}

/* The pipe p[] must be a working pipe: a FIFO, and a byte goes through. */
static void
check_pipe(const int p[2], const char *when)
{
	struct stat st;
	char ch = 0;
	int r;

	memset(&st, 0, sizeof(st));
	r = fstat(p[0], &st);
	E_CHECK(r == 0 && S_ISFIFO(st.st_mode), "%s: descriptor %d (the "
	    "kqueue's old number) is no longer the pipe's read end (%s)",
	    when, p[0], r != 0 ? strerror(errno) : "fstat: not a FIFO");
	E_CHECK(fstat(p[1], &st) == 0 && S_ISFIFO(st.st_mode), "%s: "
	    "descriptor %d is no longer the pipe's write end", when, p[1]);
	E_CHECK(write(p[1], "p", 1) == 1, "%s: write to the pipe: %s", when,
	    strerror(errno));
	E_SYS(fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK));
	E_CHECK(read(p[0], &ch, 1) == 1 && ch == 'p', "%s: the byte written "
	    "to the pipe did not come out of descriptor %d: %s", when, p[0],
	    strerror(errno));
}

/* After close(old): make old the lowest free number. */
static void
free_number(int old, int *hold, int *nhold)
{
	E_CHECK(e_make_lowest_free(old, hold, 64, nhold) == 0,
	    "could not make %d the lowest free descriptor", old);
}

/* ------------------------------------------------------------------ */
/* (a) A blocked kevent(), its kqueue closed, a pipe at the number    */
/* ------------------------------------------------------------------ */

/*
 * zombie: the kqueue watches a socket whose number was closed while a
 * dup() keeps it open, and the socket becomes readable after the pipe
 * took the kqueue's number (an engine that rebuilds its epoll set must
 * not do so onto the pipe).
 */
static int
pipe_at_number_child(void *arg)
{
	int zombie = (int)(intptr_t)arg;
	int kq, sv[2] = { -1, -1 }, keep = -1, p[2], hold[64], nhold, i;
	struct blocked b;

	E_SYS(kq = kqueue());
	E_CHANGE(kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	if (zombie) {
		struct kevent ev[4];
		char buf[8];
		int r;

		E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
		E_CHANGE(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
		E_SYS(keep = dup(sv[0]));
		E_SYS(close(sv[0]));
		if (zombie == 1) {
			/* the knote is gone (FreeBSD: dropped by close) */
			r = e_change(kq, sv[0], EVFILT_READ, EV_DELETE, 0, 0,
			    NULL);
			E_CHECK(r == -1 && (errno == EBADF || errno == ENOENT),
			    "EV_DELETE after close: %d %s", r, strerror(errno));
		} else {
			/* a scan sees the socket ready under a closed number */
			E_CHECK(send(sv[1], "z", 1, MSG_NOSIGNAL) == 1, "send");
			r = kevent(kq, NULL, 0, ev, 4, &t_zero);
			E_CHECK(r == 0, "kevent after close of the watched "
			    "number returned %d", r);
			E_CHECK(recv(keep, buf, sizeof(buf), 0) == 1, "recv");
		}
	}
	blocked_start(&b, kq, 1000);
	E_SYS(close(kq));
	free_number(kq, hold, &nhold);
	E_SYS(pipe(p));
	E_CHECK(p[0] == kq, "pipe() got %d, not the kqueue's %d", p[0], kq);
	check_pipe(p, "right after close");
	if (zombie)
		E_CHECK(send(sv[1], "z", 1, MSG_NOSIGNAL) == 1, "send");
	blocked_join(&b, 3000);
	check_pipe(p, "after the blocked kevent() returned");
	/* nothing was triggered, and the socket's knote went with its
	   number */
	for (i = 0; i < b.r; i++)
		fprintf(stderr, "the blocked kevent() returned an event: ident "
		    "%ju filter %d%s\n", (uintmax_t)b.ev[i].ident,
		    b.ev[i].filter, zombie && b.ev[i].ident ==
		    (uintptr_t)sv[0] ? " (the socket whose number was closed)"
		    : "");
	E_CHECK(b.r == 0 || (b.r == -1 && b.err == EBADF), "the blocked "
	    "kevent() returned %d (%s)", b.r, b.r < 0 ? strerror(b.err) : "");
	e_sleep_ms(20);
	check_pipe(p, "a little later");
	close(p[0]);
	close(p[1]);
	if (zombie) {
		close(keep);
		close(sv[1]);
	}
	e_close_all(hold, nhold);
	return 0;
}

static void
pipe_at_closed_kqueue_number_stays_pipe_after_blocked_kevent(void **state)
{
	(void)state;
	E_RUN(pipe_at_number_child, (void *)0, 20);
}

static void
pipe_at_closed_kqueue_number_stays_pipe_with_dup_kept_deleted_registration(
    void **state)
{
	(void)state;
	E_RUN(pipe_at_number_child, (void *)1, 20);
}

static void
pipe_at_closed_kqueue_number_stays_pipe_with_dup_kept_scanned_registration(
    void **state)
{
	(void)state;
	E_RUN(pipe_at_number_child, (void *)2, 20);
}

/* ------------------------------------------------------------------ */
/* (b) A blocked kevent(), its kqueue closed, a new kqueue at the     */
/*     number: the new kqueue's events stay with it                   */
/* ------------------------------------------------------------------ */

/*
 * withsock: 0, kq1 holds nothing; 1, kq1 watches a socket that becomes
 * readable after kq2 exists (the blocked call may report it: it is
 * kq1's); 2, kq1 watches a socket with NOTE_LOWAT 10 that gets one byte
 * (the blocked call wakes and finds nothing to report), and kq2 has an
 * EV_CLEAR pipe ready as well as the user event.
 */
static int
kqueue_at_number_child(void *arg)
{
	int withsock = (int)(intptr_t)arg;
	int kq1, kq2, sv[2] = { -1, -1 }, p[2] = { -1, -1 }, hold[64], nhold;
	int r, i, user = 0, piped = 0;
	struct blocked b;
	struct kevent ev[4];

	E_SYS(kq1 = kqueue());
	if (withsock) {
		E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
		E_CHANGE(kq1, sv[0], EVFILT_READ, EV_ADD,
		    withsock == 2 ? NOTE_LOWAT : 0, withsock == 2 ? 10 : 0,
		    NULL);
	}
	blocked_start(&b, kq1, 1000);
	E_SYS(close(kq1));
	free_number(kq1, hold, &nhold);
	E_SYS(kq2 = kqueue());
	E_CHECK(kq2 == kq1, "kqueue() got %d, not the old %d", kq2, kq1);
	E_CHANGE(kq2, 42, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	E_CHANGE(kq2, 42, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	if (withsock == 2) {
		E_SYS(pipe(p));
		E_CHANGE(kq2, p[0], EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
		E_CHECK(write(p[1], "k", 1) == 1, "write");
	}
	if (withsock)
		E_CHECK(send(sv[1], "s", 1, MSG_NOSIGNAL) == 1, "send");
	blocked_join(&b, 3000);
	/* it may report kq1's own socket (FreeBSD: it still holds kq1) */
	for (i = 0; i < b.r; i++)
		E_CHECK(withsock == 1 && b.ev[i].filter == EVFILT_READ &&
		    b.ev[i].ident == (uintptr_t)sv[0], "the kevent() blocked on "
		    "the closed kqueue returned ident %ju filter %d%s",
		    (uintmax_t)b.ev[i].ident, b.ev[i].filter,
		    b.ev[i].filter == EVFILT_USER ? " (the new kqueue's user "
		    "event)" : b.ev[i].ident == (uintptr_t)p[0] ? " (the new "
		    "kqueue's pipe)" : "");
	E_CHECK(b.r >= 0 || b.err == EBADF, "the blocked kevent(): %s",
	    strerror(b.err));
	r = kevent(kq2, NULL, 0, ev, 4, &t_zero);
	E_CHECK(r >= 0, "kevent(kq2): %s", strerror(errno));
	for (i = 0; i < r; i++) {
		if (ev[i].filter == EVFILT_USER && ev[i].ident == 42)
			user = 1;
		if (ev[i].filter == EVFILT_READ && ev[i].ident == (uintptr_t)p[0])
			piped = 1;
	}
	E_CHECK(user, "the new kqueue lost its triggered user event (kevent "
	    "returned %d)", r);
	E_CHECK(withsock != 2 || piped, "the new kqueue lost its EV_CLEAR "
	    "pipe event (kevent returned %d)", r);
	close(kq2);
	if (withsock) {
		close(sv[0]);
		close(sv[1]);
	}
	if (withsock == 2) {
		close(p[0]);
		close(p[1]);
	}
	e_close_all(hold, nhold);
	return 0;
}

static void
kevent_blocked_on_closed_kqueue_does_not_take_new_kqueues_events(void **state)
{
	(void)state;
	E_RUN(kqueue_at_number_child, (void *)0, 20);
}

static void
kevent_blocked_on_closed_kqueue_with_socket_does_not_take_new_kqueues_events(
    void **state)
{
	(void)state;
	E_RUN(kqueue_at_number_child, (void *)1, 20);
}

static void
kevent_blocked_on_closed_kqueue_woken_for_nothing_does_not_take_new_kqueues_events(
    void **state)
{
	(void)state;
	E_RUN(kqueue_at_number_child, (void *)2, 20);
}

/* ------------------------------------------------------------------ */
/* (c) kevent() on a closed kqueue number                             */
/* ------------------------------------------------------------------ */

static int
closed_number_child(void *arg)
{
	int kq, d, sv[2], r;
	struct kevent ev, ch;

	(void)arg;
	E_SYS(kq = kqueue());
	E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	E_CHANGE(kq, sv[0], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	E_CHANGE(kq, 3, EVFILT_USER, EV_ADD, 0, 0, NULL);
	E_CHANGE(kq, 3, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	E_CHECK(kevent(kq, NULL, 0, &ev, 1, &t_zero) == 1, "before close");
	E_SYS(close(kq));
	r = kevent(kq, NULL, 0, &ev, 1, &t_zero);
	E_CHECK(r == -1 && errno == EBADF, "kevent(closed, zero timeout) = %d "
	    "(%s), expected -1 EBADF", r, r < 0 ? strerror(errno) : "");
	{
		struct timespec ts = e_ts_ms(50);

		r = kevent(kq, NULL, 0, &ev, 1, &ts);
		E_CHECK(r == -1 && errno == EBADF, "kevent(closed, 50 ms) = %d "
		    "(%s), expected -1 EBADF", r, r < 0 ? strerror(errno) : "");
	}
	EV_SET(&ch, 4, EVFILT_USER, EV_ADD, 0, 0, NULL);
	r = kevent(kq, &ch, 1, NULL, 0, NULL);
	E_CHECK(r == -1 && errno == EBADF, "kevent(closed, EV_ADD) = %d (%s), "
	    "expected -1 EBADF", r, r < 0 ? strerror(errno) : "");

	/* A dup() keeps the kqueue: the old number is still closed. */
	E_SYS(kq = kqueue());
	E_CHANGE(kq, 3, EVFILT_USER, EV_ADD, 0, 0, NULL);
	E_CHANGE(kq, 3, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	E_SYS(d = dup(kq));
	E_SYS(close(kq));
	r = kevent(kq, NULL, 0, &ev, 1, &t_zero);
	E_CHECK(r == -1 && errno == EBADF, "kevent(closed number of a dup'd "
	    "kqueue) = %d (%s), expected -1 EBADF", r,
	    r < 0 ? strerror(errno) : "");
	close(d);
	close(sv[0]);
	close(sv[1]);
	return 0;
}

static void
kevent_on_closed_kqueue_number_fails_with_ebadf(void **state)
{
	(void)state;
	E_RUN(closed_number_child, NULL, 20);
}

/* Is number fd open in this process? */
static int
fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/*
 * A closed kqueue that a blocked kevent() still holds: every number the
 * program never opened (on FreeBSD there are none; kq's own descriptors
 * on Linux) fails close() with EBADF, as a free number does, and stays
 * open for the kqueue, which closes it itself once the kevent() returns.
 * kq took such a number for the program's while the kqueue was dead, and
 * closed it: the kqueue's destruction then closed whatever file had the
 * number next (attack helper 18's closefrom() churn).
 */
static int
closed_kqueue_own_numbers_child(void *arg)
{
	enum { MAXN = 256 };
	int before[MAXN], mine[MAXN], nmine = 0, kq, fd, vf, p[2], r;
	struct blocked b;
	char path[64];

	(void)arg;
	for (fd = 0; fd < MAXN; fd++)
		before[fd] = fd_open(fd);
	snprintf(path, sizeof(path), "/tmp/kq-ownnum-%d", (int)getpid());
	E_SYS(vf = open(path, O_CREAT | O_RDWR, 0600));
	E_SYS(pipe(p));
	E_SYS(kq = kqueue());
	/* Sources of several kinds: a timer, a vnode watch, a signal. */
	E_CHANGE(kq, 1, EVFILT_TIMER, EV_ADD, 0, 60000, NULL);
	E_CHANGE(kq, vf, EVFILT_VNODE, EV_ADD, NOTE_WRITE, 0, NULL);
	E_CHANGE(kq, SIGUSR2, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	E_CHANGE(kq, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	for (fd = 0; fd < MAXN; fd++)
		if (!before[fd] && fd_open(fd) && fd != kq && fd != vf &&
		    fd != p[0] && fd != p[1])
			mine[nmine++] = fd;
	blocked_start(&b, kq, 1500);
	E_SYS(close(kq));
	for (int i = 0; i < nmine; i++) {
		errno = 0;
		r = close(mine[i]);
		E_CHECK(r == -1 && errno == EBADF, "close(%d), a number the "
		    "program never opened, of a closed kqueue a kevent() "
		    "holds = %d (%s), expected -1 EBADF", mine[i], r,
		    strerror(errno));
	}
	blocked_join(&b, 5000);
	/* The kqueue is gone now, and with it every number it had (but
	   for what kq keeps for the whole process, the signal eventfd:
	   still not the program's to close). */
	for (int i = 0; i < nmine; i++) {
		errno = 0;
		E_CHECK(!fd_open(mine[i]) || (close(mine[i]) == -1 &&
		    errno == EBADF), "number %d still open after the kqueue "
		    "was destroyed, and the program's to close", mine[i]);
	}
	close(vf);
	unlink(path);
	close(p[0]);
	close(p[1]);
	return 0;
}

static void
close_of_closed_kqueues_own_number_fails_ebadf_while_kevent_holds_it(
    void **state)
{
	(void)state;
	E_RUN(closed_kqueue_own_numbers_child, NULL, 20);
}

/*
 * A knote on a number that was closed while a dup() keeps the file is
 * gone (FreeBSD: knote_fdclose() by number), whatever the filter: an
 * always-writable socket's EVFILT_WRITE is not reported after the close.
 * The number is moved above every other descriptor so nothing reuses it.
 */
static int
closed_write_number_child(void *arg)
{
	int kq, sv[2], hi, keep, r, k, scanned = (int)(intptr_t)arg;
	struct kevent ev[4];

	E_SYS(kq = kqueue());
	E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	E_SYS(hi = fcntl(sv[0], F_DUPFD, 1000));
	E_CHANGE(kq, hi, EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	if (scanned)
		E_CHECK(kevent(kq, NULL, 0, ev, 4, &t_zero) == 1, "scan");
	E_SYS(keep = dup(hi));
	E_SYS(close(hi));
	for (k = 0; k < 2; k++) {
		r = kevent(kq, NULL, 0, ev, 4, &t_zero);
		E_CHECK(r == 0, "call %d after close(%d): kevent returned %d "
		    "(ident %ju filter %d): the knote of the closed number",
		    k + 1, hi, r, (uintmax_t)(r > 0 ? ev[0].ident : 0),
		    r > 0 ? ev[0].filter : 0);
	}
	E_CHECK(e_change(kq, hi, EVFILT_WRITE, EV_DELETE, 0, 0, NULL) == -1 &&
	    errno == EBADF, "EV_DELETE on the closed number: %s",
	    strerror(errno));
	close(kq);
	close(keep);
	close(sv[0]);
	close(sv[1]);
	return 0;
}

static void
write_knote_of_number_closed_while_dup_open_is_not_reported(void **state)
{
	(void)state;
	E_RUN(closed_write_number_child, (void *)0, 20);
}

static void
reported_write_knote_of_number_closed_while_dup_open_is_not_reported(
    void **state)
{
	(void)state;
	E_RUN(closed_write_number_child, (void *)1, 20);
}

/*
 * A number closed behind the C library's back (a raw close system call,
 * as a program that bypasses libc would do) while a dup() keeps the file,
 * then given the same file again with dup2(): EV_ADD with EV_WAKEONE on it
 * must work and report, whatever kq still has registered for that file
 * under that number (Linux only: the raw close).
 */
#ifdef __linux__
#include <sys/syscall.h>

static int
wakeone_readd_child(void *arg)
{
	int kq, p[2], keep, r;
	struct kevent ev;

	(void)arg;
	E_SYS(kq = kqueue());
	E_SYS(pipe(p));
	E_CHECK(e_change(kq, p[0], EVFILT_READ, EV_ADD | EV_WAKEONE, 0, 0,
	    NULL) == 0, "first EV_ADD: %s", strerror(errno));
	E_SYS(keep = dup(p[0]));
	E_SYS((int)syscall(SYS_close, p[0]));
	E_CHECK(dup2(keep, p[0]) == p[0], "dup2: %s", strerror(errno));
	E_CHECK(e_change(kq, p[0], EVFILT_READ, EV_ADD | EV_WAKEONE, 0, 0,
	    NULL) == 0, "EV_ADD after the number got its file back: %s",
	    strerror(errno));
	E_CHECK(write(p[1], "x", 1) == 1, "write");
	r = kevent(kq, NULL, 0, &ev, 1, &t_zero);
	E_CHECK(r == 1 && ev.ident == (uintptr_t)p[0] &&
	    ev.filter == EVFILT_READ, "kevent returned %d", r);
	close(kq);
	close(keep);
	close(p[0]);
	close(p[1]);
	return 0;
}

static void
wakeone_readd_on_number_given_its_file_back_works(void **state)
{
	(void)state;
	E_RUN(wakeone_readd_child, NULL, 20);
}
#endif

/* ------------------------------------------------------------------ */
/* (d) kevent() on another library's epoll set at the number          */
/* ------------------------------------------------------------------ */

#ifdef __linux__
#define FOREIGN_KEY	UINT64_C(0xfeedf00d)

static int
foreign_epoll_child(void *arg)
{
	int v = (int)(intptr_t)arg, et = v & 1, blocked = v & 2;
	int kq, ep, efd, sv[2], hold[64], nhold, r, tries, bad = 0;
	struct epoll_event ee, out[4];
	struct kevent ev[4];
	struct blocked b;
	uint64_t one = 1;

	E_SYS(kq = kqueue());
	E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	E_CHANGE(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	E_CHANGE(kq, 3, EVFILT_USER, EV_ADD, 0, 0, NULL);
	E_CHECK(kevent(kq, NULL, 0, ev, 4, &t_zero) == 0, "before close");
	if (blocked)
		blocked_start(&b, kq, 500);
	E_SYS(close(kq));
	free_number(kq, hold, &nhold);
	E_SYS(ep = epoll_create1(EPOLL_CLOEXEC));
	E_CHECK(ep == kq, "epoll_create1() got %d, not the kqueue's %d", ep,
	    kq);
	E_SYS(efd = eventfd(0, EFD_NONBLOCK));
	memset(&ee, 0, sizeof(ee));
	ee.events = EPOLLIN | (et ? EPOLLET : 0);
	ee.data.u64 = FOREIGN_KEY;
	E_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ee));
	E_CHECK(write(efd, &one, sizeof(one)) == sizeof(one), "eventfd");
	E_CHECK(send(sv[1], "f", 1, MSG_NOSIGNAL) == 1, "send");
	if (blocked) {
		int i;

		blocked_join(&b, 3000);
		/* it may report the kqueue's own socket (FreeBSD: the call
		   still holds the closed kqueue) */
		for (i = 0; i < b.r; i++)
			E_CHECK(b.ev[i].filter == EVFILT_READ &&
			    b.ev[i].ident == (uintptr_t)sv[0], "the kevent() "
			    "blocked on the closed kqueue returned ident %ju "
			    "filter %d", (uintmax_t)b.ev[i].ident,
			    b.ev[i].filter);
	}
	for (tries = 0; tries < 2; tries++) {
		struct timespec ts = e_ts_ms(tries ? 0 : 100);

		r = kevent(ep, NULL, 0, ev, 4, &ts);
		if (!(r == -1 && (errno == EBADF || errno == EINVAL))) {
			fprintf(stderr, "kevent() on another library's epoll "
			    "instance at the closed kqueue's number returned "
			    "%d (%s), expected -1 EBADF or EINVAL\n", r,
			    r < 0 ? strerror(errno) : "events");
			bad++;
		}
	}
	r = epoll_wait(ep, out, 4, 0);
	if (!(r == 1 && out[0].data.u64 == FOREIGN_KEY)) {
		fprintf(stderr, "the epoll instance lost its ready eventfd "
		    "after kevent() on its number (epoll_wait returned %d, key "
		    "%#jx)%s\n", r, (uintmax_t)(r > 0 ? out[0].data.u64 : 0),
		    et ? " (edge-triggered: consumed?)" : "");
		bad++;
	}
	/* still the same set, with efd registered */
	ee.events = EPOLLIN;
	if (epoll_ctl(ep, EPOLL_CTL_MOD, efd, &ee) != 0) {
		fprintf(stderr, "EPOLL_CTL_MOD of the eventfd failed (%s): the "
		    "epoll set was replaced\n", strerror(errno));
		bad++;
	}
	E_CHECK(bad == 0, "%d problems", bad);
	close(efd);
	close(ep);
	close(sv[0]);
	close(sv[1]);
	e_close_all(hold, nhold);
	return 0;
}

static void
kevent_on_foreign_epoll_at_kqueue_number_fails_and_leaves_it(void **state)
{
	(void)state;
	E_RUN(foreign_epoll_child, (void *)0, 20);
}

static void
kevent_on_foreign_epoll_at_kqueue_number_keeps_its_edge(void **state)
{
	(void)state;
	E_RUN(foreign_epoll_child, (void *)1, 20);
}

static void
kevent_on_foreign_epoll_after_blocked_kevent_fails_and_leaves_it(void **state)
{
	(void)state;
	E_RUN(foreign_epoll_child, (void *)2, 20);
}

static void
kevent_on_foreign_epoll_after_blocked_kevent_keeps_its_edge(void **state)
{
	(void)state;
	E_RUN(foreign_epoll_child, (void *)3, 20);
}
#endif

/* ------------------------------------------------------------------ */
/* Numbers a closing kqueue gives back                                */
/* ------------------------------------------------------------------ */

static atomic_int maker_stop;
static int maker_sv[2];

/* Makes kqueues with descriptors of their own and closes them. */
static void *
kqueue_maker(void *arg)
{
	(void)arg;
	while (!atomic_load(&maker_stop)) {
		struct kevent c[3];
		int kq = kqueue();

		if (kq < 0)
			continue;
		EV_SET(&c[0], 1, EVFILT_TIMER, EV_ADD, 0, 100000, NULL);
		EV_SET(&c[1], maker_sv[0], EVFILT_EMPTY, EV_ADD, 0, 0, NULL);
		EV_SET(&c[2], 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
		(void)kevent(kq, c, 3, NULL, 0, NULL);
		close(kq);
	}
	return NULL;
}

/*
 * While a thread makes and closes kqueues, the program's new descriptors
 * take the numbers they give back: each is the program's from its open,
 * and EV_ADD and close() of it succeed (FreeBSD: nothing of a kqueue's
 * holds a descriptor number).
 */
static int
fresh_numbers_child(void *arg)
{
	long adds = 0, addfail = 0, closefail = 0;
	pthread_t t;
	int kq;
	int64_t end;

	(void)arg;
	E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, maker_sv));
	E_SYS(kq = kqueue());
	atomic_store(&maker_stop, 0);
	E_CHECK(pthread_create(&t, NULL, kqueue_maker, NULL) == 0, "thread");
	end = e_now_ms() + 2000;
	while (e_now_ms() < end) {
		int p[3][2], i;

		for (i = 0; i < 3; i++)
			E_SYS(pipe(p[i]));
		for (i = 0; i < 3; i++, adds++)
			if (e_change(kq, p[i][0], EVFILT_READ, EV_ADD, 0, 0,
			    NULL) != 0 && addfail++ == 0)
				fprintf(stderr, "EV_ADD of new pipe %d: %s\n",
				    p[i][0], strerror(errno));
		for (i = 0; i < 3; i++) {
			closefail += close(p[i][0]) != 0;
			closefail += close(p[i][1]) != 0;
		}
	}
	atomic_store(&maker_stop, 1);
	E_CHECK(pthread_join(t, NULL) == 0, "join");
	E_CHECK(addfail == 0 && closefail == 0, "%ld of %ld EV_ADDs and %ld "
	    "close()s of new descriptors failed", addfail, adds, closefail);
	return 0;
}

static void
new_descriptors_at_numbers_closing_kqueues_give_back_are_the_programs(
    void **state)
{
	(void)state;
	E_RUN(fresh_numbers_child, NULL, 30);
}

#ifdef __linux__
static atomic_int race_started;

static void *
race_sleeper(void *arg)
{
	struct kevent ev;
	int r;

	atomic_store(&race_started, 1);
	r = kevent((int)(intptr_t)arg, NULL, 0, &ev, 1, NULL);
	return (void *)(intptr_t)(r < 0 ? errno : 0);
}

/*
 * A thread enters kevent() (no timeout) on a kqueue that another thread
 * closes at that moment, and the program's next epoll instance takes the
 * number at once.  The thread never waits in the program's set (whose
 * events it would take): it returns, with EBADF when it found the kqueue,
 * or with EBADF/EINVAL when it came to the number after the close
 * (FreeBSD's kevent() holds the kqueue's file; it never sleeps in another
 * one).  Timing varies from round to round; an old build hung about once
 * in 3 000 rounds.
 */
static int
close_while_entering_child(void *arg)
{
	int i, hangs = 0;

	(void)arg;
	for (i = 0; i < 1500 && hangs == 0; i++) {
		struct timespec end;
		pthread_t t;
		void *rv;
		int kq, ep, r;

		E_SYS(kq = kqueue());
		atomic_store(&race_started, 0);
		E_CHECK(pthread_create(&t, NULL, race_sleeper,
		    (void *)(intptr_t)kq) == 0, "thread");
		while (!atomic_load(&race_started))
			;
		for (volatile int d = 0; d < (i % 50) * 20; d++)
			;
		E_SYS(close(kq));
		E_SYS(ep = epoll_create1(EPOLL_CLOEXEC));
		clock_gettime(CLOCK_REALTIME, &end);
		end.tv_sec += 2;
		if (pthread_timedjoin_np(t, &rv, &end) != 0) {
			hangs++;
			fprintf(stderr, "round %d: still in kevent() 2 s after "
			    "its kqueue was closed (epoll set %d at the "
			    "number)\n", i, ep);
			close(ep);
			E_CHECK(pthread_join(t, &rv) == 0, "join");
			break;
		}
		r = (int)(intptr_t)rv;
		E_CHECK(r == EBADF || r == EINVAL, "round %d: kevent() "
		    "returned %d (%s)", i, r, r ? strerror(r) : "events");
		close(ep);
	}
	E_CHECK(hangs == 0, "a sleeper waited in the program's epoll set");
	return 0;
}

static void
kevent_entered_as_its_kqueue_is_closed_never_waits_in_the_programs_epoll_set(
    void **state)
{
	(void)state;
	E_RUN(close_while_entering_child, NULL, 60);
}
#endif

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pipe_at_closed_kqueue_number_stays_pipe_after_blocked_kevent),
		cmocka_unit_test(pipe_at_closed_kqueue_number_stays_pipe_with_dup_kept_deleted_registration),
		cmocka_unit_test(pipe_at_closed_kqueue_number_stays_pipe_with_dup_kept_scanned_registration),
		cmocka_unit_test(kevent_blocked_on_closed_kqueue_does_not_take_new_kqueues_events),
		cmocka_unit_test(kevent_blocked_on_closed_kqueue_with_socket_does_not_take_new_kqueues_events),
		cmocka_unit_test(kevent_blocked_on_closed_kqueue_woken_for_nothing_does_not_take_new_kqueues_events),
		cmocka_unit_test(kevent_on_closed_kqueue_number_fails_with_ebadf),
		cmocka_unit_test(write_knote_of_number_closed_while_dup_open_is_not_reported),
		cmocka_unit_test(reported_write_knote_of_number_closed_while_dup_open_is_not_reported),
		cmocka_unit_test(new_descriptors_at_numbers_closing_kqueues_give_back_are_the_programs),
#ifdef __linux__
		cmocka_unit_test(wakeone_readd_on_number_given_its_file_back_works),
		cmocka_unit_test(kevent_on_foreign_epoll_at_kqueue_number_fails_and_leaves_it),
		cmocka_unit_test(kevent_on_foreign_epoll_at_kqueue_number_keeps_its_edge),
		cmocka_unit_test(kevent_on_foreign_epoll_after_blocked_kevent_fails_and_leaves_it),
		cmocka_unit_test(kevent_on_foreign_epoll_after_blocked_kevent_keeps_its_edge),
		cmocka_unit_test(kevent_entered_as_its_kqueue_is_closed_never_waits_in_the_programs_epoll_set),
		cmocka_unit_test(close_of_closed_kqueues_own_number_fails_ebadf_while_kevent_holds_it),
#endif
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, NULL, NULL);
}
