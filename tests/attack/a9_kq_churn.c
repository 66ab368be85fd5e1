/*
 * a9: close and recreate a kqueue (same number, recycled object) while
 * readers are in kevent() on that number with short timeouts, changers
 * EV_ADD/EV_DELETE pipes, timers and user events on it, an outer kqueue
 * watches its number (EVFILT_READ on a kqueue: kq_pending on a recycled
 * object), and a dup of it is used.  Every call must return within 3 s of
 * its timeout (a hang, not a slow machine: at load 20 on two cores calls
 * took up to 1.6 s, attack helper 53); no crash, sanitizer report, KQ_ASSERT or descriptor leak,
 * and no change made on a churned number may land on the outer kqueue.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>

static atomic_int kqn = -1, stop;
static atomic_int slow, errs;
static int outer, pp[2];
static _Atomic double worst;	/* the longest kevent() of a reader, s */

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int
nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = -3;

	while ((e = readdir(d)) != NULL)
		n++;
	closedir(d);
	return n;
}

static void *
reader(void *arg)
{
	struct kevent ev[64];
	int n = (int)(intptr_t)arg, e;
	double d;

	while (!atomic_load(&stop)) {
		struct timespec to = { 0, 30 * 1000 * 1000 };
		double t0 = now();
		int r, k = atomic_load(&kqn);

		if (n == 3)
			k = outer;
		r = kevent(k, NULL, 0, ev, n == 1 ? 1 : 64, &to);
		e = errno;
		d = now() - t0;
		if (d > atomic_load(&worst))
			atomic_store(&worst, d);	/* a report, not exact */
		if (d > 3.03) {
			printf("SLOW: reader %d: kevent(%d) took %.2f s (r=%d%s%s)\n",
			    n, k, d, r, r < 0 ? ", " : "", r < 0 ? strerror(e) : "");
			atomic_fetch_add(&slow, 1);
		}
		if (r < 0 && e != EBADF && e != EINVAL) {
			printf("ERROR: reader %d: kevent(%d): %s (errno %d)\n",
			    n, k, strerror(e), e);
			atomic_fetch_add(&errs, 1);
		}
	}
	return NULL;
}

static void *
changer(void *arg)
{
	unsigned seed = 42;

	(void)arg;
	while (!atomic_load(&stop)) {
		struct kevent ch[4];
		int k = atomic_load(&kqn), d;

		EV_SET(&ch[0], pp[0], EVFILT_READ, EV_ADD | ((rand_r(&seed) & 1) ? EV_CLEAR : 0), 0, 0, NULL);
		EV_SET(&ch[1], rand_r(&seed) % 8, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 1, NULL);
		EV_SET(&ch[2], 5, EVFILT_USER, EV_ADD, NOTE_TRIGGER, 0, NULL);
		EV_SET(&ch[3], 5, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
		(void)kevent(k, ch, 4, NULL, 0, NULL);
		EV_SET(&ch[0], pp[0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
		(void)kevent(k, ch, 1, NULL, 0, NULL);
		/* the outer kqueue watches whatever the number is now */
		EV_SET(&ch[0], k, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
		(void)kevent(outer, ch, 1, NULL, 0, NULL);
		/* a dup of it */
		if ((d = dup(k)) >= 0) {
			struct timespec z = { 0, 0 };
			struct kevent ev[4];
			(void)kevent(d, NULL, 0, ev, 4, &z);
			close(d);
		}
	}
	return NULL;
}

/* The epoll, eventfd and timerfd descriptors below 1024. */
static void
count_kinds(int *ne, int *nv, int *nt)
{
	char p[64], l[64];
	int fd;

	*ne = *nv = *nt = 0;
	for (fd = 0; fd < 1024; fd++) {
		ssize_t k;

		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		if ((k = readlink(p, l, sizeof(l) - 1)) < 0)
			continue;
		l[k] = 0;
		*ne += strstr(l, "eventpoll") != NULL;
		*nv += strstr(l, "eventfd") != NULL;
		*nt += strstr(l, "timerfd") != NULL;
	}
}

int
main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 5, i, base, cycles = 0;
	int ne0, nv0, nt0;
	pthread_t t[5];
	double end;

	/* Descriptors the program was given count for nothing. */
	count_kinds(&ne0, &nv0, &nt0);
	if (pipe2(pp, O_NONBLOCK) != 0 || write(pp[1], "x", 1) != 1 ||
	    (outer = kqueue()) < 0 || (i = kqueue()) < 0) {
		printf("ERROR: setup: %s\n", strerror(errno));
		return 1;
	}
	atomic_store(&kqn, i);
	base = nfds();
	for (i = 0; i < 5; i++) {
		int e = pthread_create(&t[i], NULL, i < 4 ? reader : changer,
		    (void *)(intptr_t)i);

		if (e != 0) {
			printf("ERROR: pthread_create: %s\n", strerror(e));
			return 1;
		}
	}
	end = now() + secs;
	while (now() < end) {
		struct timespec d = { 0, (cycles % 3) * 1000000L };
		int old = atomic_load(&kqn), nk;

		nanosleep(&d, NULL);
		close(old);
		nk = kqueue();
		if (nk < 0) {
			printf("ERROR: kqueue: %s\n", strerror(errno));
			errs++;
			break;
		}
		atomic_store(&kqn, nk);
		cycles++;
	}
	atomic_store(&stop, 1);
	for (i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	{
		struct timespec d = { 0, 100 * 1000 * 1000 };
		nanosleep(&d, NULL);
	}
	/* The outer kqueue only ever got EVFILT_READ on kqueue numbers: no
	   change the changer made on a number it had just closed may have
	   gone to it (the number briefly held the outer's rebuilt set:
	   attack helper 50). */
	{
		struct kevent d;
		int id, bad = 0;

		EV_SET(&d, pp[0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
		bad += kevent(outer, &d, 1, NULL, 0, NULL) == 0;
		EV_SET(&d, 5, EVFILT_USER, EV_DELETE, 0, 0, NULL);
		bad += kevent(outer, &d, 1, NULL, 0, NULL) == 0;
		for (id = 0; id < 8; id++) {
			EV_SET(&d, id, EVFILT_TIMER, EV_DELETE, 0, 0, NULL);
			bad += kevent(outer, &d, 1, NULL, 0, NULL) == 0;
		}
		if (bad) {
			printf("ERROR: %d knotes meant for the churned kqueues "
			    "were on the outer one\n", bad);
			errs++;
		}
	}
	/* Expected: the outer kqueue and the current one (each its epoll
	   set, the duplicate its waits sleep on, and its doorbell) and at
	   most one timerfd (the current one's), beside those inherited. */
	{
		int ne, nv, nt;

		count_kinds(&ne, &nv, &nt);
		ne -= ne0;
		nv -= nv0;
		nt -= nt0;
		if (ne > 4 || nv > 2 || nt > 1) {
			char c[128];

			printf("LEAK: %d epoll, %d eventfd, %d timerfd (expected 4, 2, <=1)\n",
			    ne, nv, nt);
			snprintf(c, sizeof(c), "cd /proc/%d; ls -l fd | cut -c40-; grep -H tfd fdinfo/*", (int)getpid());
			system(c);
			errs++;
		}
	}
	printf("a9: %d cycles, slow %d errs %d (fds %d -> %d), longest kevent %.3f s\n",
	    cycles, slow, errs, base, nfds(), atomic_load(&worst));
	return slow || errs;
}
