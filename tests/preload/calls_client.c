/*
 * calls_client.c - one HTTP/1.0 request through each family of calls the
 * preload hooks, built with -D_FORTIFY_SOURCE=2 so that the reads the
 * compiler can bound become __read_chk, __recv_chk and __recvfrom_chk.
 *
 *     calls_client PORT
 *
 * Request i uses: 0 send/recv, 1 sendto/recvfrom, 2 sendmsg/recvmsg,
 * 3 write/read, 4 writev/readv, 5 sendmmsg/recvmmsg, 6 sendfile (the
 * request from a file)/read, 7 write/splice (the response into a pipe).
 * Each on a fresh connection, read until the server closes.  Exit 0 when
 * every response began with "HTTP/".  trickle missed sendmsg/recvmsg
 * entirely; here each family must yield one round-trip sample.
 */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define FAMILIES 8

static const char request[] = "GET /calls HTTP/1.0\r\nHost: x\r\n\r\n";

/* The request in a file, for sendfile; a pipe for splice's responses. */
static int request_file = -1;
static int splice_pipe[2] = { -1, -1 };

static ssize_t do_send(int fd, int family)
{
	struct iovec iov = { (void *)request, sizeof(request) - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct mmsghdr mmsg = { .msg_hdr = msg };

	switch (family) {
	case 0: return send(fd, request, sizeof(request) - 1, 0);
	case 1: return sendto(fd, request, sizeof(request) - 1, 0, NULL, 0);
	case 2: return sendmsg(fd, &msg, 0);
	case 3: return write(fd, request, sizeof(request) - 1);
	case 4: return writev(fd, &iov, 1);
	case 5: return sendmmsg(fd, &mmsg, 1, 0) == 1 ? (ssize_t)mmsg.msg_len : -1;
	case 6: {
		off_t offset = 0;

		return sendfile(fd, request_file, &offset, sizeof(request) - 1);
	}
	default: return write(fd, request, sizeof(request) - 1);
	}
}

static ssize_t do_recv(int fd, int family, char *buf, size_t len)
{
	struct iovec iov = { buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct mmsghdr mmsg = { .msg_hdr = msg };
	char fixed[64]; /* a compile-time size: the _chk variants */
	volatile size_t want = sizeof(fixed); /* a run-time length */
	ssize_t n;

	switch (family) {
	case 0:
		n = recv(fd, fixed, want, 0);
		break;
	case 1:
		n = recvfrom(fd, fixed, want, 0, NULL, NULL);
		break;
	case 2: return recvmsg(fd, &msg, 0);
	case 3:
		n = read(fd, fixed, want);
		break;
	case 4: return readv(fd, &iov, 1);
	case 5:
		return recvmmsg(fd, &mmsg, 1, 0, NULL) == 1 ? (ssize_t)mmsg.msg_len : -1;
	case 6:
		n = read(fd, fixed, want);
		break;
	default:
		n = splice(fd, NULL, splice_pipe[1], NULL, len, 0);
		if (n > 0 && read(splice_pipe[0], buf, (size_t)n) != n)
			return -1;
		return n;
	}
	if (n > 0)
		memcpy(buf, fixed, (size_t)n < len ? (size_t)n : len);
	return n;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };

	if (argc != 2)
		return 2;
	addr.sin_port = htons((uint16_t)atoi(argv[1]));
	{
		FILE *f = tmpfile();

		request_file = f != NULL ? fileno(f) : -1;
	}
	if (request_file < 0 || write(request_file, request,
	                              sizeof(request) - 1) !=
	    (ssize_t)sizeof(request) - 1 || pipe(splice_pipe) != 0) {
		perror("request file or pipe");
		return 1;
	}
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int family = 0; family < FAMILIES; family++) {
		char first[64] = "", buf[64];
		size_t got = 0;
		ssize_t n;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0 || connect(fd, (void *)&addr, sizeof(addr)) != 0) {
			perror("connect");
			return 1;
		}
		if (do_send(fd, family) != (ssize_t)sizeof(request) - 1) {
			perror("send");
			return 1;
		}
		while ((n = do_recv(fd, family, buf, sizeof(buf))) > 0) {
			if (got == 0)
				memcpy(first, buf, 5);
			got += (size_t)n;
		}
		close(fd);
		if (strncmp(first, "HTTP/", 5) != 0) {
			fprintf(stderr, "family %d: bad response\n", family);
			return 1;
		}
	}
	return 0;
}
