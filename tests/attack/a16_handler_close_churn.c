/*
 * a16: close() of kqueues from a SIGALRM handler (every 300 us, on
 * whichever thread the signal lands) while four threads create kqueues
 * with a knote of most filters, close watched descriptors and wait in
 * kevent() on the kqueues the handler closes.  Two properties:
 *   - no hang: a thread holding reg_lock or a kqueue's lock once waited
 *     in malloc() for an arena lock held by a thread whose handler was
 *     waiting in close() for that same kq lock (about 1 run in 8 before
 *     src/heap.c).  A watchdog that the signal cannot reach exits 2 after
 *     10 s without a kqueue made;
 *   - no leak: after the threads stop and every kqueue is closed, the
 *     process holds the descriptors it held before.  A kqueue whose number
 *     kq closed itself from a handler was taken for one closed behind
 *     kq's back (kq_unowned) when the reaper had cleared its mark before
 *     kqueue() reused the number, and its internal descriptors stayed
 *     open for ever (8 to 40 descriptors in 8 runs of 8 before 028b2eb).
 * Exit 0 when both hold, 1 on a leak, 2 on a hang.
 */
#include "churn.h"

int
main(int argc, char **argv)
{
	int base = churn_begin("a16", close);
	int after = churn_end(argc > 1 ? atoi(argv[1]) : 5);

	printf("a16: %d kqueues made, %d closed in the handler; "
	    "descriptors %d before, %d after\n", (int)made, (int)hclosed,
	    base, after);
	return after == base ? 0 : 1;
}
