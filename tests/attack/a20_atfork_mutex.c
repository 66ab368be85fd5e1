/*
 * a20: a prepare handler registered before libkq's (this program's
 * constructor: the program's object is linked ahead of libkq.a, so its
 * initialiser runs first, and prepare handlers run in the reverse order of
 * registration, after libkq's) locks a mutex M; another thread holds M
 * while it closes a watched descriptor, closes a kqueue, or makes one,
 * and the main thread forks.  Until the fork's prepare stopped holding
 * reg_lock through the other prepare handlers, each mode hung: the fork
 * waited in the program's prepare for M, and the thread holding M waited
 * in close() or kqueue() for reg_lock (attack helper 16; 3 of 3 here).
 * Exit 0 when every mode ends, no fork takes over 5 s (the gate's patience
 * is 1 s) and no descriptor is left; 3 on a hang (watchdog), 5 on a slow
 * fork, 1 on a leak.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/wait.h>

static pthread_mutex_t M = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop, ops;

static void prep(void) { pthread_mutex_lock(&M); }
static void unlock_m(void) { pthread_mutex_unlock(&M); }

__attribute__((constructor)) static void
early(void)
{
	pthread_atfork(prep, unlock_m, unlock_m);
}

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int
nfds(void)
{
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* Mode 0: close a kqueue under M; 1: close a watched pipe; 2: kqueue(). */
static void *
worker(void *a)
{
	int mode = (int)(intptr_t)a;

	while (!atomic_load(&stop)) {
		struct kevent ev;
		int kq = kqueue(), p[2], k2 = -1;

		if (kq < 0 || pipe(p) != 0)
			abort();
		EV_SET(&ev, p[0], EVFILT_READ, EV_ADD, 0, 0, 0);
		(void)kevent(kq, &ev, 1, NULL, 0, NULL);
		pthread_mutex_lock(&M);
		if (mode == 0)
			close(kq);
		else if (mode == 1)
			close(p[0]);
		else
			k2 = kqueue();
		pthread_mutex_unlock(&M);
		if (mode != 0)
			close(kq);
		if (mode != 1)
			close(p[0]);
		if (k2 >= 0)
			close(k2);
		close(p[1]);
		ops++;
	}
	return NULL;
}

static void
watchdog(int s)
{
	static const char m[] = "a20: HANG (watchdog)\n";

	(void)s;
	(void)!write(2, m, sizeof(m) - 1);
	_exit(3);
}

int
main(void)
{
	static const char *what[] = { "close(kqueue)",
	    "close(watched pipe)", "kqueue()" };
	int mode, base, slow = 0;

	signal(SIGALRM, watchdog);
	alarm(60);
	base = nfds();
	for (mode = 0; mode < 3; mode++) {
		double end = now() + 2, longest = 0;
		pthread_t t;
		int forks = 0;

		atomic_store(&stop, 0);
		atomic_store(&ops, 0);
		pthread_create(&t, NULL, worker, (void *)(intptr_t)mode);
		while (now() < end) {
			double t0 = now(), dt;
			pid_t c = fork();

			if (c == 0)
				_exit(0);
			dt = now() - t0;
			if (c > 0)
				waitpid(c, NULL, 0);
			if (dt > longest)
				longest = dt;
			slow += dt > 5;
			forks++;
			usleep(500);
		}
		atomic_store(&stop, 1);
		pthread_join(t, NULL);
		printf("a20: %s under the prepare handler's mutex: %d forks, "
		    "%d operations, the longest fork %.3f s\n", what[mode],
		    forks, (int)atomic_load(&ops), longest);
	}
	if (nfds() != base) {
		printf("a20: descriptors %d before, %d after\n", base, nfds());
		return 1;
	}
	return slow ? 5 : 0;
}
