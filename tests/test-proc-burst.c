/*
 * test-proc-burst.c -- EVFILT_PROC when the kernel drops process events.
 *
 * A binary of its own: its burst of process events overflows the buffer
 * of every listener to Linux's process events connector on the machine,
 * so a test beside it that follows processes (NOTE_TRACK) would see
 * NOTE_TRACKERR (tools/run-tests.sh runs a binary's tests two at a time).
 */
#include <signal.h>
#include <spawn.h>
#include <unistd.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "helpers.h"

/*
 * A followed process spawns twenty thousand children, which exit at once,
 * and exits, all before kevent() looks and reaped by us: more fork and
 * exit events than the kernel keeps for a reader that does not read
 * (Linux drops the rest, and NOTE_TRACKERR says so).  The process's own
 * exit is still reported, once, within a bound.  (Its status may be lost
 * with the dropped events on Linux: see LINUX NOTES; only the event is
 * asserted.)
 */
#define T_BURST	20000

static void
exit_is_reported_after_a_burst_of_forks_the_kqueue_did_not_read(void **state)
{
	int kq = kqueue(), go[2], st, got = 0, i, n;
	struct kevent ev[64];
	struct timespec t0, t1;
	char *argv[] = { "kq-burst", NULL };
	pid_t pid;
	char c;

#ifdef __linux__
	/* The orphans come to us, not to an init that may not reap. */
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
#endif
	assert_true(kq >= 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			T_EXIT(100);
		/* posix_spawn() of a program that is not there: a fork
		   and an exit each, without fork()'s copy of the address
		   space (seconds under the sanitizers). */
		for (i = 0; i < T_BURST; i++)
			(void)posix_spawn(NULL, "/nonexistent/kq-burst", NULL,
			    NULL, argv, environ);
		T_EXIT(5);
	}
	close(go[0]);
	EV_SET(&ev[0], (uintptr_t)pid, EVFILT_PROC, EV_ADD,
	    NOTE_EXIT | NOTE_TRACK, 0, NULL);
	if (kevent(kq, ev, 1, NULL, 0, NULL) != 0) {
		assert_int_equal(errno, EPERM);	/* no process events */
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, NULL, 0), pid);
		skip();
	}
	write_all(go[1], "x", 1);
	close(go[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 5);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct timespec ts = { 1, 0 };

		n = kevent(kq, NULL, 0, ev, 64, &ts);
		assert_true(n >= 0);
		for (i = 0; i < n; i++)
			if (ev[i].ident == (uintptr_t)pid &&
			    (ev[i].fflags & NOTE_EXIT)) {
				assert_true(ev[i].flags & EV_EOF);
				got++;
			}
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (!got && t1.tv_sec - t0.tv_sec < 15);
	assert_int_equal(got, 1);
	close(kq);
	while (waitpid(-1, NULL, WNOHANG) > 0)	/* the orphans */
		;
#ifdef __linux__
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
#endif
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    exit_is_reported_after_a_burst_of_forks_the_kqueue_did_not_read),
	};

	return t_run_group(tests, NULL, NULL);
}
