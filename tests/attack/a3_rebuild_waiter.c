/*
 * a3: kq_rebuild() swaps a fresh epoll set under the kqueue's number
 * (dup3) while another thread is blocked in epoll_wait() on the old set.
 * That thread keeps sleeping on the old set, which nothing registered
 * after the rebuild reaches: an event on a descriptor added after the
 * rebuild never wakes it (the old set only still has the doorbell and the
 * pre-rebuild registrations).  A kevent() with no timeout then sleeps
 * forever although an event is pending.
 *
 * Set-up: a pipe watched EV_CLEAR (edge-triggered registration) whose
 * number is closed while a dup keeps the file: its registration can no
 * longer be removed ("zombie").  Thread A blocks in kevent(kq, NULL
 * timeout).  Thread B spins kevent(kq, timeout 0) so that it, not A,
 * fetches the zombie's single edge and rebuilds the set.  Then B adds a
 * fresh pipe and makes it readable.  A must return it within a second.
 *
 * Also shows: a dup() of the kqueue descriptor taken before the rebuild
 * stops working (EINVAL) although the original number is still open,
 * contrary to kqueue.2 ("works ... while the number originally returned
 * stays open").
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <sys/event.h>
#include <sys/syscall.h>

static int kq;
static atomic_int a_ret, a_done, stop_spin, b_zero_calls;

static void *
thread_a(void *arg)
{
	struct kevent ev[8];
	int n;

	(void)arg;
	n = kevent(kq, NULL, 0, ev, 8, NULL);
	atomic_store(&a_ret, n < 0 ? -errno : n);
	atomic_store(&a_done, 1);
	return NULL;
}

static void *
thread_b(void *arg)
{
	struct kevent ev[8];
	struct timespec z = { 0, 0 };

	(void)arg;
	while (!atomic_load(&stop_spin)) {
		(void)kevent(kq, NULL, 0, ev, 8, &z);
		atomic_fetch_add(&b_zero_calls, 1);
	}
	return NULL;
}

static int
same_file(int a, int b)
{
	pid_t p = getpid();

	return syscall(SYS_kcmp, p, p, KCMP_FILE, a, b) == 0;
}

static void
msleep(int ms)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&d, NULL);
}

int
main(int argc, char **argv)
{
	int tries = argc > 1 ? atoi(argv[1]) : 40, t, hang = 0, rebuilt_by_b = 0;
	int dupbad = 0;

	for (t = 0; t < tries && !hang; t++) {
		int p[2], q[2], d, kqdup, rp0;
		struct kevent ch;
		struct kevent ev[8];
		struct timespec z = { 0, 0 };
		pthread_t ta, tb;

		kq = kqueue();
		kqdup = dup(kq);
		pipe(p);
		EV_SET(&ch, p[0], EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, NULL);
		kevent(kq, &ch, 1, NULL, 0, NULL);
		rp0 = p[0];
		d = dup(p[0]);
		close(p[0]);		/* the registration outlives the number */
		write(p[1], "x", 1);	/* edge 1: drops the stale knote */
		kevent(kq, NULL, 0, ev, 8, &z);
		kevent(kq, NULL, 0, ev, 8, &z);

		atomic_store(&a_done, 0);
		atomic_store(&stop_spin, 0);
		pthread_create(&ta, NULL, thread_a, NULL);
		msleep(20);		/* A is now in epoll_wait on the set */
		pthread_create(&tb, NULL, thread_b, NULL);
		msleep(5);
		write(p[1], "y", 1);	/* edge 2: zombie (no knote) -> rebuild */
		msleep(20);
		atomic_store(&stop_spin, 1);
		pthread_join(tb, NULL);
		if (atomic_load(&a_done)) {
			/* A took the edge itself (and rebuilt): no luck, again. */
			pthread_join(ta, NULL);
			goto next;
		}
		if (same_file(kq, kqdup))
			goto cleanup_a;	/* nobody rebuilt */
		rebuilt_by_b++;
		/* A sleeps on the old set; B rebuilt.  Make a new event. */
		pipe(q);
		EV_SET(&ch, q[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
		kevent(kq, &ch, 1, NULL, 0, NULL);
		write(q[1], "z", 1);
		msleep(1000);
		if (!atomic_load(&a_done)) {
			printf("try %d: HANG: thread A still blocked 1 s after fd %d "
			    "(added after the rebuild) became readable\n", t, q[0]);
			hang = 1;
		}
		/* Is the event pending?  Ask from this thread. */
		if (hang) {
			int n = kevent(kq, NULL, 0, ev, 8, &z);

			printf("  a zero-timeout kevent() from another thread returns %d "
			    "(ident %d)\n", n, n > 0 ? (int)ev[0].ident : -1);
		}
		/* The dup taken before the rebuild. */
		if (kevent(kqdup, NULL, 0, ev, 8, &z) < 0) {
			printf("try %d: kevent() on a dup of the still-open kqueue "
			    "fails: %s\n", t, strerror(errno));
			dupbad = 1;
		}
		close(q[0]);
		close(q[1]);
cleanup_a:
		close(kq);		/* wakes A (EBADF) */
		pthread_join(ta, NULL);
		kq = -1;
next:
		if (kq >= 0)
			close(kq);
		close(kqdup);
		close(d);
		close(p[1]);
		(void)rp0;
	}
	printf("a3: %d tries, %d rebuilt by the spinner, hang=%d dupbad=%d\n",
	    t, rebuilt_by_b, hang, dupbad);
	/* dupbad is documented (kqueue.2, kevent.2 LINUX NOTES 1): a dup of
	   the kqueue taken before a rebuild keeps the old set. */
	return hang;
}
