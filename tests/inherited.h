/*
 * inherited.h -- the descriptors a test program was given.
 *
 * Tests that look for kq's own descriptors (an epoll set, an eventfd, a
 * timerfd...) in /proc/self/fd, in the program or in a fork child, must
 * not count one the program was started with: a harness that leaks an
 * epoll set or an eventfd into its children (not close-on-exec) would
 * fail them though kq did nothing.  A constructor notes, before main()
 * and so before any call into kq, the file (device and inode) behind
 * each open number below T_INHERITED_MAX; t_inherited(fd) is 1 while fd
 * still names that file.  A number closed and reused by kq names another
 * file and counts again -- except that eventfds, timerfds and epoll sets
 * share one anonymous inode, so a program that closes an inherited one
 * and lets kq reuse its number would miss kq's there (no test does).
 * fstat() only: async-signal-safe, and usable in a fork child of a
 * threaded program.
 */
#ifndef KQ_TEST_INHERITED_H
#define KQ_TEST_INHERITED_H

#include <sys/stat.h>

#define T_INHERITED_MAX	1024

static struct {
	dev_t	dev;
	ino_t	ino;
	char	open;
} t_inh[T_INHERITED_MAX];

__attribute__((constructor, unused)) static void
t_inherited_note(void)
{
	struct stat st;
	int fd;

	for (fd = 0; fd < T_INHERITED_MAX; fd++)
		if (fstat(fd, &st) == 0) {
			t_inh[fd].dev = st.st_dev;
			t_inh[fd].ino = st.st_ino;
			t_inh[fd].open = 1;
		}
}

/* Does fd still name a file the program was started with? */
__attribute__((unused)) static int
t_inherited(int fd)
{
	struct stat st;

	return fd >= 0 && fd < T_INHERITED_MAX && t_inh[fd].open &&
	    fstat(fd, &st) == 0 && st.st_dev == t_inh[fd].dev &&
	    st.st_ino == t_inh[fd].ino;
}

#endif
