/*
 * a17: a16's churn (four threads making kqueues of most filters, a SIGALRM
 * handler closing them every 300 us, here with close_range(k, k, 0)) and a
 * thread that forks every 2 ms; each child looks at its descriptors with
 * raw system calls and exits.  Three properties:
 *   - no fork stalls: a handler on the forking thread that waited for a
 *     kqueue's lock held by a thread waiting at the maker gate for that
 *     very fork cost the gate's whole patience per section (one fork took
 *     5 to 12 s in 15 of 16 runs before c14bdaf: several sections' 1 s
 *     stacked), and a handler that ran on the forking thread in the
 *     parent handler, after it left kq's in-lock state and before it
 *     opened the gate, waited for its own thread's fork (one fork of
 *     1.0 s in 6 runs of 8 before the session-21 fix).  Exit 5 if one
 *     takes 0.9 s or more, nearly the gate's patience (the longest is
 *     printed);
 *   - no child inherits a kqueue's epoll descriptor, timerfd, pidfd or
 *     inotify descriptor: fork() copies the descriptor table before the
 *     memory, and a number the handler closed in between was left open in
 *     a child whose copy said the kqueue had died (5 runs of 8 before
 *     95b9b39).  Exit 4;
 *   - no hang (exit 2) and no descriptor left in the parent (exit 1),
 *     counted once the forking thread has ended too (before, the count
 *     was taken while a handler on it could still be destroying a
 *     kqueue: 1 run in 30 to 60 saw a whole kqueue's descriptors).
 */
#include <sys/syscall.h>

#include "churn.h"
#include "../inherited.h"

static atomic_int forks, badchild, slowfork;
static double maxfork;	/* seconds, the longest fork() */

/* The handler's closer: close_range() of the one number. */
static int
close_one(int k)
{
	return close_range((unsigned)k, (unsigned)k, 0);
}

/* In the child: 1 if a descriptor of a kqueue's kinds is open. */
static int
child_has_kq_fds(void)
{
	char buf[4096], p[64], l[128];
	int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY), bad = 0;
	long n, o;

	while (d >= 0 && (n = syscall(SYS_getdents64, d, buf, sizeof(buf))) > 0)
		for (o = 0; o < n; ) {
			const char *name = buf + o + 19;	/* d_name */
			unsigned short reclen;
			ssize_t r;

			memcpy(&reclen, buf + o + 16, sizeof(reclen));
			o += reclen;
			if (name[0] == '.' || atoi(name) == d ||
			    t_inherited(atoi(name)))
				continue;
			snprintf(p, sizeof(p), "/proc/self/fd/%s", name);
			if ((r = readlink(p, l, sizeof(l) - 1)) < 0)
				continue;
			l[r] = 0;
			if (strstr(l, "eventpoll") || strstr(l, "timerfd") ||
			    strstr(l, "inotify") || strstr(l, "pidfd"))
				bad = 1;
		}
	return bad;
}

static void *
forker(void *a)
{
	(void)a;
	while (!stop) {
		struct timespec t0, t1;
		double dt;
		pid_t p;
		int st;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		if ((p = fork()) == 0)
			_exit(child_has_kq_fds() ? 4 : 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		dt = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (dt > maxfork)
			maxfork = dt;
		if (dt >= 0.9)
			slowfork++;
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 4)
			badchild++;
		forks++;
		usleep(2000);
	}
	return NULL;
}

static pthread_t fk;

static void
join_forker(void)
{
	pthread_join(fk, NULL);
}

int
main(int argc, char **argv)
{
	int base, after;

	base = churn_begin("a17", close_one);
	pthread_create(&fk, NULL, forker, NULL);
	churn_join = join_forker;
	after = churn_end(argc > 1 ? atoi(argv[1]) : 5);
	printf("a17: %d kqueues made, %d closed in the handler, %d forks "
	    "(%d children with a kqueue's descriptor, %d forks of 0.9 s or "
	    "more, the longest %.3f s); descriptors %d before, %d after\n",
	    (int)made, (int)hclosed, (int)forks, (int)badchild, (int)slowfork, maxfork,
	    base, after);
	return after != base ? 1 : badchild ? 4 : slowfork ? 5 : 0;
}
