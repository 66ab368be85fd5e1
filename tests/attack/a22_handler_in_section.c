/*
 * a22: a thread loops timer_create(SIGEV_PORT)/timer_delete (the port
 * timer's timerfd is made in a maker section that holds no lock of kq's)
 * and takes SIGALRM every 100 us; the handler close()s kqueues that two
 * other threads make, arm with a timer and close; a fourth thread forks
 * without pause.  Until an outermost maker section counted as inside one
 * of kq's locks, the handler's close() in the section waited for the
 * kqueue's lock, held by a thread waiting at the gate for the fork, and
 * the fork waited for the section: nearly every second a fork waited out
 * the gate's whole patience (1 s), and the sections that then ran beside
 * it left kq's descriptors in children (attack helper 18: 5 of 5 runs,
 * 2 to 9 such children a run).  Exit 0 when no fork takes 0.9 s or more
 * and no child holds a descriptor of kq's kinds that its parent holds
 * (the event port aside: illumos children keep a port's descriptor);
 * 5 on a slow fork, 4 on such a child, 3 on a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <port.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <sys/event.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "../inherited.h"

#define NK	2
static _Atomic int slot[NK];
static atomic_int stop, forks, slow, badkids;
static double maxfork;
static int port;

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* In a fork child: does it share with its parent a file of kq's kinds,
   other than the port?  Raw system calls only. */
static int
child_has_kq_fds(void)
{
	static const char *kinds[] = { "eventpoll", "timerfd", "inotify",
	    "pidfd", "signalfd", "eventfd" };
	char buf[4096], p[64], l[128];
	int d = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd",
	    O_RDONLY | O_DIRECTORY), bad = 0;
	long n, o;
	size_t k;

	while (d >= 0 && (n = syscall(SYS_getdents64, d, buf, sizeof(buf))) > 0)
		for (o = 0; o < n; ) {
			const char *name = buf + o + 19;	/* d_name */
			unsigned short reclen;
			ssize_t r;
			int fd;

			memcpy(&reclen, buf + o + 16, sizeof(reclen));
			o += reclen;
			if (name[0] == '.' || (fd = atoi(name)) == d ||
			    fd == port || t_inherited(fd))
				continue;
			snprintf(p, sizeof(p), "/proc/self/fd/%s", name);
			if ((r = readlink(p, l, sizeof(l) - 1)) < 0)
				continue;
			l[r] = 0;
			for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
				if (strstr(l, kinds[k]) && syscall(SYS_kcmp,
				    getpid(), getppid(), KCMP_FILE, fd, fd) == 0) {
					dprintf(2, "a22: child kept %d: %s\n",
					    fd, l);
					bad = 1;
				}
		}
	if (d >= 0)
		syscall(SYS_close, d);
	return bad;
}

static void
on_alarm(int s)
{
	int e = errno, i, k;

	(void)s;
	for (i = 0; i < NK; i++)
		if ((k = atomic_exchange(&slot[i], -1)) >= 0)
			close(k);
	errno = e;
}

static void *
timer_thread(void *a)
{
	port_notify_t pn = { port, NULL };
	struct sigevent sev;
	sigset_t s;
	timer_t t;

	(void)a;
	sigemptyset(&s);
	sigaddset(&s, SIGALRM);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);	/* the handler runs here */
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_PORT;
	sev.sigev_value.sival_ptr = &pn;
	while (!atomic_load(&stop))
		if (timer_create(CLOCK_MONOTONIC, &sev, &t) == 0)
			timer_delete(t);
	return NULL;
}

static void *
kq_thread(void *a)
{
	int id = (int)(intptr_t)a, k, k2;
	struct kevent c;

	while (!atomic_load(&stop)) {
		if ((k = kqueue()) < 0)
			abort();
		atomic_store(&slot[id], k);
		EV_SET(&c, 1, EVFILT_TIMER, EV_ADD, 0, 1000, 0);
		(void)kevent(k, &c, 1, NULL, 0, NULL);
		if ((k2 = atomic_exchange(&slot[id], -1)) >= 0)
			close(k2);
	}
	return NULL;
}

static void *
forker(void *a)
{
	(void)a;
	while (!atomic_load(&stop)) {
		double t0 = now(), dt;
		pid_t p;
		int st;

		if ((p = fork()) == 0)
			_exit(child_has_kq_fds() ? 4 : 0);
		dt = now() - t0;
		if (dt > maxfork)
			maxfork = dt;
		slow += dt >= 0.9;
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		badkids += WIFEXITED(st) && WEXITSTATUS(st) == 4;
		forks++;
	}
	return NULL;
}

static void
watchdog(int s)
{
	(void)s;
	(void)!write(2, "a22: HANG (watchdog)\n", 21);
	_exit(3);
}

int
main(void)
{
	struct itimerval it = { { 0, 100 }, { 0, 100 } }, off = { { 0, 0 },
	    { 0, 0 } };
	struct sigaction sa;
	pthread_t tt, kt[NK], ft;
	sigset_t s;
	int i;

	for (i = 0; i < NK; i++)
		slot[i] = -1;
	if ((port = port_create()) < 0) {
		perror("port_create");
		return 1;
	}
	sigemptyset(&s);
	sigaddset(&s, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	{	/* a watchdog of 60 s on another signal (SIGALRM is taken) */
		struct sigevent wev = { .sigev_notify = SIGEV_SIGNAL,
		    .sigev_signo = SIGUSR2 };
		struct itimerspec wt = { { 0, 0 }, { 60, 0 } };
		timer_t wd;

		signal(SIGUSR2, watchdog);
		if (timer_create(CLOCK_MONOTONIC, &wev, &wd) == 0)
			timer_settime(wd, 0, &wt, NULL);
	}
	pthread_create(&tt, NULL, timer_thread, NULL);
	for (i = 0; i < NK; i++)
		pthread_create(&kt[i], NULL, kq_thread, (void *)(intptr_t)i);
	pthread_create(&ft, NULL, forker, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	sleep(5);
	setitimer(ITIMER_REAL, &off, NULL);
	atomic_store(&stop, 1);
	for (i = 0; i < NK; i++)
		pthread_join(kt[i], NULL);
	pthread_join(tt, NULL);
	pthread_join(ft, NULL);
	printf("a22: %d forks, %d of 0.9 s or more (the longest %.3f s), %d "
	    "children holding a descriptor of kq's\n", (int)forks, (int)slow,
	    maxfork, (int)badkids);
	return slow ? 5 : badkids ? 4 : 0;
}
