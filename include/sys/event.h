/*
 * <sys/event.h> -- the BSD kqueue(2)/kevent(2) interface, provided on Linux
 * by libkq.
 *
 * Numbering and layout follow FreeBSD 14: the filter numbers, the EV_* and
 * NOTE_* values and struct kevent (64 bytes on LP64, int64_t data, void
 * *udata, uint64_t ext[4]) are FreeBSD's, so sources written for FreeBSD
 * compile unchanged.  kq adds one flag of its own, EV_WAKEONE (seed 002),
 * whose value collides with no BSD flag.
 *
 * This header is installed in its own directory (see kq.pc) so that it
 * never shadows a system header.
 */
#ifndef _KQ_SYS_EVENT_H_
#define _KQ_SYS_EVENT_H_

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Filters (FreeBSD numbering). */
#define EVFILT_READ		(-1)
#define EVFILT_WRITE		(-2)
#define EVFILT_AIO		(-3)	/* attached by aio_* with SIGEV_KEVENT */
#define EVFILT_VNODE		(-4)	/* attached to vnodes */
#define EVFILT_PROC		(-5)	/* attached to struct proc */
#define EVFILT_SIGNAL		(-6)	/* attached to struct proc */
#define EVFILT_TIMER		(-7)	/* timers */
#define EVFILT_PROCDESC		(-8)	/* attached to process descriptors */
#define EVFILT_FS		(-9)	/* filesystem events */
#define EVFILT_LIO		(-10)	/* attached to lio requests */
#define EVFILT_USER		(-11)	/* user events */
#define EVFILT_SENDFILE		(-12)	/* attached to sendfile requests */
#define EVFILT_EMPTY		(-13)	/* empty send socket buffer */
#define EVFILT_SYSCOUNT		13

struct kevent {
	uintptr_t	ident;		/* identifier for this event */
	short		filter;		/* filter for event */
	unsigned short	flags;		/* action flags for kqueue */
	unsigned int	fflags;		/* filter flag value */
	int64_t		data;		/* filter data value */
	void		*udata;		/* opaque user data identifier */
	uint64_t	ext[4];		/* extensions */
};

#define EV_SET(kevp_, a, b, c, d, e, f) do {		\
	struct kevent *kevp = (kevp_);			\
	(kevp)->ident = (a);				\
	(kevp)->filter = (b);				\
	(kevp)->flags = (c);				\
	(kevp)->fflags = (d);				\
	(kevp)->data = (e);				\
	(kevp)->udata = (f);				\
	(kevp)->ext[0] = 0;				\
	(kevp)->ext[1] = 0;				\
	(kevp)->ext[2] = 0;				\
	(kevp)->ext[3] = 0;				\
} while (0)

/* actions */
#define EV_ADD		0x0001		/* add event to kq (implies enable) */
#define EV_DELETE	0x0002		/* delete event from kq */
#define EV_ENABLE	0x0004		/* enable event */
#define EV_DISABLE	0x0008		/* disable event (not reported) */
#define EV_FORCEONESHOT	0x0100		/* enable _ONESHOT and force trigger */
#define EV_KEEPUDATA	0x0200		/* do not update the udata field */

/* flags */
#define EV_ONESHOT	0x0010		/* only report one occurrence */
#define EV_CLEAR	0x0020		/* clear event state after reporting */
#define EV_RECEIPT	0x0040		/* force EV_ERROR on success, data=0 */
#define EV_DISPATCH	0x0080		/* disable event after reporting */

/*
 * kq extension (seed 002): on EV_ADD of EVFILT_READ or EVFILT_WRITE, wake
 * only one of the kqueues blocked on the descriptor per event.  Not a BSD
 * flag; FreeBSD leaves bit 0x0400 unused.
 */
#define EV_WAKEONE	0x0400

#define EV_SYSFLAGS	0xF000		/* reserved by system */
#define EV_DROP		0x1000		/* note should be dropped */
#define EV_FLAG1	0x2000		/* filter-specific flag */
#define EV_FLAG2	0x4000		/* filter-specific flag */

/* returned values */
#define EV_EOF		0x8000		/* EOF detected */
#define EV_ERROR	0x4000		/* error, data contains errno */

/* data/hint flags for EVFILT_{READ|WRITE}, shared with userspace */
#define NOTE_LOWAT	0x0001		/* low water mark */
#define NOTE_FILE_POLL	0x0002		/* behave like poll() on regular files */

/* data/hint flags for EVFILT_USER, shared with userspace */
#define NOTE_FFNOP	0x00000000	/* ignore input fflags */
#define NOTE_FFAND	0x40000000	/* AND fflags */
#define NOTE_FFOR	0x80000000	/* OR fflags */
#define NOTE_FFCOPY	0xc0000000	/* copy fflags */
#define NOTE_FFCTRLMASK	0xc0000000	/* masks for operations */
#define NOTE_FFLAGSMASK	0x00ffffff
#define NOTE_TRIGGER	0x01000000	/* Cause the event to be triggered for output. */

/* data/hint flags for EVFILT_VNODE, shared with userspace */
#define NOTE_DELETE	0x0001		/* vnode was removed */
#define NOTE_WRITE	0x0002		/* data contents changed */
#define NOTE_EXTEND	0x0004		/* size increased */
#define NOTE_ATTRIB	0x0008		/* attributes changed */
#define NOTE_LINK	0x0010		/* link count changed */
#define NOTE_RENAME	0x0020		/* vnode was renamed */
#define NOTE_REVOKE	0x0040		/* vnode access was revoked */
#define NOTE_OPEN	0x0080		/* vnode was opened */
#define NOTE_CLOSE	0x0100		/* file closed, fd did not allow write */
#define NOTE_CLOSE_WRITE 0x0200		/* file closed, fd did allow write */
#define NOTE_READ	0x0400		/* file was read */

/* data/hint flags for EVFILT_PROC and EVFILT_PROCDESC, shared with userspace */
#define NOTE_EXIT	0x80000000	/* process exited */
#define NOTE_FORK	0x40000000	/* process forked */
#define NOTE_EXEC	0x20000000	/* process exec'd */
#define NOTE_PCTRLMASK	0xf0000000	/* mask for hint bits */
#define NOTE_PDATAMASK	0x000fffff	/* mask for pid */

/* additional flags for EVFILT_PROC */
#define NOTE_TRACK	0x00000001	/* follow across forks */
#define NOTE_TRACKERR	0x00000002	/* could not track child */
#define NOTE_CHILD	0x00000004	/* am a child process */

/* additional flags for EVFILT_TIMER */
#define NOTE_SECONDS	0x00000001	/* data is seconds */
#define NOTE_MSECONDS	0x00000002	/* data is milliseconds */
#define NOTE_USECONDS	0x00000004	/* data is microseconds */
#define NOTE_NSECONDS	0x00000008	/* data is nanoseconds */
#define NOTE_ABSTIME	0x00000010	/* timeout is absolute */

/* Flags for kqueuex(2) */
#define KQUEUE_CLOEXEC	0x00000001	/* close on exec */

int	kqueue(void);
int	kqueuex(unsigned int flags);
int	kqueue1(int flags);
int	kevent(int kq, const struct kevent *changelist, int nchanges,
	    struct kevent *eventlist, int nevents,
	    const struct timespec *timeout);

#ifdef __cplusplus
}
#endif

#endif /* !_KQ_SYS_EVENT_H_ */
