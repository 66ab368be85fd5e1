/*
 * a25 (attack helper 25's r2): two threads each walking a UDP socket's queue (EVFILT_READ data,
 * dgram_total) under their own kqueue, A and C, holding datagram stripes
 * S1 and S2.  Signals interrupt both walks; each handler calls
 * kevent(timeout 0) on a kqueue nobody else uses (B, D), so its trylock
 * succeeds, and B/D watch a readable UDP socket on the OTHER thread's
 * stripe.  dgram_total takes the stripe with a plain kq_olock_lock: each
 * handler waits for the stripe the other thread's interrupted walk holds,
 * for ever.  Exit 0 if every handler returns within 3 s, 1 on a hang.
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

static int kq_walk[2], kq_h[2], tx;
static pthread_t t[2];
static atomic_int stop;
static atomic_long h_start[2], h_ok, h_deadlk, h_other, prog[2];
static _Thread_local int me = -1;

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static void on_usr1(int s)
{
	struct kevent ev;
	struct timespec z = { 0, 0 };
	int e = errno;
	(void)s;
	if (me < 0)
		return;
	atomic_store(&h_start[me], now_ms());
	if (kevent(kq_h[me], NULL, 0, &ev, 1, &z) >= 0)
		atomic_fetch_add(&h_ok, 1);
	else if (errno == EDEADLK)
		atomic_fetch_add(&h_deadlk, 1);
	else
		atomic_fetch_add(&h_other, 1);
	atomic_store(&h_start[me], 0);
	errno = e;
}

static void *walker(void *a)
{
	struct kevent ev;
	struct timespec z = { 0, 0 };
	me = (int)(long)a;
	while (!atomic_load(&stop)) {
		(void)kevent(kq_walk[me], NULL, 0, &ev, 1, &z);
		atomic_fetch_add(&prog[me], 1);
	}
	return NULL;
}

/* A UDP socket at descriptor number want, with n datagrams queued. */
static void udp_at(int want, int n)
{
	struct sockaddr_in sa;
	socklen_t l = sizeof sa;
	int big = 8 << 20, s = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    getsockname(s, (struct sockaddr *)&sa, &l) < 0) {
		perror("udp");
		exit(2);
	}
	(void)setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
	if (dup2(s, want) != want) { perror("dup2"); exit(2); }
	close(s);
	for (int i = 0; i < n; i++)
		(void)sendto(tx, "d", 1, 0, (struct sockaddr *)&sa, sizeof sa);
}

static void watch(int kq, int fd)
{
	struct kevent c;
	EV_SET(&c, fd, EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kq, &c, 1, NULL, 0, NULL) != 0) { perror("watch"); exit(2); }
}

static int check(void)
{
	for (int i = 0; i < 2; i++) {
		long hs = atomic_load(&h_start[i]);
		if (hs != 0 && now_ms() - hs > 3000) {
			fprintf(stderr, "HANG: handler on thread %d stuck %ld ms "
			    "(ok %ld, EDEADLK %ld, other %ld)\n", i, now_ms() - hs,
			    atomic_load(&h_ok), atomic_load(&h_deadlk),
			    atomic_load(&h_other));
			if (getenv("HOLD"))
				pause();
			return 1;
		}
	}
	return 0;
}

int main(void)
{
	struct sigaction sa;
	long end;

	tx = socket(AF_INET, SOCK_DGRAM, 0);
	/* Stripes: fd % 64.  S1 = 10, S2 = 11. */
	udp_at(74, 4096);	/* walked by thread 0: stripe 10 */
	udp_at(75, 4096);	/* walked by thread 1: stripe 11 */
	udp_at(139, 4);		/* thread 0's handler: stripe 11 */
	udp_at(138, 4);		/* thread 1's handler: stripe 10 */
	for (int i = 0; i < 2; i++) {
		kq_walk[i] = kqueue();
		kq_h[i] = kqueue();
	}
	watch(kq_walk[0], 74);
	watch(kq_walk[1], 75);
	watch(kq_h[0], 139);
	watch(kq_h[1], 138);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, walker, (void *)i);
	end = now_ms() + 6000;
	while (now_ms() < end) {
		if (check())
			_exit(1);
		if (atomic_load(&h_start[0]) == 0 && atomic_load(&h_start[1]) == 0) {
			pthread_kill(t[0], SIGUSR1);
			pthread_kill(t[1], SIGUSR1);
		}
		usleep(1000);
	}
	atomic_store(&stop, 1);
	for (long t0 = now_ms(); now_ms() - t0 < 4000; usleep(2000))
		if (check())
			_exit(1);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	fprintf(stderr, "ok: handler calls ok %ld, EDEADLK %ld, other %ld\n",
	    atomic_load(&h_ok), atomic_load(&h_deadlk), atomic_load(&h_other));
	return atomic_load(&h_other) != 0;
}
