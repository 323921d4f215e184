/*
 * uring_client.c - HTTP/1.0 requests whose connect, send and receive go
 * through io_uring instead of the C library's calls, as io_uring programs
 * do.  Built by tests/fault/limits.sh with -luring when liburing is there.
 *
 *     uring_client PORT N
 *
 * Prints "requests N failed F elapsed S".  Exit 0 when every request got a
 * response starting with "HTTP/"; 77 when io_uring cannot be set up (an
 * old kernel, or a seccomp profile that forbids it).
 */
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Submit one prepared operation and wait for its result. */
static int complete(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	int res;

	if (io_uring_submit(ring) != 1 || io_uring_wait_cqe(ring, &cqe) != 0)
		return -1;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

static int request(struct io_uring *ring, const struct sockaddr_in *addr)
{
	static const char req[] = "GET /uring HTTP/1.0\r\nHost: x\r\n\r\n";
	char buf[512];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int ok = 0;
	size_t have = 0;

	if (fd < 0)
		return 0;
	io_uring_prep_connect(io_uring_get_sqe(ring), fd,
	                      (const struct sockaddr *)addr, sizeof(*addr));
	if (complete(ring) != 0)
		goto out;
	io_uring_prep_send(io_uring_get_sqe(ring), fd, req, sizeof(req) - 1, 0);
	if (complete(ring) != (int)sizeof(req) - 1)
		goto out;
	for (;;) {
		int n;

		io_uring_prep_recv(io_uring_get_sqe(ring), fd, buf + have,
		                   sizeof(buf) - 1 - have, 0);
		n = complete(ring);
		if (n <= 0)
			break;
		have += (size_t)n;
		if (have == sizeof(buf) - 1)
			break;
	}
	buf[have] = '\0';
	ok = strncmp(buf, "HTTP/", 5) == 0;
out:
	io_uring_prep_close(io_uring_get_sqe(ring), fd);
	complete(ring);
	return ok;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct io_uring ring;
	int n, failed = 0;
	double start;

	if (argc != 3)
		return 2;
	addr.sin_port = htons((uint16_t)atoi(argv[1]));
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	n = atoi(argv[2]);
	if (io_uring_queue_init(8, &ring, 0) != 0) {
		fprintf(stderr, "io_uring is not available\n");
		return 77;
	}
	start = now_s();
	for (int i = 0; i < n; i++)
		failed += !request(&ring, &addr);
	printf("requests %d failed %d elapsed %.3f\n", n, failed,
	       now_s() - start);
	io_uring_queue_exit(&ring);
	return failed == 0 ? 0 : 1;
}
