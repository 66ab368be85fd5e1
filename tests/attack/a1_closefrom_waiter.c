/*
 * a1: closefrom()/close_range() of a kqueue that a thread is blocked on.
 *
 * kq_retire_range() retires the kqueue (kq_dead, doorbell rung, registry
 * reference dropped), but the blocked kevent() holds its own reference, so
 * kq_destroy() -- which closes the internal descriptors (the doorbell
 * eventfd, ...) by number -- runs only when that thread gets to return.
 * Meanwhile the close_range() system call has already closed those
 * numbers, and the application may have been handed them again.  The
 * waiter then (1) writes 8 bytes into the application's new file
 * (kq_bell_ring in kq_scan after "Closed while we slept") and (2) closes
 * the application's new descriptor (kq_destroy -> close(ks_fd)).
 *
 * Worse, when close_range() closes the doorbell before the waiter ran, the
 * kernel removes the doorbell's epoll item together with its pending
 * readiness: the wake-up is lost and a waiter with no timeout sleeps
 * forever ("HANG" below; the waiter here uses a 1 s timeout so that the
 * test ends).
 *
 * Expected: the waiter returns EBADF at once (EINVAL if it started only
 * after the close and found the new pipe); after closefrom(kq) the pipe
 * created in its place stays open and empty.  Exit 1 and
 * "HANG"/"CORRUPT"/"CLOSED" lines show the bug.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/syscall.h>

static int kq;
static int wret, werr;

static void *
waiter(void *arg)
{
	struct kevent ev;

	(void)arg;
	struct timespec to = { 1, 0 };

	wret = kevent(kq, NULL, 0, &ev, 1, &to);
	werr = errno;
	return NULL;
}

int
main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 50, bad = 0, i;
	int use_range = argc > 2 && strcmp(argv[2], "range") == 0;

	for (i = 0; i < iters; i++) {
		pthread_t t;
		int p[2];
		char buf[64];
		ssize_t n;
		struct timespec d = { 0, 20 * 1000 * 1000 }, t0, t1;

		kq = kqueue();
		if (kq < 0) { perror("kqueue"); return 2; }
		pthread_create(&t, NULL, waiter, NULL);
		nanosleep(&d, NULL);	/* let it block in epoll_wait */
		if (use_range)
			close_range((unsigned)kq, ~0U, 0);
		else
			closefrom(kq);
		/* The application reuses the numbers at once. */
		if (pipe2(p, O_NONBLOCK) < 0) { perror("pipe"); return 2; }
		clock_gettime(CLOCK_MONOTONIC, &t0);
		pthread_join(t, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9 > 0.5) {
			printf("iter %d: HANG: waiter slept %.2f s after the kqueue was closed (lost wake-up)\n",
			    i, t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9);
			bad++;
		}
		/*
		 * EBADF from a waiter that was blocked; EINVAL from one that
		 * a loaded machine started only after the close, whose call
		 * then found the application's pipe at that number (what
		 * FreeBSD answers for a descriptor that is not a kqueue).
		 */
		if (wret != -1 || (werr != EBADF && werr != EINVAL)) {
			printf("iter %d: waiter returned %d errno %d\n", i, wret, werr);
			bad++;
		}
		n = read(p[0], buf, sizeof(buf));
		if (n > 0) {
			printf("iter %d: CORRUPT: %zd bytes appeared in the app's pipe (fds %d,%d)\n",
			    i, n, p[0], p[1]);
			bad++;
		}
		if (fcntl(p[0], F_GETFD) < 0 || fcntl(p[1], F_GETFD) < 0) {
			printf("iter %d: CLOSED: app's pipe fd closed behind its back (%d:%d %d:%d)\n",
			    i, p[0], fcntl(p[0], F_GETFD), p[1], fcntl(p[1], F_GETFD));
			bad++;
		}
		syscall(SYS_close, p[0]);
		syscall(SYS_close, p[1]);
	}
	printf("%s: %d problems in %d iterations\n", use_range ? "close_range" : "closefrom", bad, iters);
	return bad ? 1 : 0;
}
