/*
 * a11: closefrom(kq + 1) -- "keep my kqueue, close everything above it", a
 * common daemon idiom -- closes the kqueue's hidden internal descriptors
 * (doorbell eventfd, timerfd, ...), which libkq keeps using by number:
 * close.c only retires kqueues whose own number is in the range.  On
 * FreeBSD a kqueue has no other descriptors and is unaffected.  Here:
 *   - timers stop firing (their timerfd is gone from the epoll set);
 *   - the doorbell's read()/write() (kq_bell_sync) hit whatever file the
 *     application got at that number: 8 bytes of the application's pipe
 *     are consumed.
 * Expected: the timer fires and the pipe keeps its 16 bytes.  Exit 1 shows
 * the bug.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/ioctl.h>

int
main(void)
{
	int kq, p[2], bad = 0, r, avail = -1;
	struct kevent ch, ev[4];
	struct timespec to = { 0, 300 * 1000 * 1000 }, z = { 0, 0 };

	kq = kqueue();
	EV_SET(&ch, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 5000, NULL);
	kevent(kq, &ch, 1, NULL, 0, NULL);	/* creates the timerfd */
	EV_SET(&ch, 2, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	kevent(kq, &ch, 1, NULL, 0, NULL);

	closefrom(kq + 1);	/* the application keeps 0..kq */

	pipe(p);		/* takes the doorbell's number */
	write(p[1], "0123456789abcdef", 16);

	/* A user event: the doorbell is rung and drained around it. */
	EV_SET(&ch, 2, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	kevent(kq, &ch, 1, NULL, 0, NULL);
	r = kevent(kq, NULL, 0, ev, 4, &z);
	if (r != 1)
		printf("user event: %d\n", r), bad++;
	(void)kevent(kq, NULL, 0, ev, 4, &z);
	ioctl(p[0], FIONREAD, &avail);
	if (avail != 16) {
		printf("CORRUPT: the application's pipe (fd %d) holds %d bytes "
		    "instead of 16 (the doorbell read them)\n", p[0], avail);
		bad++;
	}
	/* A short timer. */
	EV_SET(&ch, 3, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 20, NULL);
	r = kevent(kq, &ch, 1, ev, 4, &to);
	if (r != 1) {
		printf("20 ms timer not reported within 300 ms: %d (%s)\n", r,
		    r < 0 ? strerror(errno) : "");
		bad++;
	}
	printf("a11: %d problems\n", bad);
	return bad != 0;
}
