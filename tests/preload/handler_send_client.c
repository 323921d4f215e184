/*
 * handler_send_client.c - a SIGALRM handler that makes requests of its own
 * to the paced destination while the main program's requests wait for
 * their grants (tests/preload/handler_send.sh).
 *
 *     handler_send_client PORT N INTERVAL_MS
 *
 * The timer fires every INTERVAL_MS; its handler (SA_RESTART, so the
 * program's own calls resume) connects to 127.0.0.1:PORT, sends a GET,
 * reads the answer and closes, with calls that are async-signal-safe.
 * Meanwhile the program makes N requests of the same kind, one after the
 * other.  Paced inside the handler, the handler's request waited for a
 * grant of its own, the next SIGALRM came first and ran the handler
 * again, nested, without end: the program's requests never finished
 * (issue 16, item 5).  Prints the seconds the N requests took and how
 * many the handler made; exit 0 when all N were answered.
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

static struct sockaddr_in address;
static volatile sig_atomic_t handler_requests;

/* One request: 0 when answered. */
static int request(void)
{
	static const char req[] = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
	char buf[256];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int rc = -1;

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&address, sizeof(address)) == 0 &&
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) ==
	            (ssize_t)(sizeof(req) - 1) &&
	    recv(fd, buf, sizeof(buf), 0) > 0)
		rc = 0;
	close(fd);
	return rc;
}

static void on_alarm(int sig)
{
	int saved = errno;

	(void)sig;
	if (request() == 0)
		handler_requests++;
	errno = saved;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	int n, interval_ms, answered = 0;
	double start;

	if (argc != 4) {
		fprintf(stderr, "usage: handler_send_client PORT N "
		        "INTERVAL_MS\n");
		return 2;
	}
	address = (struct sockaddr_in){
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)atoi(argv[1])),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	n = atoi(argv[2]);
	interval_ms = atoi(argv[3]);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	it.it_interval.tv_sec = interval_ms / 1000;
	it.it_interval.tv_usec = interval_ms % 1000 * 1000;
	it.it_value = it.it_interval;
	start = now_s();
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < n; i++)
		answered += request() == 0;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("%.3f %d %d\n", now_s() - start, answered,
	       (int)handler_requests);
	return answered == n ? 0 : 1;
}
