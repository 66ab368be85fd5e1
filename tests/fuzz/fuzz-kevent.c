/*
 * fuzz-kevent.c -- libFuzzer target: the input is a program of kevent()
 * calls over a small pool of kqueues and descriptors.
 *
 * Each input byte string is read as a sequence of at most MAXOPS
 * operations: open a pipe, socketpair, eventfd, the temp regular file or a
 * kqueue; close, dup, dup2 or close_range descriptors; read and write;
 * raise SIGURG; and kevent() calls with changelists built from the bytes
 * (descriptor filters on any slot, including a kqueue watched by another,
 * EVFILT_TIMER with short periods, EVFILT_USER with NOTE_TRIGGER and the
 * NOTE_FF* operations, EVFILT_VNODE on the file, bad filters, bad flags,
 * huge idents, EV_RECEIPT) and eventlists of 0..64 entries, NULL lists,
 * negative counts and invalid timeouts.  Waits use a zero timeout only, so
 * every input runs in bounded time.
 *
 * Invariants checked (abort() on violation, with a line on stderr):
 *   - kevent() never returns more than nevents, never writes past the
 *     eventlist (exactly sized heap buffers: ASan);
 *   - no (ident, filter) twice among the events of one returned list;
 *   - an EV_ERROR entry carries a documented errno (0 only with
 *     EV_RECEIPT), and a failed call sets a documented errno;
 *   - a returned event names a knote the program may have registered on
 *     that kqueue and did not certainly remove (a shadow "may exist" set:
 *     EV_DELETE that certainly succeeded, a delivered EV_ONESHOT event,
 *     closing or replacing the ident of a descriptor filter, closing the
 *     kqueue remove entries);
 *   - everything the input opened is closed at its end: the process's
 *     descriptor count is back to what it was before (kq's own descriptors
 *     live and die with their kqueue).
 *
 * Built by `make fuzz` (build-fuzz/fuzz-kevent, clang, libFuzzer, ASan,
 * UBSan), run by tools/fuzz-run.sh; tests/fuzz/standalone-main.c runs the
 * same target over files without libFuzzer (tools/coverage.sh).
 * KQ_FUZZ_TRACE=1 prints every kevent() call with its changes and result.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/event.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXOPS		64	/* operations per input */
#define MAXCHANGES	16	/* changes per kevent() call */
#define MAXEVENTS	64	/* eventlist entries */
#define NSLOT		16	/* descriptor slots */
#define MAXSHADOW	256	/* knotes tracked per kqueue */
#define MAXFDNUM	4096	/* descriptors looked at for close_range */

enum kind { K_NONE, K_PIPE_R, K_PIPE_W, K_SOCK, K_EVENTFD, K_FILE, K_KQ };

struct shadow {
	uintptr_t	ident;
	short		filter;
};

struct slot {
	int		fd;	/* -1: closed */
	int		num;	/* last number it had (stale idents) */
	enum kind	kind;
	int		nsh;	/* K_KQ: knotes that may exist */
	struct shadow	sh[MAXSHADOW];
};

static struct slot slots[NSLOT];
static char tmppath[64];
static unsigned char fd_at_start[MAXFDNUM];
static int trace;	/* KQ_FUZZ_TRACE=1: print every kevent() call */

#define FAIL(...) do {							\
	fprintf(stderr, "fuzz-kevent: invariant broken: " __VA_ARGS__);	\
	fputc('\n', stderr);						\
	abort();							\
} while (0)

/* ---- input reader ---- */

struct in {
	const uint8_t	*p;
	size_t		n;
};

static unsigned
u8(struct in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

static uint32_t
u32(struct in *in)
{
	uint32_t v = u8(in);

	v |= (uint32_t)u8(in) << 8;
	v |= (uint32_t)u8(in) << 16;
	return v | (uint32_t)u8(in) << 24;
}

/* ---- descriptors ---- */

static int
count_fds(unsigned char *map)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		FAIL("opendir /proc/self/fd: %s", strerror(errno));
	if (map != NULL)
		memset(map, 0, MAXFDNUM);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		if (map != NULL) {
			long fd = strtol(de->d_name, NULL, 10);

			if (fd >= 0 && fd < MAXFDNUM)
				map[fd] = 1;
		}
	}
	closedir(d);
	return n - 1;	/* not the directory's own descriptor */
}

static int
is_fd_filter(short filter)
{
	return filter == EVFILT_READ || filter == EVFILT_WRITE ||
	    filter == EVFILT_EMPTY || filter == EVFILT_VNODE ||
	    filter == EVFILT_PROCDESC;
}

static int
shadow_find(struct slot *k, uintptr_t ident, short filter)
{
	int i;

	for (i = 0; i < k->nsh; i++)
		if (k->sh[i].ident == ident && k->sh[i].filter == filter)
			return i;
	return -1;
}

static void
shadow_add(struct slot *k, uintptr_t ident, short filter)
{
	if (shadow_find(k, ident, filter) >= 0)
		return;
	if (k->nsh == MAXSHADOW)
		FAIL("shadow set full");	/* MAXOPS * MAXCHANGES fits */
	k->sh[k->nsh].ident = ident;
	k->sh[k->nsh].filter = filter;
	k->nsh++;
}

static void
shadow_del(struct slot *k, uintptr_t ident, short filter)
{
	int i = shadow_find(k, ident, filter);

	if (i >= 0)
		k->sh[i] = k->sh[--k->nsh];
}

/* Number fd is closed or replaced: its descriptor knotes go everywhere,
   and a kqueue that had the number is gone. */
static void
number_gone(int fd)
{
	int i, j;

	for (i = 0; i < NSLOT; i++) {
		struct slot *k = &slots[i];

		if (k->fd < 0 || k->kind != K_KQ)
			continue;
		for (j = 0; j < k->nsh; j++)
			if (k->sh[j].ident == (uintptr_t)fd &&
			    is_fd_filter(k->sh[j].filter))
				k->sh[j--] = k->sh[--k->nsh];
	}
	for (i = 0; i < NSLOT; i++) {
		if (slots[i].fd == fd) {
			slots[i].fd = -1;
			slots[i].kind = K_NONE;
			slots[i].nsh = 0;
		}
	}
}

static struct slot *
free_slot(void)
{
	int i;

	for (i = 0; i < NSLOT; i++)
		if (slots[i].fd < 0)
			return &slots[i];
	return NULL;
}

static void
put(int fd, enum kind kind)
{
	struct slot *s = free_slot();

	if (fd < 0)
		FAIL("open failed: %s", strerror(errno));
	if (s == NULL) {	/* callers check; keep the count honest */
		close(fd);
		return;
	}
	s->fd = s->num = fd;
	s->kind = kind;
	s->nsh = 0;
}

static int
nfree(void)
{
	int i, n = 0;

	for (i = 0; i < NSLOT; i++)
		n += slots[i].fd < 0;
	return n;
}

static void
op_open(struct in *in)
{
	int sv[2], t = u8(in) % 6;

	if (nfree() < 2)
		return;
	switch (t) {
	case 0:
		if (pipe2(sv, O_NONBLOCK | O_CLOEXEC) != 0)
			FAIL("pipe: %s", strerror(errno));
		put(sv[0], K_PIPE_R);
		put(sv[1], K_PIPE_W);
		break;
	case 1:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0, sv) != 0)
			FAIL("socketpair: %s", strerror(errno));
		put(sv[0], K_SOCK);
		put(sv[1], K_SOCK);
		break;
	case 2:
		put(eventfd(u8(in) & 1, EFD_NONBLOCK | EFD_CLOEXEC), K_EVENTFD);
		break;
	case 3:
		put(open(tmppath, O_RDWR | O_APPEND | O_CLOEXEC), K_FILE);
		break;
	default:
		put(kqueue(), K_KQ);
		break;
	}
}

/* A slot chosen by one byte; NULL if it is closed. */
static struct slot *
pick(struct in *in)
{
	struct slot *s = &slots[u8(in) % NSLOT];

	return s->fd >= 0 ? s : NULL;
}

static struct slot *
pick_kq(struct in *in)
{
	unsigned b = u8(in);
	int i, n = 0;

	for (i = 0; i < NSLOT; i++)
		if (slots[i].fd >= 0 && slots[i].kind == K_KQ)
			n++;
	if (n == 0)
		return NULL;
	b %= n;
	for (i = 0; i < NSLOT; i++)
		if (slots[i].fd >= 0 && slots[i].kind == K_KQ && b-- == 0)
			return &slots[i];
	return NULL;
}

/* ---- kevent() calls ---- */

static int
documented_errno(int e)
{
	switch (e) {
	case EBADF: case EINVAL: case EMFILE: case ENOMEM: case ENOENT:
	case ENOSPC: case ENXIO: case EPERM: case ESRCH:
		return 1;
	}
	return 0;
}

static uintptr_t
pick_ident(struct in *in)
{
	unsigned b = u8(in);
	struct slot *s;

	switch (b >> 5) {
	case 0: case 1: case 2: case 3:	/* a slot, open or stale */
		s = &slots[b % NSLOT];
		return s->fd >= 0 ? (uintptr_t)s->fd : (uintptr_t)s->num;
	case 4:				/* small numbers (timers, users) */
		return b & 7;
	case 5:
		/*
		 * Just above a kqueue's number, where libkq's own descriptors
		 * of it usually are (on Linux): changes naming them must fail
		 * like any number the program never opened.
		 */
		s = &slots[b % NSLOT];
		if (s->kind == K_KQ && s->fd >= 0)
			return (uintptr_t)s->fd + 1 + (b & 3);
		return b & 7;
	case 6:
		switch (b & 7) {
		case 0: return (uintptr_t)INT_MAX + 1;
		case 1: return (uintptr_t)-1;
		case 2: return (uintptr_t)1 << 40;
		case 3: return (uintptr_t)INT_MAX;
		case 4: return (uintptr_t)getpid();
		case 5: return SIGURG;
		case 6: return 999;	/* a closed number */
		default: return 0x7fffffffffffULL;
		}
	default:
		return u32(in);
	}
}

static short
pick_filter(struct in *in)
{
	static const short f[] = {
		EVFILT_READ, EVFILT_READ, EVFILT_READ, EVFILT_WRITE,
		EVFILT_WRITE, EVFILT_EMPTY, EVFILT_TIMER, EVFILT_TIMER,
		EVFILT_USER, EVFILT_USER, EVFILT_USER, EVFILT_VNODE,
		EVFILT_PROC, EVFILT_PROCDESC, EVFILT_SIGNAL, EVFILT_AIO, EVFILT_FS,
		EVFILT_LIO, EVFILT_SENDFILE, 0, -14, 1, -32768, 32767,
		-EVFILT_SYSCOUNT - 1,
	};
	unsigned b = u8(in);

	if (b == 0xff)
		return (short)(u8(in) | u8(in) << 8);
	return f[b % (sizeof(f) / sizeof(f[0]))];
}

static unsigned short
pick_flags(struct in *in)
{
	static const unsigned short f[] = {
		EV_ADD, EV_ADD, EV_ADD | EV_CLEAR, EV_ADD | EV_ONESHOT,
		EV_ADD | EV_DISPATCH, EV_ADD | EV_DISABLE, EV_DELETE,
		EV_DELETE, EV_ENABLE, EV_DISABLE, 0, EV_ADD | EV_DELETE,
		EV_ENABLE | EV_DISABLE, EV_FORCEONESHOT, EV_ADD | EV_WAKEONE,
		EV_ADD | EV_KEEPUDATA,
	};
	unsigned a = u8(in), b;

	if (a == 0xff)
		return (unsigned short)(u8(in) | u8(in) << 8);
	b = u8(in);
	return f[a % (sizeof(f) / sizeof(f[0]))] |
	    (b & 1 ? EV_RECEIPT : 0) | (b & 2 ? EV_CLEAR : 0) |
	    (b & 4 ? EV_ONESHOT : 0) | (b & 8 ? EV_DISPATCH : 0) |
	    (b & 16 ? EV_KEEPUDATA : 0) | (b & 32 ? EV_ENABLE : 0) |
	    (b & 64 ? EV_EOF | EV_ERROR : 0);
}

static unsigned
pick_fflags(struct in *in, short filter)
{
	unsigned b = u8(in);

	if (b == 0xff)
		return u32(in);
	if (filter == EVFILT_USER)	/* control bits, trigger, flags */
		return (b & 3u) << 30 | (b & 4 ? NOTE_TRIGGER : 0) | (b >> 3);
	if (filter == EVFILT_TIMER)	/* unit, maybe NOTE_ABSTIME */
		return b & 0x1f;
	return b & 0x7ff;
}

static int64_t
pick_data(struct in *in)
{
	static const int64_t d[] = {
		0, 1, 2, 3, 5, 10, 50, 1, -1, 100000, INT64_MAX, INT64_MIN,
		(int64_t)1 << 40, 1000000, 7, 0,
	};
	unsigned b = u8(in);

	return b == 0xff ? (int64_t)((uint64_t)u32(in) << 32 | u32(in)) :
	    d[b % (sizeof(d) / sizeof(d[0]))];
}

#define TAG(i)	((void *)(uintptr_t)(0x5a000 + (i)))

static void
check_result(struct slot *k, const struct kevent *ch, int nch, int chok,
    const struct kevent *ev, int nev, int r, int e, int nsentinel)
{
	int i, j, nerrent = 0, certain;

	if (r < -1 || (r >= 0 && r > nev))
		FAIL("kevent returned %d for nevents %d", r, nev);
	if (r < 0) {
		if (e != EFAULT && !documented_errno(e))
			FAIL("kevent failed with undocumented errno %d (%s)",
			    e, strerror(e));
	}
	if (k == NULL) {	/* not a kqueue (or none): nothing may work */
		if (r >= 0 && (nch > 0 || nev > 0))
			FAIL("kevent on a non-kqueue returned %d", r);
		return;
	}
	for (i = 0; r > 0 && i < r; i++) {
		if (ev[i].flags & EV_ERROR) {
			uintptr_t t = (uintptr_t)ev[i].udata - 0x5a000;

			nerrent++;
			if (ev[i].data == 0 && !(chok && t < (uintptr_t)nch &&
			    (ch[t].flags & EV_RECEIPT)))
				FAIL("EV_ERROR entry with data 0 without EV_RECEIPT");
			if (ev[i].data != 0 && !documented_errno((int)ev[i].data))
				FAIL("EV_ERROR entry with undocumented errno %jd "
				    "(ident %ju filter %d)", (intmax_t)ev[i].data,
				    (uintmax_t)ev[i].ident, ev[i].filter);
			continue;
		}
		for (j = 0; j < i; j++)
			if (!(ev[j].flags & EV_ERROR) &&
			    ev[j].ident == ev[i].ident &&
			    ev[j].filter == ev[i].filter)
				FAIL("(ident %ju, filter %d) twice in one list",
				    (uintmax_t)ev[i].ident, ev[i].filter);
	}
	if (nerrent != 0 && nerrent != r)
		FAIL("change entries and events mixed in one list (%d of %d)",
		    nerrent, r);

	/*
	 * The changes: certain when every change was applied and each one's
	 * fate is known -- the call returned what it wrote, and either room
	 * was left or what it returned were events (changes done first).
	 */
	certain = chok && r >= 0 && nsentinel == r &&
	    (r < nev || (r > 0 && nerrent == 0));
	for (i = 0; chok && i < nch; i++) {
		const struct kevent *c = &ch[i];
		int failed = 0;

		if (c->filter == 0)
			continue;
		if (certain) {
			for (j = 0; j < r; j++)
				if ((ev[j].flags & EV_ERROR) &&
				    ev[j].udata == TAG(i) && ev[j].data != 0)
					failed = 1;
			if (failed)
				continue;
			if ((c->flags & EV_DELETE) && !(c->flags & EV_ADD))
				shadow_del(k, c->ident, c->filter);
		}
		if (c->flags & (EV_ADD | EV_FORCEONESHOT))
			shadow_add(k, c->ident, c->filter);
	}

	/* The events: each names a knote that may exist. */
	for (i = 0; r > 0 && i < r; i++) {
		if (ev[i].flags & EV_ERROR)
			continue;
		if (shadow_find(k, ev[i].ident, ev[i].filter) < 0)
			FAIL("event for a knote never registered or removed: kq "
			    "%d ident %ju filter %d flags %#x data %jd",
			    k->fd, (uintmax_t)ev[i].ident, ev[i].filter,
			    ev[i].flags, (intmax_t)ev[i].data);
		if (ev[i].flags & EV_ONESHOT)
			shadow_del(k, ev[i].ident, ev[i].filter);
	}
}

static void
op_kevent(struct in *in, int with_changes)
{
	struct kevent *ch = NULL, *ev = NULL;
	struct timespec ts = { 0, 0 }, *tsp = &ts;
	struct slot *k;
	unsigned mode;
	int kqfd, nch = 0, nev, i, r, e, chok = 1, nsent;

	mode = u8(in);
	switch (mode & 7) {
	case 0:		/* a descriptor that is no kqueue, or closed */
		k = pick(in);
		if (k != NULL && k->kind == K_KQ)
			break;
		kqfd = k != NULL ? k->fd : (mode & 8 ? -1 : 999);
		k = NULL;
		goto call;
	default:
		k = pick_kq(in);
		break;
	}
	if (k == NULL)
		return;
	kqfd = k->fd;
call:
	if (with_changes) {
		nch = 1 + u8(in) % MAXCHANGES;
		ch = malloc(nch * sizeof(*ch));
		for (i = 0; i < nch; i++) {
			uintptr_t ident = pick_ident(in);
			short filter = pick_filter(in);
			unsigned short flags = pick_flags(in);
			unsigned fflags = pick_fflags(in, filter);

			/* Signals: only harmless ones (libFuzzer and the
			   sanitizers have handlers on others). */
			if (filter == EVFILT_SIGNAL && ident != 0 &&
			    ident < 65 && ident != SIGURG)
				ident = SIGWINCH;
			EV_SET(&ch[i], ident, filter, flags, fflags,
			    pick_data(in), TAG(i));
		}
	}
	nev = u8(in) % (MAXEVENTS + 1);
	ev = malloc(nev > 0 ? nev * sizeof(*ev) : 1);
	for (i = 0; i < nev; i++) {
		memset(&ev[i], 0, sizeof(ev[i]));
		ev[i].filter = 0x7eee;	/* a sentinel nothing returns */
	}
	/* Bad arguments, now and then. */
	switch ((mode >> 4) & 15) {
	case 1:	if (nch > 0) { chok = 0; nch = -nch; } break;
	case 2: nev = -1 - nev; break;
	case 3: if (nch > 0) chok = 0; free(ch); ch = NULL; break;
	case 4: if (nev > 0) { free(ev); ev = NULL; } break;
	case 5: ts.tv_nsec = 1000000000; break;
	case 6: ts.tv_sec = -1; break;
	case 7: ts.tv_nsec = -1; break;
	case 8: if (nev == 0) tsp = NULL; break;	/* never waits */
	}
	r = kevent(kqfd, ch, nch, ev, nev, tsp);
	e = errno;
	for (nsent = 0; ev != NULL && nsent < nev; nsent++)
		if (ev[nsent].filter == 0x7eee)
			break;
	if (r >= 0 && (nch < 0 || nev < 0 || (nch > 0 && ch == NULL) ||
	    (nev > 0 && ev == NULL)))
		FAIL("kevent accepted bad arguments (returned %d)", r);
	if (nch < 0)
		nch = -nch;
	if (nev < 0)
		nev = 0;
	if (trace) {
		fprintf(stderr, "kevent(%d, %d changes, %d events) = %d%s%s\n",
		    kqfd, nch, nev, r, r < 0 ? " " : "", r < 0 ? strerror(e) : "");
		for (i = 0; i < nch && ch != NULL; i++)
			fprintf(stderr, "  change ident %ju filter %d flags %#x "
			    "fflags %#x data %jd\n", (uintmax_t)ch[i].ident,
			    ch[i].filter, ch[i].flags, ch[i].fflags,
			    (intmax_t)ch[i].data);
		for (i = 0; i < r; i++)
			fprintf(stderr, "  event ident %ju filter %d flags %#x "
			    "fflags %#x data %jd\n", (uintmax_t)ev[i].ident,
			    ev[i].filter, ev[i].flags, ev[i].fflags,
			    (intmax_t)ev[i].data);
	}
	check_result(k, ch, ch != NULL ? nch : 0, chok, ev, nev, r, e, nsent);
	free(ch);
	free(ev);
}

/* ---- the other operations ---- */

static void
op_rw(struct in *in, int writing)
{
	struct slot *s = pick(in);
	char buf[256];
	size_t len = 1 + u8(in) % sizeof(buf);
	uint64_t one = 1 + u8(in);

	if (s == NULL)
		return;
	if (s->kind == K_EVENTFD) {
		len = sizeof(one);
		memcpy(buf, &one, sizeof(one));
	} else {
		memset(buf, 'x', len);
	}
	if (writing)
		(void)!write(s->fd, buf, len);
	else
		(void)!read(s->fd, buf, len);
}

static void
op_close(struct in *in)
{
	struct slot *s = pick(in);
	int fd;

	if (s == NULL)
		return;
	fd = s->fd;
	number_gone(fd);
	if (close(fd) != 0)
		FAIL("close(%d): %s", fd, strerror(errno));
}

static void
op_dup(struct in *in, int how)
{
	struct slot *a = pick(in), *b = pick(in);
	int fd;

	if (a == NULL || a->kind == K_KQ)	/* a dup of a kqueue is no kqueue */
		return;
	if (how == 0 || b == NULL || b == a) {
		if (free_slot() == NULL)
			return;
		put(fcntl(a->fd, F_DUPFD_CLOEXEC, 0), a->kind);
		return;
	}
	/* dup2/dup3 onto b: b's number now names a's file. */
	fd = b->fd;
	number_gone(fd);
	if ((how == 1 ? dup2(a->fd, fd) : dup3(a->fd, fd, O_CLOEXEC)) != fd)
		FAIL("dup2(%d, %d): %s", a->fd, fd, strerror(errno));
	b->fd = b->num = fd;
	b->kind = a->kind;
	b->nsh = 0;
}

/* close_range() over slots only: no number in the range open at the
   start of the input (kq keeps its own descriptors in the range). */
static void
op_close_range(struct in *in)
{
	struct slot *a = pick(in), *b = pick(in);
	unsigned lo, hi, fd;
	int i;

	if (a == NULL || b == NULL)
		return;
	lo = a->fd < b->fd ? a->fd : b->fd;
	hi = a->fd < b->fd ? b->fd : a->fd;
	if (hi >= MAXFDNUM)
		return;
	for (fd = lo; fd <= hi; fd++)
		if (fd_at_start[fd])
			return;
	for (i = 0; i < NSLOT; i++)
		if (slots[i].fd >= (int)lo && slots[i].fd <= (int)hi)
			number_gone(slots[i].fd);
	if (close_range(lo, hi, 0) != 0)
		FAIL("close_range(%u, %u): %s", lo, hi, strerror(errno));
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct kevent kev;
	int kq, fd;

	(void)argc;
	(void)argv;
	trace = getenv("KQ_FUZZ_TRACE") != NULL;
	signal(SIGPIPE, SIG_IGN);	/* writes to widowed pipes: EPIPE */
	snprintf(tmppath, sizeof(tmppath), "/tmp/kq-fuzz-%ld", (long)getpid());
	fd = open(tmppath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		FAIL("create %s: %s", tmppath, strerror(errno));
	close(fd);
	/* kq's process-wide descriptor (EVFILT_SIGNAL's eventfd) exists from
	   its first use on: make it exist before any count. */
	if ((kq = kqueue()) < 0)
		FAIL("kqueue: %s", strerror(errno));
	EV_SET(&kev, SIGURG, EVFILT_SIGNAL, EV_ADD, 0, 0, NULL);
	(void)kevent(kq, &kev, 1, NULL, 0, NULL);
	close(kq);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	int before, after, i, op;

	if (tmppath[0] == '\0')
		LLVMFuzzerInitialize(NULL, NULL);
	before = count_fds(fd_at_start);
	if (truncate(tmppath, 0) != 0)
		FAIL("truncate %s: %s", tmppath, strerror(errno));
	for (i = 0; i < NSLOT; i++) {
		slots[i].fd = -1;
		slots[i].num = 900 + i;
		slots[i].kind = K_NONE;
		slots[i].nsh = 0;
	}
	/* Two kqueues and a pipe to start with. */
	put(kqueue(), K_KQ);
	put(kqueue(), K_KQ);
	{
		int p[2];

		if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0)
			FAIL("pipe: %s", strerror(errno));
		put(p[0], K_PIPE_R);
		put(p[1], K_PIPE_W);
	}
	for (op = 0; op < MAXOPS && in.n > 0; op++) {
		switch (u8(&in) % 16) {
		case 0: case 1: case 2: case 3: case 4:
			op_kevent(&in, 1);
			break;
		case 5: case 6:
			op_kevent(&in, 0);
			break;
		case 7:
			op_open(&in);
			break;
		case 8:
			op_close(&in);
			break;
		case 9:
			op_dup(&in, u8(&in) % 3);
			break;
		case 10: case 11:
			op_rw(&in, 1);
			break;
		case 12:
			op_rw(&in, 0);
			break;
		case 13:
			op_close_range(&in);
			break;
		case 14:
			raise(SIGURG);
			break;
		default: {
			struct slot *s = pick(&in);

			if (s != NULL && s->kind == K_SOCK)
				shutdown(s->fd, u8(&in) % 3);
			break;
		}
		}
	}
	for (i = 0; i < NSLOT; i++) {
		if (slots[i].fd >= 0) {
			int fd = slots[i].fd;

			number_gone(fd);
			if (close(fd) != 0)
				FAIL("close(%d) at the end: %s", fd,
				    strerror(errno));
		}
	}
	after = count_fds(NULL);
	if (after != before)
		FAIL("descriptor count %d after the input, %d before", after,
		    before);
	return 0;
}
