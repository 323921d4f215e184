/*
 * alarm_client.c - time requests out with a timer and EINTR, against a
 * server that never answers.
 *
 *     alarm_client PORT TIMEOUT_MS N
 *
 * The other classic timeout of a blocking call in C (longjmp_client.c has
 * the one with siglongjmp): a SIGALRM handler installed without SA_RESTART
 * that only sets a flag, so that the blocking call it interrupts fails with
 * EINTR and the program gives up on the request.  N requests, each on a
 * connection of its own, each under a one-shot timer of TIMEOUT_MS armed
 * before its connect and disarmed after its answer; the server accepts
 * and never answers, so each must end with EINTR, in its send or in its
 * receive, when the timer fires.
 *
 * Prints one line per request, "SECONDS CALL ERROR": how long it took from
 * the connect, the call that ended it (send or recv) and how (the errno's
 * name, or "ok" when a send succeeded and a receive returned).  Exit 0 when
 * every request ended with EINTR after its timer fired.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t fired;

static void on_alarm(int sig)
{
	(void)sig;
	fired = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void arm(int ms)
{
	struct itimerval it = { .it_value = { ms / 1000, ms % 1000 * 1000 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

int main(int argc, char **argv)
{
	static const char req[] = "GET / HTTP/1.0\r\n\r\n";
	struct sigaction sa = { .sa_handler = on_alarm };
	int port, timeout_ms, n, status = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: alarm_client PORT TIMEOUT_MS N\n");
		return 2;
	}
	port = atoi(argv[1]);
	timeout_ms = atoi(argv[2]);
	n = atoi(argv[3]);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: the interrupted call fails */
	sigaction(SIGALRM, &sa, NULL);
	for (int i = 0; i < n; i++) {
		struct sockaddr_in a = {
			.sin_family = AF_INET,
			.sin_port = htons((uint16_t)port),
			.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
		};
		const char *call = "send";
		char buf[64];
		int fd = socket(AF_INET, SOCK_STREAM, 0), error = 0;
		double start;
		ssize_t r;

		fired = 0;
		start = now_s();
		arm(timeout_ms);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
			perror("connect");
			return 1;
		}
		r = send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL);
		if (r >= 0) {
			call = "recv";
			r = recv(fd, buf, sizeof(buf), 0);
		}
		if (r < 0)
			error = errno;
		arm(0);
		printf("%.3f %s %s\n", now_s() - start, call,
		       error == EINTR ? "EINTR" : error ? strerror(error) : "ok");
		fflush(stdout);
		if (error != EINTR || !fired)
			status = 1;
		close(fd);
	}
	return status;
}
