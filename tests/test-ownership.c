/*
 * test-ownership.c -- kq closes no file of the program's, and leaks none
 * of its own.
 *
 * On FreeBSD a kqueue holds no descriptor numbers of its own, so nothing
 * the kqueue does can close or replace a file the program opened.  kq
 * holds several (kevent.2, LINUX NOTES, last item), and follows the
 * program's descriptors by number, also when the program closes them
 * behind the C library's back (the raw system call) and the kernel hands
 * the number to another file (LINUX NOTES, item 1).
 *
 * A randomized run checks that against an oracle that is simply the
 * program's own record of its files (number -> inode): kqueues made and
 * closed, knotes of most filters added and deleted, the program's files
 * opened, written, closed with close() or with the raw system call (and
 * the numbers reused), dup2()ed over free numbers, and waits.  After every
 * step each recorded file is still at its number; at the end every close
 * succeeds and the process holds the descriptors it started with.  Seeds
 * are fixed (replay one with KQ_OWN_SEED=N, KQ_OWN_OPS=M).  It also
 * passes on FreeBSD.  (kq's own numbers closed raw: test-rawclose.c.)
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "helpers.h"

#define O_MAXFILES	48
#define O_MAXKQ		3
#define O_HI		256	/* numbers looked at */

struct ofile {
	int	fd;
	dev_t	dev;
	ino_t	ino;
	int	kind;		/* 0 pipe read end, 1 pipe write end, 2 socket,
				   3 file */
};

static struct ofile files[O_MAXFILES];
static int nfiles, kqs[O_MAXKQ], nkq, child_go[2], vfile;
static pid_t child;
static unsigned char baseline[O_HI];
static uint64_t rng;
static char tdir[64];

static unsigned
rn(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void
record(int fd, int kind)
{
	struct stat st;

	assert_true(nfiles < O_MAXFILES);
	assert_int_equal(fstat(fd, &st), 0);
	files[nfiles++] = (struct ofile){ fd, st.st_dev, st.st_ino, kind };
}

/* The oracle: every file of the program's is still at its number. */
static void
check_files(unsigned long long seed, int step, const char *op)
{
	for (int i = 0; i < nfiles; i++) {
		struct stat st;

		if (fstat(files[i].fd, &st) != 0 ||
		    st.st_dev != files[i].dev || st.st_ino != files[i].ino)
			fail_msg("seed %llu step %d (%s): the program's file at "
			    "%d was %s", seed, step, op, files[i].fd,
			    fcntl(files[i].fd, F_GETFD) < 0 ? "closed" :
			    "replaced");
	}
}

/* A number that is not open. */
static int
pick_free(void)
{
	for (int k = 0; k < 16; k++) {
		int fd = 3 + (int)rn(O_HI - 3);

		if (!baseline[fd] && fcntl(fd, F_GETFD) < 0)
			return fd;
	}
	return -1;
}

static int
change(int kq, uintptr_t ident, short filter, unsigned short flags,
    unsigned int fflags, intptr_t data)
{
	struct kevent c;

	EV_SET(&c, ident, filter, flags, fflags, data, NULL);
	return kevent(kq, &c, 1, NULL, 0, NULL);
}

static int
file_of_kind(int kind)
{
	int cand[O_MAXFILES], n = 0;

	for (int i = 0; i < nfiles; i++)
		if (kind < 0 || files[i].kind == kind)
			cand[n++] = i;
	return n == 0 ? -1 : cand[rn((unsigned)n)];
}

static void
add_knote(int kq)
{
	int i;

	switch (rn(9)) {
	case 0:
		(void)change(kq, 1 + rn(3), EVFILT_TIMER, EV_ADD, 0,
		    1 + rn(50));
		break;
	case 1:
		(void)change(kq, 1 + rn(3), EVFILT_USER, EV_ADD | EV_CLEAR, 0,
		    0);
		break;
	case 2:
		(void)change(kq, (uintptr_t)child, EVFILT_PROC, EV_ADD,
		    NOTE_EXIT, 0);
		break;
	case 3:
		(void)change(kq, (uintptr_t)vfile, EVFILT_VNODE,
		    EV_ADD | EV_CLEAR, NOTE_WRITE, 0);
		break;
	case 4:
		if ((i = file_of_kind(2)) >= 0)
			(void)change(kq, (uintptr_t)files[i].fd, EVFILT_EMPTY,
			    EV_ADD, 0, 0);
		break;
	case 5:
		(void)change(kq, SIGUSR2, EVFILT_SIGNAL, EV_ADD, 0, 0);
		break;
	case 6:
		if ((i = file_of_kind(1)) >= 0)
			(void)change(kq, (uintptr_t)files[i].fd, EVFILT_WRITE,
			    EV_ADD, 0, 0);
		break;
	default:
		if ((i = file_of_kind(rn(2) ? 0 : 2)) >= 0)
			(void)change(kq, (uintptr_t)files[i].fd, EVFILT_READ,
			    EV_ADD, 0, 0);
		break;
	}
}

static void
del_knote(int kq)
{
	static const short filt[] = { EVFILT_TIMER, EVFILT_USER, EVFILT_PROC,
	    EVFILT_VNODE, EVFILT_EMPTY, EVFILT_SIGNAL, EVFILT_WRITE,
	    EVFILT_READ };
	short f = filt[rn(8)];
	uintptr_t id;
	int i;

	switch (f) {
	case EVFILT_TIMER:
	case EVFILT_USER:
		id = 1 + rn(3);
		break;
	case EVFILT_PROC:
		id = (uintptr_t)child;
		break;
	case EVFILT_VNODE:
		id = (uintptr_t)vfile;
		break;
	case EVFILT_SIGNAL:
		id = SIGUSR2;
		break;
	default:
		if ((i = file_of_kind(-1)) < 0)
			return;
		id = (uintptr_t)files[i].fd;
	}
	(void)change(kq, id, f, EV_DELETE, 0, 0);	/* ENOENT is fine */
}

static void
open_files(void)
{
	int p[2];
	char path[96];

	if (nfiles + 2 > O_MAXFILES)
		return;
	switch (rn(3)) {
	case 0:
		assert_int_equal(pipe(p), 0);
		record(p[0], 0);
		record(p[1], 1);
		break;
	case 1:
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, p), 0);
		record(p[0], 2);
		record(p[1], 2);
		break;
	default:
		snprintf(path, sizeof(path), "%s/f", tdir);
		assert_true((p[0] = open(path, O_CREAT | O_RDWR, 0600)) >= 0);
		record(p[0], 3);
	}
}

static void
close_file(void)
{
	int i = file_of_kind(-1);

	/* The vnode knotes' file and the child's pipe stay. */
	if (i < 0 || files[i].fd == vfile || files[i].fd == child_go[1])
		return;
	if (close(files[i].fd) != 0)
		fail_msg("close(%d) of the program's file: %s", files[i].fd,
		    strerror(errno));
	files[i] = files[--nfiles];
}

static void
own_run(unsigned long long seed, int nops)
{
	struct kevent ev[16];
	char path[96];
	const char *op = "start";
	int step, fd, i, before;

	rng = seed * 2654435761u + 1;
	/* The eventfd that all kqueues' signal knotes share stays (the
	   process's, kevent.2): made before the count. */
	assert_true((fd = kqueue()) >= 0);
	(void)change(fd, SIGUSR2, EVFILT_SIGNAL, EV_ADD, 0, 0);
	assert_int_equal(close(fd), 0);
	before = t_count_fds();
	memset(baseline, 0, sizeof(baseline));
	for (fd = 0; fd < O_HI; fd++)
		baseline[fd] = fcntl(fd, F_GETFD) >= 0;
	nfiles = nkq = 0;
	child = t_spawn_waiting(child_go, 0);
	record(child_go[1], 1);
	snprintf(path, sizeof(path), "%s/v", tdir);
	assert_true((vfile = open(path, O_CREAT | O_RDWR, 0600)) >= 0);
	record(vfile, 3);
	for (step = 0; step < nops; step++) {
		int k = nkq > 0 ? kqs[rn((unsigned)nkq)] : -1;

		switch (rn(12)) {
		case 0:
			op = "kqueue";
			if (nkq < O_MAXKQ && (fd = kqueue()) >= 0)
				kqs[nkq++] = fd;
			break;
		case 1:
			op = "close of a kqueue";
			if (nkq > 0) {
				i = (int)rn((unsigned)nkq);
				if (close(kqs[i]) != 0)
					fail_msg("close(%d) of a kqueue: %s",
					    kqs[i], strerror(errno));
				kqs[i] = kqs[--nkq];
			}
			break;
		case 2:
		case 3:
			op = "EV_ADD";
			if (k >= 0)
				add_knote(k);
			break;
		case 4:
			op = "EV_DELETE";
			if (k >= 0)
				del_knote(k);
			break;
		case 5:
			op = "raw close of the program's file";
			if ((i = file_of_kind(-1)) >= 0 &&
			    files[i].fd != vfile && files[i].fd != child_go[1]) {
				assert_int_equal(syscall(SYS_close, files[i].fd),
				    0);
				files[i] = files[--nfiles];
			}
			break;
		case 6:
			op = "open";
			open_files();
			break;
		case 7:
			op = "close";
			close_file();
			break;
		case 8:
			op = "dup2 onto a free number";
			if (nfiles < O_MAXFILES &&
			    (i = file_of_kind(-1)) >= 0 &&
			    (fd = pick_free()) >= 0 &&
			    dup2(files[i].fd, fd) == fd)
				record(fd, files[i].kind);
			break;
		case 9:
			op = "write";
			if ((i = file_of_kind(rn(2) ? 1 : 2)) >= 0 &&
			    files[i].fd != child_go[1])
				(void)!write(files[i].fd, "x", 1);
			if (rn(4) == 0)
				(void)!write(vfile, "v", 1);
			break;
		default:
			op = "kevent";
			if (k >= 0)
				(void)kevent(k, NULL, 0, ev, 16, &t_zero);
			break;
		}
		check_files(seed, step, op);
	}
	for (i = 0; i < nkq; i++)
		if (close(kqs[i]) != 0)
			fail_msg("seed %llu: close(%d) of a kqueue at the end: "
			    "%s", seed, kqs[i], strerror(errno));
	nkq = 0;
	check_files(seed, step, "the kqueues' close");
	while (nfiles > 0) {
		struct ofile *f = &files[--nfiles];

		if (close(f->fd) != 0)
			fail_msg("seed %llu: close(%d) of the program's file at "
			    "the end: %s", seed, f->fd, strerror(errno));
	}
	assert_int_equal(waitpid(child, &i, 0), child);
	if (t_count_fds() != before) {
		for (fd = 3; fd < O_HI; fd++) {
			char p[64], l[128];
			ssize_t r;

			snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
			if (!baseline[fd] &&
			    (r = readlink(p, l, sizeof(l) - 1)) > 0) {
				l[r] = '\0';
				fprintf(stderr, "left open: %d -> %s\n", fd, l);
			}
		}
		fail_msg("seed %llu: %d descriptors before, %d after", seed,
		    before, t_count_fds());
	}
}

static void
random_changes_and_closes_never_cost_the_program_a_file_nor_leak(
    void **state)
{
	const char *s = getenv("KQ_OWN_SEED"), *o = getenv("KQ_OWN_OPS");
	int nops = o != NULL ? atoi(o) : 400;

	(void)state;
	signal(SIGUSR2, SIG_IGN);
	if (s != NULL) {
		own_run(strtoull(s, NULL, 10), nops);
		return;
	}
	for (unsigned long long seed = 1; seed <= 24; seed++)
		own_run(seed, nops);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(tdir, sizeof(tdir), "/tmp/kqown.XXXXXX");
	assert_non_null(mkdtemp(tdir));
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tdir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_changes_and_closes_never_cost_the_program_a_file_nor_leak),
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, setup, teardown);
}
