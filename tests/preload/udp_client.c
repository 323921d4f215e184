/*
 * udp_client.c - datagram sockets connected to a destination are not paced.
 *
 *     udp_client PORT N
 *
 * Binds a receiver on 127.0.0.1:PORT (UDP), then sends N datagrams to it
 * from a connect()ed datagram socket made in each of the ways below, each on
 * a number that first held a stream socket, so that a type remembered for
 * the number (preload/fdtable.h) would be stale if that path failed to
 * forget it; but for reuse, the datagram socket comes to the number where
 * no hook sees it (a socket() seen sets the number's type anew):
 *   reuse      socket(SOCK_STREAM), close(), socket(SOCK_DGRAM)
 *   dup2       socket(SOCK_STREAM), and a datagram socket dup2()ed onto it
 *   raw-close  socket(SOCK_STREAM), syscall(SYS_close), and the datagram
 *              socket made with syscall(SYS_socket)
 *   raw-socket socket(SOCK_STREAM), close_range(), and the datagram socket
 *              made with syscall(SYS_socket)
 *   raw-close-range  the same with syscall(SYS_close_range)
 *   raw-dup2, raw-dup3   socket(SOCK_STREAM), and a datagram socket put onto
 *              it by syscall(SYS_dup2) (where the system has it) or
 *              syscall(SYS_dup3)
 * Each datagram is read back by the receiver.  Then, as a control, one
 * stream socket connects to a TCP listener on the same port number, which
 * the preload must track.  Prints the number of ways and the seconds their
 * datagrams took; exit 0 when every one arrived and every call succeeded.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#include <linux/close_range.h>
#endif

static struct sockaddr_in addr = { .sin_family = AF_INET };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(3);
}

static int stream_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		die("socket(SOCK_STREAM)");
	return fd;
}

/* A datagram socket on the number `want` held a moment ago, made `how`. */
static int datagram_on(const char *how)
{
	int stream = stream_socket(), fd;

	if (strcmp(how, "reuse") == 0) {
		close(stream);
		fd = socket(AF_INET, SOCK_DGRAM, 0);
	} else if (strncmp(how, "raw-dup", 7) == 0 ||
	           strcmp(how, "dup2") == 0) {
		int dgram = socket(AF_INET, SOCK_DGRAM, 0);
		long rc = -1;

		if (strcmp(how, "dup2") == 0)
			rc = dup2(dgram, stream);
#ifdef SYS_dup2
		else if (strcmp(how, "raw-dup2") == 0)
			rc = syscall(SYS_dup2, dgram, stream);
#endif
		else
			rc = syscall(SYS_dup3, dgram, stream, 0);
		if (dgram < 0 || rc != stream)
			die(how);
		close(dgram);
		fd = stream;
	} else {
		if (strcmp(how, "raw-close") == 0)
			syscall(SYS_close, stream);
		else if (strcmp(how, "raw-close-range") == 0)
			syscall(SYS_close_range, stream, stream, 0);
		else if (close_range((unsigned int)stream,
		                     (unsigned int)stream, 0))
			die("close_range");
		fd = (int)syscall(SYS_socket, AF_INET, SOCK_DGRAM, 0);
	}
	if (fd != stream) {
		fprintf(stderr, "%s: the datagram socket got fd %d, not %d\n",
		        how, fd, stream);
		exit(3);
	}
	return fd;
}

int main(int argc, char **argv)
{
	static const char *const ways[] = {
		"reuse", "dup2", "raw-close", "raw-socket", "raw-close-range",
#ifdef SYS_dup2
		"raw-dup2",
#endif
		"raw-dup3"
	};
	struct timeval timeout = { .tv_sec = 5 };
	int receiver, listener, fd, n;
	double start;
	char buf[64];

	if (argc != 3)
		return 2;
	addr.sin_port = htons((uint16_t)atoi(argv[1]));
	inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
	n = atoi(argv[2]);
	receiver = socket(AF_INET, SOCK_DGRAM, 0);
	if (receiver < 0 ||
	    bind(receiver, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    setsockopt(receiver, SOL_SOCKET, SO_RCVTIMEO, &timeout,
	               sizeof(timeout)) != 0)
		die("receiver");

	start = now_s();
	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
		fd = datagram_on(ways[w]);
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
			die("connect");
		for (int i = 0; i < n; i++) {
			if (send(fd, "ping", 4, 0) != 4)
				die("send");
			if (recv(receiver, buf, sizeof(buf), 0) != 4)
				die("recv");
		}
		close(fd);
	}
	printf("%zu %.3f\n", sizeof(ways) / sizeof(ways[0]), now_s() - start);

	listener = stream_socket();
	if (bind(listener, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(listener, 1) != 0)
		die("listener");
	fd = stream_socket();
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
		die("connect(SOCK_STREAM)");
	close(fd);
	close(listener);
	return 0;
}
