/*
 * a24 (attack helper 25's r1): a signal handler's kevent() with a timeout, on a kqueue B other than
 * the one the interrupted thread X holds, takes B's lock with trylock at
 * entry, then lets it go to sleep and on waking takes it again with a
 * plain, unbounded KQ_LOCK.  If meanwhile thread Y took B's lock and waits
 * for the datagram stripe that X's interrupted walk (on kqueue A) holds,
 * the handler waits for ever: X can't resume, Y can't get the stripe.
 * Exit 0 if every handler returns within 3 s, 1 on a hang.
 */
#include <sys/event.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int kqA, kqB, u1, u2, tx;
static struct sockaddr_in a2;
static atomic_int stop;
static atomic_long h_start, h_ok, h_deadlk, h_other, xprog, yprog;

static long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000;
}

static void on_usr1(int s)
{
	struct kevent ev;
	struct timespec tmo = { 0, 10 * 1000 * 1000 };
	int e = errno;
	(void)s;
	atomic_store(&h_start, now_ms());
	if (kevent(kqB, NULL, 0, &ev, 1, &tmo) >= 0)
		atomic_fetch_add(&h_ok, 1);
	else if (errno == EDEADLK)
		atomic_fetch_add(&h_deadlk, 1);
	else
		atomic_fetch_add(&h_other, 1);
	atomic_store(&h_start, 0);
	errno = e;
}

static void *xthr(void *a)
{
	struct kevent ev;
	struct timespec z = { 0, 0 };
	(void)a;
	while (!atomic_load(&stop)) {
		(void)kevent(kqA, NULL, 0, &ev, 1, &z);
		atomic_fetch_add(&xprog, 1);
	}
	return NULL;
}

static void *ythr(void *a)
{
	struct kevent ev[4];
	struct timespec z = { 0, 5 * 1000 * 1000 };
	char buf[64];
	(void)a;
	while (!atomic_load(&stop)) {
		int n = kevent(kqB, NULL, 0, ev, 4, &z);
		if (n > 0)
			while (recv(u2, buf, sizeof buf, MSG_DONTWAIT) >= 0)
				;
		atomic_fetch_add(&yprog, 1);
	}
	return NULL;
}

static void *wthr(void *a)
{
	(void)a;
	while (!atomic_load(&stop)) {
		(void)sendto(tx, "x", 1, 0, (struct sockaddr *)&a2, sizeof a2);
		usleep(300);
	}
	return NULL;
}

static int udp_bound(struct sockaddr_in *sa)
{
	socklen_t l = sizeof(*sa);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)sa, sizeof(*sa)) < 0 ||
	    getsockname(s, (struct sockaddr *)sa, &l) < 0) {
		perror("udp");
		exit(2);
	}
	return s;
}

int main(void)
{
	struct sockaddr_in a1;
	struct kevent c;
	struct sigaction sa;
	pthread_t x, y, w;
	int big = 8 << 20, n = 0, raw;
	long end;

	u1 = udp_bound(&a1);
	(void)setsockopt(u1, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
	(void)setsockopt(u1, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	raw = udp_bound(&a2);
	u2 = u1 + 64;			/* same datagram stripe (fd % 64) */
	if (dup2(raw, u2) != u2) { perror("dup2"); return 2; }
	close(raw);
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	for (int i = 0; i < 4096; i++)
		if (sendto(tx, "d", 1, 0, (struct sockaddr *)&a1, sizeof a1) == 1)
			n++;
	fprintf(stderr, "queued %d datagrams on u1 (fd %d), u2 fd %d\n", n, u1, u2);
	kqA = kqueue();
	kqB = kqueue();
	EV_SET(&c, u1, EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kqA, &c, 1, NULL, 0, NULL) != 0) { perror("A"); return 2; }
	EV_SET(&c, u2, EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kqB, &c, 1, NULL, 0, NULL) != 0) { perror("B"); return 2; }
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_create(&x, NULL, xthr, NULL);
	pthread_create(&y, NULL, ythr, NULL);
	pthread_create(&w, NULL, wthr, NULL);
	end = now_ms() + 6000;
	while (now_ms() < end) {
		long hs = atomic_load(&h_start);
		if (hs != 0 && now_ms() - hs > 3000) {
			fprintf(stderr, "HANG: handler's kevent(B) stuck %ld ms "
			    "(ok %ld, EDEADLK %ld, other %ld; X %ld Y %ld)\n",
			    now_ms() - hs, atomic_load(&h_ok),
			    atomic_load(&h_deadlk), atomic_load(&h_other),
			    atomic_load(&xprog), atomic_load(&yprog));
			if (getenv("HOLD")) pause();
			_exit(1);
		}
		if (hs == 0)
			pthread_kill(x, SIGUSR1);
		usleep(2000);
	}
	atomic_store(&stop, 1);
	/* Wind-down with the same watchdog. */
	for (long t0 = now_ms(); now_ms() - t0 < 4000; usleep(2000)) {
		long hs = atomic_load(&h_start);
		if (hs != 0 && now_ms() - hs > 3000) {
			fprintf(stderr, "HANG (wind-down): handler's kevent(B) "
			    "stuck %ld ms (ok %ld, EDEADLK %ld)\n", now_ms() - hs,
			    atomic_load(&h_ok), atomic_load(&h_deadlk));
			if (getenv("HOLD")) pause();
			_exit(1);
		}
	}
	pthread_join(x, NULL); pthread_join(y, NULL); pthread_join(w, NULL);
	fprintf(stderr, "ok: handler calls ok %ld, EDEADLK %ld, other %ld\n",
	    atomic_load(&h_ok), atomic_load(&h_deadlk), atomic_load(&h_other));
	return atomic_load(&h_other) != 0;
}
