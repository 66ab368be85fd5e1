/*
 * sigshim.h -- the process-wide signal observer behind EVFILT_SIGNAL
 * (sigshim.c): per-signal delivery counters and the hooks that keep kq's
 * handler installed while knotes watch a signal.
 */
#ifndef KQ_SIGSHIM_H
#define KQ_SIGSHIM_H

#include <stdatomic.h>
#include <stdint.h>

#define KQ_NSIG		65	/* signals 1..64 */

/* Deliveries of each signal since the process started (never reset). */
extern _Atomic uint64_t	kq_sig_gen[KQ_NSIG];

int		kq_sig_valid(uintptr_t signo);
int		kq_sig_watch(int signo);
void		kq_sig_unwatch(int signo);
int		kq_sig_evfd_dup(int *fd);
int		kq_sig_evfd_peek(void);
uint64_t	kq_sig_app_runs(void);
int		kq_sig_eintr_absorbed(uint64_t before);
void		kq_sig_atfork_child(void);

#endif
