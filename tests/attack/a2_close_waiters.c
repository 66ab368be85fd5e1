/*
 * a2: several threads blocked in kevent() on one kqueue while another
 * closes it by close(), dup2(), dup3() or close_range(kq, kq); every waiter
 * must return EBADF promptly, and no descriptor may leak over many
 * create/close cycles (count of /proc/self/fd).  Also closes while the
 * kqueue has timers, signals, user events and watched pipes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>

#define NW 3
static int kq;
static int wret[NW], werr[NW];

static int
nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d)) != NULL)
		n++;
	closedir(d);
	return n;
}

static void *
waiter(void *arg)
{
	int i = (int)(long)arg;
	struct kevent ev[4];
	struct timespec to = { 3, 0 };

	for (;;) {
		wret[i] = kevent(kq, NULL, 0, ev, 4, &to);
		werr[i] = errno;
		if (wret[i] <= 0)
			break;
	}
	return NULL;
}

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 100, bad = 0, i, j, base;
	int p[2], other;

	signal(SIGUSR1, SIG_IGN);
	pipe(p);
	other = open("/dev/null", O_RDONLY);
	base = -1;
	for (i = 0; i < iters; i++) {
		pthread_t t[NW];
		struct kevent ch[5];
		struct timespec d = { 0, 5 * 1000 * 1000 };
		double t0;
		int how = i % 4;

		if (i == 4)
			base = nfds();	/* after the process-wide signal eventfd */
		kq = kqueue();
		EV_SET(&ch[0], p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
		EV_SET(&ch[1], 1, EVFILT_TIMER, EV_ADD, 0, 100000, NULL);
		EV_SET(&ch[2], SIGUSR1, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
		EV_SET(&ch[3], 7, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
		EV_SET(&ch[4], p[1], EVFILT_WRITE, EV_ADD | EV_DISPATCH, 0, 0, NULL);
		if (kevent(kq, ch, 5, NULL, 0, NULL) != 0)
			perror("kevent add");
		for (j = 0; j < NW; j++)
			wret[j] = -2;
		for (j = 0; j < NW; j++)
			pthread_create(&t[j], NULL, waiter, (void *)(long)j);
		nanosleep(&d, NULL);
		t0 = now();
		switch (how) {
		case 0: close(kq); break;
		case 1: dup2(other, kq); break;
		case 2: dup3(other, kq, O_CLOEXEC); break;
		case 3: close_range((unsigned)kq, (unsigned)kq, 0); break;
		}
		for (j = 0; j < NW; j++)
			pthread_join(t[j], NULL);
		if (now() - t0 > 1.0) {
			printf("iter %d how %d: waiters took %.2f s\n", i, how, now() - t0);
			bad++;
		}
		for (j = 0; j < NW; j++)
			/* A waiter that only reached kevent() after the
			   dup2/dup3 finds /dev/null there: EINVAL. */
			if (wret[j] != -1 || (werr[j] != EBADF &&
			    !((how == 1 || how == 2) && werr[j] == EINVAL))) {
				printf("iter %d how %d: waiter %d returned %d errno %d\n",
				    i, how, j, wret[j], werr[j]);
				bad++;
			}
		if (how == 1 || how == 2)
			close(kq);
	}
	if (getenv("LISTFDS")) { char c[64]; snprintf(c, sizeof c, "ls -l /proc/%d/fd", getpid()); system(c); }
	if (nfds() != base) {
		printf("fd leak: %d before, %d after\n", base, nfds());
		bad++;
	}
	printf("a2: %d problems in %d iterations\n", bad, iters);
	return bad ? 1 : 0;
}
