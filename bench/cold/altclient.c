/*
 * altclient.c -- the pinned A/B's client (bench/cold/ab.sh, lines.sh).
 *
 *   altclient ROUNDS GAP_US PORT PID [PORT PID ...]
 *
 * Each round sends one HTTP/1.0 request to each server in turn (a new
 * connection each, read until the server closes; ALT_KEEPALIVE=1: HTTP/1.1
 * and the client closes, see request()), sleeping GAP_US before
 * each, so every request wakes a server that slept.  The order rotates
 * every round, so no server always follows the same one.  At the end, per
 * server: the median, 10th and 90th percentile reply time, and the
 * server's CPU time per request from /proc/PID/schedstat (every thread).
 * ALT_IDLE=N in the environment first opens N connections to each server
 * and holds them, idle, for the whole run (the paper's idle connections;
 * the servers' idle timeouts must be longer than the run).
 * Exits non-zero if a request fails.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXSRV	8

static double
now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* The process's CPU time in ns (the first field of schedstat). */
static long long
cpu_ns(int pid)
{
	char path[64];
	long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
	if ((f = fopen(path, "r")) != NULL) {
		if (fscanf(f, "%lld", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Has buf[0..n) a whole HTTP reply (headers and Content-Length bytes)? */
static int
reply_whole(const char *buf, size_t n)
{
	const char *end = memmem(buf, n, "\r\n\r\n", 4), *cl;

	if (end == NULL)
		return 0;
	cl = memmem(buf, (size_t)(end - buf), "Content-Length:", 15);
	return cl != NULL && (size_t)(end + 4 - buf) +
	    strtoul(cl + 15, NULL, 10) <= n;
}

/*
 * One request to 127.0.0.1:port; its reply time in us, or -1.  HTTP/1.0,
 * read until the server closes; with ALT_KEEPALIVE=1 in the environment,
 * HTTP/1.1 as httperf sends it, and the client closes once the reply is
 * whole (httperf --num-calls 1: the server keeps the connection and waits
 * for the client's close).
 */
static double
request(int port)
{
	static const char req0[] = "GET /index.html HTTP/1.0\r\n\r\n";
	static const char req1[] = "GET /index.html HTTP/1.1\r\n"
	    "Host: 127.0.0.1\r\n\r\n";
	static int ka = -1;
	struct sockaddr_in a = { .sin_family = AF_INET };
	char buf[8192];
	const char *req;
	size_t got = 0, len;
	double t0 = now_us();
	ssize_t r;
	int fd;

	if (ka < 0)
		ka = getenv("ALT_KEEPALIVE") != NULL &&
		    strcmp(getenv("ALT_KEEPALIVE"), "1") == 0;
	req = ka ? req1 : req0;
	len = ka ? sizeof(req1) - 1 : sizeof(req0) - 1;

	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    write(fd, req, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	while ((r = read(fd, buf + got, sizeof(buf) - got)) > 0) {
		got += (size_t)r;
		if (ka && reply_whole(buf, got))
			break;
		if (got == sizeof(buf))
			got = 0;	/* HTTP/1.0: only the end matters */
	}
	close(fd);
	return r < 0 || (ka && r == 0) ? -1 : now_us() - t0;
}

/* Open n idle connections to 127.0.0.1:port, kept open.  0 or -1. */
static int
hold_idle(int port, int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int i, fd;

	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < n; i++) {
		if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
		    connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
			perror("altclient: idle connection");
			return -1;
		}
		if (i % 256 == 255)
			usleep(10000);	/* within the listen backlog */
	}
	return 0;
}

int
main(int argc, char **argv)
{
	int rounds, gap, ns, port[MAXSRV], pid[MAXSRV], i, k;
	long long c0[MAXSRV];
	double *lat[MAXSRV];

	if (argc < 5 || (argc - 3) % 2 != 0 || (argc - 3) / 2 > MAXSRV) {
		fprintf(stderr, "usage: altclient ROUNDS GAP_US PORT PID "
		    "[PORT PID ...]\n");
		return 2;
	}
	rounds = atoi(argv[1]);
	gap = atoi(argv[2]);
	ns = (argc - 3) / 2;
	if (rounds < 1)
		return 2;
	for (k = 0; k < ns; k++) {
		port[k] = atoi(argv[3 + 2 * k]);
		pid[k] = atoi(argv[4 + 2 * k]);
		if ((lat[k] = malloc(sizeof(double) * (size_t)rounds)) == NULL)
			return 1;
	}
	if (getenv("ALT_IDLE") != NULL && atoi(getenv("ALT_IDLE")) > 0) {
		for (k = 0; k < ns; k++)
			if (hold_idle(port[k], atoi(getenv("ALT_IDLE"))) != 0)
				return 1;
		sleep(1);	/* the servers accept and register them */
	}
	for (k = 0; k < ns; k++)
		c0[k] = cpu_ns(pid[k]);
	for (i = 0; i < rounds; i++)
		for (k = 0; k < ns; k++) {
			int s = (i + k) % ns;

			usleep((useconds_t)gap);
			if ((lat[s][i] = request(port[s])) < 0) {
				fprintf(stderr, "altclient: request to port "
				    "%d failed\n", port[s]);
				return 1;
			}
		}
	for (k = 0; k < ns; k++) {
		long long c1 = cpu_ns(pid[k]);

		qsort(lat[k], (size_t)rounds, sizeof(double), cmp_double);
		printf("port %d: median %.1f us p10 %.1f p90 %.1f cpu/req "
		    "%.2f us\n", port[k], lat[k][rounds / 2],
		    lat[k][rounds / 10], lat[k][rounds * 9 / 10],
		    (double)(c1 - c0[k]) / 1e3 / rounds);
	}
	return 0;
}
