/*
 * inotify.c -- growth notification for EVFILT_READ on regular files.
 *
 * epoll cannot watch regular files.  A READ knote on a file is tracked in
 * userspace (fdreg.c: R_NOPOLL): it is reported while size - offset != 0.
 * When it reaches the end, the file is watched with one inotify instance
 * per kqueue (created on first use), and a write to the file puts the
 * knote back on the active list.  Watches are keyed by inotify watch
 * descriptor; several knotes may share one (same inode).
 *
 * Called with kq_lock held.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/inotify.h>

#include "kq_int.h"

struct kq_inotwatch {
	int		 iw_wd;
	struct knote	*iw_kn;
};

struct kq_inot {
	size_t			 in_n, in_cap;
	struct kq_inotwatch	 in_w[];
};

static struct kq_inot **
inot_of(struct kqueue *kq)
{
	return (struct kq_inot **)&kq->kq_src[KQ_SRC_INOTIFY].ks_arg;
}

static void
kq_inotify_ready(struct kqueue *kq, struct kqsrc *src, uint32_t events)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct kq_inot *in = src->ks_arg;
	ssize_t n;

	(void)events;
	while ((n = read(src->ks_fd, buf, sizeof(buf))) > 0) {
		char *p;

		for (p = buf; p < buf + n;) {
			struct inotify_event *ie = (struct inotify_event *)(void *)p;
			size_t i;

			for (i = 0; in != NULL && i < in->in_n; i++)
				if (in->in_w[i].iw_wd == ie->wd &&
				    !(in->in_w[i].iw_kn->kn_status & KN_DISABLED))
					knote_enqueue(kq, in->in_w[i].iw_kn);
			p += sizeof(*ie) + ie->len;
		}
	}
}

int
kq_inotify_watch(struct kqueue *kq, struct knote *kn)
{
	struct kq_inot **inp = inot_of(kq), *in;
	struct kqsrc *src = &kq->kq_src[KQ_SRC_INOTIFY];
	char path[64];
	size_t i;
	int wd;

	if (kq->kq_dead)
		return 0;
	in = *inp;
	for (i = 0; in != NULL && i < in->in_n; i++)
		if (in->in_w[i].iw_kn == kn)
			return 0;
	if (src->ks_ready == NULL) {
		int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK), e;

		if (fd < 0)
			return errno;
		e = kq_src_add(kq, KQ_SRC_INOTIFY, fd, kq_inotify_ready);
		if (e != 0) {
			close(fd);
			return e;
		}
		src->ks_arg = in;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)kn->kn_ident);
	wd = inotify_add_watch(src->ks_fd, path, IN_MODIFY | IN_ATTRIB);
	if (wd < 0)
		return errno;
	if (in == NULL || in->in_n == in->in_cap) {
		size_t cap = in ? in->in_cap * 2 : 8;
		struct kq_inot *nin = realloc(in, sizeof(*in) +
		    cap * sizeof(in->in_w[0]));

		if (nin == NULL)
			return ENOMEM;
		if (in == NULL)
			nin->in_n = 0;
		nin->in_cap = cap;
		in = nin;
		*inp = in;
	}
	in->in_w[in->in_n].iw_wd = wd;
	in->in_w[in->in_n].iw_kn = kn;
	in->in_n++;
	return 0;
}

void
kq_inotify_unwatch(struct kqueue *kq, struct knote *kn)
{
	struct kq_inot *in = *inot_of(kq);
	size_t i, j;
	int wd = -1, shared = 0;

	for (i = 0; in != NULL && i < in->in_n; i++) {
		if (in->in_w[i].iw_kn == kn) {
			wd = in->in_w[i].iw_wd;
			in->in_w[i] = in->in_w[--in->in_n];
			break;
		}
	}
	if (wd < 0)
		return;
	for (j = 0; j < in->in_n; j++)
		if (in->in_w[j].iw_wd == wd)
			shared = 1;
	if (!shared && !kq->kq_dead)
		(void)inotify_rm_watch(kq->kq_src[KQ_SRC_INOTIFY].ks_fd, wd);
	if (in->in_n == 0) {
		free(in);
		*inot_of(kq) = NULL;
	}
}
