/*
 * a5: descriptor exhaustion (RLIMIT_NOFILE) around kqueue(), EV_ADD of
 * timers/signals/vnode/regular files/procs, and the rebuild path.  Checks
 * error codes, that nothing leaks, and that the kqueue recovers once
 * descriptors are available.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/syscall.h>

static int bad;
#define CHECK(c, ...) do { if (!(c)) { printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); bad++; } } while (0)

static int
nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = -3;	/* . .. and the DIR's own */

	while ((e = readdir(d)) != NULL)
		n++;
	closedir(d);
	return n;
}

static int hogs[4096], nhogs;

/* Fill the table until exactly `leave` numbers are free. */
static void
fill(int leave)
{
	int t[4096], n = 0, i;

	for (;;) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0)
			break;
		t[n++] = fd;
	}
	for (i = 0; i < leave && n > 0; i++)
		close(t[--n]);
	for (i = 0; i < n; i++)
		hogs[nhogs++] = t[i];
}

static void
unfill(void)
{
	while (nhogs > 0)
		close(hogs[--nhogs]);
}

int
main(void)
{
	struct rlimit rl = { 64, 64 };
	int kq, base, r, i, e;
	struct kevent ch, ev[8];
	struct timespec z = { 0, 0 }, to = { 0, 300 * 1000 * 1000 };
	char path[] = "/tmp/kqa5XXXXXX";
	int file = mkstemp(path);

	unlink(path);
	setrlimit(RLIMIT_NOFILE, &rl);
	signal(SIGUSR2, SIG_IGN);
	base = nfds();

	/* (a) one free number: epoll fits, the doorbell does not. */
	fill(1);
	errno = 0;
	kq = kqueue();
	e = errno;
	CHECK(kq < 0 && e == EMFILE, "kqueue with 1 free fd: %d errno %d", kq, e);
	if (kq >= 0) close(kq);
	unfill();
	CHECK(nfds() == base, "leak after (a): %d vs %d", nfds(), base);

	/* (b) none free. */
	fill(0);
	kq = kqueue();
	e = errno;
	CHECK(kq < 0 && e == EMFILE, "kqueue with 0 free: %d errno %d", kq, e);
	unfill();

	/* (c) EV_ADD of sources that need a descriptor. */
	kq = kqueue();
	fill(0);
	EV_SET(&ch, 1, EVFILT_TIMER, EV_ADD, 0, 10, NULL);
	r = kevent(kq, &ch, 1, NULL, 0, NULL); e = errno;
	CHECK(r < 0 && (e == EMFILE || e == ENFILE), "timer add at EMFILE: %d %d", r, e);
	EV_SET(&ch, SIGUSR2, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	r = kevent(kq, &ch, 1, NULL, 0, NULL); e = errno;
	CHECK(r < 0 && e == EMFILE, "signal add at EMFILE: %d %d", r, e);
	EV_SET(&ch, file, EVFILT_VNODE, EV_ADD, NOTE_WRITE, 0, NULL);
	r = kevent(kq, &ch, 1, NULL, 0, NULL); e = errno;
	CHECK(r < 0 && e == EMFILE, "vnode add at EMFILE: %d %d", r, e);
	EV_SET(&ch, file, EVFILT_READ, EV_ADD, 0, 0, NULL);
	r = kevent(kq, &ch, 1, NULL, 0, NULL); e = errno;
	CHECK(r < 0 && e == EMFILE, "READ on file at EMFILE: %d %d", r, e);
	EV_SET(&ch, getpid(), EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, NULL);
	r = kevent(kq, &ch, 1, NULL, 0, NULL); e = errno;
	printf("  (proc add on self at EMFILE: %d errno %d)\n", r, r < 0 ? e : 0);
	/* The kqueue still works (user events need nothing). */
	EV_SET(&ch, 9, EVFILT_USER, EV_ADD, 0, 0, NULL);
	kevent(kq, &ch, 1, NULL, 0, NULL);
	EV_SET(&ch, 9, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
	r = kevent(kq, &ch, 1, ev, 8, &z);
	CHECK(r == 1 && ev[0].filter == EVFILT_USER, "user event at EMFILE: %d", r);
	r = kevent(kq, NULL, 0, ev, 8, &z);
	CHECK(r == 1, "level user event again: %d", r);
	EV_SET(&ch, 9, EVFILT_USER, EV_DELETE, 0, 0, NULL);
	kevent(kq, &ch, 1, NULL, 0, NULL);
	unfill();
	/* Recovered. */
	EV_SET(&ch, 1, EVFILT_TIMER, EV_ADD | EV_ONESHOT, 0, 10, NULL);
	r = kevent(kq, &ch, 1, ev, 8, &to);
	CHECK(r == 1 && ev[0].filter == EVFILT_TIMER, "timer after recovery: %d", r);
	close(kq);
	CHECK(nfds() == base, "leak after (c): %d vs %d", nfds(), base);

	/* (d) the rebuild path with no descriptor for the new set. */
	{
		int p[2], d, n;
		struct timespec t0, t1;

		kq = kqueue();
		pipe(p);
		EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
		kevent(kq, &ch, 1, NULL, 0, NULL);
		d = dup(p[0]);
		write(p[1], "x", 1);	/* readable for good: a level zombie */
		fill(0);
		/*
		 * A raw close (libkq's close() would drop the knote and its
		 * registration first, leaving no zombie to rebuild for), and
		 * the number taken again at once by a file nobody watches, so
		 * the table stays full.
		 */
		{
			int spare = hogs[--nhogs];

			syscall(SYS_close, p[0]);
			if (dup2(spare, p[0]) == p[0])
				hogs[nhogs++] = p[0];
			close(spare);
			hogs[nhogs++] = open("/dev/null", O_RDONLY);
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (n = 0; n < 5; n++) {
			r = kevent(kq, NULL, 0, ev, 8, &to);
			e = errno;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		CHECK(r < 0 && e == EMFILE, "zombie at EMFILE: %d errno %d", r, e);
		r = kevent(kq, NULL, 0, ev, 8, NULL);	/* no timeout: must not hang */
		e = errno;
		CHECK(r < 0 && e == EMFILE, "zombie at EMFILE, NULL timeout: %d errno %d", r, e);
		unfill();
		r = kevent(kq, NULL, 0, ev, 8, &to);
		CHECK(r == 0, "after recovery: %d errno %d", r, errno);
		close(d);
		close(p[1]);
		close(kq);
		CHECK(nfds() == base, "leak after (d): %d vs %d", nfds(), base);
		(void)t0; (void)t1;
	}

	/* (e) create/close cycles at the limit. */
	for (i = 0; i < 200; i++) {
		fill(i % 4);
		kq = kqueue();
		if (kq >= 0) {
			EV_SET(&ch, 1, EVFILT_TIMER, EV_ADD, 0, 1, NULL);
			kevent(kq, &ch, 1, NULL, 0, NULL);
			close(kq);
		}
		unfill();
	}
	CHECK(nfds() == base, "leak after (e): %d vs %d", nfds(), base);
	printf("a5: %d problems\n", bad);
	return bad != 0;
}
