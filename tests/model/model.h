/*
 * A reference model of FreeBSD's kqueue semantics, for the differential
 * test tests/fuzz-diff.c.  Written from kqueue(2) and
 * /work/shared/reference/kqueue-semantics.md, never from kq's src/.
 *
 * The model knows nothing about system calls: the driver tells it what it
 * did to the world (pipes, socketpairs, dup, close, write, read) and asks it
 * what kevent() must answer.  It covers EVFILT_READ and EVFILT_WRITE on pipe
 * ends and AF_UNIX stream socketpairs, EVFILT_EMPTY on the socketpairs (and
 * its EINVAL on pipes), and EVFILT_USER.
 *
 * Where FreeBSD leaves a choice open, the model says "may" instead of
 * "must": an EV_CLEAR knote whose object saw activity that FreeBSD does not
 * define as a new trigger (a partial read, a write on the other direction)
 * may or may not be reported again.  Where kq documents that it differs
 * from FreeBSD (man/kevent.2 LINUX NOTES 1: knotes of a closed descriptor
 * whose file stays open through a duplicate), the model marks the knote
 * "stale" and tolerates what the note allows; see m_close().  Likewise
 * for the EV_CLEAR re-reports of LINUX NOTES (struct m_knote, spur).
 */
#ifndef KQ_TESTS_MODEL_H
#define KQ_TESTS_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/event.h>

#define M_MAXFD		8192	/* descriptor numbers the model can track */
#define M_MAXKQ		2
#define M_MAXSTALE	256

enum m_kind { M_FREE, M_PIPE_R, M_PIPE_W, M_SOCK, M_OTHER };
enum m_pend { M_NO, M_MAY, M_MUST };

/* One open file description: an end of a pipe or of a socketpair. */
struct m_end {
	int	kind;
	int	peer;		/* index of the other end */
	int	refs;		/* descriptors that refer to it */
	long	inbuf;		/* bytes readable at this end */
};

struct m_knote {
	int		kq;
	uintptr_t	ident;
	short		filter;
	unsigned short	mode;	/* EV_ONESHOT|EV_CLEAR|EV_DISPATCH|EV_RECEIPT at creation */
	int		disabled;
	int		pend;	/* edge knotes: enum m_pend */
	int		trig;	/* EVFILT_USER: triggered */
	unsigned int	ufflags; /* EVFILT_USER: stored fflags */
	int64_t		udata_d; /* EVFILT_USER: stored data */
	void		*udata;
	int		end;	/* fd knotes: the end it watches */
	/* fairness bookkeeping */
	int		missed;	/* full-list scans it was ready but not reported */
	long		missed_cap;
	int		max_ready;
	/*
	 * kq's documented difference (LINUX NOTES): an EV_CLEAR knote may be
	 * reported once more, without new activity, after another knote on
	 * the same descriptor number was added or changed (epoll re-reports
	 * a registration it is asked to modify), or after the kqueue rebuilt
	 * its epoll set (a watched number closed while a dup kept the file),
	 * or after a collection had no room for it.  Each such cause allows
	 * one extra report, as the note says: two changes before a report
	 * leave two restated edges (one may wait in epoll's ready list while
	 * the active list reports the knote), so this counts them; an extra
	 * report uses one.  A knote left out of full calls again and again
	 * is kept on the active list once, so that cause never counts twice.
	 */
	int		spur;
};

/* A knote dropped by close() that kq may still know (LINUX NOTES 1). */
struct m_stale {
	int		used;
	int		kq;
	int		fd;
	short		filter;
	int		end;	/* the file it watched; -1: cleared at next scan */
};

struct model {
	int		fd2end[M_MAXFD];	/* -1: not open */
	struct m_end	*ends;
	int		nends, capends;
	struct m_knote	*kn;
	int		nkn, capkn;
	struct m_stale	stale[M_MAXSTALE];
	long		pipe_cap;	/* capacity of a pipe, for WRITE data */
	int		ndups_closed;	/* statistics */
};

/* What a kevent() call with changes must return when it does not scan. */
struct m_expect {
	int		scan;		/* 1: the call scans; check with m_scan() */
	int		ret;		/* otherwise: return value */
	int		err;		/* errno when ret == -1 */
	int		n;		/* error/receipt entries */
	struct kevent	*ev;		/* n entries (caller's buffer) */
};

void	m_init(struct model *m, long pipe_cap);
void	m_free(struct model *m);
void	m_other_fd(struct model *m, int fd);
void	m_pipe(struct model *m, int rfd, int wfd);
void	m_socketpair(struct model *m, int a, int b);
void	m_dup(struct model *m, int oldfd, int newfd);
void	m_close(struct model *m, int fd);
void	m_write(struct model *m, int fd, long n);
void	m_read(struct model *m, int fd, long n);

/* Queries for the driver. */
int	m_is_open(const struct model *m, int fd);
int	m_kind(const struct model *m, int fd);
long	m_readable(const struct model *m, int fd);	/* bytes readable at fd */
int	m_peer_closed(const struct model *m, int fd);
int	m_last_ref(const struct model *m, int fd);	/* fd is its file's last descriptor */
long	m_target_bytes(const struct model *m, int fd);	/* bytes queued by writes on fd */
int	m_is_stale(const struct model *m, int kq, int fd, short filter);
int	m_nothing_ready(const struct model *m, int kq);	/* nothing must or may be reported */
int	m_must_ready(const struct model *m, int kq);	/* something must be reported */
int	m_count_knotes(const struct model *m, int kq);

/*
 * Apply a changelist as FreeBSD's kqueue_kevent() does; out has room for
 * nevents entries.  Fills *x: either the final answer or x->scan = 1.
 */
void	m_changes(struct model *m, int kq, const struct kevent *ch, int nch,
	    int nevents, struct kevent *out, struct m_expect *x);

/*
 * Check the events a scan returned (n entries in ev, eventlist of nevents)
 * and apply their delivery (EV_ONESHOT, EV_CLEAR, EV_DISPATCH).  Returns 0,
 * or -1 with a description of the mismatch in msg.
 */
int	m_scan(struct model *m, int kq, int nevents, const struct kevent *ev,
	    int n, char *msg, size_t msglen);

const char *m_filter_name(short filter);
void	m_flags_str(unsigned flags, char *buf, size_t len);

#endif
