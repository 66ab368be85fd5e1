/*
 * fdprobe.c -- what is behind a descriptor number: the probes libkq needs
 * in several places (kqueue liveness, kqueue lookup by a dup(), descriptor
 * kinds, fork-child and rebuild checks, readiness re-checks, fdinfo
 * fields).  No locks, no state.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>

#include <sys/stat.h>

#include "kq_int.h"
#include "ksys.h"

/*
 * The anonymous-inode name of fd ("eventpoll", "eventfd", ...) into buf.
 * Returns 1 when fd is an anonymous inode, 0 when it is some other file,
 * -1 when fd is not open (or /proc cannot tell).
 */
int
fd_anon_name(int fd, char *buf, size_t len)
{
	static const char pfx[] = "anon_inode:[";
	char path[64], link[64];
	ssize_t n;
	size_t l;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -1;
	link[n] = 0;
	l = strlen(link);
	if (strncmp(link, pfx, sizeof(pfx) - 1) != 0 || link[l - 1] != ']')
		return 0;
	link[l - 1] = 0;
	snprintf(buf, len, "%s", link + sizeof(pfx) - 1);
	return 1;
}

/* Is fd an epoll instance?  1 yes, 0 another file, -1 not open. */
int
fd_is_epoll(int fd)
{
	char name[32];
	int r = fd_anon_name(fd, name, sizeof(name));

	return r <= 0 ? r : strcmp(name, "eventpoll") == 0;
}

/* Do descriptors a and b refer to the same open file?  kcmp(KCMP_FILE). */
int
fd_same_file(int a, int b)
{
	pid_t pid = (pid_t)syscall(SYS_getpid);

	return syscall(SYS_kcmp, pid, pid, KCMP_FILE, a, b) == 0;
}

/*
 * Is the open file at fd the one registered under number fd in the epoll
 * set epfd?  kcmp(KCMP_EPOLL_TFD), asked of every registration under the
 * number (slot.toff): a number closed behind the C library's back while a
 * dup() keeps its file, then reused and registered again, has two.
 * Returns 1 yes, 0 no (also when fd is closed), -1 when kcmp is not
 * available (a kernel without CONFIG_CHECKPOINT_RESTORE, a seccomp
 * filter): the caller decides another way.  *foreign (if not NULL) is set
 * when a registration under the number is of another file.
 * Async-signal-safe.
 */
/* Did the kcmp() that just failed fail for want of kcmp itself (a kernel
   without CONFIG_CHECKPOINT_RESTORE, a seccomp filter)? */
static int
kcmp_refused(void)
{
	return errno == ENOSYS || errno == EPERM || errno == EACCES;
}

int
epoll_probe(int epfd, int fd, int *foreign)
{
	struct kcmp_epoll_slot slot;
	pid_t pid = (pid_t)syscall(SYS_getpid);
	int found = 0;
	long r;

	if (foreign != NULL)
		*foreign = 0;
	slot.efd = (uint32_t)epfd;
	slot.tfd = (uint32_t)fd;
	for (slot.toff = 0; slot.toff < 64; slot.toff++) {
		r = syscall(SYS_kcmp, pid, pid, KCMP_EPOLL_TFD, fd,
		    (unsigned long)&slot);
		if (r == 0)
			found = 1;
		else if (r > 0) {
			if (foreign != NULL)
				*foreign = 1;
		} else if (kcmp_refused())
			return -1;
		else
			break;	/* ENOENT: no more; EBADF: fd closed */
		if (found && foreign == NULL)
			break;
	}
	return found;
}

/*
 * A digest of the file open at fd (its device and inode: sockets, pipes
 * and anonymous files have inodes too), never 0; 0 if fd is not open or
 * cannot be asked.  Two files told apart by it differ; two with the same
 * digest are the same file but for a 64-bit collision.
 */
uint64_t
fd_fileid(int fd)
{
	struct stat st;
	uint64_t id;

	if (fstat(fd, &st) != 0)
		return 0;
	id = ((uint64_t)st.st_ino * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)st.st_dev;
	return id != 0 ? id : 1;
}

int
epoll_holds(int epfd, int fd)
{
	return epoll_probe(epfd, fd, NULL);
}

/*
 * Does a descriptor of this process other than fd and except hold fd's
 * open file?  1 yes, or cannot tell (no /proc, kcmp refused); 0 no.  For
 * a fork child, which must not close a number that may be the program's:
 * raw system calls only.
 */
int
fd_file_shared(int fd, int except)
{
	char buf[2048];
	pid_t pid = (pid_t)syscall(SYS_getpid);
	int d, shared = 0;
	long n = 0, o, r;

	d = kq_nc_open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return 1;
	while (!shared &&
	    (n = syscall(SYS_getdents64, d, buf, sizeof(buf))) > 0)
		for (o = 0; o < n && !shared; ) {
			/* struct linux_dirent64: d_reclen at 16, d_name
			   at 19 */
			const char *name = buf + o + 19;
			unsigned short reclen;
			int k = 0;

			memcpy(&reclen, buf + o + 16, sizeof(reclen));
			o += reclen;
			if (*name < '0' || *name > '9')
				continue;
			for (; *name >= '0' && *name <= '9'; name++)
				k = k * 10 + (*name - '0');
			if (k == fd || k == except || k == d)
				continue;
			r = syscall(SYS_kcmp, pid, pid, KCMP_FILE, fd, k);
			if (r == 0 || (r < 0 && errno != EBADF))
				shared = 1;
		}
	if (n < 0)
		shared = 1;
	kq_close_raw(d);
	return shared;
}

/*
 * Does number fd, which kq claims (kq_intfd), still hold the file kq put
 * there?  Its internal descriptors are registered in its set under their
 * numbers, and kq_waitfd is a duplicate of the set, the doorbell
 * registered in it.  The set is asked through kq_waitfd, kq's own, not
 * kq_fd: a dead kqueue (closed, a thread still inside kevent()) keeps its
 * descriptors until it is destroyed, and kq_fd is not its number then.
 * 1 yes or cannot tell (kcmp refused), 0 no.  Asked with reg_lock or kq's
 * lock held.
 */
int
kq_holds_number(const struct kqueue *kq, int fd)
{
	int set = kq->kq_waitfd >= 0 ? kq->kq_waitfd : kq->kq_fd,
	    bell = kq->kq_src[KQ_SRC_BELL].ks_fd;

	if (fd != set)
		return epoll_holds(set, fd) != 0;
	return bell < 0 || epoll_holds(set, bell) != 0;
}

/*
 * Readiness of fd now, for a re-check without an epoll event at hand:
 * the epoll-style event mask for events (POLLIN, POLLOUT ...), or -1 if fd
 * is not open.
 */
int
fd_poll(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint32_t r = 0;

	if (kq_nc_poll(&p, 1, 0) < 0)
		return 0;
	if (p.revents & POLLNVAL)
		return -1;
	if (p.revents & POLLIN)
		r |= EPOLLIN;
	if (p.revents & POLLOUT)
		r |= EPOLLOUT;
	if (p.revents & POLLRDHUP)
		r |= EPOLLRDHUP;
	if (p.revents & POLLHUP)
		r |= EPOLLHUP;
	if (p.revents & POLLERR)
		r |= EPOLLERR;
	return (int)r;
}

/*
 * Read the /proc file at path into buf (at most size - 1 bytes, then a
 * NUL).  Returns the length, or 0 when it cannot be read.  The file is
 * opened and closed with no fork() between (registry.c's maker gate): this
 * is on the event path of eventfds and pidfds, where the file already costs
 * three system calls.
 */
size_t
kq_read_proc(const char *path, char *buf, size_t size)
{
	ssize_t n = -1;
	int fd;

	kq_mkfd_begin();
	if ((fd = kq_nc_open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = kq_nc_read(fd, buf, size - 1);
		kq_close_raw(fd);
	}
	kq_mkfd_end();
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return (size_t)n;
}

/*
 * The number after "key" (e.g. "eventfd-count:", "Pid:") in
 * /proc/self/fdinfo/<fd>, read in base.  Returns 1 and sets *val, or 0
 * when the field is not there.
 */
int
fd_info_field(int fd, const char *key, int base, unsigned long long *val)
{
	char path[64], buf[1024], *p;
	size_t kl = strlen(key);

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (kq_read_proc(path, buf, sizeof(buf)) == 0)
		return 0;
	/* A field starts a line. */
	for (p = buf; (p = strstr(p, key)) != NULL; p += kl)
		if (p == buf || p[-1] == '\n') {
			*val = strtoull(p + kl, NULL, base);
			return 1;
		}
	return 0;
}
