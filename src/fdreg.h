/*
 * fdreg.h -- the encoding of knote.kn_reg: the epoll registration state of
 * a descriptor, kept identical on every knote of its chain.
 */
#ifndef KQ_FDREG_H
#define KQ_FDREG_H

#define R_IN		0x0001	/* EPOLLIN (|EPOLLRDHUP) requested */
#define R_OUT		0x0002	/* EPOLLOUT requested */
#define R_ET		0x0004	/* EPOLLET */
#define R_EXCL		0x0008	/* EPOLLEXCLUSIVE (EV_WAKEONE) */
#define R_ONESHOT	0x0010	/* EPOLLONESHOT: every enabled knote is
				   EV_DISPATCH (see fdreg_fired) */
#define R_MODEMASK	0x001f
#define R_PRI		0x0080	/* EPOLLPRI requested (a port's POLLPRI) */
#define R_WANTMASK	(R_MODEMASK | R_PRI)	/* what fdreg_want derives */
#define R_ANYIN		(R_IN | R_OUT | R_PRI)	/* some interest */
#define R_REG		0x0020	/* registered in the epoll set */
#define R_NOPOLL	0x0040	/* epoll refused it: tracked in userspace */
#define R_CAPSHIFT	8	/* pipe capacity: 4096 << (v - 1), 0: not
				   known yet (pipe sizes are powers of two) */
#define R_CAPMASK	0x0f00
#define R_KINDSHIFT	12
#define R_KINDMASK	0xf000
#define R_FILEMASK	(R_KINDMASK | R_CAPMASK)  /* facts about the file,
				   kept across registration changes */

/* descriptor kinds, learnt lazily by the data computations */
#define K_UNKNOWN	0
#define K_SOCK		1
#define K_PIPE		2
#define K_FILE		3	/* regular file or directory */
#define K_OTHER		4	/* tty, device, anon inode ... */
#define K_EVENTFD	5
#define K_KQUEUE	6	/* another kqueue (epoll) */
#define K_LISTEN	7	/* listening socket */
#define K_DGRAM		8	/* datagram socket (DGRAM, SEQPACKET, RAW) */
#define K_UDGRAM	9	/* AF_UNIX datagram socket (DGRAM) */
#define K_ULISTEN	10	/* listening socket of another family */

#define R_KIND(r)	(((r) & R_KINDMASK) >> R_KINDSHIFT)

/* Is descriptor kind k a socket of some sort? */
static inline int
k_is_socket(int k)
{
	return k == K_SOCK || k == K_DGRAM || k == K_UDGRAM || k == K_LISTEN ||
	    k == K_ULISTEN;
}

/* Is descriptor kind k a listening socket (no FIONREAD: KQ_NOCOUNT)? */
static inline int
k_is_listener(int k)
{
	return k == K_LISTEN || k == K_ULISTEN;
}

int	fdreg_apply(struct kqueue *kq, int fd, uint32_t cur, int force);
void	fdreg_set(struct kqueue *kq, int fd, uint32_t reg);
int	fdreg_attach(struct kqueue *kq, struct knote *kn);
int	fdreg_detach(struct kqueue *kq, struct knote *kn);
int	fdreg_update(struct kqueue *kq, struct knote *kn, int readd);
int	fdreg_fired(struct kqueue *kq, struct knote *chain);
void	fdreg_sync(struct kqueue *kq, int fd);
/* port.c: the R_IN/R_OUT interest of a PORT_SOURCE_FD knote */
uint32_t port_fd_interest(const struct knote *kn);

#endif
