/*
 * a6: fork() while other threads are blocked in kevent(), busy changing
 * registrations, and creating/closing kqueues.  In the child every kqueue
 * descriptor and every internal descriptor of libkq must be gone (as on
 * FreeBSD the child does not inherit kqueues), kevent() on the old numbers
 * must fail with EBADF, and a new kqueue must work.
 *
 * A fork that lands inside kqueue() (between epoll_create1 and the
 * registry insert, kqueue.c) or inside kq_rebuild() (between
 * epoll_create1 and close(nfd)) leaves the child with an epoll instance
 * and its doorbell eventfd that reg_atfork_child() cannot see; kqueue()'s
 * epoll descriptor is not close-on-exec, so an exec'd program inherits it.
 * "LEAK" lines show such a child.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/wait.h>

#include "../inherited.h"

static int kq1, kq2, pp[2];
static atomic_int stop;

static void *
blocker(void *arg)
{
	struct kevent ev[4];

	while (!atomic_load(&stop)) {
		struct timespec to = { 0, 50 * 1000 * 1000 };
		(void)kevent(*(int *)arg, NULL, 0, ev, 4, &to);
	}
	return NULL;
}

static void *
changer(void *arg)
{
	struct kevent ch[2];

	(void)arg;
	while (!atomic_load(&stop)) {
		EV_SET(&ch[0], pp[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
		EV_SET(&ch[1], 5, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 1, NULL);
		kevent(kq1, ch, 2, NULL, 0, NULL);
		EV_SET(&ch[0], pp[0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
		kevent(kq1, ch, 1, NULL, 0, NULL);
	}
	return NULL;
}

static void *
creator(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		int k = kqueue();
		if (k >= 0)
			close(k);
	}
	return NULL;
}

/* In the child: count libkq-looking descriptors (epoll, eventfd, timerfd, inotify). */
static int
child_check(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int leaks = 0, r = 0;
	char p[300], l[128];

	while ((e = readdir(d)) != NULL) {
		ssize_t n;
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd == dirfd(d) || t_inherited(fd))
			continue;
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		n = readlink(p, l, sizeof(l) - 1);
		if (n < 0)
			continue;
		l[n] = 0;
		if (strstr(l, "eventpoll") || strstr(l, "eventfd") ||
		    strstr(l, "timerfd") || strstr(l, "inotify")) {
			printf("LEAK in child: fd %d -> %s\n", fd, l);
			leaks++;
		}
	}
	closedir(d);
	if (leaks)
		r |= 1;
	{
		struct kevent ev;
		struct timespec z = { 0, 0 };
		if (kevent(kq1, NULL, 0, &ev, 1, &z) != -1 || errno != EBADF) {
			printf("child: kevent(kq1) did not fail with EBADF (%d)\n", errno);
			r |= 2;
		}
	}
	{
		int k = kqueue();
		struct kevent ch, ev;
		struct timespec to = { 1, 0 };

		EV_SET(&ch, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 1, NULL);
		if (k < 0 || kevent(k, &ch, 1, &ev, 1, &to) != 1) {
			printf("child: new kqueue does not work\n");
			r |= 4;
		}
	}
	return r;
}

int
main(int argc, char **argv)
{
	int forks = argc > 1 ? atoi(argv[1]) : 200, i, bad = 0;
	pthread_t t[4];

	setvbuf(stdout, NULL, _IONBF, 0);
	pipe(pp);
	kq1 = kqueue();
	kq2 = kqueue();
	pthread_create(&t[0], NULL, blocker, &kq1);
	pthread_create(&t[1], NULL, blocker, &kq2);
	pthread_create(&t[2], NULL, changer, NULL);
	if (argc > 2)	/* "nocreator": no concurrent kqueue() */
		pthread_create(&t[3], NULL, blocker, &kq2);
	else
		pthread_create(&t[3], NULL, creator, NULL);
	for (i = 0; i < forks; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			alarm(5);
			_exit(child_check());
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("fork %d: child status %#x\n", i, st);
			bad++;
		}
	}
	atomic_store(&stop, 1);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("a6: %d bad children of %d\n", bad, forks);
	return bad != 0;
}
