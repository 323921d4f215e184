/*
 * fleet_hostile.c - a program that does to its descriptors what programs
 * do, while the preload keeps a Redis connection among them.
 *
 *     fleet_hostile PORT CALLS
 *
 * Between rounds of CALLS HTTP requests (each on a fresh connection) it:
 *   1. finds the preload's Redis socket (the socket at descriptor 200 or
 *      above) and checks it is close-on-exec;
 *   2. closes every descriptor from 3 up (as daemons and close-all loops
 *      do), taking the preload's connection away without telling it;
 *   3. dup2()s /dev/null onto the number the preload's new connection
 *      has, so that number is the program's again, and after a round
 *      checks it is still /dev/null (the preload neither closed nor wrote
 *      to it);
 *   4. forks: the child makes a round of its own (with its own
 *      connection), then the parent makes another.
 * Exit status 0 when every request got a response and every check held;
 * otherwise a line on stderr says which did not.
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct sockaddr_in addr;

static int round_of(int calls)
{
	static const char request[] = "GET /hostile HTTP/1.0\r\nHost: x\r\n\r\n";
	char buf[1024];

	for (int i = 0; i < calls; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		ssize_t n, total = 0;

		if (fd < 0 || connect(fd, (struct sockaddr *)&addr,
		                      sizeof(addr)) != 0 ||
		    send(fd, request, sizeof(request) - 1, 0) < 0)
			return -1;
		while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
			total += n;
		close(fd);
		if (total == 0)
			return -1;
	}
	return 0;
}

/* The lowest socket descriptor at 200 or above, or -1. */
static int preload_socket(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);
		struct stat st;

		if (fd >= 200 && fd != dirfd(d) && fstat(fd, &st) == 0 &&
		    S_ISSOCK(st.st_mode) && (found < 0 || fd < found))
			found = fd;
	}
	closedir(d);
	return found;
}

#define CHECK(cond, ...) do { if (!(cond)) { \
	fprintf(stderr, "fleet_hostile: " __VA_ARGS__); \
	fputc('\n', stderr); return 1; } } while (0)

int main(int argc, char **argv)
{
	int calls, redis, null, status;
	struct stat st;
	pid_t child;

	if (argc != 3)
		return 2;
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)atoi(argv[1]));
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	calls = atoi(argv[2]);

	CHECK(round_of(calls) == 0, "first round failed");
	redis = preload_socket();
	CHECK(redis >= 200, "no Redis socket at descriptor 200 or above");
	CHECK(fcntl(redis, F_GETFD) & FD_CLOEXEC,
	      "the Redis socket %d is not close-on-exec", redis);

	/* 2: close everything from 3 up behind the preload's back. */
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	CHECK(round_of(calls) == 0, "a round after closing every descriptor "
	      "failed");
	redis = preload_socket();
	CHECK(redis >= 200, "no new Redis connection after the close-all");

	/* 3: the preload's number becomes the program's /dev/null. */
	null = open("/dev/null", O_WRONLY);
	CHECK(null >= 0 && dup2(null, redis) == redis, "dup2 failed: %s",
	      strerror(errno));
	close(null);
	CHECK(round_of(calls) == 0, "a round after dup2 onto the preload's "
	      "descriptor failed");
	CHECK(fstat(redis, &st) == 0 && S_ISCHR(st.st_mode),
	      "descriptor %d is no longer the program's /dev/null", redis);
	close(redis);

	/* 4: fork; each process goes on with its own connection. */
	child = fork();
	CHECK(child >= 0, "fork failed");
	if (child == 0)
		_exit(round_of(calls) == 0 ? 0 : 3);
	CHECK(round_of(calls) == 0, "the parent's round after fork failed");
	CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "the child's round failed");
	return 0;
}
