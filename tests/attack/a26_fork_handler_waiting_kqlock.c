/*
 * a26 (attack helper 25's r3): fork() from a signal handler that interrupted its thread X while X
 * only WAITED for kqueue A's lock, held by thread Y (busy in a long
 * kevent() on A).  The child's atfork handler frees reg_lock, the port
 * timers' lock, the datagram stripes (a2224e4) and pooled kqueues' locks
 * held by threads not in the child, but not the lock of a live kqueue:
 * when the handler returns in the child, X's interrupted KQ_LOCK(A) waits
 * for Y, which is not in the child, for ever (the call should return,
 * EBADF: A is an orphan in the child).
 * Exit 0 if every child finishes, 1 if one hangs.
 */
#include <sys/event.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int kqA;
static pid_t parent;
static atomic_int stop;
static atomic_int child_pid;
static atomic_int running;	/* both threads are in their loops */

static void on_usr1(int s)
{
	int e = errno;
	pid_t p;
	(void)s;
	p = fork();
	if (p == 0)
		return;		/* the child resumes the interrupted code */
	atomic_store(&child_pid, p > 0 ? p : -1);
	errno = e;
}

static void *xthr(void *a)
{
	struct kevent ev;
	struct timespec z = { 0, 0 };
	(void)a;
	while (!atomic_load(&stop)) {
		(void)kevent(kqA, NULL, 0, &ev, 1, &z);
		if (getpid() != parent)
			_exit(0);	/* the child got out of kevent() */
		atomic_fetch_or(&running, 1);
	}
	return NULL;
}

static void *ythr(void *a)
{
	struct kevent ev;
	struct timespec z = { 0, 0 };
	(void)a;
	while (!atomic_load(&stop)) {
		(void)kevent(kqA, NULL, 0, &ev, 1, &z);
		atomic_fetch_or(&running, 2);
	}
	return NULL;
}

int main(void)
{
	struct sockaddr_in sa;
	socklen_t l = sizeof sa;
	struct kevent c;
	struct sigaction act;
	pthread_t x, y;
	int big = 8 << 20, u, tx, hung = 0, done = 0;

	parent = getpid();
	u = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(u, (struct sockaddr *)&sa, sizeof sa);
	getsockname(u, (struct sockaddr *)&sa, &l);
	(void)setsockopt(u, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	for (int i = 0; i < 4096; i++)
		(void)sendto(tx, "d", 1, 0, (struct sockaddr *)&sa, sizeof sa);
	kqA = kqueue();
	EV_SET(&c, u, EVFILT_READ, EV_ADD, 0, 0, NULL);	/* long scans */
	if (kevent(kqA, &c, 1, NULL, 0, NULL) != 0) { perror("add"); return 2; }
	memset(&act, 0, sizeof act);
	act.sa_handler = on_usr1;
	act.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &act, NULL);
	pthread_create(&x, NULL, xthr, NULL);
	pthread_create(&y, NULL, ythr, NULL);
	/* Not before the threads run kq: a fork from a handler that
	   interrupted a thread still starting (in a sanitizer's thread set-up,
	   holding its allocator's lock) would hang the child in the
	   sanitizer. */
	while (atomic_load(&running) != 3)
		usleep(1000);
	for (int i = 0; i < 40 && !hung; i++) {
		int st;
		pid_t p;
		atomic_store(&child_pid, 0);
		pthread_kill(x, SIGUSR1);
		while ((p = atomic_load(&child_pid)) == 0)
			usleep(100);
		if (p < 0)
			continue;
		for (int t = 0; t < 300; t++) {	/* 3 s */
			if (waitpid(p, &st, WNOHANG) == p) {
				done++;
				p = 0;
				break;
			}
			usleep(10000);
		}
		if (p != 0) {
			fprintf(stderr, "HANG: child %d of fork %d still in "
			    "kevent() after 3 s\n", p, i);
			if (getenv("HOLD"))
				pause();
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
			hung = 1;
		}
		usleep(5000);
	}
	atomic_store(&stop, 1);
	pthread_join(x, NULL);
	pthread_join(y, NULL);
	fprintf(stderr, "%s: %d children finished\n", hung ? "FAIL" : "ok", done);
	return hung;
}
