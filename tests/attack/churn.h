/*
 * churn.h -- the churn a16 and a17 share: NTHR threads make kqueues with a
 * knote of most filters, publish each in their slot (closing the one it
 * replaces) and wait on it in kevent(), while a SIGALRM handler (every
 * 300 us, on whichever thread the signal lands) takes kqueues from the
 * slots and closes them with the program's closer.  A watchdog thread, with SIGALRM
 * blocked, exits 2 after 10 s without a kqueue made.  churn_begin() sets it
 * all up and returns the descriptor count to come back to; churn_end()
 * stops it, closes what is left and returns the count after.  A program
 * with threads of its own that the handler may run on sets churn_join to
 * end them before the count: a handler still closing a kqueue there (its
 * inotify descriptor's release alone may take milliseconds) has not yet
 * closed its descriptors.
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
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#define NTHR	4

static _Atomic int slot[NTHR];
static atomic_int stop, made, hclosed;
static char path[64];
static pid_t child;
static const char *churn_name;
static int (*churn_closer)(int);
static void (*churn_join)(void);

static void
on_alarm(int s)
{
	int e = errno;

	(void)s;
	for (int i = 0; i < NTHR; i++) {
		int k = atomic_exchange(&slot[i], -1);

		if (k >= 0 && churn_closer(k) == 0)
			hclosed++;
	}
	errno = e;
}

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
			printf("%s: HANG: no kqueue made in 10 s (%d made)\n",
			    churn_name, last);
			fflush(stdout);
			_exit(2);
		}
		last = made;
	}
	return NULL;
}

static pthread_t churn_t[NTHR];

static int
churn_begin(const char *name, int (*closer)(int))
{
	struct itimerval it = { { 0, 300 }, { 0, 300 } };
	struct sigaction sa;
	pthread_t wd;
	sigset_t alrm;
	struct kevent c;
	int base, kq0;

	churn_name = name;
	churn_closer = closer;
	signal(SIGUSR1, SIG_IGN);
	snprintf(path, sizeof(path), "/tmp/kq-%s.%d", name, (int)getpid());
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
		pthread_create(&churn_t[i], NULL, worker, (void *)i);
	return base;
}

/* Lets the churn run for seconds, then stops it. */
static int
churn_end(int seconds)
{
	struct itimerval off;
	time_t end = time(NULL) + seconds;
	int after;

	while (time(NULL) < end)
		usleep(100000);
	stop = 1;
	for (int i = 0; i < NTHR; i++)
		pthread_join(churn_t[i], NULL);
	if (churn_join != NULL)
		churn_join();
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
	return after;
}
