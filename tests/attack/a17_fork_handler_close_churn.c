/*
 * a17: a16's churn (four threads making kqueues of most filters, a SIGALRM
 * handler closing them every 300 us, here with close_range(k, k, 0)) and a
 * thread that forks every 2 ms; each child looks at its descriptors with
 * raw system calls and exits.  Three properties:
 *   - no fork stalls: a handler on the forking thread that waited for a
 *     kqueue's lock held by a thread waiting at the maker gate for that
 *     very fork cost the gate's whole patience per section (one fork took
 *     5 to 12 s in 15 of 16 runs before c14bdaf).  Exit 5 if one takes
 *     more than 3 s;
 *   - no child inherits a kqueue's epoll descriptor, timerfd, pidfd or
 *     inotify descriptor: fork() copies the descriptor table before the
 *     memory, and a number the handler closed in between was left open in
 *     a child whose copy said the kqueue had died (5 runs of 8 before
 *     95b9b39).  Exit 4;
 *   - no hang (exit 2) and no descriptor left in the parent (exit 1).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#define NTHR	4

static _Atomic int slot[NTHR];
static atomic_int stop, made, hclosed, forks, badchild, slowfork;
static char path[64];
static pid_t child;

static int
nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* opendir's own */
}

static void
on_alarm(int s)
{
	int e = errno;

	(void)s;
	for (int i = 0; i < NTHR; i++) {
		int k = atomic_exchange(&slot[i], -1);

		if (k >= 0 && close_range((unsigned)k, (unsigned)k, 0) == 0)
			hclosed++;
	}
	errno = e;
}

/* A kqueue with READ, WRITE, VNODE, PROC, SIGNAL, TIMER, USER and EMPTY
   knotes, their descriptors closed again (dropping the fd knotes). */
static int
make_kqueue(void)
{
	int kq = kqueue(), p[2], s[2], vf, n = 0;
	struct kevent ch[8];

	if (kq < 0 || pipe(p) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s))
		exit(3);
	if ((vf = open(path, O_RDONLY)) < 0)
		exit(3);
	EV_SET(&ch[n++], p[0], EVFILT_READ, EV_ADD, 0, 0, 0);
	EV_SET(&ch[n++], p[1], EVFILT_WRITE, EV_ADD, 0, 0, 0);
	EV_SET(&ch[n++], vf, EVFILT_VNODE, EV_ADD | EV_CLEAR, NOTE_WRITE, 0, 0);
	EV_SET(&ch[n++], child, EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, 0);
	EV_SET(&ch[n++], SIGUSR1, EVFILT_SIGNAL, EV_ADD, 0, 0, 0);
	EV_SET(&ch[n++], 1, EVFILT_TIMER, EV_ADD, 0, 1, 0);
	EV_SET(&ch[n++], 2, EVFILT_USER, EV_ADD, 0, 0, 0);
	EV_SET(&ch[n++], s[0], EVFILT_EMPTY, EV_ADD, 0, 0, 0);
	(void)kevent(kq, ch, n, NULL, 0, NULL);
	close(p[0]);
	close(p[1]);
	close(s[0]);
	close(s[1]);
	close(vf);
	return kq;
}

static void *
worker(void *a)
{
	long id = (long)a;
	struct kevent out[8], c;
	struct timespec ts = { 0, 200000 };

	while (!stop) {
		int k = make_kqueue(), old;

		made++;
		if ((old = atomic_exchange(&slot[id], k)) >= 0)
			close(old);
		for (int j = 0; j < 20; j++) {
			EV_SET(&c, 2, EVFILT_USER, 0, NOTE_TRIGGER, 0, 0);
			(void)kevent(k, &c, 1, out, 8, &ts);
		}
	}
	return NULL;
}

/* In the child: 1 if a descriptor of a kqueue's kinds is open. */
static int
child_has_kq_fds(void)
{
	char buf[4096], p[64], l[128];
	int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY), bad = 0;
	long n, o;

	while (d >= 0 && (n = syscall(SYS_getdents64, d, buf, sizeof(buf))) > 0)
		for (o = 0; o < n; ) {
			const char *name = buf + o + 19;	/* d_name */
			unsigned short reclen;
			ssize_t r;

			memcpy(&reclen, buf + o + 16, sizeof(reclen));
			o += reclen;
			if (name[0] == '.' || atoi(name) == d)
				continue;
			snprintf(p, sizeof(p), "/proc/self/fd/%s", name);
			if ((r = readlink(p, l, sizeof(l) - 1)) < 0)
				continue;
			l[r] = 0;
			if (strstr(l, "eventpoll") || strstr(l, "timerfd") ||
			    strstr(l, "inotify") || strstr(l, "pidfd"))
				bad = 1;
		}
	return bad;
}

static void *
forker(void *a)
{
	(void)a;
	while (!stop) {
		struct timespec t0, t1;
		pid_t p;
		int st;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		if ((p = fork()) == 0)
			_exit(child_has_kq_fds() ? 4 : 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9 > 3)
			slowfork++;
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 4)
			badchild++;
		forks++;
		usleep(2000);
	}
	return NULL;
}

/* SIGALRM blocked here: a sleep the signal cut short would misjudge. */
static void *
watchdog(void *a)
{
	int last = -1;
	struct timespec t = { 10, 0 };

	(void)a;
	while (!stop) {
		while (nanosleep(&t, &t) != 0 && errno == EINTR)
			;
		t.tv_sec = 10;
		if (!stop && made == last) {
			printf("a17: HANG: no kqueue made in 10 s (%d made)\n",
			    last);
			fflush(stdout);
			_exit(2);
		}
		last = made;
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	struct itimerval it = { { 0, 300 }, { 0, 300 } }, off;
	struct sigaction sa;
	pthread_t t[NTHR], wd, fk;
	sigset_t alrm;
	int base, after, kq0, seconds = argc > 1 ? atoi(argv[1]) : 5;
	struct kevent c;
	time_t end;

	signal(SIGUSR1, SIG_IGN);
	snprintf(path, sizeof(path), "/tmp/kq-a17.%d", (int)getpid());
	close(open(path, O_CREAT | O_RDWR, 0600));
	if ((child = fork()) == 0) {
		pause();
		_exit(0);
	}
	for (int i = 0; i < NTHR; i++)
		slot[i] = -1;
	/* The shared signal descriptor, made once for the process. */
	kq0 = kqueue();
	EV_SET(&c, SIGUSR1, EVFILT_SIGNAL, EV_ADD, 0, 0, 0);
	(void)kevent(kq0, &c, 1, NULL, 0, NULL);
	close(kq0);
	base = nfds();
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, NULL);
	pthread_create(&wd, NULL, watchdog, NULL);
	pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < NTHR; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	pthread_create(&fk, NULL, forker, NULL);
	end = time(NULL) + seconds;
	while (time(NULL) < end)
		usleep(100000);
	stop = 1;
	for (int i = 0; i < NTHR; i++)
		pthread_join(t[i], NULL);
	pthread_join(fk, NULL);
	memset(&off, 0, sizeof(off));
	setitimer(ITIMER_REAL, &off, NULL);
	for (int i = 0; i < NTHR; i++)
		if (slot[i] >= 0)
			close(slot[i]);
	close(kqueue());	/* reaps the retirements handlers put off */
	after = nfds();
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unlink(path);
	printf("a17: %d kqueues made, %d closed in the handler, %d forks "
	    "(%d children with a kqueue's descriptor, %d forks over 3 s); "
	    "descriptors %d before, %d after\n", (int)made, (int)hclosed,
	    (int)forks, (int)badchild, (int)slowfork, base, after);
	return after != base ? 1 : badchild ? 4 : slowfork ? 5 : 0;
}
