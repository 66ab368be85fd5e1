/*
 * Randomized differential test: kq against the reference model of
 * tests/model/.
 *
 * A seed gives a sequence of operations on pipes, AF_UNIX socketpairs,
 * EVFILT_USER knotes and one or two kqueues (EVFILT_EMPTY knotes on the
 * socketpairs too in the "small-empty" profile): open, dup, close (so numbers
 * get reused), write, read, kevent() with a changelist, waits with
 * eventlists from 1 entry to several times the knotes registered, and long
 * runs of empty zero-timeout waits.  Each sequence runs in a child process;
 * after every step kq's answer is compared with the model's.  Every kevent()
 * call has a watchdog, so a hang is a failure too.  A failing sequence is
 * shrunk (operations, then changes, then counts are dropped while it keeps
 * failing) and replayed with a trace.
 *
 * usage: fuzz-diff [-v]
 *   KQ_MODEL_SEED=S        run (and on failure shrink) only seed S, with a trace
 *   KQ_MODEL_SECONDS=N     after the fixed CI seeds, run random seeds for N
 *                          seconds (default 60; 0: CI seeds only)
 *   KQ_MODEL_SHRINK_SECONDS=N  time for shrinking one failure (default 20)
 *   KQ_MODEL_CI=0          skip the fixed CI seeds
 * Ends with "model: N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/event.h>

#include "model/model.h"

/* ------------------------------------------------------------------ ops */

enum { O_PIPE, O_SOCK, O_DUP, O_CLOSE, O_WRITE, O_READ, O_KEVENT, O_IDLE };

#define NSLOT		2400	/* descriptor slots */
#define NEVER_FD	7000	/* a number that is never open */
#define S_USER		(-1)	/* change on a non-descriptor ident */

struct chg {
	int		slot;	/* >= 0: the slot's descriptor; S_USER: ident */
	uintptr_t	ident;
	short		filter;
	unsigned short	flags;
	unsigned int	fflags;
	int64_t		data;
	unsigned int	tag;	/* udata */
};

struct op {
	int		kind;
	int		kq;
	int		a, b;	/* slots */
	int		cnt;	/* objects/slots affected, from a */
	long		n;	/* bytes; calls for O_IDLE */
	int		nev;	/* eventlist size */
	int		nch;
	struct chg	*ch;
};

struct seq {
	struct op	*op;
	int		n, cap;
	uint64_t	seed;
	const char	*profile;
};

static void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL) {
		perror("malloc");
		exit(2);
	}
	return p;
}

static struct op *
seq_push(struct seq *s)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->op = realloc(s->op, (size_t)s->cap * sizeof(*s->op));
		if (s->op == NULL)
			exit(2);
	}
	memset(&s->op[s->n], 0, sizeof(s->op[0]));
	s->op[s->n].cnt = 1;
	return &s->op[s->n++];
}

static void
seq_free(struct seq *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->op[i].ch);
	free(s->op);
	s->op = NULL;
	s->n = s->cap = 0;
}

static void
seq_copy(struct seq *d, const struct seq *s)
{
	d->n = d->cap = s->n;
	d->seed = s->seed;
	d->profile = s->profile;
	d->op = xmalloc((size_t)(s->n ? s->n : 1) * sizeof(*d->op));
	for (int i = 0; i < s->n; i++) {
		d->op[i] = s->op[i];
		if (s->op[i].nch > 0) {
			d->op[i].ch = xmalloc((size_t)s->op[i].nch * sizeof(struct chg));
			memcpy(d->op[i].ch, s->op[i].ch,
			    (size_t)s->op[i].nch * sizeof(struct chg));
		} else {
			d->op[i].ch = NULL;
		}
	}
}

static const char *
kind_name(int kind)
{
	static const char *n[] = { "pipe", "socketpair", "dup", "close",
	    "write", "read", "kevent", "idle" };
	return n[kind];
}

static void
chg_str(const struct chg *c, char *buf, size_t len)
{
	char fb[128];
	const char *f = c->filter == EVFILT_READ ? "READ" :
	    c->filter == EVFILT_WRITE ? "WRITE" : c->filter == EVFILT_USER ? "USER" :
	    c->filter == EVFILT_EMPTY ? "EMPTY" : NULL;
	char fl[16];

	m_flags_str(c->flags, fb, sizeof(fb));
	if (f == NULL) {
		snprintf(fl, sizeof(fl), "%d", c->filter);
		f = fl;
	}
	if (c->slot >= 0)
		snprintf(buf, len, "{s%d %s %s udata=%#x}", c->slot, f, fb, c->tag);
	else if (c->filter == EVFILT_USER)
		snprintf(buf, len, "{user %ju %s %s fflags=%#x data=%jd udata=%#x}",
		    (uintmax_t)c->ident, f, fb, c->fflags, (intmax_t)c->data, c->tag);
	else
		snprintf(buf, len, "{ident %#jx %s %s udata=%#x}", (uintmax_t)c->ident,
		    f, fb, c->tag);
}

static void
op_print(FILE *f, int i, const struct op *o)
{
	char cb[256];

	fprintf(f, "  #%-4d ", i);
	switch (o->kind) {
	case O_PIPE:
	case O_SOCK:
		if (o->cnt == 1)
			fprintf(f, "%s -> s%d, s%d\n", kind_name(o->kind), o->a, o->a + 1);
		else
			fprintf(f, "%s x%d -> s%d..s%d\n", kind_name(o->kind), o->cnt,
			    o->a, o->a + 2 * o->cnt - 1);
		break;
	case O_DUP:
		fprintf(f, "dup s%d -> s%d\n", o->a, o->b);
		break;
	case O_CLOSE:
		fprintf(f, "close s%d\n", o->a);
		break;
	case O_WRITE:
	case O_READ:
		if (o->cnt == 1)
			fprintf(f, "%s s%d %ld bytes\n", kind_name(o->kind), o->a, o->n);
		else
			fprintf(f, "%s s%d..s%d %ld bytes each\n", kind_name(o->kind),
			    o->a, o->a + o->cnt - 1, o->n);
		break;
	case O_KEVENT:
		fprintf(f, "kevent kq%d nevents=%d changes=%d%s", o->kq, o->nev, o->nch,
		    o->nch ? ":" : " (wait, zero timeout)\n");
		for (int j = 0; j < o->nch; j++) {
			if (j == 8 && o->nch > 10) {
				fprintf(f, " ... (%d more)", o->nch - 8);
				break;
			}
			chg_str(&o->ch[j], cb, sizeof(cb));
			fprintf(f, " %s", cb);
		}
		if (o->nch)
			fprintf(f, "\n");
		break;
	case O_IDLE:
		fprintf(f, "idle: %ld x kevent(kq%d, nevents=%d, zero timeout)\n",
		    o->n, o->kq, o->nev);
		break;
	}
}

static void
seq_print(FILE *f, const struct seq *s)
{
	for (int i = 0; i < s->n; i++)
		op_print(f, i, &s->op[i]);
}

/* ------------------------------------------------------------ generator */

static uint64_t rng_state;

static uint64_t
rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static long
rn(long n)	/* 0 .. n-1 */
{
	return n <= 1 ? 0 : (long)(rnd() % (uint64_t)n);
}

static int
chance(int pct)
{
	return rn(100) < pct;
}

/* The generator's rough view of the world: which slots hold what. */
enum { G_FREE, G_PR, G_PW, G_SOCK };
static struct {
	int	kind;
	int	reg[3];		/* READ, WRITE, EMPTY knote probably registered
				   (kq0|kq1 bits) */
} gs[NSLOT];
static int g_nslots;	/* slots in use by this profile */
static int g_ureg[8];

static int
g_pick_open(void)
{
	for (int t = 0; t < 50; t++) {
		int s = (int)rn(g_nslots);

		if (gs[s].kind != G_FREE)
			return s;
	}
	return -1;
}

static int
g_pick_free_pair(void)
{
	for (int t = 0; t < 50; t++) {
		int s = (int)rn(g_nslots - 1) & ~1;

		if (gs[s].kind == G_FREE && gs[s + 1].kind == G_FREE)
			return s;
	}
	return -1;
}

static int g_clear_bias;	/* percent of new fd knotes made EV_CLEAR */

/*
 * Percent of changes on a socket (or, rarely, a pipe: EINVAL) that are
 * EVFILT_EMPTY; 0 draws nothing, so the other profiles' sequences are
 * what they were before EMPTY was modelled.
 */
static int g_empty;

static int g_level_only;	/* only level-triggered and EV_ONESHOT knotes */

static unsigned short
g_mode(void)
{
	if (g_level_only)
		return chance(90) ? 0 : EV_ONESHOT;
	if (g_clear_bias && chance(g_clear_bias))
		return EV_CLEAR;
	switch (rn(20)) {
	case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: return 0;
	case 8: case 9: case 10: case 11: case 12: return EV_CLEAR;
	case 13: case 14: return EV_ONESHOT;
	case 15: case 16: return EV_DISPATCH;
	case 17: case 18: return EV_DISPATCH | EV_CLEAR;
	default: return EV_ONESHOT | EV_CLEAR;
	}
}

static void
g_change(struct chg *c, int kq)
{
	memset(c, 0, sizeof(*c));
	c->tag = chance(10) ? 0 : (unsigned int)rnd();
	if (chance(4)) {	/* unknown filter: EINVAL */
		c->slot = S_USER;
		c->ident = (uintptr_t)rn(8);
		c->filter = chance(50) ? 3 : -60;
		c->flags = EV_ADD;
		return;
	}
	if (chance(3)) {	/* a descriptor that cannot be open: EBADF */
		c->slot = S_USER;
		c->ident = chance(50) ? (uintptr_t)-1 : (uintptr_t)INT_MAX + 5;
		c->filter = chance(50) ? EVFILT_READ : EVFILT_WRITE;
		c->flags = chance(70) ? EV_ADD : EV_DELETE;
		return;
	}
	if (chance(18)) {	/* EVFILT_USER */
		int id = (int)rn(6) + 1;
		int r = g_ureg[id] & (1 << kq);

		c->slot = S_USER;
		c->ident = (uintptr_t)id;
		c->filter = EVFILT_USER;
		c->data = chance(50) ? rn(1000) : 0;
		if (!r || chance(10)) {
			c->flags = EV_ADD | g_mode() | (chance(10) ? EV_DISABLE : 0);
			c->fflags = (unsigned int)rn(0x1000000);
			if (chance(20))
				c->fflags |= NOTE_TRIGGER;
			g_ureg[id] |= 1 << kq;
		} else {
			static const unsigned int ops[] = { NOTE_FFNOP, NOTE_FFAND,
			    NOTE_FFOR, NOTE_FFCOPY };
			switch (rn(10)) {
			case 0: c->flags = EV_DELETE; g_ureg[id] &= ~(1 << kq); break;
			case 1: c->flags = EV_ENABLE; break;
			case 2: c->flags = EV_DISABLE; break;
			case 3: c->flags = EV_ADD; break;
			default: c->flags = chance(30) ? EV_ENABLE : 0; break;
			}
			if (c->flags != EV_DELETE) {
				c->fflags = ops[rn(4)] | (unsigned int)rn(0x1000000);
				if (chance(60))
					c->fflags |= NOTE_TRIGGER;
			}
		}
		if (chance(8))
			c->flags |= EV_RECEIPT;
		if (c->flags != EV_DELETE && !(c->flags & EV_ADD) && chance(20))
			c->flags |= EV_KEEPUDATA;
		return;
	}
	int s = chance(93) ? g_pick_open() : (int)rn(g_nslots);
	int fi;

	if (s < 0)
		s = (int)rn(g_nslots);
	c->slot = s;
	switch (gs[s].kind) {
	case G_PR: fi = 0; break;
	case G_PW: fi = 1; break;
	default: fi = (int)rn(2); break;
	}
	if (g_empty && chance(gs[s].kind == G_SOCK ? g_empty : 3))
		fi = 2;
	c->filter = fi == 2 ? EVFILT_EMPTY : fi ? EVFILT_WRITE : EVFILT_READ;
	if (!(gs[s].reg[fi] & (1 << kq)) || chance(10)) {
		c->flags = EV_ADD | g_mode();
		if (chance(8))
			c->flags |= EV_DISABLE;
		gs[s].reg[fi] |= 1 << kq;
	} else {
		switch (rn(12)) {
		case 0: case 1: case 2:
			c->flags = EV_DELETE;
			gs[s].reg[fi] &= ~(1 << kq);
			break;
		case 3: case 4: case 5: c->flags = EV_ENABLE; break;
		case 6: case 7: c->flags = EV_DISABLE; break;
		case 8: c->flags = EV_ADD; break;
		case 9: c->flags = EV_ADD | g_mode(); break;
		case 10: c->flags = EV_ENABLE | EV_DISABLE; break;	/* EINVAL */
		default: c->flags = 0; break;	/* modify without EV_ADD */
		}
		if ((c->flags & (EV_ENABLE | EV_DISABLE)) && !(c->flags & EV_ADD) &&
		    chance(25))
			c->flags |= EV_KEEPUDATA;
	}
	if (chance(8))
		c->flags |= EV_RECEIPT;
}

static void
g_kevent(struct seq *q, int kq, int nch, int registered)
{
	struct op *o = seq_push(q);

	o->kind = O_KEVENT;
	o->kq = kq;
	o->nch = nch;
	o->ch = nch ? xmalloc((size_t)nch * sizeof(struct chg)) : NULL;
	for (int i = 0; i < nch; i++)
		g_change(&o->ch[i], kq);
	if (nch == 0) {
		/* A wait: from one entry to several times the knotes registered. */
		int k = registered + 2;

		switch (rn(6)) {
		case 0: o->nev = 1; break;
		case 1: o->nev = (int)rn(4) + 1; break;
		case 2: o->nev = (int)rn(k) + 1; break;
		case 3: o->nev = k + (int)rn(k); break;
		default: o->nev = (int)rn(4 * k) + 1; break;
		}
	} else {
		switch (rn(10)) {
		case 0: case 1: o->nev = 0; break;
		case 2: case 3: o->nev = (int)rn(nch + 1); break;
		default: o->nev = nch + (int)rn(registered + 4); break;
		}
	}
}

static void
g_open(struct seq *q, int cnt)
{
	int s = g_pick_free_pair();
	struct op *o;

	if (s < 0)
		return;
	o = seq_push(q);
	o->kind = chance(50) ? O_PIPE : O_SOCK;
	o->a = s;
	o->cnt = 1;
	if (cnt > 1) {
		int k = 0;

		while (k < cnt && s + 2 * k + 1 < g_nslots &&
		    gs[s + 2 * k].kind == G_FREE && gs[s + 2 * k + 1].kind == G_FREE)
			k++;
		o->cnt = k;
	}
	for (int k = 0; k < o->cnt; k++) {
		gs[s + 2 * k].kind = o->kind == O_PIPE ? G_PR : G_SOCK;
		gs[s + 2 * k + 1].kind = o->kind == O_PIPE ? G_PW : G_SOCK;
	}
}

static void
g_slot_closed(int s)
{
	gs[s].kind = G_FREE;
	gs[s].reg[0] = gs[s].reg[1] = gs[s].reg[2] = 0;
}

/* One step of the ordinary mix. */
static void
g_step(struct seq *q, int nkq, int scale)
{
	int kq = nkq > 1 && chance(25) ? 1 : 0;
	int r = (int)rn(100), s;
	struct op *o;
	int registered = 0;

	for (int i = 0; i < g_nslots; i++)
		registered += (gs[i].reg[0] & 1) + (gs[i].reg[1] & 1) +
		    (gs[i].reg[2] & 1);
	if (r < 6) {
		g_open(q, scale && chance(30) ? (int)rn(scale) + 1 : 1);
	} else if (r < 9) {
		int d;

		s = g_pick_open();
		for (d = 0; d < 50; d++) {
			int t = (int)rn(g_nslots);

			if (gs[t].kind == G_FREE) {
				d = t;
				break;
			}
		}
		if (s < 0 || d >= g_nslots || gs[d].kind != G_FREE)
			return;
		o = seq_push(q);
		o->kind = O_DUP;
		o->a = s;
		o->b = d;
		gs[d].kind = gs[s].kind;
	} else if (r < 15) {
		s = g_pick_open();
		if (s < 0)
			return;
		o = seq_push(q);
		o->kind = O_CLOSE;
		o->a = s;
		g_slot_closed(s);
	} else if (r < 35) {
		s = g_pick_open();
		if (s < 0)
			return;
		o = seq_push(q);
		o->kind = O_WRITE;
		o->a = s;
		o->n = chance(20) ? 1 : rn(200) + 1;
		if (scale && chance(40))
			o->cnt = (int)rn(g_nslots - s) + 1;
	} else if (r < 50) {
		s = g_pick_open();
		if (s < 0)
			return;
		o = seq_push(q);
		o->kind = O_READ;
		o->a = s;
		o->n = chance(30) ? 1 : rn(400) + 1;
		if (scale && chance(40))
			o->cnt = (int)rn(g_nslots - s) + 1;
	} else if (r < 72) {
		int nch = (int)rn(4) + 1;

		if (scale && chance(30))
			nch = (int)rn(2 * g_nslots) + 1;
		g_kevent(q, kq, nch, registered);
	} else if (r < 96) {
		g_kevent(q, kq, 0, registered);
	} else {
		o = seq_push(q);
		o->kind = O_IDLE;
		o->kq = kq;
		o->n = chance(10) ? rn(5000) + 2 : rn(100) + 2;
		o->nev = (int)rn(registered + 3) + 1;
	}
}

static void
generate(struct seq *q, uint64_t seed)
{
	int nops, nkq, scale = 0;

	memset(q, 0, sizeof(*q));
	q->seed = seed;
	rng_state = seed * 0x2545f4914f6cdd1dull + 1;
	memset(gs, 0, sizeof(gs));
	memset(g_ureg, 0, sizeof(g_ureg));
	nkq = chance(40) || seed % 4 == 3 ? 2 : 1;
	switch (seed % 4) {
	case 0:
	case 1:
		q->profile = "small";
		if (seed % 8 == 5) {
			q->profile = "small-empty";
			g_empty = 30;
		}
		g_nslots = 2 * ((int)rn(8) + 2);
		nops = (int)rn(400) + 50;
		for (int i = 0; i < nops; i++)
			g_step(q, nkq, 0);
		g_empty = 0;
		break;
	case 2:
		if (seed % 8 == 6) {
			/*
			 * Wide: hundreds of ready level-triggered knotes and
			 * waits with eventlists from one entry to several
			 * times their number; few other operations.
			 */
			int nobj = (int)rn(700) + 200;

			q->profile = "wide";
			g_level_only = 1;
			g_nslots = 2 * nobj;
			g_open(q, nobj);
			g_kevent(q, 0, 2 * nobj, 2 * nobj);
			for (int j = 0; j < q->op[q->n - 1].nch; j++) {
				struct chg *c = &q->op[q->n - 1].ch[j];

				if (c->slot < 0 || (c->flags & EV_RECEIPT))
					c->flags &= ~EV_RECEIPT;
			}
			q->op[q->n - 1].nev = q->op[q->n - 1].nch;	/* room for every error */
			nops = (int)rn(60) + 20;
			for (int i = 0; i < nops; i++) {
				if (chance(60))
					g_kevent(q, 0, 0, 2 * nobj);
				else
					g_step(q, 1, nobj);
			}
			g_level_only = 0;
			break;
		}
		{
		/* Scale: hundreds to a couple of thousand descriptors. */
		int nobj = (int)rn(chance(50) ? 1000 : 300) + 64;

		/*
		 * Half of them level-triggered only, so that the many
		 * differences of EV_CLEAR knotes do not hide what happens
		 * with hundreds of ready level-triggered knotes.
		 */
		g_level_only = chance(50);
		q->profile = g_level_only ? "scale-level" : "scale";
		g_nslots = 2 * nobj + 2 * (int)rn(50) + 2;
		if (g_nslots > NSLOT)
			g_nslots = NSLOT;
		scale = nobj;
		g_open(q, nobj);
		/* Register most of them in one or a few big changelists. */
		for (int k = 0; k < 3; k++)
			g_kevent(q, 0, (int)rn(2 * nobj) + nobj / 2, 2 * nobj);
		nops = (int)rn(250) + 50;
		for (int i = 0; i < nops; i++)
			g_step(q, nkq, scale);
		g_level_only = 0;
		break;
	}
	default: {
		/*
		 * Long runs of empty waits, across the 16-bit counter
		 * boundary: mostly EV_CLEAR knotes (level-triggered WRITE
		 * knotes would make every wait non-empty), and after a
		 * long run, new data and a wait.
		 */
		q->profile = "idle";
		g_nslots = 2 * ((int)rn(4) + 2);
		g_clear_bias = 70;
		nops = (int)rn(60) + 20;
		for (int i = 0; i < nops; i++) {
			g_step(q, nkq, 0);
			if (chance(12)) {
				int kq = nkq > 1 && chance(25) ? 1 : 0;
				struct op *o;

				if (chance(50)) {
					/* A full wait first, so the run counts from a report. */
					g_kevent(q, kq, 0, 4);
					q->op[q->n - 1].nev = 16;
				} else {
					/*
					 * Or from a new EV_CLEAR READ knote with nothing
					 * to read, added without a scan, and after the
					 * run data from the peer (the slot next to it).
					 */
					int sl = g_pick_open();

					if (sl >= 0 && gs[sl].kind != G_PW) {
						o = seq_push(q);
						o->kind = O_READ;
						o->a = sl;
						o->n = 4096;
						g_kevent(q, kq, 1, 4);
						o = &q->op[q->n - 1];
						o->nev = 0;
						o->ch[0].slot = sl;
						o->ch[0].filter = EVFILT_READ;
						o->ch[0].flags = EV_ADD | EV_CLEAR;
						gs[sl].reg[0] |= 1 << kq;
						o = seq_push(q);
						o->kind = O_IDLE;
						o->kq = kq;
						o->n = chance(40) ? 65534 : 65529 + rn(11);
						o->nev = (int)rn(8) + 1;
						o = seq_push(q);
						o->kind = O_WRITE;
						o->a = sl ^ 1;
						o->n = rn(100) + 1;
						g_kevent(q, kq, 0, 4);
						continue;
					}
				}
				o = seq_push(q);
				o->kind = O_IDLE;
				o->kq = kq;
				o->n = chance(30) ? 65534 : chance(60) ? 65529 + rn(11) : rn(70000) + 1000;
				o->nev = (int)rn(8) + 1;
				if (chance(70)) {
					int s = g_pick_open();

					if (s >= 0) {
						o = seq_push(q);
						o->kind = O_WRITE;
						o->a = s;
						o->n = rn(100) + 1;
					}
					g_kevent(q, kq, 0, 4);
				}
			}
		}
		g_clear_bias = 0;
		break;
	}
	}
}

/* ------------------------------------------------------------- executor */

#define MAX_QUEUED	1024	/* bytes: buffers never fill up */

static struct model M;
static int kqfd[2];
static int slotfd[NSLOT], lastfd[NSLOT];
static int verbose;
static volatile sig_atomic_t cur_op;
static struct kevent *evbuf;
static int evcap;

static void
on_alarm(int sig)
{
	char buf[128];
	int n;

	(void)sig;
	n = snprintf(buf, sizeof(buf),
	    "HANG: kevent() did not return within the watchdog (op #%d)\n",
	    (int)cur_op);
	if (write(1, buf, (size_t)n) < 0)
		_exit(3);
	_exit(3);
}

static int fail_flag;
static unsigned int watchdog_s = 3;	/* seconds allowed to one kevent() call */

static void
failf(int i, const char *fmt, ...)
{
	va_list ap;

	printf("MISMATCH at op #%d: ", i);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	fail_flag = 1;
}

static struct kevent *
evroom(int n)
{
	if (n > evcap) {
		free(evbuf);
		evcap = n + 16;
		evbuf = xmalloc((size_t)evcap * sizeof(*evbuf));
	}
	return evbuf;
}

static const struct timespec zero_ts = { 0, 0 };

static void
trace_events(const struct kevent *ev, int n)
{
	char fb[128];

	for (int i = 0; i < n && i < 40; i++) {
		m_flags_str(ev[i].flags, fb, sizeof(fb));
		printf("        -> ident %ju %s flags %s fflags %#x data %jd udata %p\n",
		    (uintmax_t)ev[i].ident, m_filter_name(ev[i].filter), fb,
		    ev[i].fflags, (intmax_t)ev[i].data, ev[i].udata);
	}
	if (n > 40)
		printf("        -> ... %d more\n", n - 40);
}

/* Resolve a change to a struct kevent; 0 when the change must be skipped. */
static int
resolve(const struct op *o, const struct chg *c, struct kevent *k)
{
	uintptr_t ident = c->ident;

	if (c->slot >= 0) {
		int fd = slotfd[c->slot] >= 0 ? slotfd[c->slot] :
		    lastfd[c->slot] >= 0 ? lastfd[c->slot] : NEVER_FD;
		int kind = m_kind(&M, fd);

		ident = (uintptr_t)fd;
		/* The number may now name another kind of file: keep to pairs FreeBSD defines. */
		if ((kind == M_PIPE_R && c->filter != EVFILT_READ &&
		    c->filter != EVFILT_EMPTY) ||
		    (kind == M_PIPE_W && c->filter != EVFILT_WRITE &&
		    c->filter != EVFILT_EMPTY) ||
		    kind == M_OTHER)
			return 0;
		/* LINUX NOTES 1: only EV_ADD, EV_DELETE, EV_ENABLE on an open number are defined. */
		if (m_is_stale(&M, o->kq, fd, c->filter) &&
		    (kind == M_FREE || !(c->flags & (EV_ADD | EV_DELETE | EV_ENABLE))))
			return 0;
	}
	/* The model has no NOTE_LOWAT: descriptor filters get no input. */
	EV_SET(k, ident, c->filter, c->flags,
	    c->filter == EVFILT_USER ? c->fflags : 0,
	    c->filter == EVFILT_USER ? c->data : 0,
	    (void *)(uintptr_t)c->tag);
	return 1;
}

/*
 * The kqueue's descriptor polls readable while a zero-timeout kevent()
 * would return an event (kqueue.2; FreeBSD's kqueue_poll: kq_count > 0,
 * and every knote a scan must report is queued).  After a collection
 * that found nothing to report (clean), it does not while nothing must or
 * may be reported: else a program that polls the kqueue would spin.
 * Otherwise it may poll readable once for nothing, as FreeBSD's does
 * while a knote whose condition went away is still queued (kq: a disabled
 * knote's descriptor hung up, as epoll reports EPOLLHUP and EPOLLERR
 * whatever the mask; a full collection leaves that event for the next
 * one; an EMPTY knote's write-space wake-up after its report).
 */
static void
x_poll_check(int i, int kq, int clean)
{
	struct pollfd p = { .fd = kqfd[kq], .events = POLLIN };
	int r, must = m_must_ready(&M, kq);
	int none = clean && m_nothing_ready(&M, kq);

	if (!must && !none)
		return;
	r = poll(&p, 1, 0);
	if (r < 0)
		failf(i, "poll(kq%d) failed: %s", kq, strerror(errno));
	else if (must && r != 1)
		failf(i, "kq%d does not poll readable with an event to report",
		    kq);
	else if (none && r != 0)
		failf(i, "kq%d polls readable (revents %#x) with nothing to "
		    "report", kq, (unsigned)p.revents);
}

static void
x_kevent(int i, const struct op *o)
{
	struct kevent *ch = xmalloc((size_t)(o->nch + 1) * sizeof(*ch));
	struct kevent *exp = xmalloc((size_t)(o->nev + o->nch + 1) * sizeof(*exp));
	struct kevent *ev = evroom(o->nev + 1);
	struct m_expect x;
	int nch = 0, r, err;
	char msg[512];

	x_poll_check(i, o->kq, 0);
	if (fail_flag)
		goto out;
	for (int j = 0; j < o->nch; j++)
		nch += resolve(o, &o->ch[j], &ch[nch]);
	if (verbose) {
		printf("  #%-4d kevent(kq%d=%d, %d changes, nevents %d)\n", i, o->kq,
		    kqfd[o->kq], nch, o->nev);
		for (int j = 0; j < nch && j < 40; j++) {
			char fb[128];

			m_flags_str(ch[j].flags, fb, sizeof(fb));
			printf("        <- ident %ju %s flags %s fflags %#x data %jd udata %p\n",
			    (uintmax_t)ch[j].ident, m_filter_name(ch[j].filter), fb,
			    ch[j].fflags, (intmax_t)ch[j].data, ch[j].udata);
		}
	}
	m_changes(&M, o->kq, ch, nch, o->nev, exp, &x);
	memset(ev, 0, (size_t)(o->nev + 1) * sizeof(*ev));
	alarm(watchdog_s);
	r = kevent(kqfd[o->kq], ch, nch, ev, o->nev, &zero_ts);
	err = errno;
	alarm(0);
	if (verbose) {
		printf("        = %d%s%s\n", r, r < 0 ? " " : "", r < 0 ? strerror(err) : "");
		if (r > 0)
			trace_events(ev, r);
	}
	if (!x.scan) {
		if (r != x.ret || (r < 0 && err != x.err)) {
			failf(i, "kevent returned %d (%s), expected %d (%s)", r,
			    r < 0 ? strerror(err) : "ok", x.ret,
			    x.ret < 0 ? strerror(x.err) : "ok");
			goto out;
		}
		for (int j = 0; j < r; j++) {
			if (ev[j].ident != exp[j].ident || ev[j].filter != exp[j].filter ||
			    ev[j].flags != EV_ERROR || ev[j].data != exp[j].data ||
			    ev[j].udata != exp[j].udata) {
				char fb[128];

				m_flags_str(ev[j].flags, fb, sizeof(fb));
				failf(i, "entry %d: ident %ju filter %s flags %s data %jd udata %p; "
				    "expected ident %ju filter %s flags ERROR data %jd udata %p",
				    j, (uintmax_t)ev[j].ident, m_filter_name(ev[j].filter), fb,
				    (intmax_t)ev[j].data, ev[j].udata, (uintmax_t)exp[j].ident,
				    m_filter_name(exp[j].filter), (intmax_t)exp[j].data,
				    exp[j].udata);
				goto out;
			}
		}
		goto out;
	}
	if (r < 0) {
		failf(i, "kevent failed: %s; expected a scan", strerror(err));
		goto out;
	}
	if (m_scan(&M, o->kq, o->nev, ev, r, msg, sizeof(msg)) != 0)
		failf(i, "%s", msg);
	else if (nch == 0)
		x_poll_check(i, o->kq, r == 0 && o->nev > 0);
out:
	free(ch);
	free(exp);
}

static void
x_idle(int i, const struct op *o)
{
	struct kevent *ev = evroom(o->nev + 1);
	long k;
	char msg[512];
	int r = 0;

	if (verbose)
		printf("  #%-4d idle: %ld x kevent(kq%d=%d, nevents %d, zero timeout)\n",
		    i, o->n, o->kq, kqfd[o->kq], o->nev);
	x_poll_check(i, o->kq, 0);
	for (k = 0; k < o->n && !fail_flag; k++) {
		if (m_nothing_ready(&M, o->kq)) {
			/* The fast path: nothing may be reported. */
			long left = o->n - k;

			alarm(watchdog_s + (unsigned int)(left / 20000));
			for (; left > 0; left--, k++) {
				r = kevent(kqfd[o->kq], NULL, 0, ev, o->nev, &zero_ts);
				if (r != 0) {
					alarm(0);
					failf(i, "empty wait %ld of %ld returned %d%s%s", k + 1,
					    o->n, r, r < 0 ? ": " : "",
					    r < 0 ? strerror(errno) : "");
					if (r > 0) {
						trace_events(ev, r);
						if (m_scan(&M, o->kq, o->nev, ev, r, msg,
						    sizeof(msg)) != 0)
							printf("  (%s)\n", msg);
					}
					return;
				}
			}
			alarm(0);
			break;
		}
		alarm(watchdog_s);
		r = kevent(kqfd[o->kq], NULL, 0, ev, o->nev, &zero_ts);
		alarm(0);
		if (r < 0) {
			failf(i, "kevent failed: %s", strerror(errno));
			return;
		}
		if (m_scan(&M, o->kq, o->nev, ev, r, msg, sizeof(msg)) != 0) {
			failf(i, "idle call %ld: %s", k + 1, msg);
			trace_events(ev, r);
			return;
		}
	}
	if (!fail_flag && o->n > 0)
		x_poll_check(i, o->kq, r == 0 && o->nev > 0);
}

static void
x_open(int i, const struct op *o)
{
	for (int k = 0; k < o->cnt; k++) {
		int a = o->a + 2 * k, b = a + 1, p[2];

		if (b >= NSLOT || slotfd[a] >= 0 || slotfd[b] >= 0)
			continue;
		if (o->kind == O_PIPE) {
			if (pipe2(p, O_NONBLOCK) != 0) {
				failf(i, "pipe: %s", strerror(errno));
				return;
			}
			m_pipe(&M, p[0], p[1]);
		} else {
			if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p) != 0) {
				failf(i, "socketpair: %s", strerror(errno));
				return;
			}
			m_socketpair(&M, p[0], p[1]);
		}
		slotfd[a] = lastfd[a] = p[0];
		slotfd[b] = lastfd[b] = p[1];
		if (verbose && o->cnt <= 4)
			printf("  #%-4d %s -> s%d=fd %d, s%d=fd %d\n", i, kind_name(o->kind),
			    a, p[0], b, p[1]);
	}
	if (verbose && o->cnt > 4)
		printf("  #%-4d %s x%d -> s%d..s%d\n", i, kind_name(o->kind), o->cnt,
		    o->a, o->a + 2 * o->cnt - 1);
}


static void
x_write(int i, const struct op *o)
{
	static char buf[4096];
	int done = 0;

	for (int s = o->a; s < o->a + o->cnt && s < NSLOT; s++) {
		int fd = slotfd[s], kind;
		ssize_t w;

		if (fd < 0)
			continue;
		kind = m_kind(&M, fd);
		if ((kind != M_PIPE_W && kind != M_SOCK) || m_peer_closed(&M, fd) ||
		    m_target_bytes(&M, fd) + o->n > MAX_QUEUED)
			continue;
		if (kind == M_SOCK)
			w = send(fd, buf, (size_t)o->n, MSG_NOSIGNAL);
		else
			w = write(fd, buf, (size_t)o->n);
		if (w != o->n) {
			failf(i, "write of %ld bytes on fd %d: %zd (%s)", o->n, fd, w,
			    w < 0 ? strerror(errno) : "short");
			return;
		}
		m_write(&M, fd, o->n);
		if (verbose && o->cnt == 1)
			printf("  #%-4d write s%d=fd %d: %ld bytes\n", i, s, fd, o->n);
		done++;
	}
	if (verbose && o->cnt > 1)
		printf("  #%-4d write %ld bytes on %d descriptors of s%d..s%d\n", i, o->n,
		    done, o->a, o->a + o->cnt - 1);
}

static void
x_read(int i, const struct op *o)
{
	static char buf[4096];
	int done = 0;

	for (int s = o->a; s < o->a + o->cnt && s < NSLOT; s++) {
		int fd = slotfd[s], kind;
		long want, avail;
		ssize_t r;

		if (fd < 0)
			continue;
		kind = m_kind(&M, fd);
		if (kind != M_PIPE_R && kind != M_SOCK)
			continue;
		avail = m_readable(&M, fd);
		want = avail < o->n ? avail : o->n;
		r = read(fd, buf, (size_t)o->n);
		if (want == 0) {
			int eof = m_peer_closed(&M, fd);

			if ((eof && r != 0) || (!eof && !(r < 0 && errno == EAGAIN))) {
				failf(i, "read on fd %d: %zd, expected %s", fd, r,
				    eof ? "0 (EOF)" : "EAGAIN");
				return;
			}
		} else if (r != want) {
			failf(i, "read on fd %d: %zd, expected %ld", fd, r, want);
			return;
		} else {
			m_read(&M, fd, want);
		}
		if (verbose && o->cnt == 1)
			printf("  #%-4d read s%d=fd %d: %zd bytes\n", i, s, fd, r);
		done++;
	}
	if (verbose && o->cnt > 1)
		printf("  #%-4d read up to %ld bytes on %d descriptors of s%d..s%d\n", i,
		    o->n, done, o->a, o->a + o->cnt - 1);
}

static int
run_ops(const struct seq *q)
{
	struct rlimit rl;
	long cap;
	int p[2];

	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 6000) {
		rl.rlim_cur = rl.rlim_max < 6000 ? rl.rlim_max : 6000;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (pipe(p) != 0)
		return 2;
	cap = fcntl(p[0], F_GETPIPE_SZ);
	close(p[0]);
	close(p[1]);
	m_init(&M, cap);
	for (int s = 0; s < NSLOT; s++)
		slotfd[s] = lastfd[s] = -1;
	for (int k = 0; k < 2; k++) {
		kqfd[k] = kqueue();
		if (kqfd[k] < 0) {
			printf("kqueue: %s\n", strerror(errno));
			return 2;
		}
		m_other_fd(&M, kqfd[k]);
	}
	for (int i = 0; i < q->n && !fail_flag; i++) {
		const struct op *o = &q->op[i];
		int fd;

		cur_op = i;
		switch (o->kind) {
		case O_PIPE:
		case O_SOCK:
			x_open(i, o);
			break;
		case O_DUP:
			if (slotfd[o->a] < 0 || slotfd[o->b] >= 0)
				break;
			fd = dup(slotfd[o->a]);
			if (fd < 0) {
				failf(i, "dup: %s", strerror(errno));
				break;
			}
			m_dup(&M, slotfd[o->a], fd);
			slotfd[o->b] = lastfd[o->b] = fd;
			if (verbose)
				printf("  #%-4d dup s%d=fd %d -> s%d=fd %d\n", i, o->a,
				    slotfd[o->a], o->b, fd);
			break;
		case O_CLOSE:
			if ((fd = slotfd[o->a]) < 0)
				break;
			if (m_kind(&M, fd) == M_SOCK && m_readable(&M, fd) > 0 &&
			    m_last_ref(&M, fd)) {
				/*
				 * Linux resets the peer of a socket closed with
				 * unread data (ECONNRESET): read it first.
				 */
				static char buf[MAX_QUEUED];
				long n = m_readable(&M, fd);

				if (read(fd, buf, (size_t)n) != n)
					failf(i, "drain of fd %d before close failed", fd);
				m_read(&M, fd, n);
				if (verbose)
					printf("  #%-4d read s%d=fd %d: %ld bytes (drain before close)\n",
					    i, o->a, fd, n);
			}
			if (close(fd) != 0)
				failf(i, "close(%d): %s", fd, strerror(errno));
			m_close(&M, fd);
			slotfd[o->a] = -1;
			if (verbose)
				printf("  #%-4d close s%d=fd %d\n", i, o->a, fd);
			break;
		case O_WRITE:
			x_write(i, o);
			break;
		case O_READ:
			x_read(i, o);
			break;
		case O_KEVENT:
			x_kevent(i, o);
			break;
		case O_IDLE:
			x_idle(i, o);
			break;
		}
	}
	fflush(stdout);
	return fail_flag ? 1 : 0;
}

/* --------------------------------------------------------------- runner */

enum { R_PASS, R_MISMATCH, R_HANG, R_CRASH, R_ERROR };
static const char *rname[] = { "pass", "mismatch", "hang", "crash", "error" };
static long child_limit = 60;	/* seconds for one sequence */

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Run q in a child; its output goes to out (a stream the caller reads).
 * Returns R_*.
 */
static int
run_child(const struct seq *q, int verb, FILE *out)
{
	pid_t pid;
	int st, rc;
	double t0 = now();

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return R_ERROR;
	}
	if (pid == 0) {
		int fd = fileno(out);

		dup2(fd, 1);
		dup2(fd, 2);
		setvbuf(stdout, NULL, _IOLBF, 0);
		verbose = verb;
		{
			int crc = run_ops(q);
#ifdef KQ_COVERAGE
			extern void __gcov_dump(void);

			__gcov_dump();	/* the child's counters (SAN=cov) */
#endif
			_exit(crc);
		}
	}
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			break;
		if (now() - t0 > (double)child_limit) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fprintf(out, "HANG: the sequence did not finish within %lds\n",
			    child_limit);
			fflush(out);
			return R_HANG;
		}
		usleep(now() - t0 < 0.05 ? 500 : 5000);
	}
	if (WIFSIGNALED(st)) {
		fprintf(out, "CRASH: killed by signal %d (%s)\n", WTERMSIG(st),
		    strsignal(WTERMSIG(st)));
		fflush(out);
		return R_CRASH;
	}
	rc = WEXITSTATUS(st);
	return rc == 0 ? R_PASS : rc == 1 ? R_MISMATCH : rc == 3 ? R_HANG : R_ERROR;
}

/* Run q; put the first lines of failure output in msg. */
static int
run_quiet(const struct seq *q, char *msg, size_t len)
{
	FILE *f = tmpfile();
	int r;

	if (f == NULL) {
		perror("tmpfile");
		exit(2);
	}
	r = run_child(q, 0, f);
	if (msg != NULL) {
		size_t n;

		rewind(f);
		n = fread(msg, 1, len - 1, f);
		msg[n] = '\0';
	}
	fclose(f);
	return r;
}

/* ------------------------------------------------------------ shrinking */

static double shrink_deadline;
static int shrink_runs;
static char shrink_sig[128];

/*
 * The kind of a failure, so that shrinking keeps to the failure it started
 * from instead of drifting to another one: the category of the message
 * and the filter it names.
 */
static void
signature(const char *msg, char *sig, size_t len)
{
	static const char *cats[] = { "no such knote", "reported twice",
	    "knote is disabled", "knote is not ready", "not triggered again",
	    "ready but not reported", "unfair", ": flags", ": data", ": fflags",
	    ": udata", "kevent returned", "entry", "kevent failed", "empty wait",
	    "read on", "write of", "HANG", "CRASH" };
	static const char *filters[] = { "READ", "WRITE", "USER", "EMPTY" };
	const char *cat = "other", *fil = "";

	for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]); i++) {
		if (strstr(msg, cats[i]) != NULL) {
			cat = cats[i];
			break;
		}
	}
	for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
		if (strstr(msg, filters[i]) != NULL) {
			fil = filters[i];
			break;
		}
	}
	snprintf(sig, len, "%s/%s", cat, fil);
}

static int
still_fails(const struct seq *q, int want)
{
	char msg[2048], sig[128];

	if (now() > shrink_deadline)
		return 0;
	shrink_runs++;
	if (run_quiet(q, msg, sizeof(msg)) != want)
		return 0;
	signature(msg, sig, sizeof(sig));
	return strcmp(sig, shrink_sig) == 0;
}

/* A copy of q without ops [from, to). */
static void
seq_without(struct seq *d, const struct seq *q, int from, int to)
{
	struct seq t = *q;

	t.n = q->n - (to - from);
	t.op = xmalloc((size_t)(t.n + 1) * sizeof(*t.op));
	memcpy(t.op, q->op, (size_t)from * sizeof(*t.op));
	memcpy(t.op + from, q->op + to, (size_t)(q->n - to) * sizeof(*t.op));
	seq_copy(d, &t);
	free(t.op);
}

/* Delta debugging over the operations, then the changes of each kevent. */
static void
shrink(struct seq *q, int want)
{
	int gran = 2, progress = 1;

	while (q->n >= 2 && now() < shrink_deadline) {
		int chunk = (q->n + gran - 1) / gran, reduced = 0;

		for (int from = 0; from < q->n && now() < shrink_deadline; from += chunk) {
			int to = from + chunk < q->n ? from + chunk : q->n;
			struct seq t;

			seq_without(&t, q, from, to);
			if (still_fails(&t, want)) {
				seq_free(q);
				*q = t;
				reduced = 1;
				from -= chunk;
				if (from + chunk >= q->n)
					break;
				continue;
			}
			seq_free(&t);
		}
		if (reduced) {
			if (gran > 2)
				gran--;
		} else {
			if (chunk == 1)
				break;
			gran = gran * 2 < q->n ? gran * 2 : q->n;
		}
	}
	/* Changes inside each kevent, slot ranges, counts and sizes. */
	while (progress && now() < shrink_deadline) {
		progress = 0;
		for (int i = 0; i < q->n && now() < shrink_deadline; i++) {
			struct op *o = &q->op[i];

			/* Drop chunks of changes, halving the chunk when none goes. */
			for (int chunk = o->nch / 2; chunk >= 1 && now() < shrink_deadline; ) {
				int red = 0;

				for (int from = 0; from < o->nch && now() < shrink_deadline; ) {
					int to = from + chunk < o->nch ? from + chunk : o->nch;
					struct chg *save = o->ch;
					int savec = o->nch;
					struct chg *nc = xmalloc((size_t)savec * sizeof(*nc));

					memcpy(nc, save, (size_t)from * sizeof(*nc));
					memcpy(nc + from, save + to, (size_t)(savec - to) * sizeof(*nc));
					o->ch = nc;
					o->nch = savec - (to - from);
					if (still_fails(q, want)) {
						free(save);
						red = progress = 1;
						continue;
					}
					free(nc);
					o->ch = save;
					o->nch = savec;
					from = to;
				}
				if (!red)
					chunk /= 2;
				else if (chunk > o->nch / 2)
					chunk = o->nch / 2;
			}
			/* Smaller numbers: idle counts, ranges, open counts, eventlists. */
			long *nums[3] = { NULL, NULL, NULL };
			int nn = 0;

			if (o->kind == O_IDLE)
				nums[nn++] = &o->n;
			for (int k = 0; k < nn; k++) {
				long lo = 0, hi = *nums[k];

				/* Binary search for the smallest count that still fails. */
				while (lo + 1 < hi && now() < shrink_deadline) {
					long mid = lo + (hi - lo) / 2;

					*nums[k] = mid;
					if (still_fails(q, want)) {
						hi = mid;
						progress = 1;
					} else {
						lo = mid;
					}
				}
				*nums[k] = hi;
			}
			if ((o->kind == O_PIPE || o->kind == O_SOCK || o->kind == O_WRITE ||
			    o->kind == O_READ) && o->cnt > 1) {
				int save = o->cnt;

				o->cnt = save / 2;
				if (still_fails(q, want))
					progress = 1;
				else
					o->cnt = save;
			}
			if (o->kind == O_KEVENT && o->nev > 1) {
				int save = o->nev;

				o->nev = save / 2;
				if (still_fails(q, want))
					progress = 1;
				else
					o->nev = save;
			}
		}
	}
}

/* ----------------------------------------------------------------- main */

static double
envnum(const char *name, double def)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? strtod(v, NULL) : def;
}

static int npass, nfail, nshrunk;
static double shrink_seconds;

static void
report_failure(struct seq *q, int r, const char *msg)
{
	struct seq s;
	double t0 = now();
	int before = q->n;

	printf("FAIL seed=%ju profile=%s ops=%d: %s\n", (uintmax_t)q->seed,
	    q->profile, q->n, rname[r]);
	printf("%s", msg);
	if (nshrunk >= 6) {
		printf("  (not shrunk: six failures shrunk already; replay with "
		    "KQ_MODEL_SEED=%ju)\n", (uintmax_t)q->seed);
		return;
	}
	nshrunk++;
	signature(msg, shrink_sig, sizeof(shrink_sig));
	seq_copy(&s, q);
	shrink_deadline = now() + shrink_seconds;
	shrink_runs = 0;
	watchdog_s = 1;		/* a hang costs the watchdog on every run */
	shrink(&s, r);
	watchdog_s = 3;
	printf("  shrunk from %d to %d operations in %.1fs (%d runs)%s:\n", before, s.n,
	    now() - t0, shrink_runs, now() > shrink_deadline ? ", time limit reached" : "");
	seq_print(stdout, &s);
	printf("  trace of the shrunk sequence (replay: KQ_MODEL_SEED=%ju):\n",
	    (uintmax_t)q->seed);
	fflush(stdout);
	{
		FILE *f = tmpfile();
		char line[1024];
		int nl = 0;

		if (f != NULL) {
			run_child(&s, 1, f);
			rewind(f);
			while (fgets(line, sizeof(line), f) != NULL && nl++ < 400)
				printf("    %s", line);
			fclose(f);
		}
	}
	seq_free(&s);
}

static void
run_seed(uint64_t seed, int show)
{
	struct seq q;
	char msg[4096];
	double t0 = now();
	int r;

	generate(&q, seed);
	r = run_quiet(&q, msg, sizeof(msg));
	if (r == R_PASS) {
		npass++;
		if (show)
			printf("ok   seed=%ju profile=%s ops=%d (%.2fs)\n", (uintmax_t)seed,
			    q.profile, q.n, now() - t0);
	} else {
		nfail++;
		report_failure(&q, r, msg);
	}
	fflush(stdout);
	seq_free(&q);
}

/*
 * The fixed seeds run in CI: 1-24 (12 small, 3 scale or scale-level, 3
 * wide, 6 idle), 31 (idle: an EV_CLEAR knote across 65 534 empty waits),
 * 86 (wide: 1 300 descriptors, eventlists larger than the ready knotes by
 * more than 512), 220815458 (scale: two changes on a descriptor, the first
 * edge kept on the active list by a full call, so an EV_CLEAR knote on it
 * is reported twice without new activity: two of LINUX NOTES' causes).
 */
static const uint64_t ci_seeds[] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
	13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
	31, 86, 220815458,
	1000541, 1001781,	/* small-empty: an EMPTY set on a closed number */
};

int
main(int argc, char **argv)
{
	const char *one = getenv("KQ_MODEL_SEED");
	double secs = envnum("KQ_MODEL_SECONDS", 60);
	int show = argc > 1 && strcmp(argv[1], "-v") == 0;

	shrink_seconds = envnum("KQ_MODEL_SHRINK_SECONDS", 20);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (one != NULL && *one != '\0') {
		uint64_t seed = strtoull(one, NULL, 0);
		struct seq q;

		generate(&q, seed);
		printf("seed %ju, profile %s, %d operations:\n", (uintmax_t)seed,
		    q.profile, q.n);
		if (show)
			seq_print(stdout, &q);
		seq_free(&q);
		run_seed(seed, 1);
	} else {
		double t0;

		if (envnum("KQ_MODEL_CI", 1) != 0) {
			t0 = now();
			for (size_t i = 0; i < sizeof(ci_seeds) / sizeof(ci_seeds[0]); i++)
				run_seed(ci_seeds[i], 1);
			printf("CI seeds: %d passed, %d failed (%.1fs)\n", npass, nfail,
			    now() - t0);
		}
		if (secs > 0) {
			uint64_t base;
			struct timespec ts;
			int n = 0, p0 = npass, f0 = nfail;

			clock_gettime(CLOCK_REALTIME, &ts);
			base = ((uint64_t)ts.tv_sec * 1000003u + (uint64_t)ts.tv_nsec / 1000) %
			    1000000000u;
			printf("random run: %.0fs from seed %ju (replay one with KQ_MODEL_SEED=N)\n",
			    secs, (uintmax_t)base);
			t0 = now();
			while (now() - t0 < secs) {
				run_seed(base + (uint64_t)n, show);
				n++;
			}
			printf("random run: seeds %ju..%ju, %d passed, %d failed\n",
			    (uintmax_t)base, (uintmax_t)(base + (uint64_t)n - 1),
			    npass - p0, nfail - f0);
		}
	}
	printf("model: %d passed, %d failed\n", npass, nfail);
	return nfail != 0;
}
