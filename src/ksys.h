/*
 * ksys.h -- system calls issued inline, without a libc wrapper.
 *
 * Why: with the kernel's return-stack mitigations on x86-64, each function
 * return that spans a system call behaves as mispredicted.  A libc wrapper
 * adds one such return to every call kq makes on the hot path (epoll_ctl,
 * a non-blocking epoll_wait, FIONREAD); issuing the instruction inline
 * removes it.  Measured on the project's 2-core x86-64 VM: getppid()
 * costs 118 ns inline, 175 ns through syscall(3) from a function, and
 * each further frame spanning the call about 5 ns more.
 *
 * None of them is a cancellation point (see kq_nc_* below; kevent.c's
 * kq_wait_cancellable makes the one wait that is).  Each function returns
 * the kernel's result: >= 0, or -errno; errno is not touched.  Other
 * architectures fall back to syscall(3).
 */
#ifndef KQ_KSYS_H
#define KQ_KSYS_H

#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/types.h>

#if defined(__x86_64__)
static inline long
ksys4(long nr, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile ("syscall"
	    : "=a"(ret)
	    : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
	    : "rcx", "r11", "memory");
	return ret;
}

static inline long
ksys6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile ("syscall"
	    : "=a"(ret)
	    : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
	    : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long
ksys6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile ("svc 0"
	    : "+r"(x0)
	    : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
	    : "memory");
	return x0;
}

static inline long
ksys4(long nr, long a, long b, long c, long d)
{
	return ksys6(nr, a, b, c, d, 0, 0);
}
#else
static inline long
ksys6(long nr, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(nr, a, b, c, d, e, f);

	return r < 0 ? -errno : r;
}

static inline long
ksys4(long nr, long a, long b, long c, long d)
{
	return ksys6(nr, a, b, c, d, 0, 0);
}
#endif

struct epoll_event;

/* epoll_ctl(2) */
static inline int
ksys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	return (int)ksys4(SYS_epoll_ctl, epfd, op, fd, (long)ev);
}

/* epoll_wait(2) with a zero timeout (never blocks, so no cancellation). */
static inline int
ksys_epoll_poll(int epfd, struct epoll_event *ev, int n)
{
	return (int)ksys6(SYS_epoll_pwait, epfd, (long)ev, n, 0, 0, 8);
}

/* ioctl(2) with a pointer argument (FIONREAD, SIOCOUTQ ...). */
static inline int
ksys_ioctl(int fd, unsigned long req, void *arg)
{
	return (int)ksys4(SYS_ioctl, fd, (long)req, (long)arg, 0);
}

/*
 * getsockopt(2) on the kernel directly: kq's own queries (TCP_INFO on a
 * listener's every event, SO_TYPE) bypass the getsockopt() kq exports in
 * the C library's place (sockerr.c), which only SO_ERROR needs.
 */
static inline int
ksys_getsockopt(int fd, int level, int name, void *val, unsigned int *len)
{
	return (int)ksys6(SYS_getsockopt, fd, level, name, (long)val,
	    (long)len, 0);
}

/*
 * The C library's read(), write(), open(), poll(), recv(), send() and
 * waitid() are cancellation points: a pending pthread_cancel() acts inside
 * them and unwinds the thread.  kq calls them with its locks held (the
 * doorbell, a filter's look at its file, the proc connector), where an
 * unwinding thread would leave the lock taken for good.  kq therefore
 * never calls them: these make the same system calls, return as the C
 * library's do (-1 and errno), and cannot act on a cancellation.  The
 * only cancellation points of libkq are kevent()'s entry and its blocking
 * wait (kevent.c).
 */
static inline long
kq_nc_ret(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

static inline ssize_t
kq_nc_read(int fd, void *buf, size_t n)
{
	return kq_nc_ret(ksys4(SYS_read, fd, (long)buf, (long)n, 0));
}

static inline ssize_t
kq_nc_write(int fd, const void *buf, size_t n)
{
	return kq_nc_ret(ksys4(SYS_write, fd, (long)buf, (long)n, 0));
}

/* open(path, flags) for reading (no mode). */
static inline int
kq_nc_open(const char *path, int flags)
{
	return (int)kq_nc_ret(ksys4(SYS_openat, -100 /* AT_FDCWD */,
	    (long)path, flags, 0));
}

/* poll(2) on a struct pollfd array with a timeout in milliseconds (>= 0). */
static inline int
kq_nc_poll(void *fds, unsigned long n, int ms)
{
	struct { long s, ns; } ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	return (int)kq_nc_ret(ksys6(SYS_ppoll, (long)fds, (long)n, (long)&ts,
	    0, 8, 0));
}

static inline ssize_t
kq_nc_recvfrom(int fd, void *buf, size_t n, int flags, void *from,
    void *fromlen)
{
	return kq_nc_ret(ksys6(SYS_recvfrom, fd, (long)buf, (long)n, flags,
	    (long)from, (long)fromlen));
}

static inline ssize_t
kq_nc_send(int fd, const void *buf, size_t n, int flags)
{
	return kq_nc_ret(ksys6(SYS_sendto, fd, (long)buf, (long)n, flags, 0,
	    0));
}

/* recvmmsg(2) without a timeout. */
static inline int
kq_nc_recvmmsg(int fd, void *msgs, unsigned int n, int flags)
{
	return (int)kq_nc_ret(ksys6(SYS_recvmmsg, fd, (long)msgs, (long)n,
	    flags, 0, 0));
}

/* waitid(2) without the resource usage. */
static inline int
kq_nc_waitid(int idtype, long id, void *si, int options)
{
	return (int)kq_nc_ret(ksys6(SYS_waitid, idtype, id, (long)si, options,
	    0, 0));
}

#endif /* KQ_KSYS_H */
