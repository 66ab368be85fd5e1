/*
 * sigshim.h -- the process-wide signal observer behind EVFILT_SIGNAL
 * (sigshim.c): per-signal delivery counters and the hooks that keep kq's
 * handler installed while knotes watch a signal.
 */
#ifndef KQ_SIGSHIM_H
#define KQ_SIGSHIM_H

#include <stdatomic.h>
#include <stdint.h>

#include "kq_int.h"

#define KQ_NSIG		65	/* signals 1..64 */

/* Deliveries of each signal since the process started (never reset). */
extern _Atomic uint64_t	kq_sig_gen[KQ_NSIG];

int		kq_sig_valid(uintptr_t signo);
int		kq_sig_watch(int signo);
void		kq_sig_unwatch(int signo);
int		kq_sig_evfd_dup(int *fd);
int		kq_sig_evfd_peek(void);
int		kq_sig_evfd_is(int fd);
void		kq_sig_evfd_lost(int fd);
int		kq_sig_eintr_absorbed(uint64_t before);
void		kq_sig_atfork_child(void);

/*
 * The calling thread's signal deliveries so far: those kq's handler
 * absorbed (the application ignores them) in the low half, those that ran
 * an application handler in the high half.  Compared around a wait by
 * kq_sig_eintr_absorbed.
 */
static inline uint64_t
kq_sig_app_runs(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	return ((uint64_t)kq_tls.sig_runs << 32) | kq_tls.sig_quiet;
}

#endif
