/*
 * filt_fd.c -- EVFILT_READ, EVFILT_WRITE and EVFILT_EMPTY on descriptors.
 *
 * Readiness comes from the descriptor's epoll registration (fdreg.c); this
 * file turns an epoll event into FreeBSD's kevent: data (bytes readable,
 * connections waiting, space left, size - offset ...), EV_EOF and the
 * NOTE_LOWAT threshold.  The data computations cost one system call per
 * delivered event on the common descriptors (FIONREAD, or one
 * SO_MEMINFO/FIONREAD for write space), none more.
 *
 * All hooks run with kq_lock held.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/net_tstamp.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kq_int.h"
#include "fdreg.h"
#include "ksys.h"
#include "fault.h"

#ifndef SO_MEMINFO
#define SO_MEMINFO 55
#endif
#ifndef SK_MEMINFO_SNDBUF
#define SK_MEMINFO_RMEM_ALLOC	0
#define SK_MEMINFO_WMEM_ALLOC	2
#define SK_MEMINFO_SNDBUF	3
#define SK_MEMINFO_WMEM_QUEUED	5
#define SK_MEMINFO_VARS		9
#endif

/*
 * The kernel's struct tcp_info (linux/tcp.h) has grown past glibc's copy;
 * tcpi_bytes_acked (Linux 4.1) sits at byte 120 of it.
 */
#define TCPI_BYTES_ACKED_OFF	120
#define TCPI_WORDS		64

/*
 * kn_sdata is the NOTE_LOWAT mark of READ and WRITE knotes.  The capacity
 * of a pipe is cached in the descriptor's registration word (R_CAPMASK).
 */
static int64_t
pipe_cap(struct kqueue *kq, struct knote *kn)
{
	uint32_t v = (kn->kn_reg & R_CAPMASK) >> R_CAPSHIFT;
	int c, lg;

	if (v != 0)
		return (int64_t)4096 << (v - 1);
	c = fcntl((int)kn->kn_ident, F_GETPIPE_SZ);
	if (c <= 0)
		return 0;
	/* The kernel makes it a power of two of at least a page. */
	lg = __builtin_ctz((unsigned)c) - 12;
	if ((c & (c - 1)) == 0 && lg >= 0 && lg < 15)
		fdreg_set(kq, (int)kn->kn_ident, (kn->kn_reg & ~R_CAPMASK) |
		    ((uint32_t)(lg + 1) << R_CAPSHIFT));
	return c;
}

static int
fd_kind(struct kqueue *kq, struct knote *kn)
{
	struct stat st;
	int k = R_KIND(kn->kn_reg), fd = (int)kn->kn_ident, type = 0, r;
	socklen_t len = sizeof(type);

	if (k != K_UNKNOWN)
		return k;
	/*
	 * Sockets, what servers watch most, are told by SO_TYPE alone (one
	 * system call on a new connection's first event); anything else
	 * fails it with ENOTSOCK and is looked at with fstat.
	 */
	if ((r = ksys_getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len)) == 0) {
		k = K_SOCK;
		if (type == SOCK_DGRAM || type == SOCK_SEQPACKET ||
		    type == SOCK_RAW) {
			int dom = 0;

			/* AF_UNIX SEQPACKET's FIONREAD counts every record
			   already: a plain socket. */
			len = sizeof(dom);
			if (ksys_getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom,
			    &len) != 0 || dom != AF_UNIX)
				k = K_DGRAM;
			else if (type != SOCK_SEQPACKET)
				k = K_UDGRAM;
		}
	} else if (r != -ENOTSOCK || fstat(fd, &st) != 0)
		return K_UNKNOWN;
	else if (S_ISSOCK(st.st_mode))
		k = K_SOCK;
	else if (S_ISFIFO(st.st_mode))
		k = K_PIPE;
	else if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
		k = K_FILE;
	else {
		char name[32];

		k = K_OTHER;
		if (fd_anon_name(fd, name, sizeof(name)) == 1) {
			if (strcmp(name, "eventfd") == 0)
				k = K_EVENTFD;
			else if (strcmp(name, "eventpoll") == 0)
				k = K_KQUEUE;
		}
	}
	fdreg_set(kq, fd, (kn->kn_reg & ~R_KINDMASK) |
	    ((uint32_t)k << R_KINDSHIFT));
	return k;
}

/*
 * The value of an eventfd's counter, without consuming it: 1 with *v set,
 * or 0 when it cannot be read (its /proc file takes a descriptor: none may
 * be free).
 */
static int
eventfd_count(int fd, uint64_t *v)
{
	unsigned long long c;

	if (!fd_info_field(fd, "eventfd-count:", 16, &c))
		return 0;
	*v = c;
	return 1;
}

/*
 * A datagram socket's readable bytes as FreeBSD counts them: the payload
 * of every queued datagram (FIONREAD gives the first one's only).  The
 * queue is walked without consuming it, with the socket's peek offset
 * (SO_PEEK_OFF): a peek at offset o looks at the datagram that starts
 * there, and MSG_TRUNC makes it return that datagram's whole payload while
 * copying nothing.
 *   UDP moves the offset past each datagram it peeks at, so one
 *   recvmmsg() of DG_BATCH empty entries walks DG_BATCH datagrams;
 *   AF_UNIX moves it only by the bytes copied, so the offset is set before
 *   each peek (two system calls a datagram; its queue is short:
 *   net.unix.max_dgram_qlen).
 * The application's own peek offset is put back: -1 unless the program
 * set one on this socket in this process (peekoff.c: a value read before
 * the walk may be another process's walk's).
 * Linux finds the datagram at an offset by walking the queue from its
 * head, so a walk's time grows as the square of the queue's length (8 ms
 * for 2000 UDP datagrams, 41 ms for 4000: a server whose queue grows
 * under load would slow down as it grows).  So at most DG_WALK_MAX UDP
 * datagrams are counted, and past them the memory the whole queue takes
 * (SO_MEMINFO), if more, stands for the count: more than its payload,
 * never less,
 * for a program that reads what data says and waits for the next edge.
 * AF_UNIX charges a datagram to its sender, and the receiver cannot learn
 * that bound: its walk goes to DG_WALK_MAX_UNIX datagrams (a queue that
 * long is rare: net.unix.max_dgram_qlen, the sender's buffer), and
 * counts no further.  Walks of one socket are
 * serialised by a striped lock (a leaf lock, taken under kq_lock); an
 * application peeking at the socket from another thread during a walk
 * would see the offset (kevent.2 LINUX NOTES).
 *   The offset belongs to the socket, not to a process: another process
 * sharing the socket (a fork() child, a worker of a prefork server) walks
 * it too.  So a walk also holds a word shared with the fork() children of
 * the process (xlock.c, keyed by the descriptor number, which a child
 * inherits), waiting DG_XWAIT_NS at most: a walk of a process that is not
 * of the family, or under another number, or past that wait, may still
 * meet another.  A read of the socket during a walk moves the offset back
 * by what it took, so an undisturbed walk ends with the offset at or
 * below its total, and counts at least the head datagram's bytes
 * (FIONREAD's, passed in head).  A walk that finds otherwise met another
 * walk (the offset set under it: the queue walked twice, or from its end,
 * or the head counted over and over): it is walked again, DG_TRIES times
 * at most; if none was clean, the most any of them counted is returned
 * (more than the queue is safer than less for a program that reads what
 * data says, then waits for the next edge).  The count returned is never
 * below head, so a readable socket never reports an empty queue (a fork
 * child's walk that met its parent's once reported data 0).  After a walk met another, the offset
 * read at the start may have been the other's, and is not put back: it
 * is set to -1, since FreeBSD has no peek offset and a program written
 * for it never sets one.  Linux changes the offset without a lock, so a
 * read racing the store can still write its own result after it: the
 * offset is read once more and set to -1 again if so.
 * Returns -1 where the socket has no peek offset (raw sockets): the caller
 * keeps FIONREAD's.
 */
#define DG_BATCH	64	/* per recvmmsg, in the kqueue's kq_dgmsg */
#define DG_SMALL	4	/* on the stack, without kq_dgmsg */
#define DG_WALK_MAX	256	/* UDP: the walk's time grows as its square */
#define DG_WALK_MAX_UNIX 4096	/* AF_UNIX: no bound of the rest past it */
#define DG_STRIPES	64
#define DG_TRIES	3
#define DG_XWAIT_NS	50000000 /* for another process's walk (xlock.c) */

static kq_olock_t dg_stripe[DG_STRIPES];	/* olocks */

/*
 * In a fork() child (registry.c): a stripe held by a thread that is not in
 * the child is freed, or the child's first walk on it would wait for ever
 * (attack helper 24's F3); one the child's own thread holds (the fork came
 * from a signal handler that interrupted its walk) stays, for the walk to
 * release.
 */
void
kq_dgram_atfork_child(void)
{
	for (int i = 0; i < DG_STRIPES; i++)
		if (!kq_olock_mine(&dg_stripe[i]))
			atomic_store(&dg_stripe[i], 0);
}

/*
 * Take what a walk of fd's queue, or a change of its peek offset, holds:
 * the stripe lock of fd's number (threads of this process) and the shared
 * word (xlock.c: fork-related processes).  block: wait for the stripe;
 * else only try it (a caller holding others of kq's locks must not wait
 * for a thread that may wait for them).  xwait: the longest wait for the
 * word, 0 for none.  Returns 0, having taken nothing, when this thread
 * holds the stripe already (a signal handler that interrupted its own
 * walk) or the try failed; else 1, with *xheld kq_xlock_lock's answer
 * (0: going on without the word).  Release with dg_unlock(fd, *xheld).
 */
static int
dg_lock(int fd, int block, int64_t xwait, int *xheld)
{
	kq_olock_t *lk = &dg_stripe[(unsigned int)fd % DG_STRIPES];

	*xheld = 0;
	if (kq_olock_mine(lk))
		return 0;
	if (block)
		kq_olock_lock(lk);
	else if (!kq_olock_trylock(lk))
		return 0;
	*xheld = kq_xlock_lock(kq_xlock_slot((unsigned int)fd), xwait);
	return 1;
}

static void
dg_unlock(int fd, int xheld)
{
	if (xheld)
		kq_xlock_unlock(kq_xlock_slot((unsigned int)fd));
	kq_olock_unlock(&dg_stripe[(unsigned int)fd % DG_STRIPES]);
}

/*
 * The program's setsockopt(SO_PEEK_OFF) (peekoff.c), under the locks a
 * count holds, so that a count on another thread (or in a fork-related
 * process, under the same number) does not put back the offset it read
 * before the program's (attack helper 39's F4).  Not from a handler that
 * interrupted its thread's own count (the stripe is its): as it comes.
 */
int
kq_dgram_set_peek_off(int fd, const void *val, socklen_t len)
{
	int r, e, xheld = 0, locked;

	locked = fd >= 0 && dg_lock(fd, kq_tls.owned == 0, DG_XWAIT_NS,
	    &xheld);
	r = (int)syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_PEEK_OFF, val,
	    len);
	e = errno;
	if (locked)
		dg_unlock(fd, xheld);
	errno = e;
	return r;
}

static int
dg_set_off(int fd, int off)
{
	return kq_set_peek_off(fd, off);
}

/*
 * A peek failed: unless the queue was only empty, it took the socket's
 * pending error (Linux's recv() returns so_error once, MSG_PEEK or not),
 * which arrived after the caller saw no EPOLLERR.  It is kept for the
 * program's getsockopt(SO_ERROR) (sockerr.c); its recv() no longer fails
 * with it (kevent.2 LINUX NOTES).
 */
static int
dg_keep_error(int fd)
{
	int e = errno, took;

	took = e != EAGAIN && e != EWOULDBLOCK && e != EINTR && e != EBADF &&
	    e != ENOTSOCK && e != EINVAL && e != EFAULT && e != ENOMEM;
	if (took)
		kq_sockerr_keep(fd, e);
	errno = e;
	return took;
}

/*
 * One walk of fd's queue from offset 0 (the caller holds the stripe):
 * the payload counted, or -1 if the offset cannot be set.  *end is set if
 * a UDP walk reached the queue's end, *capped if a walk stopped at
 * DG_WALK_MAX datagrams with more queued, *met if a UDP walk stopped
 * there having met another (its count is not one).
 */
static int64_t
dgram_walk(struct kqueue *kq, int fd, int unix_domain, int *end,
    int *capped, int *erred, int *met)
{
	struct mmsghdr small[DG_SMALL], *m = small;
	int r = 0, i, walked = 0, batch = DG_SMALL;
	int64_t total = 0;
	char c;

	*end = 0;
	*capped = 0;
	*erred = 0;
	*met = 0;
	if (dg_set_off(fd, 0) != 0)
		return -1;
	if (unix_domain) {
		while (walked++ < DG_WALK_MAX_UNIX && total <= INT_MAX &&
		    (r = (int)kq_nc_recvfrom(fd, &c, 0,
		    MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT, NULL, NULL)) >= 0) {
			total += r;
			if (dg_set_off(fd, (int)total) != 0)
				break;
		}
		if (r >= 0 && walked > DG_WALK_MAX_UNIX) {
			r = (int)kq_nc_recvfrom(fd, &c, 0, MSG_PEEK |
			    MSG_TRUNC | MSG_DONTWAIT, NULL, NULL);
			*capped = r >= 0;
		}
		if (r < 0)
			*erred = dg_keep_error(fd);
		return total;
	}
	/*
	 * The headers are the kqueue's (kq_lock is held), not the stack's:
	 * this runs under a collection, on a thread whose stack may be
	 * PTHREAD_STACK_MIN, where a signal frame can come on top.  Without
	 * memory, DG_SMALL at a time.
	 */
	if (kq->kq_dgmsg == NULL)
		kq->kq_dgmsg = kq_malloc(DG_BATCH * sizeof(struct mmsghdr));
	if (kq->kq_dgmsg != NULL) {
		m = kq->kq_dgmsg;
		batch = DG_BATCH;
	}
	memset(m, 0, (size_t)batch * sizeof(*m));
	do {
		r = kq_nc_recvmmsg(fd, m, (unsigned int)batch,
		    MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
		for (i = 0; i < r; i++)
			total += m[i].msg_len;
		walked += r;
	} while (r > 0 && walked < DG_WALK_MAX);
	/* To the empty queue's EAGAIN, not a short batch: recvmmsg() ends a
	   batch short at an error, which it leaves for the next call. */
	*end = r <= 0;
	/*
	 * At the cap: one more peek tells whether anything is past it (the
	 * offset stays where it was if nothing is).  If something is, it is
	 * asked again at the total's offset, where the cap leaves the
	 * offset for the caller's check: a walk of another process that set
	 * the offset under this one (past xlock.c's wait) made this one
	 * count the queue over again up to the cap, and then nothing lies
	 * past the total.  Such a walk is no count (*met) and is walked
	 * again, rather than stand for a deep queue, whose bound is the
	 * queue's memory: 53 248 for 64 datagrams of 32 bytes in a test that
	 * two processes count at once, on a loaded machine.
	 */
	if (!*end) {
		r = kq_nc_recvmmsg(fd, m, 1,
		    MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
		*end = 1;
		if (r == 1) {
			*end = 0;
			if (total > INT_MAX || dg_set_off(fd, (int)total) != 0)
				return -1;
			r = kq_nc_recvmmsg(fd, m, 1,
			    MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
			*capped = r == 1;
			*met = r == 0 || (r < 0 && errno == EAGAIN);
			if (*capped && dg_set_off(fd, (int)total) != 0)
				return -1;
		}
	}
	/* An error ends a walk short: it is kept, and the walk is not a
	   count (attack helper 37's D1, D2). */
	if (r < 0)
		*erred = dg_keep_error(fd);
	return total;
}

/*
 * Can fd's error queue hold entries that come without an error (transmit
 * timestamps, zero-copy completions)?  They raise EPOLLERR with nothing a
 * read returns, so such a socket is walked as any other.  IP_RECVERR and
 * IPV6_RECVERR queue an ICMP error's details and set the socket's error
 * as well (attack helper 39's F1): not here.  Asked only when EPOLLERR is
 * up.  A timestamp asked for one send (a control message) is not seen
 * (kevent.2 LINUX NOTES).
 */
static int
dg_errqueue_quiet(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &v, &len) == 0 &&
	    (v & (SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_TX_SOFTWARE |
	    SOF_TIMESTAMPING_TX_SCHED | SOF_TIMESTAMPING_TX_ACK)))
		return 1;
	len = sizeof(v);
	return getsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &v, &len) == 0 &&
	    v != 0;
}

/*
 * More than the payload of the datagrams past a capped walk: the memory
 * the whole queue takes (each datagram's buffer holds its payload and
 * more), or 0 if the kernel will not say.
 */
static int64_t
dg_rest_bound(int fd)
{
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);

	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) != 0 ||
	    len <= SK_MEMINFO_RMEM_ALLOC * sizeof(uint32_t))
		return 0;
	return mi[SK_MEMINFO_RMEM_ALLOC];
}

static int64_t
dgram_total(struct kqueue *kq, int fd, int unix_domain, int head)
{
	int old = -1, cur, end, capped, erred, met, tries = 0, ok, clean;
	int xheld;
	pid_t pid = kq_pid();
	int64_t best = head;
	socklen_t len = sizeof(old);
	int64_t total, count, rest;

	/*
	 * A signal handler that interrupted this thread's walk (its stripe
	 * lock held, the peek offset moved) keeps FIONREAD's count rather
	 * than wait for itself (attack helper 21's r5 hung).  So does one
	 * that interrupted its thread holding any other of kq's locks (this
	 * walk's caller holds kq_lock: one) when another thread holds the
	 * stripe: that thread may be a handler's own, waiting for a lock
	 * the interrupted code holds (attack helper 25's F2: two threads'
	 * handlers waited for each other's stripes).
	 */
	if (__builtin_expect(kq_tls.owned > 1, 0) ?
	    !dg_lock(fd, 0, 0, &xheld) :
	    !dg_lock(fd, 1, DG_XWAIT_NS, &xheld))
		return -1;
	/* Read under the locks: before them, it may be another walk's. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &old, &len) != 0) {
		dg_unlock(fd, xheld);
		return -1;
	}
	do {
		if ((total = dgram_walk(kq, fd, unix_domain, &end,
		    &capped, &erred, &met)) < 0) {
			dg_unlock(fd, xheld);
			return -1;
		}
		cur = -1;
		len = sizeof(cur);
		if (getsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &cur, &len) != 0)
			cur = -1;
		/*
		 * A UDP walk that reached the end leaves the offset at the
		 * queue's payload as it is now: a read during the walk moved
		 * it back by what it took, where the walk's own sum still
		 * holds what was read.
		 */
		count = end ? cur : total;
		ok = !erred && !met && count >= head && count <= INT_MAX &&
		    cur >= 0 && (end || cur <= total);
		/* The most any walk counted: too much is safer than too
		   little for a program that reads what data says and then
		   waits for the next edge (EV_CLEAR). */
		if (count <= INT_MAX && count > best)
			best = count;
	} while (!ok && ++tries < DG_TRIES);
	/*
	 * The offset read at the start may have been another walk's: when a
	 * walk moved the offset forward under this one (or set it), when
	 * this one went on without the shared word (xheld 0: another
	 * process's walk outlasted the wait), or took it from a holder that
	 * gave it up (2: one killed or stopped mid-walk); or when this is
	 * the fork() child of the process that began it (a signal handler
	 * forked in the middle: the parent's copy of the walk goes on too).
	 */
	clean = ok && cur <= total && xheld == 1 && kq_pid() == pid;
	if (!clean || !kq_peek_off_used(fd))
		old = -1;
	(void)dg_set_off(fd, old);
	/*
	 * A read on another thread that loaded the offset before the store
	 * above writes its own result after it (Linux updates the offset
	 * without a lock): when reads were seen during the walk (the offset
	 * came back below the total), put -1 back once more if so.
	 */
	if (old < 0 && ok && cur < total) {
		cur = 0;
		len = sizeof(cur);
		if (getsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &cur, &len) == 0 &&
		    cur >= 0)
			(void)dg_set_off(fd, -1);
	}
	dg_unlock(fd, xheld);
	if (!ok)
		count = best;
	/* Past the cap, or no walk clean and the last one met another at
	   the cap: more than the payload rather than less (a program that
	   reads what data says, then waits for the next edge).  The queue's
	   memory bounds all of it, the part counted included. */
	if ((capped || (!ok && met)) && (rest = dg_rest_bound(fd)) > count)
		count = rest;
	return count;
}

/*
 * fflags of an EV_EOF report, as FreeBSD's socket filters: the socket's
 * pending error (so_error), 0 for everything else.  Linux clears the error
 * when it is read; sockerr.c keeps it for the application's
 * getsockopt(SO_ERROR).  mask is the epoll mask that showed the end of
 * file: EPOLLERR says the kernel holds an error.
 */
static uint32_t
sock_eof_error(struct kqueue *kq, struct knote *kn, uint32_t mask)
{
	/*
	 * Without EPOLLERR the kernel holds no error, and only one kq kept
	 * earlier can be reported: sockerr.c checks it is this socket's, and
	 * makes no system call while it keeps none.  So the descriptor's
	 * kind is not asked: a connection's end of file, the last event of
	 * most of them, costs no SO_TYPE.
	 */
	if (!(mask & EPOLLERR))
		return (uint32_t)kq_sockerr((int)kn->kn_ident, 0);
	if (!k_is_socket(fd_kind(kq, kn)))
		return 0;
	return (uint32_t)kq_sockerr((int)kn->kn_ident, 1);
}

/*
 * Connections waiting on socket kn, which refused FIONREAD (or is known as
 * a listener and was not asked).  Returns the count, with *listener set if
 * kn is a listening socket; or -1 if kn was recorded as a TCP listener but
 * no longer listens (connect() with AF_UNSPEC made it a plain socket
 * again): the caller then counts bytes.  A TCP listener reports its accept
 * queue's length (TCP_INFO); a listener of another family (AF_UNIX) 1 or 0
 * from poll(), Linux having no cheap count.  Either is recorded the first
 * time (K_LISTEN, K_ULISTEN: fdreg_kind), so that its later events go
 * straight here, skipping the FIONREAD that fails.  Another socket that
 * refuses FIONREAD (netlink ...) reports 1, as before it was looked at.
 */
static int64_t
listen_backlog(struct kqueue *kq, struct knote *kn, int *listener)
{
	struct tcp_info ti;
	/* Only the state and the queue length: the kernel copies no more,
	   and the rest of ti stays untouched (cold stack lines). */
	socklen_t len = offsetof(struct tcp_info, tcpi_unacked) +
	    sizeof(ti.tcpi_unacked);
	int fd = (int)kn->kn_ident, k = R_KIND(kn->kn_reg), on = 0, r;

	*listener = 0;
	if (k != K_ULISTEN) {
		if (ksys_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0) {
			if (ti.tcpi_state == 10 /* TCP_LISTEN */) {
				if (k != K_LISTEN)
					fdreg_kind(kq, fd, K_LISTEN);
				*listener = 1;
				return ti.tcpi_unacked;
			}
			if (k == K_LISTEN) {
				fdreg_kind(kq, fd, K_SOCK);
				return -1;
			}
			return 1;
		}
		len = sizeof(on);
		if (ksys_getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) != 0 ||
		    !on)
			return 1;
		fdreg_kind(kq, fd, K_ULISTEN);
	}
	/* An AF_UNIX listener cannot stop listening. */
	*listener = 1;
	r = fd_poll(fd, POLLIN);
	return r > 0 && (r & EPOLLIN) ? 1 : 0;
}

static int
filt_fdattach(struct kqueue *kq, struct knote *kn)
{
	int e;

	/*
	 * An EV_CLEAR knote's registration is edge-triggered, and what it
	 * waits for depends on the descriptor's kind (fdreg_want: an
	 * eventfd's both directions), so the kind is learnt now rather
	 * than at the first event -- the same system call, made earlier.
	 */
	if ((kn->kn_flags & EV_CLEAR) && R_KIND(kn->kn_reg) == K_UNKNOWN &&
	    (kn->kn_filter == EVFILT_READ || kn->kn_filter == EVFILT_WRITE))
		(void)fd_kind(kq, kn);
	e = fdreg_attach(kq, kn);

	if (e == EINVAL && (kn->kn_flags & EV_WAKEONE))
		return EINVAL;
	/*
	 * READ on a regular file is woken by the kqueue's inotify instance:
	 * without it the file's growth would never be reported, so its
	 * failure (EMFILE, ENOSPC, ENOMEM) is this EV_ADD's.
	 */
	if (e == 0 && kn->kn_filter == EVFILT_READ &&
	    (kn->kn_reg & R_NOPOLL) && R_KIND(kn->kn_reg) == K_FILE)
		e = kq_inotify_watch(kq, kn);
	return e;
}

/*
 * An EVFILT_EMPTY knote is also on its kqueue's kq_empty list (kq_lock),
 * from a successful attach to its detach.  Linux does not wake pollers
 * when the last byte is acknowledged, so the scan re-checks these knotes
 * every few milliseconds (while kq_empty is not NULL); the list makes that cost the EMPTY
 * knotes, not a walk of every descriptor's chain.
 */
struct kn_empty {
	struct knote	  ke_kn;	/* first: the engine's knote */
	struct kn_empty	 *ke_next;
	struct kn_empty	**ke_prevp;	/* NULL while not on the list */
	int		  ke_woken;	/* a write-space wake-up since the
					   last report (empty_ready) */
	uint32_t	  ke_gen;	/* its registration's tag there */
};

/*
 * Without TCP's count of acknowledged bytes, a send buffer that filled
 * and drained between two checks looks as if nothing happened, and an
 * EV_CLEAR knote would miss that transition to empty.  The socket's
 * write-space wake-ups tell: the kernel wakes a socket's waiters for
 * writing when its peer (or the device) frees what it had sent.  So every
 * EMPTY knote's descriptor is also in a second epoll set of the kqueue's,
 * for EPOLLOUT, edge-triggered: one event a wake-up.  That set is the
 * internal source KQ_SRC_EMPTY, made with the first EMPTY knote; when it
 * is ready, empty_ready marks each woken knote (ke_woken) and queues it
 * for a check.  A registration's data is the descriptor number and a tag
 * of the knote's (ke_gen, from kq_empty_gen): a file closed behind kq's
 * back while a dup() keeps it stays registered under its number, and the
 * tag keeps its wake-ups from marking a later EMPTY knote on that number,
 * which would then report its own empty socket again.
 */
static void
empty_drain(struct kqueue *kq, struct kqsrc *src, int skip)
{
	struct epoll_event ev[64];
	int i, r;

	do {
		r = ksys_epoll_poll(src->ks_fd, ev, 64);
		for (i = 0; i < r; i++) {
			int fd = (int)(uint32_t)ev[i].data.u64;
			struct knote *kn = fd == skip ? NULL :
			    knote_lookup(kq, (uintptr_t)fd, EVFILT_EMPTY, 1);

			if (kn == NULL || ((struct kn_empty *)(void *)kn)->
			    ke_gen != (uint32_t)(ev[i].data.u64 >> 32))
				continue;
			((struct kn_empty *)(void *)kn)->ke_woken = 1;
			if (!(kn->kn_status & KN_DISABLED))
				knote_enqueue(kq, kn);
		}
	} while (r == 64);
}

static void
empty_ready(struct kqueue *kq, struct kqsrc *src, uint32_t events)
{
	(void)events;
	empty_drain(kq, src, -1);
}

/*
 * Make the kqueue's KQ_SRC_EMPTY set.  0 or an errno.  Under
 * kq_mkfd_begin() (see registry.c): from epoll_create1() to its claim by
 * kq_src_add() no fork() child may be made nor closefrom() act, or the
 * child would keep the set and a closefrom() would close kq's descriptor.
 */
static int
empty_source(struct kqueue *kq)
{
	int fd, e = 0;

	kq_mkfd_begin();
	fd = KQ_FDCALL(epoll_create1(EPOLL_CLOEXEC));
	if (fd < 0)
		e = errno;
	else if ((e = kq_src_add(kq, KQ_SRC_EMPTY, fd, empty_ready)) != 0)
		kq_close_raw(fd);
	kq_mkfd_end();
	return e;
}

/*
 * Watch kn's descriptor for write-space wake-ups.  0 or an errno.  The
 * set exists: filt_emptymodify made it before kn was linked.
 */
static int
empty_watch(struct kqueue *kq, struct knote *kn)
{
	struct kn_empty *ke = (struct kn_empty *)(void *)kn;
	struct kqsrc *src = &kq->kq_src[KQ_SRC_EMPTY];
	struct epoll_event ev;
	int e;

	KQ_ASSERT(src->ks_ready != NULL);
	ke->ke_gen = ++kq->kq_empty_gen;
	ev.events = EPOLLOUT | EPOLLET;
	ev.data.u64 = (uint64_t)ke->ke_gen << 32 | (uint32_t)kn->kn_ident;
	e = ksys_epoll_ctl(src->ks_fd, EPOLL_CTL_ADD, (int)kn->kn_ident, &ev);
	if (e == -EEXIST)	/* the file is there already: retag it */
		e = ksys_epoll_ctl(src->ks_fd, EPOLL_CTL_MOD,
		    (int)kn->kn_ident, &ev);
	if (e != 0)
		return -e;
	/* The event epoll makes at once for a writable socket is its state,
	   not a wake-up: consumed here (the others' are passed on). */
	empty_drain(kq, src, (int)kn->kn_ident);
	return 0;
}

/* Once per watched knote: at its detach, or when its attach fails after
   empty_watch (a failed attach is not detached). */
static void
empty_unwatch(struct kqueue *kq, struct knote *kn)
{
	struct epoll_event ev;

	if (kq->kq_dead)	/* the set goes with the kqueue */
		return;
	/* The number is still the knote's file: close() drops knotes
	   before it closes (close.c). */
	(void)ksys_epoll_ctl(kq->kq_src[KQ_SRC_EMPTY].ks_fd, EPOLL_CTL_DEL,
	    (int)kn->kn_ident, &ev);
}

static void
empty_link(struct kqueue *kq, struct knote *kn)
{
	struct kn_empty *ke = (struct kn_empty *)(void *)kn;

	if ((ke->ke_next = kq->kq_empty) != NULL)
		ke->ke_next->ke_prevp = &ke->ke_next;
	ke->ke_prevp = &kq->kq_empty;
	kq->kq_empty = ke;
}

static void
empty_unlink(struct kqueue *kq, struct knote *kn)
{
	struct kn_empty *ke = (struct kn_empty *)(void *)kn;

	if (ke->ke_prevp == NULL)
		return;
	if ((*ke->ke_prevp = ke->ke_next) != NULL)
		ke->ke_next->ke_prevp = ke->ke_prevp;
	ke->ke_prevp = NULL;
}

void
kq_empty_repoll(struct kqueue *kq)
{
	struct kn_empty *ke;

	for (ke = kq->kq_empty; ke != NULL; ke = ke->ke_next)
		if (!(ke->ke_kn.kn_status & KN_DISABLED))
			knote_enqueue(kq, &ke->ke_kn);
}

static int
filt_fddetach(struct kqueue *kq, struct knote *kn)
{
	if (kn->kn_filter == EVFILT_EMPTY) {
		empty_unlink(kq, kn);
		empty_unwatch(kq, kn);
	}
	if (R_KIND(kn->kn_reg) == K_FILE)
		kq_inotify_unwatch(kq, kn);
	return fdreg_detach(kq, kn);
}

static int
filt_fdmodify(struct kqueue *kq, struct knote *kn, const struct kevent *kev)
{
	kn->kn_sfflags = kev->fflags;
	kn->kn_sdata = kev->data < 0 ? 0 : kn_clamp32(kev->data);
	/* EV_ADD of a WRITE knote re-learns the pipe capacity (F_SETPIPE_SZ). */
	if (kn->kn_filter == EVFILT_WRITE && (kev->flags & EV_ADD) &&
	    (kn->kn_reg & R_CAPMASK))
		fdreg_set(kq, (int)kn->kn_ident, kn->kn_reg & ~R_CAPMASK);
	return 0;
}

/* Regular files and directories: size - offset, as FreeBSD's vnodes. */
static int
file_read_event(struct kqueue *kq, struct knote *kn, struct kevent *out)
{
	struct stat st;
	off_t off;
	int fd = (int)kn->kn_ident;

	if (fstat(fd, &st) != 0)
		return errno == EBADF ? -1 : 0;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		/* A device epoll cannot watch: poll(2) calls it ready. */
		out->data = 0;
		return 1;
	}
	off = lseek(fd, 0, SEEK_CUR);
	if (off < 0)
		off = 0;
	out->data = (int64_t)st.st_size - (int64_t)off;
	/* Wake up when the file is written to (growth after EOF, EV_CLEAR). */
	(void)kq_inotify_watch(kq, kn);
	return out->data != 0 || (kn->kn_sfflags & NOTE_FILE_POLL);
}

/*
 * Look at fd's readability again (poll): 1 with *mask and *eof updated if
 * it is readable, 0 if not, -1 if the number is closed.
 */
static int
read_repoll(int fd, uint32_t *mask, int *eof)
{
	int r = fd_poll(fd, POLLIN | POLLRDHUP);

	if (r < 0)
		return -1;
	if (!(r & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return 0;
	*mask = (uint32_t)r;
	*eof = (r & (EPOLLRDHUP | EPOLLHUP)) != 0;
	return 1;
}

static int
filt_read(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	int fd = (int)kn->kn_ident, n, eof, k, r, stale, pre;
	int lowat = (kn->kn_sfflags & NOTE_LOWAT) != 0, listener;
	int64_t data;

	if (kn->kn_reg & R_NOPOLL)
		return file_read_event(kq, kn, out);
	/* KQ_HINT_NREAD: the FIONREAD count was taken already. */
	pre = (hint & KQ_HINT_NREAD) != 0;
	hint &= ~KQ_HINT_NREAD;
	/*
	 * A stale mask (KQ_HINT_STALE) is trusted only for EPOLLIN, and
	 * only once a byte count confirms it: an end of file or an error in
	 * it may belong to the file the number named before.
	 */
	stale = (hint & KQ_HINT_STALE) != 0;
	hint &= ~KQ_HINT_STALE;
	if (hint == 0 || (stale &&
	    (hint & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))) {
		if ((r = fd_poll(fd, POLLIN | POLLRDHUP)) < 0)
			return -1;
		hint = (uint32_t)r;
		stale = 0;
	}
	if (!(hint & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return 0;
	eof = (hint & (EPOLLRDHUP | EPOLLHUP)) != 0;
	if (pre) {
		r = out->data < 0 ? (int)out->data : 0;
		n = r == 0 ? (int)out->data : 0;
	} else if (k_is_listener(R_KIND(kn->kn_reg)))
		r = -EINVAL;	/* what FIONREAD says of a listener */
	else
count:
		r = ksys_ioctl(fd, FIONREAD, &n);
	if (r == 0) {
		/*
		 * Nothing queued: another thread may have read it since
		 * epoll reported it (or since the count taken before the
		 * lock).  Look again, and count again if it is readable:
		 * FreeBSD never reports an empty pipe or stream; only a
		 * datagram socket (an empty datagram) or a pending error is
		 * readable with nothing to read.
		 */
		if (n == 0 && !eof) {
			if ((r = read_repoll(fd, &hint, &eof)) <= 0)
				return r;
			if (!eof && !(hint & EPOLLERR) &&
			    ksys_ioctl(fd, FIONREAD, &n) == 0 && n == 0 &&
			    (k = fd_kind(kq, kn)) != K_DGRAM && k != K_UDGRAM)
				return 0;
		}
		data = n;
		/*
		 * A datagram socket: every queued datagram's payload; at an
		 * end of file, 0.  A datagram socket reaches end of file by a
		 * shutdown of its own reading side, which on FreeBSD discards
		 * the queue (sorflush), where Linux keeps it.  So the kind is
		 * not asked at an end of file with nothing counted: that is
		 * 0 either way, and a connection's last event needs no
		 * SO_TYPE.
		 */
		if ((n > 0 || !eof) &&
		    ((k = fd_kind(kq, kn)) == K_DGRAM || k == K_UDGRAM)) {
			/*
			 * With EPOLLERR, unless the socket keeps an error
			 * queue (below), it holds an error (a connected UDP
			 * socket's ICMP port unreachable, an AF_UNIX peer
			 * gone), which any peek would take from the
			 * program's next recv(): not walked.  Linux's recv()
			 * returns the error before the datagrams, FreeBSD's
			 * after them, so a program that reads as much as
			 * data says must be told more than the head (attack
			 * helper 37's D3): the queue's memory, which bounds
			 * its payload (UDP; AF_UNIX has none here; with
			 * IP_RECVERR, its error queue's entries too).  A
			 * socket asking for transmit timestamps or zero-copy
			 * completions may hold no error at all, and its
			 * queue's memory counts entries no recv() reads
			 * (helper 38's E1): walked as any other.
			 */
			if (eof)
				data = 0;
			else if ((hint & EPOLLERR) && (k == K_UDGRAM ||
			    !dg_errqueue_quiet(fd))) {
				if (k == K_UDGRAM ||
				    (data = dg_rest_bound(fd)) < n)
					data = n;
			} else if ((data = dgram_total(kq, fd,
			    k == K_UDGRAM, n)) < 0)
				data = n;
		}
	} else if (r == -EBADF)
		return -1;
	else {
		/* No byte count to confirm a stale mask: look again. */
		if (stale && (r = read_repoll(fd, &hint, &eof)) <= 0)
			return r;
		k = fd_kind(kq, kn);
		if (k_is_socket(k)) {
			if ((data = listen_backlog(kq, kn, &listener)) < 0)
				goto count;
			/*
			 * FreeBSD's filt_solisten: ready while a connection
			 * waits (another thread or process may have taken
			 * the last one since epoll looked), NOTE_LOWAT
			 * ignored.
			 */
			if (listener) {
				if (data == 0 && !eof)
					return 0;
				lowat = 0;
			}
		} else if (k == K_EVENTFD) {
			uint64_t v;

			/*
			 * FreeBSD's filt_eventfdread: data is the counter,
			 * NOTE_LOWAT is not looked at.  epoll reported it
			 * readable, so the counter is at least 1 when it
			 * cannot be read (no descriptor free: LINUX NOTES).
			 */
			data = eventfd_count(fd, &v) ? (int64_t)v : 1;
			lowat = 0;
		} else if (k == K_KQUEUE) {
			/* FreeBSD's filt_kqueue: the count, NOTE_LOWAT not
			   looked at. */
			data = kq_pending(fd, (kn->kn_flags & EV_CLEAR) ?
			    kn : NULL, kq->kq_scanid);
			lowat = 0;
			/*
			 * The inner set woke for nothing it reports (an
			 * internal source, e.g. a signal another kqueue
			 * counts): not an event.
			 */
			if (data == 0 && !eof)
				return 0;
		} else
			data = 0;
	}
	if (lowat && !eof &&
	    data < (kn->kn_sdata > 0 ? kn->kn_sdata : 1))
		return 0;
	out->data = data;
	out->fflags = eof ? sock_eof_error(kq, kn, hint) : 0;
	if (eof)
		out->flags |= EV_EOF;
	return 1;
}

/*
 * filt_read for the plain event (kq_translate_plain, kevent.c): a fresh
 * epoll mask without EPOLLERR, for an enabled, level-triggered READ knote
 * without NOTE_LOWAT on a descriptor epoll watches (not R_NOPOLL).
 * nread: the FIONREAD count taken after the wait or in the collection
 * round, or INT_MIN for a listener's (KQ_NOCOUNT) event.  Writes what
 * filt_read would, and returns 1, when the answer needs nothing but what
 * is known here: a TCP listener with connections waiting or at its end of
 * file, a connected stream socket with bytes queued, any descriptor at
 * its end of file with nothing queued (data 0, whatever its kind, as
 * filt_read says without asking it).  Returns 0 for everything else,
 * having changed nothing the full filt_read would not (a listener's kind
 * corrected by listen_backlog): the caller then takes filt_read's way.
 */
int
filt_read_plain(struct kqueue *kq, struct knote *kn, uint32_t mask,
    int nread, struct kevent *out)
{
	int eof = (mask & (EPOLLRDHUP | EPOLLHUP)) != 0, listener;
	int64_t data;

	if (nread == INT_MIN) {
		if (R_KIND(kn->kn_reg) != K_LISTEN)
			return 0;
		data = listen_backlog(kq, kn, &listener);
		if (!listener || (data == 0 && !eof))
			return 0;
	} else if (nread > 0 && R_KIND(kn->kn_reg) == K_SOCK)
		data = nread;
	else if (nread == 0 && eof)
		data = 0;
	else
		return 0;
	out->data = data;
	if (eof) {
		out->fflags = sock_eof_error(kq, kn, mask);
		out->flags |= EV_EOF;
	}
	return 1;
}

static int
write_space(struct kqueue *kq, struct knote *kn, int64_t *space)
{
	int fd = (int)kn->kn_ident, n, r;
	int k = fd_kind(kq, kn);

	*space = 0;
	if (k == K_PIPE) {
		int64_t cap = pipe_cap(kq, kn);

		if (cap == 0)
			return 0;
		if ((r = ksys_ioctl(fd, FIONREAD, &n)) != 0)
			return r == -EBADF ? -1 : 0;
		if (cap - n <= 0 && (kn->kn_reg & R_CAPMASK) != 0) {
			/* Full by the cached size: F_SETPIPE_SZ may have
			   grown the pipe since.  Ask again. */
			fdreg_set(kq, fd, kn->kn_reg & ~R_CAPMASK);
			if ((cap = pipe_cap(kq, kn)) == 0)
				return 0;
		}
		*space = cap - n > 0 ? cap - n : 0;
		return 0;
	}
	if (k_is_socket(k)) {
		uint32_t mi[SK_MEMINFO_VARS];
		socklen_t len = sizeof(mi);
		int64_t used;

		if ((r = ksys_getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi,
		    &len)) != 0)
			return r == -EBADF ? -1 : 0;
		used = mi[SK_MEMINFO_WMEM_QUEUED] > mi[SK_MEMINFO_WMEM_ALLOC] ?
		    mi[SK_MEMINFO_WMEM_QUEUED] : mi[SK_MEMINFO_WMEM_ALLOC];
		*space = (int64_t)mi[SK_MEMINFO_SNDBUF] - used > 0 ?
		    (int64_t)mi[SK_MEMINFO_SNDBUF] - used : 0;
		return 0;
	}
	if (k == K_EVENTFD) {
		uint64_t v;

		/*
		 * FreeBSD's filt_eventfdwrite: the most that can still be
		 * added, UINT64_MAX - 1 - counter, as an int64_t (negative
		 * for a counter below 2^63 - 1: that is FreeBSD's value).
		 * epoll reported it writable; a counter that cannot be
		 * read (no descriptor free) counts as 0.
		 */
		if (!eventfd_count(fd, &v))
			v = 0;
		*space = (int64_t)(UINT64_MAX - 1 - v);
		return 0;
	}
	if (k == K_UNKNOWN && fcntl(fd, F_GETFD) < 0 && errno == EBADF)
		return -1;	/* fstat failed: the number is closed */
	return 0;
}

/*
 * FreeBSD's filt_sowrite, filt_pipewrite and the like; an eventfd's
 * (filt_eventfdwrite) ignores NOTE_LOWAT, and its data may be negative.
 */
static int
filt_write(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	int fd = (int)kn->kn_ident, eof;
	int64_t data;

	if (kn->kn_reg & R_NOPOLL) {
		out->data = 0;
		return 1;
	}
	if (hint == 0) {
		int r = fd_poll(fd, POLLOUT);

		if (r < 0)
			return -1;
		hint = (uint32_t)r;
	}
	if (!(hint & (EPOLLOUT | EPOLLHUP | EPOLLERR)))
		return 0;
	eof = (hint & (EPOLLHUP | EPOLLERR)) != 0;
	/*
	 * The space is asked of the number: EBADF means it was closed
	 * while a dup() kept the file registered.  At EOF nothing else is
	 * asked, so ask whether it is still open (rare).
	 */
	data = 0;
	if (eof) {
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
			return -1;
	} else if (write_space(kq, kn, &data) < 0)
		return -1;
	if ((kn->kn_sfflags & NOTE_LOWAT) && !eof &&
	    R_KIND(kn->kn_reg) != K_EVENTFD &&
	    data < (kn->kn_sdata > 0 ? kn->kn_sdata : 1))
		return 0;
	out->data = data;
	out->fflags = eof ? sock_eof_error(kq, kn, hint) : 0;
	if (eof)
		out->flags |= EV_EOF;
	return 1;
}

/*
 * Is fd a TCP socket whose connection is gone (TCP_CLOSE: reset, timed
 * out)?  Linux leaves the bytes it never got acknowledged counted in
 * SIOCOUTQ then, though nothing will ever send them; FreeBSD empties the
 * send buffer when the connection drops (soisdisconnected), so its
 * EVFILT_EMPTY fires.  Asked only while the count is not zero.
 */
static int
tcp_dropped(int fd)
{
	uint8_t ti[8];	/* struct tcp_info starts with tcpi_state */
	socklen_t len = sizeof(ti);

	return ksys_getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len) == 0 &&
	    len >= 1 && ti[0] == 7 /* TCP_CLOSE */;
}

/*
 * EVFILT_EMPTY: the send buffer holds nothing (all data acknowledged).
 * Linux does not wake pollers when the last byte is acknowledged, so an
 * enabled EMPTY knote that is not yet true is re-checked at least every
 * few milliseconds by the scan (kq_empty).
 */
static int
filt_empty(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	int fd = (int)kn->kn_ident, n, gone = 0;

	if (kn->kn_reg & R_NOPOLL)
		return 0;
	if (ioctl(fd, SIOCOUTQ, &n) != 0) {
		int listening = 0;
		socklen_t len = sizeof(listening);

		if (errno == EBADF)
			return -1;
		/* A listening socket has no send buffer (EINVAL): FreeBSD's
		   filter reports it empty. */
		if (ksys_getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening,
		    &len) != 0 || !listening)
			return 0;
		n = 0;
	}
	if (n != 0) {
		if (!tcp_dropped(fd)) {
			kn->kn_status &= ~KN_FIRED;
			return 0;
		}
		gone = n;	/* never to be sent: as if flushed */
	}
	if (kn->kn_flags & EV_CLEAR) {
		/*
		 * EV_CLEAR: report only a new transition to empty.  On
		 * loopback the buffer may fill and drain between two checks,
		 * so for TCP the acknowledged-bytes counter tells whether
		 * anything was sent since the last report (its low 32 bits
		 * are kept in kn_sdata, which EVFILT_EMPTY takes no input in;
		 * only exactly 4 GiB acknowledged between two checks, 5 ms
		 * apart at most, could look like no change).
		 */
		uint64_t ti[TCPI_WORDS], acked;
		socklen_t len = sizeof(ti);

		if (ksys_getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len) == 0 &&
		    len >= TCPI_BYTES_ACKED_OFF + sizeof(acked)) {
			memcpy(&acked, (char *)ti + TCPI_BYTES_ACKED_OFF,
			    sizeof(acked));
			/* A dropped connection's last bytes count as gone:
			   that is the transition FreeBSD reports, once. */
			acked += (uint64_t)gone;
			if ((kn->kn_status & KN_FIRED) &&
			    (int32_t)(uint32_t)acked == kn->kn_sdata)
				return 0;
			kn->kn_sdata = (int32_t)(uint32_t)acked;
		} else {
			struct kqsrc *src = &kq->kq_src[KQ_SRC_EMPTY];

			if ((kn->kn_status & KN_FIRED) &&
			    !((struct kn_empty *)(void *)kn)->ke_woken)
				return 0;
			/*
			 * Reported now: the wake-ups of the drain seen empty
			 * are this report's.  The kernel queues a socket's
			 * write-space wake-up before its count reaches 0
			 * (sock_wfree), so those are in the set already:
			 * consumed here, or fetched later they would report
			 * this drain again.  A drain that ends between the
			 * check and here is reported by this report (it
			 * ended before the report was made), one that ends
			 * later leaves its wake-up for the next check.
			 * Draining the set at the start of each collection
			 * instead reported about 5 % of the drains twice
			 * with four threads (attack helpers 12 and 13).
			 */
			if (src->ks_ready != NULL)
				empty_drain(kq, src, fd);
		}
	}
	((struct kn_empty *)(void *)kn)->ke_woken = 0;
	out->data = 0;
	out->fflags = 0;
	if (hint & EPOLLHUP)
		out->flags |= EV_EOF;
	return 1;
}

static int
filt_emptyattach(struct kqueue *kq, struct knote *kn)
{
	struct stat st;
	int e;

	if (fstat((int)kn->kn_ident, &st) != 0)
		return errno;
	if (!S_ISSOCK(st.st_mode))
		return EINVAL;
	/*
	 * A failed attach is not detached, and until f_attach returns kn is
	 * on its descriptor's chain, where fdreg_detach would still count
	 * it: the write-space set first, then the kqueue's registration,
	 * and the list only after both succeeded.
	 */
	if ((e = empty_watch(kq, kn)) != 0)
		return e;
	if ((e = filt_fdattach(kq, kn)) != 0) {
		empty_unwatch(kq, kn);
		return e;
	}
	empty_link(kq, kn);
	return 0;
}

const struct filterops fd_read_filtops = {
	.f_isfd = 1,
	.f_size = sizeof(struct knote),
	.f_attach = filt_fdattach,
	.f_detach = filt_fddetach,
	.f_modify = filt_fdmodify,
	.f_update = fdreg_update,
	.f_event = filt_read,
};

const struct filterops fd_write_filtops = {
	.f_isfd = 1,
	.f_size = sizeof(struct knote),
	.f_attach = filt_fdattach,
	.f_detach = filt_fddetach,
	.f_modify = filt_fdmodify,
	.f_update = fdreg_update,
	.f_event = filt_write,
};

/*
 * FreeBSD evaluates the filter again after every change of a knote that
 * stays (kqueue_register): an EV_ADD or EV_ENABLE of an EV_CLEAR knote on
 * an empty socket reports it again.
 */
static int
filt_emptymodify(struct kqueue *kq, struct knote *kn,
    const struct kevent *kev)
{
	int e;

	/*
	 * A new knote's f_modify comes before it is linked (kq_change): the
	 * kqueue's first EMPTY knote makes the write-space set here, where
	 * the set's claim of its number cannot drop kn with the chain of a
	 * number closed behind kq's back.  A set that took kn's own number
	 * says that number was closed: EBADF, as FreeBSD's fget.
	 */
	if (kq->kq_src[KQ_SRC_EMPTY].ks_ready == NULL) {
		if ((e = empty_source(kq)) != 0)
			return e;
		if (kq->kq_src[KQ_SRC_EMPTY].ks_fd == (int)kn->kn_ident)
			return EBADF;
	}
	kn->kn_status &= ~KN_FIRED;
	return filt_fdmodify(kq, kn, kev);
}

static void
filt_emptyclear(struct kqueue *kq, struct knote *kn)
{
	kn->kn_status |= KN_FIRED;
}

const struct filterops fd_empty_filtops = {
	.f_isfd = 1,
	.f_size = sizeof(struct kn_empty),
	.f_attach = filt_emptyattach,
	.f_detach = filt_fddetach,
	.f_modify = filt_emptymodify,
	.f_update = fdreg_update,
	.f_event = filt_empty,
	.f_clear = filt_emptyclear,
};
