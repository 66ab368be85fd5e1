/*
 * sigshim.c -- process-wide signal observation for EVFILT_SIGNAL.
 *
 * FreeBSD counts a signal for EVFILT_SIGNAL when it is generated, whatever
 * its disposition (ignored, default, handler), and then delivers it as the
 * application asked.  Linux has no such hook.  kq gets the same result
 * without blocking signals (which would change the application's masks,
 * and only works for the calling thread) and without helper threads:
 *
 *   - while at least one knote watches signal s, kq's own handler is the
 *     kernel disposition of s.  It counts the delivery (sig_gen[s]), rings
 *     a process-wide eventfd that every kqueue with signal knotes has in
 *     its epoll set (edge-triggered, never read, so every write wakes every
 *     kqueue), and then does what the application's disposition says: call
 *     its handler, ignore, or take the default action (terminate, dump
 *     core, stop) by re-raising with the default disposition;
 *   - the application's disposition is kept in a shadow table.  kq exports
 *     sigaction(), signal() and their relatives: for a watched signal they
 *     read and write the shadow and keep kq's handler installed, so
 *     signal(SIGHUP, SIG_IGN) after EV_ADD (the paper's Figure 7) still
 *     counts; for any other signal they pass through to libc;
 *   - when the last knote on s goes, the application's disposition is put
 *     back exactly (EV_DELETE leaves dispositions and masks as they were).
 *
 * An ignored SIGCHLD is not counted, as on FreeBSD; kq then leaves SIG_IGN
 * installed so the kernel keeps reaping children automatically.
 *
 * A signal that interrupted a kevent() only to be counted (its application
 * disposition is to ignore it) does not make kevent() fail with EINTR:
 * kq_sig_app_runs() counts, per thread, the signals that ran an
 * application handler, and kevent() retries when it did not change.
 *
 * Locking: sig_lock (a mutex taken with every signal blocked in the calling
 * thread, so a handler can never interrupt its holder) protects the shadow
 * table and the watcher counts.  The handler itself reads only atomics.
 * Lock order: kq_lock, then sig_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include "kq_int.h"
#include "ksys.h"
#include "fault.h"
#include "sigshim.h"

/* glibc's own sigaction, under the name it exports for this purpose. */
extern int __sigaction(int, const struct sigaction *, struct sigaction *);

struct sigslot {
	int			 watchers;	/* knotes on this signal */
	int			 hooked;	/* kq's handler is installed */
	struct sigaction	 app;		/* the application's disposition */
	/* what the handler reads of app, published atomically */
	_Atomic(uintptr_t)	 app_handler;
	_Atomic int		 app_flags;
};

static struct sigslot	sig_tab[KQ_NSIG];
_Atomic uint64_t	kq_sig_gen[KQ_NSIG];
static pthread_mutex_t	sig_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int	sig_evfd = -1;

/* The thread's deliveries (kq_tls.sig_quiet, kq_tls.sig_runs) are read by
   kq_sig_app_runs (sigshim.h). */

/*
 * A wait that began when the thread's deliveries were `before` failed with
 * EINTR: should kevent() wait again rather than fail?  Only when kq's
 * handler ran on the thread, for signals the application ignores, and no
 * handler of the application's did.  A wake-up with nothing run on the
 * thread (a signal sent to the process, taken by another thread: attack
 * helper 28's F3) fails as epoll_wait(2) does: it cannot be told from a
 * run of a handler kq does not see -- one installed with the raw system
 * call, or one that has reset its disposition by the time kevent() looks
 * (SA_RESETHAND, a one-shot alarm()), which must interrupt the wait (the
 * attempt to tell them apart lost such wake-ups: helper 29's R1 and R2).
 */
int
kq_sig_eintr_absorbed(uint64_t before)
{
	uint64_t now = kq_sig_app_runs();

	return (now >> 32) == (before >> 32) &&
	    (uint32_t)now != (uint32_t)before;
}

/*
 * Every signal blocked and cancellation off (a handler that interrupted a
 * cancellable wait runs asynchronously cancellable, and glibc's
 * cancellation signal is never blocked): no thread may die holding
 * sig_lock.  The cancellation state is kept per thread for the unlock.
 */
static _Thread_local int sig_cancel_state;

static void
sig_lock_all(sigset_t *old)
{
	sigset_t all;
	int st;

	(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &st);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
	pthread_mutex_lock(&sig_lock);
	sig_cancel_state = st;
}

static void
sig_unlock_all(const sigset_t *old)
{
	int st = sig_cancel_state;

	pthread_mutex_unlock(&sig_lock);
	pthread_sigmask(SIG_SETMASK, old, NULL);
	(void)pthread_setcancelstate(st, &st);
}

/* Default action of signo is to ignore it (SIGCONT continues anyway). */
static int
sig_default_ignores(int signo)
{
	return signo == SIGCHLD || signo == SIGURG || signo == SIGWINCH ||
	    signo == SIGCONT;
}

static int
sig_default_stops(int signo)
{
	return signo == SIGTSTP || signo == SIGTTIN || signo == SIGTTOU;
}

/* The application's disposition as the handler must carry it out. */
static void
sig_publish(int signo)
{
	struct sigslot *s = &sig_tab[signo];

	atomic_store(&s->app_handler, (s->app.sa_flags & SA_SIGINFO) ?
	    (uintptr_t)s->app.sa_sigaction : (uintptr_t)s->app.sa_handler);
	atomic_store(&s->app_flags, s->app.sa_flags);
}

static void kq_sig_handler(int, siginfo_t *, void *);

/*
 * Install the kernel disposition that carries out s->app while counting:
 * kq's handler with the application's mask and flags, or -- for an ignored
 * SIGCHLD, which FreeBSD does not count -- the application's SIG_IGN.
 * Called with sig_lock held.
 */
static int
sig_install(int signo)
{
	struct sigslot *s = &sig_tab[signo];
	struct sigaction sa;

	sig_publish(signo);
	if (signo == SIGCHLD && !(s->app.sa_flags & SA_SIGINFO) &&
	    s->app.sa_handler == SIG_IGN) {
		s->hooked = 0;
		return __sigaction(signo, &s->app, NULL);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = kq_sig_handler;
	sa.sa_mask = s->app.sa_mask;
	sa.sa_flags = SA_SIGINFO | (s->app.sa_flags & (SA_ONSTACK |
	    SA_NOCLDSTOP | SA_NOCLDWAIT | SA_NODEFER));
	/*
	 * Restart system calls unless the application's own handler asked
	 * not to: an ignored signal must not interrupt read() or write().
	 */
	if ((s->app.sa_flags & SA_RESTART) ||
	    (!(s->app.sa_flags & SA_SIGINFO) &&
	    (s->app.sa_handler == SIG_IGN || s->app.sa_handler == SIG_DFL)))
		sa.sa_flags |= SA_RESTART;
	s->hooked = 1;
	return __sigaction(signo, &sa, NULL);
}

static void
sig_ring(void)
{
	uint64_t one = 1;
	int fd = atomic_load_explicit(&sig_evfd, memory_order_relaxed);
	ssize_t r;

	if (fd >= 0) {
		r = kq_nc_write(fd, &one, sizeof(one));
		(void)r;
	}
}

/* Take the default action of a terminating signal. */
static void
sig_default_action(int signo)
{
	struct sigaction dfl;
	sigset_t set;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	__sigaction(signo, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, signo);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(signo);
	/* Not reached for a terminating signal; put kq's handler back. */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = kq_sig_handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		__sigaction(signo, &sa, NULL);
	}
}

/* kq's handler: count, wake the kqueues, then what the application asked. */
static void
kq_sig_handler(int signo, siginfo_t *si, void *uc)
{
	int saved = errno;
	uintptr_t h;
	int flags;

	if (signo <= 0 || signo >= KQ_NSIG)
		return;
	/*
	 * Every delivery counts, also of a signal generated before the
	 * first knote while it was blocked (kevent.2, LINUX NOTES): which
	 * delivery was that one cannot be told -- later sends of a standard
	 * signal merge with it, and another thread may take it first -- and
	 * passing over one would lose a send FreeBSD counts (attack helper
	 * 28's F1 and F2).
	 */
	atomic_fetch_add(&kq_sig_gen[signo], 1);
	sig_ring();
	h = atomic_load(&sig_tab[signo].app_handler);
	flags = atomic_load(&sig_tab[signo].app_flags);
	if (h == (uintptr_t)SIG_IGN) {
		kq_tls.sig_quiet++;		/* ignored: nothing more */
	} else if (h == (uintptr_t)SIG_DFL) {
		kq_tls.sig_quiet++;
		if (sig_default_stops(signo))
			raise(SIGSTOP);
		else if (!sig_default_ignores(signo))
			sig_default_action(signo);
	} else {
		kq_tls.sig_runs++;
		if (flags & SA_RESETHAND) {
			atomic_store(&sig_tab[signo].app_handler,
			    (uintptr_t)SIG_DFL);
			atomic_store(&sig_tab[signo].app_flags, 0);
		}
		if (flags & SA_SIGINFO)
			((void (*)(int, siginfo_t *, void *))h)(signo, si, uc);
		else
			((void (*)(int))h)(signo);
	}
	errno = saved;
}

/* A handler reset by SA_RESETHAND shows in the shadow (sig_lock held). */
static void
sig_sync_reset(int signo)
{
	struct sigslot *s = &sig_tab[signo];

	if ((s->app.sa_flags & SA_RESETHAND) &&
	    atomic_load(&s->app_handler) == (uintptr_t)SIG_DFL) {
		s->app.sa_handler = SIG_DFL;
		s->app.sa_flags &= ~(SA_SIGINFO | SA_RESETHAND);
	}
}

int
kq_sig_valid(uintptr_t signo)
{
	return signo > 0 && signo < KQ_NSIG && signo != SIGKILL &&
	    signo != SIGSTOP;
}

/*
 * The process-wide eventfd every kqueue with signal knotes listens to;
 * *fd gets a close-on-exec duplicate owned by the caller.
 */
/* The shared eventfd's number, or -1 (close.c keeps it open). */
int
kq_sig_evfd_peek(void)
{
	return atomic_load_explicit(&sig_evfd, memory_order_relaxed);
}

/*
 * Is fd the shared eventfd, as far as can be told?  A program that closed
 * it with the raw system call may have a file of its own at the number:
 * not an eventfd there is not kq's.  When /proc cannot tell, it is.
 */
int
kq_sig_evfd_is(int fd)
{
	char name[16];
	int r;

	if (fd < 0 || fd != atomic_load(&sig_evfd))
		return 0;
	r = fd_anon_name(fd, name, sizeof(name));
	if (r < 0)
		return fcntl(fd, F_GETFD) >= 0;
	return r == 1 && strcmp(name, "eventfd") == 0;
}

/*
 * The kernel gave number fd to a new descriptor of a kqueue's: if the
 * shared eventfd was there, it was closed behind kq's back.  Forgotten
 * (and no longer counted as kq's), so that nothing writes to, duplicates
 * or protects the number for it again.
 */
void
kq_sig_evfd_lost(int fd)
{
	int expect = fd;

	if (atomic_compare_exchange_strong(&sig_evfd, &expect, -1))
		(void)kq_fdwatch_add(fd, -KQ_WATCH_INTERNAL);
}

int
kq_sig_evfd_dup(int *fd)
{
	sigset_t old;
	int e = 0, f;

	sig_lock_all(&old);
	f = atomic_load(&sig_evfd);
	/* Closed behind kq's back (its number may be the program's now):
	   never duplicated nor written again.  The kqueues that hold a
	   duplicate keep the old file, which no signal wakes any more; new
	   ones get a new eventfd. */
	if (f >= 0 && !kq_sig_evfd_is(f))
		kq_sig_evfd_lost(f);
	if (atomic_load(&sig_evfd) < 0) {
		f = KQ_FDCALL(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
		if (f < 0)
			e = errno;
		else if ((e = kq_fdwatch_add(f, KQ_WATCH_INTERNAL)) != 0)
			kq_close_raw(f);
		else	/* kq's own: refused to close() and to changes */
			atomic_store(&sig_evfd, f);
	}
	if (e == 0) {
		*fd = KQ_FDCALL(fcntl(atomic_load(&sig_evfd), F_DUPFD_CLOEXEC, 0));
		if (*fd < 0)
			e = errno;
	}
	sig_unlock_all(&old);
	return e;
}

/* A knote starts watching signo: hook it if it is the first. */
int
kq_sig_watch(int signo)
{
	struct sigslot *s = &sig_tab[signo];
	sigset_t old;
	int e = 0;

	sig_lock_all(&old);
	if (s->watchers == 0) {
		if (__sigaction(signo, NULL, &s->app) != 0)
			e = errno;
		else if (sig_install(signo) != 0)
			e = errno;
	}
	if (e == 0)
		s->watchers++;
	sig_unlock_all(&old);
	return e;
}

/* A knote stops watching signo: give the application its disposition. */
void
kq_sig_unwatch(int signo)
{
	struct sigslot *s = &sig_tab[signo];
	sigset_t old;

	sig_lock_all(&old);
	if (s->watchers > 0 && --s->watchers == 0) {
		sig_sync_reset(signo);
		__sigaction(signo, &s->app, NULL);
		s->hooked = 0;
	}
	sig_unlock_all(&old);
}

/*
 * fork() child: the kqueues are gone (registry.c), so every watched signal
 * gets the application's disposition back -- an exec'd program inherits
 * SIG_IGN as it should -- and the child gets its own eventfd.
 */
void
kq_sig_atfork_child(void)
{
	int signo, fd;

	pthread_mutex_init(&sig_lock, NULL);
	for (signo = 1; signo < KQ_NSIG; signo++) {
		struct sigslot *s = &sig_tab[signo];

		if (s->watchers == 0)
			continue;
		sig_sync_reset(signo);
		__sigaction(signo, &s->app, NULL);
		s->watchers = 0;
		s->hooked = 0;
	}
	fd = atomic_load(&sig_evfd);
	if (fd >= 0) {
		int nfd = KQ_FDCALL(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));

		if (nfd >= 0 && kq_dup3_raw(nfd, fd, O_CLOEXEC) >= 0) {
			/* The watch table was emptied (registry.c); its
			   chunk for fd stays, so this allocates nothing. */
			(void)kq_fdwatch_add(fd, KQ_WATCH_INTERNAL);
		} else {
			/*
			 * No eventfd of its own under that number (no
			 * descriptor free): the child must not keep the
			 * parent's, or each process's signals would wake the
			 * other's kqueues.  Its first signal knote makes one,
			 * or fails with EMFILE.
			 */
			kq_close_raw(fd);
			atomic_store(&sig_evfd, -1);
		}
		if (nfd >= 0)
			kq_close_raw(nfd);
	}
}

/* ---- the application's interface to dispositions ---- */

KQ_EXPORT int
sigaction(int signo, const struct sigaction *act, struct sigaction *oact)
{
	struct sigslot *s;
	struct sigaction prev;
	sigset_t old;
	int e = 0;

	if (signo <= 0 || signo >= KQ_NSIG)
		return __sigaction(signo, act, oact);
	s = &sig_tab[signo];
	if (kq_vforked()) {
		/* A vfork() child: sig_tab is its parent's, and so is
		   sig_lock (another thread of the parent may hold it).  The
		   child's own disposition is set, nothing else. */
		return __sigaction(signo, act, oact);
	}
	sig_lock_all(&old);
	if (s->watchers == 0) {
		sig_unlock_all(&old);
		return __sigaction(signo, act, oact);
	}
	sig_sync_reset(signo);
	prev = s->app;
	if (act != NULL) {
		s->app = *act;
		if (sig_install(signo) != 0) {
			e = errno;
			s->app = prev;
			(void)sig_install(signo);
		}
	}
	sig_unlock_all(&old);
	if (e != 0) {
		errno = e;
		return -1;
	}
	if (oact != NULL)
		*oact = prev;
	return 0;
}

/* What signal() returns for a disposition set with SA_SIGINFO. */
static sighandler_t
sig_old_handler(const struct sigaction *sa)
{
	union {
		void		(*si)(int, siginfo_t *, void *);
		sighandler_t	  h;
	} u;

	if (!(sa->sa_flags & SA_SIGINFO))
		return sa->sa_handler;
	u.si = sa->sa_sigaction;
	return u.h;
}

sighandler_t	bsd_signal(int, sighandler_t);
sighandler_t	ssignal(int, sighandler_t);
sighandler_t	__sysv_signal(int, sighandler_t);

static sighandler_t
sig_set(int signo, sighandler_t h, int flags)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (flags & SA_NODEFER)
		;
	else if (h != SIG_IGN && h != SIG_DFL && signo > 0 && signo < KQ_NSIG)
		sigaddset(&sa.sa_mask, signo);
	if (sigaction(signo, &sa, &old) != 0)
		return SIG_ERR;
	return sig_old_handler(&old);
}

/* BSD semantics, as glibc's signal(): restart, handler stays installed. */
KQ_EXPORT sighandler_t
signal(int signo, sighandler_t h)
{
	return sig_set(signo, h, SA_RESTART);
}

KQ_EXPORT sighandler_t
bsd_signal(int signo, sighandler_t h)
{
	return sig_set(signo, h, SA_RESTART);
}

KQ_EXPORT sighandler_t
ssignal(int signo, sighandler_t h)
{
	return sig_set(signo, h, SA_RESTART);
}

/* System V semantics: one-shot handler, no restart. */
KQ_EXPORT sighandler_t
sysv_signal(int signo, sighandler_t h)
{
	return sig_set(signo, h, SA_RESETHAND | SA_NODEFER);
}

KQ_EXPORT sighandler_t
__sysv_signal(int signo, sighandler_t h)
{
	return sig_set(signo, h, SA_RESETHAND | SA_NODEFER);
}

/* System V sigset(): SIG_HOLD blocks the signal, anything else sets it. */
KQ_EXPORT sighandler_t
sigset(int signo, sighandler_t h)
{
	sigset_t set, old;
	sighandler_t prev;

	if (signo <= 0 || signo >= KQ_NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&set);
	sigaddset(&set, signo);
	if (h == SIG_HOLD) {
		struct sigaction cur;

		if (sigaction(signo, NULL, &cur) != 0 ||
		    pthread_sigmask(SIG_BLOCK, &set, &old) != 0)
			return SIG_ERR;
		if (sigismember(&old, signo))
			return SIG_HOLD;
		return sig_old_handler(&cur);
	}
	prev = sig_set(signo, h, 0);
	if (prev == SIG_ERR || pthread_sigmask(SIG_UNBLOCK, &set, &old) != 0)
		return SIG_ERR;
	return sigismember(&old, signo) ? SIG_HOLD : prev;
}

KQ_EXPORT int
sigignore(int signo)
{
	return sig_set(signo, SIG_IGN, 0) == SIG_ERR ? -1 : 0;
}

KQ_EXPORT int
siginterrupt(int signo, int flag)
{
	struct sigaction sa;

	if (sigaction(signo, NULL, &sa) != 0)
		return -1;
	if (flag)
		sa.sa_flags &= ~SA_RESTART;
	else
		sa.sa_flags |= SA_RESTART;
	return sigaction(signo, &sa, NULL);
}
