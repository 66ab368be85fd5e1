/*
 * a4: closefrom() (or close_range()) closes libkq's process-wide signal
 * eventfd (sigshim.c sig_evfd) without libkq noticing: close.c retires the
 * kqueues in the range but not that descriptor, whose number sig_evfd keeps
 * using.  Once the application is handed that number again:
 *   - the next EVFILT_SIGNAL EV_ADD dups the application's file
 *     (kq_sig_evfd_dup: F_DUPFD of the stale number) into the kqueue's
 *     epoll set -- with a regular file it fails (EPERM), for good;
 *   - every watched signal writes 8 bytes into the application's file
 *     (sig_ring), and signal knotes are never triggered.
 * Expected: the pipe the application creates after closefrom() receives
 * nothing, and the signal is reported.  Exit 1 shows the bug.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/event.h>

int
main(void)
{
	int kq, bad = 0, i, p[4][2];
	struct kevent ch, ev;
	struct timespec to = { 0, 200 * 1000 * 1000 };
	char buf[64];

	kq = kqueue();
	EV_SET(&ch, SIGUSR1, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	if (kevent(kq, &ch, 1, NULL, 0, NULL) != 0)
		perror("add 1");
	closefrom(3);	/* e.g. a daemon tidying up before its main loop */

	/* The application's own descriptors take the freed numbers. */
	(void)open("/dev/null", O_RDONLY);	/* 3 */
	for (i = 0; i < 4; i++)
		pipe2(p[i], O_NONBLOCK);	/* (4,5) (6,7) ... */
	kq = kqueue();
	signal(SIGUSR1, SIG_IGN);
	EV_SET(&ch, SIGUSR1, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	if (kevent(kq, &ch, 1, NULL, 0, NULL) != 0) {
		printf("EV_ADD EVFILT_SIGNAL after closefrom failed: %s\n",
		    strerror(errno));
		bad++;
	}
	raise(SIGUSR1);
	if (kevent(kq, NULL, 0, &ev, 1, &to) != 1) {
		printf("SIGUSR1 not reported\n");
		bad++;
	}
	for (i = 0; i < 4; i++) {
		ssize_t n = read(p[i][0], buf, sizeof(buf));

		if (n > 0) {
			printf("CORRUPT: %zd bytes written into the application's "
			    "pipe %d->%d by the signal handler\n", n, p[i][1], p[i][0]);
			bad++;
		}
	}
	printf("a4: %d problems\n", bad);
	return bad != 0;
}
