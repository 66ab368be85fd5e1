/*
 * kqueue.c -- kqueue(), kqueuex(), kqueue1(): creation and destruction of a
 * kqueue.
 *
 * A kqueue is an epoll instance plus a struct kqueue.  The epoll descriptor
 * is the descriptor handed to the application.  The doorbell eventfd is
 * created with it (a kqueue that could not be woken or recognised is no
 * kqueue: kqueue() fails with EMFILE/ENFILE rather than later calls
 * failing silently); the other internal descriptors (inotify, the timer
 * heap's timerfd, ...) are created by the first EV_ADD that needs them,
 * whose error that EV_ADD returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "kq_int.h"
#include "fault.h"

/* A new kqueue, or with port set an event port (port.c).  -1/errno. */
int
kq_create(int cloexec, int port)
{
	struct kqueue *kq, *old;
	int fd, s, e;

	/* From a signal handler that interrupted this thread inside
	   reg_lock: it would wait for itself (kqueue.2, LINUX NOTES). */
	if (__builtin_expect(kq_in_lock(), 0) && kq_reg_mine()) {
		errno = EDEADLK;
		return -1;
	}
	kq_reap();	/* what closes put off (defer.c) */
	kq = kq_pool_get();
	if (kq == NULL) {
		errno = ENOMEM;
		return -1;
	}
	/*
	 * reg_lock from the epoll descriptor's creation to its publication:
	 * the fork handler takes it, so a child never inherits a kqueue
	 * half made (its descriptors unknown to the handler).
	 */
	kq_reg_lock();
	fd = KQ_FDCALL(epoll_create1(cloexec ? EPOLL_CLOEXEC : 0));
	if (fd < 0 || (e = kq_registry_reserve_locked(fd)) != 0) {
		/* No descriptor, or no registry slot for it (ENOMEM): a
		   kqueue nobody could find is not made. */
		if (fd < 0)
			e = errno;
		else
			kq_close_raw(fd);
		kq_reg_unlock();
		kq_pool_put(kq);
		errno = e;
		return -1;
	}
	/*
	 * Under kq_lock: a kevent() that read a stale registry slot may be
	 * locking this (recycled) object right now to check it.
	 */
	KQ_LOCK(kq);
	kq->kq_fd = fd;
	kq->kq_dead = 0;
	kq->kq_unowned = 0;	/* the object may be a recycled one */
	atomic_store(&kq->kq_retiring, 0);
	kq->kq_port = port;
	kq->kq_alert = NULL;
	STAILQ_INIT(&kq->kq_head);
	for (s = 0; s < KQ_NSRC; s++)
		kq->kq_src[s].ks_fd = -1;
	kq->kq_waitfd = KQ_FDCALL(fcntl(fd, F_DUPFD_CLOEXEC, 0));
	e = kq->kq_waitfd < 0 ? errno : kq_intfd_claim(kq, kq->kq_waitfd);
	if (e == 0)
		e = kq_bell_create(kq);
	if (e != 0) {
		kq->kq_dead = 1;
		kq_intfd_free(kq);	/* released before the close */
		if (kq->kq_waitfd >= 0)
			kq_close_raw(kq->kq_waitfd);
		kq->kq_waitfd = -1;
		KQ_UNLOCK(kq);
		kq_close_raw(fd);
		kq_reg_unlock();
		kq_pool_put(kq);
		errno = e;
		return -1;
	}
	atomic_store_explicit(&kq->kq_refs, 1, memory_order_release);
	KQ_UNLOCK(kq);
	kq_all_add(kq);
	old = kq_registry_insert_locked(fd, kq);
	kq_reg_unlock();
	kq_registry_drop_old(old);
	return fd;
}

KQ_EXPORT int
kqueue(void)
{
	/*
	 * FreeBSD's kqueue() does not set close-on-exec.  The descriptor
	 * is closed in fork children regardless (see registry.c).
	 */
	return kq_create(0, 0);
}

KQ_EXPORT int
kqueuex(unsigned int flags)
{
	if ((flags & ~(unsigned int)KQUEUE_CLOEXEC) != 0) {
		errno = EINVAL;
		return -1;
	}
	return kq_create((flags & KQUEUE_CLOEXEC) != 0, 0);
}

KQ_EXPORT int
kqueue1(int flags)
{
	if ((flags & ~O_CLOEXEC) != 0) {
		errno = EINVAL;
		return -1;
	}
	return kq_create((flags & O_CLOEXEC) != 0, 0);
}

/*
 * Which of the kqueue's numbers still hold the files kq put there, asked
 * before any is touched: a number closed behind the C library's back
 * (a raw system call, which close() cannot refuse) and reused is the
 * program's file, to be released but not closed.  own[s] for source s,
 * own[KQ_NSRC] for kq_waitfd.  The set is proven by the doorbell's
 * registration in it, each source by its own (kq_holds_number); a set
 * not proven proves nothing.  An unowned kqueue proves nothing either
 * (kq_unowned: its numbers may be the program's).
 */
static void
kq_destroy_prove(const struct kqueue *kq, int own[KQ_NSRC + 1])
{
	int s;

	own[KQ_NSRC] = !kq->kq_unowned && kq->kq_waitfd >= 0 &&
	    kq->kq_src[KQ_SRC_BELL].ks_ready != NULL &&
	    kq_holds_number(kq, kq->kq_waitfd);
	for (s = 0; s < KQ_NSRC; s++)
		own[s] = own[KQ_NSRC] && kq->kq_src[s].ks_ready != NULL &&
		    kq->kq_src[s].ks_fd >= 0 &&
		    kq_holds_number(kq, kq->kq_src[s].ks_fd);
}

/*
 * The two files whose release can be slow -- the inotify instance (its
 * marks are destroyed, waiting for an RCU grace period) and the epoll set
 * (every watch unlinked; kq_fd was its other reference) -- are released
 * here, outside the maker section: a duplicate of the doorbell is put over
 * each number (dup3 drops the file's last reference, and the release runs
 * as the call returns), so the numbers stay claimed and open and the
 * section only closes duplicates of an eventfd.  A dup3 that fails leaves
 * the file for the section to close.  Only over proven numbers, from a
 * proven doorbell (own: kq_destroy_prove).
 */
static void
kq_destroy_files(struct kqueue *kq, const int own[KQ_NSRC + 1])
{
	const struct kqsrc *bell = &kq->kq_src[KQ_SRC_BELL],
	    *ino = &kq->kq_src[KQ_SRC_INOTIFY];

	if (!own[KQ_SRC_BELL])
		return;
	if (own[KQ_SRC_INOTIFY])
		(void)kq_dup3_raw(bell->ks_fd, ino->ks_fd, O_CLOEXEC);
	if (own[KQ_NSRC])
		(void)kq_dup3_raw(bell->ks_fd, kq->kq_waitfd, O_CLOEXEC);
}

/*
 * Called by the last kq_release().  The application already closed the
 * kqueue descriptor (or a fork child lost it), so kq_fd is not ours any
 * more and no system call may touch it: only internal descriptors are
 * closed.
 */
void
kq_destroy(struct kqueue *kq)
{
	int s, own[KQ_NSRC + 1];

	KQ_LOCK(kq);
	kq->kq_dead = 1;
	kq_free_all(kq);
	kq_destroy_prove(kq, own);
	/*
	 * The internal descriptors are released and closed in a maker
	 * section, which fork() and closefrom() wait for (registry.c): a
	 * child sees each of them claimed and open, or neither.  Not under
	 * reg_lock: closing an inotify descriptor waits in the kernel for
	 * its marks to be destroyed (from a quarter of a millisecond to
	 * seconds when many go at once), and every kqueue(), and every
	 * close() of a watched descriptor, would wait behind it.
	 *
	 * Nor inside the section, where a fork() waits for it (up to the
	 * gate's patience, 1 s: a17 saw one fork take 1.001 s): those
	 * files are released first (kq_destroy_files).
	 */
	kq_destroy_files(kq, own);
	kq_mkfd_begin();
	for (s = 0; s < KQ_NSRC; s++) {
		if (kq->kq_src[s].ks_fini != NULL)
			kq->kq_src[s].ks_fini(kq, &kq->kq_src[s]);
		kq->kq_src[s].ks_fini = NULL;
		kq->kq_src[s].ks_arg = NULL;
		if (kq->kq_src[s].ks_ready != NULL) {
			/* Released first: from the close on, the number may
			   be another thread's new file (kq_fdinternal).  A
			   number not proven may be the program's: left
			   alone (a descriptor of kq's may leak). */
			kq_intfd_release(kq, kq->kq_src[s].ks_fd);
			kq->kq_src[s].ks_ready = NULL;
			if (own[s])
				kq_close_raw(kq->kq_src[s].ks_fd);
		}
		kq->kq_src[s].ks_fd = -1;
	}
	if (kq->kq_waitfd >= 0) {
		kq_intfd_release(kq, kq->kq_waitfd);
		if (own[KQ_NSRC])
			kq_close_raw(kq->kq_waitfd);
		kq->kq_waitfd = -1;
	}
	kq_mkfd_end();
	/* The kqueue leaves the list of live ones under reg_lock, which a
	   fork() child's handler and closefrom() read it under. */
	kq_reg_lock();
	kq_intfd_free(kq);
	kq_all_remove_locked(kq);
	kq_reg_unlock();
	kq->kq_bell_rung = 0;
	KQ_UNLOCK(kq);
	kq_pool_put(kq);
}
