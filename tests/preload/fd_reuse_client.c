/*
 * fd_reuse_client.c - sockets closed where the close hook does not see
 * them, and their descriptor numbers reused.
 *
 *     fd_reuse_client PORT FILE
 *
 * 1. A request through stdio: the socket is fdopen()ed, written with
 *    fprintf and read with fgets, and fclose()d.  glibc's stdio reads,
 *    writes and closes inside libc, so no hook sees any of it but the
 *    fdopen and the fclose themselves.
 * 2. FILE is opened, and takes the socket's old number: 20 writes and
 *    reads of it must be file I/O, neither paced nor timed as round trips.
 * 3. A socket on that same number, to the same destination, makes one
 *    request with write/read and is closed by syscall(SYS_close), as a
 *    program with its own system-call wrappers does.
 * 4. A Unix socket pair takes the number, and 20 lines are written into
 *    that end and read from the other: plain I/O again.
 * 5. Five more requests through fdopen()ed streams, each on the number.
 * 6. A socket makes one request with write/read and is closed by
 *    syscall(SYS_close_range, n, n, 0); FILE takes the number.
 * 7. A socket makes one request and FILE, opened on another number, is
 *    duplicated onto it by syscall(SYS_dup2) (SYS_dup3 where the
 *    architecture has no dup2 system call), then by syscall(SYS_dup3) in a
 *    second round: the number is the file's.
 * 8. A request through stdio, then freopen(FILE) on the stream: glibc opens
 *    the file and dup3()s it onto the stream's number inside libc, unseen.
 * Steps 6 to 8 each end with 20 writes and reads on the number, which must
 * be plain file I/O.
 * 9. A request through stdio and fclose(), then FILE takes the number and
 *    stays open, and a socket on the next number makes a request.  Under
 *    concurrency=1 its connect needs the permit the stdio socket held, which
 *    only the fclose hook gives back (no hook sees the number again); the
 *    connect would otherwise wait for acquire_timeout and fail.
 *
 * Prints the seconds each plain-I/O step took on one line: file (2), pair
 * (4), close_range (6), dup2 (7), dup3 (7), freopen (8).  Exit 0 when every
 * response began with "HTTP/" and every reuse got the number it was meant
 * to.
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

/* Write a line through peer (fd itself for a file) and read it back from
 * fd, 20 times;
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

/* One HTTP/1.0 request with write and read on fd, read to the end. */
static void raw_request(int fd)
{
	static const char request[] = "GET /raw HTTP/1.0\r\nHost: x\r\n\r\n";
	char buf[256];

	if (write(fd, request, sizeof(request) - 1) !=
	    (ssize_t)sizeof(request) - 1 ||
	    read(fd, buf, sizeof(buf)) < 5 || strncmp(buf, "HTTP/", 5) != 0) {
		fprintf(stderr, "raw request failed\n");
		exit(4);
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

static void expect_number(const char *what, int fd, int number)
{
	if (fd != number) {
		fprintf(stderr, "%s got fd %d, not %d\n", what, fd, number);
		exit(6);
	}
}

static int open_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0) {
		perror(path);
		exit(5);
	}
	return fd;
}

/* A socket on `number` makes a request; FILE is then duplicated onto the
 * number with system call `call` (SYS_dup2 or SYS_dup3).  Returns the
 * seconds 20 writes and reads on the number took. */
static double dup_over(long call, int number, const char *path)
{
	int fd = dial(), file;
	double s;

	expect_number("the socket", fd, number);
	raw_request(fd);
	file = open_file(path);
	if (syscall(call, file, number, 0) != number) {
		perror("dup system call");
		exit(5);
	}
	close(file);
	s = plain_io(number, number);
	close(number);
	return s;
}

int main(int argc, char **argv)
{
	double file_s, pair_s, range_s, dup2_s, dup3_s, freopen_s;
	int number, fd, pair[2];
	long dup2_call;
	FILE *f;

	if (argc != 3)
		return 2;
	server.sin_port = htons((uint16_t)atoi(argv[1]));
	inet_pton(AF_INET, "127.0.0.1", &server.sin_addr);

	number = stdio_request();

	fd = open_file(argv[2]);
	expect_number("the file", fd, number);
	file_s = plain_io(fd, fd);
	close(fd);

	fd = dial();
	expect_number("the socket", fd, number);
	raw_request(fd);
	syscall(SYS_close, fd);

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0)
		return 5;
	expect_number("the socket pair", pair[0], number);
	pair_s = plain_io(pair[1], pair[0]);
	close(pair[0]);
	close(pair[1]);

	for (int i = 0; i < 5; i++)
		expect_number("a stdio socket", stdio_request(), number);

	fd = dial();
	expect_number("the socket", fd, number);
	raw_request(fd);
	if (syscall(SYS_close_range, fd, fd, 0) != 0) {
		perror("close_range");
		return 5;
	}
	fd = open_file(argv[2]);
	expect_number("the file", fd, number);
	range_s = plain_io(fd, fd);
	close(fd);

#ifdef SYS_dup2
	dup2_call = SYS_dup2;
#else
	dup2_call = SYS_dup3;
#endif
	dup2_s = dup_over(dup2_call, number, argv[2]);
	dup3_s = dup_over(SYS_dup3, number, argv[2]);

	fd = dial();
	expect_number("the socket", fd, number);
	f = fdopen(fd, "r+");
	if (f == NULL || fputs("GET /stdio HTTP/1.0\r\nHost: x\r\n\r\n",
	                       f) < 0 || fflush(f) != 0) {
		perror("stdio request");
		return 4;
	}
	f = freopen(argv[2], "w+", f);
	if (f == NULL) {
		perror("freopen");
		return 5;
	}
	expect_number("the reopened stream", fileno(f), number);
	freopen_s = plain_io(number, number);
	fclose(f);

	expect_number("a stdio socket", stdio_request(), number);
	fd = open_file(argv[2]);
	expect_number("the file", fd, number);
	raw_request(dial());

	printf("%.3f %.3f %.3f %.3f %.3f %.3f\n", file_s, pair_s, range_s,
	       dup2_s, dup3_s, freopen_s);
	return 0;
}
