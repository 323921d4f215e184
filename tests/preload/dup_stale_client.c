/*
 * dup_stale_client.c - dup() and fcntl(F_DUPFD) onto the number of a
 * socket that was closed where no hook saw it.
 *
 *     dup_stale_client PORT
 *
 * PORT is an HTTP server on 127.0.0.1; the destination is expected to be
 * 127.0.0.1:* so that a datagram socket connected to a receiver on another
 * port of 127.0.0.1 matches it too.  A socket closed by the close system
 * call made with the syscall instruction itself (as Go or a second C
 * library does) leaves whatever the preload keeps for its number: a
 * tracked entry, and the bit saying it is a stream socket (fdtable.h).
 * dup2() and dup3() name the number they replace and forget both; dup(),
 * fcntl(F_DUPFD) and fcntl(F_DUPFD_CLOEXEC) pick the lowest free number,
 * which may be exactly that one.  For each of the three ways:
 *   1. A socket connected to the destination makes one request with write
 *      and read, and is closed by the raw system call; the write end of a
 *      pipe is duplicated onto its number, and 20 lines are written
 *      through the number and read from the pipe's other end.  Those are
 *      pipe writes, neither paced nor timed.
 *   2. A stream socket is made and closed by the raw system call; a
 *      datagram socket is duplicated onto its number and connect()ed to a
 *      UDP receiver on 127.0.0.1, and sends it 20 datagrams.  A datagram
 *      socket is never paced, nor counted as a connection.
 * Prints, per way, the seconds of the pipe's writes and of the datagrams,
 * six figures on one line; exit 0 when every call did what it should, 77
 * where the raw close is not written for the architecture.
 */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in server = { .sin_family = AF_INET };
static struct sockaddr_in receiver_addr = { .sin_family = AF_INET };

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

/* close(fd) by the system call instruction, which no hook sees (libc's
 * syscall() is hooked).  1 when it closed fd, 0 where it is not written. */
static int raw_close(int fd)
{
#if defined(__x86_64__)
	long rc;

	__asm__ volatile("syscall"
	                 : "=a"(rc)
	                 : "0"((long)SYS_close), "D"((long)fd)
	                 : "rcx", "r11", "memory");
	return rc == 0;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_close;
	register long x0 __asm__("x0") = fd;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8) : "memory");
	return x0 == 0;
#else
	(void)fd;
	return 0;
#endif
}

static void close_unseen(int fd)
{
	if (!raw_close(fd)) {
		printf("no raw close system call here\n");
		exit(77);
	}
}

/* fd duplicated the way named, onto the lowest free number. */
static int duplicate(const char *how, int fd)
{
	if (strcmp(how, "dup") == 0)
		return dup(fd);
	if (strcmp(how, "F_DUPFD") == 0)
		return fcntl(fd, F_DUPFD, 0);
	return fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

static void expect_number(const char *how, int fd, int number)
{
	if (fd != number) {
		fprintf(stderr, "%s gave fd %d, not %d\n", how, fd, number);
		exit(6);
	}
}

/* Scenario 1: the seconds the pipe's 20 writes took. */
static double pipe_on_stale_socket(const char *how)
{
	static const char request[] = "GET /stale HTTP/1.0\r\nHost: x\r\n\r\n";
	int pipe_fds[2], fd, copy;
	char buf[256];
	double start;

	if (pipe(pipe_fds) != 0)
		die("pipe");
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&server,
	                      sizeof(server)) != 0)
		die("connect");
	if (write(fd, request, sizeof(request) - 1) !=
	    (ssize_t)sizeof(request) - 1 ||
	    read(fd, buf, sizeof(buf)) < 5 || strncmp(buf, "HTTP/", 5) != 0) {
		fprintf(stderr, "the request failed\n");
		exit(4);
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close_unseen(fd);
	copy = duplicate(how, pipe_fds[1]);
	expect_number(how, copy, fd);
	start = now_s();
	for (int i = 0; i < 20; i++) {
		if (write(copy, "line\n", 5) != 5 ||
		    read(pipe_fds[0], buf, 5) != 5)
			die("pipe I/O");
	}
	start = now_s() - start;
	close(copy);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	return start;
}

/* Scenario 2: the seconds the 20 datagrams took. */
static double datagram_on_stale_stream(const char *how, int receiver)
{
	int dgram = socket(AF_INET, SOCK_DGRAM, 0);
	int stream = socket(AF_INET, SOCK_STREAM, 0);
	int fd;
	char buf[8];
	double start;

	if (dgram < 0 || stream < 0)
		die("socket");
	close_unseen(stream);
	fd = duplicate(how, dgram);
	expect_number(how, fd, stream);
	close(dgram);
	if (connect(fd, (struct sockaddr *)&receiver_addr,
	            sizeof(receiver_addr)) != 0)
		die("connect(SOCK_DGRAM)");
	start = now_s();
	for (int i = 0; i < 20; i++) {
		if (send(fd, "ping", 4, 0) != 4 ||
		    recv(receiver, buf, sizeof(buf), 0) != 4)
			die("datagram");
	}
	start = now_s() - start;
	close(fd);
	return start;
}

int main(int argc, char **argv)
{
	static const char *const ways[] = { "dup", "F_DUPFD",
	                                    "F_DUPFD_CLOEXEC" };
	struct timeval timeout = { .tv_sec = 5 };
	socklen_t len = sizeof(receiver_addr);
	int receiver;

	if (argc != 2)
		return 2;
	server.sin_port = htons((uint16_t)atoi(argv[1]));
	inet_pton(AF_INET, "127.0.0.1", &server.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &receiver_addr.sin_addr);
	receiver = socket(AF_INET, SOCK_DGRAM, 0);
	if (receiver < 0 ||
	    bind(receiver, (struct sockaddr *)&receiver_addr, len) != 0 ||
	    getsockname(receiver, (struct sockaddr *)&receiver_addr,
	                &len) != 0 ||
	    setsockopt(receiver, SOL_SOCKET, SO_RCVTIMEO, &timeout,
	               sizeof(timeout)) != 0)
		die("receiver");
	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
		double pipe_s = pipe_on_stale_socket(ways[w]);
		double dgram_s = datagram_on_stale_stream(ways[w], receiver);

		printf("%s%.3f %.3f", w ? " " : "", pipe_s, dgram_s);
	}
	printf("\n");
	return 0;
}
