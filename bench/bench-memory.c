/*
 * bench-memory.c -- user-space memory kq spends per registration and per
 * kqueue.
 *
 * Heap use is read with mallinfo2(): uordblks (bytes in use in the main
 * arena) plus hblkhd (bytes in blocks malloc obtained with mmap, which is
 * where large tables go).  The program is single-threaded while measuring,
 * so everything lands in the main arena.  Descriptors are counted with
 * fcntl(F_GETFD), which allocates nothing.
 *
 * Raw epoll uses no user-space memory at all; both kq and epoll spend the
 * same kernel memory per registration (one epitem per descriptor), which
 * this scenario does not see.
 */
#include "bench.h"

#include <malloc.h>
#include <sys/event.h>

#define MEM_FDS		10000
#define MEM_KQUEUES	1000

static long
heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (long)(mi.uordblks + mi.hblkhd);
}

static long
mmap_bytes(void)
{
	return (long)mallinfo2().hblkhd;
}

static int
count_fds(long limit)
{
	int n = 0;

	for (long fd = 0; fd < limit; fd++)
		if (fcntl((int)fd, F_GETFD) >= 0)
			n++;
	return n;
}

/* Register `filters` (1: READ, 2: READ+WRITE) on every fd; 0 or -1. */
static int
mem_register(int kq, const int *fds, int n, int filters)
{
	struct kevent ch[256];
	int k = 0;

	for (int i = 0; i < n; i++) {
		for (int f = 0; f < filters; f++) {
			EV_SET(&ch[k], fds[i], f ? EVFILT_WRITE : EVFILT_READ,
			    EV_ADD, 0, 0, (void *)(intptr_t)i);
			k++;
		}
		if (k + 2 > 256 || i == n - 1) {
			if (kevent(kq, ch, k, NULL, 0, NULL) < 0)
				return -1;
			k = 0;
		}
	}
	return 0;
}

struct mem_row {
	const char *what;
	long	 count;
	long	 heap;		/* total bytes, uordblks + hblkhd */
	long	 mmap;		/* of which mmap'd blocks */
	double	 fds;		/* descriptors per unit */
	long	 left;		/* still allocated after close */
	long	 left2;		/* ... and after the next kqueue() + close() */
	int	 has_left2;
};

static void
mem_put(struct bench_table *t, const struct mem_row *m, const char *unit)
{
	int r = bt_row(t);

	bt_set(t, r, 0, "%s", m->what);
	bt_set(t, r, 1, "%ld", m->count);
	bt_set(t, r, 2, "%ld", m->heap);
	bt_set(t, r, 3, "%ld", m->mmap);
	bt_num(t, r, 4, m->count ? (double)m->heap / (double)m->count : 0.0);
	bt_set(t, r, 5, "%s", unit);
	bt_num(t, r, 6, m->fds);
	bt_set(t, r, 7, "%ld", m->left);
	if (m->has_left2)
		bt_set(t, r, 8, "%ld", m->left2);
	else
		bt_set(t, r, 8, "-");
}

/* One kqueue with `filters` knotes on each of the n descriptors. */
static int
mem_knotes(const struct bench_opts *o, const int *fds, int n, int filters,
    struct mem_row *m)
{
	long hb, h0, h1, h2, mm0, mm1;
	int kq, f0, f1;

	f0 = count_fds(o->nofile);
	hb = heap_bytes();
	if ((kq = kqueue()) < 0)
		return -1;
	h0 = heap_bytes();
	mm0 = mmap_bytes();
	if (mem_register(kq, fds, n, filters) < 0) {
		close(kq);
		return -1;
	}
	h1 = heap_bytes();
	mm1 = mmap_bytes();
	f1 = count_fds(o->nofile);
	close(kq);
	h2 = heap_bytes();
	/* The library may only learn of the close when the number is reused. */
	if ((kq = kqueue()) >= 0)
		close(kq);
	m->left2 = heap_bytes() - hb;
	m->has_left2 = 1;
	m->count = n;
	m->heap = h1 - h0;
	m->mmap = mm1 - mm0;
	m->fds = (double)(f1 - f0 - 1) / n;	/* minus the kqueue itself */
	m->left = h2 - hb;
	return 0;
}

static int
mem_run(const struct bench_opts *o, struct bench_result *res)
{
	struct bench_table *t = bt_new(res, "memory",
	    "memory: kq heap per registered descriptor and per kqueue");
	struct mem_row rd = { .what = "EVFILT_READ on each descriptor" };
	struct mem_row rw = { .what = "EVFILT_READ + EVFILT_WRITE on each" };
	struct mem_row kqs = { .what = "empty kqueue" };
	static int kqfd[MEM_KQUEUES];
	int n = MEM_FDS, *fds, warm, f0, f1, made = 0;
	long h0, h1, h2, mm0;
	struct fdpairs p;

	bt_cols(t, "measure|count|heap bytes|of which mmap|bytes per unit|"
	    "unit|fds per unit|left after close|left after next kqueue()");
	if (n + 2 * 64 > o->nofile)
		n = (int)(o->nofile - 2 * 64);
	if (n < 2) {
		progress("memory: RLIMIT_NOFILE %ld is too low\n", o->nofile);
		return -1;
	}

	/* Warm-up: one-time library state is not a per-object cost. */
	if ((warm = kqueue()) >= 0) {
		struct kevent ch;

		EV_SET(&ch, 0, EVFILT_READ, EV_ADD, 0, 0, NULL);
		kevent(warm, &ch, 1, NULL, 0, NULL);
		close(warm);
	}

	progress("[memory] %d descriptors\n", n);
	if (fdpairs_open(&p, (n + 1) / 2, 1, 0) < 0) {
		progress("memory: socketpairs: %s\n", strerror(errno));
		return -1;
	}
	if (!(fds = calloc((size_t)n, sizeof(int)))) {
		fdpairs_close(&p);
		return -1;
	}
	for (int i = 0; i < n; i++)
		fds[i] = i % 2 ? p.w[i / 2] : p.r[i / 2];
	if (mem_knotes(o, fds, n, 1, &rd) < 0 ||
	    mem_knotes(o, fds, n, 2, &rw) < 0) {
		progress("memory: kevent: %s\n", strerror(errno));
		free(fds);
		fdpairs_close(&p);
		return -1;
	}
	free(fds);
	fdpairs_close(&p);

	progress("[memory] %d kqueues\n", MEM_KQUEUES);
	f0 = count_fds(o->nofile);
	h0 = heap_bytes();
	mm0 = mmap_bytes();
	for (int i = 0; i < MEM_KQUEUES; i++) {
		if ((kqfd[i] = kqueue()) < 0) {
			progress("memory: kqueue #%d: %s\n", i + 1,
			    strerror(errno));
			break;
		}
		made++;
	}
	h1 = heap_bytes();
	kqs.mmap = mmap_bytes() - mm0;
	f1 = count_fds(o->nofile);
	for (int i = 0; i < made; i++)
		close(kqfd[i]);
	h2 = heap_bytes();
	kqs.count = made;
	kqs.heap = h1 - h0;
	kqs.fds = made ? (double)(f1 - f0) / made : 0.0;
	kqs.left = h2 - h0;

	mem_put(t, &rd, "descriptor");
	mem_put(t, &rw, "descriptor");
	mem_put(t, &kqs, "kqueue");
	bt_note(t, "Heap = mallinfo2() uordblks + hblkhd (mmap'd blocks), "
	    "measured around the registrations in one kqueue (%d descriptors: "
	    "both ends of %d socketpairs) and around %d kqueue() calls. Lower "
	    "is better; raw epoll spends 0 user-space bytes, and the kernel "
	    "memory per registration (one epitem, the same for both) is not "
	    "counted. READ+WRITE per knote: %.1f bytes. `fds per unit` counts "
	    "descriptors kq opened besides the kqueue descriptor itself "
	    "(descriptor rows) or including it (kqueue row). `left after "
	    "close` compares with the heap before kqueue(): close() of a "
	    "kqueue descriptor is invisible to a user-space library, which can "
	    "only reclaim when it sees the number again (`after next "
	    "kqueue()`: one kqueue() + close() that reuses the number). What "
	    "stays after that is a cache (pool) or a leak.\n", n, (n + 1) / 2,
	    MEM_KQUEUES, rw.count ? (double)rw.heap / (2.0 * (double)rw.count) :
	    0.0);
	return made == MEM_KQUEUES ? 0 : -1;
}

const struct bench_scenario bench_memory = {
	.name = "memory",
	.title = "heap bytes per registered descriptor and per kqueue",
	.run = mem_run,
};
