/*
 * a12: EV_ONESHOT / EV_DISPATCH / EV_CLEAR / level / emulated-level
 * (READ EV_CLEAR + WRITE level on one socket) knotes on ~1500 ready
 * sockets, collected with eventlists of 1..4000.  Checks: no duplicate
 * (ident, filter) in one list; one-shot, dispatch and clear knotes are
 * reported exactly once overall (no new data arrives); every knote is
 * reported within a bounded number of calls (no starvation under
 * nevents = 1); level ones keep being reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define N 1500
static int sv[N][2];
static int seen_r[N], seen_w[N];
static int idx_of[70000];

int
main(int argc, char **argv)
{
	static const int sizes[] = { 1, 2, 7, 511, 512, 513, 4000 };
	struct rlimit rl = { 8192, 8192 };
	struct kevent *ev = calloc(4000, sizeof(*ev)), ch[2];
	struct timespec z = { 0, 0 };
	int kq, i, s, bad = 0, calls;

	setrlimit(RLIMIT_NOFILE, &rl);
	kq = kqueue();
	for (i = 0; i < N; i++) {
		unsigned short fl[] = { 0, EV_CLEAR, EV_DISPATCH, EV_ONESHOT, EV_CLEAR };

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) < 0) {
			perror("socketpair");
			return 2;
		}
		idx_of[sv[i][0]] = i;
		write(sv[i][1], "x", 1);
		EV_SET(&ch[0], sv[i][0], EVFILT_READ, EV_ADD | fl[i % 5], 0, 0, NULL);
		EV_SET(&ch[1], sv[i][0], EVFILT_WRITE, EV_ADD, 0, 0, NULL);
		if (kevent(kq, ch, i % 5 == 4 ? 2 : 1, NULL, 0, NULL) != 0) {
			perror("add");
			return 2;
		}
	}
	for (s = 0; s < 7; s++) {
		/* Under nevents = sizes[s], every level/emulated knote must come
		   round within a bounded number of calls. */
		int lvl_r[N] = { 0 }, lvl_w[N] = { 0 }, missing;
		int budget = (3 * N) / sizes[s] + 10;

		for (calls = 0; calls < budget; calls++) {
			int r = kevent(kq, NULL, 0, ev, sizes[s], &z), j, k;

			if (r < 0) { perror("kevent"); return 2; }
			for (j = 0; j < r; j++)
				for (k = j + 1; k < r; k++)
					if (ev[j].ident == ev[k].ident && ev[j].filter == ev[k].filter) {
						printf("DUP in list of %d (nevents %d): %lu/%d\n",
						    r, sizes[s], (unsigned long)ev[j].ident, ev[j].filter);
						bad++;
					}
			for (j = 0; j < r; j++) {
				int x = idx_of[ev[j].ident];

				if (ev[j].filter == EVFILT_READ) {
					seen_r[x]++;
					lvl_r[x]++;
				} else {
					seen_w[x]++;
					lvl_w[x]++;
				}
			}
		}
		for (i = 0, missing = 0; i < N; i++) {
			if (i % 5 == 0 && !lvl_r[i])
				missing++;
			if (i % 5 == 4 && !lvl_w[i])
				missing++;
		}
		if (missing) {
			printf("STARVED: nevents %d: %d level knotes not reported in %d calls\n",
			    sizes[s], missing, budget);
			bad++;
		}
	}
	for (i = 0; i < N; i++) {
		int m = i % 5;

		if ((m == 1 || m == 2 || m == 3 || m == 4) && seen_r[i] != 1) {
			printf("mode %d knote %d (fd %d) READ reported %d times (expected 1)\n",
			    m, i, sv[i][0], seen_r[i]);
			bad++;
		}
		if (m == 0 && seen_r[i] < 2) {
			printf("level knote %d reported %d times\n", i, seen_r[i]);
			bad++;
		}
	}
	free(ev);
	printf("a12: %d problems\n", bad);
	(void)argc; (void)argv;
	return bad != 0;
}
