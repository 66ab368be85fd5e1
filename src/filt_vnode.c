/*
 * filt_vnode.c -- EVFILT_VNODE: changes to a regular file or directory,
 * FreeBSD's filt_vfsvnode on top of the kqueue's inotify instance.
 *
 * The knote subscribes, through inotify.c, to the inotify events that can
 * produce the NOTE_* flags it asked for, on the inode its descriptor
 * names (via /proc/self/fd/N: the watch follows the open file across
 * rename and unlink).  Each event is one operation on the file, turned
 * here into the NOTE_* hint FreeBSD's vnode hook for it passes to knote();
 * as filt_vfsvnode does, the whole hint is recorded in vn_fired once one of
 * its flags was asked for (a write that grows the file is NOTE_WRITE |
 * NOTE_EXTEND, whichever of the two the knote asked for), disabled or not.
 * vn_fired accumulates until delivered and is reset after delivery only
 * with EV_CLEAR.  As in FreeBSD, the knote is active while vn_fired is not
 * empty, so without EV_CLEAR it is reported by every kevent() call.
 *
 * inotify does not say everything FreeBSD's vnode hooks do; fstat() fills
 * the gaps: IN_MODIFY is NOTE_WRITE, plus NOTE_EXTEND when st_size grew;
 * on a file IN_ATTRIB is NOTE_LINK when st_nlink grew (link), NOTE_DELETE
 * when it dropped (unlink, rename over it: FreeBSD reports every unlink of
 * the vnode), NOTE_ATTRIB otherwise; on a directory, whose link count
 * follows its subdirectories (entry events), it is NOTE_ATTRIB.  fstat()
 * generates no inotify event, and nothing here opens or reads the watched
 * file.
 *
 * NOTE_REVOKE: FreeBSD revokes the vnodes of a file system unmounted by
 * force.  Linux refuses to unmount a file system with open files, except
 * lazily (MNT_DETACH), and inotify's IN_UNMOUNT comes only when the last
 * open file is closed -- never while the knote's descriptor is open.  So
 * the kqueue watches /proc/self/mountinfo (EPOLLPRI on a change of the
 * mount table, internal source KQ_SRC_MOUNT) and a knote whose mount
 * (statx STATX_MNT_ID) left the table is revoked: NOTE_REVOKE if asked
 * for, and EV_EOF in any case, as filt_vfsvnode does for a doomed vnode.
 *
 * A closed descriptor: FreeBSD drops the knotes of a descriptor when it is
 * closed.  A VNODE-only descriptor chain has no epoll registration that
 * would tell, so the knote caches st_dev/st_ino and compares them when
 * it is looked at (event, EV_DELETE, EV_ADD, EV_ENABLE ...): EBADF when
 * the number is closed, ENOENT when it names another file now.
 *
 * All hooks run with kq_lock held.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "kq_int.h"
#include "ksys.h"
#include "fault.h"
#include "kq_inotify.h"
#include "fdreg.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID	0x00001000U
#endif

#define NOTE_VNODE_ALL	(NOTE_DELETE | NOTE_WRITE | NOTE_EXTEND | \
	NOTE_ATTRIB | NOTE_LINK | NOTE_RENAME | NOTE_REVOKE | NOTE_OPEN | \
	NOTE_CLOSE | NOTE_CLOSE_WRITE | NOTE_READ)

/* vn_state */
#define VS_DIR		0x01	/* a directory */
#define VS_REVOKED	0x02	/* its file system was unmounted */
#define VS_NOMNT	0x04	/* mount unknown: no revoke detection */
#define VS_DEAD		0x08	/* descriptor closed, knote kept inert */

struct vnote {
	struct knote	 vn_kn;
	uint32_t	 vn_fired;	/* requested NOTE_* seen, not delivered */
	uint32_t	 vn_state;
	uint64_t	 vn_mnt;	/* mount id of the file */
	dev_t		 vn_dev;
	ino_t		 vn_ino;
	off_t		 vn_size;	/* as of the last event */
	nlink_t		 vn_nlink;
};

#define VN(kn)	((struct vnote *)(void *)(kn))

/* ------------------------------------------------------------------ */
/* Revocation: the mount table                                        */
/* ------------------------------------------------------------------ */

struct vn_mounts {
	size_t	 m_n, m_cap;
	int	*m_ids;		/* mount ids in /proc/self/mountinfo, sorted */
};

static int
cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/*
 * Heap sort of n ints, in place.  Not qsort(): the C library's may call
 * malloc() for a large array, and this runs with kq_lock held (heap.c
 * says why kq never waits in malloc() with a lock held).
 */
static void
sort_ints(int *a, size_t n)
{
	size_t i, end, root, child;
	int t;

	for (i = n / 2; n > 1; ) {
		if (i > 0) {
			root = --i;		/* building the heap */
			end = n;
		} else {
			t = a[0];		/* the largest goes last */
			a[0] = a[--n];
			a[n] = t;
			root = 0;
			end = n;
		}
		while ((child = 2 * root + 1) < end) {
			if (child + 1 < end && a[child + 1] > a[child])
				child++;
			if (a[root] >= a[child])
				break;
			t = a[root];
			a[root] = a[child];
			a[child] = t;
			root = child;
		}
	}
}

/* Re-read the mount ids from the mountinfo descriptor fd. */
static void
mounts_read(int fd, struct vn_mounts *m)
{
	size_t len = 0, cap = 8192;
	char *buf = kq_malloc(cap), *p, *end;
	ssize_t n;

	if (buf == NULL)
		return;
	if (lseek(fd, 0, SEEK_SET) != 0)
		goto out;
	for (;;) {
		if (len + 1 >= cap) {
			char *nb = kq_realloc(buf, cap * 2);

			if (nb == NULL)
				goto out;
			buf = nb;
			cap *= 2;
		}
		n = kq_nc_read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;
	m->m_n = 0;
	for (p = buf, end = buf + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));

		if (m->m_n == m->m_cap) {
			size_t nc = m->m_cap ? m->m_cap * 2 : 64;
			int *ni = kq_realloc(m->m_ids, nc * sizeof(*ni));

			if (ni == NULL) {
				/* A partial list would revoke the knotes of
				   the mounts left out: "cannot tell". */
				m->m_n = 0;
				goto out;
			}
			m->m_ids = ni;
			m->m_cap = nc;
		}
		m->m_ids[m->m_n++] = (int)strtol(p, NULL, 10);
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	if (m->m_n > 0)
		sort_ints(m->m_ids, (size_t)m->m_n);
out:
	kq_free(buf);
}

static int
mounts_has(const struct vn_mounts *m, uint64_t id)
{
	int key = (int)id;

	return m->m_n > 0 && bsearch(&key, m->m_ids, m->m_n,
	    sizeof(*m->m_ids), cmp_int) != NULL;
}

static void
vn_revoke(struct kqueue *kq, struct vnote *vn)
{
	vn->vn_state |= VS_REVOKED;
	vn->vn_fired |= NOTE_REVOKE & vn->vn_kn.kn_sfflags;
	if (!(vn->vn_kn.kn_status & KN_DISABLED))
		knote_enqueue(kq, &vn->vn_kn);
}

/* The mount table changed: revoke the knotes whose mount left it. */
static void
mounts_ready(struct kqueue *kq, struct kqsrc *src, uint32_t events)
{
	struct vn_mounts *m = src->ks_arg;
	struct knote *kn;
	int fd;

	(void)events;
	if (m == NULL)
		return;
	mounts_read(src->ks_fd, m);
	if (m->m_n == 0)
		return;		/* cannot tell: revoke nothing */
	for (fd = 0; fd < kq->kq_fdtabsize; fd++)
		for (kn = kq->kq_fdtab[fd]; kn != NULL; kn = kn->kn_link) {
			struct vnote *vn = VN(kn);

			if (kn->kn_filter != EVFILT_VNODE || (vn->vn_state &
			    (VS_REVOKED | VS_NOMNT | VS_DEAD)))
				continue;
			if (!mounts_has(m, vn->vn_mnt))
				vn_revoke(kq, vn);
		}
}

static void
mounts_fini(struct kqueue *kq, struct kqsrc *src)
{
	struct vn_mounts *m = src->ks_arg;

	(void)kq;
	if (m != NULL) {
		kq_free(m->m_ids);
		kq_free(m);
	}
	src->ks_arg = NULL;
}

/*
 * Learn the mount of vn's file and make sure the kqueue follows the mount
 * table.  Without /proc or statx, NOTE_REVOKE is never reported (0: the
 * knote works without it); a kqueue that cannot follow the table for want
 * of a descriptor or memory fails the change instead (EMFILE, ENFILE,
 * ENOMEM), or NOTE_REVOKE would be lost without a word.
 */
static int
mounts_track_made(struct kqueue *kq, struct vnote *vn)
{
	struct kqsrc *src = &kq->kq_src[KQ_SRC_MOUNT];
	struct vn_mounts *m;
	struct statx stx;

	vn->vn_state |= VS_NOMNT;
	if (statx((int)vn->vn_kn.kn_ident, "", AT_EMPTY_PATH, STATX_MNT_ID,
	    &stx) != 0 || !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	vn->vn_mnt = stx.stx_mnt_id;
	if (src->ks_ready == NULL) {
		int e, fd = kq_nc_open("/proc/self/mountinfo",
		    O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return errno == EMFILE || errno == ENFILE ||
			    errno == ENOMEM ? errno : 0;
		if ((m = kq_calloc(1, sizeof(*m))) == NULL)
			e = ENOMEM;
		else
			e = kq_src_add_ev(kq, KQ_SRC_MOUNT, fd, EPOLLPRI,
			    mounts_ready);
		if (e != 0) {
			kq_free(m);
			kq_close_raw(fd);
			return e == EMFILE || e == ENFILE ? e : ENOMEM;
		}
		src->ks_arg = m;
		src->ks_fini = mounts_fini;
		mounts_read(fd, m);
	}
	m = src->ks_arg;
	if (m == NULL)
		return 0;
	if (!mounts_has(m, vn->vn_mnt))
		mounts_read(src->ks_fd, m);	/* mounted since */
	/* A file of another mount namespace: we cannot see its mount. */
	if (mounts_has(m, vn->vn_mnt))
		vn->vn_state &= ~VS_NOMNT;
	return 0;
}

/* mounts_track_made() under kq_mkfd_begin(): see registry.c. */
static int
mounts_track(struct kqueue *kq, struct vnote *vn)
{
	int e;

	if (kq->kq_src[KQ_SRC_MOUNT].ks_ready != NULL)
		return mounts_track_made(kq, vn);
	kq_mkfd_begin();
	e = mounts_track_made(kq, vn);
	kq_mkfd_end();
	return e;
}

/* ------------------------------------------------------------------ */
/* The knote                                                          */
/* ------------------------------------------------------------------ */

/* The inotify events that can produce the NOTE_* flags in ff. */
static uint32_t
vn_inmask(uint32_t ff, int dir)
{
	uint32_t m = IN_DELETE_SELF;	/* rare; keeps the mask non-empty */

	if (dir) {
		if (ff & (NOTE_WRITE | NOTE_EXTEND | NOTE_LINK))
			m |= IN_CREATE | IN_DELETE | IN_MOVED_FROM |
			    IN_MOVED_TO;
	} else if (ff & (NOTE_WRITE | NOTE_EXTEND))
		m |= IN_MODIFY;
	if (ff & (NOTE_DELETE | NOTE_ATTRIB | NOTE_LINK))
		m |= IN_ATTRIB;
	if (ff & NOTE_RENAME)
		m |= IN_MOVE_SELF;
	if (ff & NOTE_OPEN)
		m |= IN_OPEN;
	if (ff & NOTE_CLOSE)
		m |= IN_CLOSE_NOWRITE;
	if (ff & NOTE_CLOSE_WRITE)
		m |= IN_CLOSE_WRITE;
	if (ff & NOTE_READ)
		m |= IN_ACCESS;
	return m;
}

static int
vn_maperr(int e)
{
	if (e == ENOSPC)
		return ENOMEM;	/* fs.inotify.max_user_watches */
	if (e == ENOENT)
		return EBADF;
	return e;
}

/*
 * Does kn's descriptor still name the file the knote was attached to?
 * 0 yes (st filled in), EBADF closed, ENOENT the number names another file.
 */
static int
vn_check(struct vnote *vn, struct stat *st)
{
	if (fstat((int)vn->vn_kn.kn_ident, st) != 0)
		return errno == EBADF ? EBADF : 0;
	if (st->st_dev != vn->vn_dev || st->st_ino != vn->vn_ino)
		return ENOENT;
	return 0;
}

/*
 * kn's descriptor was closed and its number reused.  Do other knotes on
 * the number (READ, WRITE ...) belong to the new file?  Then reporting
 * the stale knote to the engine, which drops the whole chain, would take
 * them along.  Only epoll registrations can tell (kcmp).
 */
static int
vn_others_live(struct kqueue *kq, struct knote *kn)
{
	struct knote *o;
	int fd = (int)kn->kn_ident;

	for (o = knote_fdchain(kq, fd); o != NULL; o = o->kn_link)
		if (o != kn && (o->kn_reg & R_REG))
			return !kq->kq_dead && epoll_holds(kq->kq_fd, fd);
	return 0;
}

static void
vn_cache(struct vnote *vn, const struct stat *st)
{
	vn->vn_size = st->st_size;
	vn->vn_nlink = st->st_nlink;
}

/* Start watching the file fd names now (attach, or re-attach in place). */
static int
vn_start(struct kqueue *kq, struct vnote *vn, const struct stat *st)
{
	struct knote *kn = &vn->vn_kn;
	int e;

	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		return EINVAL;
	vn->vn_fired = 0;
	vn->vn_state = S_ISDIR(st->st_mode) ? VS_DIR : 0;
	vn->vn_dev = st->st_dev;
	vn->vn_ino = st->st_ino;
	vn_cache(vn, st);
	if ((e = mounts_track(kq, vn)) != 0)
		return e;
	return vn_maperr(kq_inotify_set(kq, kn,
	    vn_inmask(kn->kn_sfflags, vn->vn_state & VS_DIR)));
}

static int
filt_vnattach(struct kqueue *kq, struct knote *kn)
{
	struct stat st;

	if (fstat((int)kn->kn_ident, &st) != 0)
		return EBADF;
	return vn_start(kq, VN(kn), &st);
}

static int
filt_vndetach(struct kqueue *kq, struct knote *kn)
{
	struct vnote *vn = VN(kn);
	struct stat st;
	int e;

	kq_inotify_unwatch(kq, kn);
	if (kq->kq_dead || (vn->vn_state & VS_DEAD))
		return 0;
	e = vn_check(vn, &st);
	if (e == ENOENT && vn_others_live(kq, kn))
		return 0;
	return e;
}

/*
 * The descriptor is not the knote's file any more.  Returns the errno for
 * the engine (which then drops the number's knotes), or 0 when other
 * knotes on the number are live: then the knote goes inert, or with
 * readd (EV_ADD) starts over on the new file.
 */
static int
vn_stale(struct kqueue *kq, struct vnote *vn, int e, int readd)
{
	struct knote *kn = &vn->vn_kn;
	struct stat st;

	if (e != ENOENT || !vn_others_live(kq, kn))
		return e;
	kq_inotify_unwatch(kq, kn);
	vn->vn_state = VS_DEAD;
	vn->vn_fired = 0;
	if (readd && fstat((int)kn->kn_ident, &st) == 0)
		return vn_start(kq, vn, &st);
	return 0;
}

/*
 * Any change (EV_ADD, EV_ENABLE, EV_DISABLE ...) replaces fflags, as in
 * FreeBSD's kqueue_register.  FreeBSD has recorded every operation on the
 * file under the fflags in force when it happened, the knote being
 * disabled or not; here the operations still queued in inotify are read
 * first, so they are recorded under the old fflags, and the cached size
 * of an EV_ADD (filt_vnupdate) starts after them.
 */
static int
filt_vnmodify(struct kqueue *kq, struct knote *kn, const struct kevent *kev)
{
	if ((kn->kn_status & KN_ATTACHED) && !(VN(kn)->vn_state & VS_DEAD))
		kq_inotify_drain(kq);
	kn->kn_sfflags = kev->fflags;
	kn->kn_sdata = kn_clamp32(kev->data);
	return 0;
}

static int
filt_vnupdate(struct kqueue *kq, struct knote *kn, int readd)
{
	struct vnote *vn = VN(kn);
	struct stat st;
	int e;

	if ((vn->vn_state & VS_DEAD) && !readd)
		return 0;
	if ((e = vn_check(vn, &st)) != 0)
		return vn_stale(kq, vn, e, readd);
	if (vn->vn_state & VS_DEAD) {
		/* Dead, and the number names the old file again?  Restart. */
		if ((e = vn_start(kq, vn, &st)) != 0)
			return e;
	}
	if (readd) {
		/* New interest: the cached size/links start from now. */
		vn_cache(vn, &st);
		e = kq_inotify_set(kq, kn,
		    vn_inmask(kn->kn_sfflags, vn->vn_state & VS_DIR));
		if (e != 0)
			return vn_maperr(e);
	}
	if (!(kn->kn_status & KN_DISABLED) &&
	    (vn->vn_fired || (vn->vn_state & VS_REVOKED)))
		knote_enqueue(kq, kn);
	return 0;
}

static int
filt_vnevent(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	struct vnote *vn = VN(kn);
	struct stat st;
	int e;

	(void)hint;
	if (vn->vn_state & VS_DEAD)
		return 0;
	kq_inotify_sync(kq);
	if ((e = vn_check(vn, &st)) != 0)
		return vn_stale(kq, vn, e, 0) != 0 ? -1 : 0;
	out->data = 0;
	out->fflags = vn->vn_fired;
	if (vn->vn_state & VS_REVOKED) {
		out->flags |= EV_EOF;
		return 1;
	}
	return vn->vn_fired != 0;
}

static void
filt_vnclear(struct kqueue *kq, struct knote *kn)
{
	(void)kq;
	VN(kn)->vn_fired = 0;
}

/*
 * One operation on the file, FreeBSD's knote(hint): as filt_vfsvnode, the
 * whole hint is recorded once one of its flags was asked for (a write
 * that grows the file is NOTE_WRITE | NOTE_EXTEND even for a knote that
 * asked for one of them).  Recorded whether or not the knote is disabled.
 */
static void
vn_hint(struct vnote *vn, uint32_t hint)
{
	if (hint & vn->vn_kn.kn_sfflags)
		vn->vn_fired |= hint & NOTE_VNODE_ALL;
}

/*
 * From inotify.c: mask is an inotify event mask about the file itself (or
 * IN_Q_OVERFLOW: events were lost), hint the NOTE_* flags of an operation
 * on an entry of the directory (FreeBSD's hint for it).  Each inotify
 * event is one operation, except IN_Q_OVERFLOW, which stands for whatever
 * the file's status shows changed.
 */
void
filt_vnode_inotify(struct kqueue *kq, struct knote *kn, uint32_t mask,
    uint32_t hint)
{
	struct vnote *vn = VN(kn);
	struct stat st;

	if (vn->vn_state & VS_DEAD)
		return;
	if ((mask & IN_IGNORED) || vn_check(vn, &st) != 0) {
		/* The watch or the descriptor is gone: let f_event decide. */
		if (!(kn->kn_status & KN_DISABLED))
			knote_enqueue(kq, kn);
		return;
	}
	if (hint != 0)
		vn_hint(vn, hint);
	if (mask & (IN_MODIFY | IN_Q_OVERFLOW)) {
		/* VOP_WRITE: NOTE_WRITE, plus NOTE_EXTEND past the old end. */
		uint32_t w = 0;

		if ((mask & IN_MODIFY) || st.st_size != vn->vn_size)
			w = NOTE_WRITE;
		if (st.st_size > vn->vn_size && !(vn->vn_state & VS_DIR))
			w |= NOTE_WRITE | NOTE_EXTEND;
		vn_hint(vn, w);
	}
	if (vn->vn_state & VS_DIR) {
		/*
		 * A directory's link count changes with its subdirectories,
		 * which inotify reports as entry events (hint), not as
		 * IN_ATTRIB; lost ones are mkdir/rmdir's hint.
		 */
		if ((mask & IN_Q_OVERFLOW) && st.st_nlink != vn->vn_nlink)
			vn_hint(vn, NOTE_WRITE | NOTE_LINK);
		if (mask & IN_ATTRIB)
			vn_hint(vn, NOTE_ATTRIB);
	} else if (mask & (IN_ATTRIB | IN_Q_OVERFLOW)) {
		/* link(2), unlink(2) and setattr each have their own hint. */
		if (st.st_nlink > vn->vn_nlink)
			vn_hint(vn, NOTE_LINK);
		else if (st.st_nlink < vn->vn_nlink)
			vn_hint(vn, NOTE_DELETE);
		else if (mask & IN_ATTRIB)
			vn_hint(vn, NOTE_ATTRIB);
	}
	if (mask & IN_DELETE_SELF)
		vn_hint(vn, NOTE_DELETE);
	if (mask & IN_MOVE_SELF)
		vn_hint(vn, NOTE_RENAME);
	if (mask & IN_OPEN)
		vn_hint(vn, NOTE_OPEN);
	if (mask & IN_CLOSE_NOWRITE)
		vn_hint(vn, NOTE_CLOSE);
	if (mask & IN_CLOSE_WRITE)
		vn_hint(vn, NOTE_CLOSE_WRITE);
	if (mask & IN_ACCESS)
		vn_hint(vn, NOTE_READ);
	/*
	 * st is the status now, after the operations whose events are still
	 * queued behind this one: cache only what this event accounts for,
	 * so that their own events still see their change (the growth of the
	 * write that follows an IN_OPEN, the link count of a link(2) that
	 * follows one).  A directory's links change with its entry events.
	 */
	if (vn->vn_state & VS_DIR)
		vn_cache(vn, &st);
	else {
		if (mask & (IN_MODIFY | IN_Q_OVERFLOW))
			vn->vn_size = st.st_size;
		if (mask & (IN_ATTRIB | IN_Q_OVERFLOW))
			vn->vn_nlink = st.st_nlink;
	}
	if (mask & IN_UNMOUNT) {
		vn_revoke(kq, vn);
		return;
	}
	if (vn->vn_fired && !(kn->kn_status & KN_DISABLED))
		knote_enqueue(kq, kn);
}

const struct filterops vnode_filtops = {
	.f_isfd = 1,
	.f_size = sizeof(struct vnote),
	.f_attach = filt_vnattach,
	.f_detach = filt_vndetach,
	.f_modify = filt_vnmodify,
	.f_update = filt_vnupdate,
	.f_event = filt_vnevent,
	.f_clear = filt_vnclear,
};
