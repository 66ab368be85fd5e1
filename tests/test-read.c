/*
 * test-read.c -- EVFILT_READ by descriptor type.
 *
 * Each test checks one FreeBSD behaviour of the read filter: what fires it,
 * what `data` holds and when EV_EOF is set, for sockets (stream and
 * listening), pipes, FIFOs, regular files, ptys, eventfd and kqueues.
 * Only <sys/event.h> and POSIX are used, so the file also builds and passes
 * against FreeBSD's native kqueue.
 */
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>
#if defined(__linux__) || defined(__FreeBSD__)
#include <sys/eventfd.h>
#define HAVE_EVENTFD 1
#endif

#include "helpers.h"

/* ------------------------------------------------------------------ */
/* Local helpers                                                      */
/* ------------------------------------------------------------------ */



static void
fill_bytes(int fd, size_t len)
{
	char buf[256];

	memset(buf, 'x', sizeof(buf));
	while (len > 0) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);

		write_all(fd, buf, n);
		len -= n;
	}
}

/* Read exactly len bytes (the descriptor may be non-blocking). */
static void
read_exact(int fd, size_t len)
{
	char buf[256];

	while (len > 0) {
		size_t want = len < sizeof(buf) ? len : sizeof(buf);
		ssize_t n = read(fd, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n > 0);
		len -= (size_t)n;
	}
}

/* Wait up to ms milliseconds for events; returns the count. */
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

/*
 * Poll a level-triggered knote repeatedly, for up to ms milliseconds,
 * until its event reports data == want.  Returns the last event seen (its
 * filter is 0 if none was ever seen).  Used where the kernel completes the
 * operation asynchronously (TCP handshakes, pty line discipline).
 */
static struct kevent
wait_for_data(int kq, int64_t want, int ms)
{
	struct kevent last, ev;
	int waited = 0;

	memset(&last, 0, sizeof(last));
	while (waited < ms) {
		int r = wait_events(kq, &ev, 1, 20);

		if (r == 1) {
			last = ev;
			if (ev.data == want)
				break;
		}
		/* Sleep a little so that an always-ready knote cannot spin. */
		struct timespec d = { 0, 10 * 1000000L };

		nanosleep(&d, NULL);
		waited += 30;
	}
	return last;
}

/* A private temporary directory, removed by rm_tempdir(). */
static void
make_tempdir(char *dir, size_t len)
{
	const char *base = getenv("TMPDIR");

	if (base == NULL || *base == '\0')
		base = "/tmp";
	snprintf(dir, len, "%s/kq-test-read.XXXXXX", base);
	assert_non_null(mkdtemp(dir));
}

/* ------------------------------------------------------------------ */
/* Stream sockets                                                     */
/* ------------------------------------------------------------------ */

/* data is the exact number of bytes readable, and follows reads. */
static void
socket_data_is_bytes_readable(void **state)
{
	int kq, sv[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)0x11);
	t_expect_none(kq);

	fill_bytes(sv[1], 5);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, sv[0]);
	assert_int_equal(ev.filter, EVFILT_READ);
	assert_int_equal(ev.data, 5);
	assert_int_equal(ev.flags & EV_EOF, 0);
	assert_ptr_equal(ev.udata, (void *)0x11);

	fill_bytes(sv[1], 1000);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 1005);

	read_exact(sv[0], 1000);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 5);

	read_exact(sv[0], 5);
	t_expect_none(kq);

	close(kq);
	close(sv[0]);
	close(sv[1]);
}

/*
 * shutdown(SHUT_WR) by the peer sets EV_EOF at once, even while data is
 * still buffered; data keeps counting the bytes left and fflags is 0 on a
 * clean EOF.  The knote keeps firing after the buffer is drained.
 */
static void
socket_eof_on_peer_shutdown_with_data_buffered(void **state)
{
	int kq, sv[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);

	fill_bytes(sv[1], 5);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 5);
	assert_int_equal(ev.flags & EV_EOF, 0);

	assert_int_equal(shutdown(sv[1], SHUT_WR), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 5);
	assert_int_equal(ev.fflags, 0);

	read_exact(sv[0], 2);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 3);

	read_exact(sv[0], 3);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 0);
	assert_int_equal(ev.fflags, 0);

	close(kq);
	close(sv[0]);
	close(sv[1]);
}

/* The same when the peer closes instead of shutting down. */
static void
socket_eof_on_peer_close_with_data_buffered(void **state)
{
	int kq, sv[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);

	fill_bytes(sv[1], 7);
	assert_int_equal(close(sv[1]), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, sv[0]);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 7);
	assert_int_equal(ev.fflags, 0);

	read_exact(sv[0], 7);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 0);

	close(kq);
	close(sv[0]);
}

/* EV_EOF is reported even when nothing was ever written. */
static void
socket_eof_on_peer_close_without_data(void **state)
{
	int kq, sv[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_expect_none(kq);

	assert_int_equal(close(sv[1]), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 0);
	assert_int_equal(ev.fflags, 0);

	close(kq);
	close(sv[0]);
}

/* NOTE_LOWAT: the knote fires only once data >= the low-water mark. */
static void
socket_note_lowat_holds_event_until_mark(void **state)
{
	int kq, sv[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, sv[0], EVFILT_READ, EV_ADD, NOTE_LOWAT, 10, NULL);

	fill_bytes(sv[1], 5);
	t_expect_none(kq);

	fill_bytes(sv[1], 4);
	t_expect_none(kq);

	fill_bytes(sv[1], 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 10);

	/* Dropping back under the mark stops the (level) knote again. */
	read_exact(sv[0], 2);
	t_expect_none(kq);

	close(kq);
	close(sv[0]);
	close(sv[1]);
}

/* ------------------------------------------------------------------ */
/* Listening TCP socket                                               */
/* ------------------------------------------------------------------ */

static int
tcp_listener(struct sockaddr_in *sin)
{
	socklen_t len = sizeof(*sin);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(s >= 0);
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = 0;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)sin, sizeof(*sin)), 0);
	assert_int_equal(listen(s, 16), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)sin, &len), 0);
	return s;
}

/* data on a listening socket is the number of completed connections. */
static void
listen_socket_data_is_accept_queue_length(void **state)
{
	struct sockaddr_in sin;
	int kq, ls, c[3], a;
	struct kevent ev;

	(void)state;
	ls = tcp_listener(&sin);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, ls, EVFILT_READ, EV_ADD, 0, 0, (void *)0x22);
	t_expect_none(kq);

	for (int i = 0; i < 3; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(c[i] >= 0);
		assert_int_equal(connect(c[i], (struct sockaddr *)&sin,
		    sizeof(sin)), 0);
	}

	/* The handshakes complete asynchronously: allow up to 1 s. */
	ev = wait_for_data(kq, 3, 1000);
	assert_int_equal(ev.ident, ls);
	assert_int_equal(ev.filter, EVFILT_READ);
	assert_ptr_equal(ev.udata, (void *)0x22);
	assert_int_equal(ev.data, 3);
	assert_int_equal(ev.flags & EV_EOF, 0);

	a = accept(ls, NULL, NULL);
	assert_true(a >= 0);
	close(a);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 2);

	for (int i = 0; i < 2; i++) {
		a = accept(ls, NULL, NULL);
		assert_true(a >= 0);
		close(a);
	}
	t_expect_none(kq);

	for (int i = 0; i < 3; i++)
		close(c[i]);
	close(kq);
	close(ls);
}

/*
 * A connected TCP socket *c watched for EVFILT_READ in kqueue *kq, whose
 * peer then resets the connection (linger 0: close() sends a reset, not
 * a FIN).  Returns the first EV_EOF report.
 */
static struct kevent
reset_under_read_knote(int *kq, int *c)
{
	struct sockaddr_in sin;
	struct linger lg = { 1, 0 };
	int ls, s, r = 0;
	struct kevent ev;

	ls = tcp_listener(&sin);
	*c = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*c >= 0);
	assert_int_equal(connect(*c, (struct sockaddr *)&sin, sizeof(sin)), 0);
	s = accept(ls, NULL, NULL);
	assert_true(s >= 0);
	close(ls);

	assert_true((*kq = kqueue()) >= 0);
	t_change(*kq, *c, EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_expect_none(*kq);
	assert_int_equal(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg,
	    sizeof(lg)), 0);
	assert_int_equal(close(s), 0);

	memset(&ev, 0, sizeof(ev));
	for (int i = 0; i < 50; i++) {
		r = wait_events(*kq, &ev, 1, 20);
		if (r == 1 && (ev.flags & EV_EOF))
			break;
	}
	assert_int_equal(r, 1);
	assert_int_equal(ev.ident, *c);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	return ev;
}

/*
 * A level-triggered knote reports a reset connection at every call, and
 * every report carries so_error until the application reads it: FreeBSD
 * leaves so_error in place when it reports it.  The second report is made
 * when the kernel no longer flags an error (kq took it for the first).
 */
static void
socket_reset_reported_again_still_carries_so_error(void **state)
{
	int kq, c;
	struct kevent ev;

	(void)state;
	ev = reset_under_read_knote(&kq, &c);
	assert_int_equal(ev.fflags, ECONNRESET);
	for (int i = 0; i < 3; i++) {
		memset(&ev, 0, sizeof(ev));
		assert_int_equal(wait_events(kq, &ev, 1, 20), 1);
		assert_int_equal(ev.ident, c);
		assert_int_equal(ev.flags & EV_EOF, EV_EOF);
		assert_int_equal(ev.fflags, ECONNRESET);
	}
	/* Read by the application: gone, from the socket and the reports. */
	assert_int_equal(t_so_error(c), ECONNRESET);
	memset(&ev, 0, sizeof(ev));
	assert_int_equal(wait_events(kq, &ev, 1, 20), 1);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.fflags, 0);

	close(kq);
	close(c);
}

/*
 * A connection reset is an EOF that carries the socket error: EV_EOF with
 * fflags = so_error (ECONNRESET), FreeBSD filt_soread.
 */
static void
socket_eof_after_reset_carries_so_error(void **state)
{
	int kq, c;
	struct kevent ev;

	(void)state;
	ev = reset_under_read_knote(&kq, &c);
	/* FreeBSD: fflags is so_error, which stays for the application. */
	assert_int_equal(ev.fflags, ECONNRESET);
	assert_int_equal(t_so_error(c), ECONNRESET);
	assert_int_equal(t_so_error(c), 0);

	close(kq);
	close(c);
}

/* ------------------------------------------------------------------ */
/* Pipes and FIFOs                                                    */
/* ------------------------------------------------------------------ */

/* data is the byte count; EV_EOF when the last writer closes. */
static void
pipe_data_is_bytes_and_eof_on_writer_close(void **state)
{
	int kq, p[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_expect_none(kq);

	fill_bytes(p[1], 7);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, p[0]);
	assert_int_equal(ev.data, 7);
	assert_int_equal(ev.flags & EV_EOF, 0);

	read_exact(p[0], 3);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 4);

	assert_int_equal(close(p[1]), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 4);

	read_exact(p[0], 4);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 0);

	close(kq);
	close(p[0]);
}

/* The pipe stays open for writing through a dup: no EOF until the last. */
static void
pipe_eof_only_when_last_writer_closes(void **state)
{
	int kq, p[2], w2;
	struct kevent ev;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_true((w2 = dup(p[1])) >= 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);

	assert_int_equal(close(p[1]), 0);
	t_expect_none(kq);

	assert_int_equal(close(w2), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 0);

	close(kq);
	close(p[0]);
}

/*
 * FIFO: data is the byte count, EV_EOF when the last writer closes, and a
 * new writer clears the EOF condition (FreeBSD's filt_piperead clears
 * EV_EOF for a named pipe that is no longer at EOF).
 */
static void
fifo_eof_on_writer_close_and_cleared_by_new_writer(void **state)
{
	char dir[256], path[300];
	int kq, rfd, wfd;
	struct kevent ev;

	(void)state;
	make_tempdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);

	rfd = open(path, O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	wfd = open(path, O_WRONLY | O_NONBLOCK);
	assert_true(wfd >= 0);

	assert_true((kq = kqueue()) >= 0);
	t_change(kq, rfd, EVFILT_READ, EV_ADD, 0, 0, (void *)0x33);
	t_expect_none(kq);

	fill_bytes(wfd, 4);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, rfd);
	assert_int_equal(ev.data, 4);
	assert_int_equal(ev.flags & EV_EOF, 0);

	assert_int_equal(close(wfd), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 4);

	read_exact(rfd, 4);
	ev = t_expect_one(kq);
	assert_int_equal(ev.flags & EV_EOF, EV_EOF);
	assert_int_equal(ev.data, 0);

	/* A new writer: no longer at EOF, nothing to read. */
	wfd = open(path, O_WRONLY | O_NONBLOCK);
	assert_true(wfd >= 0);
	t_expect_none(kq);

	fill_bytes(wfd, 3);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 3);
	assert_int_equal(ev.flags & EV_EOF, 0);
	assert_ptr_equal(ev.udata, (void *)0x33);

	close(kq);
	close(wfd);
	close(rfd);
	unlink(path);
	rmdir(dir);
}

/* ------------------------------------------------------------------ */
/* Regular files                                                      */
/* ------------------------------------------------------------------ */

static int
make_file(const char *path, size_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	fill_bytes(fd, size);
	close(fd);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	return fd;
}

static void
append_bytes(const char *path, size_t n)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	assert_true(fd >= 0);
	fill_bytes(fd, n);
	close(fd);
}

/*
 * A regular file is readable while the offset is before EOF, with data =
 * size - offset; at EOF it is not; appending through another descriptor
 * fires the (level-triggered) knote again with data = bytes appended.
 */
static void
file_data_is_size_minus_offset_level(void **state)
{
	char dir[256], path[300];
	int kq, fd;
	struct kevent ev;

	(void)state;
	make_tempdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/file", dir);
	fd = make_file(path, 1000);
	assert_int_equal(lseek(fd, 100, SEEK_SET), 100);

	assert_true((kq = kqueue()) >= 0);
	t_change(kq, fd, EVFILT_READ, EV_ADD, 0, 0, (void *)0x44);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, fd);
	assert_int_equal(ev.data, 900);
	assert_ptr_equal(ev.udata, (void *)0x44);

	/* Level-triggered: still there. */
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 900);

	read_exact(fd, 400);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 500);

	read_exact(fd, 500);
	t_expect_none(kq);

	append_bytes(path, 50);
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.ident, fd);
	assert_int_equal(ev.data, 50);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 50);

	read_exact(fd, 50);
	t_expect_none(kq);

	close(kq);
	close(fd);
	unlink(path);
	rmdir(dir);
}

/*
 * Closing a file drops its knotes (FreeBSD's knote_fdclose), pending
 * events with them: a kqueue whose only pending event was a regular
 * file's, closed before anyone collected it, no longer polls readable.
 */
static void
closing_a_readable_file_leaves_its_kqueue_not_readable(void **state)
{
	char dir[256], path[300];
	struct pollfd p;
	int kq, fd;

	(void)state;
	make_tempdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/file", dir);
	fd = make_file(path, 10);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, fd, EVFILT_READ, EV_ADD, 0, 0, NULL);
	p.fd = kq;
	p.events = POLLIN;
	p.revents = 0;
	assert_int_equal(poll(&p, 1, 0), 1);
	close(fd);
	assert_int_equal(poll(&p, 1, 0), 0);
	t_expect_none(kq);
	close(kq);
	unlink(path);
	rmdir(dir);
}

/* The same with EV_CLEAR: one event per change, append fires it again. */
static void
file_append_fires_clear_knote_again(void **state)
{
	char dir[256], path[300];
	int kq, fd;
	struct kevent ev;

	(void)state;
	make_tempdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/file", dir);
	fd = make_file(path, 1000);

	assert_true((kq = kqueue()) >= 0);
	t_change(kq, fd, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 1000);
	assert_int_equal(ev.flags & EV_CLEAR, EV_CLEAR);
	t_expect_none(kq);

	read_exact(fd, 1000);
	t_expect_none(kq);

	append_bytes(path, 50);
	assert_int_equal(wait_events(kq, &ev, 1, 1000), 1);
	assert_int_equal(ev.ident, fd);
	assert_int_equal(ev.data, 50);
	t_expect_none(kq);

	close(kq);
	close(fd);
	unlink(path);
	rmdir(dir);
}

/* ------------------------------------------------------------------ */
/* Pseudo-terminal                                                    */
/* ------------------------------------------------------------------ */

static void
open_pty(int *master, int *slave)
{
	struct termios tio;
	char *name;

	*master = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(*master >= 0);
	assert_int_equal(grantpt(*master), 0);
	assert_int_equal(unlockpt(*master), 0);
	name = ptsname(*master);
	assert_non_null(name);
	*slave = open(name, O_RDWR | O_NOCTTY);
	assert_true(*slave >= 0);

	/* Raw mode: bytes pass through the line discipline unchanged. */
	assert_int_equal(tcgetattr(*slave, &tio), 0);
	cfmakeraw(&tio);
	tio.c_cc[VMIN] = 1;
	tio.c_cc[VTIME] = 0;
	assert_int_equal(tcsetattr(*slave, TCSANOW, &tio), 0);
	set_nonblock(*master);
	set_nonblock(*slave);
}

/* data on the pty master is the number of bytes the slave wrote. */
static void
pty_master_data_is_bytes_written_by_slave(void **state)
{
	int kq, m, s;
	struct kevent ev;

	(void)state;
	open_pty(&m, &s);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, m, EVFILT_READ, EV_ADD, 0, 0, (void *)0x55);
	t_expect_none(kq);

	write_all(s, "hello", 5);
	ev = wait_for_data(kq, 5, 1000);
	assert_int_equal(ev.ident, m);
	assert_ptr_equal(ev.udata, (void *)0x55);
	assert_int_equal(ev.data, 5);

	read_exact(m, 5);
	t_expect_none(kq);

	close(kq);
	close(s);
	close(m);
}

/* And the slave side: data is the number of bytes the master wrote. */
static void
pty_slave_data_is_bytes_written_by_master(void **state)
{
	int kq, m, s;
	struct kevent ev;

	(void)state;
	open_pty(&m, &s);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, s, EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_expect_none(kq);

	write_all(m, "abc", 3);
	ev = wait_for_data(kq, 3, 1000);
	assert_int_equal(ev.ident, s);
	assert_int_equal(ev.data, 3);

	read_exact(s, 3);
	t_expect_none(kq);

	close(kq);
	close(s);
	close(m);
}

/* ------------------------------------------------------------------ */
/* eventfd                                                            */
/* ------------------------------------------------------------------ */

#ifdef HAVE_EVENTFD
/* An eventfd is readable while its counter is > 0; data is the counter. */
static void
eventfd_data_is_counter_value(void **state)
{
	int kq, efd;
	uint64_t v;
	struct kevent ev;

	(void)state;
	efd = eventfd(0, EFD_NONBLOCK);
	assert_true(efd >= 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, efd, EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_expect_none(kq);

	v = 3;
	assert_int_equal(write(efd, &v, sizeof(v)), sizeof(v));
	v = 4;
	assert_int_equal(write(efd, &v, sizeof(v)), sizeof(v));
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, efd);
	assert_int_equal(ev.data, 7);

	assert_int_equal(read(efd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 7);
	t_expect_none(kq);

	close(kq);
	close(efd);
}

/*
 * A new kqueue (*kq) with a knote of filter on a new non-blocking eventfd
 * whose counter starts at init; returns the eventfd.
 */
static int
eventfd_watched(unsigned int init, int filter, int fflags, int64_t data,
    int *kq)
{
	int efd = eventfd(init, EFD_NONBLOCK);

	assert_true(efd >= 0);
	assert_true((*kq = kqueue()) >= 0);
	t_change(*kq, efd, filter, EV_ADD, fflags, data, NULL);
	return efd;
}

/*
 * An eventfd is writable while its counter is below UINT64_MAX - 1, and
 * data is what can still be added, UINT64_MAX - 1 - counter, as FreeBSD's
 * filt_eventfdwrite stores it in the int64_t (negative for a small
 * counter).  The knote stays: the event repeats, EV_DELETE finds it.
 */
static void
eventfd_write_is_ready_with_the_room_left_as_data(void **state)
{
	int kq, efd;
	struct kevent ev;

	(void)state;
	efd = eventfd_watched(5, EVFILT_WRITE, 0, 0, &kq);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, efd);
	assert_int_equal(ev.filter, EVFILT_WRITE);
	assert_true(ev.data == (int64_t)(UINT64_MAX - 1 - 5));
	ev = t_expect_one(kq);
	assert_true(ev.data == (int64_t)(UINT64_MAX - 1 - 5));
	t_change(kq, efd, EVFILT_WRITE, EV_DELETE, 0, 0, NULL);
	close(kq);
	close(efd);
}

/*
 * FreeBSD wakes both of an eventfd's filters on every read() and write():
 * an EV_CLEAR WRITE knote fires again after a write (it can still be
 * written to), and an EV_CLEAR READ knote of an EFD_SEMAPHORE eventfd
 * fires again after a read that leaves the counter above 0.
 */
static void
eventfd_clear_knotes_fire_again_on_the_other_directions_activity(void **state)
{
	int kq, efd, sem;
	uint64_t v = 5;
	struct kevent ev;

	(void)state;
	efd = eventfd(0, EFD_NONBLOCK);
	sem = eventfd(4, EFD_NONBLOCK | EFD_SEMAPHORE);
	assert_true(efd >= 0 && sem >= 0);
	assert_true((kq = kqueue()) >= 0);
	t_change(kq, efd, EVFILT_WRITE, EV_ADD | EV_CLEAR, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_true(ev.data == (int64_t)(UINT64_MAX - 1));
	t_expect_none(kq);
	assert_int_equal(write(efd, &v, sizeof(v)), sizeof(v));
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, efd);
	assert_true(ev.data == (int64_t)(UINT64_MAX - 1 - 5));
	t_expect_none(kq);

	t_change(kq, sem, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, sem);
	assert_int_equal(ev.data, 4);
	t_expect_none(kq);
	assert_int_equal(read(sem, &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, sem);
	assert_int_equal(ev.data, 3);
	t_expect_none(kq);
	close(kq);
	close(efd);
	close(sem);
}

/*
 * An EV_CLEAR|EV_DISPATCH knote of an eventfd whose own condition does
 * not hold, while the other direction's does (a READ knote on an empty
 * counter, which is writable; a WRITE knote on a full one, which is
 * readable), is not ready: a 300 ms wait returns nothing and sleeps, it
 * does not spin on the other direction.
 */
static void
eventfd_dispatch_clear_knote_sleeps_while_only_the_other_direction_is_ready(void **state)
{
	int kq, efd, i;
	uint64_t v = UINT64_MAX - 1;
	struct kevent ev;
	struct timespec ms300 = { 0, 300000000 };

	(void)state;
	for (i = 0; i < 2; i++) {
		int64_t c0;

		efd = eventfd(0, EFD_NONBLOCK);
		assert_true(efd >= 0);
		if (i == 1)
			assert_int_equal(write(efd, &v, sizeof(v)), sizeof(v));
		assert_true((kq = kqueue()) >= 0);
		t_change(kq, efd, i == 0 ? EVFILT_READ : EVFILT_WRITE,
		    EV_ADD | EV_CLEAR | EV_DISPATCH, 0, 0, NULL);
		c0 = t_thread_cpu_ns();
		assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &ms300), 0);
		if (t_thread_cpu_ns() - c0 > 150000000)
			fail_msg("a 300 ms wait used %lld ms of CPU",
			    (long long)((t_thread_cpu_ns() - c0) / 1000000));
		close(kq);
		close(efd);
	}
}

/* FreeBSD's eventfd filters do not look at NOTE_LOWAT: a counter of 1 is
   reported under a low-water mark of 3. */
static void
eventfd_read_ignores_note_lowat(void **state)
{
	int kq, efd;
	struct kevent ev;

	(void)state;
	efd = eventfd_watched(1, EVFILT_READ, NOTE_LOWAT, 3, &kq);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 1);
	close(kq);
	close(efd);
}

/*
 * With no descriptor free, a readable eventfd is still reported (its
 * counter is read through a /proc file on Linux, which takes one), and
 * once descriptors are free again its data is the counter.
 */
static void
eventfd_read_reported_when_no_descriptor_is_free(void **state)
{
	int kq, efd, n = 0, r, extra[64];
	struct kevent ev;
	struct rlimit old, low;
	uint64_t v = 5;

	(void)state;
	efd = eventfd_watched(0, EVFILT_READ, 0, 0, &kq);
	assert_int_equal(write(efd, &v, sizeof(v)), sizeof(v));
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 5);
	/* Fill the table up to a lowered limit. */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)(efd > kq ? efd : kq) + 1 + 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 64 && (extra[n] = dup(efd)) >= 0)
		n++;
	r = kevent(kq, NULL, 0, &ev, 1, &t_zero);
	while (n > 0)
		close(extra[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(r, 1);
	assert_int_equal(ev.ident, efd);
	assert_true(ev.data >= 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.data, 5);
	close(kq);
	close(efd);
}
#endif

/* ------------------------------------------------------------------ */
/* kqueue as an event source                                          */
/* ------------------------------------------------------------------ */

/* A kqueue is readable while it has pending events; data is the count. */
static void
kqueue_data_is_pending_event_count(void **state)
{
	int inner, outer, a[2], b[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
	assert_true((inner = kqueue()) >= 0);
	assert_true((outer = kqueue()) >= 0);

	t_change(outer, inner, EVFILT_READ, EV_ADD, 0, 0, (void *)0x66);
	t_expect_none(outer);

	t_change(inner, a[0], EVFILT_READ, EV_ADD | EV_ONESHOT, 0, 0, NULL);
	t_change(inner, b[0], EVFILT_READ, EV_ADD | EV_ONESHOT, 0, 0, NULL);
	t_expect_none(outer);

	fill_bytes(a[1], 1);
	fill_bytes(b[1], 1);
	ev = t_expect_one(outer);
	assert_int_equal(ev.ident, inner);
	assert_ptr_equal(ev.udata, (void *)0x66);
	assert_int_equal(ev.data, 2);

	/* Harvest one of the two one-shot events from the inner queue. */
	assert_int_equal(t_poll(inner, &ev, 1), 1);
	ev = t_expect_one(outer);
	assert_int_equal(ev.data, 1);

	assert_int_equal(t_poll(inner, &ev, 1), 1);
	t_expect_none(outer);

	close(outer);
	close(inner);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(socket_data_is_bytes_readable),
		cmocka_unit_test(socket_eof_on_peer_shutdown_with_data_buffered),
		cmocka_unit_test(socket_eof_on_peer_close_with_data_buffered),
		cmocka_unit_test(socket_eof_on_peer_close_without_data),
		cmocka_unit_test(socket_note_lowat_holds_event_until_mark),
		cmocka_unit_test(listen_socket_data_is_accept_queue_length),
		cmocka_unit_test(socket_eof_after_reset_carries_so_error),
		cmocka_unit_test(socket_reset_reported_again_still_carries_so_error),
		cmocka_unit_test(pipe_data_is_bytes_and_eof_on_writer_close),
		cmocka_unit_test(pipe_eof_only_when_last_writer_closes),
		cmocka_unit_test(fifo_eof_on_writer_close_and_cleared_by_new_writer),
		cmocka_unit_test(file_data_is_size_minus_offset_level),
		cmocka_unit_test(closing_a_readable_file_leaves_its_kqueue_not_readable),
		cmocka_unit_test(file_append_fires_clear_knote_again),
		cmocka_unit_test(pty_master_data_is_bytes_written_by_slave),
		cmocka_unit_test(pty_slave_data_is_bytes_written_by_master),
#ifdef HAVE_EVENTFD
		cmocka_unit_test(eventfd_data_is_counter_value),
		cmocka_unit_test(eventfd_write_is_ready_with_the_room_left_as_data),
		cmocka_unit_test(eventfd_clear_knotes_fire_again_on_the_other_directions_activity),
		cmocka_unit_test(eventfd_dispatch_clear_knote_sleeps_while_only_the_other_direction_is_ready),
		cmocka_unit_test(eventfd_read_ignores_note_lowat),
		cmocka_unit_test(eventfd_read_reported_when_no_descriptor_is_free),
#endif
		cmocka_unit_test(kqueue_data_is_pending_event_count),
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, NULL, NULL);
}
