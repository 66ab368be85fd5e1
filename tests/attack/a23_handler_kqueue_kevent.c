/*
 * a23: a16's churn, whose SIGALRM handler (every 300 us, on whichever
 * thread the signal lands) in turn closes a kqueue, closes it and calls
 * kqueue() (which may take the number just closed), or calls kevent() on
 * it (EV_ADD of an EVFILT_USER knote) and then closes it -- while the
 * thread it interrupted may be inside kevent() on that very kqueue, or in
 * kqueue(), holding the kqueue's lock or reg_lock.  On FreeBSD both are
 * system calls and work from a handler.  Before session 21 kq waited for
 * its own thread for ever (attack helper 20: 3 runs of 3 hung in each
 * mode): the handler's kevent() for the kqueue's lock, its kqueue() for
 * the lock of the kqueue whose number it took.  Now kevent() fails with
 * EDEADLK there (kevent.2, LINUX NOTES), and that kqueue is retired once
 * the thread leaves its lock.  Properties: no hang (exit 2), and no
 * descriptor left (exit 1).
 */
#include "churn.h"

static int
close_and_more(int k)
{
	static atomic_int turn;
	struct kevent c;
	int q;

	switch (atomic_fetch_add(&turn, 1) % 3) {
	case 1:
		if (close(k) != 0)
			return -1;
		if ((q = kqueue()) >= 0)
			(void)close(q);
		return 0;
	case 2:
		EV_SET(&c, 9, EVFILT_USER, EV_ADD, 0, 0, NULL);
		(void)kevent(k, &c, 1, NULL, 0, NULL);
		return close(k);
	default:
		return close(k);
	}
}

int
main(int argc, char **argv)
{
	int base = churn_begin("a23", close_and_more);
	int after = churn_end(argc > 1 ? atoi(argv[1]) : 5);

	printf("a23: %d kqueues made, %d closed in the handler; "
	    "descriptors %d before, %d after\n", (int)made, (int)hclosed,
	    base, after);
	return after == base ? 0 : 1;
}
