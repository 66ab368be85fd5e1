/*
 * test-engine-exhaust.c -- regression tests of descriptor exhaustion: with
 * no descriptor free (RLIMIT_NOFILE lowered to what is open, the rest of
 * the table filled with dup()s of /dev/null), every kevent() either fails
 * with an error or works -- never a silent success that never reports, a
 * lost wakeup, or a call that spins for its whole timeout.
 *
 * FreeBSD reference: kqueue() takes one descriptor (EMFILE when none is
 * free); kevent() itself never allocates a descriptor, so on FreeBSD all
 * of the registrations below simply succeed and report.  An
 * implementation that needs descriptors of its own (an epoll set, an
 * eventfd, a timerfd, a signalfd, an inotify instance, a pidfd) may
 * instead fail the change with EMFILE/ENFILE (or ENOMEM), returned by
 * kevent() or in an EV_ERROR entry; what it may not do is accept the
 * change and then never report it, or sleep through a wakeup.
 *
 * Every scenario runs in a child process with a time limit (see
 * engine-helpers.h), so RLIMIT_NOFILE and the filler descriptors never
 * leak into other tests; the scenarios restore them anyway before they
 * check that a late report arrives.
 *
 * (d) exhausts the address space instead (RLIMIT_AS): what kq cannot
 * allocate fails with ENOMEM, and nothing of it lasts once memory is back.
 */
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "engine-helpers.h"

#define MS	1000000LL

static int
resource_errno(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOMEM;
}

/* ------------------------------------------------------------------ */
/* (a) The first EVFILT_USER trigger with no descriptor free          */
/* ------------------------------------------------------------------ */

struct waiter {
	pthread_t	 thr;
	int		 kq;
	atomic_int	 started;
	atomic_int	 done;
	int		 r;
	int		 err;
	struct kevent	 ev;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->started, 1);
	w->r = e_wait(w->kq, &w->ev, 1, 3000);
	w->err = errno;
	atomic_store(&w->done, 1);
	return NULL;
}

static void
waiter_start(struct waiter *w, int kq)
{
	memset(w, 0, sizeof(*w));
	w->kq = kq;
	E_CHECK(pthread_create(&w->thr, NULL, waiter_main, w) == 0, "create");
	while (!atomic_load(&w->started))
		e_sleep_ms(1);
	e_sleep_ms(100);
}

/*
 * v bit 0: the waiting thread starts after the exhaustion (else before);
 * v bit 1: EV_ADD of the user event after the exhaustion (else before).
 */
static int
first_trigger_child(void *arg)
{
	int v = (int)(intptr_t)arg, block_after = v & 1, add_after = v & 2;
	struct e_exhaust x;
	struct waiter w;
	int kq, r, e;
	int64_t deadline;

	E_SYS(kq = kqueue());
	if (!add_after)
		E_CHANGE(kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	if (!block_after)
		waiter_start(&w, kq);
	E_CHECK(e_exhaust(&x, 0) == 0, "exhaust: %s", strerror(errno));
	if (block_after)
		waiter_start(&w, kq);
	if (add_after) {
		r = e_change(kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
		e = errno;
		if (r != 0) {
			e_restore(&x);
			E_CHECK(resource_errno(e), "EV_ADD failed with %s",
			    strerror(e));
			/* an error: acceptable; the waiter times out */
			E_CHECK(pthread_join(w.thr, NULL) == 0, "join");
			close(kq);
			return 0;
		}
	}
	r = e_change(kq, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	e = errno;
	if (r != 0) {
		e_restore(&x);
		E_CHECK(resource_errno(e), "NOTE_TRIGGER failed with %s",
		    strerror(e));
		E_CHECK(pthread_join(w.thr, NULL) == 0, "join");
		close(kq);
		return 0;
	}
	deadline = e_now_ms() + 2000;
	while (!atomic_load(&w.done) && e_now_ms() < deadline)
		e_sleep_ms(2);
	e_restore(&x);
	E_CHECK(atomic_load(&w.done), "NOTE_TRIGGER succeeded with no "
	    "descriptor free, but the thread blocked in kevent() was not woken "
	    "within 2 s");
	E_CHECK(pthread_join(w.thr, NULL) == 0, "join");
	E_CHECK(w.r == 1 || (w.r == -1 && resource_errno(w.err)), "the "
	    "blocked kevent() returned %d (%s)", w.r,
	    w.r < 0 ? strerror(w.err) : "");
	if (w.r == 1)
		E_CHECK(w.ev.filter == EVFILT_USER && w.ev.ident == 1,
		    "filter %d ident %ju", w.ev.filter, (uintmax_t)w.ev.ident);
	close(kq);
	return 0;
}

static void
first_user_trigger_without_free_descriptor_wakes_thread_blocked_before(
    void **state)
{
	(void)state;
	E_RUN(first_trigger_child, (void *)0, 20);
}

static void
first_user_trigger_without_free_descriptor_wakes_thread_blocked_after(
    void **state)
{
	(void)state;
	E_RUN(first_trigger_child, (void *)1, 20);
}

static void
user_event_added_and_triggered_without_free_descriptor_wakes_thread(
    void **state)
{
	(void)state;
	E_RUN(first_trigger_child, (void *)3, 20);
}

/* ------------------------------------------------------------------ */
/* (b) EVFILT_READ on a regular file with no descriptor free          */
/* ------------------------------------------------------------------ */

/* A temporary file: *rfd read-only at offset 0, *wfd appending. */
static void
tmpfile_pair(int *rfd, int *wfd)
{
	char path[] = "/tmp/kq-engine-exhaust-XXXXXX";

	E_SYS(*wfd = mkstemp(path));
	E_SYS(*rfd = open(path, O_RDONLY));
	E_SYS(unlink(path));
	E_SYS(fcntl(*wfd, F_SETFL, O_APPEND));
}

static int
regular_file_child(void *arg)
{
	struct e_exhaust x;
	struct kevent ch, ev;
	int kq, rfd, wfd, r, e;

	(void)arg;
	tmpfile_pair(&rfd, &wfd);
	E_SYS(kq = kqueue());
	E_CHECK(e_exhaust(&x, 0) == 0, "exhaust: %s", strerror(errno));
	EV_SET(&ch, rfd, EVFILT_READ, EV_ADD, 0, 0, NULL);
	r = kevent(kq, &ch, 1, &ev, 1, &t_zero);
	e = errno;
	if (r == -1 || (r == 1 && (ev.flags & EV_ERROR))) {
		int err = r == -1 ? e : (int)ev.data;

		e_restore(&x);
		E_CHECK(err == EMFILE || err == ENFILE, "EV_ADD of a regular "
		    "file with no descriptor free failed with %s, expected "
		    "EMFILE or ENFILE", strerror(err));
		goto out;
	}
	E_CHECK(r == 0, "EV_ADD of an empty regular file returned %d events "
	    "(ident %ju data %jd)", r, (uintmax_t)ev.ident, (intmax_t)ev.data);
	/* accepted: the growth must be reported */
	E_CHECK(write(wfd, "abc", 3) == 3, "write");
	r = e_wait(kq, &ev, 1, 1000);
	e = errno;
	if (r != 1) {
		e_restore(&x);
		if (r == 0)
			fprintf(stderr, "note: growth not reported while no "
			    "descriptor was free; retrying after restoring\n");
		else
			E_CHECK(resource_errno(e), "kevent: %s", strerror(e));
		r = e_wait(kq, &ev, 1, 1000);
	}
	e_restore(&x);
	E_CHECK(r == 1, "EV_ADD of a regular file succeeded with no descriptor "
	    "free, but the file's growth was never reported (kevent returned "
	    "%d)", r);
	E_CHECK(ev.ident == (uintptr_t)rfd && ev.filter == EVFILT_READ &&
	    ev.data == 3, "ident %ju filter %d data %jd", (uintmax_t)ev.ident,
	    ev.filter, (intmax_t)ev.data);
out:
	close(kq);
	close(rfd);
	close(wfd);
	return 0;
}

static void
regular_file_read_added_without_free_descriptor_fails_or_reports_growth(
    void **state)
{
	(void)state;
	E_RUN(regular_file_child, NULL, 20);
}

/* ------------------------------------------------------------------ */
/* (c) A registration under a closed number, no descriptor free       */
/* ------------------------------------------------------------------ */

/* What a failed check runs first, to give the child descriptors back. */
static void
undo_exhaust(void *arg)
{
	e_restore(arg);
}

static void
undo_rlimit(void *arg)
{
	(void)setrlimit(RLIMIT_NOFILE, arg);
}

/*
 * Two 300 ms waits on kq, each of which must end without spinning (less
 * than 100 ms of CPU) and without an event: 0, or -1 with a resource
 * error (never EBADF: the kqueue is alive).  undo(arg) runs before a
 * failure is reported.
 */
static void
waits_end_quietly(int kq, void (*undo)(void *), void *arg)
{
	struct kevent ev[4];
	int64_t c0, cpu;
	int k, i, r, e;

	for (k = 0; k < 2; k++) {
		c0 = e_proc_cpu_ns();
		r = e_wait(kq, ev, 4, 300);
		e = errno;
		cpu = e_proc_cpu_ns() - c0;
		if (cpu >= 100 * MS || !(r == 0 || (r == -1 &&
		    resource_errno(e))))
			undo(arg);
		E_CHECK(cpu < 100 * MS, "call %d: kevent() with a 300 ms timeout "
		    "used %jd ms CPU (returned %d%s%s): it spun", k + 1,
		    (intmax_t)(cpu / MS), r, r < 0 ? " " : "",
		    r < 0 ? strerror(e) : "");
		for (i = 0; i < r; i++)
			E_CHECK(0, "call %d: reported ident %ju filter %d: the "
			    "knote of the closed number", k + 1,
			    (uintmax_t)ev[i].ident, ev[i].filter);
		E_CHECK(r == 0 || (r == -1 && resource_errno(e)), "call %d: "
		    "kevent() returned %d (%s)", k + 1, r,
		    r < 0 ? strerror(e) : "");
	}
}

/*
 * The watched number is moved above every other open descriptor, so that
 * once it is closed the exhaustion (which lowers RLIMIT_NOFILE to just
 * above the highest open descriptor) leaves it closed rather than filling
 * it with /dev/null.
 * v bit 0: a scan saw the registration before its number was closed;
 * v bit 1: EVFILT_READ on a socket with unread data (else EVFILT_WRITE on
 * an always-writable one).
 */
static int
closed_number_child(void *arg)
{
	int scanned = (int)(intptr_t)arg & 1, rd = (int)(intptr_t)arg & 2;
	short filt = rd ? EVFILT_READ : EVFILT_WRITE;
	struct e_exhaust x;
	struct kevent ev[4];
	int kq, sv[2], keep, hi;

	E_SYS(kq = kqueue());
	E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	E_SYS(hi = fcntl(sv[0], F_DUPFD, 1000));
	E_SYS(close(sv[0]));
	if (rd)
		E_CHECK(send(sv[1], "abc", 3, MSG_NOSIGNAL) == 3, "send");
	E_CHANGE(kq, hi, filt, EV_ADD, 0, 0, NULL);
	if (scanned)
		E_CHECK(kevent(kq, NULL, 0, ev, 4, &t_zero) == 1, "scan");
	E_SYS(keep = dup(hi));
	E_SYS(close(hi));
	E_CHECK(e_exhaust(&x, 0) == 0, "exhaust: %s", strerror(errno));
	E_CHECK((int)x.old.rlim_cur > hi && fcntl(hi, F_GETFD) == -1,
	    "descriptor %d should stay closed", hi);
	waits_end_quietly(kq, undo_exhaust, &x);
	e_restore(&x);
	close(kq);
	close(keep);
	close(sv[1]);
	return 0;
}

/*
 * A kqueue made while the 600 lowest free numbers are taken, so that it
 * (and what it makes for a first EVFILT_SIGNAL knote of signo, if not 0)
 * sits above them once they are free again.
 */
static int
kqueue_high(int signo)
{
	int fill[600], kq, i, n;

	for (n = 0; n < 600; n++)
		E_SYS(fill[n] = open("/dev/null", O_RDONLY | O_CLOEXEC));
	E_SYS(kq = kqueue());
	if (signo != 0)
		E_CHANGE(kq, signo, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	for (i = 0; i < n; i++)
		E_SYS(close(fill[i]));
	E_CHECK(kq >= 600, "kqueue() got %d", kq);
	return kq;
}

/* The soft RLIMIT_NOFILE lowered to 64; the limits before in *old. */
static void
limit_to_64(struct rlimit *old)
{
	struct rlimit low;

	E_SYS(getrlimit(RLIMIT_NOFILE, old));
	low = *old;
	low.rlim_cur = 64;
	E_SYS(setrlimit(RLIMIT_NOFILE, &low));
}

/*
 * A kqueue above 600 watching READ on a socket with bytes queued (sv[0],
 * then closed raw while *keep, a dup(), holds its file: a registration
 * under a closed number) and USER 7; RLIMIT_NOFILE then lowered to 64
 * below the kqueue's number (the limits before in *old).
 */
static int
zombie_above_limit(int sv[2], int *keep, struct rlimit *old)
{
	int kq = kqueue_high(0);

	E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	E_CHECK(send(sv[1], "abc", 3, MSG_NOSIGNAL) == 3, "send");
	E_CHANGE(kq, sv[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	E_CHANGE(kq, 7, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	E_SYS(*keep = dup(sv[0]));
	E_CHECK(syscall(SYS_close, sv[0]) == 0, "raw close");
	E_CHECK(*keep < 64 && sv[1] < 64, "descriptors %d %d", *keep, sv[1]);
	limit_to_64(old);
	return kq;
}

/* USER 7 triggered is kq's one event within ms milliseconds. */
static void
user_7_reported(int kq, int ms, const char *when)
{
	struct kevent ev[4];
	int r;

	E_CHANGE(kq, 7, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	r = e_wait(kq, ev, 4, ms);
	E_CHECK(r == 1 && ev[0].filter == EVFILT_USER && ev[0].ident == 7,
	    "%s: kevent() returned %d (%s), filter %d", when, r,
	    r < 0 ? strerror(errno) : "", r > 0 ? ev[0].filter : 0);
}

/*
 * The same registration under a closed number, with descriptors free but
 * the kqueue's own number at or above a lowered RLIMIT_NOFILE: an
 * implementation that must replace its epoll set under the kqueue's
 * number cannot put it there.  The kqueue is alive: kevent() may fail
 * with a resource error, never with EBADF (which says the kqueue is
 * gone), and works again once the limit is back.
 */
static int
kqueue_above_limit_child(void *arg)
{
	struct rlimit old;
	int kq, sv[2], keep;

	(void)arg;
	kq = zombie_above_limit(sv, &keep, &old);
	waits_end_quietly(kq, undo_rlimit, &old);
	E_SYS(setrlimit(RLIMIT_NOFILE, &old));
	user_7_reported(kq, 1000, "after the limit is back");
	close(kq);
	close(keep);
	close(sv[1]);
	return 0;
}

static void
closed_number_with_the_kqueue_above_a_lowered_limit_fails_with_a_resource_error(
    void **state)
{
	(void)state;
	E_RUN(kqueue_above_limit_child, NULL, 20);
}

/*
 * As above, but the call made under the lowered limit has an event to
 * return besides the closed number's registration.  Once the limit is back
 * and the last copy of the closed number's file is gone, the kqueue must
 * sleep again: waits that return nothing use no CPU (an implementation
 * that left its set in a state where every wait returns at once, because
 * the call that could not replace it returned events, spins until each
 * deadline for good).
 */
static int
kqueue_above_limit_with_events_child(void *arg)
{
	struct rlimit old;
	int kq, sv[2], keep;

	(void)arg;
	kq = zombie_above_limit(sv, &keep, &old);
	user_7_reported(kq, 0, "under the lowered limit");
	E_SYS(setrlimit(RLIMIT_NOFILE, &old));
	E_SYS(close(keep));
	waits_end_quietly(kq, undo_rlimit, &old);
	user_7_reported(kq, 1000, "at the end");
	close(kq);
	close(sv[1]);
	return 0;
}

static void
kqueue_above_a_lowered_limit_sleeps_again_after_a_call_that_returned_events(
    void **state)
{
	(void)state;
	E_RUN(kqueue_above_limit_with_events_child, NULL, 20);
}

/*
 * A fork() where the child cannot take over a descriptor number: the
 * child's kqueues must not share anything with the parent's.  The
 * parent's kqueue (made while 600 numbers were taken, so at a high
 * number, with what it needs) watches SIGUSR1, which nobody sends; then
 * RLIMIT_NOFILE is lowered under those numbers and the process forks.
 * The child watches SIGUSR2 and sends it to itself many times.  The
 * parent's kqueue descriptor must not turn readable (poll(), as on
 * FreeBSD: readable only with an event pending).  An implementation
 * that wakes its kqueues through one process-wide descriptor must give
 * the child its own, or none.
 */
static int
fork_above_limit_child(void *arg)
{
	struct rlimit old;
	struct pollfd pfd;
	int kq, sync[2], st, i;
	char c;
	pid_t pid;

	(void)arg;
	E_SYS(pipe(sync));
	kq = kqueue_high(SIGUSR1);
	E_CHECK(sync[0] < 64 && sync[1] < 64, "pipe %d %d", sync[0], sync[1]);
	limit_to_64(&old);
	E_SYS(pid = fork());
	if (pid == 0) {
		int kc;

		close(sync[0]);
		signal(SIGUSR2, SIG_IGN);
		if ((kc = kqueue()) < 0)
			_exit(2);
		E_CHANGE(kc, SIGUSR2, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
		for (i = 0; i < 2000; i++)
			kill(getpid(), SIGUSR2);
		(void)!write(sync[1], "x", 1);
		_exit(0);
	}
	E_SYS(setrlimit(RLIMIT_NOFILE, &old));
	close(sync[1]);
	E_CHECK(read(sync[0], &c, 1) == 1, "the child did not get to signal");
	E_SYS(waitpid(pid, &st, 0));
	E_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	pfd.fd = kq;
	pfd.events = POLLIN;
	pfd.revents = 0;
	E_CHECK(poll(&pfd, 1, 100) == 0, "the parent's kqueue, with nothing "
	    "pending, polled readable (revents %#x) after the child's signals",
	    pfd.revents);
	close(sync[0]);
	close(kq);
	return 0;
}

static void
fork_with_the_kqueue_above_a_lowered_limit_gives_the_child_signal_wakeups_of_its_own(
    void **state)
{
	(void)state;
	E_RUN(fork_above_limit_child, NULL, 20);
}

static void
closed_write_number_kept_by_dup_without_free_descriptor_does_not_spin(
    void **state)
{
	(void)state;
	E_RUN(closed_number_child, (void *)0, 20);
}

static void
scanned_closed_write_number_kept_by_dup_without_free_descriptor_does_not_spin(
    void **state)
{
	(void)state;
	E_RUN(closed_number_child, (void *)1, 20);
}

static void
closed_read_number_kept_by_dup_without_free_descriptor_does_not_spin(
    void **state)
{
	(void)state;
	E_RUN(closed_number_child, (void *)2, 20);
}

static void
scanned_closed_read_number_kept_by_dup_without_free_descriptor_does_not_spin(
    void **state)
{
	(void)state;
	E_RUN(closed_number_child, (void *)3, 20);
}

/* ------------------------------------------------------------------ */
/* (d) An episode with the address space exhausted                    */
/* ------------------------------------------------------------------ */

#define EP_PREGROW	9000	/* the ident hash grown for this many */
#define EP_FAILS	70000	/* failed EV_ADDs: more than 65536 */
#define EP_AFTER	4096	/* registrations measured after it */

/* The process's mapped and resident sizes in KiB; -1 without /proc. */
static int
mem_kib(long *size, long *res)
{
	long pk = sysconf(_SC_PAGESIZE) / 1024;
	FILE *f = fopen("/proc/self/statm", "r");
	int n;

	if (f == NULL)
		return -1;
	n = fscanf(f, "%ld %ld", size, res);
	fclose(f);
	*size *= pk;
	*res *= pk;
	return n == 2 ? 0 : -1;
}

/* Fault in 128 KiB of stack, which cannot grow once RLIMIT_AS is low. */
static void __attribute__((noinline))
stack_in(void)
{
	volatile char buf[128 * 1024];
	size_t i;

	for (i = 0; i < sizeof(buf); i += 512)
		buf[i] = 0;
}

/*
 * RLIMIT_AS lowered to what is mapped, so that every mmap() fails, and
 * EP_FAILS EV_ADDs that fail with ENOMEM (each wants a new small block
 * and finds the free ones used up).  Once the limit is back, EP_AFTER
 * more must cost what they cost before: an allocator that used up some
 * finite resource on each failure would now serve every small block with
 * a page of its own (4 KiB and more per registration, counted in mapped
 * and in resident memory); the bound is 1 KiB per registration, where
 * kq's own need is under 200 bytes.
 */
static int
address_space_episode_child(void *arg)
{
	struct rlimit old, low;
	long vm0, rss0, vm1, rss1, fails = 0, adds = 0;
	uintptr_t id, i;
	int r, e = 0, kq;

	(void)arg;
	E_SYS(kq = kqueue());
	if (mem_kib(&vm0, &rss0) != 0) {
		fprintf(stderr, "note: no /proc/self/statm: not checked\n");
		close(kq);
		return 0;
	}
	/* The hash grown for more than the episode adds (it never shrinks),
	   so that under the limit only the knote's own allocation fails. */
	for (id = 1; id <= EP_PREGROW; id++)
		E_CHANGE(kq, id, EVFILT_USER, EV_ADD, 0, 0, NULL);
	for (id = 1; id <= EP_PREGROW; id++)
		E_CHANGE(kq, id, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	stack_in();
	E_SYS(getrlimit(RLIMIT_AS, &old));
	E_CHECK(mem_kib(&vm0, &rss0) == 0, "/proc/self/statm");
	low = old;
	low.rlim_cur = (rlim_t)vm0 * 1024;
	E_SYS(setrlimit(RLIMIT_AS, &low));
	/* adds succeed while free blocks last, then every one fails */
	for (id = 1; fails < EP_FAILS && adds < EP_PREGROW + 4096; ) {
		r = e_change(kq, id, EVFILT_USER, EV_ADD, 0, 0, NULL);
		e = errno;
		if (r == 0) {
			id++;
			adds++;
		} else if (e == ENOMEM) {
			fails++;
		} else {
			break;
		}
	}
	E_SYS(setrlimit(RLIMIT_AS, &old));
	E_CHECK(fails == EP_FAILS, "under RLIMIT_AS: %ld EV_ADDs succeeded, "
	    "%ld failed with ENOMEM, then %s", adds, fails,
	    adds >= EP_PREGROW + 4096 ? "no more failed" : strerror(e));
	E_CHECK(mem_kib(&vm0, &rss0) == 0, "/proc/self/statm");
	for (i = 0; i < EP_AFTER; i++)
		E_CHANGE(kq, id + i, EVFILT_USER, EV_ADD, 0, 0, NULL);
	E_CHECK(mem_kib(&vm1, &rss1) == 0, "/proc/self/statm");
	E_CHECK(vm1 - vm0 < EP_AFTER && rss1 - rss0 < EP_AFTER, "after %ld "
	    "EV_ADDs failed under RLIMIT_AS (limit restored), %d more "
	    "registrations mapped %ld KiB and made %ld KiB resident: more "
	    "than 1 KiB each", fails, EP_AFTER, vm1 - vm0, rss1 - rss0);
	for (i = 0; i < EP_AFTER; i++)
		E_CHANGE(kq, id + i, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	close(kq);
	return 0;
}

static void
registrations_after_an_address_space_exhaustion_episode_cost_what_they_did(
    void **state)
{
	(void)state;
	E_RUN(address_space_episode_child, NULL, 20);
}

/* ------------------------------------------------------------------ */
/* The sweep: each filter added with 0..3 descriptors free            */
/* ------------------------------------------------------------------ */

enum { F_USER, F_TIMER, F_SIGNAL, F_FILE, F_FILE_CLEAR, F_VNODE, F_PROC,
    F_EMPTY };
static const char *const filt_name[] = {
	"EVFILT_USER", "EVFILT_TIMER", "EVFILT_SIGNAL",
	"EVFILT_READ (regular file)", "EVFILT_READ EV_CLEAR (regular file)",
	"EVFILT_VNODE", "EVFILT_PROC", "EVFILT_EMPTY EV_CLEAR (Unix socket)",
};

static volatile sig_atomic_t usr2_hits;

static void
on_usr2(int sig)
{
	(void)sig;
	usr2_hits++;
}

struct sweep {
	int	 filt;
	int	 rfd, wfd;	/* F_FILE, F_VNODE; F_EMPTY: a socketpair */
	pid_t	 pid;		/* F_PROC */
	int	 gate[2];	/* F_PROC: the child exits when gate closes */
};

static void
sweep_prepare(struct sweep *s)
{
	if (s->filt == F_FILE || s->filt == F_FILE_CLEAR ||
	    s->filt == F_VNODE) {
		tmpfile_pair(&s->rfd, &s->wfd);
	} else if (s->filt == F_EMPTY) {
		int sv[2];

		/* wfd's send queue holds 3 bytes until rfd reads them */
		E_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
		s->wfd = sv[0];
		s->rfd = sv[1];
		E_CHECK(write(s->wfd, "abc", 3) == 3, "write");
	} else if (s->filt == F_PROC) {
		char ch;

		E_SYS(pipe(s->gate));
		E_SYS(s->pid = fork());
		if (s->pid == 0) {
			close(s->gate[1]);
			while (read(s->gate[0], &ch, 1) < 0 && errno == EINTR)
				;
			E_EXIT(7);
		}
		close(s->gate[0]);
	}
}

static int
sweep_add(struct sweep *s, int kq)
{
	switch (s->filt) {
	case F_USER:
		return e_change(kq, 1, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0,
		    NULL);
	case F_TIMER:
		return e_change(kq, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 10,
		    NULL);
	case F_SIGNAL:
		return e_change(kq, SIGUSR2, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	case F_FILE:
	case F_FILE_CLEAR:
		return e_change(kq, s->rfd, EVFILT_READ, EV_ADD |
		    (s->filt == F_FILE_CLEAR ? EV_CLEAR : 0), 0, 0, NULL);
	case F_VNODE:
		return e_change(kq, s->rfd, EVFILT_VNODE, EV_ADD | EV_CLEAR,
		    NOTE_WRITE | NOTE_EXTEND, 0, NULL);
	case F_EMPTY:
		return e_change(kq, s->wfd, EVFILT_EMPTY, EV_ADD | EV_CLEAR, 0,
		    0, NULL);
	default:
		return e_change(kq, (uintptr_t)s->pid, EVFILT_PROC, EV_ADD,
		    NOTE_EXIT, 0, NULL);
	}
}

/* Make the event happen; returns kevent()'s result for F_USER, else 0. */
static int
sweep_trigger(struct sweep *s, int kq)
{
	switch (s->filt) {
	case F_USER:
		return e_change(kq, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	case F_TIMER:
		return 0;
	case F_SIGNAL:
		E_SYS(kill(getpid(), SIGUSR2));
		return 0;
	case F_FILE:
	case F_FILE_CLEAR:
	case F_VNODE:
		E_CHECK(write(s->wfd, "abc", 3) == 3, "write");
		return 0;
	case F_EMPTY: {
		char buf[8];

		E_CHECK(read(s->rfd, buf, sizeof(buf)) == 3, "read");
		return 0;
	}
	default:
		close(s->gate[1]);
		s->gate[1] = -1;
		return 0;
	}
}

static void
sweep_check(struct sweep *s, const struct kevent *ev, const char *what)
{
	switch (s->filt) {
	case F_USER:
	case F_TIMER:
		E_CHECK(ev->ident == 1 && ev->filter == (s->filt == F_USER ?
		    EVFILT_USER : EVFILT_TIMER), "%s: ident %ju filter %d", what,
		    (uintmax_t)ev->ident, ev->filter);
		break;
	case F_SIGNAL:
		E_CHECK(ev->ident == SIGUSR2 && ev->filter == EVFILT_SIGNAL &&
		    ev->data >= 1, "%s: ident %ju filter %d data %jd", what,
		    (uintmax_t)ev->ident, ev->filter, (intmax_t)ev->data);
		break;
	case F_FILE:
	case F_FILE_CLEAR:
		E_CHECK(ev->ident == (uintptr_t)s->rfd &&
		    ev->filter == EVFILT_READ && ev->data == 3, "%s: ident %ju "
		    "filter %d data %jd", what, (uintmax_t)ev->ident,
		    ev->filter, (intmax_t)ev->data);
		break;
	case F_VNODE:
		E_CHECK(ev->ident == (uintptr_t)s->rfd &&
		    ev->filter == EVFILT_VNODE && (ev->fflags & NOTE_WRITE),
		    "%s: ident %ju filter %d fflags %#x", what,
		    (uintmax_t)ev->ident, ev->filter, ev->fflags);
		break;
	case F_EMPTY:
		E_CHECK(ev->ident == (uintptr_t)s->wfd &&
		    ev->filter == EVFILT_EMPTY, "%s: ident %ju filter %d", what,
		    (uintmax_t)ev->ident, ev->filter);
		break;
	default:
		E_CHECK(ev->ident == (uintptr_t)s->pid &&
		    ev->filter == EVFILT_PROC && (ev->fflags & NOTE_EXIT) &&
		    WIFEXITED((int)ev->data) && WEXITSTATUS((int)ev->data) == 7,
		    "%s: ident %ju filter %d fflags %#x data %#jx", what,
		    (uintmax_t)ev->ident, ev->filter, ev->fflags,
		    (uintmax_t)ev->data);
		break;
	}
}

static void
sweep_cleanup(struct sweep *s)
{
	if (s->filt == F_FILE || s->filt == F_FILE_CLEAR ||
	    s->filt == F_VNODE || s->filt == F_EMPTY) {
		close(s->rfd);
		close(s->wfd);
	} else if (s->filt == F_PROC) {
		int st;

		if (s->gate[1] >= 0)
			close(s->gate[1]);
		while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
}

/*
 * One case: `nfree` descriptors left free; the kqueue created before the
 * exhaustion or after it.
 */
static void
sweep_case(int filt, int nfree, int kq_after)
{
	struct sweep s;
	struct e_exhaust x;
	struct kevent ev;
	struct waiter w;
	char what[160];
	int kq = -1, r, e, woken;
	int64_t deadline;

	snprintf(what, sizeof(what), "%s, %d descriptors free, kqueue created "
	    "%s", filt_name[filt], nfree, kq_after ? "after" : "before");
	memset(&s, 0, sizeof(s));
	s.filt = filt;
	s.gate[1] = -1;
	sweep_prepare(&s);
	if (!kq_after)
		E_SYS(kq = kqueue());
	E_CHECK(e_exhaust(&x, nfree) == 0, "exhaust: %s", strerror(errno));
	if (kq_after) {
		kq = kqueue();
		if (kq < 0) {
			e = errno;
			e_restore(&x);
			E_CHECK(resource_errno(e), "%s: kqueue(): "
			    "%s", what, strerror(e));
			sweep_cleanup(&s);
			return;
		}
	}
	r = sweep_add(&s, kq);
	e = errno;
	if (r != 0) {
		int64_t t0 = e_now_ms();

		/* A failed change leaves nothing behind: with nothing due,
		   a wait sleeps through its timeout, still exhausted. */
		r = e_wait(kq, &ev, 1, 100);
		t0 = e_now_ms() - t0;
		e_restore(&x);
		fprintf(stderr, "note: %s: EV_ADD failed: %s\n", what,
		    strerror(e));
		E_CHECK(resource_errno(e), "%s: EV_ADD failed with %s", what,
		    strerror(e));
		E_CHECK(r == 0 && t0 >= 90, "%s: after the failed EV_ADD, a "
		    "100 ms wait with nothing due returned %d (%s) after %jd ms",
		    what, r, r < 0 ? strerror(errno) : "", (intmax_t)t0);
		close(kq);
		sweep_cleanup(&s);
		return;
	}
	/* a scan before the event: the registration must wait for it */
	r = kevent(kq, NULL, 0, &ev, 1, &t_zero);
	e = errno;
	E_CHECK(r == 0 || (r == -1 && resource_errno(e)), "%s: scan before "
	    "the event returned %d (%s)", what, r, r < 0 ? strerror(e) : "");
	/* a thread sleeps in kevent() while the event happens */
	waiter_start(&w, kq);
	r = sweep_trigger(&s, kq);
	e = errno;
	if (r != 0) {
		E_CHECK(resource_errno(e), "%s: NOTE_TRIGGER: %s", what,
		    strerror(e));
		e_restore(&x);
		E_CHECK(sweep_trigger(&s, kq) == 0, "%s: NOTE_TRIGGER after "
		    "restoring: %s", what, strerror(errno));
	}
	deadline = e_now_ms() + 2000;
	while (!atomic_load(&w.done) && e_now_ms() < deadline)
		e_sleep_ms(2);
	woken = atomic_load(&w.done);
	e_restore(&x);
	E_CHECK(pthread_join(w.thr, NULL) == 0, "join");
	r = w.r;
	e = w.err;
	ev = w.ev;
	E_CHECK(woken, "%s: EV_ADD succeeded, but the thread sleeping in "
	    "kevent() was not woken by the event within 2 s (it returned %d "
	    "later, after the descriptors were freed or at its 3 s timeout)",
	    what, r);
	if (r != 1) {
		E_CHECK(r == -1 && resource_errno(e), "%s: the sleeping "
		    "kevent() returned %d (%s)", what, r, r < 0 ?
		    strerror(e) : "");
		/* an error while exhausted: the event must come now */
		r = e_wait(kq, &ev, 1, 1000);
		e = errno;
	}
	E_CHECK(r == 1, "%s: EV_ADD succeeded but the event was never "
	    "reported (kevent returned %d%s%s)", what, r, r < 0 ? ": " : "",
	    r < 0 ? strerror(e) : "");
	sweep_check(&s, &ev, what);
	close(kq);
	sweep_cleanup(&s);
}

static int
sweep_child(void *arg)
{
	int filt = (int)(intptr_t)arg, nfree, after;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr2;
	sigemptyset(&sa.sa_mask);
	E_SYS(sigaction(SIGUSR2, &sa, NULL));
	for (after = 0; after < 2; after++)
		for (nfree = 0; nfree < 4; nfree++)
			sweep_case(filt, nfree, after);
	return 0;
}

#define SWEEP_TEST(name, filt)						\
static void								\
name(void **state)							\
{									\
	(void)state;							\
	E_RUN(sweep_child, (void *)(intptr_t)(filt), 20);		\
}
SWEEP_TEST(user_added_with_few_descriptors_free_reports_or_fails, F_USER)
SWEEP_TEST(timer_added_with_few_descriptors_free_reports_or_fails, F_TIMER)
SWEEP_TEST(signal_added_with_few_descriptors_free_reports_or_fails, F_SIGNAL)
SWEEP_TEST(file_read_added_with_few_descriptors_free_reports_or_fails, F_FILE)
SWEEP_TEST(file_read_clear_added_with_few_descriptors_free_reports_or_fails,
    F_FILE_CLEAR)
SWEEP_TEST(vnode_added_with_few_descriptors_free_reports_or_fails, F_VNODE)
SWEEP_TEST(proc_added_with_few_descriptors_free_reports_or_fails, F_PROC)
SWEEP_TEST(empty_added_with_few_descriptors_free_reports_or_fails, F_EMPTY)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(first_user_trigger_without_free_descriptor_wakes_thread_blocked_before),
		cmocka_unit_test(first_user_trigger_without_free_descriptor_wakes_thread_blocked_after),
		cmocka_unit_test(user_event_added_and_triggered_without_free_descriptor_wakes_thread),
		cmocka_unit_test(regular_file_read_added_without_free_descriptor_fails_or_reports_growth),
		cmocka_unit_test(closed_write_number_kept_by_dup_without_free_descriptor_does_not_spin),
		cmocka_unit_test(scanned_closed_write_number_kept_by_dup_without_free_descriptor_does_not_spin),
		cmocka_unit_test(closed_read_number_kept_by_dup_without_free_descriptor_does_not_spin),
		cmocka_unit_test(scanned_closed_read_number_kept_by_dup_without_free_descriptor_does_not_spin),
		cmocka_unit_test(closed_number_with_the_kqueue_above_a_lowered_limit_fails_with_a_resource_error),
		cmocka_unit_test(kqueue_above_a_lowered_limit_sleeps_again_after_a_call_that_returned_events),
		cmocka_unit_test(fork_with_the_kqueue_above_a_lowered_limit_gives_the_child_signal_wakeups_of_its_own),
		cmocka_unit_test(registrations_after_an_address_space_exhaustion_episode_cost_what_they_did),
		cmocka_unit_test(user_added_with_few_descriptors_free_reports_or_fails),
		cmocka_unit_test(timer_added_with_few_descriptors_free_reports_or_fails),
		cmocka_unit_test(signal_added_with_few_descriptors_free_reports_or_fails),
		cmocka_unit_test(file_read_added_with_few_descriptors_free_reports_or_fails),
		cmocka_unit_test(file_read_clear_added_with_few_descriptors_free_reports_or_fails),
		cmocka_unit_test(vnode_added_with_few_descriptors_free_reports_or_fails),
		cmocka_unit_test(proc_added_with_few_descriptors_free_reports_or_fails),
		cmocka_unit_test(empty_added_with_few_descriptors_free_reports_or_fails),
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, NULL, NULL);
}
