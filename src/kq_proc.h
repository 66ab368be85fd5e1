/*
 * kq_proc.h -- process helpers shared by EVFILT_PROC (filt_proc.c) and
 * EVFILT_PROCDESC (filt_procdesc.c).
 */
#ifndef KQ_PROC_H
#define KQ_PROC_H

#include <sys/types.h>

#ifdef P_PIDFD
#define KQ_P_PIDFD	P_PIDFD
#else
#define KQ_P_PIDFD	3	/* waitid() on a pidfd, Linux 5.4 */
#endif

int	 kq_pidfd_open(pid_t pid);		/* O_CLOEXEC is implied */
int	 kq_pidfd_exited(int pidfd);
int64_t	 kq_proc_status(int pidfd, pid_t pid, int cnstatus);

#endif
