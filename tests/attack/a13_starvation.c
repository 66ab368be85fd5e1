/*
 * a13: starvation.  kq_collect() scans the active list (pass A) first and
 * polls the epoll set only while the eventlist has room.  One knote that
 * userspace tracks and that stays ready -- a triggered EVFILT_USER without
 * EV_CLEAR, a READ knote on a regular file with unread data, a level knote
 * emulated on an edge registration -- fills an eventlist of 1 on every
 * call (it goes back to the tail of a list it is alone on), so the epoll
 * set is never polled again and every descriptor event starves forever.
 * FreeBSD keeps all active knotes on one queue and reports round robin.
 *
 * Expected: with nevents = 1, the readable pipe is reported within a few
 * calls.  Exit 1 shows the bug (for each of the three kinds of knote).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/socket.h>

static int
try(int kind)
{
	int kq = kqueue(), p[2], sv[2], c, f;
	struct kevent ch[2], ev;
	struct timespec z = { 0, 0 };
	char path[] = "/tmp/kqa13XXXXXX";

	pipe(p);
	write(p[1], "x", 1);
	switch (kind) {
	case 0:		/* a level user event, triggered */
		EV_SET(&ch[0], 1, EVFILT_USER, EV_ADD, 0, 0, NULL);
		kevent(kq, ch, 1, NULL, 0, NULL);
		EV_SET(&ch[0], 1, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
		kevent(kq, ch, 1, NULL, 0, NULL);
		break;
	case 1:		/* READ on a regular file with unread data */
		f = mkstemp(path);
		unlink(path);
		write(f, "data", 4);
		lseek(f, 0, SEEK_SET);
		EV_SET(&ch[0], f, EVFILT_READ, EV_ADD, 0, 0, NULL);
		kevent(kq, ch, 1, NULL, 0, NULL);
		break;
	case 2:		/* WRITE (level) next to READ EV_CLEAR on one socket */
		socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
		EV_SET(&ch[0], sv[0], EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
		EV_SET(&ch[1], sv[0], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
		kevent(kq, ch, 2, NULL, 0, NULL);
		break;
	}
	/* The pipe is added last; it is readable now. */
	EV_SET(&ch[0], p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	kevent(kq, ch, 1, NULL, 0, NULL);
	for (c = 0; c < 1000; c++) {
		if (kevent(kq, NULL, 0, &ev, 1, &z) == 1 &&
		    ev.filter == EVFILT_READ && (int)ev.ident == p[0])
			break;
	}
	if (c == 1000)
		printf("kind %d: the readable pipe was not reported in 1000 calls "
		    "with nevents = 1\n", kind);
	return c == 1000;
}

int
main(void)
{
	int bad = try(0) + try(1) + try(2);

	printf("a13: %d of 3 starved\n", bad);
	return bad != 0;
}
