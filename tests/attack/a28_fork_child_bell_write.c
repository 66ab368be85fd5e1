/* a28 (attack helper 26's f1): fork() from a signal handler that interrupted its thread X asleep
 * in kevent(kq, 2 s).  In the child, the atfork handler closes the
 * parent's kqueue's descriptors (epoll set, doorbell eventfd, ...) and
 * marks it dead.  The child's handler then opens files (they get those
 * numbers, the lowest free) and returns.  X's kevent() wakes with EINTR,
 * takes the lock, finds the kqueue dead and "rings the doorbell"
 * (kq_bell_ring: write of 8 bytes to the doorbell's old number) -- into
 * one of the child's files.  Exit 0 if no child file got bytes it did
 * not write (and kevent returned -1/EBADF), 1 otherwise. */
#include <sys/event.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NF 12
static int kq, files[NF];
static pid_t parent;
static char path[NF][64];
static volatile sig_atomic_t forked;

static void on_usr1(int s)
{
	int e = errno;
	(void)s;
	pid_t p = fork();
	if (p == 0) {
		for (int i = 0; i < NF; i++)
			files[i] = open(path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
		return;		/* resume X's kevent() in the child */
	}
	forked = p;
	errno = e;
}

static void *xthr(void *a)
{
	struct kevent ev;
	struct timespec t = { 2, 0 };
	int n, e;
	(void)a;
	n = kevent(kq, NULL, 0, &ev, 1, &t);
	e = errno;
	if (getpid() != parent) {
		int bad = 0;
		struct stat st;
		for (int i = 0; i < NF; i++)
			if (files[i] >= 0 && fstat(files[i], &st) == 0 && st.st_size != 0) {
				fprintf(stderr, "child: file at fd %d has %lld bytes it never wrote\n",
				    files[i], (long long)st.st_size);
				bad = 1;
			}
		fprintf(stderr, "child: kevent -> %d (%s)\n", n, n < 0 ? strerror(e) : "-");
		for (int i = 0; i < NF; i++) unlink(path[i]);
		_exit(bad);
	}
	return NULL;
}

int main(void)
{
	pthread_t x;
	struct sigaction sa;
	int st, bad = 0;

	parent = getpid();
	for (int i = 0; i < NF; i++)
		snprintf(path[i], sizeof path[i], "/tmp/h23e_f1_%d_%d", (int)parent, i);
	kq = kqueue();
	fprintf(stderr, "kq fd %d\n", kq);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_create(&x, NULL, xthr, NULL);
	usleep(200000);			/* X asleep in kevent() */
	pthread_kill(x, SIGUSR1);
	while (!forked)
		usleep(1000);
	if (forked < 0) return 2;
	if (waitpid(forked, &st, 0) != forked) return 2;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
	pthread_join(x, NULL);
	fprintf(stderr, bad ? "WRONG\n" : "ok\n");
	return bad;
}
