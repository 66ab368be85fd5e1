/*
 * system.c -- system(3) in the C library's place.
 *
 * POSIX has system() ignore SIGINT and SIGQUIT in the caller while the
 * command runs.  glibc's does it with its internal sigaction, which kq's
 * (sigshim.c) never sees: the kernel then discards those signals, and an
 * EVFILT_SIGNAL knote watching one -- which on FreeBSD counts a signal
 * even while it is ignored -- loses them (attack helper 22's F2: a SIGINT
 * sent by the command was never reported).  This one does what glibc's
 * does, through kq's sigaction(), so a watched signal is ignored for the
 * program and still counted:
 *   - the first of concurrent calls saves SIGINT's and SIGQUIT's actions
 *     and ignores both, the last puts them back (sys_lock, sys_users);
 *   - SIGCHLD is blocked in the calling thread until the command is
 *     waited for;
 *   - the command runs as "/bin/sh -c line", with the caller's signal
 *     mask and with SIGINT and SIGQUIT at their default unless they were
 *     ignored before (one that a knote watches is at its default even
 *     then: the kernel holds kq's handler, which exec resets -- as any
 *     exec from a process watching an ignored signal, kevent.2);
 *   - a shell that cannot be started is reported as an exit status of
 *     127, with errno set;
 *   - it is a cancellation point (the wait): a cancelled call kills the
 *     command, waits for it and puts everything back.
 * system(NULL) says whether a shell can be run.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kq_int.h"

extern char **environ;

static pthread_mutex_t sys_lock = PTHREAD_MUTEX_INITIALIZER;
static int sys_users;			/* calls in progress */
static struct sigaction sys_intr, sys_quit;	/* the actions before */

struct sys_call {
	pid_t		pid;
	sigset_t	omask;		/* the caller's mask */
};

static void
sys_restore(const sigset_t *omask)
{
	(void)pthread_mutex_lock(&sys_lock);
	if (--sys_users == 0) {
		(void)sigaction(SIGINT, &sys_intr, NULL);
		(void)sigaction(SIGQUIT, &sys_quit, NULL);
	}
	(void)pthread_mutex_unlock(&sys_lock);
	(void)pthread_sigmask(SIG_SETMASK, omask, NULL);
}

/* The calling thread was cancelled in the wait. */
static void
sys_cancelled(void *arg)
{
	struct sys_call *c = arg;

	(void)kill(c->pid, SIGKILL);
	while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
	sys_restore(&c->omask);
}

static int
sys_run(const char *line)
{
	char *const argv[] = { (char *)"sh", (char *)"-c", (char *)line,
	    NULL };
	struct sigaction ign;
	struct sys_call c;
	posix_spawnattr_t attr;
	sigset_t chld, def;
	int status = -1, r, e;
	pid_t w;

	ign.sa_handler = SIG_IGN;
	ign.sa_flags = 0;
	sigemptyset(&ign.sa_mask);
	sigemptyset(&def);
	(void)pthread_mutex_lock(&sys_lock);
	if (sys_users++ == 0) {
		(void)sigaction(SIGINT, &ign, &sys_intr);
		(void)sigaction(SIGQUIT, &ign, &sys_quit);
	}
	if (sys_intr.sa_handler != SIG_IGN)
		sigaddset(&def, SIGINT);
	if (sys_quit.sa_handler != SIG_IGN)
		sigaddset(&def, SIGQUIT);
	(void)pthread_mutex_unlock(&sys_lock);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	(void)pthread_sigmask(SIG_BLOCK, &chld, &c.omask);
	if ((r = posix_spawnattr_init(&attr)) == 0) {
		(void)posix_spawnattr_setsigmask(&attr, &c.omask);
		(void)posix_spawnattr_setsigdefault(&attr, &def);
		(void)posix_spawnattr_setflags(&attr,
		    POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
		r = posix_spawn(&c.pid, "/bin/sh", NULL, &attr, argv,
		    environ);
		(void)posix_spawnattr_destroy(&attr);
	}
	if (r == 0) {
		pthread_cleanup_push(sys_cancelled, &c);
		while ((w = waitpid(c.pid, &status, 0)) < 0 && errno == EINTR)
			;
		if (w != c.pid)
			status = -1;
		pthread_cleanup_pop(0);
	} else
		status = 127 << 8;	/* as if the shell did _exit(127) */
	e = r != 0 ? r : errno;
	sys_restore(&c.omask);
	errno = e;
	return status;
}

KQ_EXPORT int
system(const char *line)
{
	if (line == NULL)
		return sys_run("exit 0") == 0;
	return sys_run(line);
}
