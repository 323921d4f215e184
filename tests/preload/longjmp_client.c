/*
 * longjmp_client.c - time requests out with alarm() and siglongjmp().
 *
 *     longjmp_client PORT MODE TIMEOUT_MS TIMED N
 *
 * The classic timeout of a blocking call in C: arm a timer, and let its
 * SIGALRM handler siglongjmp() back to before the call (allowed by POSIX
 * from a handler that interrupted an async-signal-safe function, as write()
 * and connect() are).  TIMED requests, each on a connection of its own,
 * are made that way with a timer of TIMEOUT_MS; one that times out is
 * closed and counted.  Then N plain requests, a connection each.
 *
 * MODE `sleep`: nothing else is in flight while a timed request waits.
 * MODE `poll`: a kept-alive connection has a request in flight whose answer
 * is not read until the end, so a wait for a grant watches it (the wait
 * polls rather than sleeps).
 *
 * Prints "TIMEOUTS SECONDS": how many timed requests timed out, and how
 * long the N plain ones took.  Exit 0 when every plain response was read.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static sigjmp_buf timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	siglongjmp(timed_out, 1);
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

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("connect");
		exit(1);
	}
	return fd;
}

static int send_all(int fd, const char *text)
{
	size_t len = strlen(text);

	return write(fd, text, len) == (ssize_t)len ? 0 : -1;
}

/* Read a whole HTTP/1.0 response; 0 when it ended with the connection. */
static int read_all(int fd)
{
	char buf[4096];
	ssize_t n;
	size_t total = 0;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += (size_t)n;
	return n == 0 && total > 0 ? 0 : -1;
}

/* One request on a connection of its own, under a timer of `ms` (0: none).
 * Returns 1 when it timed out. */
static int request(int port, int ms)
{
	/* volatile: read after siglongjmp returned to sigsetjmp. */
	volatile int fd = connect_to(port);

	if (ms > 0) {
		if (sigsetjmp(timed_out, 1)) {
			close(fd);
			return 1;
		}
		arm(ms);
	}
	if (send_all(fd, "GET /timed HTTP/1.0\r\n\r\n") < 0 || read_all(fd) < 0) {
		fprintf(stderr, "longjmp_client: request failed\n");
		exit(1);
	}
	if (ms > 0)
		arm(0);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	int port, ms, timed, n, timeouts = 0, held = -1;
	double start;

	if (argc != 6) {
		fprintf(stderr, "usage: longjmp_client PORT sleep|poll "
		        "TIMEOUT_MS TIMED N\n");
		return 2;
	}
	port = atoi(argv[1]);
	ms = atoi(argv[3]);
	timed = atoi(argv[4]);
	n = atoi(argv[5]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	if (strcmp(argv[2], "poll") == 0) {
		/* Answered at once, read only at the end: in flight meanwhile. */
		held = connect_to(port);
		if (send_all(held, "GET /held HTTP/1.0\r\n\r\n") < 0)
			return 1;
	}
	for (int i = 0; i < timed; i++)
		timeouts += request(port, ms);
	start = now_s();
	for (int i = 0; i < n; i++)
		request(port, 0);
	printf("%d %.3f\n", timeouts, now_s() - start);
	if (held >= 0 && read_all(held) < 0)
		return 1;
	return 0;
}
