/*
 * a18: a signal-based stop-the-world, as a garbage collector or a sampling
 * profiler does it: a collector thread sends SIGUSR1 to every mutator, the
 * thread that forks or calls closefrom() among them, and waits for each
 * handler to answer; the handlers then wait to be resumed.  Two mutators
 * make and close kqueues with TIMER and PROC knotes (reg_lock, maker
 * sections) meanwhile.  c14bdaf blocked the forking thread's signals
 * while its prepare waited for reg_lock, whose holder was stopped in its
 * handler: the stop never completed (5 runs of 5, fork and closefrom
 * alike).  Exit 0 when every stop completes within 5 s, 1 when one does
 * not.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/wait.h>

#define NM	3		/* mutators, the main thread among them */

static pthread_t mut[NM];
static sem_t answered;
static atomic_int epoch, stop, stops;

static void
on_stop(int s)
{
	struct timespec ts = { 0, 100000 };
	int e = atomic_load(&epoch), err = errno;

	(void)s;
	sem_post(&answered);
	while (atomic_load(&epoch) == e)
		nanosleep(&ts, NULL);
	errno = err;
}

static void *
mutator(void *a)
{
	struct kevent ev[2];

	(void)a;
	while (!atomic_load(&stop)) {
		int kq = kqueue();

		EV_SET(&ev[0], 1, EVFILT_TIMER, EV_ADD, 0, 1000, 0);
		EV_SET(&ev[1], getpid(), EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, 0);
		(void)kevent(kq, ev, 2, NULL, 0, NULL);
		close(kq);
	}
	return NULL;
}

static void *
collector(void *a)
{
	(void)a;
	while (!atomic_load(&stop)) {
		for (int i = 0; i < NM; i++)
			pthread_kill(mut[i], SIGUSR1);
		for (int i = 0; i < NM; i++) {
			struct timespec d;

			clock_gettime(CLOCK_REALTIME, &d);
			d.tv_sec += 5;
			if (sem_timedwait(&answered, &d) != 0) {
				printf("a18: HANG: stop %d: %d of %d threads "
				    "answered in 5 s\n", (int)stops, i, NM);
				fflush(stdout);
				_exit(1);
			}
		}
		atomic_fetch_add(&epoch, 1);
		stops++;
		usleep(500);
	}
	return NULL;
}

int
main(void)
{
	struct sigaction sa = { 0 };
	pthread_t c;

	sa.sa_handler = on_stop;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sem_init(&answered, 0, 0);
	mut[0] = pthread_self();
	for (int i = 1; i < NM; i++)
		pthread_create(&mut[i], NULL, mutator, NULL);
	pthread_create(&c, NULL, collector, NULL);
	for (int i = 0; i < 300; i++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
			;
	}
	for (int i = 0; i < 300; i++) {
		closefrom(1000);
		usleep(200);
	}
	atomic_store(&stop, 1);
	pthread_join(c, NULL);
	for (int i = 1; i < NM; i++)
		pthread_join(mut[i], NULL);
	printf("a18: 300 forks and 300 closefrom()s under %d stops\n",
	    (int)stops);
	return 0;
}
