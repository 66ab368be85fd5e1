/*
 * test-vnode.c -- EVFILT_VNODE.
 *
 * Each test checks one FreeBSD behaviour of the vnode filter: which file
 * operation sets which NOTE_* flag, on files and directories; how the
 * flags accumulate until retrieved (EV_CLEAR, EV_DISABLE); that the knote
 * follows the open file across rename and unlink; what happens to knotes
 * of closed descriptors; and that one kqueue can watch thousands of files.
 * Only <sys/event.h> and POSIX are used, except for the unmount test,
 * which needs Linux mount namespaces (or FreeBSD's unmount -f).
 */
#include <ftw.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "helpers.h"

#define ALLNOTES (NOTE_DELETE | NOTE_WRITE | NOTE_EXTEND | NOTE_ATTRIB | \
	NOTE_LINK | NOTE_RENAME | NOTE_REVOKE | NOTE_OPEN | NOTE_CLOSE | \
	NOTE_CLOSE_WRITE | NOTE_READ)

/* ------------------------------------------------------------------ */
/* Local helpers                                                      */
/* ------------------------------------------------------------------ */

static char tdir[64];

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int
setup_dir(void **state)
{
	(void)state;
	snprintf(tdir, sizeof(tdir), "/tmp/kqvnode.XXXXXX");
	return mkdtemp(tdir) == NULL ? -1 : 0;
}

static int
teardown_dir(void **state)
{
	(void)state;
	return nftw(tdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* tdir/name into buf. */
static const char *
tpath(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tdir, name);
	return buf;
}

/* Create tdir/name with some content; return a read-only descriptor. */
static int
make_file(const char *name, const char *content)
{
	char p[128];
	int fd = open(tpath(p, sizeof(p), name), O_CREAT | O_TRUNC | O_WRONLY,
	    0644);

	assert_true(fd >= 0);
	if (content != NULL)
		write_all(fd, content, strlen(content));
	close(fd);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	return fd;
}

/* Append text to tdir/name through a new descriptor. */
static void
append_file(const char *name, const char *text)
{
	char p[128];
	int fd = open(tpath(p, sizeof(p), name), O_WRONLY | O_APPEND);

	assert_true(fd >= 0);
	write_all(fd, text, strlen(text));
	close(fd);
}

static void
vn_add(int kq, int fd, unsigned short flags, unsigned int fflags)
{
	t_change(kq, (uintptr_t)fd, EVFILT_VNODE, EV_ADD | flags, fflags, 0,
	    NULL);
}

/* Wait up to 2 s for exactly one event. */
static struct kevent
wait_one(int kq)
{
	struct timespec ts = { 2, 0 };
	struct kevent ev[2];
	int r;

	do
		r = kevent(kq, NULL, 0, ev, 2, &ts);
	while (r < 0 && errno == EINTR);
	if (r != 1)
		fprintf(stderr, "wait_one: kevent returned %d\n", r);
	assert_int_equal(r, 1);
	return ev[0];
}

/* Wait for the knote on fd and assert its fflags are exactly want. */
static void
expect_notes(int kq, int fd, unsigned int want)
{
	struct kevent ev = wait_one(kq);

	assert_int_equal(ev.ident, (uintptr_t)fd);
	assert_int_equal(ev.filter, EVFILT_VNODE);
	if (ev.fflags != want)
		fprintf(stderr, "fflags %#x, want %#x\n", ev.fflags, want);
	assert_int_equal(ev.fflags, want);
	assert_int_equal(ev.data, 0);
}

/* One change, expecting it to fail with err. */
static void
expect_change_error(int kq, uintptr_t ident, unsigned short flags,
    unsigned int fflags, int err)
{
	struct kevent kev;

	EV_SET(&kev, ident, EVFILT_VNODE, flags, fflags, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), -1);
	assert_int_equal(errno, err);
}

static void
raise_nofile(rlim_t want)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < want) {
		rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	assert_true(rl.rlim_cur >= want);
}

/* ------------------------------------------------------------------ */
/* Registration                                                       */
/* ------------------------------------------------------------------ */

static void
vnode_on_pipe_or_socket_is_einval(void **state)
{
	int kq = kqueue(), p[2], sv[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	expect_change_error(kq, (uintptr_t)p[0], EV_ADD, NOTE_WRITE, EINVAL);
	expect_change_error(kq, (uintptr_t)p[1], EV_ADD, NOTE_WRITE, EINVAL);
	expect_change_error(kq, (uintptr_t)sv[0], EV_ADD, NOTE_WRITE, EINVAL);
	expect_change_error(kq, (uintptr_t)kq, EV_ADD, NOTE_WRITE, EINVAL);
	t_expect_none(kq);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	close(kq);
}

static void
vnode_on_bad_descriptor_is_ebadf(void **state)
{
	int kq = kqueue(), fd = make_file("f", "x");

	(void)state;
	close(fd);
	expect_change_error(kq, (uintptr_t)fd, EV_ADD, NOTE_WRITE, EBADF);
	expect_change_error(kq, 100000, EV_ADD, NOTE_WRITE, EBADF);
	close(kq);
}

static void
ev_add_registers_quietly_until_something_happens(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	struct stat st;
	char c;

	(void)state;
	vn_add(kq, fd, 0, ALLNOTES);
	/* Nothing kq does (and fstat, lseek of ours) is an event. */
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(lseek(fd, 0, SEEK_END) == 3);
	t_expect_none(kq);
	/* A read through the watched descriptor is one. */
	assert_true(lseek(fd, 0, SEEK_SET) == 0);
	assert_int_equal(read(fd, &c, 1), 1);
	expect_notes(kq, fd, NOTE_READ);
	close(fd);
	close(kq);
}

/* ------------------------------------------------------------------ */
/* NOTE_* on a regular file                                           */
/* ------------------------------------------------------------------ */

static void
note_write_and_extend_on_append(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE | NOTE_EXTEND);
	append_file("f", "more");
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND);
	t_expect_none(kq);
	close(fd);
	close(kq);
}

static void
note_write_without_extend_on_overwrite(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abcdef"), w;
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE | NOTE_EXTEND);
	w = open(tpath(p, sizeof(p), "f"), O_WRONLY);
	assert_true(w >= 0);
	assert_int_equal(pwrite(w, "XY", 2, 1), 2);
	expect_notes(kq, fd, NOTE_WRITE);
	close(w);
	close(fd);
	close(kq);
}

/*
 * FreeBSD's filt_vfsvnode records the whole hint of an operation once one
 * of its bits was asked for, and VOP_WRITE's hint is NOTE_WRITE, plus
 * NOTE_EXTEND when the write ends past the old size.
 */
static void
extending_write_reports_write_and_extend_to_note_write_alone(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE);
	append_file("f", "more");
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND);
	t_expect_none(kq);
	close(fd);
	close(kq);
}

static void
extending_write_reports_write_and_extend_to_note_extend_alone(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abcdef"), w;
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_EXTEND);
	w = open(tpath(p, sizeof(p), "f"), O_WRONLY);
	assert_true(w >= 0);
	assert_int_equal(pwrite(w, "XY", 2, 1), 2);	/* hint NOTE_WRITE */
	usleep(50000);
	t_expect_none(kq);
	assert_int_equal(pwrite(w, "XYZ", 3, 6), 3);	/* grows the file */
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND);
	t_expect_none(kq);
	close(w);
	close(fd);
	close(kq);
}

static void
note_attrib_on_chmod(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_ATTRIB | NOTE_LINK | NOTE_DELETE);
	assert_int_equal(chmod(tpath(p, sizeof(p), "f"), 0600), 0);
	expect_notes(kq, fd, NOTE_ATTRIB);
	close(fd);
	close(kq);
}

static void
note_link_on_hard_link(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128], q[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_ATTRIB | NOTE_LINK | NOTE_DELETE);
	assert_int_equal(link(tpath(p, sizeof(p), "f"),
	    tpath(q, sizeof(q), "g")), 0);
	expect_notes(kq, fd, NOTE_LINK);
	close(fd);
	close(kq);
}

/*
 * Each operation carries its own notes whatever was asked besides: an
 * append through a new descriptor is NOTE_OPEN, then NOTE_WRITE |
 * NOTE_EXTEND, then NOTE_CLOSE_WRITE; a link after an open is NOTE_LINK,
 * not NOTE_ATTRIB.  (On Linux the notes of an operation are derived from
 * the file's status after the fact: the open's must not absorb them.)
 */
static void
append_reports_open_write_extend_and_close_write(void **state)
{
	unsigned int all = NOTE_OPEN | NOTE_WRITE | NOTE_EXTEND |
	    NOTE_CLOSE_WRITE;
	int kq = kqueue(), fd = make_file("f", "abc");

	(void)state;
	vn_add(kq, fd, EV_CLEAR, all);
	append_file("f", "x");
	expect_notes(kq, fd, all);
	close(fd);
	close(kq);
}

static void
link_after_open_reports_note_link(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc"), o;
	char p[128], q[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_OPEN | NOTE_ATTRIB | NOTE_LINK);
	o = open(tpath(p, sizeof(p), "f"), O_RDONLY);
	assert_true(o >= 0);
	close(o);
	assert_int_equal(link(p, tpath(q, sizeof(q), "g")), 0);
	expect_notes(kq, fd, NOTE_OPEN | NOTE_LINK);
	close(fd);
	close(kq);
}

static void
note_delete_on_every_unlink(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128], q[128];

	(void)state;
	assert_int_equal(link(tpath(p, sizeof(p), "f"),
	    tpath(q, sizeof(q), "g")), 0);
	vn_add(kq, fd, EV_CLEAR, NOTE_ATTRIB | NOTE_LINK | NOTE_DELETE);
	/* FreeBSD's vop_remove_post: NOTE_DELETE even if links remain. */
	assert_int_equal(unlink(q), 0);
	expect_notes(kq, fd, NOTE_DELETE);
	assert_int_equal(unlink(p), 0);
	expect_notes(kq, fd, NOTE_DELETE);
	close(fd);
	close(kq);
}

static void
note_delete_when_renamed_over(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc"), o = make_file("o", "z");
	char p[128], q[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_DELETE | NOTE_RENAME);
	assert_int_equal(rename(tpath(q, sizeof(q), "o"),
	    tpath(p, sizeof(p), "f")), 0);
	expect_notes(kq, fd, NOTE_DELETE);
	close(o);
	close(fd);
	close(kq);
}

static void
note_rename_on_rename(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128], q[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_RENAME | NOTE_DELETE | NOTE_WRITE);
	assert_int_equal(rename(tpath(p, sizeof(p), "f"),
	    tpath(q, sizeof(q), "g")), 0);
	expect_notes(kq, fd, NOTE_RENAME);
	close(fd);
	close(kq);
}

static void
note_open_read_close_on_reader(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc"), r;
	char p[128], buf[4];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_OPEN | NOTE_READ | NOTE_CLOSE |
	    NOTE_CLOSE_WRITE);
	r = open(tpath(p, sizeof(p), "f"), O_RDONLY);
	assert_true(r >= 0);
	expect_notes(kq, fd, NOTE_OPEN);
	assert_int_equal(read(r, buf, sizeof(buf)), 3);
	expect_notes(kq, fd, NOTE_READ);
	close(r);
	expect_notes(kq, fd, NOTE_CLOSE);
	close(fd);
	close(kq);
}

static void
note_close_write_on_writer_close(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc"), w;
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_OPEN | NOTE_CLOSE | NOTE_CLOSE_WRITE);
	w = open(tpath(p, sizeof(p), "f"), O_WRONLY);
	assert_true(w >= 0);
	close(w);
	expect_notes(kq, fd, NOTE_OPEN | NOTE_CLOSE_WRITE);
	close(fd);
	close(kq);
}

/*
 * NOTE_REVOKE when the file system goes away under the knote.  On Linux:
 * a lazy unmount in a private mount namespace (the child does it all and
 * reports through its exit status).
 */
/* The highest descriptor number open in this process. */
static int
max_open_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int hi = 2, self;

	if (d == NULL)
		return 1024;
	self = dirfd(d);
	while ((e = readdir(d)) != NULL) {
		int n = atoi(e->d_name);

		if (n != self && n > hi)
			hi = n;
	}
	closedir(d);
	return hi;
}

static int
revoke_child(int starve)
{
	char dir[] = "/tmp/kqvnode-mnt.XXXXXX", path[128];
	struct timespec ts = { 2, 0 };
	struct kevent ev;
	int fd, kq, n, other;

	if (unshare(CLONE_NEWNS) != 0)
		return 10;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 11;
	if (mkdtemp(dir) == NULL)
		return 12;
	if (mount("kqtest", dir, "tmpfs", 0, "size=64k") != 0)
		return 13;
	snprintf(path, sizeof(path), "%s/file", dir);
	if ((fd = open(path, O_CREAT | O_RDWR, 0644)) < 0)
		return 14;
	if ((kq = kqueue()) < 0)
		return 15;
	EV_SET(&ev, fd, EVFILT_VNODE, EV_ADD | EV_CLEAR,
	    NOTE_REVOKE | NOTE_WRITE, 0, NULL);
	if (starve) {
		/*
		 * The kqueue already watches another file's growth (on
		 * Linux: its inotify instance exists), and no descriptor is
		 * free for the change:
		 * it either works or fails, and when it fails it works
		 * once descriptors are free again.
		 */
		struct kevent o;
		struct rlimit old, low;

		char tmpl[] = "/tmp/kqvnode-other.XXXXXX";

		if ((other = mkstemp(tmpl)) < 0)	/* not on that mount */
			return 22;
		unlink(tmpl);
		EV_SET(&o, other, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
		if (kevent(kq, &o, 1, NULL, 0, NULL) != 0)
			return 23;
		if (getrlimit(RLIMIT_NOFILE, &old) != 0)
			return 24;
		low = old;
		low.rlim_cur = (rlim_t)max_open_fd() + 1;
		if (setrlimit(RLIMIT_NOFILE, &low) != 0)
			return 25;
		int fill[512], nfill = 0, e;

		while (nfill < 512 &&
		    (fill[nfill] = open("/dev/null", O_RDONLY)) >= 0)
			nfill++;	/* the holes below it */
		n = kevent(kq, &ev, 1, NULL, 0, NULL);
		e = errno;
		while (nfill > 0)
			close(fill[--nfill]);
		if (n != 0 && e != EMFILE)
			return 26;
		if (setrlimit(RLIMIT_NOFILE, &old) != 0)
			return 27;
		if (n != 0 && kevent(kq, &ev, 1, NULL, 0, NULL) != 0)
			return 28;
	} else if (kevent(kq, &ev, 1, NULL, 0, NULL) != 0)
		return 16;
	if (kevent(kq, NULL, 0, &ev, 1, &t_zero) != 0)
		return 17;
	if (umount2(dir, MNT_DETACH) != 0)
		return 18;
	n = kevent(kq, NULL, 0, &ev, 1, &ts);
	rmdir(dir);
	if (n != 1)
		return 19;
	if (ev.fflags != NOTE_REVOKE)
		return 20;
	if (!(ev.flags & EV_EOF))
		return 21;
	close(fd);
	close(kq);
	return 0;
}

static void
revoke_in_child(int starve)
{
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		T_EXIT(revoke_child(starve));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) != 0)
		fprintf(stderr, "revoke child failed at step %d\n",
		    WEXITSTATUS(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void
note_revoke_and_eof_on_unmount(void **state)
{
	(void)state;
	revoke_in_child(0);
}

/* An EV_ADD made while no descriptor is free either fails with EMFILE or
   gives a knote that reports NOTE_REVOKE: never a knote that cannot. */
static void
note_revoke_reported_or_the_change_fails_when_no_descriptor_is_free(void **state)
{
	(void)state;
	revoke_in_child(1);
}

/*
 * Thousands of operations on a watched file before the kqueue looks (on
 * Linux more events than inotify queues by default, 16384): FreeBSD has
 * accumulated every note they caused in the knote, and READ on the file
 * reports the whole growth.
 */
static void
thousands_of_changes_before_a_wait_accumulate(void **state)
{
	int kq = kqueue(), fd = make_file("f", NULL), i, n, j;
	unsigned int want = NOTE_WRITE | NOTE_EXTEND | NOTE_OPEN |
	    NOTE_CLOSE_WRITE, got = 0;
	int64_t rdata = -1;
	struct kevent ev[4];
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, want);
	t_change(kq, (uintptr_t)fd, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0,
	    NULL);
	t_expect_none(kq);
	tpath(p, sizeof(p), "f");
	for (i = 0; i < 7000; i++) {
		int w = open(p, O_WRONLY | O_APPEND);

		assert_true(w >= 0);
		write_all(w, "x", 1);
		close(w);
	}
	/* Everything, possibly over a few events; then quiet. */
	while ((n = kevent(kq, NULL, 0, ev, 4,
	    &(struct timespec){ 0, 200000000 })) > 0) {
		for (j = 0; j < n; j++) {
			assert_int_equal(ev[j].ident, (uintptr_t)fd);
			if (ev[j].filter == EVFILT_VNODE)
				got |= ev[j].fflags;
			else {
				assert_int_equal(ev[j].filter, EVFILT_READ);
				rdata = ev[j].data;
			}
		}
	}
	assert_int_equal(n, 0);
	assert_int_equal(got, want);
	assert_int_equal(rdata, 7000);
	/* And the VNODE knote keeps working. */
	t_change(kq, (uintptr_t)fd, EVFILT_READ, EV_DELETE, 0, 0, NULL);
	append_file("f", "y");
	expect_notes(kq, fd, want);
	close(fd);
	close(kq);
}

static void
only_requested_notes_are_reported(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_ATTRIB);
	append_file("f", "x");		/* OPEN, WRITE, EXTEND, CLOSE_WRITE */
	t_expect_none(kq);
	assert_int_equal(chmod(tpath(p, sizeof(p), "f"), 0600), 0);
	expect_notes(kq, fd, NOTE_ATTRIB);
	close(fd);
	close(kq);
}

/* ------------------------------------------------------------------ */
/* Directories                                                        */
/* ------------------------------------------------------------------ */

static int
open_dir(const char *name)
{
	char p[128];
	int fd;

	assert_int_equal(mkdir(tpath(p, sizeof(p), name), 0755), 0);
	fd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	return fd;
}

static void
dir_note_write_on_entry_created_and_removed(void **state)
{
	int kq = kqueue(), d = open_dir("d"), f;
	char p[128];

	(void)state;
	vn_add(kq, d, EV_CLEAR, NOTE_WRITE | NOTE_EXTEND | NOTE_LINK |
	    NOTE_ATTRIB);
	f = open(tpath(p, sizeof(p), "d/entry"), O_CREAT | O_WRONLY, 0644);
	assert_true(f >= 0);
	write_all(f, "data", 4);	/* the entry's own writes: nothing */
	close(f);
	expect_notes(kq, d, NOTE_WRITE);
	t_expect_none(kq);
	assert_int_equal(unlink(p), 0);
	expect_notes(kq, d, NOTE_WRITE);
	close(d);
	close(kq);
}

static void
dir_note_link_on_subdirectory_created_and_removed(void **state)
{
	int kq = kqueue(), d = open_dir("d");
	char p[128];

	(void)state;
	vn_add(kq, d, EV_CLEAR, NOTE_WRITE | NOTE_LINK | NOTE_ATTRIB);
	assert_int_equal(mkdir(tpath(p, sizeof(p), "d/sub"), 0755), 0);
	expect_notes(kq, d, NOTE_WRITE | NOTE_LINK);
	assert_int_equal(rmdir(p), 0);
	expect_notes(kq, d, NOTE_WRITE | NOTE_LINK);
	close(d);
	close(kq);
}

static void
dir_rename_within_is_write_and_move_across_is_extend(void **state)
{
	int kq = kqueue(), d = open_dir("d"), f;
	char p[128], q[128];

	(void)state;
	f = open(tpath(p, sizeof(p), "d/a"), O_CREAT | O_WRONLY, 0644);
	assert_true(f >= 0);
	close(f);
	vn_add(kq, d, EV_CLEAR, NOTE_WRITE | NOTE_EXTEND | NOTE_LINK);
	assert_int_equal(rename(p, tpath(q, sizeof(q), "d/b")), 0);
	expect_notes(kq, d, NOTE_WRITE);
	t_expect_none(kq);
	/* vop_rename_post: a move between directories adds NOTE_EXTEND. */
	assert_int_equal(rename(q, tpath(p, sizeof(p), "out")), 0);
	expect_notes(kq, d, NOTE_WRITE | NOTE_EXTEND);
	assert_int_equal(rename(p, tpath(q, sizeof(q), "d/back")), 0);
	expect_notes(kq, d, NOTE_WRITE | NOTE_EXTEND);
	/* A subdirectory moved out also changes the link count. */
	assert_int_equal(mkdir(tpath(p, sizeof(p), "d/sub"), 0755), 0);
	expect_notes(kq, d, NOTE_WRITE | NOTE_LINK);
	assert_int_equal(rename(p, tpath(q, sizeof(q), "subout")), 0);
	expect_notes(kq, d, NOTE_WRITE | NOTE_EXTEND | NOTE_LINK);
	close(d);
	close(kq);
}

static void
dir_note_attrib_on_chmod(void **state)
{
	int kq = kqueue(), d = open_dir("d");

	(void)state;
	vn_add(kq, d, EV_CLEAR, NOTE_ATTRIB | NOTE_DELETE | NOTE_LINK);
	assert_int_equal(fchmod(d, 0700), 0);
	expect_notes(kq, d, NOTE_ATTRIB);
	close(d);
	close(kq);
}

/* vop_mkdir_post: the directory's hint is NOTE_WRITE | NOTE_LINK. */
static void
dir_note_link_alone_reports_write_and_link_on_mkdir(void **state)
{
	int kq = kqueue(), d = open_dir("d");
	char p[128];

	(void)state;
	vn_add(kq, d, EV_CLEAR, NOTE_LINK);
	assert_int_equal(mkdir(tpath(p, sizeof(p), "d/sub"), 0755), 0);
	expect_notes(kq, d, NOTE_WRITE | NOTE_LINK);
	assert_int_equal(rmdir(p), 0);
	expect_notes(kq, d, NOTE_WRITE | NOTE_LINK);
	close(d);
	close(kq);
}

/* vop_rename_post: a move between directories is NOTE_WRITE|NOTE_EXTEND. */
static void
dir_note_extend_alone_reports_write_and_extend_on_move_in(void **state)
{
	int kq = kqueue(), d = open_dir("d"), f;
	char p[128], q[128];

	(void)state;
	f = open(tpath(p, sizeof(p), "x"), O_CREAT | O_WRONLY, 0644);
	assert_true(f >= 0);
	close(f);
	vn_add(kq, d, EV_CLEAR, NOTE_EXTEND);
	assert_int_equal(rename(p, tpath(q, sizeof(q), "d/x")), 0);
	expect_notes(kq, d, NOTE_WRITE | NOTE_EXTEND);
	t_expect_none(kq);
	close(d);
	close(kq);
}

/* A directory's link count changes without an attribute change. */
static void
dir_note_attrib_alone_on_chmod_after_mkdir(void **state)
{
	int kq = kqueue(), d = open_dir("d");
	char p[128];

	(void)state;
	vn_add(kq, d, EV_CLEAR, NOTE_ATTRIB);
	assert_int_equal(mkdir(tpath(p, sizeof(p), "d/sub"), 0755), 0);
	usleep(50000);
	t_expect_none(kq);
	assert_int_equal(fchmod(d, 0700), 0);
	expect_notes(kq, d, NOTE_ATTRIB);
	close(d);
	close(kq);
}

/* ------------------------------------------------------------------ */
/* Accumulation, EV_CLEAR, EV_DISABLE                                 */
/* ------------------------------------------------------------------ */

static void
fflags_accumulate_until_retrieved(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE | NOTE_EXTEND | NOTE_ATTRIB);
	append_file("f", "x");
	assert_int_equal(chmod(tpath(p, sizeof(p), "f"), 0600), 0);
	usleep(50000);
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND | NOTE_ATTRIB);
	t_expect_none(kq);
	close(fd);
	close(kq);
}

static void
ev_clear_resets_fflags_after_delivery(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE | NOTE_ATTRIB);
	append_file("f", "x");
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND);
	t_expect_none(kq);
	assert_int_equal(chmod(tpath(p, sizeof(p), "f"), 0600), 0);
	expect_notes(kq, fd, NOTE_ATTRIB);
	t_expect_none(kq);
	close(fd);
	close(kq);
}

static void
without_ev_clear_knote_stays_active_with_accumulated_fflags(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128];
	struct kevent ev;

	(void)state;
	vn_add(kq, fd, 0, NOTE_WRITE | NOTE_ATTRIB);
	append_file("f", "x");
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND);
	/* Level: reported again by every call, flags not reset. */
	ev = t_expect_one(kq);
	assert_int_equal(ev.fflags, NOTE_WRITE | NOTE_EXTEND);
	assert_int_equal(chmod(tpath(p, sizeof(p), "f"), 0600), 0);
	usleep(50000);
	ev = wait_one(kq);
	assert_int_equal(ev.fflags, NOTE_WRITE | NOTE_EXTEND |
	    NOTE_ATTRIB);
	ev = t_expect_one(kq);
	assert_int_equal(ev.fflags, NOTE_WRITE | NOTE_EXTEND |
	    NOTE_ATTRIB);
	t_change(kq, (uintptr_t)fd, EVFILT_VNODE, EV_DELETE, 0, 0, NULL);
	t_expect_none(kq);
	close(fd);
	close(kq);
}

static void
fflags_accumulate_while_disabled_and_fire_on_enable(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR | EV_DISABLE, NOTE_WRITE | NOTE_ATTRIB);
	append_file("f", "x");
	assert_int_equal(chmod(tpath(p, sizeof(p), "f"), 0600), 0);
	usleep(100000);
	t_expect_none(kq);
	t_change(kq, (uintptr_t)fd, EVFILT_VNODE, EV_ENABLE, 0, 0, NULL);
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND | NOTE_ATTRIB);
	t_expect_none(kq);
	close(fd);
	close(kq);
}

/*
 * FreeBSD records a change in the knote when it happens, under the fflags
 * of that moment, disabled or not; EV_ENABLE (which, like every change,
 * replaces fflags -- here by 0) then reports it.  No kevent() call comes
 * between the change and EV_ENABLE.
 */
static void
change_while_disabled_reported_by_ev_enable_with_zero_fflags(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abcdef"), w;
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR | EV_DISABLE, NOTE_WRITE | NOTE_ATTRIB);
	w = open(tpath(p, sizeof(p), "f"), O_WRONLY);
	assert_true(w >= 0);
	assert_int_equal(pwrite(w, "XY", 2, 1), 2);
	assert_int_equal(chmod(p, 0600), 0);
	usleep(50000);
	t_change(kq, (uintptr_t)fd, EVFILT_VNODE, EV_ENABLE, 0, 0, NULL);
	expect_notes(kq, fd, NOTE_WRITE | NOTE_ATTRIB);
	t_expect_none(kq);
	close(w);
	close(fd);
	close(kq);
}

/* EV_ADD on the knote must not lose the growth seen before it. */
static void
growth_while_disabled_still_extend_after_ev_add(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");

	(void)state;
	vn_add(kq, fd, EV_CLEAR | EV_DISABLE, NOTE_WRITE | NOTE_EXTEND);
	append_file("f", "more");
	usleep(50000);
	vn_add(kq, fd, EV_ENABLE, NOTE_WRITE | NOTE_EXTEND);
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND);
	t_expect_none(kq);
	close(fd);
	close(kq);
}

static void
ev_add_replaces_interest_but_keeps_fired_flags(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR | EV_DISABLE, NOTE_ATTRIB);
	append_file("f", "x");		/* not asked for */
	assert_int_equal(chmod(tpath(p, sizeof(p), "f"), 0600), 0);
	usleep(50000);
	t_expect_none(kq);
	/* New interest; the NOTE_ATTRIB already seen stays pending. */
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE);
	assert_int_equal(chmod(p, 0644), 0);
	append_file("f", "y");
	usleep(50000);
	t_expect_none(kq);		/* still disabled */
	t_change(kq, (uintptr_t)fd, EVFILT_VNODE, EV_ENABLE, 0, 0, NULL);
	expect_notes(kq, fd, NOTE_ATTRIB | NOTE_WRITE | NOTE_EXTEND);
	t_expect_none(kq);
	close(fd);
	close(kq);
}

static void
ev_oneshot_delivers_once_and_deletes(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	struct kevent kev;

	(void)state;
	vn_add(kq, fd, EV_ONESHOT, NOTE_WRITE);
	append_file("f", "x");
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND);
	append_file("f", "y");
	usleep(50000);
	t_expect_none(kq);
	EV_SET(&kev, fd, EVFILT_VNODE, EV_DELETE, 0, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), -1);
	assert_int_equal(errno, ENOENT);
	close(fd);
	close(kq);
}

/* ------------------------------------------------------------------ */
/* The knote follows the open file                                    */
/* ------------------------------------------------------------------ */

static void
write_after_rename_still_reported(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	char p[128], q[128];

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE | NOTE_RENAME);
	assert_int_equal(rename(tpath(p, sizeof(p), "f"),
	    tpath(q, sizeof(q), "g")), 0);
	expect_notes(kq, fd, NOTE_RENAME);
	append_file("g", "x");
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND);
	/* A new file under the old name is not the watched one. */
	close(make_file("f", "new"));
	append_file("f", "z");
	usleep(50000);
	t_expect_none(kq);
	close(fd);
	close(kq);
}

static void
write_after_unlink_still_reported(void **state)
{
	int kq = kqueue(), fd, w;
	char p[128];

	(void)state;
	fd = make_file("f", "abc");
	w = open(tpath(p, sizeof(p), "f"), O_WRONLY | O_APPEND);
	assert_true(w >= 0);
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE | NOTE_EXTEND | NOTE_DELETE);
	assert_int_equal(unlink(p), 0);
	expect_notes(kq, fd, NOTE_DELETE);
	write_all(w, "more", 4);
	expect_notes(kq, fd, NOTE_WRITE | NOTE_EXTEND);
	close(w);
	close(fd);
	close(kq);
}

static void
ev_delete_after_close_is_ebadf(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE);
	close(fd);
	expect_change_error(kq, (uintptr_t)fd, EV_DELETE, 0, EBADF);
	close(kq);
}

static void
closed_descriptor_knote_is_dropped_not_reported(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc"), fd2;

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE);
	close(fd);
	append_file("f", "x");
	usleep(50000);
	t_expect_none(kq);
	/* The number, reused for another file, has no knote. */
	fd2 = make_file("g", "abc");
	assert_int_equal(fd2, fd);
	expect_change_error(kq, (uintptr_t)fd2, EV_DELETE, 0, ENOENT);
	close(fd2);
	close(kq);
}

static void
ev_add_on_reused_number_watches_the_new_file(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc"), fd2;

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE);
	close(fd);
	fd2 = make_file("g", "abc");
	assert_int_equal(fd2, fd);
	vn_add(kq, fd2, EV_CLEAR, NOTE_WRITE);
	append_file("f", "x");
	usleep(50000);
	t_expect_none(kq);
	append_file("g", "y");
	expect_notes(kq, fd2, NOTE_WRITE | NOTE_EXTEND);
	close(fd2);
	close(kq);
}

static void
closed_file_knote_leaves_knotes_of_reused_number_alone(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc"), sv[2];
	struct kevent ev;

	(void)state;
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE);
	close(fd);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(sv[0], fd);
	t_change(kq, (uintptr_t)sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	append_file("f", "x");		/* the old file: nothing to report */
	usleep(50000);
	t_expect_none(kq);
	write_all(sv[1], "hi", 2);
	ev = wait_one(kq);
	assert_int_equal(ev.ident, (uintptr_t)sv[0]);
	assert_int_equal(ev.filter, EVFILT_READ);
	assert_int_equal(ev.data, 2);
	close(sv[0]);
	close(sv[1]);
	close(kq);
}

static void
two_descriptors_of_one_file_each_get_their_events(void **state)
{
	int kq = kqueue(), a = make_file("f", "abc"), b;
	char p[128];
	struct kevent ev[4];
	int n, i, seen = 0;

	(void)state;
	b = open(tpath(p, sizeof(p), "f"), O_RDONLY);
	assert_true(b >= 0);
	vn_add(kq, a, EV_CLEAR, NOTE_WRITE);
	vn_add(kq, b, EV_CLEAR, NOTE_ATTRIB);
	append_file("f", "x");
	expect_notes(kq, a, NOTE_WRITE | NOTE_EXTEND);
	assert_int_equal(chmod(p, 0600), 0);
	expect_notes(kq, b, NOTE_ATTRIB);
	/* Deleting one knote leaves the other's watch working. */
	t_change(kq, (uintptr_t)b, EVFILT_VNODE, EV_DELETE, 0, 0, NULL);
	append_file("f", "y");
	expect_notes(kq, a, NOTE_WRITE | NOTE_EXTEND);
	vn_add(kq, b, EV_CLEAR, NOTE_WRITE);
	append_file("f", "z");
	usleep(50000);
	n = t_poll(kq, ev, 4);
	for (i = 0; i < n; i++)
		seen |= (int)ev[i].ident == a ? 1 : (int)ev[i].ident == b ? 2 : 4;
	assert_int_equal(n, 2);
	assert_int_equal(seen, 3);
	close(b);
	close(a);
	close(kq);
}

static void
read_growth_and_vnode_share_one_file(void **state)
{
	int kq = kqueue(), fd = make_file("f", "abc");
	struct kevent ev[4];
	char buf[8];
	int n, i, sawr = 0, sawv = 0;

	(void)state;
	assert_int_equal(read(fd, buf, sizeof(buf)), 3);
	t_change(kq, (uintptr_t)fd, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
	vn_add(kq, fd, EV_CLEAR, NOTE_WRITE | NOTE_EXTEND);
	t_expect_none(kq);
	append_file("f", "xy");
	usleep(50000);
	n = kevent(kq, NULL, 0, ev, 4, &(struct timespec){ 2, 0 });
	for (i = 0; i < n; i++) {
		if (ev[i].filter == EVFILT_READ) {
			assert_int_equal(ev[i].data, 2);
			sawr = 1;
		} else if (ev[i].filter == EVFILT_VNODE) {
			assert_int_equal(ev[i].fflags, NOTE_WRITE | NOTE_EXTEND);
			sawv = 1;
		}
	}
	assert_true(sawr && sawv);
	/* Deleting the VNODE knote keeps READ growth notification. */
	t_change(kq, (uintptr_t)fd, EVFILT_VNODE, EV_DELETE, 0, 0, NULL);
	assert_int_equal(read(fd, buf, sizeof(buf)), 2);
	t_expect_none(kq);
	append_file("f", "z");
	ev[0] = wait_one(kq);
	assert_int_equal(ev[0].filter, EVFILT_READ);
	assert_int_equal(ev[0].data, 1);
	close(fd);
	close(kq);
}

/* ------------------------------------------------------------------ */
/* The paper: Figure 8                                                */
/* ------------------------------------------------------------------ */

/*
 * Lemon, "Kqueue: A generic and scalable event notification facility",
 * Figure 8, with printf going to a buffer and the endless loop bounded.
 */
static char fig8_out[512];

static void
fig8_printf(const char *s)
{
	strncat(fig8_out, s, sizeof(fig8_out) - strlen(fig8_out) - 1);
}

static void
paper_figure8_file_watcher(void **state)
{
	int kq = kqueue(), fd = make_file("watched", "log\n"), n, round;
	char p[128], q[128];
	struct kevent ev;
	struct timespec nullts = { 0, 0 };

	(void)state;
	EV_SET(&ev, fd, EVFILT_VNODE,
	    EV_ADD | EV_ENABLE | EV_CLEAR,
	    NOTE_RENAME | NOTE_WRITE |
	    NOTE_DELETE | NOTE_ATTRIB, 0, 0);
	assert_int_equal(kevent(kq, &ev, 1, NULL, 0, &nullts), 0);

	for (round = 0; round < 4; round++) {
		switch (round) {
		case 0:
			append_file("watched", "line\n");
			break;
		case 1:
			assert_int_equal(chmod(tpath(p, sizeof(p), "watched"),
			    0600), 0);
			break;
		case 2:
			assert_int_equal(rename(tpath(p, sizeof(p), "watched"),
			    tpath(q, sizeof(q), "watched.1")), 0);
			break;
		case 3:
			assert_int_equal(unlink(tpath(q, sizeof(q),
			    "watched.1")), 0);
			break;
		}
		n = kevent(kq, NULL, 0, &ev, 1, NULL);

		if (n > 0) {
			fig8_printf("The file was");
			if (ev.fflags & NOTE_RENAME)
				fig8_printf(" renamed");
			if (ev.fflags & NOTE_WRITE)
				fig8_printf(" written");
			if (ev.fflags & NOTE_DELETE)
				fig8_printf(" deleted");
			if (ev.fflags & NOTE_ATTRIB)
				fig8_printf(" chmod/chowned");
			fig8_printf("\n");
		}
	}
	assert_string_equal(fig8_out,
	    "The file was written\n"
	    "The file was chmod/chowned\n"
	    "The file was renamed\n"
	    "The file was deleted\n");
	close(fd);
	close(kq);
}

/* ------------------------------------------------------------------ */
/* Scale and resources                                                */
/* ------------------------------------------------------------------ */

static void
two_thousand_files_in_one_kqueue(void **state)
{
	enum { N = 2000 };
	int kq = kqueue(), *fds = calloc(N, sizeof(int)), i;
	char name[32];

	(void)state;
	raise_nofile(N + 64);
	assert_non_null(fds);
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		fds[i] = make_file(name, NULL);
		vn_add(kq, fds[i], EV_CLEAR, NOTE_WRITE | NOTE_DELETE);
	}
	t_expect_none(kq);
	snprintf(name, sizeof(name), "f%d", N - 1);
	append_file(name, "x");
	expect_notes(kq, fds[N - 1], NOTE_WRITE | NOTE_EXTEND);
	append_file("f0", "x");
	expect_notes(kq, fds[0], NOTE_WRITE | NOTE_EXTEND);
	t_expect_none(kq);
	for (i = 0; i < N; i++)
		close(fds[i]);
	free(fds);
	close(kq);
}

static void
three_thousand_knotes_across_twenty_kqueues(void **state)
{
	enum { NKQ = 20, PER = 150, N = NKQ * PER };
	int kqs[NKQ], *fds = calloc(N, sizeof(int)), i, k;
	char name[32];

	(void)state;
	raise_nofile(N + 128);
	assert_non_null(fds);
	for (k = 0; k < NKQ; k++) {
		kqs[k] = kqueue();
		assert_true(kqs[k] >= 0);
	}
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "g%d", i);
		fds[i] = make_file(name, NULL);
		vn_add(kqs[i % NKQ], fds[i], EV_CLEAR, NOTE_WRITE);
	}
	/* Write to the last file of every kqueue. */
	for (k = 0; k < NKQ; k++) {
		i = N - NKQ + k;
		snprintf(name, sizeof(name), "g%d", i);
		append_file(name, "x");
	}
	for (k = 0; k < NKQ; k++) {
		expect_notes(kqs[k], fds[N - NKQ + k], NOTE_WRITE | NOTE_EXTEND);
		t_expect_none(kqs[k]);
	}
	for (i = 0; i < N; i++)
		close(fds[i]);
	for (k = 0; k < NKQ; k++)
		close(kqs[k]);
	free(fds);
}

static void
kqueue_close_with_vnode_knotes_leaks_no_descriptors(void **state)
{
	int before, after, round, fd = make_file("f", "abc"), d = open_dir("d");

	(void)state;
	/*
	 * A closed kqueue is freed lazily (kqueue.2), so one closed kqueue's
	 * descriptors may be open at the end: have one like it before
	 * counting too, also when this test runs alone in its process.
	 */
	{
		int kq = kqueue();

		assert_true(kq >= 0);
		vn_add(kq, fd, EV_CLEAR, NOTE_WRITE | NOTE_READ);
		vn_add(kq, d, 0, NOTE_WRITE | NOTE_LINK);
		close(kq);
	}
	before = t_count_fds();
	for (round = 0; round < 200; round++) {
		int kq = kqueue();

		assert_true(kq >= 0);
		vn_add(kq, fd, EV_CLEAR, NOTE_WRITE | NOTE_READ);
		vn_add(kq, d, 0, NOTE_WRITE | NOTE_LINK);
		if (round % 2)
			t_change(kq, (uintptr_t)fd, EVFILT_VNODE, EV_DELETE,
			    0, 0, NULL);
		close(kq);
	}
	after = t_count_fds();
	assert_int_equal(after, before);
	close(fd);
	close(d);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_dir, teardown_dir)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(vnode_on_pipe_or_socket_is_einval),
		T(vnode_on_bad_descriptor_is_ebadf),
		T(ev_add_registers_quietly_until_something_happens),
		T(note_write_and_extend_on_append),
		T(note_write_without_extend_on_overwrite),
		T(extending_write_reports_write_and_extend_to_note_write_alone),
		T(extending_write_reports_write_and_extend_to_note_extend_alone),
		T(note_attrib_on_chmod),
		T(note_link_on_hard_link),
		T(append_reports_open_write_extend_and_close_write),
		T(link_after_open_reports_note_link),
		T(note_delete_on_every_unlink),
		T(note_delete_when_renamed_over),
		T(note_rename_on_rename),
		T(note_open_read_close_on_reader),
		T(note_close_write_on_writer_close),
		T(note_revoke_and_eof_on_unmount),
		T(note_revoke_reported_or_the_change_fails_when_no_descriptor_is_free),
		T(only_requested_notes_are_reported),
		T(thousands_of_changes_before_a_wait_accumulate),
		T(dir_note_write_on_entry_created_and_removed),
		T(dir_note_link_on_subdirectory_created_and_removed),
		T(dir_rename_within_is_write_and_move_across_is_extend),
		T(dir_note_attrib_on_chmod),
		T(dir_note_link_alone_reports_write_and_link_on_mkdir),
		T(dir_note_extend_alone_reports_write_and_extend_on_move_in),
		T(dir_note_attrib_alone_on_chmod_after_mkdir),
		T(fflags_accumulate_until_retrieved),
		T(ev_clear_resets_fflags_after_delivery),
		T(without_ev_clear_knote_stays_active_with_accumulated_fflags),
		T(fflags_accumulate_while_disabled_and_fire_on_enable),
		T(change_while_disabled_reported_by_ev_enable_with_zero_fflags),
		T(growth_while_disabled_still_extend_after_ev_add),
		T(ev_add_replaces_interest_but_keeps_fired_flags),
		T(ev_oneshot_delivers_once_and_deletes),
		T(write_after_rename_still_reported),
		T(write_after_unlink_still_reported),
		T(ev_delete_after_close_is_ebadf),
		T(closed_descriptor_knote_is_dropped_not_reported),
		T(ev_add_on_reused_number_watches_the_new_file),
		T(closed_file_knote_leaves_knotes_of_reused_number_alone),
		T(two_descriptors_of_one_file_each_get_their_events),
		T(read_growth_and_vnode_share_one_file),
		T(paper_figure8_file_watcher),
		T(two_thousand_files_in_one_kqueue),
		T(three_thousand_knotes_across_twenty_kqueues),
		T(kqueue_close_with_vnode_knotes_leaks_no_descriptors),
	};

	return t_run_group(tests, NULL, NULL);
}
