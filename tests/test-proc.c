/*
 * test-proc.c -- EVFILT_PROC and EVFILT_PROCDESC.
 *
 * FreeBSD reference: sys/kern/kern_event.c filt_procattach/filt_proc/
 * knote_fork and sys/kern/sys_procdesc.c procdesc_kqops_event.  EV_CLEAR
 * is forced on; NOTE_EXIT reports data = the wait(2) status with
 * EV_EOF|EV_ONESHOT; a zombie fires at once; an unknown pid is ESRCH;
 * NOTE_TRACK attaches to every child a tracked process forks and reports
 * NOTE_CHILD with data = the parent's pid (on a one-shot knote of its own,
 * separate from the child's other events).  EVFILT_PROCDESC takes a
 * process descriptor (pdfork() on FreeBSD, a pidfd on Linux).
 *
 * NOTE_FORK/NOTE_EXEC/NOTE_TRACK need privilege on Linux (the proc
 * connector); those tests are skipped when EV_ADD fails with EPERM.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif
#ifdef __FreeBSD__
#include <sys/thr.h>
#endif

#include "helpers.h"

#define T_ALLPROC	(NOTE_EXIT | NOTE_FORK | NOTE_EXEC | NOTE_TRACK)

static void
release(int go[2])
{
	write_all(go[1], "x", 1);
	close(go[1]);
}

/* Wait until pid is a zombie without reaping it. */
static void
wait_zombie(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(si.si_pid, pid);
}

/* One event within ms milliseconds (0 if none). */
static int
wait_event(int kq, struct kevent *ev, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	int r = kevent(kq, NULL, 0, ev, 1, &ts);

	assert_true(r >= 0);
	return r;
}

static int
proc_add(int kq, pid_t pid, unsigned short flags, unsigned int fflags)
{
	struct kevent kev;

	EV_SET(&kev, (uintptr_t)pid, EVFILT_PROC, flags, fflags, 0, NULL);
	return kevent(kq, &kev, 1, NULL, 0, NULL);
}

/* EV_ADD of fflags needing the process event source, or skip. */
static void
proc_add_or_skip(int kq, pid_t pid, unsigned int fflags, void *udata)
{
	struct kevent kev;

	EV_SET(&kev, (uintptr_t)pid, EVFILT_PROC, EV_ADD, fflags, 0, udata);
	if (kevent(kq, &kev, 1, NULL, 0, NULL) != 0) {
		if (errno == EPERM) {
			fprintf(stderr, "process events not permitted: skip\n");
			kill(pid, SIGKILL);
			skip();
		}
		fprintf(stderr, "EVFILT_PROC EV_ADD: %s\n", strerror(errno));
		fail();
	}
}

static void
check_exit_event(const struct kevent *ev, pid_t pid, int status)
{
	assert_int_equal(ev->ident, (uintptr_t)pid);
	assert_int_equal(ev->filter, EVFILT_PROC);
	assert_int_equal(ev->fflags, NOTE_EXIT);
	assert_int_equal(ev->data, status);
	assert_true(ev->flags & EV_EOF);
	assert_true(ev->flags & EV_ONESHOT);
	assert_true(ev->flags & EV_CLEAR);	/* automatically set */
}

/* ------------------------------------------------------------------ */

static void
note_exit_reports_exit_status(void **state)
{
	int kq = kqueue(), go[2], st;
	pid_t pid = t_spawn_waiting(go, 3);
	struct kevent ev;

	assert_true(kq >= 0);
	assert_int_equal(proc_add(kq, pid, EV_ADD, NOTE_EXIT), 0);
	t_expect_none(kq);
	release(go);
	assert_int_equal(wait_event(kq, &ev, 5000), 1);
	check_exit_event(&ev, pid, 3 << 8);
	assert_true(WIFEXITED((int)ev.data) && WEXITSTATUS((int)ev.data) == 3);
	/* The child was not reaped: waitpid() gets the same status. */
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(st, (int)ev.data);
	/* One-shot: gone. */
	assert_int_equal(proc_add(kq, pid, EV_DELETE, 0), -1);
	assert_int_equal(errno, ENOENT);
	close(kq);
}

static void
note_exit_reports_killing_signal(void **state)
{
	int kq = kqueue(), go[2], st;
	pid_t pid = t_spawn_waiting(go, 0);
	struct kevent ev;

	assert_true(kq >= 0);
	assert_int_equal(proc_add(kq, pid, EV_ADD, NOTE_EXIT), 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(wait_event(kq, &ev, 5000), 1);
	check_exit_event(&ev, pid, SIGKILL);
	assert_true(WIFSIGNALED((int)ev.data));
	assert_int_equal(WTERMSIG((int)ev.data), SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(st, (int)ev.data);
	close(go[1]);
	close(kq);
}

static void
note_exit_on_zombie_fires_at_once(void **state)
{
	int kq = kqueue(), go[2], st;
	pid_t pid = t_spawn_waiting(go, 7);
	struct kevent ev;

	assert_true(kq >= 0);
	release(go);
	wait_zombie(pid);
	assert_int_equal(proc_add(kq, pid, EV_ADD, NOTE_EXIT), 0);
	ev = t_expect_one(kq);
	check_exit_event(&ev, pid, 7 << 8);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(st, 7 << 8);
	close(kq);
}

/*
 * A process that is not ours: a child forks it (a grandchild), sends its
 * pid, and reaps it at once (reap_now) or when gc->reap is closed; the
 * grandchild exits with code when gc->gate is closed.
 */
struct grandchild {
	pid_t	child, pid;
	int	gate, reap;
};

static void
read_to_eof(int fd)
{
	char c;
	ssize_t n;

	while ((n = read(fd, &c, 1)) != 0 && !(n < 0 && errno != EINTR))
		;
}

static void
spawn_grandchild(struct grandchild *gc, int code, int reap_now)
{
	int pp[2], gate[2], reap[2];
	pid_t g;

	assert_int_equal(pipe(pp), 0);
	assert_int_equal(pipe(gate), 0);
	assert_int_equal(pipe(reap), 0);
	gc->child = fork();
	assert_true(gc->child >= 0);
	if (gc->child == 0) {
		close(pp[0]);
		close(gate[1]);
		close(reap[1]);
		if ((g = fork()) < 0)
			T_EXIT(100);
		if (g == 0) {
			close(pp[1]);
			close(reap[0]);
			read_to_eof(gate[0]);
			T_EXIT(code);
		}
		close(gate[0]);
		if (write(pp[1], &g, sizeof(g)) != (ssize_t)sizeof(g))
			T_EXIT(101);
		close(pp[1]);
		if (!reap_now)
			read_to_eof(reap[0]);
		T_EXIT(waitpid(g, NULL, 0) == g ? 0 : 102);
	}
	close(pp[1]);
	close(gate[0]);
	close(reap[0]);
	assert_int_equal(read(pp[0], &gc->pid, sizeof(gc->pid)),
	    (ssize_t)sizeof(gc->pid));
	close(pp[0]);
	gc->gate = gate[1];
	gc->reap = reap[1];
}

static void
reap_grandchild(struct grandchild *gc)
{
	int st;

	if (gc->gate >= 0)
		close(gc->gate);
	close(gc->reap);
	assert_int_equal(waitpid(gc->child, &st, 0), gc->child);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * NOTE_EXIT reports the exit status of any process, not only of the
 * watcher's children: here a zombie that its own parent has not reaped.
 */
static void
note_exit_of_a_process_not_our_child_reports_its_status(void **state)
{
	int kq = kqueue();
	struct grandchild gc;
	struct kevent ev;

	assert_true(kq >= 0);
	spawn_grandchild(&gc, 5, 0);
	assert_int_equal(proc_add(kq, gc.pid, EV_ADD, NOTE_EXIT), 0);
	t_expect_none(kq);
	close(gc.gate);
	gc.gate = -1;
	assert_int_equal(wait_event(kq, &ev, 5000), 1);
	check_exit_event(&ev, gc.pid, 5 << 8);
	reap_grandchild(&gc);
	close(kq);
}

/*
 * The same with NOTE_EXEC asked too (on Linux: the kqueue listens to the
 * process events connector), the process reaped by its parent at once.
 */
static void
note_exit_of_a_reaped_process_not_our_child_reports_its_status(void **state)
{
	int kq = kqueue();
	struct grandchild gc;
	struct kevent ev;

	assert_true(kq >= 0);
	spawn_grandchild(&gc, 6, 1);
	proc_add_or_skip(kq, gc.pid, NOTE_EXIT | NOTE_EXEC, NULL);
	t_expect_none(kq);
	close(gc.gate);
	gc.gate = -1;
	assert_int_equal(wait_event(kq, &ev, 5000), 1);
	check_exit_event(&ev, gc.pid, 6 << 8);
	reap_grandchild(&gc);
	close(kq);
}

static void
zombie_without_note_exit_is_esrch(void **state)
{
	int kq = kqueue(), go[2];
	pid_t pid = t_spawn_waiting(go, 0);

	assert_true(kq >= 0);
	release(go);
	wait_zombie(pid);
	/* pfind() does not find zombies: only NOTE_EXIT looks for them. */
	assert_int_equal(proc_add(kq, pid, EV_ADD, NOTE_FORK), -1);
	assert_int_equal(errno, ESRCH);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(kq);
}

static void
unknown_pid_is_esrch(void **state)
{
	int kq = kqueue(), go[2];
	pid_t pid = t_spawn_waiting(go, 0);
	struct kevent kev, out;

	assert_true(kq >= 0);
	release(go);
	assert_int_equal(waitpid(pid, NULL, 0), pid);	/* now unused */
	assert_int_equal(proc_add(kq, pid, EV_ADD, NOTE_EXIT), -1);
	assert_int_equal(errno, ESRCH);
	/* As an EV_ERROR entry when there is room. */
	EV_SET(&kev, (uintptr_t)pid, EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, &out, 1, &t_zero), 1);
	assert_true(out.flags & EV_ERROR);
	assert_int_equal(out.data, ESRCH);
	close(kq);
}

/* The id of the calling thread (not a pid unless it is the main one). */
static long
thread_id(void)
{
#if defined(__linux__)
	return (long)syscall(SYS_gettid);
#elif defined(__FreeBSD__)
	long id;

	thr_self(&id);
	return id;
#else
	return -1;
#endif
}

struct tid_box {
	pthread_mutex_t	mtx;
	pthread_cond_t	cv;
	long		tid;
	int		done;
};

static void *
tid_thread(void *arg)
{
	struct tid_box *b = arg;

	pthread_mutex_lock(&b->mtx);
	b->tid = thread_id();
	pthread_cond_broadcast(&b->cv);
	while (!b->done)
		pthread_cond_wait(&b->cv, &b->mtx);
	pthread_mutex_unlock(&b->mtx);
	return NULL;
}

/* FreeBSD's pfind() finds processes, not threads: ESRCH. */
static void
thread_id_of_other_thread_is_esrch(void **state)
{
	struct tid_box b = { PTHREAD_MUTEX_INITIALIZER,
	    PTHREAD_COND_INITIALIZER, 0, 0 };
	pthread_t t;
	int kq = kqueue(), r, e;

	assert_true(kq >= 0);
	assert_int_equal(pthread_create(&t, NULL, tid_thread, &b), 0);
	pthread_mutex_lock(&b.mtx);
	while (b.tid == 0)
		pthread_cond_wait(&b.cv, &b.mtx);
	pthread_mutex_unlock(&b.mtx);
	if (b.tid < 0)
		skip();
	assert_true(b.tid != (long)getpid());
	r = proc_add(kq, (pid_t)b.tid, EV_ADD, NOTE_EXIT);
	e = errno;
	pthread_mutex_lock(&b.mtx);
	b.done = 1;
	pthread_cond_broadcast(&b.cv);
	pthread_mutex_unlock(&b.mtx);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(r, -1);
	assert_int_equal(e, ESRCH);
	/* The main thread's id is the process's. */
	assert_int_equal(proc_add(kq, getpid(), EV_ADD, NOTE_EXIT), 0);
	close(kq);
}

static void
disabled_knote_reports_exit_when_enabled(void **state)
{
	int kq = kqueue(), go[2];
	pid_t pid = t_spawn_waiting(go, 9);
	struct kevent ev;

	assert_true(kq >= 0);
	assert_int_equal(proc_add(kq, pid, EV_ADD, NOTE_EXIT), 0);
	assert_int_equal(proc_add(kq, pid, EV_DISABLE, NOTE_EXIT), 0);
	release(go);
	wait_zombie(pid);
	assert_int_equal(wait_event(kq, &ev, 100), 0);
	assert_int_equal(proc_add(kq, pid, EV_ENABLE, NOTE_EXIT), 0);
	assert_int_equal(wait_event(kq, &ev, 5000), 1);
	check_exit_event(&ev, pid, 9 << 8);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(kq);
}

/*
 * FreeBSD's filt_proc records the exit when it happens, with the fflags of
 * that moment, disabled or not.  EV_ENABLE, which like every change
 * replaces fflags (here by 0), then reports it with the status.
 */
static void
exit_while_disabled_reported_by_ev_enable_with_zero_fflags(void **state)
{
	int kq = kqueue(), go[2];
	pid_t pid = t_spawn_waiting(go, 6);
	struct kevent ev;

	assert_true(kq >= 0);
	assert_int_equal(proc_add(kq, pid, EV_ADD | EV_DISABLE, NOTE_EXIT), 0);
	release(go);
	wait_zombie(pid);
	assert_int_equal(proc_add(kq, pid, EV_ENABLE, 0), 0);
	assert_int_equal(wait_event(kq, &ev, 2000), 1);
	check_exit_event(&ev, pid, 6 << 8);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(kq);
}

/*
 * The other way round: with fflags 0 when the process exits, the exit is
 * recorded as nothing to report (FreeBSD's EV_DROP), and the knote goes
 * silently even if EV_ENABLE asks for NOTE_EXIT afterwards.
 */
static void
exit_while_disabled_without_interest_is_dropped(void **state)
{
	int kq = kqueue(), go[2];
	pid_t pid = t_spawn_waiting(go, 6);
	struct kevent ev;

	assert_true(kq >= 0);
	assert_int_equal(proc_add(kq, pid, EV_ADD, NOTE_EXIT), 0);
	assert_int_equal(proc_add(kq, pid, EV_DISABLE, 0), 0);
	release(go);
	wait_zombie(pid);
	assert_int_equal(proc_add(kq, pid, EV_ENABLE, NOTE_EXIT), 0);
	assert_int_equal(wait_event(kq, &ev, 200), 0);
	assert_int_equal(proc_add(kq, pid, EV_DELETE, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(kq);
}

static double
cpu_seconds(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void
disabled_knote_of_exited_process_does_not_spin(void **state)
{
	int kq = kqueue(), go[2], i;
	pid_t pid = t_spawn_waiting(go, 0);
	struct kevent ev;
	double c0, c1;

	assert_true(kq >= 0);
	assert_int_equal(proc_add(kq, pid, EV_ADD | EV_DISABLE, NOTE_EXIT), 0);
	release(go);
	wait_zombie(pid);
	c0 = cpu_seconds();
	for (i = 0; i < 3; i++)
		assert_int_equal(wait_event(kq, &ev, 100), 0);
	c1 = cpu_seconds();
	if (c1 - c0 >= 0.05)
		fprintf(stderr, "300 ms of waiting used %.3f s of CPU\n",
		    c1 - c0);
	assert_true(c1 - c0 < 0.05);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(kq);
}

static void
note_fork_reported_on_fork(void **state)
{
	int kq = kqueue(), go[2];
	pid_t pid;
	struct kevent ev;
	char c;

	assert_true(kq >= 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pid_t g;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			T_EXIT(100);
		g = fork();
		if (g == 0)
			T_EXIT(0);
		waitpid(g, NULL, 0);
		if (read(go[0], &c, 1) != 0)	/* until the test closes go */
			T_EXIT(101);
		T_EXIT(0);
	}
	close(go[0]);
	proc_add_or_skip(kq, pid, NOTE_FORK, (void *)0x1234);
	t_expect_none(kq);
	write_all(go[1], "x", 1);
	assert_int_equal(wait_event(kq, &ev, 5000), 1);
	assert_int_equal(ev.ident, (uintptr_t)pid);
	assert_int_equal(ev.filter, EVFILT_PROC);
	assert_int_equal(ev.fflags, NOTE_FORK);
	assert_int_equal(ev.data, 0);
	assert_ptr_equal(ev.udata, (void *)0x1234);
	assert_true(ev.flags & EV_CLEAR);
	assert_false(ev.flags & EV_EOF);
	/* Cleared: nothing more until the next event. */
	assert_int_equal(wait_event(kq, &ev, 50), 0);
	close(go[1]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	/* No NOTE_EXIT asked: dropped silently at exit (EV_DROP). */
	assert_int_equal(wait_event(kq, &ev, 200), 0);
	assert_int_equal(proc_add(kq, pid, EV_DELETE, 0), -1);
	assert_int_equal(errno, ENOENT);
	close(kq);
}

/*
 * EV_DISPATCH disables the knote after the first fork; the second fork and
 * the exit happen while it is disabled, and EV_ENABLE (fflags 0) reports
 * both, with the status, as FreeBSD recorded them when they happened.
 */
static void
fork_and_exit_while_dispatched_reported_on_enable(void **state)
{
	int kq = kqueue(), go[2];
	pid_t pid;
	struct kevent kev, ev;
	char c;

	assert_true(kq >= 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		while (read(go[0], &c, 1) == 1) {
			pid_t g;

			if (c != 'f')
				T_EXIT(3);
			if ((g = fork()) == 0)
				T_EXIT(0);
			waitpid(g, NULL, 0);
		}
		T_EXIT(100);
	}
	close(go[0]);
	EV_SET(&kev, (uintptr_t)pid, EVFILT_PROC, EV_ADD | EV_DISPATCH,
	    NOTE_FORK | NOTE_EXIT, 0, NULL);
	if (kevent(kq, &kev, 1, NULL, 0, NULL) != 0) {
		assert_int_equal(errno, EPERM);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		skip();
	}
	write_all(go[1], "f", 1);
	assert_int_equal(wait_event(kq, &ev, 5000), 1);
	assert_int_equal(ev.fflags, NOTE_FORK);
	write_all(go[1], "f", 1);
	write_all(go[1], "e", 1);
	wait_zombie(pid);
	usleep(50000);		/* the connector's messages are queued */
	assert_int_equal(wait_event(kq, &ev, 50), 0);	/* disabled */
	assert_int_equal(proc_add(kq, pid, EV_ENABLE, 0), 0);
	assert_int_equal(wait_event(kq, &ev, 2000), 1);
	assert_int_equal(ev.ident, (uintptr_t)pid);
	assert_int_equal(ev.fflags, NOTE_FORK | NOTE_EXIT);
	assert_int_equal(ev.data, 3 << 8);
	assert_true(ev.flags & EV_EOF);
	close(go[1]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(kq);
}

static void
note_exec_reported_on_exec(void **state)
{
	int kq = kqueue(), go[2];
	pid_t pid;
	struct kevent ev;
	char c;

	assert_true(kq >= 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			T_EXIT(100);
		execl("/bin/sh", "sh", "-c", "read x", (char *)NULL);
		T_EXIT(127);
	}
	close(go[0]);
	proc_add_or_skip(kq, pid, NOTE_EXEC, NULL);
	t_expect_none(kq);
	/* The shell reads the same pipe: it lives until we close it. */
	write_all(go[1], "x", 1);
	assert_int_equal(wait_event(kq, &ev, 5000), 1);
	assert_int_equal(ev.ident, (uintptr_t)pid);
	assert_int_equal(ev.fflags, NOTE_EXEC);
	assert_int_equal(ev.data, 0);
	assert_true(ev.flags & EV_CLEAR);
	close(go[1]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(wait_event(kq, &ev, 200), 0);
	close(kq);
}

/*
 * The paper's example (Lemon, "Kqueue: A generic and scalable event
 * notification facility", 2001, section 4.1): a knote with FORK, TRACK,
 * EXEC and EXIT on process A, which forks B and C; C forks D, which
 * execs and exits.  The paper shows four kevents:
 *	A: FORK;  B: CHILD data A;  C: CHILD, FORK data A;
 *	D: CHILD, EXEC, EXIT data C.
 * Since the exit status went into data (FreeBSD 5), FreeBSD reports the
 * NOTE_CHILD notice on a knote of its own (knote_fork), so D's EXIT can
 * carry the status: per process, the union of the fflags is the paper's,
 * NOTE_CHILD comes with data = the parent's pid and NOTE_EXIT with the
 * wait(2) status.
 */
struct pidmsg {
	char	who;
	pid_t	pid;
};

static void
tell(int fd, char who, pid_t pid)
{
	struct pidmsg m = { who, pid };

	if (write(fd, &m, sizeof(m)) != sizeof(m))
		T_EXIT(102);
}

static void
proc_A(int go, int end, int out)
{
	pid_t b, c, d;
	char ch;

	if (read(go, &ch, 1) != 1)
		T_EXIT(100);
	b = fork();
	if (b == 0) {
		if (read(end, &ch, 1) != 0)
			T_EXIT(101);
		T_EXIT(0);
	}
	tell(out, 'B', b);
	c = fork();
	if (c == 0) {
		d = fork();
		if (d == 0) {
			execl("/bin/sh", "sh", "-c", "exit 4", (char *)NULL);
			T_EXIT(127);
		}
		tell(out, 'D', d);
		waitpid(d, NULL, 0);
		if (read(end, &ch, 1) != 0)
			T_EXIT(101);
		T_EXIT(0);
	}
	tell(out, 'C', c);
	if (read(end, &ch, 1) != 0)
		T_EXIT(101);
	waitpid(b, NULL, 0);
	waitpid(c, NULL, 0);
	T_EXIT(0);
}

static void
note_track_follows_forks_as_in_the_paper(void **state)
{
	int kq = kqueue(), go[2], end[2], out[2], i, n;
	pid_t a, b = -1, c = -1, d = -1;
	unsigned int fa = 0, fb = 0, fc = 0, fd = 0;
	int nchild = 0, nexit = 0;
	struct kevent ev;
	struct pidmsg m;

	assert_true(kq >= 0);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(end), 0);
	assert_int_equal(pipe(out), 0);
	a = fork();
	assert_true(a >= 0);
	if (a == 0) {
		close(go[1]);
		close(end[1]);
		close(out[0]);
		proc_A(go[0], end[0], out[1]);
	}
	close(go[0]);
	close(end[0]);
	close(out[1]);
	proc_add_or_skip(kq, a, T_ALLPROC, (void *)0xabc);
	write_all(go[1], "x", 1);
	for (i = 0; i < 3; i++) {
		assert_int_equal(read(out[0], &m, sizeof(m)), (ssize_t)sizeof(m));
		if (m.who == 'B')
			b = m.pid;
		else if (m.who == 'C')
			c = m.pid;
		else
			d = m.pid;
	}
	assert_true(b > 0 && c > 0 && d > 0);

	/* Collect until every expected event was seen. */
	for (n = 0; n < 20; n++) {
		if ((fa & NOTE_FORK) && fb == NOTE_CHILD &&
		    fc == (NOTE_CHILD | NOTE_FORK) &&
		    fd == (NOTE_CHILD | NOTE_EXEC | NOTE_EXIT))
			break;
		if (wait_event(kq, &ev, 5000) != 1)
			break;
		assert_int_equal(ev.filter, EVFILT_PROC);
		assert_ptr_equal(ev.udata, (void *)0xabc);
		assert_false(ev.fflags & NOTE_TRACKERR);
		if (ev.fflags & NOTE_CHILD) {
			/* The notice: data = the parent. */
			nchild++;
			assert_int_equal(ev.fflags, NOTE_CHILD);
			assert_int_equal(ev.data,
			    (uintptr_t)ev.ident == (uintptr_t)d ? c : a);
		}
		if (ev.fflags & NOTE_EXIT) {
			nexit++;
			assert_int_equal(ev.ident, (uintptr_t)d);
			assert_true(WIFEXITED((int)ev.data));
			assert_int_equal(WEXITSTATUS((int)ev.data), 4);
			assert_true(ev.flags & EV_EOF);
		} else if (!(ev.fflags & NOTE_CHILD))
			assert_int_equal(ev.data, 0);
		if (ev.ident == (uintptr_t)a)
			fa |= ev.fflags;
		else if (ev.ident == (uintptr_t)b)
			fb |= ev.fflags;
		else if (ev.ident == (uintptr_t)c)
			fc |= ev.fflags;
		else if (ev.ident == (uintptr_t)d)
			fd |= ev.fflags;
		else
			fail_msg("event for unknown pid %ju",
			    (uintmax_t)ev.ident);
	}
	assert_int_equal(fa, NOTE_FORK);
	assert_int_equal(fb, NOTE_CHILD);
	assert_int_equal(fc, NOTE_CHILD | NOTE_FORK);
	assert_int_equal(fd, NOTE_CHILD | NOTE_EXEC | NOTE_EXIT);
	assert_int_equal(nchild, 3);
	assert_int_equal(nexit, 1);

	close(end[1]);
	assert_int_equal(waitpid(a, NULL, 0), a);
	close(go[1]);
	close(out[0]);
	close(kq);
}

#ifdef __linux__
/*
 * A tracked process that forks many children, reaps them and exits before
 * the application calls kevent(): FreeBSD attached a knote to each child
 * at its fork, so every NOTE_CHILD notice and every child's exit is
 * reported, and the parent's exit.  kq used to read the forks after the
 * parent's exit and dropped those past the first batch of 64 messages
 * (attack helper 28's F4).
 */
#define TRACK_N	150

static void
tracked_process_exiting_before_kevent_reports_every_child(void **state)
{
	int kq = kqueue(), go[2], gone[2], i, notes = 0, exits = 0, pexit = 0;
	struct kevent ev;
	char x;
	pid_t c;

	(void)state;
	assert_true(kq >= 0);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(gone), 0);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		close(go[1]);
		close(gone[0]);
		if (read(go[0], &x, 1) != 1)
			_exit(9);
		for (i = 0; i < TRACK_N; i++)
			if (fork() == 0)
				_exit(i);
		while (wait(NULL) > 0)
			;
		_exit(0);
	}
	close(go[0]);
	close(gone[1]);
	proc_add_or_skip(kq, c, NOTE_EXIT | NOTE_FORK | NOTE_TRACK, NULL);
	write_all(go[1], "x", 1);
	/* The process and its children are gone before kq is asked. */
	assert_int_equal(read(gone[0], &x, 1), 0);
	usleep(20000);
	while ((pexit == 0 || notes < TRACK_N || exits < TRACK_N) &&
	    wait_event(kq, &ev, 5000) == 1) {
		assert_int_equal(ev.filter, EVFILT_PROC);
		assert_false(ev.fflags & NOTE_TRACKERR);
		if (ev.ident == (uintptr_t)c) {
			if (ev.fflags & NOTE_EXIT) {
				pexit++;
				assert_int_equal(ev.data, 0);
			}
			continue;
		}
		if (ev.fflags & NOTE_CHILD) {
			notes++;
			assert_int_equal(ev.data, c);
		}
		if (ev.fflags & NOTE_EXIT) {
			exits++;
			assert_true(WIFEXITED((int)ev.data));
			assert_true(WEXITSTATUS((int)ev.data) < TRACK_N);
		}
	}
	assert_int_equal(pexit, 1);
	assert_int_equal(notes, TRACK_N);
	assert_int_equal(exits, TRACK_N);
	assert_int_equal(waitpid(c, NULL, 0), c);
	close(go[1]);
	close(gone[0]);
	close(kq);
}

static void *
leaderless_forker(void *arg)
{
	(void)arg;
	usleep(100000);		/* the main thread has ended by now */
	if (fork() == 0) {
		usleep(50000);
		_exit(4);
	}
	usleep(100000);
	T_EXIT(0);	/* not exit(): LeakSanitizer would report cmocka's
			   memory, which the ended main thread still held */
}

/*
 * A tracked process whose main thread ended (pthread_exit) while another
 * thread forks: the fork is the process's, reported with NOTE_FORK, and
 * the child is followed (FreeBSD's knote_fork).  The connector reports
 * the main thread's end as the leader's exit, after which kq took the
 * fork for a new process under a reused pid (helper 29's P4).  With
 * late, kevent() looks only once the whole process has exited and been
 * reaped.
 */
static void
check_fork_after_the_main_thread_ended(int late)
{
	int kq = kqueue(), go[2], pfork = 0, cchild = 0, cexit = 0, pexit = 0;
	struct kevent ev;
	pthread_t t;
	char x;
	pid_t p;

	assert_true(kq >= 0);
	assert_int_equal(pipe(go), 0);
	p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		close(go[1]);
		if (read(go[0], &x, 1) != 1)
			_exit(9);
		if (pthread_create(&t, NULL, leaderless_forker, NULL) != 0)
			_exit(8);
		pthread_exit(NULL);
	}
	close(go[0]);
	proc_add_or_skip(kq, p, NOTE_EXIT | NOTE_FORK | NOTE_TRACK, NULL);
	write_all(go[1], "x", 1);
	if (late) {
		assert_int_equal(waitpid(p, NULL, 0), p);
		usleep(100000);		/* the forked child has exited too */
	}
	while (!(pexit && cexit) && wait_event(kq, &ev, 5000) == 1) {
		assert_false(ev.fflags & NOTE_TRACKERR);
		if (ev.ident == (uintptr_t)p) {
			pfork |= (ev.fflags & NOTE_FORK) != 0;
			pexit |= (ev.fflags & NOTE_EXIT) != 0;
		} else {
			cchild |= (ev.fflags & NOTE_CHILD) != 0;
			cexit |= (ev.fflags & NOTE_EXIT) != 0;
		}
	}
	assert_true(pfork);
	assert_true(cchild);
	assert_true(cexit);
	assert_true(pexit);
	if (!late)
		assert_int_equal(waitpid(p, NULL, 0), p);
	close(go[1]);
	close(kq);
}

static void
fork_after_the_main_thread_ended_is_followed(void **state)
{
	check_fork_after_the_main_thread_ended(0);
}

/*
 * As above, but kevent() looks only once the whole process has exited and
 * been reaped: the fork its other thread made after the main thread ended
 * is still the process's own, not a later process's under the same pid.
 */
static void
fork_after_the_main_thread_ended_is_followed_when_read_after_the_exit(
    void **state)
{
	check_fork_after_the_main_thread_ended(1);
}

/*
 * A grandchild (not our child: its status is not ours to wait for) whose
 * main thread does not end the process: in mode 0 the main thread calls
 * pthread_exit() and a second thread, 200 ms later, _exit(5); in mode 1
 * the second thread execs a shell that exits 5 (an exec takes over the
 * main thread's pid and ends that thread).  Its parent reaps it only when
 * told to.
 */
static void *
late_exit_thread(void *arg)
{
	usleep(200000);
	if (arg != NULL)
		execl("/bin/sh", "sh", "-c", "exit 5", (char *)NULL);
	T_EXIT(5);	/* the whole process (not exit(): LeakSanitizer's
			   report of the ended thread would change the code) */
}

static pid_t
spawn_threaded_grandchild(int mode, int go[2], int reap[2], pid_t *parent)
{
	int pp[2];
	pid_t g;

	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(reap), 0);
	assert_int_equal(pipe(pp), 0);
	*parent = fork();
	assert_true(*parent >= 0);
	if (*parent == 0) {
		close(go[1]);
		close(reap[1]);
		close(pp[0]);
		if ((g = fork()) < 0)
			T_EXIT(100);
		if (g == 0) {
			pthread_t t;
			char c;

			if (read(go[0], &c, 1) != 1 || pthread_create(&t, NULL,
			    late_exit_thread, mode ? &c : NULL) != 0)
				T_EXIT(101);
			if (mode == 0)
				pthread_exit(NULL);
			for (;;)
				pause();
		}
		if (write(pp[1], &g, sizeof(g)) != (ssize_t)sizeof(g))
			T_EXIT(102);
		read_to_eof(reap[0]);
		T_EXIT(waitpid(g, NULL, 0) == g ? 0 : 103);
	}
	close(go[0]);
	close(reap[0]);
	close(pp[1]);
	assert_int_equal(read(pp[0], &g, sizeof(g)), (ssize_t)sizeof(g));
	close(pp[0]);
	return g;
}

static void
check_threaded_grandchild_exit(int mode)
{
	int kq = kqueue(), go[2], reap[2], exec = 0, st;
	struct kevent ev;
	pid_t parent, g = spawn_threaded_grandchild(mode, go, reap, &parent);

	assert_true(kq >= 0);
	proc_add_or_skip(kq, g, NOTE_EXIT | NOTE_EXEC | NOTE_FORK, NULL);
	release(go);
	for (;;) {
		assert_int_equal(wait_event(kq, &ev, 5000), 1);
		assert_int_equal(ev.ident, (uintptr_t)g);
		exec |= (ev.fflags & NOTE_EXEC) != 0;
		if (ev.fflags & NOTE_EXIT)
			break;
	}
	assert_int_equal(ev.data, 5 << 8);
	assert_int_equal(exec, mode);
	close(reap[1]);
	assert_int_equal(waitpid(parent, &st, 0), parent);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(kq);
}

static void
exit_status_of_a_process_whose_main_thread_ended_first_is_the_process_status(
    void **state)
{
	check_threaded_grandchild_exit(0);
}

static void
exit_status_of_a_process_that_a_second_thread_exec_d_is_the_new_program_s(
    void **state)
{
	check_threaded_grandchild_exit(1);
}

/*
 * A followed process forks a child that exits 5 and is reaped, and a new
 * process of ours takes the child's pid, all before kevent() looks: the
 * child is reported (NOTE_CHILD) and its exit with its own status, at
 * once, not the new process's when that one ends.  The pid's reuse is
 * forced through Linux's ns_last_pid (skipped where it cannot be written);
 * FreeBSD has no such knob, so the test is Linux's only.
 */
#ifdef __linux__
static int
set_last_pid(pid_t p)
{
	char b[32];
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY), n, r;

	if (fd < 0)
		return -1;
	n = snprintf(b, sizeof(b), "%d", (int)p);
	r = (int)write(fd, b, (size_t)n);
	close(fd);
	return r == n ? 0 : -1;
}

/* A child of ours under pid want that exits 9 after 1.5 s, or -1. */
static pid_t
fork_as(pid_t want)
{
	for (int tries = 0; tries < 200; tries++) {
		pid_t q;

		if (set_last_pid(want - 1) != 0)
			return -1;
		if ((q = fork()) == 0) {
			if (getpid() == want)
				usleep(1500000);
			T_EXIT(getpid() == want ? 9 : 0);
		}
		if (q == want)
			return q;
		if (q > 0)
			(void)waitpid(q, NULL, 0);
	}
	return -1;
}
#endif

static void
tracked_child_whose_pid_was_reused_before_kevent_reports_its_own_exit(
    void **state)
{
#ifdef __linux__
	int kq = kqueue(), go[2], info[2], cchild = 0, cexit = 0, i, n;
	struct kevent ev[16];
	struct timespec t0, t1;
	pid_t p, c, c2;
	char x;

	assert_true(kq >= 0);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(info), 0);
	p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		if (read(go[0], &x, 1) != 1)
			T_EXIT(100);
		if ((c = fork()) == 0)
			T_EXIT(5);
		if (c < 0 || waitpid(c, NULL, 0) != c ||
		    write(info[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			T_EXIT(101);
		sleep(5);	/* killed before, unless the test failed */
		T_EXIT(0);
	}
	proc_add_or_skip(kq, p, NOTE_EXIT | NOTE_FORK | NOTE_TRACK, NULL);
	write_all(go[1], "x", 1);
	assert_int_equal(read(info[0], &c, sizeof(c)), (ssize_t)sizeof(c));
	if ((c2 = fork_as(c)) < 0) {
		kill(p, SIGKILL);
		assert_int_equal(waitpid(p, NULL, 0), p);
		skip();		/* ns_last_pid not writable here */
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct timespec ts = { 0, 100000000 };

		n = kevent(kq, NULL, 0, ev, 16, &ts);
		assert_true(n >= 0);
		for (i = 0; i < n; i++) {
			if (ev[i].ident != (uintptr_t)c)
				continue;
			cchild |= (ev[i].fflags & NOTE_CHILD) != 0;
			if (ev[i].fflags & NOTE_EXIT) {
				assert_int_equal(ev[i].data, 5 << 8);
				cexit = 1;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (!(cchild && cexit) && t1.tv_sec - t0.tv_sec < 1);
	/* Within the second: the new process lives 1.5 s. */
	assert_true(cchild);
	assert_true(cexit);
	kill(p, SIGKILL);
	assert_int_equal(waitpid(p, NULL, 0), p);
	assert_int_equal(waitpid(c2, NULL, 0), c2);
	close(kq);
#else
	skip();
#endif
}

/*
 * NOTE_TRACKERR: the child's knote cannot be attached.  Provoked on Linux
 * by the descriptor limit (kq holds a pidfd per knote); FreeBSD would
 * need a kernel allocation failure.
 */
static void
note_trackerr_when_child_cannot_be_attached(void **state)
{
	int kq = kqueue(), go[2], lowest;
	pid_t pid;
	struct kevent ev;
	struct rlimit rl, rl0;
	char c;

	assert_true(kq >= 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pid_t g;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			T_EXIT(100);
		g = fork();
		if (g == 0) {
			if (read(go[0], &c, 1) != 0)
				T_EXIT(101);
			T_EXIT(0);
		}
		if (read(go[0], &c, 1) != 0)
			T_EXIT(101);
		waitpid(g, NULL, 0);
		T_EXIT(0);
	}
	close(go[0]);
	proc_add_or_skip(kq, pid, NOTE_FORK | NOTE_TRACK, NULL);
	/* Let no new descriptor be allocated. */
	lowest = dup(0);
	assert_true(lowest >= 0);
	close(lowest);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl0), 0);
	rl = rl0;
	rl.rlim_cur = (rlim_t)lowest;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	write_all(go[1], "x", 1);
	assert_int_equal(wait_event(kq, &ev, 5000), 1);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl0), 0);
	assert_int_equal(ev.ident, (uintptr_t)pid);
	assert_int_equal(ev.fflags, NOTE_FORK | NOTE_TRACKERR);
	close(go[1]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(kq);
}
#endif

/* A process descriptor of a child waiting on go (pidfd / pdfork). */
static int
procdesc_waiting(int go[2], int code, pid_t *pidp)
{
	pid_t pid = t_spawn_waiting(go, code);
	int pd;

#ifdef __linux__
	pd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
	pd = -1;	/* FreeBSD: use pdfork() */
#endif
	if (pd < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		skip();
	}
	*pidp = pid;
	return pd;
}

static void
procdesc_note_exit_reports_status(void **state)
{
	int kq = kqueue(), go[2], pd, st;
	pid_t pid;
	struct kevent kev, ev;

	assert_true(kq >= 0);
	pd = procdesc_waiting(go, 5, &pid);
	EV_SET(&kev, (uintptr_t)pd, EVFILT_PROCDESC, EV_ADD, NOTE_EXIT, 0,
	    (void *)0x77);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	t_expect_none(kq);
	release(go);
	assert_int_equal(wait_event(kq, &ev, 5000), 1);
	assert_int_equal(ev.ident, (uintptr_t)pd);
	assert_int_equal(ev.filter, EVFILT_PROCDESC);
	assert_int_equal(ev.fflags, NOTE_EXIT);
	assert_int_equal(ev.data, 5 << 8);
	assert_true(ev.flags & EV_EOF);
	assert_true(ev.flags & EV_ONESHOT);
	assert_true(ev.flags & EV_CLEAR);
	assert_ptr_equal(ev.udata, (void *)0x77);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(st, 5 << 8);
	/* One-shot: gone. */
	EV_SET(&kev, (uintptr_t)pd, EVFILT_PROCDESC, EV_DELETE, 0, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), -1);
	assert_int_equal(errno, ENOENT);
	close(pd);
	close(kq);
}

static void
procdesc_on_exited_process_fires_at_once(void **state)
{
	int kq = kqueue(), go[2], pd;
	pid_t pid;
	struct kevent kev, ev;

	assert_true(kq >= 0);
	pd = procdesc_waiting(go, 0, &pid);
	assert_int_equal(kill(pid, SIGTERM), 0);
	wait_zombie(pid);
	EV_SET(&kev, (uintptr_t)pd, EVFILT_PROCDESC, EV_ADD, NOTE_EXIT, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	ev = t_expect_one(kq);
	assert_int_equal(ev.fflags, NOTE_EXIT);
	assert_int_equal(ev.data, SIGTERM);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(go[1]);
	close(pd);
	close(kq);
}

/* As for EVFILT_PROC: procdesc_kqops_event records the exit when it comes. */
static void
procdesc_exit_while_disabled_reported_by_ev_enable_with_zero_fflags(
    void **state)
{
	int kq = kqueue(), go[2], pd;
	pid_t pid;
	struct kevent kev, ev;

	assert_true(kq >= 0);
	pd = procdesc_waiting(go, 4, &pid);
	EV_SET(&kev, (uintptr_t)pd, EVFILT_PROCDESC, EV_ADD | EV_DISABLE,
	    NOTE_EXIT, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	release(go);
	wait_zombie(pid);
	assert_int_equal(wait_event(kq, &ev, 100), 0);
	EV_SET(&kev, (uintptr_t)pd, EVFILT_PROCDESC, EV_ENABLE, 0, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	assert_int_equal(wait_event(kq, &ev, 2000), 1);
	assert_int_equal(ev.ident, (uintptr_t)pd);
	assert_int_equal(ev.filter, EVFILT_PROCDESC);
	assert_int_equal(ev.fflags, NOTE_EXIT);
	assert_int_equal(ev.data, 4 << 8);
	assert_true(ev.flags & EV_EOF);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(pd);
	close(kq);
}

/*
 * A process descriptor knote without NOTE_EXIT is dropped silently when
 * the process exits (FreeBSD's procdesc_kqops_event sets EV_DROP).
 */
static void
procdesc_exit_without_note_exit_is_dropped_silently(void **state)
{
	int kq = kqueue(), go[2], pd;
	pid_t pid;
	struct kevent kev, ev;

	assert_true(kq >= 0);
	pd = procdesc_waiting(go, 5, &pid);
	EV_SET(&kev, (uintptr_t)pd, EVFILT_PROCDESC, EV_ADD, 0, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	t_expect_none(kq);
	release(go);
	wait_zombie(pid);
	assert_int_equal(wait_event(kq, &ev, 200), 0);
	EV_SET(&kev, (uintptr_t)pd, EVFILT_PROCDESC, EV_DELETE, 0, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(pd);
	close(kq);
}

static void
procdesc_on_pipe_is_einval(void **state)
{
	int kq = kqueue(), p[2];
	struct kevent kev;

	assert_true(kq >= 0);
	assert_int_equal(pipe(p), 0);
	EV_SET(&kev, (uintptr_t)p[0], EVFILT_PROCDESC, EV_ADD, NOTE_EXIT, 0,
	    NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), -1);
	assert_int_equal(errno, EINVAL);
	close(p[0]);
	close(p[1]);
	close(kq);
}

static void
procdesc_close_drops_knote(void **state)
{
	int kq = kqueue(), go[2], pd;
	pid_t pid;
	struct kevent kev, ev;

	assert_true(kq >= 0);
	pd = procdesc_waiting(go, 0, &pid);
	EV_SET(&kev, (uintptr_t)pd, EVFILT_PROCDESC, EV_ADD, NOTE_EXIT, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
	close(pd);
	release(go);
	wait_zombie(pid);
	assert_int_equal(wait_event(kq, &ev, 100), 0);
	EV_SET(&kev, (uintptr_t)pd, EVFILT_PROCDESC, EV_DELETE, 0, 0, NULL);
	assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(kq);
}

/*
 * A fork() child inherits no kqueue: no descriptor that kqueue() and
 * kevent() opened is open in the child -- neither the kqueue's nor any
 * behind its EVFILT_PROC knote.  (Descriptors open before, the pipe to the
 * watched child among them, are not counted.)
 */
static void
fork_child_inherits_nothing_of_a_kqueue_with_proc_knotes(void **state)
{
	enum { NFD = 256 };
	char before[NFD];
	int go[2], kq, st;
	pid_t pid = t_spawn_waiting(go, 0), g;

	(void)state;
	for (int fd = 0; fd < NFD; fd++)
		before[fd] = fcntl(fd, F_GETFD) >= 0;
	kq = kqueue();
	assert_true(kq >= 0 && kq < NFD);
	assert_int_equal(proc_add(kq, pid, EV_ADD, NOTE_EXIT), 0);
	g = fork();
	assert_true(g >= 0);
	if (g == 0) {
		int open = 0;

		for (int fd = 0; fd < NFD; fd++)
			if (!before[fd] && fcntl(fd, F_GETFD) >= 0)
				open++;
		T_EXIT(open);
	}
	assert_int_equal(waitpid(g, &st, 0), g);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	release(go);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(kq);
}

static void
close_of_kqueue_with_proc_knotes_leaks_no_descriptors(void **state)
{
	int go[2], fds0 = -1, fds1, i, cn = 1;
	pid_t pid = t_spawn_waiting(go, 0);

	for (i = 0; i < 40; i++) {
		int kq, pd = -1;

		if (i == 4)
			fds0 = t_count_fds();
		kq = kqueue();
		assert_true(kq >= 0);
		assert_int_equal(proc_add(kq, pid, EV_ADD, NOTE_EXIT), 0);
		if (cn && proc_add(kq, pid, EV_ADD, T_ALLPROC) != 0) {
			assert_int_equal(errno, EPERM);
			cn = 0;
		}
#ifdef __linux__
		pd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
		if (pd >= 0) {
			struct kevent kev;

			EV_SET(&kev, (uintptr_t)pd, EVFILT_PROCDESC, EV_ADD,
			    NOTE_EXIT, 0, NULL);
			assert_int_equal(kevent(kq, &kev, 1, NULL, 0, NULL), 0);
		}
		if (i & 1) {
			struct kevent ev;

			assert_int_equal(wait_event(kq, &ev, 0), 0);
		}
		if (pd >= 0 && (i & 2))
			close(pd);
		assert_int_equal(close(kq), 0);
		if (pd >= 0 && !(i & 2))
			close(pd);
	}
	fds1 = t_count_fds();
	if (fds0 >= 0) {
		if (fds1 != fds0)
			fprintf(stderr, "descriptors: %d before, %d after\n",
			    fds0, fds1);
		assert_int_equal(fds1, fds0);
	}
	release(go);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/*
 * A followed child whose main thread ends first (pthread_exit) while
 * another thread of it goes on and calls _exit(42): its NOTE_EXIT carries
 * the process's status, 42, as wait(2) gives it -- also when its parent
 * reaped it before kevent() read its fork, so that kq follows it through
 * the process-events connector alone (attack helper 51's D1: the main
 * thread's 0 was reported).
 */
static void *
exit_42_later(void *arg)
{
	(void)arg;
	usleep(20000);
	_exit(42);	/* the whole group (no atexit: LeakSanitizer) */
}

static void
tracked_child_whose_main_thread_ended_first_reports_the_process_status(
    void **state)
{
	int kq = t_new_kq(), go[2], rep[2], st, i, n, notice = 0, ends = 0;
	struct kevent ev[16];
	struct timespec t0, t1;
	int64_t data = -1;
	pid_t p, c;
	char x;

	(void)state;
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(rep), 0);
	p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		close(go[1]);
		close(rep[0]);
		if (read(go[0], &x, 1) != 1)
			T_EXIT(100);
		if ((c = fork()) == 0) {
			pthread_t t;

			if (pthread_create(&t, NULL, exit_42_later, NULL) != 0)
				_exit(101);
			pthread_exit(NULL);
		}
		if (c < 0 || waitpid(c, &st, 0) != c)	/* reaped at once */
			T_EXIT(102);
		if (write(rep[1], &c, sizeof(c)) != sizeof(c) ||
		    write(rep[1], &st, sizeof(st)) != sizeof(st))
			T_EXIT(103);
		(void)read(go[0], &x, 1);
		T_EXIT(0);
	}
	close(go[0]);
	close(rep[1]);
	t_follow_or_skip(kq, p, NOTE_EXIT | NOTE_TRACK);
	write_all(go[1], "g", 1);
	assert_int_equal(read(rep[0], &c, sizeof(c)), (ssize_t)sizeof(c));
	assert_int_equal(read(rep[0], &st, sizeof(st)), (ssize_t)sizeof(st));
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 42);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct timespec ts = { 0, 200 * 1000 * 1000 };

		n = kevent(kq, NULL, 0, ev, 16, &ts);
		assert_true(n >= 0);
		for (i = 0; i < n; i++) {
			if (ev[i].ident != (uintptr_t)c)
				continue;
			if (ev[i].fflags & NOTE_CHILD) {
				assert_int_equal(ends, 0);
				notice++;
			} else if (ev[i].flags & EV_EOF) {
				assert_true(ev[i].fflags & NOTE_EXIT);
				data = ev[i].data;
				ends++;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (!ends && t1.tv_sec - t0.tv_sec < 5);
	write_all(go[1], "q", 1);
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(go[1]);
	close(rep[0]);
	assert_int_equal(notice, 1);
	assert_int_equal(ends, 1);
	assert_true(WIFEXITED(data));
	assert_int_equal(WEXITSTATUS(data), 42);
	close(kq);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(note_exit_reports_exit_status),
		cmocka_unit_test(note_exit_reports_killing_signal),
		cmocka_unit_test(note_exit_on_zombie_fires_at_once),
		cmocka_unit_test(note_exit_of_a_process_not_our_child_reports_its_status),
		cmocka_unit_test(note_exit_of_a_reaped_process_not_our_child_reports_its_status),
		cmocka_unit_test(zombie_without_note_exit_is_esrch),
		cmocka_unit_test(unknown_pid_is_esrch),
		cmocka_unit_test(thread_id_of_other_thread_is_esrch),
		cmocka_unit_test(disabled_knote_reports_exit_when_enabled),
		cmocka_unit_test(disabled_knote_of_exited_process_does_not_spin),
		cmocka_unit_test(exit_while_disabled_reported_by_ev_enable_with_zero_fflags),
		cmocka_unit_test(exit_while_disabled_without_interest_is_dropped),
		cmocka_unit_test(note_fork_reported_on_fork),
		cmocka_unit_test(fork_and_exit_while_dispatched_reported_on_enable),
		cmocka_unit_test(note_exec_reported_on_exec),
		cmocka_unit_test(note_track_follows_forks_as_in_the_paper),
		cmocka_unit_test(
		    tracked_process_exiting_before_kevent_reports_every_child),
		cmocka_unit_test(fork_after_the_main_thread_ended_is_followed),
		cmocka_unit_test(
		    tracked_child_whose_pid_was_reused_before_kevent_reports_its_own_exit),
		cmocka_unit_test(
		    exit_status_of_a_process_whose_main_thread_ended_first_is_the_process_status),
		cmocka_unit_test(
		    exit_status_of_a_process_that_a_second_thread_exec_d_is_the_new_program_s),
		cmocka_unit_test(
		    fork_after_the_main_thread_ended_is_followed_when_read_after_the_exit),
#ifdef __linux__
		cmocka_unit_test(note_trackerr_when_child_cannot_be_attached),
#endif
		cmocka_unit_test(procdesc_note_exit_reports_status),
		cmocka_unit_test(procdesc_on_exited_process_fires_at_once),
		cmocka_unit_test(procdesc_exit_while_disabled_reported_by_ev_enable_with_zero_fflags),
		cmocka_unit_test(procdesc_exit_without_note_exit_is_dropped_silently),
		cmocka_unit_test(procdesc_on_pipe_is_einval),
		cmocka_unit_test(procdesc_close_drops_knote),
		cmocka_unit_test(close_of_kqueue_with_proc_knotes_leaks_no_descriptors),
		cmocka_unit_test(fork_child_inherits_nothing_of_a_kqueue_with_proc_knotes),
		cmocka_unit_test(tracked_child_whose_main_thread_ended_first_reports_the_process_status),
	};

	signal(SIGPIPE, SIG_IGN);
	return t_run_group(tests, NULL, NULL);
}
