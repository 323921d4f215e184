/*
 * fd_reuse_client.c - sockets closed where no hook sees them, and their
 * descriptor numbers reused.
 *
 *     fd_reuse_client PORT FILE
 *
 * 1. A request through stdio: the socket is fdopen()ed, written with
 *    fprintf and read with fgets, and fclose()d.  glibc's stdio reads,
 *    writes and closes inside libc, so no hook sees any of it but the
 *    fdopen itself.
 * 2. FILE is opened, and takes the socket's old number: 20 writes and
 *    reads of it must be file I/O, neither paced nor timed as round trips.
 * 3. A socket on that same number, to the same destination, makes one
 *    request with write/read and is closed by the close system call itself
 *    (as a program with its own syscall wrappers does).
 * 4. A pipe takes the number: 20 writes and reads, again plain I/O.
 * 5. Five more requests through fdopen()ed streams, each on the number.
 *
 * Prints "file_s PIPE_S" (the seconds steps 2 and 4 took) on stdout.
 * Exit 0 when every response began with "HTTP/" and every reuse got the
 * number it was meant to.
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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&server,
	                      sizeof(server)) != 0) {
		perror("connect");
		exit(3);
	}
	return fd;
}

/* One HTTP/1.0 request through a stdio stream; returns the fd it used. */
static int stdio_request(void)
{
	int fd = dial();
	FILE *f = fdopen(fd, "r+");
	char line[256];

	if (f == NULL) {
		perror("fdopen");
		exit(3);
	}
	fputs("GET /stdio HTTP/1.0\r\nHost: x\r\n\r\n", f);
	fflush(f);
	if (fgets(line, sizeof(line), f) == NULL ||
	    strncmp(line, "HTTP/", 5) != 0) {
		fprintf(stderr, "stdio request: no response\n");
		exit(4);
	}
	while (fgets(line, sizeof(line), f) != NULL)
		;
	fclose(f);
	return fd;
}

/* Write and read back a line through fd (and peer, for a pipe), 20 times;
 * returns the seconds it took. */
static double plain_io(int fd, int peer)
{
	double start = now_s();
	char buf[8];

	for (int i = 0; i < 20; i++) {
		if (write(peer, "line\n", 5) != 5)
			exit(5);
		if (peer == fd && lseek(fd, 0, SEEK_SET) != 0)
			exit(5);
		if (read(fd, buf, 5) != 5)
			exit(5);
	}
	return now_s() - start;
}

int main(int argc, char **argv)
{
	static const char request[] = "GET /raw HTTP/1.0\r\nHost: x\r\n\r\n";
	double file_s, pipe_s;
	int number, fd, pipefd[2];
	char buf[256];

	if (argc != 3)
		return 2;
	server.sin_port = htons((uint16_t)atoi(argv[1]));
	inet_pton(AF_INET, "127.0.0.1", &server.sin_addr);

	number = stdio_request();

	fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd != number) {
		fprintf(stderr, "the file got fd %d, not %d\n", fd, number);
		return 6;
	}
	file_s = plain_io(fd, fd);
	close(fd);

	fd = dial();
	if (fd != number) {
		fprintf(stderr, "the socket got fd %d, not %d\n", fd, number);
		return 6;
	}
	if (write(fd, request, sizeof(request) - 1) !=
	    (ssize_t)sizeof(request) - 1 ||
	    read(fd, buf, sizeof(buf)) < 5 || strncmp(buf, "HTTP/", 5) != 0) {
		fprintf(stderr, "raw request failed\n");
		return 4;
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	syscall(SYS_close, fd);

	if (pipe(pipefd) != 0 || pipefd[0] != number) {
		fprintf(stderr, "the pipe got fd %d, not %d\n", pipefd[0],
		        number);
		return 6;
	}
	pipe_s = plain_io(pipefd[0], pipefd[1]);
	close(pipefd[0]);
	close(pipefd[1]);

	for (int i = 0; i < 5; i++)
		if (stdio_request() != number)
			return 6;
	printf("%.3f %.3f\n", file_s, pipe_s);
	return 0;
}
