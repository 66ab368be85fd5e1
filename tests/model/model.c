/*
 * The reference model of FreeBSD kqueue semantics; see model.h.
 *
 * Every rule below is stated in the terms of kqueue(2) and of the algorithm
 * in kqueue-semantics.md section 1.5 (kqueue_kevent, kqueue_register,
 * kqueue_scan): a knote is keyed by (kqueue, ident, filter); a change is
 * applied, then the filter's condition is evaluated again and the knote is
 * queued if it holds; a scan re-evaluates each queued knote, drops it
 * silently when the condition no longer holds, deletes EV_ONESHOT knotes,
 * disables EV_DISPATCH knotes, resets EV_CLEAR knotes and leaves
 * level-triggered ones queued.  Data structures are flat arrays searched
 * linearly: obviously right matters more here than fast.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define MODE_FLAGS	(EV_ONESHOT | EV_CLEAR | EV_DISPATCH | EV_RECEIPT)

static void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (p == NULL) {
		perror("model: realloc");
		abort();
	}
	return p;
}

void
m_init(struct model *m, long pipe_cap)
{
	memset(m, 0, sizeof(*m));
	for (int i = 0; i < M_MAXFD; i++)
		m->fd2end[i] = -1;
	m->pipe_cap = pipe_cap;
}

void
m_free(struct model *m)
{
	free(m->ends);
	free(m->kn);
	m->ends = NULL;
	m->kn = NULL;
}

static int
new_end(struct model *m, int kind)
{
	if (m->nends == m->capends) {
		m->capends = m->capends ? 2 * m->capends : 256;
		m->ends = xrealloc(m->ends, (size_t)m->capends * sizeof(*m->ends));
	}
	memset(&m->ends[m->nends], 0, sizeof(m->ends[0]));
	m->ends[m->nends].kind = kind;
	m->ends[m->nends].peer = -1;
	return m->nends++;
}

static void
bind_fd(struct model *m, int fd, int end)
{
	if (fd < 0 || fd >= M_MAXFD || m->fd2end[fd] != -1) {
		fprintf(stderr, "model: descriptor %d out of range or already open\n", fd);
		abort();
	}
	m->fd2end[fd] = end;
	m->ends[end].refs++;
}

void
m_other_fd(struct model *m, int fd)
{
	bind_fd(m, fd, new_end(m, M_OTHER));
}

void
m_pipe(struct model *m, int rfd, int wfd)
{
	int r = new_end(m, M_PIPE_R), w = new_end(m, M_PIPE_W);

	m->ends[r].peer = w;
	m->ends[w].peer = r;
	bind_fd(m, rfd, r);
	bind_fd(m, wfd, w);
}

void
m_socketpair(struct model *m, int a, int b)
{
	int x = new_end(m, M_SOCK), y = new_end(m, M_SOCK);

	m->ends[x].peer = y;
	m->ends[y].peer = x;
	bind_fd(m, a, x);
	bind_fd(m, b, y);
}

void
m_dup(struct model *m, int oldfd, int newfd)
{
	bind_fd(m, newfd, m->fd2end[oldfd]);
}

int
m_is_open(const struct model *m, int fd)
{
	return fd >= 0 && fd < M_MAXFD && m->fd2end[fd] != -1;
}

int
m_kind(const struct model *m, int fd)
{
	return m_is_open(m, fd) ? m->ends[m->fd2end[fd]].kind : M_FREE;
}

long
m_readable(const struct model *m, int fd)
{
	return m_is_open(m, fd) ? m->ends[m->fd2end[fd]].inbuf : 0;
}

int
m_peer_closed(const struct model *m, int fd)
{
	int e = m->fd2end[fd], p = m->ends[e].peer;

	return p < 0 || m->ends[p].refs == 0;
}

int
m_last_ref(const struct model *m, int fd)
{
	return m->ends[m->fd2end[fd]].refs == 1;
}

long
m_target_bytes(const struct model *m, int fd)
{
	int e = m->fd2end[fd], p = m->ends[e].peer;

	return p < 0 ? 0 : m->ends[p].inbuf;
}

static int
is_fd_filter(short filter)
{
	return filter == EVFILT_READ || filter == EVFILT_WRITE ||
	    filter == EVFILT_EMPTY;
}

/*
 * The filter's condition (FreeBSD's f_event) for knote kn: whether it is
 * ready, and what it reports.  *exact is 0 when data is not predictable
 * (the free space of a socket's send buffer, counted in kernel units).
 */
static int
cond(const struct model *m, const struct m_knote *kn, int64_t *data,
    int *exact, unsigned short *eof, unsigned int *fflags)
{
	const struct m_end *e, *p;

	*data = 0;
	*exact = 1;
	*eof = 0;
	*fflags = 0;
	if (kn->filter == EVFILT_USER) {
		*data = kn->udata_d;
		*fflags = kn->ufflags;
		return kn->trig;
	}
	e = &m->ends[kn->end];
	p = e->peer >= 0 ? &m->ends[e->peer] : NULL;
	if (kn->filter == EVFILT_EMPTY) {
		/*
		 * A socket's send buffer: what this end wrote that the peer
		 * has not read.  When the peer's file goes, so does that
		 * (FreeBSD's filt_soempty: data 0, never EV_EOF).
		 */
		return p == NULL || p->refs == 0 || p->inbuf == 0;
	}
	if (kn->filter == EVFILT_READ) {
		/* Pipe read end or socket: bytes readable; EOF once the writer is gone. */
		*data = e->inbuf;
		if (p == NULL || p->refs == 0)
			*eof = EV_EOF;
		return e->inbuf > 0 || *eof;
	}
	/* EVFILT_WRITE: the reader gone is EOF with data 0. */
	if (p == NULL || p->refs == 0) {
		*eof = EV_EOF;
		return 1;
	}
	if (e->kind == M_PIPE_W) {
		*data = m->pipe_cap - p->inbuf;
	} else {
		*exact = 0;	/* sockets: free send space, not predictable */
	}
	return 1;	/* the driver never lets a buffer fill up */
}

static int
ready_now(const struct model *m, const struct m_knote *kn)
{
	int64_t d;
	int x;
	unsigned short eof;
	unsigned int ff;

	return cond(m, kn, &d, &x, &eof, &ff);
}

/* Activity on the knote's object: FreeBSD's KNOTE() with a hint. */
static void
hint(struct m_knote *kn, int level)
{
	if (kn->pend < level)
		kn->pend = level;
}

/* Hint every knote on end e (any descriptor of it, any kqueue). */
static void
hint_end(struct model *m, int e, short filter, int level)
{
	for (int i = 0; i < m->nkn; i++) {
		struct m_knote *kn = &m->kn[i];

		if (kn->filter != EVFILT_USER && kn->end == e &&
		    (filter == 0 || kn->filter == filter))
			hint(kn, level);
	}
}

static void
stale_clear(struct model *m, int kq, int fd, short filter)
{
	for (int i = 0; i < M_MAXSTALE; i++) {
		struct m_stale *s = &m->stale[i];

		if (s->used && s->kq == kq && s->fd == fd && s->filter == filter)
			s->used = 0;
	}
}

static void
stale_add(struct model *m, int kq, int fd, short filter, int end)
{
	stale_clear(m, kq, fd, filter);
	for (int i = 0; i < M_MAXSTALE; i++) {
		struct m_stale *s = &m->stale[i];

		if (!s->used) {
			s->used = 1;
			s->kq = kq;
			s->fd = fd;
			s->filter = filter;
			s->end = end;
			return;
		}
	}
	fprintf(stderr, "model: too many stale knotes\n");
	abort();
}

int
m_is_stale(const struct model *m, int kq, int fd, short filter)
{
	for (int i = 0; i < M_MAXSTALE; i++) {
		const struct m_stale *s = &m->stale[i];

		if (s->used && s->kq == kq && s->fd == fd && s->filter == filter)
			return 1;
	}
	return 0;
}

static void
drop_knote(struct model *m, int i)
{
	m->kn[i] = m->kn[--m->nkn];
}

static void	spur_fd(struct model *, int, uintptr_t, const struct m_knote *);
static void	spur_kq(struct model *, int);

/*
 * close(fd): FreeBSD drops every knote on the number fd in every kqueue
 * (knote_fdclose).  When the last descriptor of the end goes, its peer
 * sees EOF, a new trigger for every knote on the peer.
 *
 * kq's documented divergence (LINUX NOTES 1): when the file stays open
 * through a duplicate, or for level-triggered knotes that share the
 * descriptor with an EV_CLEAR knote when the number is reused before the
 * next collection, kq may still report the old knote under the number
 * once it is reused.  Those knotes are remembered as stale.
 */
void
m_close(struct model *m, int fd)
{
	int e = m->fd2end[fd], mixed = 0, clear = 0, level = 0;

	for (int i = 0; i < m->nkn; i++) {
		if (is_fd_filter(m->kn[i].filter) && m->kn[i].ident == (uintptr_t)fd) {
			if (m->kn[i].mode & EV_CLEAR)
				clear = 1;
			else
				level = 1;
		}
	}
	mixed = clear && level;
	for (int i = 0; i < m->nkn; ) {
		struct m_knote *kn = &m->kn[i];

		if (is_fd_filter(kn->filter) && kn->ident == (uintptr_t)fd) {
			if (m->ends[e].refs > 1) {
				stale_add(m, kn->kq, fd, kn->filter, e);
				spur_kq(m, kn->kq);
				m->ndups_closed++;
			} else if (mixed) {
				stale_add(m, kn->kq, fd, kn->filter, -1);
			}
			drop_knote(m, i);
			continue;
		}
		i++;
	}
	m->fd2end[fd] = -1;
	if (--m->ends[e].refs == 0) {
		for (int i = 0; i < M_MAXSTALE; i++)
			if (m->stale[i].used && m->stale[i].end == e)
				m->stale[i].used = 0;
		if (m->ends[e].peer >= 0 && m->ends[m->ends[e].peer].refs > 0)
			hint_end(m, m->ends[e].peer, 0, M_MUST);
	}
}

/*
 * n bytes written on fd land at the peer end: a new trigger for the read
 * knotes there.  Other knotes on both ends saw activity FreeBSD may or may
 * not count as a trigger (pipes wake both directions on every transfer).
 */
void
m_write(struct model *m, int fd, long n)
{
	int e = m->fd2end[fd], t = m->ends[e].peer;

	m->ends[t].inbuf += n;
	hint_end(m, e, 0, M_MAY);
	hint_end(m, t, EVFILT_WRITE, M_MAY);
	hint_end(m, t, EVFILT_READ, M_MUST);
}

/*
 * n bytes read at fd: a new trigger only for the EVFILT_EMPTY knotes of
 * the writer when the read takes the last of its bytes (FreeBSD wakes the
 * sender's filters on the read, and filt_soempty then holds).
 */
void
m_read(struct model *m, int fd, long n)
{
	int e = m->fd2end[fd], p = m->ends[e].peer;

	m->ends[e].inbuf -= n;
	hint_end(m, e, 0, M_MAY);
	if (p >= 0) {
		hint_end(m, p, 0, M_MAY);
		if (n > 0 && m->ends[e].inbuf == 0 && m->ends[e].kind == M_SOCK)
			hint_end(m, p, EVFILT_EMPTY, M_MUST);
	}
}

static int
find_knote(const struct model *m, int kq, uintptr_t ident, short filter)
{
	for (int i = 0; i < m->nkn; i++)
		if (m->kn[i].kq == kq && m->kn[i].ident == ident &&
		    m->kn[i].filter == filter)
			return i;
	return -1;
}

/*
 * An index of one kqueue's knotes by (ident, filter), for m_scan: with a
 * couple of thousand knotes and as many events a call, find_knote's walk
 * per event made the model, not kq, the cost of the scale profiles (64 %
 * of a seed's 40 s in m_scan).
 */
struct m_index {
	const struct model *m;
	int *ix;
	int n;
};

static int
m_index_cmp_key(const struct model *m, int a, uintptr_t ident, short filter)
{
	const struct m_knote *k = &m->kn[a];

	if (k->ident != ident)
		return k->ident < ident ? -1 : 1;
	return (k->filter > filter) - (k->filter < filter);
}

static const struct model *m_index_sorting;

static int
m_index_cmp(const void *a, const void *b)
{
	const struct m_knote *kb = &m_index_sorting->kn[*(const int *)b];

	return m_index_cmp_key(m_index_sorting, *(const int *)a, kb->ident,
	    kb->filter);
}

static void
m_index_make(struct m_index *x, const struct model *m, int kq)
{
	x->m = m;
	x->n = 0;
	x->ix = malloc(((size_t)m->nkn + 1) * sizeof(*x->ix));
	if (x->ix == NULL)
		abort();
	for (int i = 0; i < m->nkn; i++)
		if (m->kn[i].kq == kq)
			x->ix[x->n++] = i;
	m_index_sorting = m;
	qsort(x->ix, (size_t)x->n, sizeof(*x->ix), m_index_cmp);
}

/* find_knote over the index: the knote's position in m->kn, or -1. */
static int
m_index_find(const struct m_index *x, uintptr_t ident, short filter)
{
	int lo = 0, hi = x->n - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2,
		    c = m_index_cmp_key(x->m, x->ix[mid], ident, filter);

		if (c == 0)
			return x->ix[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Re-evaluation after a register operation (the end of kqueue_register). */
static void
reevaluate(struct model *m, struct m_knote *kn)
{
	if (!kn->disabled && ready_now(m, kn))
		kn->pend = M_MUST;
}

/* kqueue_register() for one change; returns 0 or an errno. */
static int
reg(struct model *m, int kq, const struct kevent *c, unsigned short flags)
{
	struct m_knote *kn;
	int i;

	if (c->filter != EVFILT_READ && c->filter != EVFILT_WRITE &&
	    c->filter != EVFILT_USER && c->filter != EVFILT_EMPTY) {
		if (c->filter > 0 || c->filter < -EVFILT_SYSCOUNT)
			return EINVAL;
		fprintf(stderr, "model: filter %d is not modelled\n", c->filter);
		abort();
	}
	if ((flags & (EV_ENABLE | EV_DISABLE)) == (EV_ENABLE | EV_DISABLE))
		return EINVAL;
	if ((flags & EV_ADD) && (flags & EV_KEEPUDATA))
		return EINVAL;
	if (is_fd_filter(c->filter)) {
		if (c->ident > INT_MAX || !m_is_open(m, (int)c->ident))
			return EBADF;
	}
	i = find_knote(m, kq, c->ident, c->filter);
	if (i < 0) {
		if (!(flags & EV_ADD))
			return ENOENT;
		/* Only sockets have a send buffer (fo_kqfilter: EINVAL). */
		if (c->filter == EVFILT_EMPTY &&
		    m_kind(m, (int)c->ident) != M_SOCK)
			return EINVAL;
		if (m->nkn == m->capkn) {
			m->capkn = m->capkn ? 2 * m->capkn : 256;
			m->kn = xrealloc(m->kn, (size_t)m->capkn * sizeof(*m->kn));
		}
		kn = &m->kn[m->nkn++];
		memset(kn, 0, sizeof(*kn));
		kn->kq = kq;
		kn->ident = c->ident;
		kn->filter = c->filter;
		kn->mode = flags & MODE_FLAGS;
		kn->disabled = (flags & EV_DISABLE) != 0;
		kn->udata = c->udata;
		kn->end = is_fd_filter(c->filter) ? m->fd2end[c->ident] : -1;
		if (c->filter == EVFILT_USER) {
			/*
			 * The creating change's fflags are stored as given
			 * (kn_sfflags = kev->fflags), and its NOTE_TRIGGER
			 * does not fire: attach looks at the zeroed kn_fflags.
			 */
			kn->ufflags = c->fflags;
			kn->udata_d = c->data;
		}
		stale_clear(m, kq, (int)c->ident, c->filter);
		reevaluate(m, kn);
		if (is_fd_filter(c->filter))
			spur_fd(m, kq, c->ident, &m->kn[m->nkn - 1]);
		return 0;
	}
	kn = &m->kn[i];
	if (flags & EV_DELETE) {
		drop_knote(m, i);
		stale_clear(m, kq, (int)c->ident, c->filter);
		return 0;
	}
	if (!(flags & EV_KEEPUDATA))
		kn->udata = c->udata;
	if (c->filter == EVFILT_USER) {
		unsigned int ff = c->fflags & NOTE_FFLAGSMASK;

		if (c->fflags & NOTE_TRIGGER)
			kn->trig = 1;
		switch (c->fflags & NOTE_FFCTRLMASK) {
		case NOTE_FFAND:
			kn->ufflags &= ff;
			break;
		case NOTE_FFOR:
			kn->ufflags |= ff;
			break;
		case NOTE_FFCOPY:
			kn->ufflags = ff;
			break;
		}
		kn->udata_d = c->data;
		if (flags & EV_CLEAR)
			kn->trig = 0;
	}
	if (flags & EV_ENABLE)
		kn->disabled = 0;
	else if (flags & EV_DISABLE)
		kn->disabled = 1;
	reevaluate(m, kn);
	if (is_fd_filter(c->filter) && (!(flags & EV_DISABLE) ||
	    (flags & EV_ADD)))
		spur_fd(m, kq, c->ident, kn);
	return 0;
}

void
m_changes(struct model *m, int kq, const struct kevent *ch, int nch,
    int nevents, struct kevent *out, struct m_expect *x)
{
	int left = nevents, nerr = 0;

	memset(x, 0, sizeof(*x));
	x->ev = out;
	for (int i = 0; i < nch; i++) {
		struct kevent c = ch[i];
		unsigned short flags;
		int err;

		if (c.filter == 0)
			continue;
		flags = c.flags & ~EV_SYSFLAGS;
		err = reg(m, kq, &c, flags);
		if (err == 0 && !(flags & EV_RECEIPT))
			continue;
		if (left == 0) {
			/* No room: the call ends here, later changes untouched. */
			x->ret = err ? -1 : 0;
			x->err = err;
			x->n = nerr;
			return;
		}
		c.flags = EV_ERROR;
		c.data = err;
		out[nerr++] = c;
		left--;
	}
	x->n = nerr;
	if (nerr > 0) {
		x->ret = nerr;
		return;
	}
	if (nevents == 0) {
		x->ret = 0;
		return;
	}
	x->scan = 1;
}

int
m_count_knotes(const struct model *m, int kq)
{
	int n = 0;

	for (int i = 0; i < m->nkn; i++)
		n += m->kn[i].kq == kq;
	return n;
}

/*
 * Does kq hold a registration of a closed number whose file is still open
 * (a dup)?  Until the file goes, kq may rebuild its epoll set at any scan,
 * and every EV_CLEAR knote may then be reported once more (LINUX NOTES).
 */
static int
kq_zombie(const struct model *m, int kq)
{
	for (int i = 0; i < M_MAXSTALE; i++) {
		const struct m_stale *s = &m->stale[i];

		if (s->used && s->kq == kq && s->end >= 0)
			return 1;
	}
	return 0;
}

/* Status of a knote for a scan now: M_NO, M_MAY or M_MUST. */
static int
status(const struct model *m, const struct m_knote *kn)
{
	if (kn->disabled || !ready_now(m, kn))
		return M_NO;
	if (kn->filter == EVFILT_USER || !(kn->mode & EV_CLEAR))
		return M_MUST;	/* level-triggered; USER: triggered */
	if (kn->pend == M_NO && (kn->spur || kq_zombie(m, kn->kq)))
		return M_MAY;	/* LINUX NOTES: an EV_CLEAR re-report */
	return kn->pend;
}

/*
 * LINUX NOTES: a change of a knote on descriptor number fd may make the
 * other EV_CLEAR knotes on that number in that kqueue report once more.
 */
static void
spur_fd(struct model *m, int kq, uintptr_t fd, const struct m_knote *except)
{
	for (int i = 0; i < m->nkn; i++) {
		struct m_knote *kn = &m->kn[i];

		if (kn != except && kn->kq == kq && kn->ident == fd &&
		    is_fd_filter(kn->filter) && (kn->mode & EV_CLEAR))
			kn->spur++;
	}
}

/* ... and a rebuild of the epoll set, every EV_CLEAR knote of kq. */
static void
spur_kq(struct model *m, int kq)
{
	for (int i = 0; i < m->nkn; i++) {
		struct m_knote *kn = &m->kn[i];

		if (kn->kq == kq && is_fd_filter(kn->filter) &&
		    (kn->mode & EV_CLEAR))
			kn->spur++;
	}
}

int
m_nothing_ready(const struct model *m, int kq)
{
	for (int i = 0; i < m->nkn; i++)
		if (m->kn[i].kq == kq && status(m, &m->kn[i]) != M_NO)
			return 0;
	for (int i = 0; i < M_MAXSTALE; i++)
		if (m->stale[i].used && m->stale[i].kq == kq &&
		    m_is_open(m, m->stale[i].fd))
			return 0;
	return 1;
}

int
m_must_ready(const struct model *m, int kq)
{
	for (int i = 0; i < m->nkn; i++)
		if (m->kn[i].kq == kq && status(m, &m->kn[i]) == M_MUST)
			return 1;
	return 0;
}

const char *
m_filter_name(short filter)
{
	switch (filter) {
	case EVFILT_READ: return "READ";
	case EVFILT_WRITE: return "WRITE";
	case EVFILT_USER: return "USER";
	case EVFILT_EMPTY: return "EMPTY";
	default: return "?";
	}
}

void
m_flags_str(unsigned flags, char *buf, size_t len)
{
	static const struct { unsigned f; const char *n; } names[] = {
		{ EV_ADD, "ADD" }, { EV_DELETE, "DELETE" }, { EV_ENABLE, "ENABLE" },
		{ EV_DISABLE, "DISABLE" }, { EV_ONESHOT, "ONESHOT" },
		{ EV_CLEAR, "CLEAR" }, { EV_RECEIPT, "RECEIPT" },
		{ EV_DISPATCH, "DISPATCH" }, { EV_KEEPUDATA, "KEEPUDATA" },
		{ EV_ERROR, "ERROR" }, { EV_EOF, "EOF" },
	};
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (flags & names[i].f) {
			o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s",
			    o ? "|" : "", names[i].n);
			flags &= ~names[i].f;
		}
	}
	if (flags)
		o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%#x",
		    o ? "|" : "", flags);
	if (o == 0)
		snprintf(buf, len, "0");
}

#define MISMATCH(...) do { snprintf(msg, msglen, __VA_ARGS__); goto out; } while (0)

int
m_scan(struct model *m, int kq, int nevents, const struct kevent *ev, int n,
    char *msg, size_t msglen)
{
	int *st = NULL, *seen = NULL, nready = 0, rc = -1;
	char fb[128];
	struct m_index x = { NULL, NULL, 0 };

	msg[0] = '\0';
	if (n < 0 || n > nevents)
		MISMATCH("kevent returned %d with nevents %d", n, nevents);
	st = calloc((size_t)m->nkn + 1, sizeof(*st));
	seen = calloc((size_t)m->nkn + 1, sizeof(*seen));
	if (st == NULL || seen == NULL)
		abort();
	for (int i = 0; i < m->nkn; i++) {
		st[i] = m->kn[i].kq == kq ? status(m, &m->kn[i]) : M_NO;
		nready += st[i] != M_NO;
	}
	m_index_make(&x, m, kq);
	for (int j = 0; j < n; j++) {
		const struct kevent *e = &ev[j];
		int i = m_index_find(&x, e->ident, e->filter);
		int64_t data;
		int exact;
		unsigned short eof, want;
		unsigned int fflags;

		m_flags_str(e->flags, fb, sizeof(fb));
		if (i < 0) {
			if (is_fd_filter(e->filter) && e->ident <= INT_MAX &&
			    m_is_stale(m, kq, (int)e->ident, e->filter) &&
			    m_is_open(m, (int)e->ident))
				continue;	/* LINUX NOTES 1: tolerated */
			MISMATCH("event %d: ident %ju filter %s flags %s data %jd: "
			    "no such knote", j, (uintmax_t)e->ident,
			    m_filter_name(e->filter), fb, (intmax_t)e->data);
		}
		if (seen[i])
			MISMATCH("event %d: ident %ju filter %s reported twice in one call",
			    j, (uintmax_t)e->ident, m_filter_name(e->filter));
		seen[i] = 1;
		if (st[i] == M_NO)
			MISMATCH("event %d: ident %ju filter %s flags %s data %jd: "
			    "knote is %s", j, (uintmax_t)e->ident,
			    m_filter_name(e->filter), fb, (intmax_t)e->data,
			    m->kn[i].disabled ? "disabled" :
			    !ready_now(m, &m->kn[i]) ? "not ready" :
			    "EV_CLEAR and not triggered again");
		cond(m, &m->kn[i], &data, &exact, &eof, &fflags);
		want = (m->kn[i].mode) | eof;
		if (e->flags != want) {
			char wb[128];

			m_flags_str(want, wb, sizeof(wb));
			MISMATCH("event %d: ident %ju filter %s: flags %s, expected %s",
			    j, (uintmax_t)e->ident, m_filter_name(e->filter), fb, wb);
		}
		if (exact && e->data != data)
			MISMATCH("event %d: ident %ju filter %s flags %s: data %jd, expected %jd",
			    j, (uintmax_t)e->ident, m_filter_name(e->filter), fb,
			    (intmax_t)e->data, (intmax_t)data);
		if (e->fflags != fflags)
			MISMATCH("event %d: ident %ju filter %s: fflags %#x, expected %#x",
			    j, (uintmax_t)e->ident, m_filter_name(e->filter),
			    e->fflags, fflags);
		if (e->udata != m->kn[i].udata)
			MISMATCH("event %d: ident %ju filter %s: udata %p, expected %p",
			    j, (uintmax_t)e->ident, m_filter_name(e->filter),
			    e->udata, m->kn[i].udata);
	}
	for (int i = 0; i < m->nkn; i++) {
		struct m_knote *kn = &m->kn[i];

		if (kn->kq != kq)
			continue;
		/*
		 * LINUX NOTES 2: an EV_CLEAR knote left out of a full call is
		 * kept on kq's active list while epoll may queue another edge
		 * for it; both may be reported.
		 */
		if (st[i] != M_NO && !seen[i] && n == nevents &&
		    is_fd_filter(kn->filter) && (kn->mode & EV_CLEAR) &&
		    kn->spur < 1)
			kn->spur = 1;
		if (st[i] != M_MUST || seen[i]) {
			kn->missed = 0;
			kn->missed_cap = 0;
			kn->max_ready = 0;
			continue;
		}
		if (n < nevents)
			MISMATCH("ident %ju filter %s %s: ready but not reported, "
			    "though the eventlist had room (%d of %d used)",
			    (uintmax_t)kn->ident, m_filter_name(kn->filter),
			    kn->mode & EV_CLEAR ? "(EV_CLEAR, triggered)" : "(level)",
			    n, nevents);
		/*
		 * The eventlist was full: any subset of the ready knotes is
		 * fine for one call, but FreeBSD's scan puts a reported
		 * level-triggered knote back at the tail, so a ready knote is
		 * reported once the calls since it became ready have offered
		 * about as many slots as there are ready knotes.
		 */
		kn->missed++;
		kn->missed_cap += nevents;
		if (kn->max_ready < nready)
			kn->max_ready = nready;
		/*
		 * kq keeps two queues (its active list and epoll's ready
		 * list) and starts collections with each in turn, so a ready
		 * knote may wait for up to about twice as many slots as in
		 * FreeBSD's single queue: the bound is 4 x the ready knotes.
		 */
		if (kn->missed >= 4 && kn->missed_cap > 4L * kn->max_ready + 4)
			MISMATCH("ident %ju filter %s: ready but not reported in %d "
			    "consecutive full calls offering %ld slots, with at most %d "
			    "ready knotes (unfair)", (uintmax_t)kn->ident,
			    m_filter_name(kn->filter), kn->missed, kn->missed_cap,
			    kn->max_ready);
	}
	/* Delivery. */
	for (int i = m->nkn - 1; i >= 0; i--) {
		struct m_knote *kn = &m->kn[i];

		if (kn->kq != kq)
			continue;
		if (seen[i]) {
			/* The one extra report the note allows is used only
			   by a report nothing else called for. */
			if (kn->pend == M_NO && kn->spur > 0)
				kn->spur--;
			if (kn->mode & EV_ONESHOT) {
				drop_knote(m, i);
				continue;
			}
			if (kn->mode & EV_DISPATCH)
				kn->disabled = 1;
			if (kn->mode & EV_CLEAR) {
				kn->pend = M_NO;
				if (kn->filter == EVFILT_USER)
					kn->trig = 0;
			}
		} else if (st[i] == M_MAY && n < nevents) {
			kn->pend = M_NO;	/* it would have been reported now */
		}
		if (kn->pend != M_NO && !ready_now(m, kn))
			kn->pend = M_NO;	/* the scan drops it silently */
	}
	for (int i = 0; i < M_MAXSTALE; i++) {
		struct m_stale *s = &m->stale[i];

		if (s->used && s->kq == kq && s->end == -1 && !m_is_open(m, s->fd))
			s->used = 0;
	}
	rc = 0;
out:
	free(x.ix);
	free(st);
	free(seen);
	return rc;
}
