/*
 * a10: close_range(first, last, CLOSE_RANGE_UNSHARE) closes the numbers in
 * a private copy of the calling thread's descriptor table; the other
 * threads (which still share the original table) keep them.  close.c's
 * close_range() ignores the flag and retires every kqueue in the range by
 * closing its number in the *shared* table (kq_retire_range ->
 * sys_close) before the system call unshares: the other threads lose their
 * kqueue.
 * Expected: after thread T's close_range(kq, kq, CLOSE_RANGE_UNSHARE),
 * the main thread's kq is still open and usable.  Exit 1 shows the bug.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/event.h>

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE	(1U << 1)
#endif

static int kq;

static void *
t_unshare(void *arg)
{
	(void)arg;
	if (close_range((unsigned)kq, (unsigned)kq, CLOSE_RANGE_UNSHARE) != 0)
		perror("close_range");
	/* In this thread's private table kq is gone, as asked. */
	return NULL;
}

int
main(void)
{
	pthread_t t;
	struct kevent ch, ev;
	struct timespec z = { 0, 0 };
	int r, bad = 0;

	kq = kqueue();
	EV_SET(&ch, 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
	kevent(kq, &ch, 1, NULL, 0, NULL);
	pthread_create(&t, NULL, t_unshare, NULL);
	pthread_join(t, NULL);
	if (fcntl(kq, F_GETFD) < 0) {
		printf("main's kq descriptor %d was closed by another thread's "
		    "CLOSE_RANGE_UNSHARE\n", kq);
		bad++;
	}
	EV_SET(&ch, 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	r = kevent(kq, &ch, 1, &ev, 1, &z);
	if (r != 1) {
		printf("main's kevent(kq) after the other thread's unshared "
		    "close_range: %d (%s)\n", r, r < 0 ? strerror(errno) : "");
		bad++;
	}
	printf("a10: %d problems\n", bad);
	return bad != 0;
}
