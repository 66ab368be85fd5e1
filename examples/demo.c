/*
 * demo -- the kqueue paper's Figure 5 loop, echoing over a socketpair.
 *
 * A child process writes N messages into one end of a socketpair and reads
 * the echoes; the parent watches its end with EVFILT_READ (level-triggered,
 * data = bytes readable) and echoes what it reads, dispatching through
 * udata as in the paper's Figure 6.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/event.h>

#define NMSG	1000

static long echoed;

static void
readable_fd(struct kevent *ev)
{
	char buf[4096];
	ssize_t n = read((int)ev->ident, buf,
	    ev->data < (int64_t)sizeof(buf) ? (size_t)ev->data : sizeof(buf));

	if (n > 0 && write((int)ev->ident, buf, (size_t)n) == n)
		echoed += n;
}

int
main(void)
{
	struct kevent ch[1], ev[8];
	struct timespec timeout = { 5, 0 };
	int sv[2], kq, i, n, done = 0;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		err(1, "socketpair");
	pid = fork();
	if (pid == 0) {
		char msg[32], back[32];

		close(sv[0]);
		for (i = 0; i < NMSG; i++) {
			int len = snprintf(msg, sizeof(msg), "message %d\n", i);
			ssize_t got = 0;

			if (write(sv[1], msg, (size_t)len) != len)
				_exit(1);
			while (got < len) {
				ssize_t r = read(sv[1], back + got,
				    (size_t)(len - got));
				if (r <= 0)
					_exit(1);
				got += r;
			}
			if (memcmp(msg, back, (size_t)len) != 0)
				_exit(1);
		}
		_exit(0);
	}
	close(sv[1]);
	if ((kq = kqueue()) < 0)
		err(1, "kqueue");
	EV_SET(&ch[0], sv[0], EVFILT_READ, EV_ADD, 0, 0, (void *)readable_fd);
	while (!done) {
		n = kevent(kq, ch, done ? 0 : 1, ev, 8, &timeout);
		if (n <= 0)
			errx(1, "kevent: %s", n == 0 ? "timeout" : "error");
		ch[0].flags = 0;	/* registered once; filter 0 is skipped */
		ch[0].filter = 0;
		for (i = 0; i < n; i++) {
			void (*fcn)(struct kevent *) =
			    (void (*)(struct kevent *))ev[i].udata;

			if (ev[i].flags & EV_ERROR)
				errx(1, "EV_ERROR: %s", strerror((int)ev[i].data));
			if ((ev[i].flags & EV_EOF) && ev[i].data == 0)
				done = 1;
			else
				fcn(&ev[i]);
		}
	}
	waitpid(pid, &i, 0);
	printf("demo: echoed %ld bytes in %d messages over kqueue; child %s\n",
	    echoed, NMSG, WIFEXITED(i) && WEXITSTATUS(i) == 0 ? "ok" : "FAILED");
	return !(WIFEXITED(i) && WEXITSTATUS(i) == 0);
}
