/*
 * a21: a thread calls closefrom() in a loop while the main thread forks;
 * each child makes a kqueue, adds a pipe and a one-shot timer of 1 ms,
 * waits for the timer and closes the kqueue.  No other thread exists in
 * the child, so nothing there can hold kq's maker gate shut: until the
 * child handler reset it, a fork made inside another thread's closefrom
 * window left the child's gate shut for good, and each of its sections
 * waited out the gate's patience (attack helper 17: 13 of 100 and 3 of 60
 * children took 1 to 6 s).  Exit 0 when every child takes under 0.9 s
 * (one patience is 1 s), 1 when one does not, 2 when a child's call
 * fails, 3 on a hang (watchdog).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/wait.h>

static atomic_int stop;

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void *
closer(void *a)
{
	(void)a;
	while (!atomic_load(&stop)) {
		int p[2];

		if (pipe(p) == 0) {
			dup2(p[0], 900);
			dup2(p[1], 901);
			close(p[0]);
			close(p[1]);
		}
		closefrom(900);
	}
	return NULL;
}

/* In the child: the seconds its first kqueue's work took. */
static double
child_work(void)
{
	double t0 = now();
	struct kevent ev[2], out;
	int p[2], kq = kqueue();

	if (kq < 0 || pipe(p) != 0)
		_exit(2);
	EV_SET(&ev[0], p[0], EVFILT_READ, EV_ADD, 0, 0, 0);
	EV_SET(&ev[1], 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 1, 0);
	if (kevent(kq, ev, 2, NULL, 0, NULL) != 0 ||
	    kevent(kq, NULL, 0, &out, 1, NULL) != 1)
		_exit(2);
	close(kq);
	return now() - t0;
}

static void
watchdog(int s)
{
	(void)s;
	(void)!write(2, "a21: HANG (watchdog)\n", 21);
	_exit(3);
}

int
main(void)
{
	int i, n = 100, slow = 0, failed = 0, kq0 = kqueue();
	pthread_t t;

	signal(SIGALRM, watchdog);
	alarm(100);
	pthread_create(&t, NULL, closer, NULL);
	for (i = 0; i < n; i++) {
		int st;
		pid_t c = fork();

		if (c == 0)
			_exit(child_work() >= 0.9 ? 1 : 0);
		if (c < 0) {
			perror("fork");
			break;
		}
		waitpid(c, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) > 1)
			failed++;
		else
			slow += WEXITSTATUS(st);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	close(kq0);
	printf("a21: %d forks beside closefrom(): %d children slow "
	    "(0.9 s or more), %d failed\n", i, slow, failed);
	return failed ? 2 : slow ? 1 : 0;
}
