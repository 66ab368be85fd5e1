/*
 * pkgtest -- a program built against an installed kq with nothing but
 * what the packages provide (pkg-config or CMake's find_package(kq)):
 * tools/deb-smoke.sh builds it twice and runs it.  Each check prints one
 * line; the exit status is the number of failed checks.
 *
 * It goes through the exported API and the functions libkq takes over from
 * the C library: EVFILT_READ with its byte count, EVFILT_TIMER,
 * EVFILT_USER, EVFILT_SIGNAL under SIG_IGN (sigaction from libkq), and
 * close() of a watched descriptor removing its knote while a dup() keeps
 * the pipe open (close from libkq).
 */
#include <sys/types.h>
#include <sys/event.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int failed;

static void
check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failed++;
}

int
main(void)
{
	struct timespec ts = { 2, 0 }, zero = { 0, 0 };
	struct kevent ch, ev;
	int kq = kqueue(), p[2], keep;

	check(kq >= 0, "kqueue()");
	if (kq < 0 || pipe(p) != 0)
		return 1;

	EV_SET(&ch, p[0], EVFILT_READ, EV_ADD, 0, 0, NULL);
	check(write(p[1], "hello", 5) == 5 &&
	    kevent(kq, &ch, 1, &ev, 1, &ts) == 1 && ev.ident == (uintptr_t)p[0] &&
	    ev.filter == EVFILT_READ && ev.data == 5,
	    "EVFILT_READ on a pipe, data = 5 bytes");

	keep = dup(p[0]);
	close(p[0]);
	check(kevent(kq, NULL, 0, &ev, 1, &zero) == 0,
	    "close() of the watched descriptor removes its knote (a dup keeps the pipe)");
	EV_SET(&ch, p[0], EVFILT_READ, EV_DELETE, 0, 0, NULL);
	check(kevent(kq, &ch, 1, NULL, 0, NULL) == -1 && (errno == ENOENT ||
	    errno == EBADF), "EV_DELETE after close() fails (the knote is gone)");
	close(keep);
	close(p[1]);

	EV_SET(&ch, 7, EVFILT_TIMER, EV_ADD | EV_ONESHOT, NOTE_MSECONDS, 20, NULL);
	check(kevent(kq, &ch, 1, &ev, 1, &ts) == 1 && ev.filter == EVFILT_TIMER &&
	    ev.ident == 7 && ev.data == 1, "EVFILT_TIMER one-shot 20 ms");

	EV_SET(&ch, 9, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
	kevent(kq, &ch, 1, NULL, 0, NULL);
	EV_SET(&ch, 9, EVFILT_USER, 0, NOTE_TRIGGER | NOTE_FFOR | 0x5, 0, NULL);
	check(kevent(kq, &ch, 1, &ev, 1, &ts) == 1 && ev.filter == EVFILT_USER &&
	    (ev.fflags & NOTE_FFLAGSMASK) == 0x5, "EVFILT_USER NOTE_TRIGGER with NOTE_FFOR");

	signal(SIGUSR1, SIG_IGN);
	EV_SET(&ch, SIGUSR1, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	kevent(kq, &ch, 1, NULL, 0, NULL);
	raise(SIGUSR1);
	raise(SIGUSR1);
	check(kevent(kq, NULL, 0, &ev, 1, &ts) == 1 && ev.filter == EVFILT_SIGNAL &&
	    ev.data == 2, "EVFILT_SIGNAL counts 2 signals under SIG_IGN");

	check(close(kq) == 0 && kevent(kq, NULL, 0, &ev, 1, &zero) == -1 &&
	    errno == EBADF, "close() of the kqueue: EBADF afterwards");
	printf("pkgtest: %d failed\n", failed);
	return failed;
}
