/*
 * bench-wake.c -- the cost of one cold wake-up.
 *
 * In the web-server experiment (bench-httpd.c) at 500 requests/s every
 * request wakes an idle server, and what a wait costs then is not what it
 * costs in a loop: the caches and TLB of the server's CPU went cold while
 * it slept.  Here one server thread, pinned to the last CPU, waits on one
 * source; the client (the main thread, pinned to CPU 0) makes it ready
 * every 2 ms; the server takes the event (accept() and close(), or read())
 * and waits again.  The figure is the server thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID) per wake-up, for:
 *   epoll       epoll_wait() alone;
 *   epoll+data  epoll_wait() and the one system call FreeBSD's `data`
 *               costs on Linux (TCP_INFO for the listener's queue,
 *               FIONREAD for the pipe's bytes): the floor for kq;
 *   kq          kevent() over kq.
 * Sources: a listening TCP socket on the loopback (a connection per
 * wake-up, as the web server's) and a pipe (a byte per wake-up).  The
 * backends run in turn within each repetition, in rotated order; ratios
 * are medians of the per-repetition ratios to epoll.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/event.h>
#include <sys/ioctl.h>

#include "bench.h"

#define WK_GAP_US	2000	/* between two wake-ups: the paper's 500/s */
#define WK_NB		3	/* backends */

enum { WK_EPOLL, WK_EPOLL_DATA, WK_KQ };
static const char *const wk_bk_name[WK_NB] = { "epoll", "epoll+data",
	"kq" };
enum { WK_LISTEN, WK_PIPE, WK_NSRC };
static const char *const wk_src_name[WK_NSRC] = { "TCP listener", "pipe" };

struct wk_run {
	int		 bk, src, n;
	int		 ls;		/* the listener (WK_LISTEN) */
	int		 p[2];		/* the pipe (WK_PIPE) */
	int		 cpu_srv, cpu_cli;
	atomic_int	 ready;		/* the server waits: start */
	atomic_int	 got;		/* items taken by the server */
	atomic_int	 stop;
	long		 wakes;		/* waits that returned events */
	uint64_t	 cpu_ns;	/* server thread CPU over the run */
	int		 err;
};

static void
wk_pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Take what the source has: every waiting connection, or every byte. */
static int
wk_take(struct wk_run *w)
{
	int k = 0, s;
	char buf[64];
	ssize_t r;

	if (w->src == WK_LISTEN) {
		while ((s = accept4(w->ls, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
			close(s);
			k++;
		}
	} else
		while ((r = read(w->p[0], buf, sizeof(buf))) > 0)
			k += (int)r;
	return k;
}

/* The server: wait, take, until n items came (or told to stop). */
static void *
wk_server(void *arg)
{
	struct wk_run *w = arg;
	int fd = w->src == WK_LISTEN ? w->ls : w->p[0], q, r;
	struct epoll_event ee[8];
	struct kevent kev[8];
	struct timespec ts = { 0, 100000000 };
	uint64_t t0;

	wk_pin(w->cpu_srv);
	if (w->bk == WK_KQ) {
		struct kevent ch;

		q = kqueue();
		EV_SET(&ch, fd, EVFILT_READ, EV_ADD, 0, 0, NULL);
		if (q < 0 || kevent(q, &ch, 1, NULL, 0, NULL) != 0)
			goto fail;
	} else {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

		q = epoll_create1(EPOLL_CLOEXEC);
		if (q < 0 || epoll_ctl(q, EPOLL_CTL_ADD, fd, &ev) != 0)
			goto fail;
	}
	atomic_store(&w->ready, 1);
	t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	while (atomic_load(&w->got) < w->n && !atomic_load(&w->stop)) {
		if (w->bk == WK_KQ)
			r = kevent(q, NULL, 0, kev, 8, &ts);
		else
			r = epoll_wait(q, ee, 8, 100);
		if (r < 0 && errno != EINTR)
			goto fail;
		if (r <= 0)
			continue;
		if (w->bk == WK_EPOLL_DATA) {
			/* What FreeBSD's `data` costs on Linux. */
			if (w->src == WK_LISTEN) {
				struct tcp_info ti;
				socklen_t len = sizeof(ti);

				(void)getsockopt(fd, IPPROTO_TCP, TCP_INFO,
				    &ti, &len);
			} else {
				int nb;

				(void)ioctl(fd, FIONREAD, &nb);
			}
		}
		w->wakes++;
		atomic_fetch_add(&w->got, wk_take(w));
	}
	w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	close(q);
	return NULL;
fail:
	w->err = errno ? errno : EIO;
	if (q >= 0)
		close(q);
	atomic_store(&w->ready, 1);
	atomic_store(&w->stop, 1);
	return NULL;
}

/* One run: n wake-ups of backend bk on source src.  0, or -1 (errno). */
static int
wk_once(struct wk_run *w)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	struct timespec gap = { 0, WK_GAP_US * 1000L };
	pthread_t thr;
	uint64_t deadline;
	int rc = 0;

	w->ls = w->p[0] = w->p[1] = -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (w->src == WK_LISTEN) {
		if ((w->ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0)) < 0 ||
		    bind(w->ls, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
		    listen(w->ls, 128) != 0 ||
		    getsockname(w->ls, (struct sockaddr *)&sin, &len) != 0)
			goto fail;
	} else if (pipe2(w->p, O_NONBLOCK | O_CLOEXEC) != 0)
		goto fail;
	if ((errno = pthread_create(&thr, NULL, wk_server, w)) != 0)
		goto fail;
	while (!atomic_load(&w->ready))
		nanosleep(&gap, NULL);
	deadline = clock_ns(CLOCK_MONOTONIC) + (uint64_t)w->n *
	    WK_GAP_US * 1000 * 4 + 2000000000u;
	for (int i = 0; i < w->n && !atomic_load(&w->stop); i++) {
		nanosleep(&gap, NULL);
		if (w->src == WK_LISTEN) {
			int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

			if (c < 0 || connect(c, (struct sockaddr *)&sin,
			    sizeof(sin)) != 0) {
				w->err = errno;
				if (c >= 0)
					close(c);
				break;
			}
			close(c);
		} else if (write(w->p[1], "w", 1) != 1) {
			w->err = errno;
			break;
		}
	}
	/* Every item taken, or the deadline: the server stops either way. */
	while (atomic_load(&w->got) < w->n && !w->err &&
	    clock_ns(CLOCK_MONOTONIC) < deadline)
		nanosleep(&gap, NULL);
	if (atomic_load(&w->got) < w->n && !w->err)
		w->err = ETIMEDOUT;
	atomic_store(&w->stop, 1);
	pthread_join(thr, NULL);
	if (w->err) {
		errno = w->err;
		rc = -1;
	}
	if (w->ls >= 0)
		close(w->ls);
	if (w->p[0] >= 0) {
		close(w->p[0]);
		close(w->p[1]);
	}
	return rc;
fail:
	w->err = errno;
	if (w->ls >= 0)
		close(w->ls);
	return -1;
}

static int
wk_run(const struct bench_opts *o, struct bench_result *res)
{
	static double cpu[WK_NSRC][WK_NB][MAXREPS];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int n = o->tiny ? 50 : o->quick ? 500 : 2000, reps, failed = 0;
	int cpu_srv = ncpu >= 2 ? (int)ncpu - 1 : -1;
	int cpu_cli = ncpu >= 2 ? 0 : -1;
	struct bench_table *t = bt_new(res, "wake", "cold wake-up: server "
	    "thread CPU per wake-up, one event every 2 ms");

	reps = o->reps < MAXREPS ? o->reps : MAXREPS;
	bt_cols(t, "source|backend|CPU ns/wake|spread %|x epoll|"
	    "x epoll+data|wakes/run");
	for (int src = 0; src < WK_NSRC; src++) {
		long wakes[WK_NB] = { 0 };
		int nrep = 0;

		for (int rep = 0; rep < reps; rep++) {
			progress("[wake] %s rep %d/%d\n", wk_src_name[src],
			    rep + 1, reps);
			for (int k = 0; k < WK_NB; k++) {
				static struct wk_run w;
				int bk = (k + rep) % WK_NB;

				memset(&w, 0, sizeof(w));
				w.bk = bk;
				w.src = src;
				w.n = n;
				w.cpu_srv = cpu_srv;
				w.cpu_cli = cpu_cli;
				wk_pin(cpu_cli);
				if (wk_once(&w) < 0) {
					progress("wake: %s, %s: %s\n",
					    wk_src_name[src], wk_bk_name[bk],
					    strerror(errno));
					failed = 1;
					goto next;
				}
				cpu[src][bk][nrep] = w.wakes ?
				    (double)w.cpu_ns / (double)w.wakes : 0;
				wakes[bk] = w.wakes;
			}
			nrep++;
		}
next:
		for (int bk = 0; nrep > 0 && bk < WK_NB; bk++) {
			struct bk_stats s, sd;
			int r = bt_row(t);

			bk_summarize(cpu[src][bk], cpu[src][WK_EPOLL], nrep,
			    &s);
			bk_summarize(cpu[src][bk], cpu[src][WK_EPOLL_DATA],
			    nrep, &sd);
			bt_set(t, r, 0, "%s", wk_src_name[src]);
			bt_set(t, r, 1, "%s", wk_bk_name[bk]);
			bt_num(t, r, 2, s.med);
			bt_set(t, r, 3, "%.1f", s.spread);
			bt_set(t, r, 4, "%.3f", s.ratio);
			bt_set(t, r, 5, "%.3f", sd.ratio);
			bt_set(t, r, 6, "%ld", wakes[bk]);
		}
	}
	bt_note(t, "One server thread %s waits on the source; the client "
	    "thread%s makes it ready every %d us (a connection to the "
	    "listener, a byte into the pipe), %d times per run, %d runs "
	    "per backend in rotated order.  CPU: the server thread's "
	    "CLOCK_THREAD_CPUTIME_ID per wait that returned events, taking "
	    "them included (accept and close, or read).  `epoll+data`: "
	    "epoll_wait and the one call FreeBSD's `data` costs on Linux "
	    "(TCP_INFO, FIONREAD).  Ratios: medians of the per-repetition "
	    "ratios.  kq is linked statically here; a program using "
	    "libkq.so also pays for the library's own pages.\n",
	    cpu_srv >= 0 ? "pinned to the last CPU" : "(one CPU: not pinned)",
	    cpu_cli >= 0 ? " (pinned to CPU 0)" : "", WK_GAP_US, n, reps);
	return failed ? -1 : 0;
}

const struct bench_scenario bench_wake = {
	.name = "wake",
	.title = "cold wake-up: server thread CPU per event every 2 ms",
	.run = wk_run,
};
