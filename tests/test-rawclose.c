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
 *   - kevent() on a kqueue whose number was closed fails.
 * Linux only (the raw close and dup3 system calls).
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

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
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		T_EXIT(read(go[0], &c, 1) == 0 ? 9 : 100);
	}
	close(go[0]);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(delete_of_pipe_closed_by_raw_syscall_fails_ebadf),
		cmocka_unit_test(delete_on_number_reused_after_raw_close_fails_enoent),
		cmocka_unit_test(add_on_number_reused_after_raw_close_watches_the_new_file),
		cmocka_unit_test(add_of_other_filter_on_reused_number_watches_the_new_file),
		cmocka_unit_test(file_read_knote_is_gone_after_raw_close),
		cmocka_unit_test(vnode_knote_of_file_closed_by_raw_syscall_is_not_reported),
		cmocka_unit_test(vnode_knote_of_number_reused_by_another_file_is_gone),
		cmocka_unit_test(vnode_knote_of_number_reused_by_a_watched_socket_leaves_its_knote),
		cmocka_unit_test(other_knotes_survive_a_number_closed_raw_while_its_file_stays_open),
		cmocka_unit_test(kevent_on_kqueue_closed_by_raw_syscall_fails),
		cmocka_unit_test(kevent_on_kqueue_number_reused_behind_libc_fails),
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, setup, teardown);
}
