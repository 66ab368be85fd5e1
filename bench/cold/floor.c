/*
 * floor.c -- the least a kqueue over epoll can do for lighttpd's kqueue
 * handler: a measuring stick for bench/cold (docs/HTTPD.md), not a kqueue.
 *
 *   cc -O2 -shared -fPIC -o DIR/libkq.so.0 bench/cold/floor.c
 *   bench/cold/ab.sh LIBDIR_OF_KQ DIR     (kq against this floor)
 *
 * It exports kqueue() and kevent() for exactly what lighttpd does with
 * them: EVFILT_READ and EVFILT_WRITE, EV_ADD and EV_DELETE, a timeout, one
 * thread, one kqueue, descriptors below FL_MAXFD.  Every returned event
 * carries FreeBSD's data as kq computes it on this load (FIONREAD, and a
 * listening socket's queue length from TCP_INFO once FIONREAD failed on
 * it), so the system calls are kq's; what is missing is everything else:
 * no locks, no registry, no knotes, no staleness checks, no cancellation,
 * no error paths worth the name.  The difference between kq and this is
 * the cost of kq's generality on a request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include "../../include/sys/event.h"

#define FL_MAXFD	65536
#define FL_BATCH	64

static struct fl_fd {
	void	*udata[2];	/* READ, WRITE */
	uint8_t	 want;		/* bit 0 READ, bit 1 WRITE */
	uint8_t	 listener;	/* FIONREAD failed: TCP_INFO's queue */
} fl_tab[FL_MAXFD];

int
kqueue(void)
{
	return epoll_create1(EPOLL_CLOEXEC);
}

static int
fl_change(int kq, const struct kevent *c)
{
	struct epoll_event e = { 0 };
	struct fl_fd *f;
	int bit, had, op;

	if (c->ident >= FL_MAXFD ||
	    (c->filter != EVFILT_READ && c->filter != EVFILT_WRITE))
		return EINVAL;
	f = &fl_tab[c->ident];
	bit = c->filter == EVFILT_READ ? 1 : 2;
	had = f->want;
	if (c->flags & EV_ADD) {
		f->want |= bit;
		f->udata[bit - 1] = c->udata;
	} else if (c->flags & EV_DELETE) {
		if (!(f->want & bit))
			return ENOENT;
		f->want &= ~bit;
	}
	if (f->want == had)
		return 0;
	if (had == 0)
		f->listener = 0;
	op = f->want == 0 ? EPOLL_CTL_DEL : had == 0 ? EPOLL_CTL_ADD :
	    EPOLL_CTL_MOD;
	e.events = (f->want & 1 ? EPOLLIN | EPOLLRDHUP : 0) |
	    (f->want & 2 ? EPOLLOUT : 0);
	e.data.fd = (int)c->ident;
	return epoll_ctl(kq, op, (int)c->ident, &e) < 0 ? errno : 0;
}

static int64_t
fl_nread(int fd, struct fl_fd *f)
{
	struct tcp_info ti;
	socklen_t len = offsetof(struct tcp_info, tcpi_unacked) +
	    sizeof(ti.tcpi_unacked);
	int n;

	if (!f->listener) {
		if (ioctl(fd, FIONREAD, &n) == 0)
			return n;
		f->listener = 1;
	}
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0)
		return ti.tcpi_unacked;
	return 0;
}

int
kevent(int kq, const struct kevent *changelist, int nchanges,
    struct kevent *eventlist, int nevents, const struct timespec *timeout)
{
	struct epoll_event ev[FL_BATCH];
	int i, r, n = 0, ms;

	for (i = 0; i < nchanges; i++) {
		int e = fl_change(kq, &changelist[i]);

		if (e != 0) {
			errno = e;
			return -1;
		}
	}
	if (nevents <= 0)
		return 0;
	ms = timeout == NULL ? -1 : (int)(timeout->tv_sec * 1000 +
	    timeout->tv_nsec / 1000000);
	r = epoll_wait(kq, ev, nevents < FL_BATCH ? nevents : FL_BATCH, ms);
	if (r < 0)
		return -1;
	for (i = 0; i < r && n < nevents; i++) {
		int fd = ev[i].data.fd;
		struct fl_fd *f = &fl_tab[fd];
		uint16_t eof = ev[i].events & (EPOLLRDHUP | EPOLLHUP) ?
		    EV_EOF : 0;

		if ((f->want & 1) && (ev[i].events &
		    (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
			EV_SET(&eventlist[n], fd, EVFILT_READ, EV_ADD | eof, 0,
			    fl_nread(fd, f), f->udata[0]);
			n++;
		}
		if ((f->want & 2) && n < nevents && (ev[i].events &
		    (EPOLLOUT | EPOLLHUP | EPOLLERR))) {
			EV_SET(&eventlist[n], fd, EVFILT_WRITE, EV_ADD |
			    (ev[i].events & EPOLLHUP ? EV_EOF : 0), 0, 0,
			    f->udata[1]);
			n++;
		}
	}
	return n;
}
