/*
 * vfork_client.c - a vfork child closes its copy of the parent's socket.
 *
 *     vfork_client PORT N vfork|clone
 *
 * Makes one request on a kept-alive HTTP/1.1 connection, then starts
 * /bin/true the way shells and process libraries do: vfork(), and in the
 * child close every descriptor from 3 up (one close() each, so the
 * connection's number among them) and dup2() /dev/null onto the
 * connection's number before exec.  Then once more, the child making the
 * close and the dup through syscall(SYS_close) and syscall(SYS_dup3), which
 * the preload also hooks.  Or, with `clone`, once with clone(CLONE_VM |
 * CLONE_VFORK), as process libraries that give the child its own stack do
 * (in a process of its own: the preload remembers that a child sharing its
 * memory has been made, so a vfork first would hide a clone it missed).
 * The child runs in the parent's address space until it execs, so it must
 * not make the preload forget the parent's socket.  Then N more requests on
 * the same connection.
 *
 * Prints the seconds the N requests took.  Exit 0 when every response was
 * read whole.
 */
#include "config.h"

#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One keep-alive request; tests/preload/httpd.py answers with the body
 * "ok\n", which ends every response. */
static void request(int fd)
{
	static const char req[] = "GET /vfork HTTP/1.1\r\nHost: x\r\n\r\n";
	char buf[1024];
	size_t have = 0;

	if (write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
		perror("write");
		exit(3);
	}
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);

		if (n <= 0) {
			fprintf(stderr, "connection ended mid-response\n");
			exit(3);
		}
		have += (size_t)n;
		buf[have] = '\0';
		if (strstr(buf, "\r\n\r\nok\n") != NULL)
			return;
		if (have == sizeof(buf) - 1)
			exit(3);
	}
}

enum spawn { SPAWN_VFORK, SPAWN_VFORK_RAW, SPAWN_CLONE };

/* What the child does before exec: close every descriptor from 3 up and
 * put /dev/null on fd's number, with close() and dup2(), or with
 * syscall(SYS_close) and syscall(SYS_dup3) when `raw`. */
static void child_exec_true(int fd, int raw)
{
	int null = open("/dev/null", O_RDWR);

	for (int i = 3; i < 64; i++) {
		if (i == null)
			continue;
		if (raw)
			syscall(SYS_close, i);
		else
			close(i);
	}
	if (null >= 0 && raw)
		syscall(SYS_dup3, null, fd, 0);
	else if (null >= 0)
		dup2(null, fd);
	execl("/bin/true", "true", (char *)NULL);
	_exit(127);
}

static int clone_child(void *arg)
{
	child_exec_true(*(int *)arg, 0);
	return 127;
}

/* Run /bin/true in a child sharing this memory, made by `how`.  Returns 0
 * when the child exited 0. */
static int spawn_true(int fd, enum spawn how)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	int status;
	pid_t pid;

	if (how == SPAWN_CLONE) {
		pid = clone(clone_child, stack + sizeof(stack),
		            CLONE_VM | CLONE_VFORK | SIGCHLD, &fd);
	} else {
		pid = vfork();
		if (pid == 0)
			child_exec_true(fd, how == SPAWN_VFORK_RAW);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	int fd, n;
	double start;

	if (argc != 4)
		return 2;
	addr.sin_port = htons((uint16_t)atoi(argv[1]));
	inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
	n = atoi(argv[2]);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		perror("connect");
		return 3;
	}
	request(fd);

	if (strcmp(argv[3], "clone") == 0 ? spawn_true(fd, SPAWN_CLONE) != 0
	    : spawn_true(fd, SPAWN_VFORK) != 0 ||
	      spawn_true(fd, SPAWN_VFORK_RAW) != 0) {
		fprintf(stderr, "the child failed\n");
		return 4;
	}

	start = now_s();
	for (int i = 0; i < n; i++)
		request(fd);
	printf("%.3f\n", now_s() - start);
	close(fd);
	return 0;
}
