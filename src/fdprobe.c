/*
 * fdprobe.c -- what is behind a descriptor number: the two probes libkq
 * needs in several places (kqueue liveness, kqueue lookup by a dup(),
 * descriptor kinds, fork-child and rebuild checks).  No locks, no state.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>

#include "kq_int.h"

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
 * set epfd?  kcmp(KCMP_EPOLL_TFD).  Async-signal-safe (fork child).
 */
int
epoll_holds(int epfd, int fd)
{
	struct kcmp_epoll_slot slot;
	pid_t pid = (pid_t)syscall(SYS_getpid);

	slot.efd = (uint32_t)epfd;
	slot.tfd = (uint32_t)fd;
	slot.toff = 0;
	return syscall(SYS_kcmp, pid, pid, KCMP_EPOLL_TFD, fd,
	    (unsigned long)&slot) == 0;
}
