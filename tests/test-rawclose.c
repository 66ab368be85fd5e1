/*
 * test-rawclose.c -- descriptors closed behind the C library's back.
 *
 * FreeBSD removes a descriptor's knotes when the descriptor is closed,
 * whatever closes it (knote_fdclose), and a kqueue whose descriptor is
 * closed is gone: kevent() on its number fails.  libkq replaces close()
 * and its relatives for that (test-close.c, test-lifetime.c).  A program
 * that closes with the raw system call bypasses them; kq then notices the
 * next time it uses the number (man/kevent.2, LINUX NOTES, item 1), and
 * from there on behaves as FreeBSD did at the close:
 *   - no event is reported for the closed file;
 *   - EV_DELETE fails with EBADF while the number is closed, and with
 *     ENOENT once it names a file that has no knote;
 *   - EV_ADD on a reused number watches the new file;
 *   - the other knotes of the kqueue are not disturbed;
 *   - kevent() on a kqueue whose number was closed fails;
 *   - a wait is not woken again and again by the old file of a reused
 *     number (it sleeps through its timeout), for many such numbers, a
 *     number the program registered again, and with kcmp(2) refused by
 *     seccomp (as in containers) but for the last; a socket below its
 *     NOTE_LOWAT mark does not make waits spin either;
 *   - the kqueue's own descriptors are not numbers the program opened:
 *     changes naming them fail with EBADF, close() with EBADF, dup2() onto
 *     them with EBUSY, also when one took the number of a descriptor
 *     closed raw; a kqueue watching the kqueue keeps hearing from it.
 * Linux only (the raw close and dup3 system calls).
 */
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "helpers.h"

static char tdir[64];

static int
setup(void **state)
{
	(void)state;
	snprintf(tdir, sizeof(tdir), "/tmp/kqraw.XXXXXX");
	assert_non_null(mkdtemp(tdir));
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	t_close_tracked();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tdir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* close(2) and dup3(2) as system calls: libkq does not see them. */
static void
raw_close(int fd)
{
	assert_int_equal(syscall(SYS_close, fd), 0);
}

static void
raw_dup3(int from, int to)
{
	assert_int_equal(syscall(SYS_dup3, from, to, 0), to);
}

/* A socketpair whose first end is at number n (n must be free). */
static void
pair_at(int n, int sv[2])
{
	int s[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
	assert_int_not_equal(s[1], n);
	if (s[0] != n) {
		raw_dup3(s[0], n);
		raw_close(s[0]);
	}
	sv[0] = n;
	sv[1] = s[1];
}

/* A file in tdir with content; returns a read-only descriptor. */
static int
make_file(const char *name, const char *content, char *path, size_t len)
{
	int fd;

	snprintf(path, len, "%s/%s", tdir, name);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	assert_true(fd >= 0);
	write_all(fd, content, strlen(content));
	close(fd);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	return fd;
}

static void
append(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	assert_true(fd >= 0);
	write_all(fd, text, strlen(text));
	close(fd);
}

static int
change(int kq, uintptr_t ident, short filter, unsigned short flags,
    unsigned int fflags)
{
	struct kevent kev;

	EV_SET(&kev, ident, filter, flags, fflags, 0, NULL);
	return kevent(kq, &kev, 1, NULL, 0, NULL);
}

static void
expect_change_error(int kq, uintptr_t ident, short filter,
    unsigned short flags, int err)
{
	errno = 0;
	assert_int_equal(change(kq, ident, filter, flags, 0), -1);
	assert_int_equal(errno, err);
}

/* ------------------------------------------------------------------ */

static void
delete_of_pipe_closed_by_raw_syscall_fails_ebadf(void **state)
{
	int kq = t_new_kq(), p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	t_track(p[1]);
	t_change(kq, (uintptr_t)p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	raw_close(p[0]);
	expect_change_error(kq, (uintptr_t)p[0], EVFILT_READ, EV_DELETE,
	    EBADF);
	t_expect_none(kq);
}

static void
delete_on_number_reused_after_raw_close_fails_enoent(void **state)
{
	int kq = t_new_kq(), p[2], sv[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	t_track(p[1]);
	t_change(kq, (uintptr_t)p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	raw_close(p[0]);
	pair_at(p[0], sv);
	t_track(sv[0]);
	t_track(sv[1]);
	expect_change_error(kq, (uintptr_t)sv[0], EVFILT_READ, EV_DELETE,
	    ENOENT);
	/* The new file has no knote: its data is not reported. */
	write_all(sv[1], "hi", 2);
	t_expect_none(kq);
}

static void
add_on_number_reused_after_raw_close_watches_the_new_file(void **state)
{
	int kq = t_new_kq(), p[2], sv[2];
	struct kevent kev, ev;

	(void)state;
	assert_int_equal(pipe(p), 0);
	t_track(p[1]);
	EV_SET(&kev, p[0], EVFILT_READ, EV_ADD, 0, 0, (void *)1);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	raw_close(p[0]);
	pair_at(p[0], sv);
	t_track(sv[0]);
	t_track(sv[1]);
	EV_SET(&kev, sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)2);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	t_expect_none(kq);
	write_all(sv[1], "hey", 3);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	assert_int_equal(ev.filter, EVFILT_READ);
	assert_int_equal(ev.data, 3);
	assert_ptr_equal(ev.udata, (void *)2);
}

/* The same with another filter: the new file's knote is the only one. */
static void
add_of_other_filter_on_reused_number_watches_the_new_file(void **state)
{
	int kq = t_new_kq(), p[2], sv[2];
	struct kevent ev;

	(void)state;
	assert_int_equal(pipe(p), 0);
	t_track(p[1]);
	t_change(kq, (uintptr_t)p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	raw_close(p[0]);
	pair_at(p[0], sv);
	t_track(sv[0]);
	t_track(sv[1]);
	t_change(kq, (uintptr_t)sv[0], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	assert_int_equal(ev.filter, EVFILT_WRITE);
	assert_true(ev.data > 0);
	expect_change_error(kq, (uintptr_t)sv[0], EVFILT_READ, EV_DELETE,
	    ENOENT);
}

/*
 * READ on a regular file is level-triggered and re-checked at every
 * collection: the raw close is noticed there, and the knote is gone.
 */
static void
file_read_knote_is_gone_after_raw_close(void **state)
{
	int kq = t_new_kq(), fd;
	char path[128];
	struct kevent ev;

	(void)state;
	fd = make_file("f", "abc", path, sizeof(path));
	t_change(kq, (uintptr_t)fd, EVFILT_READ, EV_ADD, 0, 0, NULL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)fd);
	assert_int_equal(ev.data, 3);
	raw_close(fd);
	t_expect_none(kq);
	expect_change_error(kq, (uintptr_t)fd, EVFILT_READ, EV_DELETE, EBADF);
}

/*
 * Knotes whose readiness kq looks up on the number itself, rather than
 * hearing it from the registered file, once the number is closed raw
 * (FreeBSD drops the knotes at the close) and left closed or given to a
 * file the program does not watch: none is reported again.  (Before,
 * each reported the new file -- or, for a regular file, nothing at all
 * -- with the old udata on every call: attack helper 23's F2.)
 */
#define GONE_FILE_WRITE		0	/* regular file, WRITE; left closed */
#define GONE_FILE_READ		1	/* regular file, READ; an empty pipe */
#define GONE_EMULATED		2	/* READ beside an EV_CLEAR WRITE */
#define GONE_EMPTY		3	/* EVFILT_EMPTY alone */
#define GONE_LEFT_OVER		4	/* READ and WRITE, room for one */

static void
tracked_knote_gone(int how)
{
	int kq = t_new_kq(), fd, sv[2], p[2], n;
	char path[128];
	struct kevent ch[2], ev[2];
	struct timespec sec = { 1, 0 };

	if (how <= GONE_FILE_READ) {
		fd = make_file("g", "abc", path, sizeof(path));
		EV_SET(&ch[0], fd, how == GONE_FILE_WRITE ? EVFILT_WRITE :
		    EVFILT_READ, EV_ADD, 0, 0, (void *)1);
		n = 1;
	} else {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		fd = sv[0];
		write_all(sv[1], "abc", 3);
		EV_SET(&ch[0], fd, how == GONE_EMPTY ? EVFILT_EMPTY :
		    EVFILT_READ, EV_ADD, 0, 0, (void *)1);
		EV_SET(&ch[1], fd, EVFILT_WRITE, EV_ADD |
		    (how == GONE_EMULATED ? EV_CLEAR : 0), 0, 0, (void *)2);
		n = how == GONE_EMPTY ? 1 : 2;
	}
	assert_int_equal(kevent(kq, ch, n, NULL, 0, NULL), 0);
	/* Reported; with room for one, the other is left for the next call. */
	assert_int_equal(kevent(kq, NULL, 0, ev, how == GONE_LEFT_OVER ? 1 : 2,
	    &sec), how == GONE_LEFT_OVER ? 1 : n);
	raw_close(fd);
	if (how > GONE_FILE_READ)
		close(sv[1]);
	if (how == GONE_FILE_READ || how == GONE_EMULATED) {
		assert_int_equal(pipe(p), 0);
		t_track(p[0]);
		t_track(p[1]);
		assert_true(p[0] == fd || p[1] == fd);
		if (how == GONE_EMULATED)
			write_all(p[1], "0123456789", 10);
	} else if (how != GONE_FILE_WRITE) {
		pair_at(fd, sv);
		t_track(sv[0]);
		t_track(sv[1]);
		write_all(sv[1], "0123456789", 10);
	}
	t_expect_none(kq);
	t_expect_none(kq);
}

static void
regular_file_write_knote_is_gone_after_raw_close(void **state)
{
	(void)state;
	tracked_knote_gone(GONE_FILE_WRITE);
}

static void
regular_file_read_knote_ignores_the_pipe_at_its_number_after_raw_close(
    void **state)
{
	(void)state;
	tracked_knote_gone(GONE_FILE_READ);
}

static void
read_knote_beside_clear_write_ignores_the_pipe_at_its_number(void **state)
{
	(void)state;
	tracked_knote_gone(GONE_EMULATED);
}

static void
empty_knote_ignores_the_socket_at_its_number_after_raw_close(void **state)
{
	(void)state;
	tracked_knote_gone(GONE_EMPTY);
}

static void
event_left_over_by_a_short_eventlist_ignores_the_new_file_at_its_number(
    void **state)
{
	(void)state;
	tracked_knote_gone(GONE_LEFT_OVER);
}

static void
vnode_knote_of_file_closed_by_raw_syscall_is_not_reported(void **state)
{
	int kq = t_new_kq(), fd;
	char path[128];

	(void)state;
	fd = make_file("f", "abc", path, sizeof(path));
	t_change(kq, (uintptr_t)fd, EVFILT_VNODE, EV_ADD | EV_CLEAR,
	    NOTE_WRITE, 0, NULL);
	raw_close(fd);
	append(path, "x");
	usleep(50000);
	t_expect_none(kq);
	expect_change_error(kq, (uintptr_t)fd, EVFILT_VNODE, EV_DELETE,
	    EBADF);
}

/*
 * The number of a watched file, closed raw, now names a file that is not
 * the old one and has no knote: the old file's activity is not reported,
 * and the knote is gone.
 */
static void
vnode_knote_of_number_reused_by_another_file_is_gone(void **state)
{
	int kq = t_new_kq(), fd, fd2;
	char path[128], path2[128];

	(void)state;
	fd = make_file("f", "abc", path, sizeof(path));
	t_change(kq, (uintptr_t)fd, EVFILT_VNODE, EV_ADD | EV_CLEAR,
	    NOTE_WRITE, 0, NULL);
	fd2 = make_file("g", "abc", path2, sizeof(path2));
	raw_close(fd);
	raw_dup3(fd2, fd);
	close(fd2);
	t_track(fd);
	append(path, "x");
	usleep(50000);
	t_expect_none(kq);
	expect_change_error(kq, (uintptr_t)fd, EVFILT_VNODE, EV_DELETE,
	    ENOENT);
}

/*
 * The number of a watched file, closed raw, is reused by a socket that
 * gets a READ knote: the old file's activity is not reported and does
 * not take the socket's knote along; EVFILT_VNODE on the socket is
 * EINVAL, as on any socket.
 */
static void
vnode_knote_of_number_reused_by_a_watched_socket_leaves_its_knote(void **state)
{
	int kq = t_new_kq(), fd, sv[2];
	char path[128];
	struct kevent ev;

	(void)state;
	fd = make_file("f", "abc", path, sizeof(path));
	t_change(kq, (uintptr_t)fd, EVFILT_VNODE, EV_ADD | EV_CLEAR,
	    NOTE_WRITE, 0, NULL);
	raw_close(fd);
	pair_at(fd, sv);
	t_track(sv[0]);
	t_track(sv[1]);
	t_change(kq, (uintptr_t)sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	append(path, "x");
	usleep(50000);
	t_expect_none(kq);
	write_all(sv[1], "hi", 2);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	assert_int_equal(ev.filter, EVFILT_READ);
	assert_int_equal(ev.data, 2);
	expect_change_error(kq, (uintptr_t)sv[0], EVFILT_VNODE, EV_ADD,
	    EINVAL);
	ev = t_expect_one(kq);
	assert_int_equal(ev.filter, EVFILT_READ);
	assert_int_equal(ev.data, 2);
}

/*
 * An EV_CLEAR EMPTY knote on a number that was closed raw while a dup()
 * keeps the old socket, then reused by a new socket: the old socket's
 * drains are not the new one's and are not reported (FreeBSD dropped the
 * old knote at the close); the new socket's own drain is.
 */
static void
empty_knote_on_reused_number_ignores_the_old_sockets_drains(void **state)
{
	int kq = t_new_kq(), a[2], sv[2], keep, i;
	struct kevent ev;
	char buf[8];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
	t_track(a[1]);
	t_change(kq, (uintptr_t)a[0], EVFILT_EMPTY, EV_ADD | EV_CLEAR, 0, 0,
	    (void *)1);
	ev = t_expect_one(kq);
	assert_ptr_equal(ev.udata, (void *)1);
	keep = t_track(dup(a[0]));
	raw_close(a[0]);
	pair_at(a[0], sv);
	t_track(sv[0]);
	t_track(sv[1]);
	t_change(kq, (uintptr_t)sv[0], EVFILT_EMPTY, EV_ADD | EV_CLEAR, 0, 0,
	    (void *)2);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	assert_ptr_equal(ev.udata, (void *)2);
	t_expect_none(kq);
	for (i = 0; i < 3; i++) {
		write_all(keep, "abc", 3);
		assert_int_equal(read(a[1], buf, sizeof(buf)), 3);
		t_expect_none(kq);
	}
	write_all(sv[0], "x", 1);
	assert_int_equal(read(sv[1], buf, sizeof(buf)), 1);
	ev = t_expect_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	assert_int_equal(ev.filter, EVFILT_EMPTY);
	assert_ptr_equal(ev.udata, (void *)2);
}

/*
 * A number closed raw while a dup() keeps its file open: epoll still
 * reports the file under the old number.  That event is not reported, and
 * the kqueue's other knotes -- another descriptor, a timer, a process --
 * keep working.
 */
static void
other_knotes_survive_a_number_closed_raw_while_its_file_stays_open(void **state)
{
	int kq = t_new_kq(), p[2], q[2], keep, go[2], st, i;
	int seen_q = 0, seen_timer = 0, seen_proc = 0;
	struct kevent ev[8];
	pid_t pid;
	char c;

	(void)state;
	pid = t_spawn_waiting(go, 9);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(q), 0);
	t_track(p[1]);
	t_track(q[0]);
	t_track(q[1]);
	t_change(kq, (uintptr_t)p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_change(kq, (uintptr_t)q[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	t_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 200, NULL);
	t_change(kq, (uintptr_t)pid, EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, NULL);
	keep = t_track(dup(p[0]));
	raw_close(p[0]);
	write_all(p[1], "x", 1);
	t_expect_none(kq);
	write_all(q[1], "yz", 2);
	write_all(go[1], "g", 1);
	close(go[1]);
	for (i = 0; i < 50 && !(seen_q && seen_timer && seen_proc); i++) {
		int n = kevent(kq, NULL, 0, ev, 8, &(struct timespec){ 0, 100000000 });
		int j;

		assert_true(n >= 0);
		for (j = 0; j < n; j++) {
			if (ev[j].filter == EVFILT_READ) {
				assert_int_equal(ev[j].ident, (uintptr_t)q[0]);
				assert_int_equal(ev[j].data, 2);
				assert_int_equal(read(q[0], &c, 1), 1);
				assert_int_equal(read(q[0], &c, 1), 1);
				seen_q = 1;
			} else if (ev[j].filter == EVFILT_TIMER) {
				assert_int_equal(ev[j].ident, 1);
				seen_timer = 1;
			} else {
				assert_int_equal(ev[j].filter, EVFILT_PROC);
				assert_int_equal(ev[j].ident, (uintptr_t)pid);
				assert_int_equal(ev[j].fflags, NOTE_EXIT);
				assert_true(WIFEXITED(ev[j].data));
				assert_int_equal(WEXITSTATUS(ev[j].data), 9);
				seen_proc = 1;
			}
		}
	}
	if (!(seen_q && seen_timer && seen_proc))
		fprintf(stderr, "seen: read %d timer %d proc %d\n", seen_q,
		    seen_timer, seen_proc);
	assert_true(seen_q && seen_timer && seen_proc);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	(void)keep;
}

/*
 * A kqueue whose number is closed raw: kevent() on the number fails (EBADF,
 * or EINVAL once the number names something that is not a kqueue, as
 * FreeBSD's kqueue_acquire), and the pipe that takes the number is left
 * alone.
 */
static void
kevent_on_kqueue_closed_by_raw_syscall_fails(void **state)
{
	int kq = kqueue(), p[2], i;
	struct kevent ev;
	char buf[4];

	(void)state;
	assert_true(kq >= 0);
	t_change(kq, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
	raw_close(kq);
	errno = 0;
	assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &t_zero), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(pipe(p), 0);
	if (p[0] != kq) {
		raw_dup3(p[0], kq);
		raw_close(p[0]);
		p[0] = kq;
	}
	t_track(p[0]);
	t_track(p[1]);
	for (i = 0; i < 2; i++) {
		errno = 0;
		assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &t_zero), -1);
		assert_true(errno == EBADF || errno == EINVAL);
	}
	write_all(p[1], "ok", 2);
	assert_int_equal(read(p[0], buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "ok", 2);
}

/* The same, with the number taken at once by a pipe before kq looks. */
static void
kevent_on_kqueue_number_reused_behind_libc_fails(void **state)
{
	int kq = kqueue(), p[2];
	struct kevent ev;
	char buf[4];

	(void)state;
	assert_true(kq >= 0);
	t_change(kq, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
	assert_int_equal(pipe(p), 0);
	t_track(p[1]);
	raw_dup3(p[0], kq);
	raw_close(p[0]);
	t_track(kq);
	errno = 0;
	assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &t_zero), -1);
	assert_true(errno == EBADF || errno == EINVAL);
	write_all(p[1], "ok", 2);
	assert_int_equal(read(kq, buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "ok", 2);
}

/* A wait of ms on kq that must return n events and sleep, not spin. */
static int
sleeps(int kq, int n, int ms)
{
	struct kevent ev[64];
	int64_t c0 = t_thread_cpu_ns(), c1;
	int r = kevent(kq, NULL, 0, ev, 64,
	    &(struct timespec){ ms / 1000, (ms % 1000) * 1000000L });

	c1 = t_thread_cpu_ns();
	if (r != n) {
		fprintf(stderr, "kevent: %d (expected %d)\n", r, n);
		return 0;
	}
	if (c1 - c0 > (int64_t)ms * 1000000 / 2) {
		fprintf(stderr, "a %d ms wait used %jd ms of CPU\n", ms,
		    (intmax_t)((c1 - c0) / 1000000));
		return 0;
	}
	return 1;
}

/*
 * On kq: a level READ knote on a new pipe p[0], whose number is then
 * closed raw while *keep (a dup()) holds the file open, and reused by the
 * read end of a new pipe q.  Returns 0, or the number of the step that
 * failed.
 */
static int
watched_pipe_number_reused(int kq, int p[2], int q[2], int *keep)
{
	struct kevent ev;

	if (kq < 0 || pipe(p) != 0)
		return 1;
	EV_SET(&ev, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kq, &ev, 1, NULL, 0, NULL) != 0)
		return 2;
	*keep = dup(p[0]);
	if (*keep < 0 || syscall(SYS_close, p[0]) != 0 || pipe(q) != 0)
		return 3;
	if (q[0] != p[0]) {
		if (syscall(SYS_dup3, q[0], p[0], 0) != p[0] ||
		    syscall(SYS_close, q[0]) != 0)
			return 4;
		q[0] = p[0];
	}
	return 0;
}

/*
 * A level-triggered knote whose number was closed raw while a dup() keeps
 * its file open, the number then taken by another file: epoll goes on
 * reporting the old file under the number at every wait.  That is no event
 * (the knote went with the close, as on FreeBSD), and kevent() must sleep
 * through its timeout, not spin on it; the new file can then be watched.
 * Returns 0, or the number of the check that failed (it runs in a child
 * too, see below).
 */
static int
reused_number_wait_sleeps(void)
{
	int kq = kqueue(), p[2], q[2], keep, r;
	struct kevent ev;

	if ((r = watched_pipe_number_reused(kq, p, q, &keep)) != 0)
		return r;
	if (write(p[1], "old", 3) != 3)
		return 5;
	if (!sleeps(kq, 0, 400))
		return 7;
	if (kevent(kq, NULL, 0, &ev, 1, &t_zero) != 0)
		return 8;
	EV_SET(&ev, q[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kq, &ev, 1, NULL, 0, NULL) != 0 ||
	    kevent(kq, NULL, 0, &ev, 1, &t_zero) != 0)
		return 9;
	if (write(q[1], "new!", 4) != 4)
		return 10;
	if (kevent(kq, NULL, 0, &ev, 1, &t_zero) != 1 ||
	    ev.ident != (uintptr_t)q[0] || ev.filter != EVFILT_READ ||
	    ev.data != 4)
		r = 11;
	close(q[0]);
	close(q[1]);
	close(p[1]);
	close(keep);
	close(kq);
	return r;
}

static void
wait_on_level_knote_of_number_reused_while_a_dup_keeps_its_file_sleeps(
    void **state)
{
	(void)state;
	assert_int_equal(reused_number_wait_sleeps(), 0);
}

/*
 * The number of a watched pipe closed raw while a dup() keeps its file
 * ready, then reused by a new pipe that the program watches too: epoll
 * holds two registrations under the number.  The new file's events are
 * reported, the old file's are not, and waits sleep.
 */
static int
reused_number_watched_again_reports_the_new_file(void)
{
	int kq = kqueue(), p[2], q[2], keep, r;
	struct kevent ev;

	if ((r = watched_pipe_number_reused(kq, p, q, &keep)) != 0)
		return r;
	EV_SET(&ev, q[0], EVFILT_READ, EV_ADD, 0, 0, (void *)&q);
	if (kevent(kq, &ev, 1, NULL, 0, NULL) != 0)
		return 5;
	if (write(p[1], "old", 3) != 3)
		return 6;
	if (!sleeps(kq, 0, 300))
		return 7;
	if (write(q[1], "new!", 4) != 4)
		return 8;
	if (kevent(kq, NULL, 0, &ev, 1, &(struct timespec){ 1, 0 }) != 1 ||
	    ev.ident != (uintptr_t)q[0] || ev.data != 4 ||
	    ev.udata != (void *)&q)
		return 9;
	close(q[0]);
	close(q[1]);
	close(p[1]);
	close(keep);
	close(kq);
	return 0;
}

/*
 * Many watched numbers closed raw and reused while dup()s keep their old
 * files ready, more than one wait's eventlist holds: waits sleep.
 */
static int
many_reused_numbers_do_not_wake_waits(void)
{
	enum { M = 12 };
	int kq = kqueue(), p[M][2], q[2], keep[M], w[M], i;
	struct kevent ev[4];

	if (kq < 0)
		return 1;
	for (i = 0; i < M; i++) {
		if (pipe(p[i]) != 0)
			return 2;
		EV_SET(&ev[0], p[i][0], EVFILT_READ, EV_ADD, 0, 0, NULL);
		if (kevent(kq, ev, 1, NULL, 0, NULL) != 0)
			return 3;
		keep[i] = dup(p[i][0]);
		if (keep[i] < 0 || write(p[i][1], "x", 1) != 1 ||
		    pipe(q) != 0 ||
		    syscall(SYS_dup3, q[0], p[i][0], 0) != p[i][0] ||
		    syscall(SYS_close, q[0]) != 0)
			return 4;
		w[i] = q[1];	/* kept open: the new pipe is empty, not at EOF */
	}
	if (kevent(kq, NULL, 0, ev, 4, &(struct timespec){ 0, 0 }) != 0)
		return 5;
	if (!sleeps(kq, 0, 300))
		return 6;
	for (i = 0; i < M; i++) {
		close(p[i][0]);
		close(p[i][1]);
		close(keep[i]);
		close(w[i]);
	}
	close(kq);
	return 0;
}

/*
 * A socket below its NOTE_LOWAT mark, in each mode: no report, and waits
 * sleep while small writes arrive (no number is reused here; with kcmp
 * refused, kq's other proof of the number must not re-arm an edge).
 */
static int
below_low_water_mark_waits_sleep(void)
{
	static const unsigned short modes[] = { 0, EV_CLEAR, EV_DISPATCH,
	    EV_ONESHOT };
	size_t m;

	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		int kq = kqueue(), sv[2], i;
		struct kevent ev;

		if (kq < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
			return 1;
		EV_SET(&ev, sv[0], EVFILT_READ, EV_ADD | modes[m],
		    NOTE_LOWAT, 100, NULL);
		if (kevent(kq, &ev, 1, NULL, 0, NULL) != 0)
			return 2;
		for (i = 0; i < 3; i++) {
			if (write(sv[1], "abc", 3) != 3)
				return 3;
			if (!sleeps(kq, 0, 150))
				return 10 + (int)m;
		}
		close(sv[0]);
		close(sv[1]);
		close(kq);
	}
	return 0;
}

/*
 * Run fn in a child process whose seccomp filter refuses kcmp(2) with
 * EPERM (as Docker's default profile does): kq must tell a reused number
 * by other means.  Asserts that fn returned 0.
 */
static void
run_without_kcmp(int (*fn)(void))
{
	struct sock_filter deny[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kcmp, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(deny) / sizeof(deny[0]), deny };
	int st;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
			T_EXIT(100);
		errno = 0;
		if (syscall(SYS_kcmp, getpid(), getpid(), 0, 0, 0) != -1 ||
		    errno != EPERM)
			T_EXIT(101);
		T_EXIT(fn());
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void
wait_on_reused_number_sleeps_where_kcmp_is_refused(void **state)
{
	(void)state;
	run_without_kcmp(reused_number_wait_sleeps);
}

static void
reused_number_watched_again_reports_the_new_file_and_sleeps(void **state)
{
	(void)state;
	assert_int_equal(reused_number_watched_again_reports_the_new_file(),
	    0);
}

static void
many_reused_numbers_do_not_make_waits_spin(void **state)
{
	(void)state;
	assert_int_equal(many_reused_numbers_do_not_wake_waits(), 0);
	run_without_kcmp(many_reused_numbers_do_not_wake_waits);
}

static void
socket_below_low_water_mark_sleeps_in_every_mode(void **state)
{
	(void)state;
	assert_int_equal(below_low_water_mark_waits_sleep(), 0);
	run_without_kcmp(below_low_water_mark_waits_sleep);
}

/* The descriptors open now, as a bitmap of the first 1024 numbers. */
static void
open_fds(unsigned char map[128])
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	assert_non_null(d);
	memset(map, 0, 128);
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd != dirfd(d) && fd < 1024)
			map[fd / 8] |= (unsigned char)(1 << (fd % 8));
	}
	closedir(d);
}

static int
fd_in(const unsigned char map[128], int fd)
{
	return (map[fd / 8] >> (fd % 8)) & 1;
}

/* The kernel's name of what fd is open on (readlink of /proc/self/fd). */
static void
fd_target(int fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, len - 1);
	assert_true(n > 0);
	buf[n] = '\0';
}

/*
 * On Linux a kqueue holds descriptors of its own (an eventfd, a timerfd,
 * a pidfd per watched process ...): the program never opened them, so on
 * FreeBSD those numbers would be closed.  A change naming one fails with
 * EBADF, and the kqueue's own events go on as before.
 */
static void
change_on_a_number_the_kqueue_opened_for_itself_fails_ebadf(void **state)
{
	unsigned char before[128], after[128];
	int kq, go[2], fd, n = 0, seen_timer = 0, seen_proc = 0, i, st;
	struct kevent ev[4];
	pid_t pid;

	(void)state;
	pid = t_spawn_waiting(go, 7);
	open_fds(before);
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, 0, 20, NULL);
	t_change(kq, (uintptr_t)pid, EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, NULL);
	t_change(kq, 2, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	open_fds(after);
	for (fd = 0; fd < 1024; fd++) {
		if (fd == kq || !fd_in(after, fd) || fd_in(before, fd))
			continue;
		n++;
		expect_change_error(kq, (uintptr_t)fd, EVFILT_READ, EV_ADD,
		    EBADF);
		expect_change_error(kq, (uintptr_t)fd, EVFILT_WRITE, EV_ADD,
		    EBADF);
		expect_change_error(kq, (uintptr_t)fd, EVFILT_READ, EV_DELETE,
		    EBADF);
		/* Nor can the program close it or put a file over it (a
		   stray close, a dup2 onto a number it believes free). */
		errno = 0;
		assert_int_equal(close(fd), -1);
		assert_int_equal(errno, EBADF);
		errno = 0;
		assert_int_equal(dup2(go[1], fd), -1);
		assert_int_equal(errno, EBUSY);
	}
	assert_true(n >= 2);	/* at least its eventfd and timerfd */
	write_all(go[1], "g", 1);
	close(go[1]);
	for (i = 0; i < 100 && !(seen_timer && seen_proc); i++) {
		int r = kevent(kq, NULL, 0, ev, 4,
		    &(struct timespec){ 0, 100000000 }), j;

		assert_true(r >= 0);
		for (j = 0; j < r; j++) {
			if (ev[j].filter == EVFILT_TIMER)
				seen_timer = 1;
			else {
				assert_int_equal(ev[j].filter, EVFILT_PROC);
				assert_int_equal(ev[j].ident, (uintptr_t)pid);
				assert_true(WIFEXITED(ev[j].data));
				assert_int_equal(WEXITSTATUS(ev[j].data), 7);
				seen_proc = 1;
			}
		}
	}
	assert_true(seen_timer && seen_proc);
	assert_int_equal(waitpid(pid, &st, 0), pid);
}

/*
 * Nor is such a number a kqueue to kevent(): one of them is a duplicate
 * of the kqueue's own epoll set (the descriptor its waits sleep on), so
 * it holds the kqueue's open file, yet the program never made it a dup()
 * of the kqueue.  Changes and waits on each fail with EBADF, and change
 * nothing: a trigger sent through one reaches no knote of the kqueue's.
 */
static void
kevent_on_a_number_the_kqueue_opened_for_itself_fails_ebadf(void **state)
{
	unsigned char before[128], after[128];
	int kq, fd, n = 0;
	struct kevent ch, ev[4];
	struct timespec zero = { 0, 0 };

	(void)state;
	open_fds(before);
	kq = t_new_kq();
	t_change(kq, 2, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	open_fds(after);
	for (fd = 0; fd < 1024; fd++) {
		if (fd == kq || !fd_in(after, fd) || fd_in(before, fd))
			continue;
		n++;
		EV_SET(&ch, 2, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
		errno = 0;
		assert_int_equal(kevent(fd, &ch, 1, NULL, 0, NULL), -1);
		assert_int_equal(errno, EBADF);
		errno = 0;
		assert_int_equal(kevent(fd, NULL, 0, ev, 4, &zero), -1);
		assert_int_equal(errno, EBADF);
	}
#ifdef __linux__
	assert_true(n >= 2);	/* at least its set's duplicate, doorbell */
#endif
	assert_int_equal(kevent(kq, NULL, 0, ev, 4, &zero), 0);
}

/*
 * A new kqueue (*kqp) with a timer, whose timerfd the program closes with
 * a raw system call: that number, or -1 where the kqueue opened no
 * timerfd (FreeBSD).
 */
static int
kq_with_a_lost_number(int *kqp)
{
	unsigned char before[128], after[128];
	int fd, lost = -1;
	char name[128];

	open_fds(before);
	*kqp = t_new_kq();
	t_change(*kqp, 1, EVFILT_TIMER, EV_ADD, 0, 100000, NULL);
	open_fds(after);
	for (fd = 0; fd < 1024; fd++) {
		if (fd == *kqp || !fd_in(after, fd) || fd_in(before, fd))
			continue;
		fd_target(fd, name, sizeof(name));
		if (strstr(name, "timerfd") != NULL)
			lost = fd;	/* the timer's: nothing else needs it */
	}
	if (lost >= 0)
		assert_int_equal(syscall(SYS_close, lost), 0);
	return lost;
}

/*
 * A number the kqueue opened for itself and the program closed with a
 * raw system call is the program's again: a dup() of the kqueue made at
 * it is the kqueue, for changes and waits alike (a trigger sent through
 * the dup is collected from the original).
 */
static void
dup_of_a_kqueue_at_a_number_it_lost_to_a_raw_close_is_the_kqueue(
    void **state)
{
	int kq, lost, d;
	struct kevent ch, ev[4];
	struct timespec zero = { 0, 0 };

	(void)state;
	lost = kq_with_a_lost_number(&kq);
	if (lost >= 0) {
		d = fcntl(kq, F_DUPFD_CLOEXEC, lost);
		assert_int_equal(d, lost);
	} else
		d = fcntl(kq, F_DUPFD_CLOEXEC, 0);	/* no such number */
	assert_true(d >= 0);
	assert_int_equal(kevent(d, NULL, 0, ev, 4, &zero), 0);
	EV_SET(&ch, 7, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	assert_int_equal(kevent(d, &ch, 1, NULL, 0, NULL), 0);
	EV_SET(&ch, 7, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	assert_int_equal(kevent(d, &ch, 1, NULL, 0, NULL), 0);
	assert_int_equal(kevent(kq, NULL, 0, ev, 4, &zero), 1);
	assert_int_equal(ev[0].filter, EVFILT_USER);
	assert_int_equal(ev[0].ident, 7);
	close(d);
}

/*
 * And a file the program puts there is watched like any other: EV_ADD of
 * EVFILT_READ on a pipe at that number reports the pipe's data.
 */
static void
file_at_a_number_the_kqueue_lost_to_a_raw_close_is_watched(void **state)
{
	int kq, lost, p[2], at;
	struct kevent ev[4];
	struct timespec zero = { 0, 0 };

	(void)state;
	assert_int_equal(pipe(p), 0);	/* first: not at the number lost */
	lost = kq_with_a_lost_number(&kq);
	if (lost >= 0) {
		at = fcntl(p[0], F_DUPFD_CLOEXEC, lost);
		assert_int_equal(at, lost);
	} else
		at = fcntl(p[0], F_DUPFD_CLOEXEC, 0);	/* no such number */
	assert_true(at >= 0);
	t_change(kq, (uintptr_t)at, EVFILT_READ, EV_ADD, 0, 0, NULL);
	write_all(p[1], "abc", 3);
	assert_int_equal(kevent(kq, NULL, 0, ev, 4, &zero), 1);
	assert_int_equal(ev[0].ident, (uintptr_t)at);
	assert_int_equal(ev[0].filter, EVFILT_READ);
	assert_int_equal(ev[0].data, 3);
	close(at);
	close(p[0]);
	close(p[1]);
}

/*
 * The same seen from another kqueue: the numbers a kqueue opened for
 * itself (here also the epoll set behind its EVFILT_EMPTY knotes, and the
 * signal eventfd all kqueues share) are closed numbers to every kqueue of
 * the program, and to close() and dup2(); the kqueue's timer and signal
 * knotes go on working.
 */
static void
change_on_a_number_another_kqueue_opened_for_itself_fails_ebadf(
    void **state)
{
	unsigned char before[128], after[128];
	int kq, other, fd, n = 0, sv[2], i, seen_timer = 0, seen_sig = 0;
	struct kevent ev[4];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	t_track(sv[0]);
	t_track(sv[1]);
	signal(SIGUSR2, SIG_IGN);
	other = t_new_kq();
	open_fds(before);
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 20, NULL);
	t_change(kq, (uintptr_t)sv[0], EVFILT_EMPTY, EV_ADD | EV_DISPATCH, 0,
	    0, NULL);
	t_change(kq, SIGUSR2, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	open_fds(after);
	for (fd = 0; fd < 1024; fd++) {
		if (fd == kq || !fd_in(after, fd) || fd_in(before, fd))
			continue;
		n++;
		expect_change_error(other, (uintptr_t)fd, EVFILT_READ, EV_ADD,
		    EBADF);
		expect_change_error(other, (uintptr_t)fd, EVFILT_WRITE, EV_ADD,
		    EBADF);
		expect_change_error(other, (uintptr_t)fd, EVFILT_EMPTY, EV_ADD,
		    EBADF);
		expect_change_error(other, (uintptr_t)fd, EVFILT_READ,
		    EV_DELETE, EBADF);
		errno = 0;
		assert_int_equal(close(fd), -1);
		assert_int_equal(errno, EBADF);
		errno = 0;
		assert_int_equal(dup2(sv[1], fd), -1);
		assert_int_equal(errno, EBUSY);
	}
	assert_true(n >= 4);	/* eventfd, timerfd, EMPTY set, signals */
	t_expect_none(other);
	assert_int_equal(kill(getpid(), SIGUSR2), 0);
	for (i = 0; i < 50 && !(seen_timer && seen_sig); i++) {
		int r = kevent(kq, NULL, 0, ev, 4,
		    &(struct timespec){ 0, 100000000 }), j;

		assert_true(r >= 0);
		for (j = 0; j < r; j++) {
			seen_timer |= ev[j].filter == EVFILT_TIMER;
			seen_sig |= ev[j].filter == EVFILT_SIGNAL &&
			    ev[j].ident == SIGUSR2;
		}
	}
	assert_true(seen_timer && seen_sig);
	signal(SIGUSR2, SIG_DFL);
}

/*
 * Take every number in mine[0..n) with a program's pipe end (the numbers
 * were closed raw, so the kernel hands them out again); record each
 * one's file in id[] (st_ino), and the pipes in taken[] for closing.
 */
static int
take_numbers(const int *mine, int n, ino_t *id, int *taken, int max)
{
	int took = 0, i, k;

	while (took + 2 <= max) {
		int p[2], hit = 0;

		assert_int_equal(pipe(p), 0);
		taken[took++] = p[0];
		taken[took++] = p[1];
		for (i = 0; i < n; i++)
			for (k = 0; k < took; k++)
				hit += taken[k] == mine[i];
		if (hit == n)
			break;
	}
	for (i = 0; i < n; i++) {
		struct stat st;

		assert_int_equal(fstat(mine[i], &st), 0);
		id[i] = st.st_ino;
	}
	return took;
}

/* Each number of mine[] still holds the program's file recorded in id[]. */
static void
expect_numbers_kept(const int *mine, const ino_t *id, int n,
    const char *after)
{
	int i;

	for (i = 0; i < n; i++) {
		struct stat st;

		if (fstat(mine[i], &st) != 0 || st.st_ino != id[i])
			fail_msg("number %d, the program's pipe, was closed or "
			    "replaced by %s", mine[i], after);
	}
}

/*
 * A kqueue and the descriptors it holds for itself, all closed with the
 * raw system call (as a raw close_range() would): the program's files
 * that then take those numbers are the program's, to watch from another
 * kqueue and to close (FreeBSD: the numbers were simply closed).
 */
static void
numbers_of_a_kqueue_closed_raw_are_the_programs_again(void **state)
{
	unsigned char before[128], after[128];
	int kq, other, fd, i, n = 0, mine[16], took, sv[2];
	int taken[64];
	ino_t id[16];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	t_track(sv[0]);
	t_track(sv[1]);
	other = t_new_kq();
	open_fds(before);
	kq = kqueue();
	assert_true(kq >= 0);
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, 0, 1000, NULL);
	t_change(kq, (uintptr_t)sv[0], EVFILT_EMPTY, EV_ADD, 0, 0, NULL);
	open_fds(after);
	for (fd = 0; fd < 1024 && n < 16; fd++)
		if (fd_in(after, fd) && !fd_in(before, fd))
			mine[n++] = fd;
	assert_true(n >= 3);	/* the kqueue, its eventfd, timerfd, set */
	for (i = 0; i < n; i++)
		raw_close(mine[i]);
	/* Open until every one of those numbers is the program's. */
	took = take_numbers(mine, n, id, taken, 64);
	for (i = 0; i < n; i++) {
		t_change(other, (uintptr_t)mine[i], EVFILT_READ, EV_ADD, 0, 0,
		    NULL);
		t_change(other, (uintptr_t)mine[i], EVFILT_READ, EV_DELETE, 0,
		    0, NULL);
	}
	/* Each close is the program's: none of them was closed by kq. */
	for (i = 0; i < took; i++) {
		int r = close(taken[i]);

		if (r != 0)
			fprintf(stderr, "close(%d) of a pipe: %s (the kqueue "
			    "was %d)\n", taken[i], strerror(errno), kq);
		assert_int_equal(r, 0);
	}
}

/*
 * A number the kqueue opened for itself, closed behind the C library's
 * back and then given to a file of the program's, is the program's: the
 * kqueue's close, which closes the kqueue's own descriptors, leaves that
 * file open (kq closes no number it has not proven its own).  Each of its
 * numbers in turn, in a kqueue of its own: the doorbell and the wait's
 * set, a timer's timerfd, the epoll set of EVFILT_EMPTY, inotify for
 * EVFILT_VNODE and a process's pidfd.  With rebuild, the kqueue first
 * meets a watched number reused while a dup() keeps its file ready, which
 * makes it move its registrations to a new set (see above): the program's
 * file must not move with them as the kqueue's.
 */
static void
close_leaves_numbers_closed_raw(int rebuild)
{
	unsigned char before[128], after[128];
	int kq, fd, i, n, k = 0, mine[16], taken[64], took, sv[2], go[2], vf;
	ino_t id;
	char path[96];
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	t_track(sv[0]);
	t_track(sv[1]);
	snprintf(path, sizeof(path), "%s/v", tdir);
	assert_true((vf = open(path, O_CREAT | O_RDWR, 0600)) >= 0);
	t_track(vf);
	do {
		pid = t_spawn_waiting(go, 3);
		open_fds(before);
		assert_true((kq = kqueue()) >= 0);
		t_change(kq, 1, EVFILT_TIMER, EV_ADD, 0, 1000, NULL);
		t_change(kq, (uintptr_t)sv[0], EVFILT_EMPTY, EV_ADD, 0, 0,
		    NULL);
		t_change(kq, (uintptr_t)vf, EVFILT_VNODE, EV_ADD | EV_CLEAR,
		    NOTE_WRITE, 0, NULL);
		t_change(kq, (uintptr_t)pid, EVFILT_PROC, EV_ADD, NOTE_EXIT, 0,
		    NULL);
		open_fds(after);
		for (n = 0, fd = 0; fd < 1024 && n < 16; fd++)
			if (fd != kq && fd_in(after, fd) && !fd_in(before, fd))
				mine[n++] = fd;
		if (k < n) {
			int p[2], q[2], keep = -1;

			raw_close(mine[k]);
			took = take_numbers(&mine[k], 1, &id, taken, 64);
			if (rebuild) {
				assert_int_equal(watched_pipe_number_reused(kq,
				    p, q, &keep), 0);
				write_all(p[1], "old", 3);
				(void)sleeps(kq, 0, 50);	/* may fail */
			}
			assert_int_equal(close(kq), 0);
			expect_numbers_kept(&mine[k], &id, 1,
			    rebuild ? "the rebuilt kqueue's close" :
			    "the kqueue's close");
			for (i = 0; i < took; i++)
				assert_int_equal(close(taken[i]), 0);
			if (rebuild) {
				close(q[0]);
				close(q[1]);
				close(p[1]);
				close(keep);
			}
		} else
			assert_int_equal(close(kq), 0);
		write_all(go[1], "g", 1);
		close(go[1]);
		assert_int_equal(waitpid(pid, &i, 0), pid);
	} while (++k < n);
}

static void
kqueue_close_leaves_the_programs_files_at_its_numbers_closed_raw(
    void **state)
{
	(void)state;
	close_leaves_numbers_closed_raw(0);
}

static void
rebuilt_kqueue_close_leaves_the_programs_files_at_its_numbers_closed_raw(
    void **state)
{
	(void)state;
	close_leaves_numbers_closed_raw(1);
}

/*
 * The same for a knote's own descriptor (EVFILT_PROC's pidfd, if it has
 * one): the knote's deletion leaves the program's file at its number.
 */
static void
knote_delete_leaves_the_programs_file_at_its_number_closed_raw(
    void **state)
{
	unsigned char before[128], after[128];
	int kq, fd, i, n = 0, mine[16], taken[64], took, go[2];
	ino_t id[16];
	pid_t pid;

	(void)state;
	kq = t_new_kq();
	t_change(kq, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
	pid = t_spawn_waiting(go, 4);
	open_fds(before);
	t_change(kq, (uintptr_t)pid, EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, NULL);
	open_fds(after);
	for (fd = 0; fd < 1024 && n < 16; fd++)
		if (fd_in(after, fd) && !fd_in(before, fd))
			mine[n++] = fd;
	for (i = 0; i < n; i++)
		raw_close(mine[i]);
	took = take_numbers(mine, n, id, taken, 64);
	t_change(kq, (uintptr_t)pid, EVFILT_PROC, EV_DELETE, 0, 0, NULL);
	expect_numbers_kept(mine, id, n, "the knote's deletion");
	for (i = 0; i < took; i++)
		assert_int_equal(close(taken[i]), 0);
	write_all(go[1], "g", 1);
	close(go[1]);
	assert_int_equal(waitpid(pid, &i, 0), pid);
}

static void *
wait_forever(void *arg)
{
	struct kevent ev;
	int r = kevent((int)(intptr_t)arg, NULL, 0, &ev, 1, NULL);

	return (void *)(intptr_t)(r < 0 ? errno : 0);
}

/*
 * After a kqueue was closed raw (and its number taken by a new kqueue),
 * the kqueues made later are whole: close() of each wakes the thread
 * waiting in it (EBADF) and gives back every descriptor it made.
 */
static void
kqueues_made_after_one_closed_raw_give_back_their_descriptors(void **state)
{
	int k, k2, i, base, kq, kqs[4];
	struct timespec end;
	pthread_t t;
	void *rv;

	(void)state;
	k = kqueue();
	assert_true(k >= 0);
	raw_close(k);
	k2 = kqueue();		/* finds the old one at its number */
	assert_true(k2 >= 0);
	assert_int_equal(close(k2), 0);
	/* Several alive at once: the pool hands out older objects too. */
	base = t_count_fds();
	for (i = 0; i < 4; i++) {
		kqs[i] = kqueue();
		assert_true(kqs[i] >= 0);
		t_change(kqs[i], 1, EVFILT_TIMER, EV_ADD, 0, 60000, NULL);
	}
	for (i = 0; i < 4; i++) {
		kq = kqs[i];
		assert_int_equal(pthread_create(&t, NULL, wait_forever,
		    (void *)(intptr_t)kq), 0);
		usleep(20000);
		assert_int_equal(close(kq), 0);
		clock_gettime(CLOCK_REALTIME, &end);
		end.tv_sec += 2;
		if (pthread_timedjoin_np(t, &rv, &end) != 0) {
			fprintf(stderr, "kevent() on kqueue %d not woken by "
			    "its close() in 2 s\n", kq);
			fail();
		}
		assert_int_equal((int)(intptr_t)rv, EBADF);
	}
	assert_int_equal(t_count_fds(), base);
}

/*
 * A number closed raw while a dup() keeps its file, then taken by the
 * kqueue itself for a new internal descriptor (the timerfd of its first
 * timer): the closed number's knote is gone, the old file's readiness
 * under the number is no event and no error, the timer fires on, and a
 * change naming the number fails with EBADF.
 */
static void
kqueue_taking_a_number_closed_raw_drops_its_knote_and_keeps_working(
    void **state)
{
	int kq = t_new_kq(), p[2], keep, i, timers = 0;
	struct kevent ev[4];
	char name[128];

	(void)state;
	assert_int_equal(pipe(p), 0);
	t_track(p[1]);
	t_change(kq, (uintptr_t)p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	keep = t_track(dup(p[0]));
	raw_close(p[0]);
	/* The lowest free number: the kqueue's timerfd takes it. */
	t_change(kq, 1, EVFILT_TIMER, EV_ADD, 0, 10, NULL);
	fd_target(p[0], name, sizeof(name));
	if (strstr(name, "timerfd") == NULL)
		fprintf(stderr, "number %d is %s\n", p[0], name);
	assert_non_null(strstr(name, "timerfd"));
	write_all(p[1], "x", 1);
	for (i = 0; i < 5; i++) {
		int r = kevent(kq, NULL, 0, ev, 4,
		    &(struct timespec){ 1, 0 }), j;

		if (r < 0)
			fprintf(stderr, "kevent: %s\n", strerror(errno));
		assert_true(r >= 1);
		for (j = 0; j < r; j++) {
			assert_int_equal(ev[j].filter, EVFILT_TIMER);
			assert_int_equal(ev[j].ident, 1);
			timers++;
		}
	}
	assert_true(timers >= 5);
	expect_change_error(kq, (uintptr_t)p[0], EVFILT_READ, EV_ADD, EBADF);
	expect_change_error(kq, (uintptr_t)p[0], EVFILT_READ, EV_DELETE,
	    EBADF);
	(void)keep;
}

/*
 * A number closed raw (no dup() keeps its file) and taken by the kqueue's
 * own timerfd: the kqueue's descriptor keeps naming the same epoll set,
 * so a kqueue watching it hears of the timer.
 */
static void
kqueue_taking_a_number_closed_raw_stays_watchable(void **state)
{
	int inner = t_new_kq(), outer = t_new_kq(), p[2];
	struct kevent ev;
	char name[128];

	(void)state;
	t_change(outer, (uintptr_t)inner, EVFILT_READ, EV_ADD, 0, 0, NULL);
	assert_int_equal(pipe(p), 0);
	t_track(p[1]);
	t_change(inner, (uintptr_t)p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	raw_close(p[0]);
	t_change(inner, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 300, NULL);
	fd_target(p[0], name, sizeof(name));
	assert_non_null(strstr(name, "timerfd"));
	t_expect_none(inner);	/* (a collection on it, before the timer) */
	assert_int_equal(kevent(outer, NULL, 0, &ev, 1,
	    &(struct timespec){ 2, 0 }), 1);
	assert_int_equal(ev.ident, (uintptr_t)inner);
	ev = t_expect_one(inner);
	assert_int_equal(ev.filter, EVFILT_TIMER);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(delete_of_pipe_closed_by_raw_syscall_fails_ebadf),
		cmocka_unit_test(delete_on_number_reused_after_raw_close_fails_enoent),
		cmocka_unit_test(add_on_number_reused_after_raw_close_watches_the_new_file),
		cmocka_unit_test(add_of_other_filter_on_reused_number_watches_the_new_file),
		cmocka_unit_test(file_read_knote_is_gone_after_raw_close),
		cmocka_unit_test(regular_file_write_knote_is_gone_after_raw_close),
		cmocka_unit_test(regular_file_read_knote_ignores_the_pipe_at_its_number_after_raw_close),
		cmocka_unit_test(read_knote_beside_clear_write_ignores_the_pipe_at_its_number),
		cmocka_unit_test(empty_knote_ignores_the_socket_at_its_number_after_raw_close),
		cmocka_unit_test(event_left_over_by_a_short_eventlist_ignores_the_new_file_at_its_number),
		cmocka_unit_test(vnode_knote_of_file_closed_by_raw_syscall_is_not_reported),
		cmocka_unit_test(vnode_knote_of_number_reused_by_another_file_is_gone),
		cmocka_unit_test(vnode_knote_of_number_reused_by_a_watched_socket_leaves_its_knote),
		cmocka_unit_test(empty_knote_on_reused_number_ignores_the_old_sockets_drains),
		cmocka_unit_test(other_knotes_survive_a_number_closed_raw_while_its_file_stays_open),
		cmocka_unit_test(kevent_on_kqueue_closed_by_raw_syscall_fails),
		cmocka_unit_test(kevent_on_kqueue_number_reused_behind_libc_fails),
		cmocka_unit_test(wait_on_level_knote_of_number_reused_while_a_dup_keeps_its_file_sleeps),
		cmocka_unit_test(wait_on_reused_number_sleeps_where_kcmp_is_refused),
		cmocka_unit_test(reused_number_watched_again_reports_the_new_file_and_sleeps),
		cmocka_unit_test(many_reused_numbers_do_not_make_waits_spin),
		cmocka_unit_test(socket_below_low_water_mark_sleeps_in_every_mode),
		cmocka_unit_test(change_on_a_number_the_kqueue_opened_for_itself_fails_ebadf),
		cmocka_unit_test(kevent_on_a_number_the_kqueue_opened_for_itself_fails_ebadf),
		cmocka_unit_test(dup_of_a_kqueue_at_a_number_it_lost_to_a_raw_close_is_the_kqueue),
		cmocka_unit_test(file_at_a_number_the_kqueue_lost_to_a_raw_close_is_watched),
		cmocka_unit_test(change_on_a_number_another_kqueue_opened_for_itself_fails_ebadf),
		cmocka_unit_test(numbers_of_a_kqueue_closed_raw_are_the_programs_again),
		cmocka_unit_test(kqueue_close_leaves_the_programs_files_at_its_numbers_closed_raw),
		cmocka_unit_test(rebuilt_kqueue_close_leaves_the_programs_files_at_its_numbers_closed_raw),
		cmocka_unit_test(knote_delete_leaves_the_programs_file_at_its_number_closed_raw),
		cmocka_unit_test(kqueues_made_after_one_closed_raw_give_back_their_descriptors),
		cmocka_unit_test(kqueue_taking_a_number_closed_raw_drops_its_knote_and_keeps_working),
		cmocka_unit_test(kqueue_taking_a_number_closed_raw_stays_watchable),
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, setup, teardown);
}
