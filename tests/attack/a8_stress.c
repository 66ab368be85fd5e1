/*
 * a8: engine stress.  Readers call kevent() on one kqueue with eventlists
 * of 1..3000 while a writer makes pipes readable, a churn thread adds and
 * deletes always-readable "victim" pipes (udata = generation), triggers
 * EVFILT_USER and runs a periodic timer.  Pipes are watched in four modes:
 * level, EV_CLEAR, EV_DISPATCH (re-enabled after draining), EV_ONESHOT
 * (re-added after draining).  Checks: no duplicate (ident, filter) in one
 * returned list; no event of a victim whose EV_DELETE completed before the
 * call began; every byte written is read within 3 s of the end (no lost
 * event); no crash, hang, sanitizer report or KQ_ASSERT.
 */
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

#define NP	48
#define NV	8
#define NR	3

static int kq, pipes[NP][2], victims[NV][2];
static atomic_long written[NP], readb[NP];
static atomic_long done_gen[NV];
static atomic_int stop_write, stop_all;
static atomic_int dups, late, errs;
static atomic_long nevents_total, user_seen, timer_seen;

static void
arm(int i, int add)
{
	struct kevent ch;
	int m = i % 4;
	unsigned short fl = m == 1 ? EV_CLEAR : m == 2 ? EV_DISPATCH : m == 3 ? EV_ONESHOT : 0;

	if (!add && m == 2)
		EV_SET(&ch, pipes[i][0], EVFILT_READ, EV_ENABLE, 0, 0, (void *)(intptr_t)i);
	else
		EV_SET(&ch, pipes[i][0], EVFILT_READ, EV_ADD | fl, 0, 0, (void *)(intptr_t)i);
	if (kevent(kq, &ch, 1, NULL, 0, NULL) != 0) {
		printf("arm %d: %s\n", i, strerror(errno));
		atomic_fetch_add(&errs, 1);
	}
}

static void *
reader(void *arg)
{
	static const int sizes[] = { 1, 2, 3, 7, 64, 511, 512, 513, 3000 };
	struct kevent *ev = calloc(3000, sizeof(*ev));
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u;
	char buf[4096];

	while (!atomic_load(&stop_all)) {
		int n = sizes[rand_r(&seed) % 9], r, i, j;
		struct timespec to = { 0, 20 * 1000 * 1000 };
		long snap[NV];

		for (i = 0; i < NV; i++)
			snap[i] = atomic_load(&done_gen[i]);
		r = kevent(kq, NULL, 0, ev, n, &to);
		if (r < 0) {
			printf("reader: kevent: %s\n", strerror(errno));
			atomic_fetch_add(&errs, 1);
			break;
		}
		if (r > n) {
			printf("reader: %d > %d\n", r, n);
			atomic_fetch_add(&errs, 1);
		}
		atomic_fetch_add(&nevents_total, r);
		for (i = 0; i < r; i++)
			for (j = i + 1; j < r; j++)
				if (ev[i].ident == ev[j].ident && ev[i].filter == ev[j].filter) {
					printf("DUP: ident %lu filter %d twice in one list of %d\n",
					    (unsigned long)ev[i].ident, ev[i].filter, r);
					atomic_fetch_add(&dups, 1);
				}
		for (i = 0; i < r; i++) {
			intptr_t u = (intptr_t)ev[i].udata;

			if (ev[i].flags & EV_ERROR) {
				printf("EV_ERROR %ld on %lu\n", (long)ev[i].data, (unsigned long)ev[i].ident);
				atomic_fetch_add(&errs, 1);
				continue;
			}
			if (ev[i].filter == EVFILT_USER) {
				atomic_fetch_add(&user_seen, 1);
				continue;
			}
			if (ev[i].filter == EVFILT_TIMER) {
				atomic_fetch_add(&timer_seen, ev[i].data);
				continue;
			}
			if (u >= 1000) {	/* victim: 1000 + v*1000000 + gen */
				long v = (u - 1000) / 1000000, g = (u - 1000) % 1000000;

				if (g <= snap[v]) {
					printf("LATE: victim %ld gen %ld reported after its "
					    "EV_DELETE completed (done %ld)\n", v, g, snap[v]);
					atomic_fetch_add(&late, 1);
				}
				continue;
			}
			{
				long got = 0;
				ssize_t k;

				while ((k = read(pipes[u][0], buf, sizeof(buf))) > 0)
					got += k;
				atomic_fetch_add(&readb[u], got);
				if (u % 4 >= 2)
					arm((int)u, u % 4 == 3);
			}
		}
	}
	free(ev);
	return NULL;
}

static void *
writer(void *arg)
{
	unsigned seed = 12345;

	(void)arg;
	while (!atomic_load(&stop_write)) {
		int i = rand_r(&seed) % NP;

		if (write(pipes[i][1], "w", 1) == 1)
			atomic_fetch_add(&written[i], 1);
		if ((rand_r(&seed) & 15) == 0)
			sched_yield();
	}
	return NULL;
}

static void *
churn(void *arg)
{
	long gen[NV] = { 0 };
	unsigned seed = 999;
	struct kevent ch;

	(void)arg;
	while (!atomic_load(&stop_all)) {
		int v = rand_r(&seed) % NV;

		gen[v]++;
		EV_SET(&ch, victims[v][0], EVFILT_READ,
		    EV_ADD | ((rand_r(&seed) & 1) ? EV_CLEAR : 0), 0, 0,
		    (void *)(intptr_t)(1000 + v * 1000000L + gen[v]));
		kevent(kq, &ch, 1, NULL, 0, NULL);
		sched_yield();
		EV_SET(&ch, victims[v][0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
		if (kevent(kq, &ch, 1, NULL, 0, NULL) != 0)
			atomic_fetch_add(&errs, 1);
		atomic_store(&done_gen[v], gen[v]);
		EV_SET(&ch, 77, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
		kevent(kq, &ch, 1, NULL, 0, NULL);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 5, i;
	pthread_t r[NR], w, c;
	struct kevent ch;
	long lost = 0, tw = 0;
	struct timespec d = { 0, 10 * 1000 * 1000 };

	kq = kqueue();
	for (i = 0; i < NP; i++) {
		pipe2(pipes[i], O_NONBLOCK);
		arm(i, 1);
	}
	for (i = 0; i < NV; i++) {
		pipe2(victims[i], O_NONBLOCK);
		write(victims[i][1], "v", 1);
	}
	EV_SET(&ch, 77, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	kevent(kq, &ch, 1, NULL, 0, NULL);
	EV_SET(&ch, 1, EVFILT_TIMER, EV_ADD, 0, 1, NULL);
	kevent(kq, &ch, 1, NULL, 0, NULL);
	for (i = 0; i < NR; i++)
		pthread_create(&r[i], NULL, reader, (void *)(intptr_t)(i + 1));
	pthread_create(&w, NULL, writer, NULL);
	pthread_create(&c, NULL, churn, NULL);
	sleep(secs);
	atomic_store(&stop_write, 1);
	pthread_join(w, NULL);
	for (i = 0; i < 300; i++) {
		int j, pending = 0;

		for (j = 0; j < NP; j++)
			pending |= atomic_load(&readb[j]) != atomic_load(&written[j]);
		if (!pending)
			break;
		nanosleep(&d, NULL);
	}
	atomic_store(&stop_all, 1);
	for (i = 0; i < NR; i++)
		pthread_join(r[i], NULL);
	pthread_join(c, NULL);
	for (i = 0; i < NP; i++) {
		tw += written[i];
		if (readb[i] != written[i]) {
			char b[64];
			ssize_t k = read(pipes[i][0], b, sizeof(b));
			printf("LOST: pipe %d (mode %d): written %ld read %ld (still in pipe: %zd)\n",
			    i, i % 4, (long)written[i], (long)readb[i], k);
			lost++;
		}
	}
	printf("a8: written %ld, events %ld, user %ld, timer %ld; dups %d late %d lost %ld errs %d\n",
	    tw, (long)nevents_total, (long)user_seen, (long)timer_seen, dups, late, lost, errs);
	return dups || late || lost || errs;
}
