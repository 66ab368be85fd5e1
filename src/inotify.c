/*
 * inotify.c -- the kqueue's inotify instance, shared by the knotes that
 * need file-system notifications: EVFILT_READ on regular files (growth
 * after EOF, filt_fd.c) and EVFILT_VNODE (filt_vnode.c).
 *
 * One inotify instance per kqueue, created on first use and registered as
 * the internal source KQ_SRC_INOTIFY.  Files are watched through
 * /proc/self/fd/N, so a watch follows the open file (rename, unlink) and
 * never opens it.  The kernel gives one watch descriptor (wd) per inode
 * and instance: knotes on the same inode -- through the same or different
 * descriptors -- share it.  Each knote holds a reference (struct iref) with
 * the inotify events it needs; the watch's kernel mask is the union of
 * its references' and shrinks when a reference goes, and the watch is
 * removed with its last reference.  Two hash tables find a watch by wd
 * (event delivery) and a reference by knote (changes).
 *
 * Events for a VNODE knote go to filt_vnode_inotify(); a READ knote is put
 * on the active list, where its filter re-checks size - offset.  Directory
 * entry events (they carry a name) are translated here, because a rename
 * within one directory shows as IN_MOVED_FROM + IN_MOVED_TO with the same
 * cookie, which FreeBSD reports differently from a move between two.
 *
 * Called with kq_lock held.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "kq_int.h"
#include "ksys.h"
#include "fault.h"
#include "kq_inotify.h"

struct iwatch;

struct iref {
	struct knote	*r_kn;
	struct iwatch	*r_w;
	uint32_t	 r_mask;	/* inotify events this knote needs */
	struct iref	*r_wnext;	/* the watch's references */
	struct iref	*r_hnext;	/* hash chain by knote */
};

struct iwatch {
	int		 w_wd;
	uint32_t	 w_mask;	/* the mask the kernel has */
	dev_t		 w_dev;
	ino_t		 w_ino;
	struct iref	*w_refs;
	struct iwatch	*w_hnext;	/* hash chain by wd */
};

struct kq_inot {
	struct iwatch	**in_wtab;
	size_t		  in_wsize, in_nw;
	struct iref	**in_rtab;
	size_t		  in_rsize, in_nr;
	/* an IN_MOVED_FROM waiting for its IN_MOVED_TO */
	int		  in_pwd;
	uint32_t	  in_pcookie, in_pisdir;
	int		  in_pending;
	int		  in_reading;	/* inside kq_inotify_ready */
	uint64_t	  in_synced;	/* kq_scanid of the last drain + 1 */
	/* The read buffer (kq_inotify_ready), here rather than on the
	   stack: it is read during a collection, possibly under another
	   kqueue's (kq_absorb), on a thread whose stack may be
	   PTHREAD_STACK_MIN. */
	union {
		char			b[8192];
		struct inotify_event	ie;
	} in_rbuf;
};

#define IN_READMASK	(IN_MODIFY | IN_ATTRIB)
#define IN_ENTRYMASK	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)

static struct kq_inot *
inot_of(struct kqueue *kq)
{
	return kq->kq_src[KQ_SRC_INOTIFY].ks_arg;
}

static size_t
wd_hash(int wd, size_t size)
{
	return ((uint32_t)wd * 2654435761u) & (size - 1);
}

static size_t
kn_hash(const struct knote *kn, size_t size)
{
	uint64_t h = (uint64_t)(uintptr_t)kn * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t)(h >> 32) & (size - 1);
}

static struct iwatch *
watch_find(struct kq_inot *in, int wd)
{
	struct iwatch *w;

	if (in == NULL || in->in_wsize == 0)
		return NULL;
	for (w = in->in_wtab[wd_hash(wd, in->in_wsize)]; w != NULL;
	    w = w->w_hnext)
		if (w->w_wd == wd)
			return w;
	return NULL;
}

static struct iref *
ref_find(struct kq_inot *in, const struct knote *kn)
{
	struct iref *r;

	if (in == NULL || in->in_rsize == 0)
		return NULL;
	for (r = in->in_rtab[kn_hash(kn, in->in_rsize)]; r != NULL;
	    r = r->r_hnext)
		if (r->r_kn == kn)
			return r;
	return NULL;
}

/* Make room for one more entry in each table. */
static int
inot_grow(struct kq_inot *in)
{
	size_t i, ns;

	if (in->in_nw + 1 > in->in_wsize) {
		struct iwatch **nt, *w, *next;

		ns = in->in_wsize ? in->in_wsize * 2 : 16;
		if ((nt = kq_calloc(ns, sizeof(*nt))) == NULL)
			return ENOMEM;
		for (i = 0; i < in->in_wsize; i++)
			for (w = in->in_wtab[i]; w != NULL; w = next) {
				next = w->w_hnext;
				w->w_hnext = nt[wd_hash(w->w_wd, ns)];
				nt[wd_hash(w->w_wd, ns)] = w;
			}
		kq_free(in->in_wtab);
		in->in_wtab = nt;
		in->in_wsize = ns;
	}
	if (in->in_nr + 1 > in->in_rsize) {
		struct iref **nt, *r, *next;

		ns = in->in_rsize ? in->in_rsize * 2 : 16;
		if ((nt = kq_calloc(ns, sizeof(*nt))) == NULL)
			return ENOMEM;
		for (i = 0; i < in->in_rsize; i++)
			for (r = in->in_rtab[i]; r != NULL; r = next) {
				next = r->r_hnext;
				r->r_hnext = nt[kn_hash(r->r_kn, ns)];
				nt[kn_hash(r->r_kn, ns)] = r;
			}
		kq_free(in->in_rtab);
		in->in_rtab = nt;
		in->in_rsize = ns;
	}
	return 0;
}

static void
watch_unhash(struct kq_inot *in, struct iwatch *w)
{
	struct iwatch **pp = &in->in_wtab[wd_hash(w->w_wd, in->in_wsize)];

	for (; *pp != NULL; pp = &(*pp)->w_hnext)
		if (*pp == w) {
			*pp = w->w_hnext;
			in->in_nw--;
			return;
		}
}

/* Unlink r from the knote hash and from its watch; free it. */
static void
ref_free(struct kq_inot *in, struct iref *r)
{
	struct iref **pp = &in->in_rtab[kn_hash(r->r_kn, in->in_rsize)];

	for (; *pp != NULL; pp = &(*pp)->r_hnext)
		if (*pp == r) {
			*pp = r->r_hnext;
			in->in_nr--;
			break;
		}
	for (pp = &r->r_w->w_refs; *pp != NULL; pp = &(*pp)->r_wnext)
		if (*pp == r) {
			*pp = r->r_wnext;
			break;
		}
	kq_free(r);
}

static void
fd_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/*
 * Give watch w the union of its references' masks, through the descriptor
 * of one of them that still names w's inode.  Only ever narrows the mask
 * (additions use IN_MASK_ADD), so failing to find such a descriptor just
 * leaves some unneeded events subscribed.
 */
static void
watch_narrow(struct kqueue *kq, struct kq_inot *in, struct iwatch *w)
{
	struct iref *r;
	uint32_t want = 0;
	char path[64];
	struct stat st;
	int wd, ifd = kq->kq_src[KQ_SRC_INOTIFY].ks_fd;

	for (r = w->w_refs; r != NULL; r = r->r_wnext)
		want |= r->r_mask;
	if (want == w->w_mask || kq->kq_dead)
		return;
	for (r = w->w_refs; r != NULL; r = r->r_wnext) {
		int fd = (int)r->r_kn->kn_ident;

		/* A port's file association has a path, no descriptor. */
		if (r->r_kn->kn_filter == KQ_EVFILT_PORTFILE)
			continue;
		if (fstat(fd, &st) != 0 || st.st_dev != w->w_dev ||
		    st.st_ino != w->w_ino)
			continue;
		fd_path(path, sizeof(path), fd);
		wd = inotify_add_watch(ifd, path, want);
		if (wd == w->w_wd) {
			w->w_mask = want;
			return;
		}
		if (wd >= 0) {
			/* The number changed files under us: undo. */
			struct iwatch *o = watch_find(in, wd);

			if (o == NULL)
				(void)inotify_rm_watch(ifd, wd);
			else
				(void)inotify_add_watch(ifd, path, o->w_mask);
		}
	}
}

static void kq_inotify_ready(struct kqueue *, struct kqsrc *, uint32_t);

/*
 * Drop the reference r; remove or narrow its watch.  A watch removed
 * queues IN_IGNORED, which would leave the kqueue's descriptor readable
 * with nothing pending (FreeBSD's close or EV_DELETE of a file's last
 * knote leaves nothing behind): the queue is read at once, unless this
 * comes from its reading, which goes on to the queue's end anyway.
 */
static void
ref_release(struct kqueue *kq, struct kq_inot *in, struct iref *r)
{
	struct iwatch *w = r->r_w;
	struct kqsrc *src = &kq->kq_src[KQ_SRC_INOTIFY];

	ref_free(in, r);
	if (w->w_refs == NULL) {
		int removed = !kq->kq_dead &&
		    inotify_rm_watch(src->ks_fd, w->w_wd) == 0;

		watch_unhash(in, w);
		kq_free(w);
		if (removed && !in->in_reading && src->ks_ready != NULL)
			kq_inotify_ready(kq, src, 0);
	} else
		watch_narrow(kq, in, w);
}

/* Deliver the inotify event mask (or NOTE_* hint) to one reference. */
static void
ref_event(struct kqueue *kq, struct iref *r, uint32_t mask, uint32_t hint)
{
	struct knote *kn = r->r_kn;

	if (kn->kn_filter == EVFILT_VNODE) {
		filt_vnode_inotify(kq, kn, mask, hint);
		return;
	}
	if (kn->kn_filter == KQ_EVFILT_PORTFILE) {
		port_file_inotify(kq, kn, mask, hint);	/* port.c */
		return;
	}
	/* EVFILT_READ on a file or directory: re-check size - offset. */
	if ((mask & (IN_READMASK | IN_DELETE_SELF | IN_UNMOUNT |
	    IN_IGNORED | IN_Q_OVERFLOW)) && !(kn->kn_status & KN_DISABLED))
		knote_enqueue(kq, kn);
}

/* A directory-entry change (hint: NOTE_* bits) on the watch wd. */
static void
entry_event(struct kqueue *kq, struct kq_inot *in, int wd, uint32_t hint)
{
	struct iwatch *w = watch_find(in, wd);
	struct iref *r;

	for (r = w ? w->w_refs : NULL; r != NULL; r = r->r_wnext)
		if (r->r_kn->kn_filter == EVFILT_VNODE ||
		    r->r_kn->kn_filter == KQ_EVFILT_PORTFILE)
			ref_event(kq, r, 0, hint);
}

/* An IN_MOVED_FROM whose IN_MOVED_TO did not follow: a move out. */
static void
flush_pending(struct kqueue *kq, struct kq_inot *in)
{
	if (!in->in_pending)
		return;
	in->in_pending = 0;
	entry_event(kq, in, in->in_pwd, NOTE_WRITE | NOTE_EXTEND |
	    (in->in_pisdir ? NOTE_LINK : 0));
}

static void
handle_event(struct kqueue *kq, struct kq_inot *in,
    const struct inotify_event *ie)
{
	uint32_t isdir = ie->mask & IN_ISDIR;
	struct iwatch *w;
	struct iref *r, *next;

	if (in->in_pending) {
		if ((ie->mask & IN_MOVED_TO) && ie->len > 0 &&
		    ie->wd == in->in_pwd && ie->cookie == in->in_pcookie) {
			/* Renamed within the directory. */
			in->in_pending = 0;
			entry_event(kq, in, ie->wd, NOTE_WRITE);
			return;
		}
		flush_pending(kq, in);
	}
	if (ie->mask & IN_Q_OVERFLOW) {
		size_t i;

		/* Events were lost: every knote re-checks what it can. */
		for (i = 0; i < in->in_wsize; i++)
			for (w = in->in_wtab[i]; w != NULL; w = w->w_hnext)
				for (r = w->w_refs; r != NULL; r = r->r_wnext)
					ref_event(kq, r, IN_Q_OVERFLOW, 0);
		return;
	}
	if ((w = watch_find(in, ie->wd)) == NULL)
		return;
	if (ie->len > 0) {
		/* About an entry of the watched directory. */
		if (ie->mask & (IN_CREATE | IN_DELETE))
			entry_event(kq, in, ie->wd, NOTE_WRITE |
			    (isdir ? NOTE_LINK : 0));
		else if (ie->mask & IN_MOVED_FROM) {
			in->in_pending = 1;
			in->in_pwd = ie->wd;
			in->in_pcookie = ie->cookie;
			in->in_pisdir = isdir;
		} else if (ie->mask & IN_MOVED_TO)
			entry_event(kq, in, ie->wd, NOTE_WRITE | NOTE_EXTEND |
			    (isdir ? NOTE_LINK : 0));
		/* Entries' own modifications concern READ knotes only. */
		if (ie->mask & IN_READMASK)
			for (r = w->w_refs; r != NULL; r = r->r_wnext)
				if (r->r_kn->kn_filter == EVFILT_READ)
					ref_event(kq, r, ie->mask, 0);
		return;
	}
	for (r = w->w_refs; r != NULL; r = r->r_wnext)
		ref_event(kq, r, ie->mask & ~IN_ISDIR, 0);
	if (ie->mask & IN_IGNORED) {
		/* The kernel removed the watch (inode gone, unmount). */
		for (r = w->w_refs; r != NULL; r = next) {
			next = r->r_wnext;
			ref_free(in, r);
		}
		watch_unhash(in, w);
		kq_free(w);
	}
}

static void
kq_inotify_ready(struct kqueue *kq, struct kqsrc *src, uint32_t events)
{
	/* Without the source's state (being torn down): just drained, with
	   room for one event of the longest name. */
	union {
		char			b[sizeof(struct inotify_event) +
					  NAME_MAX + 1];
		struct inotify_event	ie;
	} small;
	struct kq_inot *in = src->ks_arg;
	char *buf = in != NULL ? in->in_rbuf.b : small.b;
	size_t size = in != NULL ? sizeof(in->in_rbuf.b) : sizeof(small.b);
	ssize_t n;

	(void)events;
	if (in != NULL)
		in->in_reading = 1;
	while ((n = kq_nc_read(src->ks_fd, buf, size)) > 0) {
		char *p;

		for (p = buf; p < buf + n;) {
			struct inotify_event *ie =
			    (struct inotify_event *)(void *)p;

			if (in != NULL)
				handle_event(kq, in, ie);
			p += sizeof(*ie) + ie->len;
		}
	}
	if (in != NULL) {
		flush_pending(kq, in);
		in->in_reading = 0;
	}
}

/*
 * Read the events already queued, so that a knote about to be reported
 * carries every flag of what happened before the kevent() call (FreeBSD
 * updates knotes synchronously).  At most once per collection.
 */
void
kq_inotify_sync(struct kqueue *kq)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_INOTIFY];
	struct kq_inot *in = src->ks_arg;

	if (in == NULL || src->ks_ready == NULL || kq->kq_dead ||
	    in->in_synced == kq->kq_scanid + 1)
		return;
	in->in_synced = kq->kq_scanid + 1;
	kq_inotify_ready(kq, src, 0);
}

/*
 * Read the events already queued, now: before a change replaces a VNODE
 * knote's fflags, what happened until then is recorded under the old ones,
 * as FreeBSD records each operation when it happens.
 */
void
kq_inotify_drain(struct kqueue *kq)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_INOTIFY];

	if (src->ks_arg == NULL || src->ks_ready == NULL || kq->kq_dead)
		return;
	kq_inotify_ready(kq, src, 0);
}

static void
kq_inotify_fini(struct kqueue *kq, struct kqsrc *src)
{
	struct kq_inot *in = src->ks_arg;
	size_t i;

	if (in == NULL)
		return;
	/* Normally empty: every knote was dropped before. */
	for (i = 0; i < in->in_rsize; i++)
		while (in->in_rtab[i] != NULL)
			ref_free(in, in->in_rtab[i]);
	for (i = 0; i < in->in_wsize; i++)
		while (in->in_wtab[i] != NULL) {
			struct iwatch *w = in->in_wtab[i];

			in->in_wtab[i] = w->w_hnext;
			kq_free(w);
		}
	kq_free(in->in_wtab);
	kq_free(in->in_rtab);
	kq_free(in);
	src->ks_arg = NULL;
}

/* The kqueue's inotify state, creating the instance on first use. */
static struct kq_inot *
inot_get_made(struct kqueue *kq, int *error)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_INOTIFY];
	struct kq_inot *in;
	int fd, e;

	if (src->ks_ready != NULL && src->ks_arg != NULL)
		return src->ks_arg;
	if ((in = kq_calloc(1, sizeof(*in))) == NULL) {
		*error = ENOMEM;
		return NULL;
	}
	if (src->ks_ready == NULL) {
		fd = KQ_FDCALL(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
		if (fd < 0) {
			*error = errno;
			kq_free(in);
			return NULL;
		}
		e = kq_src_add(kq, KQ_SRC_INOTIFY, fd, kq_inotify_ready);
		if (e != 0) {
			kq_close_raw(fd);
			kq_free(in);
			*error = e;
			return NULL;
		}
	}
	src->ks_fini = kq_inotify_fini;
	src->ks_arg = in;
	return in;
}

/* inot_get_made() under kq_mkfd_begin(): see registry.c. */
static struct kq_inot *
inot_get(struct kqueue *kq, int *error)
{
	struct kq_inot *r;

	if (kq->kq_src[KQ_SRC_INOTIFY].ks_ready != NULL)
		return inot_get_made(kq, error);	/* nothing to make */
	kq_mkfd_begin();
	r = inot_get_made(kq, error);
	kq_mkfd_end();
	return r;
}

/*
 * Watch kn's file, named by path (its descriptor's /proc/self/fd/N, or fd
 * -1 and a path: a port's PORT_SOURCE_FILE association), for the inotify
 * events mask (replacing what kn asked for before).  Returns 0 or an errno
 * (ENOSPC: max_user_watches).
 */
static int
inot_set(struct kqueue *kq, struct knote *kn, const char *path, int fd,
    uint32_t mask)
{
	struct kq_inot *in;
	struct iref *r;
	struct iwatch *w;
	struct stat st;
	int wd, e = 0, ifd, nofollow = (mask & IN_DONT_FOLLOW) != 0;

	if (kq->kq_dead)
		return 0;
	if ((in = inot_get(kq, &e)) == NULL)
		return e;
	r = ref_find(in, kn);
	if (r != NULL && r->r_mask == mask)
		return 0;
	if ((e = inot_grow(in)) != 0)
		return e;
	ifd = kq->kq_src[KQ_SRC_INOTIFY].ks_fd;
	wd = inotify_add_watch(ifd, path, mask | IN_MASK_ADD);
	if (wd < 0)
		return errno == ENOENT && fd >= 0 ? EBADF : errno;
	mask &= ~(uint32_t)IN_DONT_FOLLOW;
	if ((w = watch_find(in, wd)) == NULL) {
		if ((w = kq_calloc(1, sizeof(*w))) == NULL) {
			(void)inotify_rm_watch(ifd, wd);
			return ENOMEM;
		}
		w->w_wd = wd;
		w->w_mask = mask;
		if (fd >= 0 ? fstat(fd, &st) == 0 : (nofollow ?
		    lstat(path, &st) : stat(path, &st)) == 0) {
			w->w_dev = st.st_dev;
			w->w_ino = st.st_ino;
		}
		w->w_hnext = in->in_wtab[wd_hash(wd, in->in_wsize)];
		in->in_wtab[wd_hash(wd, in->in_wsize)] = w;
		in->in_nw++;
	} else
		w->w_mask |= mask;
	if (r != NULL && r->r_w != w) {
		/* The descriptor now names another inode. */
		ref_release(kq, in, r);
		r = NULL;
	}
	if (r == NULL) {
		if ((r = kq_calloc(1, sizeof(*r))) == NULL) {
			if (w->w_refs == NULL) {
				(void)inotify_rm_watch(ifd, wd);
				watch_unhash(in, w);
				kq_free(w);
			}
			return ENOMEM;
		}
		r->r_kn = kn;
		r->r_w = w;
		r->r_wnext = w->w_refs;
		w->w_refs = r;
		r->r_hnext = in->in_rtab[kn_hash(kn, in->in_rsize)];
		in->in_rtab[kn_hash(kn, in->in_rsize)] = r;
		in->in_nr++;
	}
	r->r_mask = mask;
	watch_narrow(kq, in, w);
	return 0;
}

int
kq_inotify_set(struct kqueue *kq, struct knote *kn, uint32_t mask)
{
	char path[64];

	fd_path(path, sizeof(path), (int)kn->kn_ident);
	return inot_set(kq, kn, path, (int)kn->kn_ident, mask);
}

/* A path's file (port.c: PORT_SOURCE_FILE); IN_DONT_FOLLOW as given. */
int
kq_inotify_set_path(struct kqueue *kq, struct knote *kn, const char *path,
    uint32_t mask)
{
	return inot_set(kq, kn, path, -1, mask);
}

/* READ on a regular file: be woken when it is written to. */
int
kq_inotify_watch(struct kqueue *kq, struct knote *kn)
{
	if (ref_find(inot_of(kq), kn) != NULL)
		return 0;
	return kq_inotify_set(kq, kn, IN_READMASK);
}

/* kn goes away: drop its reference to its watch, if it has one. */
void
kq_inotify_unwatch(struct kqueue *kq, struct knote *kn)
{
	struct kq_inot *in = inot_of(kq);
	struct iref *r = ref_find(in, kn);

	if (r != NULL)
		ref_release(kq, in, r);
}
