/*
 * a29: a SIGALRM handler closes a kqueue -- close(k), close_range(k, k, 0)
 * or closefrom(k), one mode after the other -- while the same thread is
 * inside kevent() on it, rebuilding its epoll set: the set holds a
 * registration kq cannot remove (a pipe's read end registered, dup()ed,
 * its number closed with a raw system call, the pipe made readable), so
 * the wait replaces the set under the kqueue's number (kq_rebuild).  The
 * one-shot timer fires at a different offset each round, so that some
 * closes land inside the swap.  Properties:
 *   - no hang (a handler's close during the swap is left to the rebuild,
 *     which once destroyed the kqueue inside its own lock: every run hung
 *     within 5 rounds after 796f0b9; the harness's time limit catches it);
 *   - the handler's close returns 0, the number is closed after it, and a
 *     kevent() on it then fails with EBADF (exit 1);
 *   - no descriptor is left open at the end (exit 1).
 * argv[1]: rounds per mode (default 400).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/syscall.h>
#include <sys/time.h>

#define NPIPES	150	/* registrations: a rebuild has work to do */

static volatile sig_atomic_t target = -1, mode, hret;

static void
on_alarm(int s)
{
	int e = errno, k = target;

	(void)s;
	if (k < 0)
		return;
	target = -1;
	if (mode == 0)
		hret = close(k);
	else if (mode == 1)
		hret = close_range((unsigned)k, (unsigned)k, 0);
	else {
		closefrom(k);
		hret = 0;
	}
	errno = e;
}

static int
nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;
}

/* One round: 0, or 1 if a property failed. */
static int
round_once(int (*pipes)[2], int i)
{
	struct kevent ch[NPIPES + 1], out[8];
	struct timespec ts = { 0, 1000000 }, pause = { 0, 600000 },
	    zero = { 0, 0 };
	struct itimerval it;
	int p[2], k, n = 0, d, bad = 0;

	if (pipe(p) != 0 || (k = kqueue()) < 0)
		exit(3);
	for (int j = 0; j < NPIPES; j++)
		EV_SET(&ch[n++], pipes[j][0], EVFILT_READ, EV_ADD, 0, 0, 0);
	EV_SET(&ch[n++], p[0], EVFILT_READ, EV_ADD, 0, 0, 0);
	(void)kevent(k, ch, n, NULL, 0, NULL);
	d = dup(p[0]);
	syscall(SYS_close, p[0]);	/* behind kq's back: a zombie */
	if (write(p[1], "x", 1) != 1)
		exit(3);
	hret = 99;
	target = k;
	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = 20 + (i * 37) % 400;
	setitimer(ITIMER_REAL, &it, NULL);
	(void)kevent(k, NULL, 0, out, 8, &ts);
	nanosleep(&pause, NULL);
	if (target == k) {		/* the timer came too late */
		target = -1;
		close(k);
	} else {
		if (hret != 0) {
			printf("a29: mode %d round %d: the handler's close "
			    "returned %d\n", (int)mode, i, (int)hret);
			bad = 1;
		}
		if (fcntl(k, F_GETFD) >= 0) {
			printf("a29: mode %d round %d: kqueue %d still open "
			    "after the handler's close\n", (int)mode, i, k);
			bad = 1;
		} else if (kevent(k, NULL, 0, out, 8, &zero) >= 0 ||
		    errno != EBADF) {
			printf("a29: mode %d round %d: kevent() after the "
			    "close did not fail with EBADF\n", (int)mode, i);
			bad = 1;
		}
	}
	close(d);		/* (closefrom may have taken these) */
	close(p[1]);
	return bad;
}

int
main(int argc, char **argv)
{
	static int pipes[NPIPES][2];
	int rounds = argc > 1 ? atoi(argv[1]) : 400, before, after, bad = 0;
	struct sigaction sa;

	for (int j = 0; j < NPIPES; j++)
		if (pipe(pipes[j]) != 0)
			return 3;
	close(kqueue());	/* kq's process-wide descriptors, made once */
	before = nfds();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	for (mode = 0; mode < 3; mode++)
		for (int i = 0; i < rounds; i++)
			bad |= round_once(pipes, i);
	close(kqueue());	/* reaps the retirements handlers put off */
	after = nfds();
	printf("a29: %d rounds per mode; descriptors %d before, %d after\n",
	    rounds, before, after);
	return bad || after != before;
}
