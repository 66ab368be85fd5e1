/*
 * bench-prefork.c -- a prefork accept server (seed 002, EV_WAKEONE).
 *
 * One listening TCP socket on 127.0.0.1 (non-blocking), N worker processes
 * forked after it is opened, each with its own kqueue (or epoll set) in
 * which the listening socket is registered for reading:
 *
 *   kq                    EV_ADD                  (every idle worker wakes)
 *   kq EV_WAKEONE         EV_ADD | EV_WAKEONE     (one worker per event)
 *   epoll                 EPOLLIN
 *   epoll EPOLLEXCLUSIVE  EPOLLIN | EPOLLEXCLUSIVE
 *
 * A worker that wakes with the listening socket readable calls accept()
 * once; EAGAIN there means another worker took the connection first -- a
 * wasted wake-up.  An accepted connection is served at once if its request
 * has arrived, else registered one-shot and served when it is readable:
 * read the request, answer a minimal HTTP/1.0 200 response, close.
 *
 * Load comes from ApacheBench (`ab`, a bounded number of requests at a
 * fixed concurrency).  In --tiny mode, or when ab is missing, a small
 * client of our own does the same with threads and blocking sockets.
 * Reported: requests per second, context switches of the workers
 * (getrusage ru_nvcsw + ru_nivcsw, summed over the workers, per request)
 * and wasted wake-ups per accepted connection.  kq is compared with the
 * same server written on raw epoll (kq with epoll, kq EV_WAKEONE with
 * epoll EPOLLEXCLUSIVE) in the same repetition.
 */
#include "bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/event.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define PF_MAXW		8
#define PF_NEV		16
#define PF_QUIT		((void *)(intptr_t)-1)
#define PF_LISTEN	((void *)(intptr_t)-2)

enum { PF_KQ, PF_KQ1, PF_EP, PF_EP1, PF_NV };

static const char *const pf_names[PF_NV] = {
	"kq", "kq EV_WAKEONE", "epoll", "epoll EPOLLEXCLUSIVE",
};

/* The epoll variant each kq variant is compared with. */
static const int pf_ref[PF_NV] = { PF_EP, PF_EP1, PF_EP, PF_EP1 };

static const char pf_resp[] = "HTTP/1.0 200 OK\r\nContent-Type: text/plain"
    "\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n";

/* One worker's counters, in memory shared with the parent. */
struct pf_stat {
	atomic_int ready;
	long	 wakeups;	/* waits that returned the listening socket */
	long	 accepts;
	long	 wasted;	/* accept() -> EAGAIN after such a wake-up */
	long	 served;
	long	 errors;
	long	 csw;		/* context switches while serving */
	int	 setup_err;
};

/* ---- the worker ------------------------------------------------------------ */

/* Read the request and answer; returns 1 when done, 0 if not readable yet. */
static int
pf_serve(int c, struct pf_stat *st)
{
	char buf[4096];
	ssize_t r = read(c, buf, sizeof(buf));

	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (r > 0) {
		if (write(c, pf_resp, sizeof(pf_resp) - 1) ==
		    (ssize_t)sizeof(pf_resp) - 1)
			st->served++;
		else
			st->errors++;
	} else if (r < 0) {
		st->errors++;
	}
	close(c);
	return 1;
}

static int
pf_watch(int v, int q, int c)
{
	if (v == PF_KQ || v == PF_KQ1) {
		struct kevent ch;

		EV_SET(&ch, c, EVFILT_READ, EV_ADD | EV_ONESHOT, 0, 0,
		    (void *)(intptr_t)c);
		return kevent(q, &ch, 1, NULL, 0, NULL);
	} else {
		struct epoll_event ee = { .events = EPOLLIN | EPOLLONESHOT };

		ee.data.u64 = (uint64_t)c;
		return epoll_ctl(q, EPOLL_CTL_ADD, c, &ee);
	}
}

/* The listening socket is readable: accept one connection. */
static void
pf_accept(int v, int q, int lfd, struct pf_stat *st)
{
	int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (c < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			st->wasted++;
		else
			st->errors++;
		return;
	}
	st->accepts++;
	if (!pf_serve(c, st) && pf_watch(v, q, c) < 0) {
		st->errors++;
		close(c);
	}
}

static void
pf_worker(int v, int lfd, int quitfd, struct pf_stat *st)
{
	struct rusage ru0, ru1;
	int q, done = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(600);
	if (v == PF_KQ || v == PF_KQ1) {
		struct kevent ch[2];

		EV_SET(&ch[0], lfd, EVFILT_READ, EV_ADD | (v == PF_KQ1 ?
		    EV_WAKEONE : 0), 0, 0, PF_LISTEN);
		EV_SET(&ch[1], quitfd, EVFILT_READ, EV_ADD, 0, 0, PF_QUIT);
		if ((q = kqueue()) < 0 || kevent(q, ch, 2, NULL, 0, NULL) < 0) {
			st->setup_err = errno;
			_exit(1);
		}
	} else {
		struct epoll_event ee = { .events = EPOLLIN };

		if ((q = epoll_create1(EPOLL_CLOEXEC)) < 0) {
			st->setup_err = errno;
			_exit(1);
		}
		ee.events = EPOLLIN | (v == PF_EP1 ? EPOLLEXCLUSIVE : 0);
		ee.data.u64 = (uint64_t)(int64_t)(intptr_t)PF_LISTEN;
		if (epoll_ctl(q, EPOLL_CTL_ADD, lfd, &ee) < 0) {
			st->setup_err = errno;
			_exit(1);
		}
		ee.events = EPOLLIN;
		ee.data.u64 = (uint64_t)(int64_t)(intptr_t)PF_QUIT;
		if (epoll_ctl(q, EPOLL_CTL_ADD, quitfd, &ee) < 0) {
			st->setup_err = errno;
			_exit(1);
		}
	}
	getrusage(RUSAGE_SELF, &ru0);
	atomic_store(&st->ready, 1);
	while (!done) {
		void *ids[PF_NEV];
		int m, listen = 0;

		if (v == PF_KQ || v == PF_KQ1) {
			struct kevent ev[PF_NEV];

			m = kevent(q, NULL, 0, ev, PF_NEV, NULL);
			for (int j = 0; j < m; j++)
				ids[j] = ev[j].udata;
		} else {
			struct epoll_event ev[PF_NEV];

			m = epoll_wait(q, ev, PF_NEV, -1);
			for (int j = 0; j < m; j++)
				ids[j] = (void *)(intptr_t)(int64_t)ev[j].data.u64;
		}
		if (m < 0) {
			if (errno == EINTR)
				continue;
			st->errors++;
			break;
		}
		for (int j = 0; j < m; j++) {
			if (ids[j] == PF_QUIT)
				done = 1;
			else if (ids[j] == PF_LISTEN)
				listen = 1;
			else if (!pf_serve((int)(intptr_t)ids[j], st) &&
			    pf_watch(v, q, (int)(intptr_t)ids[j]) < 0)
				st->errors++;
		}
		if (listen && !done) {
			st->wakeups++;
			pf_accept(v, q, lfd, st);
		}
	}
	getrusage(RUSAGE_SELF, &ru1);
	st->csw = (ru1.ru_nvcsw - ru0.ru_nvcsw) + (ru1.ru_nivcsw -
	    ru0.ru_nivcsw);
	_exit(0);
}

/* ---- load -------------------------------------------------------------------- */

struct pf_client {
	int	 port;
	long	 todo;		/* requests for this thread */
	long	 ok, failed;
	pthread_t tid;
};

static void *
pf_client_thread(void *arg)
{
	static const char req[] = "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	struct pf_client *cl = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET };

	sa.sin_port = htons((uint16_t)cl->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (long i = 0; i < cl->todo; i++) {
		char buf[512];
		size_t got = 0;
		ssize_t r;
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct timeval tv = { 5, 0 };

		if (s < 0) {
			cl->failed++;
			continue;
		}
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    write(s, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
			cl->failed++;
			close(s);
			continue;
		}
		while (got < sizeof(buf) - 1 &&
		    (r = read(s, buf + got, sizeof(buf) - 1 - got)) > 0)
			got += (size_t)r;
		buf[got] = '\0';
		if (strncmp(buf, "HTTP/1.0 200", 12) == 0)
			cl->ok++;
		else
			cl->failed++;
		close(s);
	}
	return NULL;
}

/* Our own client: `conc` threads, `total` requests; returns requests/s. */
static double
pf_own_load(int port, long total, int conc, long *ok, long *failed)
{
	struct pf_client cl[16];
	uint64_t t0;

	if (conc > 16)
		conc = 16;
	*ok = *failed = 0;
	t0 = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < conc; i++) {
		memset(&cl[i], 0, sizeof(cl[i]));
		cl[i].port = port;
		cl[i].todo = total / conc + (i < total % conc);
		if (pthread_create(&cl[i].tid, NULL, pf_client_thread,
		    &cl[i]) != 0)
			cl[i].tid = 0;
	}
	for (int i = 0; i < conc; i++) {
		if (cl[i].tid)
			pthread_join(cl[i].tid, NULL);
		else
			cl[i].failed = cl[i].todo;
		*ok += cl[i].ok;
		*failed += cl[i].failed;
	}
	t0 = clock_ns(CLOCK_MONOTONIC) - t0;
	return t0 ? (double)*ok * 1e9 / (double)t0 : 0.0;
}

static const char *
pf_find_ab(void)
{
	static const char *const dirs[] = { "/usr/bin", "/usr/sbin",
	    "/usr/local/bin", "/bin" };
	static char path[64];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/ab", dirs[i]);
		if (access(path, X_OK) == 0)
			return path;
	}
	return NULL;
}

/* Run ab; returns requests/s (ab's figure) or -1. */
static double
pf_ab_load(const char *ab, int port, long total, int conc, long *ok,
    long *failed)
{
	char nbuf[32], cbuf[32], url[64], out[8192];
	double rps = -1;
	size_t got = 0;
	int pfd[2], st;
	pid_t pid;
	ssize_t r;
	char *p;

	snprintf(nbuf, sizeof(nbuf), "%ld", total);
	snprintf(cbuf, sizeof(cbuf), "%d", conc);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	fflush(NULL);
	if ((pid = fork()) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		int dn = open("/dev/null", O_WRONLY);

		dup2(pfd[1], 1);
		if (dn >= 0)
			dup2(dn, 2);
		execl(ab, "ab", "-q", "-r", "-s", "10", "-n", nbuf, "-c", cbuf,
		    url, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	while (got < sizeof(out) - 1 &&
	    (r = read(pfd[0], out + got, sizeof(out) - 1 - got)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		got += (size_t)r;
	}
	out[got] = '\0';
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*ok = *failed = 0;
	if ((p = strstr(out, "Complete requests:")))
		*ok = atol(p + 18);
	if ((p = strstr(out, "Failed requests:")))
		*failed = atol(p + 16);
	if ((p = strstr(out, "Non-2xx responses:")))
		*failed += atol(p + 18);
	*ok -= *failed;
	if ((p = strstr(out, "Requests per second:")))
		rps = atof(p + 20);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return rps;
}

/* ---- one run ------------------------------------------------------------------ */

struct pf_result {
	double	 rps;
	long	 ok, failed;
	long	 accepts, wasted, wakeups, errors, csw;
};

static int
pf_once(int v, int nw, const char *ab, long total, int conc,
    struct pf_result *pr, char *why, size_t whylen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct pf_stat *st;
	pid_t pids[PF_MAXW];
	int lfd, qp[2], one = 1, started = 0, rc = 0;
	uint64_t t0;

	memset(pr, 0, sizeof(*pr));
	st = mmap(NULL, sizeof(*st) * PF_MAXW, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		return -1;
	}
	memset(st, 0, sizeof(*st) * PF_MAXW);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof(one)) < 0 || bind(lfd, (struct sockaddr *)&sa,
	    sizeof(sa)) < 0 || listen(lfd, 1024) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0 ||
	    pipe2(qp, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(why, whylen, "listening socket: %s", strerror(errno));
		if (lfd >= 0)
			close(lfd);
		munmap(st, sizeof(*st) * PF_MAXW);
		return -1;
	}
	fflush(NULL);
	for (int i = 0; i < nw; i++) {
		if ((pids[i] = fork()) < 0) {
			snprintf(why, whylen, "fork: %s", strerror(errno));
			rc = -1;
			break;
		}
		if (pids[i] == 0)
			pf_worker(v, lfd, qp[0], &st[i]);
		started++;
	}
	/* Wait until every worker is blocked-ready (at most 5 s). */
	t0 = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < started && rc == 0; i++)
		while (!atomic_load(&st[i].ready)) {
			struct timespec ms = { 0, 1000000 };

			if (st[i].setup_err || clock_ns(CLOCK_MONOTONIC) - t0 >
			    5000000000u) {
				snprintf(why, whylen, "worker setup: %s",
				    st[i].setup_err ? strerror(st[i].setup_err)
				    : "timed out");
				rc = -1;
				break;
			}
			nanosleep(&ms, NULL);
		}
	if (rc == 0) {
		int port = ntohs(sa.sin_port);

		pr->rps = ab ? pf_ab_load(ab, port, total, conc, &pr->ok,
		    &pr->failed) : pf_own_load(port, total, conc, &pr->ok,
		    &pr->failed);
		if (pr->rps < 0) {
			snprintf(why, whylen, "ab failed");
			rc = -1;
		}
	}
	if (write(qp[1], "q", 1) != 1)
		rc = -1;
	t0 = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < started; i++) {
		int ws;

		while (waitpid(pids[i], &ws, WNOHANG) == 0) {
			struct timespec ms = { 0, 1000000 };

			if (clock_ns(CLOCK_MONOTONIC) - t0 > 5000000000u) {
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &ws, 0);
				snprintf(why, whylen, "a worker did not quit");
				rc = -1;
				break;
			}
			nanosleep(&ms, NULL);
		}
		pr->accepts += st[i].accepts;
		pr->wasted += st[i].wasted;
		pr->wakeups += st[i].wakeups;
		pr->errors += st[i].errors;
		pr->csw += st[i].csw;
	}
	close(lfd);
	close(qp[0]);
	close(qp[1]);
	munmap(st, sizeof(*st) * PF_MAXW);
	return rc;
}

/* ---- driver ----------------------------------------------------------------- */

static int
pf_run(const struct bench_opts *o, struct bench_result *res)
{
	static const int workers[] = { 2, 4, 8 };
	static double rps[PF_NV][MAXREPS], csw[PF_NV][MAXREPS];
	static double waste[PF_NV][MAXREPS], wake[PF_NV][MAXREPS];
	struct bench_table *t = bt_new(res, "prefork",
	    "prefork: N worker processes accept on one listening socket "
	    "(seed 002)");
	const char *ab = o->tiny ? NULL : pf_find_ab();
	long total = o->tiny ? 40 : o->quick ? 2000 : 10000;
	int conc = o->tiny ? 2 : o->quick ? 8 : 16, failed = 0;
	int nsizes = o->tiny ? 1 : 3;
	char errs[512] = "";

	bt_cols(t, "N|server|req/s|spread %|x epoll (req/s)|ctx sw/req|"
	    "x epoll (ctx sw)|wasted/conn|wake-ups/conn|failed req|errors");
	for (int si = 0; si < nsizes; si++) {
		int nw = workers[si], nrep[PF_NV] = { 0 };
		long bad[PF_NV] = { 0 }, errors[PF_NV] = { 0 };

		for (int rep = 0; rep < o->reps; rep++) {
			progress("[prefork] N=%d rep %d/%d\n", nw, rep + 1,
			    o->reps);
			for (int v = 0; v < PF_NV; v++) {
				struct pf_result pr;
				char why[160] = "";
				int k = nrep[v];

				if (pf_once(v, nw, ab, total, conc, &pr, why,
				    sizeof(why)) < 0) {
					progress("prefork: %s N=%d: %s\n",
					    pf_names[v], nw, why);
					if (strlen(errs) < 300)
						snprintf(errs + strlen(errs),
						    sizeof(errs) - strlen(errs),
						    "%s N=%d: %s. ", pf_names[v],
						    nw, why);
					failed = 1;
					continue;
				}
				bad[v] += pr.failed;
				errors[v] += pr.errors;
				rps[v][k] = pr.rps;
				csw[v][k] = pr.accepts ? (double)pr.csw /
				    (double)pr.accepts : 0.0;
				waste[v][k] = pr.accepts ? (double)pr.wasted /
				    (double)pr.accepts : 0.0;
				wake[v][k] = pr.accepts ? (double)pr.wakeups /
				    (double)pr.accepts : 0.0;
				nrep[v]++;
			}
		}
		for (int v = 0; v < PF_NV; v++) {
			struct bk_stats sr, sc, sx;
			int r = bt_row(t), ref = pf_ref[v];
			int paired = nrep[ref] == nrep[v];

			bt_set(t, r, 0, "%d", nw);
			bt_set(t, r, 1, "%s", pf_names[v]);
			if (!nrep[v]) {
				bt_set(t, r, 2, "failed");
				continue;
			}
			bk_summarize(rps[v], paired ? rps[ref] : NULL, nrep[v],
			    &sr);
			bk_summarize(csw[v], paired ? csw[ref] : NULL, nrep[v],
			    &sc);
			bt_num(t, r, 2, sr.med);
			bt_set(t, r, 3, "%.1f", sr.spread);
			bt_set(t, r, 4, "%.2f", sr.ratio);
			bt_num(t, r, 5, sc.med);
			bt_set(t, r, 6, "%.2f", sc.ratio);
			bk_summarize(waste[v], NULL, nrep[v], &sx);
			bt_num(t, r, 7, sx.med);
			bk_summarize(wake[v], NULL, nrep[v], &sx);
			bt_num(t, r, 8, sx.med);
			bt_set(t, r, 9, "%ld", bad[v]);
			bt_set(t, r, 10, "%ld", errors[v]);
		}
	}
	bt_note(t, "Load: %s, %ld requests per run at concurrency %d, on "
	    "127.0.0.1; each worker answers a minimal HTTP/1.0 200 and "
	    "closes. `x epoll` compares kq with epoll and kq EV_WAKEONE with "
	    "epoll EPOLLEXCLUSIVE, run in the same repetition. req/s: higher "
	    "is better. `ctx sw/req` = voluntary + involuntary context "
	    "switches of all workers (getrusage) per accepted connection; "
	    "`wasted/conn` = wake-ups whose accept() found no connection "
	    "(EAGAIN: another worker took it), per connection; "
	    "`wake-ups/conn` = waits that returned the listening socket, per "
	    "connection. Lower is better for these. `failed req` = requests "
	    "the client counted as failed, `errors` = server-side errors. "
	    "Woken workers re-check readiness inside epoll_wait() before "
	    "returning, so on Linux a herd shows mostly in `ctx sw/req`, "
	    "less in wasted accepts. The machine has %ld CPUs.\n", ab ? "ApacheBench (ab -r -s 10)" : "kqbench's own "
	    "client (threads, blocking sockets)", total, conc,
	    sysconf(_SC_NPROCESSORS_ONLN));
	if (!ab && !o->tiny)
		bt_note(t, "\nab was not found (tools/deps.sh installs "
		    "apache2-utils); kqbench's own client was used.\n");
	if (errs[0])
		bt_note(t, "\nErrors: %s\n", errs);
	return failed ? -1 : 0;
}

const struct bench_scenario bench_prefork = {
	.name = "prefork",
	.title = "prefork accept server, N workers, with/without EV_WAKEONE",
	.run = pf_run,
};
