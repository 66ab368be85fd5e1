/*
 * <port.h> -- Solaris/illumos event ports, provided on Linux by libkq over
 * the same engine as kqueue(2).
 *
 * The names, types and values are illumos's (<port.h> and <sys/port.h>),
 * so that programs written for event ports compile unchanged: the event
 * sources, port_event_t, port_notify_t, file_obj_t, the port_alert() flags
 * and the PORT_SOURCE_FILE event bits.  Linux lacks uint_t, ushort_t and
 * timestruc_t; they are defined here.  Like <sys/event.h> this header is
 * installed in kq's own include directory (pkg-config --cflags kq), where
 * it shadows no system header.
 *
 * PORT_SOURCE_TIMER: timer_create() with sigev_notify SIGEV_PORT and
 * sigev_value.sival_ptr pointing to a port_notify_t, as on illumos.
 * SIGEV_PORT is 4 on illumos, but 4 is Linux's SIGEV_THREAD_ID: here it has
 * a value of its own, which libkq's timer_create() (it takes the place of
 * the C library's, as libkq's close() does) recognises; every other timer
 * goes to the C library.  Sources use the name, so they compile unchanged.
 */
#ifndef _KQ_PORT_H_
#define _KQ_PORT_H_

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef _KQ_SOLARIS_TYPES_
#define _KQ_SOLARIS_TYPES_
typedef unsigned int	uint_t;
typedef unsigned short	ushort_t;
typedef struct timespec	timestruc_t;
#endif

/* Event sources (portev_source, the source argument of port_associate) */
#define PORT_SOURCE_AIO		1
#define PORT_SOURCE_TIMER	2
#define PORT_SOURCE_USER	3
#define PORT_SOURCE_FD		4
#define PORT_SOURCE_ALERT	5
#define PORT_SOURCE_MQ		6
#define PORT_SOURCE_FILE	7

/* One event retrieved by port_get() or port_getn() */
typedef struct port_event {
	int		 portev_events;	/* source specific: poll(2) revents
					   for PORT_SOURCE_FD */
	ushort_t	 portev_source;	/* PORT_SOURCE_* */
	ushort_t	 portev_pad;	/* reserved, 0 */
	uintptr_t	 portev_object;	/* fd, file_obj_t *, ... (0: USER) */
	void		*portev_user;	/* the cookie given with the event */
} port_event_t;

/* Where an asynchronous source (timer, AIO) is to send its event */
typedef struct port_notify {
	int		 portnfy_port;
	void		*portnfy_user;
} port_notify_t;

/* The object of PORT_SOURCE_FILE: a path and the times last seen */
typedef struct file_obj {
	timestruc_t	 fo_atime;
	timestruc_t	 fo_mtime;
	timestruc_t	 fo_ctime;
	uintptr_t	 fo_pad[3];	/* reserved */
	char		*fo_name;
} file_obj_t;

/* port_alert() flags */
#define PORT_ALERT_SET		0x01
#define PORT_ALERT_UPDATE	0x02
#define PORT_ALERT_INVALID	(PORT_ALERT_SET | PORT_ALERT_UPDATE)

/* PORT_SOURCE_FILE events */
#define FILE_ACCESS		0x00000001
#define FILE_MODIFIED		0x00000002
#define FILE_ATTRIB		0x00000004
#define FILE_TRUNC		0x00100000
#define FILE_NOFOLLOW		0x10000000
/* exceptions: always reported, whatever was asked for */
#define FILE_DELETE		0x00000010
#define FILE_RENAME_TO		0x00000020
#define FILE_RENAME_FROM	0x00000040
#define UNMOUNTED		0x20000000
#define MOUNTEDOVER		0x40000000
#define FILE_EXCEPTION		(UNMOUNTED | FILE_DELETE | FILE_RENAME_TO | \
				 FILE_RENAME_FROM | MOUNTEDOVER)

/* timer_create() notification through a port (illumos: 4, see above) */
#define SIGEV_PORT		0x4b50

/* Limits: events per port_getn() call and per port_sendn() chunk */
#define PORT_MAX_LIST		8192

int	port_create(void);
int	port_associate(int port, int source, uintptr_t object, int events,
	    void *user);
int	port_dissociate(int port, int source, uintptr_t object);
int	port_send(int port, int events, void *user);
int	port_sendn(int ports[], int errors[], uint_t nent, int events,
	    void *user);
int	port_get(int port, port_event_t *pe, struct timespec *timeout);
int	port_getn(int port, port_event_t list[], uint_t max, uint_t *nget,
	    struct timespec *timeout);
int	port_alert(int port, int flags, int events, void *user);

#ifdef __cplusplus
}
#endif

#endif /* _KQ_PORT_H_ */
