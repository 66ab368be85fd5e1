/*
 * filt_user.c -- EVFILT_USER: events triggered by the application.
 *
 * A user knote is pure userspace state: the triggered bit (KN_TRIGGERED),
 * the stored 24 user flags (kn_sfflags) and the stored data (un_data).  A
 * trigger puts the knote on the active list; a kevent() blocked in another
 * thread is woken by the kqueue's doorbell (knote.c), so user events cost
 * no kernel descriptor of their own.
 *
 * FreeBSD semantics (kern_event.c filt_user*):
 *   - on the first EV_ADD the input fflags and data are stored as given and
 *     NOTE_TRIGGER does not fire (the new knote's output fflags are zeroed
 *     before attach);
 *   - on every later change (EV_ADD, EV_ENABLE, EV_DISABLE, or none of
 *     them) NOTE_TRIGGER sets the triggered state, NOTE_FFAND/FFOR/FFCOPY
 *     apply the low 24 input bits to the stored flags, data is stored, and
 *     EV_CLEAR in the change resets the triggered state;
 *   - delivery reports the stored flags and data; with EV_CLEAR on the
 *     knote it resets the triggered state, without it the knote stays
 *     triggered (level) until a change with EV_CLEAR or EV_DELETE.
 *
 * Everything runs with kq_lock held.
 */
#include <stdint.h>

#include "kq_int.h"

/* A user knote: the data is stored with its 64 bits. */
struct unote {
	struct knote	 un_kn;
	int64_t		 un_data;
};

#define UN(kn)	((struct unote *)(void *)(kn))

static int
filt_usermodify(struct kqueue *kq, struct knote *kn, const struct kevent *kev)
{
	uint32_t ff = kev->fflags & NOTE_FFLAGSMASK;

	(void)kq;
	UN(kn)->un_data = kev->data;
	if (!(kn->kn_status & KN_ATTACHED))
		return 0;	/* new knote: the engine stores fflags as given */
	if (kev->fflags & NOTE_TRIGGER)
		kn->kn_status |= KN_TRIGGERED;
	switch (kev->fflags & NOTE_FFCTRLMASK) {
	case NOTE_FFAND:
		kn->kn_sfflags &= ff;
		break;
	case NOTE_FFOR:
		kn->kn_sfflags |= ff;
		break;
	case NOTE_FFCOPY:
		kn->kn_sfflags = ff;
		break;
	default:	/* NOTE_FFNOP */
		break;
	}
	if (kev->flags & EV_CLEAR)
		kn->kn_status &= ~KN_TRIGGERED;
	return 0;
}

static int
filt_userupdate(struct kqueue *kq, struct knote *kn, int readd)
{
	(void)readd;
	if ((kn->kn_status & (KN_TRIGGERED | KN_DISABLED)) == KN_TRIGGERED)
		knote_enqueue(kq, kn);
	return 0;
}

static int
filt_userevent(struct kqueue *kq, struct knote *kn, uint32_t hint,
    struct kevent *out)
{
	(void)kq;
	(void)hint;
	if (!(kn->kn_status & KN_TRIGGERED))
		return 0;
	out->fflags = kn->kn_sfflags;
	out->data = UN(kn)->un_data;
	return 1;
}

static void
filt_userclear(struct kqueue *kq, struct knote *kn)
{
	(void)kq;
	kn->kn_status &= ~KN_TRIGGERED;
}

const struct filterops user_filtops = {
	.f_isfd = 0,
	.f_size = sizeof(struct unote),
	.f_modify = filt_usermodify,
	.f_update = filt_userupdate,
	.f_event = filt_userevent,
	.f_clear = filt_userclear,
};
