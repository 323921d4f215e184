/*
 * reconnect_client.c - connect() again on a socket whose non-blocking
 * connect was refused, the failure learnt in each of the ways a program
 * learns it.
 *
 *     reconnect_client PORT
 *
 * PORT is on 127.0.0.1 and refuses.  One non-blocking socket makes four
 * attempts, each awaited with poll(2):
 *   1. the failure is read with getsockopt(SO_ERROR); the next connect()
 *      answers ECONNABORTED, and the one after makes attempt 2;
 *   2. the failure is met by a send(), ECONNREFUSED; the next connect()
 *      answers ECONNABORTED, and the one after makes attempt 3;
 *   3. the failure is read by a connect(), ECONNREFUSED; the next connect()
 *      makes attempt 4 at once;
 *   4. the failure is read with SO_ERROR, and the socket is closed.
 * Linux keeps a socket whose failure was not collected by connect()
 * "connecting", so the call after answers for the old attempt: that call
 * is no attempt, and must neither wait for a grant nor count as one.
 *
 * Prints each connect()'s answer (0 or the errno's name) on one line, then
 * the largest time, in seconds, that an ECONNABORTED answer took.  Exit 0
 * when every step answered as expected above.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in server = { .sin_family = AF_INET };
static int fd;
static double aborted_max_s;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *name(int error)
{
	switch (error) {
	case 0:
		return "0";
	case EINPROGRESS:
		return "EINPROGRESS";
	case ECONNREFUSED:
		return "ECONNREFUSED";
	case ECONNABORTED:
		return "ECONNABORTED";
	case EALREADY:
		return "EALREADY";
	case EISCONN:
		return "EISCONN";
	default:
		return strerror(error);
	}
}

/* connect(), its answer printed; fails the run when it is not `want`. */
static void connect_expect(int want)
{
	double start = now_s();
	int error = connect(fd, (struct sockaddr *)&server,
	                    sizeof(server)) == 0 ? 0 : errno;
	double took = now_s() - start;

	printf("%s ", name(error));
	if (error == ECONNABORTED && took > aborted_max_s)
		aborted_max_s = took;
	if (error != want) {
		fprintf(stderr, "reconnect_client: connect answered %s, not "
		        "%s\n", name(error), name(want));
		exit(1);
	}
}

/* Wait until the attempt under way is over (refused, here). */
static void await(void)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	if (poll(&p, 1, 10000) != 1) {
		fprintf(stderr, "reconnect_client: the attempt did not end\n");
		exit(1);
	}
}

static void so_error_expect(int want)
{
	int error = -1;
	socklen_t len = sizeof(error);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 ||
	    error != want) {
		fprintf(stderr, "reconnect_client: SO_ERROR is %s, not %s\n",
		        name(error), name(want));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: reconnect_client PORT\n");
		return 2;
	}
	server.sin_port = htons((uint16_t)atoi(argv[1]));
	server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}

	connect_expect(EINPROGRESS); /* attempt 1 */
	await();
	so_error_expect(ECONNREFUSED);
	connect_expect(ECONNABORTED);

	connect_expect(EINPROGRESS); /* attempt 2 */
	await();
	if (send(fd, "x", 1, MSG_NOSIGNAL) != -1 || errno != ECONNREFUSED) {
		fprintf(stderr, "reconnect_client: send answered %s, not "
		        "ECONNREFUSED\n", name(errno));
		return 1;
	}
	connect_expect(ECONNABORTED);

	connect_expect(EINPROGRESS); /* attempt 3 */
	await();
	connect_expect(ECONNREFUSED);

	connect_expect(EINPROGRESS); /* attempt 4 */
	await();
	so_error_expect(ECONNREFUSED);
	close(fd);
	printf("\n%.3f\n", aborted_max_s);
	return 0;
}
