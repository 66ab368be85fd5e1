/*
 * a15: fork() from a signal handler that interrupted kqueue() or close()
 * of a kqueue, where libkq holds reg_lock.  The fork handler used to take
 * reg_lock and wait for ever on the thread it runs on.  A one-shot timer
 * signal, armed again by the main loop once it has fired, forks (the child
 * exits at once) while the main loop makes and closes kqueues.  Exits 0
 * when 100 forks returned and the loop went on; a hang is caught by the
 * runner's timeout.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/event.h>
#include <sys/time.h>
#include <sys/wait.h>

static volatile sig_atomic_t forks, failed;

static void
on_alarm(int s)
{
	pid_t p = fork();

	(void)s;
	if (p == 0)
		_exit(0);
	if (p < 0)
		failed = 1;
	else
		waitpid(p, NULL, 0);
	forks++;
}

int
main(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 1000 } };
	int armed = 0;
	struct sigaction sa;
	long i;

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	for (i = 0; i < 4000000 && forks < 100; i++) {
		int kq;

		if (armed != forks + 1) {	/* the last one has fired */
			armed = forks + 1;
			setitimer(ITIMER_REAL, &it, NULL);
		}
		kq = kqueue();
		if (kq < 0 || close(kq) != 0) {
			printf("kqueue/close failed at %ld\n", i);
			return 1;
		}
	}
	setitimer(ITIMER_REAL, &(struct itimerval){ { 0, 0 }, { 0, 0 } },
	    NULL);
	signal(SIGALRM, SIG_IGN);
	printf("%ld kqueues, %d forks from the handler, %d failed\n", i,
	    (int)forks, (int)failed);
	return failed || forks == 0;
}
