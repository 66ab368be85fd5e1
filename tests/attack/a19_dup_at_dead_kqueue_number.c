/*
 * a19: the program keeps a dup() of a kqueue, closes the kqueue while
 * another thread still holds it inside kevent() (dead, not destroyed: that
 * thread is in a slow signal handler), dup()s its duplicate onto the freed
 * number and forks.  The descriptor at that number is the program's: the
 * child must have it.  95b9b39 closed it in every child (attack helper
 * 16, 5 of 5), taking the number for the dead kqueue's own because it
 * holds the kqueue's set.  Exit 0 when the child keeps it, 1 when not.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/stat.h>
#include <sys/wait.h>

static int kq;

static void
slow(int s)
{
	(void)s;
	sleep(2);
}

static void *
waiter(void *a)
{
	struct timespec to = { 5, 0 };
	struct kevent e;

	(void)a;
	(void)kevent(kq, NULL, 0, &e, 1, &to);
	return NULL;
}

int
main(void)
{
	struct stat before, after;
	struct kevent ev;
	pthread_t t;
	int d, n, st;
	pid_t p;

	signal(SIGUSR1, slow);
	kq = kqueue();
	EV_SET(&ev, 1, EVFILT_TIMER, EV_ADD, 0, 100000, 0);
	(void)kevent(kq, &ev, 1, NULL, 0, NULL);
	d = dup(kq);
	pthread_create(&t, NULL, waiter, NULL);
	usleep(200000);
	pthread_kill(t, SIGUSR1);	/* holds the kqueue for 2 s */
	usleep(100000);
	close(kq);
	n = dup(d);			/* the freed number, kq's */
	fstat(n, &before);
	if ((p = fork()) == 0)
		_exit(fstat(n, &after) == 0 && after.st_ino == before.st_ino ?
		    0 : 1);
	waitpid(p, &st, 0);
	printf("a19: descriptor %d (the kqueue's number was %d) %s in the "
	    "child\n", n, kq, WEXITSTATUS(st) ? "CLOSED" : "kept");
	pthread_join(t, NULL);
	return WEXITSTATUS(st) ? 1 : 0;
}
