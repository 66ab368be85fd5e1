/*
 * kq_inotify.h -- what inotify.c offers EVFILT_VNODE (filt_vnode.c) beyond
 * the prototypes in kq_int.h.
 */
#ifndef KQ_INOTIFY_H
#define KQ_INOTIFY_H

struct kqueue;

void	 kq_inotify_drain(struct kqueue *);

#endif
