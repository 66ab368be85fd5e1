/*
 * waitset.h -- one non-blocking wait over a fixed set of descriptors, for
 * every backend.  Used by the idle and allready scenarios, which differ
 * only in how many of the registered descriptors are ready.
 *
 * The descriptors are registered for reading once (kq: EV_ADD of
 * EVFILT_READ; epoll: EPOLL_CTL_ADD of EPOLLIN; poll: a pollfd array;
 * select: a master fd_set).  The timed loop makes wait calls with a zero
 * timeout and does nothing with the results but count them, so what is
 * measured is the call itself plus the work the API forces on its caller
 * (select() must copy its fd_set before each call).
 *
 * BK_EPOLL_DATA (epoll+data) is epoll plus what kq's `data` costs: after
 * each epoll_wait, one ioctl(FIONREAD) per returned descriptor, its value
 * stored and compared with `want` (mismatches counted in data_bad).
 */
#ifndef KQBENCH_WAITSET_H
#define KQBENCH_WAITSET_H

#include "bench.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/event.h>
#include <sys/ioctl.h>

struct waitset {
	int		 bk;
	int		 fd;		/* kq or epoll descriptor */
	int		 nfds;
	const int	*fds;
	int		 cap;		/* room for events per call */
	int		 expect;	/* events every call must return */
	int		 want;		/* epoll+data: bytes each must hold */
	struct kevent	*kev;
	struct epoll_event *eev;
	int		*nread;		/* epoll+data: FIONREAD per event */
	struct pollfd	*pfd;
	fd_set		 set;
	int		 maxfd;
	long		 calls;
	long		 bad;		/* calls that returned != expect */
	int		 got_min;	/* fewest events returned by a call */
	int		 got_max;
	int		 err;		/* errno of the first failed call */
	long		 data_bad;	/* epoll+data: FIONREAD != want */
};

static inline void
waitset_close(struct waitset *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->kev);
	free(w->eev);
	free(w->nread);
	free(w->pfd);
	w->fd = -1;
	w->kev = NULL;
	w->eev = NULL;
	w->nread = NULL;
	w->pfd = NULL;
}

/* True when select() can watch these descriptors. */
static inline int
waitset_select_ok(const int *fds, int nfds)
{
	for (int i = 0; i < nfds; i++)
		if (fds[i] >= FD_SETSIZE)
			return 0;
	return 1;
}

/* Returns 0, or -1 with errno set.  `want` starts at 0. */
static inline int
waitset_open(struct waitset *w, int bk, const int *fds, int nfds, int expect)
{
	int cap = expect > 64 ? expect : 64;

	memset(w, 0, sizeof(*w));
	w->bk = bk;
	w->fd = -1;
	w->fds = fds;
	w->nfds = nfds;
	w->expect = expect;
	w->cap = cap;
	w->got_min = INT32_MAX;
	w->got_max = -1;
	switch (bk) {
	case BK_KQ: {
		struct kevent ch[256];
		int k = 0;

		if (!(w->kev = calloc((size_t)cap, sizeof(*w->kev))))
			goto fail;
		if ((w->fd = kqueue()) < 0)
			goto fail;
		for (int i = 0; i < nfds; i++) {
			EV_SET(&ch[k], fds[i], EVFILT_READ, EV_ADD, 0, 0,
			    (void *)(intptr_t)i);
			if (++k == 256 || i == nfds - 1) {
				if (kevent(w->fd, ch, k, NULL, 0, NULL) < 0)
					goto fail;
				k = 0;
			}
		}
		break;
	}
	case BK_EPOLL_DATA:
		if (!(w->nread = calloc((size_t)cap, sizeof(*w->nread))))
			goto fail;
		/* FALLTHROUGH */
	case BK_EPOLL:
		if (!(w->eev = calloc((size_t)cap, sizeof(*w->eev))))
			goto fail;
		if ((w->fd = epoll_create1(EPOLL_CLOEXEC)) < 0)
			goto fail;
		for (int i = 0; i < nfds; i++) {
			struct epoll_event ee;

			ee.events = EPOLLIN;
			ee.data.u64 = (uint64_t)i;
			if (epoll_ctl(w->fd, EPOLL_CTL_ADD, fds[i], &ee) < 0)
				goto fail;
		}
		break;
	case BK_POLL:
		if (!(w->pfd = calloc((size_t)(nfds ? nfds : 1),
		    sizeof(*w->pfd))))
			goto fail;
		for (int i = 0; i < nfds; i++) {
			w->pfd[i].fd = fds[i];
			w->pfd[i].events = POLLIN;
		}
		break;
	case BK_SELECT:
		if (!waitset_select_ok(fds, nfds)) {
			errno = EBADF;
			goto fail;
		}
		FD_ZERO(&w->set);
		w->maxfd = -1;
		for (int i = 0; i < nfds; i++) {
			FD_SET(fds[i], &w->set);
			if (fds[i] > w->maxfd)
				w->maxfd = fds[i];
		}
		break;
	}
	return 0;
fail:
	{
		int e = errno;

		waitset_close(w);
		errno = e;
	}
	return -1;
}

static inline void
waitset_count(struct waitset *w, int got)
{
	w->calls++;
	if (got != w->expect)
		w->bad++;
	if (got < w->got_min)
		w->got_min = got;
	if (got > w->got_max)
		w->got_max = got;
}

/* bench_loop_fn: `iters` wait calls with a zero timeout. */
static inline int
waitset_loop(void *arg, long iters)
{
	static const struct timespec zero = { 0, 0 };
	struct waitset *w = arg;

	for (long it = 0; it < iters; it++) {
		struct timeval tv = { 0, 0 };
		fd_set rs;
		int m = -1;

		switch (w->bk) {
		case BK_KQ:
			m = kevent(w->fd, NULL, 0, w->kev, w->cap, &zero);
			break;
		case BK_EPOLL:
			m = epoll_wait(w->fd, w->eev, w->cap, 0);
			break;
		case BK_EPOLL_DATA:
			m = epoll_wait(w->fd, w->eev, w->cap, 0);
			for (int j = 0; j < m; j++) {
				int *np = &w->nread[j];

				if (ioctl(w->fds[w->eev[j].data.u64], FIONREAD,
				    np) != 0 || *np != w->want)
					w->data_bad++;
			}
			break;
		case BK_POLL:
			m = poll(w->pfd, (nfds_t)w->nfds, 0);
			break;
		case BK_SELECT:
			rs = w->set;
			m = select(w->maxfd + 1, &rs, NULL, NULL, &tv);
			break;
		}
		if (m < 0) {
			if (errno == EINTR)
				continue;
			w->err = errno;
			return -1;
		}
		waitset_count(w, m);
	}
	return 0;
}

#endif /* !KQBENCH_WAITSET_H */
