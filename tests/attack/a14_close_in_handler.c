/*
 * a14: close() is async-signal-safe (POSIX), but libkq's close() of a
 * kqueue number takes kq_lock (close.c kq_retire).  A signal handler that
 * closes the kqueue while the interrupted thread is inside kevent() with
 * kq_lock held deadlocks the thread against itself (the futex mutex is not
 * recursive).  Exit by timeout (124) or "HANG" shows the bug.  And a
 * close() in the handler that destroys a kqueue must free nothing then:
 * the timer is still running at the final printf(), whose first call
 * mallocs its buffer (a heap corrupted there aborts: defer.c).
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/time.h>

static volatile sig_atomic_t kq = -1, closes;

static void
on_alarm(int s)
{
	(void)s;
	if (kq >= 0) {
		int k = kq;

		kq = -1;
		close(k);	/* async-signal-safe, says POSIX */
		closes++;
	}
}

int
main(int argc, char **argv)
{
	static struct kevent ch[2000];
	struct itimerval it = { { 0, 500 }, { 0, 500 } };
	struct sigaction sa;
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 3);
	long loops = 0;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	while (time(NULL) < end) {
		int k;

		if (kq < 0)
			kq = kqueue();
		k = kq;
		for (i = 0; i < 2000; i++)
			EV_SET(&ch[i], i + 1, EVFILT_TIMER, EV_ADD, 0, 1000000, NULL);
		(void)kevent(k, ch, 2000, NULL, 0, NULL);
		for (i = 0; i < 2000; i++)
			ch[i].flags = EV_DELETE;
		(void)kevent(k, ch, 2000, NULL, 0, NULL);
		loops++;
	}
	printf("a14: %ld loops, %d closes in the handler, no hang\n", loops, (int)closes);
	return 0;
}
