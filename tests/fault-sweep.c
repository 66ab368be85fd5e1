/*
 * fault-sweep.c -- fault injection against a fixed scenario of every
 * filter (make check-fault; needs the SAN=fault build, see src/fault.h).
 *
 * For each scenario and each kind of fault (the k-th allocation fails with
 * ENOMEM, the k-th descriptor kq creates with EMFILE, the k-th blocking
 * wait of kevent() with EINTR), k = 1, 2, ... until a run completes
 * without reaching the k-th call.  Each k runs in a forked child under a
 * time limit, which:
 *   - creates a kqueue and runs rounds of the scenario on it: set up the
 *     object, register (EV_ADD), make the event happen, wait for it, delete
 *     the registration, tear the object down;
 *   - accepts from each call either success or, only when the fault hit
 *     during that very call, its documented error: kqueue() EMFILE/ENFILE/
 *     ENOMEM, kevent() -1 or an EV_ERROR entry with ENOMEM/EMFILE/ENFILE,
 *     EINTR only from a kevent() that was allowed to block; then retries;
 *   - requires a registration that succeeded to report its event (no
 *     silent success), and a round after the one where the fault hit to
 *     work from start to end on the same kqueue (it recovers);
 *   - closes everything and requires the descriptor count back at its
 *     value before kqueue(); LeakSanitizer checks the memory at exit.
 * The registrations alternate between plain errors (nevents 0) and
 * EV_RECEIPT entries: each scenario is swept in both modes.  Before them,
 * "first-kqueue" sweeps a process's first kqueue(), which also makes the
 * registry's first chunk: it fails cleanly or returns a kqueue that works
 * (it once returned one no kevent() could find, and leaked it).
 *
 * Exit codes of a child: 10 the k-th call was never reached, 11 it was
 * and every check held, 2 a check failed (printed), other: a crash, a
 * sanitizer's report (1; 23 for LeakSanitizer) or a hang.  Prints "fault: N passed, M failed" at the end, one
 * pass or failure per (scenario, kind, mode) sweep.
 *   KQ_FAULT_ONLY=name     run only the scenarios whose name contains name
 *   KQ_FAULT_MAXK=n        sweep at most n values of k (default 400)
 *   KQ_FAULT_VERBOSE=1     print every k
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* Exported by the SAN=fault build of libkq (src/fault.h). */
#define KQ_FAULT_ALLOC	0
#define KQ_FAULT_FD	1
#define KQ_FAULT_EINTR	2
void	kq_fault_set(int kind, long k);
long	kq_fault_count(int kind);

static const char *const kind_name[] = { "alloc", "fd", "eintr" };

static int kind;	/* the fault of this child */
static long fault_k;	/* which call fails */
static int receipt;	/* register with EV_RECEIPT */
static const char *scen_name;

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s/%s%s k=%ld: ", scen_name, kind_name[kind],
	    receipt ? "/receipt" : "", fault_k);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(2);
}

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

/* Did the k-th call of our kind happen between the two counts? */
static int
hit_between(long before, long after)
{
	return before < fault_k && after >= fault_k;
}

static int
err_allowed(int e, int blocking)
{
	switch (kind) {
	case KQ_FAULT_ALLOC:
		return e == ENOMEM;
	case KQ_FAULT_FD:
		return e == EMFILE || e == ENFILE || e == ENOMEM;
	default:
		return e == EINTR && blocking;
	}
}

/*
 * A library call that may fail only because of the fault: returns 0 on
 * success, 1 on an allowed failure (retry), dies otherwise.
 */
static int
check_err(const char *what, long before, int e, int blocking)
{
	if (!hit_between(before, kq_fault_count(kind)))
		die("%s: %s without a fault", what, strerror(e));
	if (!err_allowed(e, blocking))
		die("%s: %s is not a documented error for this fault", what,
		    strerror(e));
	return 1;
}

static int
xkqueue(void)
{
	for (int tries = 0; tries < 4; tries++) {
		long before = kq_fault_count(kind);
		int kq = kqueue();

		if (kq >= 0)
			return kq;
		check_err("kqueue()", before, errno, 0);
	}
	die("kqueue() keeps failing");
}

/* Apply one change; retry allowed failures.  ENOENT/EBADF ok if okmiss. */
static void
xchange(int kq, const struct kevent *kev0, int okmiss)
{
	for (int tries = 0; tries < 4; tries++) {
		struct kevent kev = *kev0, out;
		long before = kq_fault_count(kind);
		int r, e;

		if (receipt) {
			kev.flags |= EV_RECEIPT;
			r = kevent(kq, &kev, 1, &out, 1, NULL);
			if (r < 0)
				e = errno;
			else if (r != 1 || !(out.flags & EV_ERROR))
				die("EV_RECEIPT change gave %d entries", r);
			else
				e = (int)out.data;
		} else {
			r = kevent(kq, &kev, 1, NULL, 0, NULL);
			e = r < 0 ? errno : 0;
		}
		if (e == 0)
			return;
		if (okmiss && (e == ENOENT || e == EBADF) &&
		    !hit_between(before, kq_fault_count(kind)))
			return;
		check_err("kevent(change)", before, e, 0);
	}
	die("kevent(change) keeps failing");
}

/*
 * Wait up to ms for the event (ident, filter); allowed failures are
 * retried.  Returns 1 when it came, 0 on timeout.
 */
static int
xwait(int kq, uintptr_t ident, short filter, int ms, struct kevent *got)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct kevent ev[8];
		struct timespec ts;
		long before = kq_fault_count(kind), left;
		int r, i;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = ms - ((now.tv_sec - start.tv_sec) * 1000 +
		    (now.tv_nsec - start.tv_nsec) / 1000000);
		if (left < 0)
			left = 0;
		ts.tv_sec = left / 1000;
		ts.tv_nsec = (left % 1000) * 1000000;
		r = kevent(kq, NULL, 0, ev, 8, &ts);
		if (r < 0) {
			check_err("kevent(wait)", before, errno, left > 0);
			continue;
		}
		for (i = 0; i < r; i++) {
			if (ev[i].flags & EV_ERROR)
				die("wait: EV_ERROR entry ident=%ju data=%jd",
				    (uintmax_t)ev[i].ident, (intmax_t)ev[i].data);
			if (ev[i].ident == ident && ev[i].filter == filter) {
				if (got != NULL)
					*got = ev[i];
				return 1;
			}
		}
		if (r == 0 && left == 0)
			return 0;
	}
}

/* ---- the scenarios ---- */

struct obj {
	int	 fd[2];		/* pipe or socketpair */
	int	 fd2;		/* file, pidfd, inner kqueue */
	pid_t	 pid;		/* child */
	int	 gate[2];	/* the child exits when gate[1] closes */
	char	 path[64];
};

struct scen {
	const char *name;
	int	 immediate;	/* ready as soon as registered */
	int	(*setup)(int kq, struct obj *);	/* 0, or -1: skip */
	void	(*kev)(struct obj *, struct kevent *);
	void	(*fire)(int kq, struct obj *);
	void	(*teardown)(int kq, struct obj *);
};

static int
mk_pipe(int kq, struct obj *o)
{
	return pipe2(o->fd, O_NONBLOCK | O_CLOEXEC);
}

static int
mk_sock(int kq, struct obj *o)
{
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0, o->fd);
}

static void
close_pair(int kq, struct obj *o)
{
	close(o->fd[0]);
	close(o->fd[1]);
}

static void
fire_write(int kq, struct obj *o)
{
	if (write(o->fd[1], "x", 1) != 1)
		die("write: %s", strerror(errno));
}

static void
fire_none(int kq, struct obj *o)
{
}

static void
kev_read0(struct obj *o, struct kevent *k)
{
	EV_SET(k, o->fd[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
}

static void
kev_write1(struct obj *o, struct kevent *k)
{
	EV_SET(k, o->fd[1], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
}

static void
kev_write0(struct obj *o, struct kevent *k)
{
	EV_SET(k, o->fd[0], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
}

static void
kev_empty0(struct obj *o, struct kevent *k)
{
	EV_SET(k, o->fd[0], EVFILT_EMPTY, EV_ADD, 0, 0, NULL);
}

/* EVFILT_TIMER: 20 ms one-shot. */
static int
mk_nothing(int kq, struct obj *o)
{
	return 0;
}

static void
kev_timer(struct obj *o, struct kevent *k)
{
	EV_SET(k, 7, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 50, NULL);
}

static void
del_timer(int kq, struct obj *o)
{
	struct kevent k;

	EV_SET(&k, 7, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
	xchange(kq, &k, 1);
}

/* EVFILT_USER */
static void
kev_user(struct obj *o, struct kevent *k)
{
	EV_SET(k, 9, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
}

static void
fire_user(int kq, struct obj *o)
{
	struct kevent k;

	EV_SET(&k, 9, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	xchange(kq, &k, 0);
}

static void
del_user(int kq, struct obj *o)
{
	struct kevent k;

	EV_SET(&k, 9, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	xchange(kq, &k, 1);
}

/* EVFILT_SIGNAL: SIGUSR1, ignored by the application. */
static int
mk_signal(int kq, struct obj *o)
{
	signal(SIGUSR1, SIG_IGN);
	return 0;
}

static void
kev_signal(struct obj *o, struct kevent *k)
{
	EV_SET(k, SIGUSR1, EVFILT_SIGNAL, EV_ADD | EV_CLEAR, 0, 0, NULL);
}

static void
fire_signal(int kq, struct obj *o)
{
	kill(getpid(), SIGUSR1);
}

static void
del_signal(int kq, struct obj *o)
{
	struct kevent k;

	EV_SET(&k, SIGUSR1, EVFILT_SIGNAL, EV_DELETE, 0, 0, NULL);
	xchange(kq, &k, 1);
}

/* EVFILT_PROC / EVFILT_PROCDESC: a child that exits when its gate closes. */
static int
mk_child(int kq, struct obj *o)
{
	char c;

	if (pipe2(o->gate, O_CLOEXEC) < 0)
		return -1;
	o->pid = fork();
	if (o->pid < 0)
		die("fork: %s", strerror(errno));
	if (o->pid == 0) {
		close(o->gate[1]);
		while (read(o->gate[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(7);
	}
	close(o->gate[0]);
	return 0;
}

static int
mk_pidfd(int kq, struct obj *o)
{
	if (mk_child(kq, o) < 0)
		return -1;
	o->fd2 = (int)syscall(SYS_pidfd_open, o->pid, 0);
	if (o->fd2 < 0)
		die("pidfd_open: %s", strerror(errno));
	return 0;
}

static void
kev_proc(struct obj *o, struct kevent *k)
{
	EV_SET(k, o->pid, EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, NULL);
}

static void
kev_procdesc(struct obj *o, struct kevent *k)
{
	EV_SET(k, o->fd2, EVFILT_PROCDESC, EV_ADD, NOTE_EXIT, 0, NULL);
}

static void
fire_child(int kq, struct obj *o)
{
	close(o->gate[1]);
	o->gate[1] = -1;
}

static void
reap_child(int kq, struct obj *o)
{
	struct kevent k;

	if (o->gate[1] >= 0)
		close(o->gate[1]);
	EV_SET(&k, o->pid, EVFILT_PROC, EV_DELETE, 0, 0, NULL);
	xchange(kq, &k, 1);
	while (waitpid(o->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static void
reap_pidfd(int kq, struct obj *o)
{
	if (o->gate[1] >= 0)
		close(o->gate[1]);
	close(o->fd2);	/* drops the knote */
	while (waitpid(o->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* EVFILT_VNODE and READ on a regular file: a temporary file. */
static int
mk_file(int kq, struct obj *o)
{
	snprintf(o->path, sizeof(o->path), "/tmp/kq-fault-%d-XXXXXX",
	    (int)getpid());
	o->fd2 = mkstemp(o->path);
	if (o->fd2 < 0)
		die("mkstemp: %s", strerror(errno));
	return 0;
}

static void
kev_vnode(struct obj *o, struct kevent *k)
{
	EV_SET(k, o->fd2, EVFILT_VNODE, EV_ADD | EV_CLEAR,
	    NOTE_WRITE | NOTE_EXTEND, 0, NULL);
}

static void
kev_fileread(struct obj *o, struct kevent *k)
{
	EV_SET(k, o->fd2, EVFILT_READ, EV_ADD, 0, 0, NULL);
}

static void
fire_file(int kq, struct obj *o)
{
	int fd = open(o->path, O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0 || write(fd, "data", 4) != 4)
		die("append: %s", strerror(errno));
	close(fd);
}

static void
rm_file(int kq, struct obj *o)
{
	close(o->fd2);
	unlink(o->path);
}

/* A nested kqueue: READ on an inner kqueue whose user event fires. */
static int
mk_inner(int kq, struct obj *o)
{
	struct kevent k;

	o->fd2 = xkqueue();
	EV_SET(&k, 3, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	xchange(o->fd2, &k, 0);
	return 0;
}

static void
kev_inner(struct obj *o, struct kevent *k)
{
	EV_SET(k, o->fd2, EVFILT_READ, EV_ADD, 0, 0, NULL);
}

static void
fire_inner(int kq, struct obj *o)
{
	struct kevent k;

	EV_SET(&k, 3, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	xchange(o->fd2, &k, 0);
}

static void
close_inner(int kq, struct obj *o)
{
	close(o->fd2);
}

static const struct scen scens[] = {
	{ "read-pipe", 0, mk_pipe, kev_read0, fire_write, close_pair },
	{ "write-pipe", 1, mk_pipe, kev_write1, fire_none, close_pair },
	{ "read-socket", 0, mk_sock, kev_read0, fire_write, close_pair },
	{ "write-socket", 1, mk_sock, kev_write0, fire_none, close_pair },
	{ "empty-socket", 1, mk_sock, kev_empty0, fire_none, close_pair },
	{ "timer", 0, mk_nothing, kev_timer, fire_none, del_timer },
	{ "user", 0, mk_nothing, kev_user, fire_user, del_user },
	{ "signal", 0, mk_signal, kev_signal, fire_signal, del_signal },
	{ "proc", 0, mk_child, kev_proc, fire_child, reap_child },
	{ "procdesc", 0, mk_pidfd, kev_procdesc, fire_child, reap_pidfd },
	{ "vnode", 0, mk_file, kev_vnode, fire_file, rm_file },
	{ "read-file", 0, mk_file, kev_fileread, fire_file, rm_file },
	{ "nested-kqueue", 0, mk_inner, kev_inner, fire_inner, close_inner },
};

/* One round on kq: returns after the event was seen and all is undone. */
static void
round_once(int kq, const struct scen *s, int r)
{
	struct obj o;
	struct kevent k, got;

	memset(&o, 0, sizeof(o));
	o.fd2 = o.gate[0] = o.gate[1] = -1;
	if (s->setup(kq, &o) < 0)
		die("setup: %s", strerror(errno));
	s->kev(&o, &k);
	xchange(kq, &k, 0);
	if (!s->immediate && xwait(kq, k.ident, k.filter, 10, NULL))
		die("round %d: reported before it happened", r);
	s->fire(kq, &o);
	if (!xwait(kq, k.ident, k.filter, 3000, &got))
		die("round %d: registered, fired, never reported", r);
	if (strcmp(s->name, "proc") == 0 || strcmp(s->name, "procdesc") == 0) {
		if (!(got.flags & EV_EOF) || !WIFEXITED(got.data) ||
		    WEXITSTATUS(got.data) != 7)
			die("round %d: exit status %#jx flags %#x", r,
			    (intmax_t)got.data, got.flags);
	}
	s->teardown(kq, &o);
}

/* The child's work for one k: exits 10 (not reached), 11 (held), 2 (failed). */
static void __attribute__((noreturn))
child(const struct scen *s)
{
	int base = count_fds(), kq, r, hitround = -1;

	alarm(20);
	kq_fault_set(kind, fault_k);
	kq = xkqueue();
	if (hit_between(0, kq_fault_count(kind)))
		hitround = 0;
	for (r = 1; r <= 4; r++) {
		round_once(kq, s, r);
		if (hitround < 0 && hit_between(0, kq_fault_count(kind)))
			hitround = r;
		/* stop after a full round that followed the fault's */
		if (r >= 2 && (hitround < 0 || r > hitround))
			break;
	}
	if (hitround >= 0 && r <= hitround)
		die("no clean round after the fault (round %d)", hitround);
	if (close(kq) != 0)
		die("close(kq): %s", strerror(errno));
	if (count_fds() != base)
		die("descriptors: %d open, %d before", count_fds(), base);
	kq_fault_set(kind, 0);
	exit(hitround >= 0 ? 11 : 10);	/* exit(): LeakSanitizer runs */
}

/*
 * The first kqueue of a process, which also makes the registry's first
 * chunk (run before main's warm-up, so no chunk exists yet): kqueue()
 * either fails with the fault's error and leaves the descriptor count as
 * it was, or returns a kqueue that works (a user event registered,
 * triggered and reported, with faults off) and that close() retires.
 * Exits as child() does.
 */
static void __attribute__((noreturn))
first_child(void)
{
	int base = count_fds(), kq, hit;
	long before;
	struct kevent k, got;
	const struct timespec sec = { 1, 0 };

	alarm(20);
	kq_fault_set(kind, fault_k);
	before = kq_fault_count(kind);
	kq = kqueue();
	hit = hit_between(before, kq_fault_count(kind));
	if (kq < 0)
		check_err("first kqueue()", before, errno, 0);
	kq_fault_set(kind, 0);
	if (kq < 0) {
		if (count_fds() != base)
			die("failed kqueue(): %d descriptors open, %d before",
			    count_fds(), base);
		exit(11);
	}
	EV_SET(&k, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	if (kevent(kq, &k, 1, NULL, 0, NULL) != 0)
		die("kqueue() succeeded, EV_ADD on it: %s", strerror(errno));
	EV_SET(&k, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	if (kevent(kq, &k, 1, &got, 1, &sec) != 1 || got.ident != 1 ||
	    got.filter != EVFILT_USER)
		die("kqueue() succeeded, its user event was not reported");
	if (close(kq) != 0)
		die("close(kq): %s", strerror(errno));
	if (count_fds() != base)
		die("descriptors: %d open, %d before", count_fds(), base);
	exit(hit ? 11 : 10);	/* exit(): LeakSanitizer runs */
}

/* Run child() under a time limit; returns its exit code, or 100 + signal. */
static int
run_k(const struct scen *s)	/* s NULL: first_child() */
{
	pid_t pid;
	int st, t;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		if (s == NULL)
			first_child();
		child(s);
	}
	for (t = 0; t < 300; t++) {	/* 30 s */
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) :
			    100 + WTERMSIG(st);
		usleep(100000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return 200;
}

/*
 * Sweep k = 1.. for one scenario (NULL: the first kqueue) and the current
 * kind and mode; prints its line and returns 1 if it failed.
 */
static int
sweep_one(const struct scen *s, long maxk, int verbose)
{
	struct timespec t0, t1;
	int rc = 11, bad = 0;
	const char *name = s != NULL ? s->name : "first-kqueue";

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (fault_k = 1; fault_k <= maxk; fault_k++) {
		rc = run_k(s);
		if (verbose)
			printf("  %s/%s%s k=%ld: %d\n", name, kind_name[kind],
			    receipt ? "/receipt" : "", fault_k, rc);
		if (rc == 10)
			break;
		if (rc != 11) {
			printf("FAIL %s/%s%s k=%ld: %s %d\n", name,
			    kind_name[kind], receipt ? "/receipt" : "", fault_k,
			    rc == 200 ? "hung" : rc > 100 ? "signal" :
			    rc == 23 ? "leak, exit" :
			    rc == 1 ? "sanitizer report, exit" : "exit",
			    rc == 200 ? 0 : rc > 100 ? rc - 100 : rc);
			bad = 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc != 10 && !bad) {
		printf("FAIL %s/%s%s: still faulting at k=%ld\n", name,
		    kind_name[kind], receipt ? "/receipt" : "", maxk);
		bad = 1;
	}
	printf("%s %s/%s%s: k=1..%ld, %.1f s\n", bad ? "FAILED" : "ok", name,
	    kind_name[kind], receipt ? "/receipt" : "", fault_k - 1,
	    (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return bad;
}

int
main(void)
{
	const char *only = getenv("KQ_FAULT_ONLY");
	const char *v = getenv("KQ_FAULT_MAXK");
	long maxk = v != NULL ? atol(v) : 400;
	int verbose = getenv("KQ_FAULT_VERBOSE") != NULL;
	int pass = 0, fail = 0;
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Before anything made the registry's chunks: the first kqueue. */
	scen_name = "first-kqueue";
	receipt = 0;
	for (kind = 0; kind < 2 && (only == NULL ||
	    strstr("first-kqueue", only) != NULL); kind++) {
		if (sweep_one(NULL, maxk, verbose))
			fail++;
		else
			pass++;
	}
	/*
	 * Warm up once in this process, without faults: the process-wide
	 * objects (the registry's chunks, the signal eventfd) then exist in
	 * every child, so each child's descriptor count can return to its
	 * starting value.
	 */
	for (i = 0; i < sizeof(scens) / sizeof(scens[0]); i++) {
		int kq;

		scen_name = scens[i].name;
		kq = xkqueue();
		round_once(kq, &scens[i], 0);
		close(kq);
	}
	for (i = 0; i < sizeof(scens) / sizeof(scens[0]); i++) {
		const struct scen *s = &scens[i];

		if (only != NULL && strstr(s->name, only) == NULL)
			continue;
		scen_name = s->name;
		for (kind = 0; kind < 3; kind++) {
			for (receipt = 0; receipt < 2; receipt++) {
				int bad = sweep_one(s, maxk, verbose);

				if (bad)
					fail++;
				else
					pass++;
			}
		}
	}
	printf("fault: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}
