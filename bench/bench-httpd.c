/*
 * bench-httpd.c -- the kqueue paper's web-server experiment (seed 000
 * §7.2): a real server under a constant request rate while the number of
 * idle connections it holds grows.
 *
 * The server is lighttpd 1.4.69 from Debian's source, built against kq by
 * bench/httpd-setup.sh (run from the prepare hook when it is missing).  One
 * binary carries the three event handlers compared: "poll", "linux-sysepoll"
 * and "kqueue" (lighttpd's kqueue code over kq); the configuration differs
 * only in server.event-handler.  It runs with LD_LIBRARY_PATH naming the
 * libkq.so built beside this kqbench, so the library measured is this one.
 *
 * For every N (ascending) the three servers, all started at once on their
 * own loopback ports, are brought to N idle connections: one holder child
 * per server opens them (connect, then nothing: no request is ever sent)
 * and keeps them for the rest of the run.  Then for every rate, after one
 * unrecorded dry run per server (as the paper did), each repetition runs
 * httperf once against each server alone, and once against the kqueue and
 * the linux-sysepoll server together (the pair: one httperf each, started
 * at once, the first-started one alternating), the four slots in rotated
 * order: one request per connection at a constant rate for a fixed time.
 * The runs alone give the table of the paper's figures; the pair gives the
 * kqueue / linux-sysepoll ratios, because the two servers of a pair share
 * the host's state at every moment (both on the servers' CPU), where two
 * runs alone a few seconds apart differ by up to 10 % at 500/s from the
 * host's drift alone.  Recorded per run:
 * httperf's reply time (response + transfer, ms, its only resolution is
 * 0.1 ms), its connection-time stddev (the spread), reply rate and errors;
 * the server's CPU time (schedstat of every task in /proc/PID/task, ns on CPU) per reply
 * and share of the wall time; and the reply times of a low-rate probe this
 * process sends beside httperf (fresh connection, same request, µs
 * resolution), which is what resolves a 10 % difference at 0.1 ms.  A last
 * run per server under `strace -c` counts system calls and ioctls per
 * request (not timed: strace slows the server).  After every N the
 * holders check that no idle connection was closed or written to.
 *
 * Bounds: at most N_max idle connections, where N_max leaves headroom below
 * lighttpd's connection limit (server.max-fds / 2, max-fds = the descriptor
 * hard limit, at most 65535) and the holder's own limit; every child gets
 * PR_SET_PDEATHSIG and a deadline, so nothing outlives the scenario.
 */
#include "bench.h"

#include <dirent.h>
#include <limits.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define HT_NH		3		/* handlers */
#define HT_MAXN		16		/* sizes */
#define HT_MAXREPS	15		/* repetitions per cell, at most */
#define HT_MAXRATES	2
/*
 * Connections kept free for the load below lighttpd's limit.  At its limit
 * lighttpd stops accepting ("sockets disabled, connection limit reached")
 * until its once-a-second check: at 5000/s 64 spare connections were not
 * enough (20 000 to 59 000 errors in 75 000 requests on every handler).
 */
#define HT_HEADROOM	512
#define HT_BATCH	256		/* connects before waiting for accept */
#define HT_FILE		1024		/* bytes of the static file */
#define HT_PROBE_MS	50		/* one probe request every 50 ms */
#define HT_MAXPROBE	512		/* probes kept per run */
#define HT_POOL		2048		/* probes kept per cell */

static const char *const ht_handler[HT_NH] = {
	"poll", "linux-sysepoll", "kqueue"
};
enum { H_POLL, H_EPOLL, H_KQ };

/* One lighttpd and its holder of idle connections. */
struct ht_srv {
	const char *handler;
	pid_t	 pid;
	int	 port;
	int	 base_fds;	/* descriptors open with no connection */
	pid_t	 holder;
	int	 hsock;		/* SOCK_SEQPACKET to the holder */
	char	 kqlib[256];	/* the libkq file it mapped, or "" */
};

/* What one httperf run gave. */
struct ht_run {
	double	 reply_ms;	/* response + transfer, mean */
	double	 conn_sd_ms;	/* connection time stddev */
	double	 rate;		/* replies / test-duration */
	long	 replies, requests, errors;
	long	 limit_hits;	/* lighttpd's "connection limit reached" notes */
	double	 cpu_us_req;	/* server CPU per reply */
	double	 cpu_pct;	/* server CPU / wall */
	double	 probe_med_us;	/* median of this run's probes */
	int	 nprobe, probe_err;
};

/* Holder protocol: command in, reply out, one packet each. */
struct ht_cmd {
	int	 op;		/* HC_GROW to n, HC_CHECK */
	int	 n;
};
struct ht_reply {
	int	 ok;
	int	 held;
	int	 alive;		/* HC_CHECK: connections neither readable nor closed */
	char	 err[160];
};
enum { HC_GROW = 1, HC_CHECK = 2 };

/* Everything the run needs, set up once. */
struct ht_ctx {
	const struct bench_opts *o;
	char	 dir[4096];	/* <outdir>/httpd */
	char	 lighttpd[4096];
	char	 ldpath[4096];	/* "" when the system libkq is used */
	int	 maxfds, nmax;
	double	 secs;		/* one measured run */
	int	 reps;
	int	 srvcpu;	/* the servers' CPU, -1: not placed */
	cpu_set_t oldset;	/* kqbench's affinity before the scenario */
	struct ht_srv srv[HT_NH];
};

/* ---- paths and children ---------------------------------------------------- */

/* snprintf for paths: -1 (and an empty string) when it does not fit. */
static int __attribute__((format(printf, 3, 4)))
ht_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

/* The source tree: the directory above the one holding this kqbench. */
static void
ht_top(const struct bench_opts *o, char *top, size_t len)
{
	char *slash;

	snprintf(top, len, "%s", o->self);
	for (int i = 0; i < 2 && (slash = strrchr(top, '/')); i++)
		*slash = '\0';
	if (!top[0])
		snprintf(top, len, ".");
}

static void
ht_lighttpd_path(const struct bench_opts *o, char *path, size_t len)
{
	const char *e = getenv("KQBENCH_LIGHTTPD"), *cd = getenv("KQ_CLIENT_DIR");
	char top[4096];

	if (e && *e) {
		snprintf(path, len, "%s", e);
		return;
	}
	ht_top(o, top, sizeof(top));
	if (cd && *cd)
		ht_fmt(path, len, "%s/lighttpd-1.4.69-kqueue/src/lighttpd", cd);
	else
		ht_fmt(path, len, "%s/build/clients/lighttpd-1.4.69-kqueue/src/"
		    "lighttpd", top);
}

static int
ht_have_httperf(void)
{
	return system("command -v httperf >/dev/null 2>&1") == 0;
}

/*
 * Fork a child that dies with this process, stdin from /dev/null, stdout
 * and stderr to `out`, and exec argv; on CPU `cpu` alone if cpu >= 0.
 * Returns the pid or -1.
 */
static pid_t
ht_spawn(char *const argv[], const char *out, const char *ldpath, int cpu)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	if ((pid = fork()) != 0)
		return pid;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(126);
	if (cpu >= 0) {
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one) < 0)
			_exit(126);
	}
	int in = open("/dev/null", O_RDONLY);
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (in < 0 || fd < 0 || dup2(in, 0) < 0 || dup2(fd, 1) < 0 ||
	    dup2(fd, 2) < 0)
		_exit(126);
	if (ldpath && *ldpath)
		setenv("LD_LIBRARY_PATH", ldpath, 1);
	execvp(argv[0], argv);
	_exit(127);
}

/*
 * Where the processes run.  The paper's server and clients were separate
 * machines; on one machine with two CPUs or more the servers get the last
 * CPU kqbench may use and everything else (kqbench and its probe, httperf,
 * the holders: kqbench's children inherit its affinity) the others.  So a
 * server never waits behind its own load generator, and no run depends on
 * where the scheduler happened to put the two.  Sets c->srvcpu (-1 on one
 * CPU: nothing is placed) and saves kqbench's affinity for ht_unplace.
 */
static void
ht_place(struct ht_ctx *c)
{
	cpu_set_t rest;
	int last = -1;

	c->srvcpu = -1;
	if (sched_getaffinity(0, sizeof(c->oldset), &c->oldset) < 0 ||
	    CPU_COUNT(&c->oldset) < 2)
		return;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &c->oldset))
			last = i;
	rest = c->oldset;
	CPU_CLR(last, &rest);
	if (sched_setaffinity(0, sizeof(rest), &rest) == 0)
		c->srvcpu = last;
}

static void
ht_unplace(struct ht_ctx *c)
{
	if (c->srvcpu >= 0)
		(void)sched_setaffinity(0, sizeof(c->oldset), &c->oldset);
}

/* Wait for pid until `ms` have passed; then SIGKILL it.  0 if it exited. */
static int
ht_wait(pid_t pid, int ms, int *status)
{
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)ms * 1000000u;
	int st = 0;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid) {
			if (status)
				*status = st;
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return -1;
		if (clock_ns(CLOCK_MONOTONIC) >= end)
			break;
		usleep(2000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	if (status)
		*status = st;
	return -1;
}

static int
ht_alive(pid_t pid)
{
	int st;

	return pid > 0 && waitpid(pid, &st, WNOHANG) == 0;
}

/* ---- /proc ------------------------------------------------------------------- */

static int
ht_count_fds(pid_t pid)
{
	char path[64];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(dir = opendir(path)))
		return -1;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

/* Nanoseconds on CPU of all the process's threads (schedstat field 1). */
static int64_t
ht_cpu_ns(pid_t pid)
{
	char path[96];
	struct dirent *d;
	int64_t sum = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return -1;
	while ((d = readdir(dir))) {
		unsigned long long ns;
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		ht_fmt(path, sizeof(path), "/proc/%d/task/%s/schedstat",
		    (int)pid, d->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fscanf(f, "%llu", &ns) == 1)
			sum += (int64_t)ns;
		fclose(f);
	}
	closedir(dir);
	return sum;
}

/* The path of the libkq the process mapped, from /proc/PID/maps. */
static void
ht_mapped_kq(pid_t pid, char *out, size_t len)
{
	char path[64], line[1024];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libkq.so")) {
			p[strcspn(p, "\n")] = '\0';
			snprintf(out, len, "%s", p);
			break;
		}
	}
	fclose(f);
}

/* ---- sockets -------------------------------------------------------------- */

static int
ht_connect(int port, int timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(s);
		return -1;
	}
	return s;
}

/* A port nobody listens on now (the server binds it right after). */
static int
ht_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (s < 0)
		return -1;
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(s, (struct sockaddr *)&sa, &sl) == 0)
		port = ntohs(sa.sin_port);
	close(s);
	return port;
}

/*
 * One probe: a fresh connection, the request httperf sends, the reply read
 * to its end (the server closes).  Returns the reply time in µs (request
 * written -> last byte), or -1 when the reply is missing or not a 200 with
 * the whole file.
 */
static double
ht_probe(int port)
{
	static const char req[] = "GET /index.html HTTP/1.1\r\n"
	    "Host: 127.0.0.1\r\nConnection: close\r\n\r\n";
	char buf[4096];
	size_t got = 0;
	uint64_t t0, t1;
	int s = ht_connect(port, 5000);

	if (s < 0)
		return -1;
	t0 = clock_ns(CLOCK_MONOTONIC);
	if (write(s, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1)) {
		close(s);
		return -1;
	}
	for (;;) {
		ssize_t r = read(s, buf + (got < 64 ? got : 64),
		    sizeof(buf) - 64 - 1);

		if (r <= 0) {
			t1 = clock_ns(CLOCK_MONOTONIC);
			close(s);
			if (r < 0 || got < HT_FILE ||
			    strncmp(buf, "HTTP/1.1 200", 12) != 0)
				return -1;
			return (double)(t1 - t0) / 1e3;
		}
		got += (size_t)r;
	}
}

/*
 * CPU ns of the system calls kq adds to an EVFILT_READ event on a TCP
 * socket, measured here: ioctl(FIONREAD) on a connected socket with bytes
 * queued (cost[0]), the same ioctl on a listening socket, where it fails
 * with EINVAL (cost[1]), and getsockopt(TCP_INFO) on a listening socket,
 * which gives kq the listen queue length for `data` (cost[2]).
 */
static void
ht_syscall_ns(double cost[3])
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c = -1, a = -1;
	char buf[100] = { 0 };

	cost[0] = cost[1] = cost[2] = 0.0;
	if (l < 0)
		return;
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    listen(l, 1) == 0 &&
	    getsockname(l, (struct sockaddr *)&sa, &sl) == 0 &&
	    (c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 &&
	    connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    (a = accept4(l, NULL, NULL, SOCK_CLOEXEC)) >= 0 &&
	    write(c, buf, sizeof(buf)) == (ssize_t)sizeof(buf)) {
		usleep(1000);
		for (int k = 0; k < 3; k++) {
			double v[5];

			for (int r = 0; r < 5; r++) {
				uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
				uint64_t ti[32];
				socklen_t tl;
				int n;

				for (int i = 0; i < 20000; i++)
					if (k < 2)
						(void)ioctl(k ? l : a, FIONREAD, &n);
					else {
						tl = sizeof(ti);
						(void)getsockopt(l, IPPROTO_TCP,
						    TCP_INFO, ti, &tl);
					}
				v[r] = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) -
				    t0) / 20000.0;
			}
			cost[k] = median(v, 5);
		}
	}
	if (a >= 0)
		close(a);
	if (c >= 0)
		close(c);
	close(l);
}

/* ---- the holder of idle connections --------------------------------------- */

/* Does every held connection look idle: not readable, not closed? */
static int
holder_alive(const int *fds, int n)
{
	struct pollfd p[512];
	int alive = 0;

	for (int i = 0; i < n; i += 512) {
		int k = n - i < 512 ? n - i : 512;

		for (int j = 0; j < k; j++)
			p[j] = (struct pollfd){ .fd = fds[i + j], .events = POLLIN };
		if (poll(p, (nfds_t)k, 0) < 0)
			return -1;
		for (int j = 0; j < k; j++)
			alive += p[j].revents == 0;
	}
	return alive;
}

/*
 * The holder's loop.  Opens connections to the server in batches of
 * HT_BATCH and, after each batch, waits (at most 10 s) until the server
 * process has that many more descriptors open: so the listen queue never
 * overflows and a connection counts only once the server has accepted it.
 * Never writes to a connection.  Exits when the socket to the parent
 * closes.
 */
static void
holder_main(int sock, const struct ht_srv *s, int maxn)
{
	int *fds = calloc((size_t)maxn + 1, sizeof(int)), held = 0;
	struct ht_cmd cmd;

	if (!fds)
		_exit(1);
	while (recv(sock, &cmd, sizeof(cmd), 0) == (ssize_t)sizeof(cmd)) {
		struct ht_reply rep = { .ok = 1 };

		if (cmd.op == HC_GROW) {
			while (rep.ok && held < cmd.n && held < maxn) {
				int k = cmd.n - held < HT_BATCH ? cmd.n - held :
				    HT_BATCH;
				uint64_t end;

				for (int i = 0; i < k; i++) {
					int c = ht_connect(s->port, 5000);

					if (c < 0) {
						rep.ok = 0;
						snprintf(rep.err, sizeof(rep.err),
						    "connect #%d: %s", held + 1,
						    strerror(errno));
						break;
					}
					fds[held++] = c;
				}
				end = clock_ns(CLOCK_MONOTONIC) + 10000000000ull;
				while (rep.ok && ht_count_fds(s->pid) <
				    s->base_fds + held) {
					if (clock_ns(CLOCK_MONOTONIC) > end) {
						rep.ok = 0;
						snprintf(rep.err, sizeof(rep.err),
						    "server accepted fewer than "
						    "%d connections in 10 s (%d "
						    "descriptors open)", held,
						    ht_count_fds(s->pid));
					}
					usleep(1000);
				}
			}
		}
		rep.held = held;
		rep.alive = holder_alive(fds, held);
		if (send(sock, &rep, sizeof(rep), 0) != (ssize_t)sizeof(rep))
			break;
	}
	_exit(0);
}

static int
holder_start(struct ht_srv *s, int maxn)
{
	pid_t parent = getpid();
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	fflush(NULL);
	if ((s->holder = fork()) < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (s->holder == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(1);
		close(sv[0]);
		holder_main(sv[1], s, maxn);
	}
	close(sv[1]);
	s->hsock = sv[0];
	return 0;
}

static int
holder_send(struct ht_srv *s, int op, int n)
{
	struct ht_cmd cmd = { .op = op, .n = n };

	return send(s->hsock, &cmd, sizeof(cmd), 0) == (ssize_t)sizeof(cmd) ?
	    0 : -1;
}

static int
holder_recv(struct ht_srv *s, struct ht_reply *rep)
{
	struct pollfd p = { .fd = s->hsock, .events = POLLIN };

	/* A batch waits at most 10 s; 40 batches are the most there are. */
	if (poll(&p, 1, 600000) != 1 ||
	    recv(s->hsock, rep, sizeof(*rep), 0) != (ssize_t)sizeof(*rep)) {
		snprintf(rep->err, sizeof(rep->err), "holder for %s did not "
		    "answer", s->handler);
		return -1;
	}
	return rep->ok ? 0 : -1;
}

/* ---- servers ------------------------------------------------------------- */

static int
srv_start(struct ht_ctx *c, struct ht_srv *s, const char *handler)
{
	char conf[4200], out[4200];
	char *argv[] = { c->lighttpd, "-D", "-f", conf, NULL };

	s->handler = handler;
	snprintf(conf, sizeof(conf), "%s/%s.conf", c->dir, handler);
	snprintf(out, sizeof(out), "%s/%s.log", c->dir, handler);
	for (int attempt = 0; attempt < 5; attempt++) {
		uint64_t end;
		FILE *f;
		int fd = -1;

		if ((s->port = ht_free_port()) < 0 || !(f = fopen(conf, "w")))
			return -1;
		/* Same configuration for every handler but the handler. */
		fprintf(f,
		    "server.document-root = \"%s/www\"\n"
		    "server.bind = \"127.0.0.1\"\n"
		    "server.port = %d\n"
		    "server.event-handler = \"%s\"\n"
		    "server.stat-cache-engine = \"simple\"\n"
		    "server.max-fds = %d\n"
		    "server.max-connections = %d\n"
		    "server.max-read-idle = 86400\n"
		    "server.max-keep-alive-idle = 86400\n"
		    "server.max-write-idle = 86400\n"
		    "server.errorlog = \"%s/%s.err\"\n"
		    "index-file.names = ( \"index.html\" )\n",
		    c->dir, s->port, handler, c->maxfds, c->maxfds / 2, c->dir,
		    handler);
		if (fclose(f) != 0)
			return -1;
		if ((s->pid = ht_spawn(argv, out, c->ldpath, c->srvcpu)) < 0)
			return -1;
		end = clock_ns(CLOCK_MONOTONIC) + 5000000000ull;
		while (ht_alive(s->pid) && clock_ns(CLOCK_MONOTONIC) < end &&
		    (fd = ht_connect(s->port, 1000)) < 0)
			usleep(5000);
		if (fd >= 0) {
			close(fd);
			/* The server has closed its side of that one? */
			usleep(100000);
			s->base_fds = ht_count_fds(s->pid);
			/*
			 * It serves the file (a 200 with all of it), or
			 * nothing it would do is worth measuring.  (After
			 * the count: lighttpd may keep the file open for a
			 * while, and the idle check wants no fewer than
			 * base_fds + N.)
			 */
			if (ht_probe(s->port) < 0) {
				progress("httpd: lighttpd (%s) does not serve "
				    "%s/www/index.html (see %s/%s.err)\n",
				    handler, c->dir, c->dir, handler);
				return -1;
			}
			ht_mapped_kq(s->pid, s->kqlib, sizeof(s->kqlib));
			return s->base_fds > 0 ? 0 : -1;
		}
		if (ht_alive(s->pid)) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
		} else
			waitpid(s->pid, NULL, 0);
		s->pid = 0;
		progress("httpd: lighttpd (%s) did not start on port %d "
		    "(attempt %d; see %s)\n", handler, s->port, attempt + 1,
		    out);
	}
	return -1;
}

static void
srv_stop(struct ht_srv *s)
{
	if (s->hsock > 0) {
		close(s->hsock);
		s->hsock = 0;
	}
	if (s->holder > 0) {
		ht_wait(s->holder, 5000, NULL);
		s->holder = 0;
	}
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		ht_wait(s->pid, 5000, NULL);
		s->pid = 0;
	}
}

/* ---- one httperf run ------------------------------------------------------- */

/* Lines of the server's error log saying it stopped accepting. */
static long
ht_limit_notes(const struct ht_ctx *c, const struct ht_srv *s)
{
	char path[4200], line[512];
	long n = 0;
	FILE *f;

	if (ht_fmt(path, sizeof(path), "%s/%s.err", c->dir, s->handler) < 0 ||
	    !(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "sockets disabled") != NULL;
	fclose(f);
	return n;
}

static double
num_after(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p ? strtod(p + strlen(key), NULL) : -1.0;
}

/* Parse httperf's summary; -1 when it is not there. */
static int
ht_parse(const char *path, struct ht_run *r)
{
	static char text[16384];
	size_t n;
	FILE *f;

	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	if (!strstr(text, "Total: connections"))
		return -1;
	double dur = num_after(text, "test-duration ");
	r->requests = (long)num_after(text, " requests ");
	r->replies = (long)num_after(text, " replies ");
	r->rate = dur > 0 ? (double)r->replies / dur : 0.0;
	r->reply_ms = num_after(text, "Reply time [ms]: response ") +
	    num_after(text, " transfer ");
	r->conn_sd_ms = num_after(text, " stddev ");
	r->errors = (long)num_after(text, "Errors: total ");
	/*
	 * A reply that is not the file is an error too: httperf counts an
	 * error page (a 500 from a server that cannot serve the file) as a
	 * reply, and the run would measure error pages.
	 */
	long ok2xx = (long)num_after(text, " 2xx=");
	if (ok2xx < 0)
		return -1;
	if (r->replies > ok2xx)
		r->errors += r->replies - ok2xx;
	return r->requests < 0 || r->replies < 0 || r->errors < 0 ? -1 : 0;
}

/*
 * One httperf run against s: `rate` connections per second for `secs`,
 * one request each.  probe: send probe requests meanwhile and fill
 * r->probe_med_us (the samples also go to pool/npool).  Returns 0, or -1
 * when httperf failed to run or the server died.
 */
/*
 * One measured load: httperf against every server of `sl` at once, one
 * httperf each, spawned in the order given, each at `rate` for `secs`
 * (n = 1: the server alone; n = 2: a pair whose servers share the host's
 * state at every moment, see ht_run).  With `probe`, kqbench's probe asks
 * every server in turn every HT_PROBE_MS, the first of the turn rotating,
 * and the samples go to the slot's pool.  httperf's output is kept as
 * httperf-<handler><suffix>.out.  Fills every slot's run; -1 (reported)
 * when an httperf or a server fails.
 */
struct ht_slot {
	struct ht_srv	*s;
	struct ht_run	*r;
	double		*pool;		/* the cell's probe pool, or NULL */
	int		*npool;
};

static int
ht_httperf(struct ht_ctx *c, struct ht_slot *sl, int n, int rate,
    double secs, int probe, const char *suffix)
{
	char port[HT_NH][16], rs[16], nc[16], out[HT_NH][4200];
	char *argv[] = { "httperf", "--server", "127.0.0.1", "--port", NULL,
	    "--uri", "/index.html", "--rate", rs, "--num-conns", nc,
	    "--num-calls", "1", "--timeout", "5", NULL };
	static double samples[HT_NH][HT_MAXPROBE];
	int ns[HT_NH] = { 0 }, st[HT_NH], done[HT_NH] = { 0 };
	int left = 0, tick = 0, rc = 0;
	long lim0[HT_NH];
	int64_t cpu0[HT_NH], cpu1[HT_NH];
	uint64_t w0, w1, next;
	pid_t pid[HT_NH];

	if (n < 1 || n > HT_NH)
		return -1;
	snprintf(rs, sizeof(rs), "%d", rate);
	snprintf(nc, sizeof(nc), "%ld", (long)(rate * secs + 0.5));
	for (int i = 0; i < n; i++) {
		memset(sl[i].r, 0, sizeof(*sl[i].r));
		snprintf(port[i], sizeof(port[i]), "%d", sl[i].s->port);
		if (ht_fmt(out[i], sizeof(out[i]), "%s/httperf-%s%s.out",
		    c->dir, sl[i].s->handler, suffix) < 0)
			return -1;
		if (!ht_alive(sl[i].s->pid)) {
			progress("httpd: lighttpd (%s) is gone\n",
			    sl[i].s->handler);
			return -1;
		}
		lim0[i] = ht_limit_notes(c, sl[i].s);
		cpu0[i] = ht_cpu_ns(sl[i].s->pid);
	}
	w0 = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < n; i++) {
		argv[4] = port[i];
		if ((pid[i] = ht_spawn(argv, out[i], NULL, -1)) < 0) {
			for (int j = 0; j < i; j++) {
				kill(pid[j], SIGKILL);
				waitpid(pid[j], NULL, 0);
			}
			return -1;
		}
		left++;
	}
	next = w0 + HT_PROBE_MS * 1000000ull;
	while (left > 0) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);

		for (int i = 0; i < n; i++)
			if (!done[i] && waitpid(pid[i], &st[i], WNOHANG) ==
			    pid[i]) {
				done[i] = 1;
				left--;
			}
		if (left == 0)
			break;
		if (now > w0 + (uint64_t)((secs + 20.0) * 1e9)) {
			for (int i = 0; i < n; i++)
				if (!done[i]) {
					kill(pid[i], SIGKILL);
					waitpid(pid[i], &st[i], 0);
				}
			progress("httpd: httperf (%s%s) killed after %.0f s\n",
			    sl[0].s->handler, n > 1 ? " and others" : "",
			    secs + 20.0);
			return -1;
		}
		if (probe && now >= next) {
			for (int k = 0; k < n; k++) {
				int i = (k + tick) % n;
				double us;

				if (ns[i] >= HT_MAXPROBE)
					continue;
				if ((us = ht_probe(sl[i].s->port)) >= 0)
					samples[i][ns[i]++] = us;
				else
					sl[i].r->probe_err++;
			}
			tick++;
			next += HT_PROBE_MS * 1000000ull;
		} else
			usleep(1000);
	}
	w1 = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < n; i++) {
		struct ht_run *r = sl[i].r;
		const char *h = sl[i].s->handler;

		cpu1[i] = ht_cpu_ns(sl[i].s->pid);
		if (!WIFEXITED(st[i]) || WEXITSTATUS(st[i]) != 0 ||
		    ht_parse(out[i], r) < 0) {
			progress("httpd: httperf (%s) failed (status %d), see "
			    "%s\n", h, st[i], out[i]);
			rc = -1;
			continue;
		}
		if (cpu0[i] < 0 || cpu1[i] < 0 || !ht_alive(sl[i].s->pid)) {
			progress("httpd: lighttpd (%s) died during the run\n",
			    h);
			rc = -1;
			continue;
		}
		r->cpu_us_req = r->replies ? (double)(cpu1[i] - cpu0[i]) /
		    1e3 / (double)r->replies : 0.0;
		r->cpu_pct = 100.0 * (double)(cpu1[i] - cpu0[i]) /
		    (double)(w1 - w0);
		r->limit_hits = ht_limit_notes(c, sl[i].s) - lim0[i];
		r->nprobe = ns[i];
		if (probe && ns[i] == 0)
			progress("httpd: no probe answered by %s in this run "
			    "(%d failed)\n", h, r->probe_err);
		for (int k = 0; k < ns[i] && sl[i].pool; k++)
			if (*sl[i].npool < HT_POOL)
				sl[i].pool[(*sl[i].npool)++] = samples[i][k];
		r->probe_med_us = median(samples[i], ns[i]);
	}
	return rc;
}

/* System calls per reply, by name, from one run under strace -c. */
#define HT_MAXSYS	48
struct ht_sys {
	double	 total;		/* all calls per reply; -1: not counted */
	int	 n;
	char	 name[HT_MAXSYS][24];
	double	 per[HT_MAXSYS];
};

static double
sys_per(const struct ht_sys *y, const char *name)
{
	for (int i = 0; i < y->n; i++)
		if (strcmp(y->name[i], name) == 0)
			return y->per[i];
	return 0.0;
}

/*
 * One more run with `strace -c -f -p` attached to the server (not timed:
 * strace slows every system call), its summary kept as
 * strace-<handler>-<tag>.out.  y->total is -1 when strace is unavailable
 * or cannot attach.
 */
static void
ht_count(struct ht_ctx *c, struct ht_srv *s, int rate, double secs,
    const char *tag, struct ht_sys *y)
{
	char pid[16], out[4200], log[4200], line[256];
	char *argv[] = { "strace", "-f", "-c", "-U", "calls,name", "-o", out,
	    "-p", pid, NULL };
	struct ht_run r;
	long total = 0;
	uint64_t end;
	pid_t st;
	FILE *f;
	int ok = 0;

	memset(y, 0, sizeof(*y));
	y->total = -1.0;
	snprintf(pid, sizeof(pid), "%d", (int)s->pid);
	if (ht_fmt(out, sizeof(out), "%s/strace-%s-%s.out", c->dir, s->handler,
	    tag) < 0 || ht_fmt(log, sizeof(log), "%s/strace-%s.log", c->dir,
	    s->handler) < 0)
		return;
	unlink(out);
	if ((st = ht_spawn(argv, log, NULL, -1)) < 0)
		return;
	/* Attached once strace says so (it prints to its stderr). */
	end = clock_ns(CLOCK_MONOTONIC) + 3000000000ull;
	while (!ok && ht_alive(st) && clock_ns(CLOCK_MONOTONIC) < end) {
		if ((f = fopen(log, "r"))) {
			while (fgets(line, sizeof(line), f))
				ok |= strstr(line, "attached") != NULL;
			fclose(f);
		}
		usleep(5000);
	}
	if (!ok) {
		progress("httpd: strace could not attach to lighttpd (%s), "
		    "see %s\n", s->handler, log);
		ht_wait(st, 0, NULL);
		return;
	}
	struct ht_slot one = { s, &r, NULL, NULL };

	ok = ht_httperf(c, &one, 1, rate, secs, 0, "") == 0;
	kill(st, SIGINT);
	if (ht_wait(st, 10000, NULL) < 0 || !ok || r.replies <= 0)
		return;
	if (!(f = fopen(out, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		long calls;
		char name[64];

		if (sscanf(line, "%ld %63s", &calls, name) != 2)
			continue;
		if (strcmp(name, "total") == 0)
			total = calls;
		else if (y->n < HT_MAXSYS) {
			snprintf(y->name[y->n], sizeof(y->name[0]), "%.23s", name);
			y->per[y->n++] = (double)calls / (double)r.replies;
		}
	}
	fclose(f);
	if (total > 0)
		y->total = (double)total / (double)r.replies;
}

/* ---- the sweep ----------------------------------------------------------- */

/* Results per (rate, size, handler), per repetition. */
struct ht_cell {
	struct ht_run run[MAXREPS];
	int	 nrun;
	double	 pool[HT_POOL];
	int	 npool;
	struct ht_sys sys;
};

static struct ht_cell *
cell_at(struct ht_cell *cells, int ri, int ni, int h)
{
	return &cells[(ri * HT_MAXN + ni) * HT_NH + h];
}

static double
cell_med(const struct ht_cell *cl, size_t off)
{
	double v[MAXREPS];

	for (int i = 0; i < cl->nrun; i++)
		v[i] = *(const double *)((const char *)&cl->run[i] + off);
	return median(v, cl->nrun);
}

/*
 * Median over the repetitions of a / b, field `off` of each run; *lo and
 * *hi (when given) get the smallest and the largest ratio.
 */
static double
cell_ratio_range(const struct ht_cell *a, const struct ht_cell *b,
    size_t off, double *lo, double *hi)
{
	double v[MAXREPS], m;
	int n = 0;

	for (int i = 0; i < a->nrun && i < b->nrun; i++) {
		double x = *(const double *)((const char *)&a->run[i] + off);
		double y = *(const double *)((const char *)&b->run[i] + off);

		if (y > 0 && x > 0)	/* a run without a value has no ratio */
			v[n++] = x / y;
	}
	m = median(v, n);	/* sorts v */
	if (lo)
		*lo = n ? v[0] : 0.0;
	if (hi)
		*hi = n ? v[n - 1] : 0.0;
	return m;
}

static double
cell_ratio(const struct ht_cell *a, const struct ht_cell *b, size_t off)
{
	return cell_ratio_range(a, b, off, NULL, NULL);
}

static double
pct(double *v, int n, double p)
{
	if (n <= 0)
		return 0.0;
	qsort(v, (size_t)n, sizeof(*v), dbl_cmp);
	return v[(int)(p * (n - 1) + 0.5)];
}

static int
ht_setup(struct ht_ctx *c)
{
	const struct bench_opts *o = c->o;
	char lib[4200], link[4200], real[PATH_MAX], www[4200];
	struct rlimit rl;
	struct stat sb;
	FILE *f;

	/*
	 * An absolute directory: lighttpd answers every request with a 500
	 * when its document root is a relative path (kqbench's default
	 * output directory is one).
	 */
	if (!realpath(o->outdir, real)) {
		progress("httpd: %s: %s\n", o->outdir, strerror(errno));
		return -1;
	}
	if (ht_fmt(c->dir, sizeof(c->dir), "%s/httpd", real) < 0)
		return -1;
	snprintf(www, sizeof(www), "%s/www", c->dir);
	if ((mkdir(c->dir, 0777) < 0 && errno != EEXIST) ||
	    (mkdir(www, 0777) < 0 && errno != EEXIST)) {
		progress("httpd: %s: %s\n", c->dir, strerror(errno));
		return -1;
	}
	ht_fmt(lib, sizeof(lib), "%s/index.html", www);
	if (!(f = fopen(lib, "w")))
		return -1;
	for (int i = 0; i < HT_FILE; i++)
		fputc(i % 64 == 63 ? '\n' : 'k', f);
	fclose(f);
	ht_lighttpd_path(o, c->lighttpd, sizeof(c->lighttpd));
	if (access(c->lighttpd, X_OK) != 0 || !ht_have_httperf()) {
		progress("httpd: no lighttpd at %s or no httperf: run "
		    "bench/httpd-setup.sh\n", c->lighttpd);
		return -1;
	}
	/* The libkq.so beside this kqbench, under its soname. */
	snprintf(lib, sizeof(lib), "%s", o->self);
	if (strrchr(lib, '/'))
		strcpy(strrchr(lib, '/') + 1, "libkq.so");
	c->ldpath[0] = '\0';
	if (stat(lib, &sb) == 0 && realpath(lib, real)) {
		ht_fmt(c->ldpath, sizeof(c->ldpath), "%s/lib", c->dir);
		mkdir(c->ldpath, 0777);
		ht_fmt(link, sizeof(link), "%s/libkq.so.0", c->ldpath);
		unlink(link);
		if (symlink(real, link) < 0)
			c->ldpath[0] = '\0';
	}
	/* Descriptor bounds: lighttpd's max-fds is an unsigned short. */
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	c->maxfds = rl.rlim_max > 65535 ? 65535 : (int)rl.rlim_max;
	c->nmax = c->maxfds / 2 - HT_HEADROOM;
	if (c->nmax > (int)rl.rlim_max - 64)
		c->nmax = (int)rl.rlim_max - 64;
	return 0;
}

static int
ht_prepare(const struct bench_opts *o)
{
	char path[4096], top[4096], cmd[8400];

	ht_lighttpd_path(o, path, sizeof(path));
	if (access(path, X_OK) == 0 && ht_have_httperf())
		return 0;
	ht_top(o, top, sizeof(top));
	snprintf(cmd, sizeof(cmd), "%s/bench/httpd-setup.sh", top);
	if (access(cmd, X_OK) != 0) {
		progress("httpd: no lighttpd at %s and no %s to build it\n",
		    path, cmd);
		return -1;
	}
	progress("httpd: building what the scenario needs (%s)\n", cmd);
	snprintf(cmd, sizeof(cmd), "'%s/bench/httpd-setup.sh' </dev/null 1>&2",
	    top);
	return system(cmd) == 0 ? 0 : -1;
}

static int
ht_sizes(const struct ht_ctx *c, int *n)
{
	static const int full[] = { 0, 100, 500, 1000, 2000, 5000, 10000 };
	static const int quick[] = { 0, 1000 };
	const int *src = c->o->tiny ? NULL : c->o->quick ? quick : full;
	int cnt = c->o->tiny ? 0 : c->o->quick ? 2 : 7, k = 0;

	if (c->o->tiny) {
		n[k++] = 0;
		n[k++] = 4;
		return k;
	}
	for (int i = 0; i < cnt; i++)
		if (src[i] < c->nmax)
			n[k++] = src[i];
	n[k++] = c->nmax;
	return k;
}

static int
ht_run(const struct bench_opts *o, struct bench_result *res)
{
	static struct ht_ctx ctx;
	struct ht_ctx *c = &ctx;
	int sizes[HT_MAXN], nsizes, rates[HT_MAXRATES], nrates, rc = -1;
	struct ht_cell *cells, *pcells;
	struct bench_table *t, *tr;
	double cost[3];
	char place[160];

	memset(c, 0, sizeof(*c));
	c->o = o;
	c->srvcpu = -1;
	if (ht_setup(c) < 0)
		return -1;
	/* Run-to-run scatter is ±15 %: the full sweep takes kqbench's 11
	   repetitions (about 36 min with the pair), the quick one 5. */
	c->reps = o->tiny ? 1 : o->quick ? (o->reps < 5 ? o->reps : 5) :
	    o->reps < HT_MAXREPS ? o->reps : HT_MAXREPS;
	c->secs = o->tiny ? 1.0 : o->quick ? 1.5 : 3.0;
	nsizes = ht_sizes(c, sizes);
	nrates = 0;
	rates[nrates++] = o->tiny ? 100 : 500;
	if (!o->quick)
		rates[nrates++] = 5000;
	cells = calloc((size_t)HT_MAXRATES * HT_MAXN * HT_NH, sizeof(*cells));
	pcells = calloc((size_t)HT_MAXRATES * HT_MAXN * HT_NH, sizeof(*cells));
	if (!cells || !pcells) {
		free(cells);
		free(pcells);
		return -1;
	}
	ht_syscall_ns(cost);
	ht_place(c);

	for (int h = 0; h < HT_NH; h++) {
		struct ht_srv *s = &c->srv[h];

		if (srv_start(c, s, ht_handler[h]) < 0 ||
		    holder_start(s, c->nmax) < 0) {
			progress("httpd: cannot start lighttpd (%s), see %s\n",
			    ht_handler[h], c->dir);
			goto out;
		}
		progress("httpd: lighttpd %s on port %d, pid %d, %d descriptors "
		    "open, libkq %s\n", s->handler, s->port, (int)s->pid,
		    s->base_fds, s->kqlib[0] ? s->kqlib : "(not mapped)");
	}
	if (!c->srv[H_KQ].kqlib[0]) {
		progress("httpd: the kqueue server did not map libkq\n");
		goto out;
	}

	for (int ni = 0; ni < nsizes; ni++) {
		int n = sizes[ni];
		struct ht_reply rep = { 0 };

		progress("httpd: N = %d idle connections per server\n", n);
		for (int h = 0; h < HT_NH; h++)
			if (holder_send(&c->srv[h], HC_GROW, n) < 0)
				goto out;
		for (int h = 0; h < HT_NH; h++)
			if (holder_recv(&c->srv[h], &rep) < 0 || rep.held != n ||
			    rep.alive != n) {
				progress("httpd: %s: holding %d of %d idle "
				    "connections (%d alive): %s\n",
				    ht_handler[h], rep.held, n, rep.alive,
				    rep.err);
				goto out;
			}
		for (int ri = 0; ri < nrates; ri++) {
			struct ht_run r;

			/* The paper's dry run, not recorded. */
			for (int h = 0; h < HT_NH; h++) {
				struct ht_slot one = { &c->srv[h], &r, NULL,
				    NULL };

				if (ht_httperf(c, &one, 1, rates[ri],
				    o->tiny ? 0.2 : 0.5, 0, "") < 0)
					goto out;
			}
			/* HT_NH solo slots and the pair, rotated; the pair's
			   first-spawned server alternates. */
			for (int rep_i = 0; rep_i < c->reps; rep_i++)
				for (int k = 0; k <= HT_NH; k++) {
					int h = (k + rep_i) % (HT_NH + 1);
					int f = rep_i % 2 ? H_KQ : H_EPOLL;
					int g = f == H_KQ ? H_EPOLL : H_KQ;
					struct ht_cell *cl[2] = {
					    cell_at(h < HT_NH ? cells : pcells,
					    ri, ni, h < HT_NH ? h : f),
					    cell_at(pcells, ri, ni, g) };
					struct ht_slot sl[2];
					int nsl = h < HT_NH ? 1 : 2;

					for (int i = 0; i < nsl; i++) {
						sl[i].s = &c->srv[i == 0 ?
						    (h < HT_NH ? h : f) : g];
						sl[i].r = &cl[i]->run[cl[i]->nrun];
						sl[i].pool = cl[i]->pool;
						sl[i].npool = &cl[i]->npool;
					}
					if (ht_httperf(c, sl, nsl, rates[ri],
					    c->secs, 1, nsl > 1 ? "-paired" :
					    "") < 0)
						goto out;
					for (int i = 0; i < nsl; i++)
						cl[i]->nrun++;
				}
			for (int h = 0; h < HT_NH; h++) {
				struct ht_cell *cl = cell_at(cells, ri, ni, h);
				char tag[32];

				snprintf(tag, sizeof(tag), "%d-%d", n, rates[ri]);
				ht_count(c, &c->srv[h], rates[ri],
				    o->tiny ? 0.3 : 1.0, tag, &cl->sys);
			}
			progress("httpd: N = %d, %d/s: CPU us/req poll %.1f, "
			    "linux-sysepoll %.1f, kqueue %.1f; paired "
			    "kqueue/linux-sysepoll x%.3f\n", n, rates[ri],
			    cell_med(cell_at(cells, ri, ni, 0),
			    offsetof(struct ht_run, cpu_us_req)),
			    cell_med(cell_at(cells, ri, ni, 1),
			    offsetof(struct ht_run, cpu_us_req)),
			    cell_med(cell_at(cells, ri, ni, 2),
			    offsetof(struct ht_run, cpu_us_req)),
			    cell_ratio(cell_at(pcells, ri, ni, H_KQ),
			    cell_at(pcells, ri, ni, H_EPOLL),
			    offsetof(struct ht_run, cpu_us_req)));
		}
		/* The idle connections are still there and still idle. */
		for (int h = 0; h < HT_NH; h++) {
			int fds;

			if (holder_send(&c->srv[h], HC_CHECK, 0) < 0 ||
			    holder_recv(&c->srv[h], &rep) < 0 ||
			    rep.alive != n ||
			    (fds = ht_count_fds(c->srv[h].pid)) <
			    c->srv[h].base_fds + n) {
				progress("httpd: %s lost idle connections: %d "
				    "of %d still idle\n", ht_handler[h],
				    rep.alive, n);
				goto out;
			}
		}
	}
	rc = 0;
out:
	for (int h = 0; h < HT_NH; h++)
		srv_stop(&c->srv[h]);
	ht_unplace(c);

	/* ---- tables ---- */
	t = bt_new(res, "httpd", "Web server (Lemon §7.2): lighttpd 1.4.69 "
	    "under httperf, N idle connections held open");
	bt_cols(t, "rate/s|N|handler|reply ms|conn sd ms|probe us|probe p90 "
	    "us|replies/s|errors|limit hits|CPU us/req|server CPU %|"
	    "syscalls/req|ioctl/req|getsockopt/req");
	tr = bt_new(res, "httpd-kq", "Web server: lighttpd's kqueue handler "
	    "over kq / its linux-sysepoll handler (same binary, same run)");
	bt_cols(tr, "rate/s|N|probe reply x|httperf reply x|CPU/req x|"
	    "CPU/req x range|CPU us/req kq, sysepoll|alone: probe reply x|"
	    "alone: CPU/req x|poll CPU/req x|extra syscalls/req|extra "
	    "ioctl/req|extra getsockopt/req|their share %|within 10%");
	for (int ri = 0; ri < nrates; ri++)
		for (int ni = 0; ni < nsizes; ni++) {
			struct ht_cell *k = cell_at(cells, ri, ni, H_KQ);
			struct ht_cell *e = cell_at(cells, ri, ni, H_EPOLL);
			struct ht_cell *p = cell_at(cells, ri, ni, H_POLL);
			struct ht_cell *pk = cell_at(pcells, ri, ni, H_KQ);
			struct ht_cell *pe = cell_at(pcells, ri, ni, H_EPOLL);
			double pr, cr, lo, hi, xio, xgo, share;
			int r;

			for (int h = 0; h < HT_NH; h++) {
				struct ht_cell *cl = cell_at(cells, ri, ni, h);
				long errs = 0, hits = 0;

				if (cl->nrun == 0 || (r = bt_row(t)) < 0)
					continue;
				for (int i = 0; i < cl->nrun; i++) {
					errs += cl->run[i].errors;
					hits += cl->run[i].limit_hits;
				}
				bt_set(t, r, 0, "%d", rates[ri]);
				bt_set(t, r, 1, "%d", sizes[ni]);
				bt_set(t, r, 2, "%s", ht_handler[h]);
				bt_num(t, r, 3, cell_med(cl, offsetof(struct
				    ht_run, reply_ms)));
				bt_num(t, r, 4, cell_med(cl, offsetof(struct
				    ht_run, conn_sd_ms)));
				bt_num(t, r, 6, pct(cl->pool, cl->npool, 0.9));
				bt_num(t, r, 5, pct(cl->pool, cl->npool, 0.5));
				bt_num(t, r, 7, cell_med(cl, offsetof(struct
				    ht_run, rate)));
				bt_set(t, r, 8, "%ld", errs);
				bt_set(t, r, 9, "%ld", hits);
				bt_num(t, r, 10, cell_med(cl, offsetof(struct
				    ht_run, cpu_us_req)));
				bt_num(t, r, 11, cell_med(cl, offsetof(struct
				    ht_run, cpu_pct)));
				if (cl->sys.total >= 0) {
					bt_num(t, r, 12, cl->sys.total);
					bt_num(t, r, 13, sys_per(&cl->sys,
					    "ioctl"));
					bt_num(t, r, 14, sys_per(&cl->sys,
					    "getsockopt"));
				} else
					for (int col = 12; col < 15; col++)
						bt_set(t, r, col, "n/a");
			}
			if (pk->nrun == 0 || pe->nrun == 0 ||
			    (r = bt_row(tr)) < 0)
				continue;
			pr = cell_ratio(pk, pe, offsetof(struct ht_run,
			    probe_med_us));
			cr = cell_ratio_range(pk, pe, offsetof(struct ht_run,
			    cpu_us_req), &lo, &hi);
			bt_set(tr, r, 0, "%d", rates[ri]);
			bt_set(tr, r, 1, "%d", sizes[ni]);
			bt_num(tr, r, 2, pr);
			bt_num(tr, r, 3, cell_ratio(pk, pe, offsetof(struct
			    ht_run, reply_ms)));
			bt_num(tr, r, 4, cr);
			bt_set(tr, r, 5, "%.3f-%.3f", lo, hi);
			bt_set(tr, r, 6, "%.1f, %.1f", cell_med(pk,
			    offsetof(struct ht_run, cpu_us_req)), cell_med(pe,
			    offsetof(struct ht_run, cpu_us_req)));
			bt_num(tr, r, 7, cell_ratio(k, e, offsetof(struct
			    ht_run, probe_med_us)));
			bt_num(tr, r, 8, cell_ratio(k, e, offsetof(struct
			    ht_run, cpu_us_req)));
			bt_num(tr, r, 9, cell_ratio(p, e, offsetof(struct
			    ht_run, cpu_us_req)));
			if (k->sys.total >= 0 && e->sys.total >= 0) {
				xio = sys_per(&k->sys, "ioctl") -
				    sys_per(&e->sys, "ioctl");
				xgo = sys_per(&k->sys, "getsockopt") -
				    sys_per(&e->sys, "getsockopt");
				share = 100.0 * (xio * (cost[0] > cost[1] ?
				    cost[0] : cost[1]) + xgo * cost[2]) / 1e3 /
				    cell_med(k, offsetof(struct ht_run,
				    cpu_us_req));
				bt_num(tr, r, 10, k->sys.total - e->sys.total);
				bt_num(tr, r, 11, xio);
				bt_num(tr, r, 12, xgo);
				bt_num(tr, r, 13, share);
			} else
				for (int col = 10; col < 14; col++)
					bt_set(tr, r, col, "n/a");
			/* No probe answered (ratio 0): not measured, so not
			   within anything. */
			bt_set(tr, r, 14, "%s", !(pr > 0 && cr > 0) ?
			    "not measured" : pr <= 1.10 && cr <= 1.10 ?
			    "yes" : "no");
		}
	if (c->srvcpu >= 0)
		snprintf(place, sizeof(place), "the servers on CPU %d, "
		    "kqbench, its probe, httperf and the holders on the "
		    "other CPUs (as the paper's separate client machines)",
		    c->srvcpu);
	else
		snprintf(place, sizeof(place), "none (one CPU)");
	bt_note(t, "One binary, three handlers (server.event-handler); the "
	    "same configuration otherwise (stat-cache-engine \"simple\", "
	    "max-fds %d, max-connections %d, idle timeouts 1 day).  N idle "
	    "connections per server: connected, never sent a byte, checked "
	    "still open and idle after every N; N_max = %d leaves %d "
	    "connections of lighttpd's limit (max-fds / 2) for the load; "
	    "`limit hits`: times lighttpd logged that it stopped accepting "
	    "at that limit during the measured runs.  Errors are the sum "
	    "over the runs.  "
	    "httperf: one request per connection (`--num-calls 1`), %.1f s "
	    "per run, %d runs per cell (handlers rotated), after one "
	    "unrecorded dry run; `reply ms` is httperf's response + transfer "
	    "time (median of the runs' means; httperf prints 0.1 ms "
	    "steps), `conn sd ms` its connection-time stddev (the spread).  "
	    "`probe`: kqbench's own request every %d ms during the runs "
	    "(fresh connection, request written to last byte), median and "
	    "90th percentile of all runs.  CPU: the server's "
	    "/proc/PID/task/*/schedstat time per reply and per wall second.  "
	    "syscalls and ioctls per request: one more run under "
	    "`strace -c -f -p` (not timed).  Placement: %s.  libkq: %s.\n",
	    c->maxfds, c->maxfds / 2, c->nmax, HT_HEADROOM, c->secs, c->reps,
	    HT_PROBE_MS, place, c->srv[H_KQ].kqlib[0] ?
	    c->srv[H_KQ].kqlib : "not mapped");
	bt_note(tr, "Ratios are medians of the per-repetition ratios.  The "
	    "first five columns come from the paired runs: in every "
	    "repetition, besides each server's run alone, the kqueue and the "
	    "linux-sysepoll server are loaded at the same time, one httperf "
	    "each at the cell's rate, both servers on the same CPU (which of "
	    "the two httperfs starts first alternates), and kqbench's probe "
	    "asks both in turn.  So the two servers see the same state of "
	    "the host at every moment, and its drift, which moves the runs "
	    "alone by +-10 %% at 500/s, cancels in their ratio.  `range`: the "
	    "smallest and largest paired ratio of the cell; `CPU us/req kq, "
	    "sysepoll`: the paired runs' medians.  `alone`: the same ratios "
	    "between the servers' runs alone (the rows of the table above) "
	    "of the same repetition.  `extra`: "
	    "the kqueue server's system calls per request minus "
	    "linux-sysepoll's, from the strace runs: kq's EVFILT_READ costs "
	    "one system call per event for `data`: ioctl(FIONREAD) on a "
	    "connected socket; on a listening socket (where lighttpd's events "
	    "are: it reads a new connection at once, without waiting for an "
	    "event) getsockopt(TCP_INFO) for the listen queue length, "
	    "FreeBSD's `data` there (the FIONREAD, which fails on a listener, "
	    "is made for its first event only).  `their share`: those calls at "
	    "the cost "
	    "measured in this run (FIONREAD %.0f ns on a connected socket, "
	    "%.0f ns on a listening one, the larger used; TCP_INFO %.0f ns) as "
	    "a share of the kqueue server's CPU per request.  `within 10%%`: "
	    "the paired probe reply x and CPU/req x both <= 1.10 (`not "
	    "measured` when no probe of a run pair answered).\n", cost[0], cost[1],
	    cost[2]);
	if (nsizes >= 2 && rc == 0) {
		/* Where the seed's claim holds: growth from N=0 to N_max. */
		double g[HT_NH], busy[HT_NH], c0[HT_NH], c1[HT_NH];

		for (int h = 0; h < HT_NH; h++) {
			c0[h] = cell_med(cell_at(cells, 0, 0, h),
			    offsetof(struct ht_run, cpu_us_req));
			c1[h] = cell_med(cell_at(cells, 0, nsizes - 1, h),
			    offsetof(struct ht_run, cpu_us_req));
			busy[h] = cell_med(cell_at(cells, 0, nsizes - 1, h),
			    offsetof(struct ht_run, cpu_pct));
			g[h] = c0[h] > 0 ? c1[h] / c0[h] : 0;
		}
		bt_note(tr, "At %d/s, from N = 0 to N = %d, CPU per request: "
		    "poll %.1f -> %.1f us (x%.2f, server busy %.0f%% of a CPU "
		    "at N = %d), linux-sysepoll %.1f -> %.1f us (x%.2f, %.0f%%), "
		    "kqueue over kq %.1f -> %.1f us (x%.2f, %.0f%%).  The "
		    "seed's claim (the poll server's cost grows with the idle "
		    "connections until it runs out of CPU, the kqueue server's "
		    "stays flat) %s here.\n", rates[0], sizes[nsizes - 1],
		    c0[0], c1[0], g[0], busy[0], sizes[nsizes - 1], c0[1],
		    c1[1], g[1], busy[1], c0[2], c1[2], g[2], busy[2],
		    o->tiny ? "is not tested at this size" :
		    g[0] > 2.0 && g[2] < 1.25 ? "holds" : "does not hold");
	}
	free(cells);
	free(pcells);
	return rc;
}

const struct bench_scenario bench_httpd = {
	.name = "httpd",
	.title = "lighttpd under httperf with N idle connections (Lemon §7.2)",
	.run = ht_run,
	.prepare = ht_prepare,
	.limit_quick = 420,
	.limit_full = 3600,
};
