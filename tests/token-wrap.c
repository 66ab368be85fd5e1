/*
 * token-wrap.c -- two live threads whose lock tokens were drawn 2^31 and
 * 2^32 draws apart still own their locks apart (needs the SAN=fault
 * build: kq_olock_token_next, src/olock.c).
 *
 * kq's locks name their holder by a per-thread token, drawn from a
 * counter at the thread's first lock.  With a 31-bit counter, tokens came
 * round after 2^31 threads (a day or two of a server that makes a thread
 * per connection); two live threads could then share one, and a thread
 * took a lock the other held for its own: it counted a UDP socket's
 * queue while the other walked a socket on the same lock stripe, and its
 * data was cut short or ran long.  The hook sets where the counter goes
 * on, so each case makes its two threads draw tokens that far apart
 * without making 2^31 threads.
 *
 * For each distance: thread X draws its token at the counter's old end,
 * thread Y draws the token the distance past it; then, side by side for
 * 300 ms, X counts a deep UDP queue and Y another on the same stripe
 * (numbers 64 apart), each checking every count is its whole queue's
 * payload, and both hammer one kqueue's lock with changes and zero-
 * timeout waits (the futex is the word's low half, which tokens 2^31
 * apart share) under a watchdog.  Prints "token-wrap: N passed, M failed".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/socket.h>

/* Exported by the SAN=fault build of libkq (src/olock.c). */
void	kq_olock_token_next(uint64_t t);

#define DEEP_N		250	/* datagrams of SMALL bytes */
#define SMALL		16
#define OTHER_TOTAL	600	/* 100 + 200 + 300 bytes */
#define RUN_NS		300000000LL

static int deep, other, shared_kq, pp[2];
static _Atomic int go, drawn;

struct worker {
	int		fd;		/* the socket it counts */
	int64_t		want;		/* its queue's payload */
	long		counts, bad;
	int64_t		last_bad;
	int		kq_errors;
};

static int64_t
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void
die(const char *what)
{
	fprintf(stderr, "token-wrap: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* A bound loopback UDP socket moved to number min (min % 64 kept). */
static int
udp_at(struct sockaddr_in *a, int min)
{
	socklen_t len = sizeof(*a);
	int big = 1 << 20, s, r;

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		die("socket");
	(void)setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (bind(s, (struct sockaddr *)a, sizeof(*a)) != 0 ||
	    getsockname(s, (struct sockaddr *)a, &len) != 0)
		die("bind");
	for (;; min += 64) {
		if ((r = fcntl(s, F_DUPFD_CLOEXEC, min)) < 0)
			die("F_DUPFD");
		if (r == min)
			break;
		close(r);
	}
	close(s);
	return r;
}

static void *
work(void *arg)
{
	struct worker *w = arg;
	struct kevent kev, ev;
	struct timespec zero = { 0, 0 };
	int kq = kqueue();		/* the thread's first lock: its token */
	int64_t end, d;

	atomic_fetch_add(&drawn, 1);
	if (kq < 0)
		die("kqueue");
	EV_SET(&kev, (uintptr_t)w->fd, EVFILT_READ, EV_ADD, 0, 0, NULL);
	if (kevent(kq, &kev, 1, NULL, 0, NULL) != 0)
		die("kevent EV_ADD");
	while (!atomic_load(&go))
		;
	end = now_ns() + RUN_NS;
	while (now_ns() < end) {
		d = kevent(kq, NULL, 0, &ev, 1, &zero) == 1 ? ev.data : -1;
		w->counts++;
		if (d != w->want) {
			w->bad++;
			w->last_bad = d;
		}
		/* The shared kqueue's lock, taken and released by both. */
		EV_SET(&kev, (uintptr_t)pp[0], EVFILT_READ, EV_ADD, 0, 0,
		    NULL);
		if (kevent(shared_kq, &kev, 1, &ev, 1, &zero) < 0)
			w->kq_errors++;
		EV_SET(&kev, (uintptr_t)pp[0], EVFILT_READ, EV_DELETE, 0, 0,
		    NULL);
		if (kevent(shared_kq, &kev, 1, NULL, 0, NULL) < 0 &&
		    errno != ENOENT)
			w->kq_errors++;
	}
	close(kq);
	return NULL;
}

static void
on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "token-wrap: watchdog: a thread hung\n";
	(void)write(2, m, sizeof(m) - 1);
	_exit(3);
}

/* Tokens drawn dist apart: 1 if both threads owned their locks apart. */
static int
run_case(const char *name, uint64_t first, uint64_t dist)
{
	struct worker x = { .fd = deep, .want = DEEP_N * SMALL };
	struct worker y = { .fd = other, .want = OTHER_TOTAL };
	pthread_t tx, ty;
	int ok;

	atomic_store(&go, 0);
	atomic_store(&drawn, 0);
	kq_olock_token_next(first);
	if (pthread_create(&tx, NULL, work, &x) != 0)
		die("pthread_create");
	while (atomic_load(&drawn) < 1)
		;
	kq_olock_token_next(first + dist);
	if (pthread_create(&ty, NULL, work, &y) != 0)
		die("pthread_create");
	while (atomic_load(&drawn) < 2)
		;
	alarm(20);
	atomic_store(&go, 1);
	pthread_join(tx, NULL);
	pthread_join(ty, NULL);
	alarm(0);
	ok = x.bad == 0 && y.bad == 0 && x.kq_errors == 0 &&
	    y.kq_errors == 0 && x.counts > 0 && y.counts > 0;
	printf("%s %s: X %ld counts, %ld wrong (last %lld, not %lld); "
	    "Y %ld counts, %ld wrong (last %lld, not %lld); "
	    "kevent errors %d, %d\n", ok ? "ok  " : "FAIL", name,
	    x.counts, x.bad, (long long)x.last_bad, (long long)x.want,
	    y.counts, y.bad, (long long)y.last_bad, (long long)y.want,
	    x.kq_errors, y.kq_errors);
	return ok;
}

int
main(void)
{
	static const struct {
		const char	*name;
		uint64_t	 first, dist;
	} cases[] = {
		{ "tokens_2^31_apart_across_the_31-bit_end",
		  (UINT64_C(1) << 31) - 1, UINT64_C(1) << 31 },
		{ "tokens_2^32_apart_across_the_32-bit_end",
		  (UINT64_C(1) << 32) - 1, UINT64_C(1) << 32 },
		{ "tokens_2^31_apart_far_out",
		  (UINT64_C(1) << 40) + 12345, UINT64_C(1) << 31 },
	};
	struct sockaddr_in a, b;
	char msg[300];
	int s, i, pass = 0, fail = 0;

	signal(SIGALRM, on_alarm);
	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0 ||
	    pipe(pp) != 0 || (shared_kq = kqueue()) < 0)
		die("setup");
	deep = udp_at(&a, 256);
	other = udp_at(&b, deep + 64);
	memset(msg, 'x', sizeof(msg));
	for (i = 0; i < DEEP_N; i++)
		if (sendto(s, msg, SMALL, 0, (struct sockaddr *)&a,
		    sizeof(a)) != SMALL)
			die("sendto");
	for (i = 1; i <= 3; i++)
		if (sendto(s, msg, (size_t)(100 * i), 0,
		    (struct sockaddr *)&b, sizeof(b)) != 100 * i)
			die("sendto");
	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		if (run_case(cases[i].name, cases[i].first, cases[i].dist))
			pass++;
		else
			fail++;
	}
	printf("token-wrap: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}
