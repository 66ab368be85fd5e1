/*
 * test-sigclose.c -- close() is async-signal-safe (POSIX), and so it stays
 * when it closes a kqueue or a watched descriptor: a signal handler that
 * closes them while the thread it interrupted is inside malloc() or free(),
 * or inside kqueue() and kevent(), neither corrupts the heap nor deadlocks,
 * every descriptor closed is closed, and the memory the closes free comes
 * back (FreeBSD: close(2) is a system call, safe anywhere).
 *
 * The main thread churns the heap and keeps two pools full: kqueues with
 * knotes of several filters, and pipe ends watched by those kqueues and by
 * one long-lived kqueue.  A second thread signals it every few
 * microseconds; the handler takes a kqueue and a watched descriptor from
 * the pools and closes them (close(), close_range(), or dup2() over them
 * and close()).  Where the signal lands is left to chance,
 * over thousands of closes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "helpers.h"
/*
 * The process's private writable memory (VmData), which holds both the C
 * library's heap and kq's own (src/heap.c maps its blocks), in bytes.
 */
static size_t
heap_in_use(void)
{
	char line[256];
	size_t kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmData: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}
#define HEAP_IN_USE()	heap_in_use()

/*
 * Under ThreadSanitizer (T_TSAN) the closes run on the second thread
 * itself, not in a handler: TSan runs an asynchronous handler inside its own runtime, and
 * one that interrupts TSan's free() deadlocks on TSan's slot lock at the
 * handler's first atomic (seen: __tsan::SlotLock under on_usr1).  Closing
 * from another thread still checks the same paths for races.
 */

#define POOL	32
#define CHURN	64

static _Atomic int kqpool[POOL], fdpool[POOL];
static atomic_long closes_kq, closes_fd, close_errors;
static atomic_int stop;
static pthread_t main_thread;

static int
take(_Atomic int *pool, unsigned *at)
{
	for (int i = 0; i < POOL; i++) {
		int fd = atomic_exchange(&pool[(*at + (unsigned)i) % POOL], -1);

		if (fd >= 0) {
			*at += (unsigned)i + 1;
			return fd;
		}
	}
	return -1;
}

static int devnull = -1;

/* Close fd one of three ways: close(), close_range() of it alone, or
   dup2() of /dev/null over it and then close(). */
static void
close_some_way(int fd, unsigned way)
{
	int r;

	switch (way % 3) {
	case 0:
		r = close(fd);
		break;
	case 1:
		r = close_range((unsigned)fd, (unsigned)fd, 0);
		break;
	default:
		r = dup2(devnull, fd) == fd ? close(fd) : -1;
		break;
	}
	if (r != 0)
		atomic_fetch_add(&close_errors, 1);
}

/* Only atomics, close(), close_range() and dup2(): async-signal-safe. */
static void
on_usr1(int sig)
{
	static unsigned kat, fat, way;
	int e = errno, fd;

	(void)sig;
	if ((fd = take(kqpool, &kat)) >= 0) {
		close_some_way(fd, way++);
		atomic_fetch_add(&closes_kq, 1);
	}
	if ((fd = take(fdpool, &fat)) >= 0) {
		close_some_way(fd, way++);
		atomic_fetch_add(&closes_fd, 1);
	}
	errno = e;
}

/*
 * The second thread: runs handler h in the main thread (or itself, under
 * TSan) every gap_ns until *stop.
 */
struct kick {
	void		(*h)(int);
	atomic_int	*stop;
	long		 gap_ns;
};

static void *
kicker(void *arg)
{
	const struct kick *k = arg;
	struct timespec gap = { 0, k->gap_ns };
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	while (!atomic_load(k->stop)) {
		if (T_TSAN)
			k->h(SIGUSR1);
		else
			pthread_kill(main_thread, SIGUSR1);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

/* A kqueue with READ on p0 (also in shared), a periodic TIMER and a
   triggered USER knote, into the pools. */
static void
refill(int shared, int slot)
{
	struct kevent ch[4];
	int kq, p[2];

	kq = kqueue();
	assert_true(kq >= 0);
	assert_int_equal(pipe(p), 0);
	EV_SET(&ch[0], (uintptr_t)p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	EV_SET(&ch[1], 1, EVFILT_TIMER, EV_ADD, 0, 1, NULL);
	EV_SET(&ch[2], 2, EVFILT_USER, EV_ADD, 0, 0, NULL);
	EV_SET(&ch[3], 2, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	assert_int_equal(kevent(kq, ch, 4, NULL, 0, NULL), 0);
	assert_int_equal(kevent(shared, ch, 1, NULL, 0, NULL), 0);
	assert_int_equal(close(p[1]), 0);	/* p[0] reads end of file */
	atomic_store(&kqpool[slot], kq);
	atomic_store(&fdpool[slot], p[0]);
}

static void
close_in_a_signal_handler_that_interrupted_malloc_or_kevent_keeps_the_heap_whole(
    void **state)
{
	struct sigaction sa;
	struct kevent ev[8];
	struct timespec t0, t;
	pthread_t th;
	void *churn[CHURN] = { 0 };
	unsigned seed = 1;
	int base, shared, i, slot = 0;
	size_t mem0 = 0, mem1;

	(void)state;
	for (i = 0; i < POOL; i++) {
		atomic_store(&kqpool[i], -1);
		atomic_store(&fdpool[i], -1);
	}
	/* The baselines after one round of everything kq keeps for reuse. */
	shared = kqueue();
	assert_true(shared >= 0);
	for (i = 0; i < POOL; i++)
		refill(shared, i);
	for (i = 0; i < POOL; i++) {
		assert_int_equal(close(atomic_exchange(&kqpool[i], -1)), 0);
		assert_int_equal(close(atomic_exchange(&fdpool[i], -1)), 0);
	}
	assert_int_equal(close(shared), 0);
	close(kqueue());	/* (what the closes put off goes here) */
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(devnull >= 0);
	base = t_count_fds();
	assert_true(base >= 0);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	t_watchdog(60);
	shared = kqueue();
	assert_true(shared >= 0);
	main_thread = pthread_self();
	{
		static struct kick k = { on_usr1, &stop, 20000 };

		assert_int_equal(pthread_create(&th, NULL, kicker, &k), 0);
	}
	/* After the kicker's stack is mapped (it stays, cached, after the
	   join); the pools are empty, so its signals close nothing yet. */
	mem0 = HEAP_IN_USE();

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (i = 0; i < CHURN; i++) {
			unsigned k = (seed = seed * 1103515245u + 12345u) >> 16;
			size_t n = 16 + k % 4000;

			free(churn[k % CHURN]);
			churn[k % CHURN] = malloc(n);
			assert_non_null(churn[k % CHURN]);
			memset(churn[k % CHURN], (int)k, n);
		}
		for (i = 0; i < POOL; i++, slot = (slot + 1) % POOL)
			if (atomic_load(&kqpool[slot]) < 0 &&
			    atomic_load(&fdpool[slot]) < 0) {
				refill(shared, slot);
				break;
			}
		/* The shared kqueue's knotes go as the handler closes. */
		assert_true(kevent(shared, NULL, 0, ev, 8, &t_zero) >= 0);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L +
	    (t.tv_nsec - t0.tv_nsec) < 1500000000L);
	atomic_store(&stop, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	signal(SIGUSR1, SIG_IGN);
	alarm(0);

	print_message("handler closed %ld kqueues and %ld watched descriptors\n",
	    atomic_load(&closes_kq), atomic_load(&closes_fd));
	assert_true(atomic_load(&closes_kq) > 100);
	assert_int_equal(atomic_load(&close_errors), 0);
	for (i = 0; i < CHURN; i++)
		free(churn[i]);
	for (i = 0; i < POOL; i++) {
		int fd;

		if ((fd = atomic_exchange(&kqpool[i], -1)) >= 0)
			assert_int_equal(close(fd), 0);
		if ((fd = atomic_exchange(&fdpool[i], -1)) >= 0)
			assert_int_equal(close(fd), 0);
	}
	/* The shared kqueue lost every knote with its descriptor. */
	assert_int_equal(kevent(shared, NULL, 0, ev, 8, &t_zero), 0);
	assert_int_equal(close(shared), 0);
	/* Every descriptor the handler closed is closed, and so are the
	   kqueues' own, by the next kqueue() at the latest. */
	close(kqueue());
	assert_int_equal(t_count_fds(), base);
	/* What the closes freed came back: not thousands of kqueues' worth
	   (about 250 KiB more here; 190 MiB if kq freed nothing).  Not
	   under a sanitizer, whose allocator keeps what the churn frees. */
	mem1 = HEAP_IN_USE();
	if (mem0 != 0 && !T_SAN)
		assert_true(mem1 < mem0 + 512 * 1024);
}

static _Atomic int fork_kq = -1;
static atomic_int fork_closed;

static void
on_usr1_close_kq(int sig)
{
	int e = errno, fd = atomic_exchange(&fork_kq, -1);

	(void)sig;
	if (fd >= 0) {
		(void)close(fd);
		atomic_store(&fork_closed, 1);
	}
	errno = e;
}

/*
 * A handler closes a kqueue while the thread is inside kevent() with it
 * (often inside its lock: the kqueue is then retired later); the thread
 * sees EBADF and forks.  The child opens pipes and makes kqueues: none of
 * its pipes may be closed or replaced by what the parent left to do.
 */
static void
fork_after_a_handler_closed_a_kqueue_in_kevent_leaves_the_child_s_descriptors_alone(
    void **state)
{
	static struct kick k = { on_usr1_close_kq, &fork_closed, 5000 };
	struct sigaction sa;
	struct kevent ch[64], ev;
	int attempt, p[2], i;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1_close_kq;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	main_thread = pthread_self();
	t_watchdog(60);
	for (attempt = 0; attempt < 40; attempt++) {
		pthread_t th;
		pid_t pid;
		int kq, st;

		assert_int_equal(pipe(p), 0);
		kq = kqueue();
		assert_true(kq >= 0);
		EV_SET(&ch[0], 1, EVFILT_TIMER, EV_ADD, 0, 100000, NULL);
		EV_SET(&ch[1], (uintptr_t)p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
		assert_int_equal(kevent(kq, ch, 2, NULL, 0, NULL), 0);
		for (i = 0; i < 64; i++)
			EV_SET(&ch[i], (uintptr_t)p[1], EVFILT_WRITE,
			    (i & 1) ? EV_DELETE : EV_ADD, 0, 0, NULL);
		atomic_store(&fork_closed, 0);
		atomic_store(&fork_kq, kq);
		assert_int_equal(pthread_create(&th, NULL, kicker, &k), 0);
		while (!atomic_load(&fork_closed))
			(void)kevent(kq, ch, 64, NULL, 0, NULL);
		assert_int_equal(pthread_join(th, NULL), 0);
		/* Closed: as on FreeBSD, the number is no kqueue now. */
		assert_int_equal(kevent(kq, NULL, 0, &ev, 1, &t_zero), -1);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int mine[32], n = 0, lost = 0;
			struct stat sb;

			for (i = 0; i < 16; i++) {
				int q[2];

				if (pipe(q) == 0) {
					mine[n++] = q[0];
					mine[n++] = q[1];
				}
			}
			for (i = 0; i < 8; i++)
				(void)kqueue();
			for (i = 0; i < n; i++)
				if (fstat(mine[i], &sb) != 0 ||
				    !S_ISFIFO(sb.st_mode))
					lost++;
			T_EXIT(lost == 0 ? 0 : 1);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		assert_int_equal(close(p[0]), 0);
		assert_int_equal(close(p[1]), 0);
	}
	alarm(0);
	signal(SIGUSR1, SIG_IGN);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(close_in_a_signal_handler_that_interrupted_malloc_or_kevent_keeps_the_heap_whole),
		cmocka_unit_test(fork_after_a_handler_closed_a_kqueue_in_kevent_leaves_the_child_s_descriptors_alone),
	};

	return t_run_group(tests, NULL, NULL);
}
