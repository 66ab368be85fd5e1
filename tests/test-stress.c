/*
 * test-stress.c -- many threads on a few kqueues for a bounded time
 * (KQ_STRESS_SECONDS, default 3; KQ_STRESS_THREADS, default 6), doing
 * random changes, waits (zero and short timeouts, eventlists of 1..64),
 * EVFILT_USER triggers, writes and reads on pipes and socketpairs, closes
 * and reopens of watched descriptors and closes and recreations of whole
 * kqueues, while checking invariants:
 *
 *   - no stale event: every registration's udata carries a generation
 *     (unique over the run); after an EV_DELETE or an EV_DISABLE returned,
 *     after the descriptor was closed or the kqueue recreated, a shadow
 *     table (per kqueue slot and key, under the slot's lock, updated by
 *     the thread that made the change once it returned) raises the
 *     smallest generation that may still be reported.  An event whose
 *     generation is below the value current when its kevent() call
 *     started is an error (a report after delete, close or while
 *     disabled);
 *   - liveness: a user event triggered while enabled is reported to some
 *     waiter within KQ_STRESS_BOUND_MS (1500);
 *   - no spinning: kevent() calls that waited and returned nothing use
 *     little CPU time compared with the time they took (in aggregate);
 *   - no deadlock: a watchdog fails the test when a thread makes no
 *     progress for 10 s.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>

#define NSLOT	3
#define NOBJ	6		/* pipes and socketpairs per slot */
#define NUSER	4		/* user events per slot */
#define NKEY	(NOBJ * 2 + NUSER)
#define MAXTHR	16

enum { ABSENT, ENABLED, DISABLED };

struct key {
	int	 state;
	uint64_t gen;		/* of the current registration */
	_Atomic uint64_t minok;	/* smallest generation that may be reported */
	int64_t	 pending;	/* user: triggered at (ns), not yet reported */
	uint64_t pgen;		/* the generation that trigger must report */
};

struct obj {
	int	 fd[2];
	int	 sock;		/* socketpair, else pipe */
};

struct slot {
	pthread_mutex_t	 lock;	/* changes, the shadow, the objects */
	_Atomic int	 kq;
	_Atomic uint32_t incarn;	/* odd while the kqueue is recreated */
	struct obj	 obj[NOBJ];
	struct key	 key[NKEY];
	int64_t		 made;	/* ns of the last recreation */
};

static struct slot slots[NSLOT];
static _Atomic uint64_t gen_next = 1;
static _Atomic int stop, failed, ndone;
static char failmsg[512];
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t progress[MAXTHR];
static _Atomic int64_t spin_cpu, spin_wall;
static _Atomic long nwait, nev, nchange, nrecreate, nreopen, ntrig;
static int64_t bound_ns;

static int64_t
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void __attribute__((format(printf, 1, 2)))
fail_at(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&fail_lock);
	if (!failed) {
		va_start(ap, fmt);
		vsnprintf(failmsg, sizeof(failmsg), fmt, ap);
		va_end(ap);
		fprintf(stderr, "stress: %s\n", failmsg);
		atomic_store(&failed, 1);
	}
	pthread_mutex_unlock(&fail_lock);
	atomic_store(&stop, 1);
}

/* udata: slot (4 bits) | key (8 bits) | generation (52 bits). */
static void *
mkudata(int s, int k, uint64_t gen)
{
	return (void *)(uintptr_t)((uint64_t)s << 60 | (uint64_t)k << 52 | gen);
}

static void
key_ident(struct slot *sl, int k, uintptr_t *ident, short *filter)
{
	if (k < NOBJ * 2) {
		struct obj *o = &sl->obj[k / 2];

		if (k % 2 == 0) {
			*ident = (uintptr_t)o->fd[0];
			*filter = EVFILT_READ;
		} else {
			*ident = (uintptr_t)(o->sock ? o->fd[0] : o->fd[1]);
			*filter = EVFILT_WRITE;
		}
	} else {
		*ident = (uintptr_t)(k - NOBJ * 2 + 1);
		*filter = EVFILT_USER;
	}
}

static void
obj_open(struct obj *o, int sock)
{
	int r;

	o->sock = sock;
	if (sock)
		r = socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0, o->fd);
	else
		r = pipe2(o->fd, O_NONBLOCK | O_CLOEXEC);
	if (r != 0)
		fail_at("pipe/socketpair: %s", strerror(errno));
}

/* After the change of key k returned: nothing older than minok. */
static void
key_set(struct key *ky, int state, uint64_t gen)
{
	ky->state = state;
	ky->gen = gen;
	ky->pending = 0;
	atomic_store(&ky->minok, state == ENABLED ? gen :
	    atomic_load(&gen_next));
}

/* One change of key k of slot s (slot lock held). */
static void
do_change(int s, int k, unsigned rnd)
{
	struct slot *sl = &slots[s];
	struct key *ky = &sl->key[k];
	struct kevent kev;
	uintptr_t ident;
	short filter;
	uint64_t gen = atomic_fetch_add(&gen_next, 1);
	unsigned short flags;
	int state;

	key_ident(sl, k, &ident, &filter);
	switch (ky->state) {
	case ABSENT:
		flags = EV_ADD | (rnd & 1 ? EV_DISABLE : 0);
		state = rnd & 1 ? DISABLED : ENABLED;
		break;
	default:
		switch (rnd % 4) {
		case 0:
			flags = EV_DELETE;
			state = ABSENT;
			break;
		case 1:
			flags = EV_ADD | EV_DISABLE;
			state = DISABLED;
			break;
		default:
			flags = EV_ADD | EV_ENABLE;
			state = ENABLED;
			break;
		}
	}
	if (filter != EVFILT_READ)
		flags |= EV_CLEAR;	/* WRITE, USER: edges, not a flood */
	EV_SET(&kev, ident, filter, flags, 0, 0, mkudata(s, k, gen));
	if (kevent(atomic_load(&sl->kq), &kev, 1, NULL, 0, NULL) != 0) {
		fail_at("change slot %d key %d flags %#x: %s", s, k, flags,
		    strerror(errno));
		return;
	}
	atomic_fetch_add(&nchange, 1);
	key_set(ky, state, gen);
}

/* Close and reopen object i of slot s (lock held): its knotes go. */
static void
do_reopen(int s, int i, unsigned rnd)
{
	struct slot *sl = &slots[s];

	if (close(sl->obj[i].fd[0]) != 0 || close(sl->obj[i].fd[1]) != 0)
		fail_at("close: %s", strerror(errno));
	key_set(&sl->key[2 * i], ABSENT, 0);
	key_set(&sl->key[2 * i + 1], ABSENT, 0);
	obj_open(&sl->obj[i], rnd & 1);
	atomic_fetch_add(&nreopen, 1);
}

/* Close the slot's kqueue and make a new one (lock held). */
static void
do_recreate(int s)
{
	struct slot *sl = &slots[s];
	int k, kq;

	atomic_fetch_add(&sl->incarn, 1);	/* odd: being recreated */
	close(atomic_load(&sl->kq));
	for (k = 0; k < NKEY; k++)
		key_set(&sl->key[k], ABSENT, 0);
	kq = kqueue();
	if (kq < 0)
		fail_at("kqueue: %s", strerror(errno));
	atomic_store(&sl->kq, kq);
	atomic_fetch_add(&sl->incarn, 1);
	sl->made = now_ns();
	atomic_fetch_add(&nrecreate, 1);
}

static void
do_trigger(int s, int u)
{
	struct slot *sl = &slots[s];
	struct key *ky = &sl->key[NOBJ * 2 + u];
	struct kevent kev;

	if (ky->state == ABSENT)
		return;
	/* Any change sets udata, as on FreeBSD: keep the generation. */
	EV_SET(&kev, u + 1, EVFILT_USER, 0, NOTE_TRIGGER, 0,
	    mkudata(s, NOBJ * 2 + u, ky->gen));
	if (kevent(atomic_load(&sl->kq), &kev, 1, NULL, 0, NULL) != 0) {
		fail_at("trigger slot %d user %d: %s", s, u, strerror(errno));
		return;
	}
	atomic_fetch_add(&ntrig, 1);
	if (ky->state == ENABLED && ky->pending == 0) {
		ky->pending = now_ns();
		ky->pgen = ky->gen;
	}
}

static void
do_wait(int s, unsigned rnd)
{
	struct slot *sl = &slots[s];
	struct kevent ev[64];
	uint64_t snap[NKEY];
	struct timespec ts = { 0, 0 };
	uint32_t inc = atomic_load(&sl->incarn);
	int kq = atomic_load(&sl->kq), n = 1 + (int)(rnd % 64), r, i, k;
	int64_t w0, c0;

	for (k = 0; k < NKEY; k++)
		snap[k] = atomic_load(&sl->key[k].minok);
	if ((rnd >> 8) % 3 != 0)
		ts.tv_nsec = (long)(1 + (rnd >> 12) % 20) * 1000000;
	w0 = now_ns();
	c0 = t_thread_cpu_ns();
	r = kevent(kq, NULL, 0, ev, n, &ts);
	if (r == 0 && ts.tv_nsec > 0) {
		atomic_fetch_add(&spin_cpu, t_thread_cpu_ns() - c0);
		atomic_fetch_add(&spin_wall, now_ns() - w0);
	}
	atomic_fetch_add(&nwait, 1);
	if (r < 0) {
		if ((errno == EBADF || errno == EINVAL) &&
		    ((inc & 1) || atomic_load(&sl->incarn) != inc))
			return;	/* the kqueue was closed meanwhile */
		fail_at("wait slot %d: %s", s, strerror(errno));
		return;
	}
	atomic_fetch_add(&nev, r);
	for (i = 0; i < r; i++) {
		uint64_t u = (uint64_t)(uintptr_t)ev[i].udata;
		int es = (int)(u >> 60), ek = (int)(u >> 52 & 0xff);
		uint64_t eg = u & ((UINT64_C(1) << 52) - 1);

		if (ev[i].flags & EV_ERROR) {
			fail_at("wait slot %d: EV_ERROR %jd", s,
			    (intmax_t)ev[i].data);
			return;
		}
		if (es != s || ek >= NKEY) {
			if ((inc & 1) || atomic_load(&sl->incarn) != inc)
				continue;	/* a new kqueue under the number */
			fail_at("wait slot %d: event of slot %d key %d", s, es,
			    ek);
			return;
		}
		if (eg < snap[ek]) {
			fail_at("slot %d key %d (ident %ju filter %d): event "
			    "of generation %ju, but generations below %ju were "
			    "deleted, disabled or closed before the call",
			    s, ek, (uintmax_t)ev[i].ident, ev[i].filter,
			    (uintmax_t)eg, (uintmax_t)snap[ek]);
			return;
		}
		if (ev[i].filter == EVFILT_USER) {
			struct key *ky = &sl->key[ek];

			pthread_mutex_lock(&sl->lock);
			if (ky->pending != 0 && ky->pgen == eg)
				ky->pending = 0;
			pthread_mutex_unlock(&sl->lock);
		}
	}
}

static void
do_io(int s, int i, unsigned rnd)
{
	struct slot *sl = &slots[s];
	struct obj *o = &sl->obj[i];
	char buf[512];

	memset(buf, 'x', sizeof(buf));
	if (rnd & 1) {
		if (write(o->fd[1], buf, 1 + (rnd >> 1) % sizeof(buf)) < 0 &&
		    errno != EAGAIN)
			fail_at("write: %s", strerror(errno));
	} else {
		while (read(o->fd[0], buf, sizeof(buf)) > 0 && (rnd & 2))
			;
	}
}

struct thr {
	int	 id;
	unsigned seed;
};

static void *
worker(void *arg)
{
	struct thr *t = arg;

	while (!atomic_load(&stop)) {
		unsigned rnd = (unsigned)rand_r(&t->seed);
		unsigned op = rnd % 100, x = (unsigned)rand_r(&t->seed);
		int s = (int)((rnd >> 8) % NSLOT);
		struct slot *sl = &slots[s];

		if (op < 45)
			do_wait(s, x);
		else {
			pthread_mutex_lock(&sl->lock);
			if (op < 57)
				do_trigger(s, (int)(x % NUSER));
			else if (op < 70)
				do_io(s, (int)(x % NOBJ), x >> 4);
			else if (op < 94)
				do_change(s, (int)(x % NKEY), x >> 8);
			else if (op < 99)
				do_reopen(s, (int)(x % NOBJ), x >> 8);
			else if (now_ns() - sl->made > 100000000)
				do_recreate(s);
			pthread_mutex_unlock(&sl->lock);
		}
		atomic_fetch_add(&progress[t->id], 1);
	}
	atomic_store(&progress[t->id], UINT64_MAX);
	atomic_fetch_add(&ndone, 1);
	return NULL;
}

/* Fail on a user event triggered long ago and still not reported. */
static void
check_liveness(void)
{
	int64_t now = now_ns();

	for (int s = 0; s < NSLOT; s++) {
		struct slot *sl = &slots[s];

		pthread_mutex_lock(&sl->lock);
		for (int k = NOBJ * 2; k < NKEY; k++) {
			struct key *ky = &sl->key[k];

			if (ky->pending != 0 && now - ky->pending > bound_ns)
				fail_at("slot %d user %d: triggered %jd ms ago "
				    "(generation %ju, enabled), never reported",
				    s, k - NOBJ * 2,
				    (intmax_t)((now - ky->pending) / 1000000),
				    (uintmax_t)ky->pgen);
		}
		pthread_mutex_unlock(&sl->lock);
	}
}

/* The open descriptors, for a failed count. */
static void __attribute__((unused))
list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char p[300], l[256];

	while (d != NULL && (e = readdir(d)) != NULL) {
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		n = readlink(p, l, sizeof(l) - 1);
		l[n < 0 ? 0 : n] = 0;
		fprintf(stderr, "  fd %s: %s\n", e->d_name, l);
	}
	if (d != NULL)
		closedir(d);
}

static void
stress(void **state)
{
	const char *v;
	double secs = (v = getenv("KQ_STRESS_SECONDS")) ? atof(v) : 3;
	int nthr = (v = getenv("KQ_STRESS_THREADS")) ? atoi(v) : 6;
	pthread_t tid[MAXTHR];
	struct thr th[MAXTHR];
	uint64_t last[MAXTHR];
	int64_t seen[MAXTHR], start, end, t;
	unsigned seed = (v = getenv("KQ_STRESS_SEED")) ? (unsigned)atol(v) :
	    (unsigned)time(NULL);
	int base = t_count_fds(), i, s, k;

	(void)state;
	bound_ns = ((v = getenv("KQ_STRESS_BOUND_MS")) ? atol(v) : 1500) *
	    1000000LL;
	if (nthr < 1 || nthr > MAXTHR)
		nthr = 6;
	printf("stress: %d threads, %.1f s, seed %u\n", nthr, secs, seed);
	for (s = 0; s < NSLOT; s++) {
		pthread_mutex_init(&slots[s].lock, NULL);
		atomic_store(&slots[s].kq, kqueue());
		assert_true(atomic_load(&slots[s].kq) >= 0);
		for (i = 0; i < NOBJ; i++)
			obj_open(&slots[s].obj[i], i & 1);
		for (k = 0; k < NKEY; k++)
			key_set(&slots[s].key[k], ABSENT, 0);
	}
	start = now_ns();
	for (i = 0; i < nthr; i++) {
		th[i].id = i;
		th[i].seed = seed + (unsigned)i * 7919;
		last[i] = 0;
		seen[i] = start;
		assert_int_equal(pthread_create(&tid[i], NULL, worker, &th[i]), 0);
	}
	end = start + (int64_t)(secs * 1e9);
	for (;;) {
		usleep(50000);
		t = now_ns();
		if (t >= end)
			atomic_store(&stop, 1);
		if (!atomic_load(&stop))
			check_liveness();
		if (atomic_load(&ndone) == nthr)
			break;
		for (i = 0; i < nthr; i++) {
			uint64_t p = atomic_load(&progress[i]);

			if (p != last[i]) {
				last[i] = p;
				seen[i] = t;
			} else if (p != UINT64_MAX && t - seen[i] > 10000000000LL) {
				fprintf(stderr, "stress: thread %d made no "
				    "progress for 10 s (deadlock?)\n", i);
				abort();	/* a stuck thread cannot be joined */
			}
		}
	}
	for (i = 0; i < nthr; i++)
		pthread_join(tid[i], NULL);
	printf("stress: %ld waits, %ld events, %ld changes, %ld triggers, "
	    "%ld reopens, %ld kqueue recreations; empty waits: %.0f ms "
	    "CPU in %.0f ms\n", (long)nwait, (long)nev, (long)nchange,
	    (long)ntrig, (long)nreopen, (long)nrecreate,
	    atomic_load(&spin_cpu) / 1e6, atomic_load(&spin_wall) / 1e6);
	if (!failed && atomic_load(&spin_wall) > 200000000 &&
	    atomic_load(&spin_cpu) * 2 > atomic_load(&spin_wall))
		fail_at("waits that found nothing used %.0f ms of CPU in "
		    "%.0f ms (spinning)", atomic_load(&spin_cpu) / 1e6,
		    atomic_load(&spin_wall) / 1e6);
	for (s = 0; s < NSLOT; s++) {
		close(atomic_load(&slots[s].kq));
		for (i = 0; i < NOBJ; i++) {
			close(slots[s].obj[i].fd[0]);
			close(slots[s].obj[i].fd[1]);
		}
		pthread_mutex_destroy(&slots[s].lock);
	}
	if (failed)
		fprintf(stderr, "stress failed (seed %u): %s\n", seed, failmsg);
	assert_false(failed);
#if !T_TSAN
	if (t_count_fds() != base)
		list_fds();
	assert_int_equal(t_count_fds(), base);
#else
	(void)base;	/* TSan's symbolizer, started to match tools/tsan.supp,
			   keeps two pipes of its own open */
#endif
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stress),
	};

	return t_run_group(tests, NULL, NULL);
}
