/* a27 (attack helper 26's h4) (handler wakes Y via u2, then calls kevent(B, 0) up to 64 times): a signal handler's kevent(B, zero timeout) while its thread X's
 * interrupted walk holds datagram stripe S (X in kevent(A), A watching a
 * UDP socket u1 with thousands of datagrams).  Since 41fe4e4 the handler
 * gets B with a trylock and kq_scan treats owned>1 as zero timeout -- but
 * the zero-timeout "fast" round still lets B's lock go around its
 * epoll_wait(0) and takes it back with an unbounded KQ_LOCK.  Y threads
 * loop kevent(B) where B watches u2 (same stripe S, always readable): one
 * that takes B in that window waits for S, which X holds: the handler
 * waits for Y for ever.  Exit 0 if every handler returns within 3 s,
 * 1 on a hang. */
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

#ifndef NY
#define NY 2
#endif
static int kqA, kqB, u1, u2, tx;
static struct sockaddr_in a2;
static atomic_int stop;
static atomic_long h_start, h_ok, h_deadlk, h_other;

static long now_ms(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000L+t.tv_nsec/1000000;}

static void on_usr1(int s)
{
	struct kevent ev;
	struct timespec z = { 0, 0 };
	int e = errno;
	(void)s;
	atomic_store(&h_start, now_ms());
	/* make u2 readable: wakes a Y asleep on B */
	(void)sendto(tx, "w", 1, 0, (struct sockaddr *)&a2, sizeof a2);
	for (int i = 0; i < 64; i++) {
		if (kevent(kqB, NULL, 0, &ev, 1, &z) >= 0) atomic_fetch_add(&h_ok, 1);
		else if (errno == EDEADLK) { atomic_fetch_add(&h_deadlk, 1); break; }
		else { atomic_fetch_add(&h_other, 1); break; }
	}
	atomic_store(&h_start, 0);
	errno = e;
}

static void *xthr(void *a)
{
	struct kevent ev; struct timespec z = { 0, 0 }; (void)a;
	while (!atomic_load(&stop)) (void)kevent(kqA, NULL, 0, &ev, 1, &z);
	return NULL;
}

static void *ythr(void *a)
{
	struct kevent ev[4]; struct timespec z = { 0, 50 * 1000 * 1000 }; char buf[16]; (void)a;
	while (!atomic_load(&stop))
		if (kevent(kqB, NULL, 0, ev, 4, &z) > 0)
			while (recv(u2, buf, sizeof buf, MSG_DONTWAIT) >= 0)
				;
	return NULL;
}

static int udp_bound(struct sockaddr_in *sa)
{
	socklen_t l = sizeof(*sa); int s = socket(AF_INET, SOCK_DGRAM, 0);
	memset(sa, 0, sizeof(*sa)); sa->sin_family = AF_INET; sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)sa, sizeof(*sa)) < 0 || getsockname(s, (struct sockaddr *)sa, &l) < 0) { perror("udp"); exit(2); }
	return s;
}

int main(void)
{
	struct sockaddr_in a1; struct kevent c; struct sigaction sa;
	pthread_t x, y[NY]; int big = 8 << 20, raw; long end, sent = 0;

	u1 = udp_bound(&a1);
	(void)setsockopt(u1, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
	(void)setsockopt(u1, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	raw = udp_bound(&a2);
	u2 = u1 + 64;
	if (dup2(raw, u2) != u2) { perror("dup2"); return 2; }
	close(raw);
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	for (int i = 0; i < 4096; i++) sendto(tx, "d", 1, 0, (struct sockaddr *)&a1, sizeof a1);
	kqA = kqueue(); kqB = kqueue();
	EV_SET(&c, u1, EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kqA, &c, 1, NULL, 0, NULL) != 0) { perror("A"); return 2; }
	EV_SET(&c, u2, EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kqB, &c, 1, NULL, 0, NULL) != 0) { perror("B"); return 2; }
	memset(&sa, 0, sizeof sa); sa.sa_handler = on_usr1; sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_create(&x, NULL, xthr, NULL);
	for (int i = 0; i < NY; i++) pthread_create(&y[i], NULL, ythr, NULL);
	end = now_ms() + 8000;
	while (now_ms() < end) {
		long hs = atomic_load(&h_start);
		if (hs != 0 && now_ms() - hs > 3000) {
			fprintf(stderr, "HANG: handler's kevent(B, 0) stuck %ld ms (ok %ld, EDEADLK %ld, other %ld, signals %ld)\n",
			    now_ms() - hs, atomic_load(&h_ok), atomic_load(&h_deadlk), atomic_load(&h_other), sent);
			if (getenv("HOLD")) pause();
			_exit(1);
		}
		if (hs == 0) { pthread_kill(x, SIGUSR1); sent++; }
		usleep(500);
	}
	atomic_store(&stop, 1);
	for (long t0 = now_ms(); now_ms() - t0 < 4000 && atomic_load(&h_start) == 0 ? 0 : now_ms() - t0 < 4000; usleep(2000)) {
		long hs = atomic_load(&h_start);
		if (hs != 0 && now_ms() - hs > 3000) { fprintf(stderr, "HANG (wind-down)\n"); _exit(1); }
	}
	pthread_join(x, NULL);
	for (int i = 0; i < NY; i++) pthread_join(y[i], NULL);
	fprintf(stderr, "ok: handler calls ok %ld, EDEADLK %ld, other %ld\n", atomic_load(&h_ok), atomic_load(&h_deadlk), atomic_load(&h_other));
	return atomic_load(&h_other) != 0;
}
