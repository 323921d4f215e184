/*
 * fork_linger_client.c - a server that forks while another of its threads
 * sheds connections (tests/preload/fork_linger.sh).
 *
 * Behind AGILE_LISTEN_ with max=1 and shed_response=503, the one
 * connection this program keeps open holds the only permit, so the preload
 * sheds every other connection its acceptor thread accepts: it answers
 * 503 and lets the connection linger, and later drains and closes it under
 * the lock of its list of lingering connections.  A flooder thread keeps
 * those connections coming, each with 64 KiB of request the drain reads.
 * Meanwhile the main thread forks; each child opens a listener of its own
 * (the rule takes any loopback port), connects to it and accepts, which
 * makes the preload close its inherited lingering connections first, under
 * that lock.  A child forked while the acceptor held the lock, without the
 * lock in the preload's fork handlers, inherits it held by a thread that
 * does not exist there and never returns from accept.
 *
 * Usage: fork_linger_client FORKS SECONDS.  Forks up to FORKS children, for
 * at most SECONDS, one at a time; each must exit within 5 s.  Prints the
 * number of children forked; exits 1 when one hangs (it is killed).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHILD_TIMEOUT_S 5

static int stop;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A listener on 127.0.0.1 at a port of the kernel's choice; *port its port. */
static int listener(int flags, in_port_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | flags, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(fd, 1024) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		perror("fork_linger_client: listener");
		exit(2);
	}
	*port = a.sin_port;
	return fd;
}

static int connect_to(in_port_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = port };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Accept on the shared listener: the first connection is admitted and kept
 * (it holds the permit); the preload sheds the others inside accept. */
static void *acceptor(void *arg)
{
	int listen_fd = *(int *)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (accept(listen_fd, NULL, NULL) < 0 && errno != EINTR &&
		    errno != EAGAIN)
			break;
	}
	return NULL;
}

/* Connect, send 64 KiB the shed connection's drain will read, read the
 * answer, close. */
static void *flooder(void *arg)
{
	in_port_t port = *(in_port_t *)arg;
	static char request[64 * 1024];
	struct timeval timeout = { .tv_sec = 1 };
	char answer[512];

	memset(request, 'x', sizeof(request));
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int fd = connect_to(port);

		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
		(void)send(fd, request, sizeof(request), MSG_NOSIGNAL);
		(void)recv(fd, answer, sizeof(answer), 0);
		close(fd);
	}
	return NULL;
}

/* The child: one accept on a listener of its own, then exit. */
static void __attribute__((noreturn)) child(void)
{
	in_port_t port;
	int listen_fd = listener(SOCK_NONBLOCK, &port);
	int fd = connect_to(port);

	if (fd < 0)
		_exit(3);
	(void)accept(listen_fd, NULL, NULL);
	_exit(0);
}

/* Wait for `pid` at most CHILD_TIMEOUT_S: 0 when it exited with status 0. */
static int reap(pid_t pid)
{
	double deadline = now_s() + CHILD_TIMEOUT_S;
	int status;

	while (now_s() < deadline) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
		if (r < 0 && errno != EINTR)
			return -1;
		usleep(1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	fprintf(stderr, "fork_linger_client: child %d still in accept after "
	        "%d s: deadlocked\n", (int)pid, CHILD_TIMEOUT_S);
	return -2;
}

int main(int argc, char **argv)
{
	pthread_t accept_thread, flood_thread;
	in_port_t port;
	int listen_fd, kept, forks = 0, rc = 0;
	long max_forks;
	double deadline;

	if (argc != 3) {
		fprintf(stderr, "usage: fork_linger_client FORKS SECONDS\n");
		return 2;
	}
	max_forks = strtol(argv[1], NULL, 10);
	deadline = now_s() + strtod(argv[2], NULL);
	listen_fd = listener(0, &port);
	/* The connection that holds the one permit, accepted first. */
	kept = connect_to(port);
	if (kept < 0 || accept(listen_fd, NULL, NULL) < 0) {
		perror("fork_linger_client: the kept connection");
		return 2;
	}
	pthread_create(&accept_thread, NULL, acceptor, &listen_fd);
	pthread_create(&flood_thread, NULL, flooder, &port);
	/* Let the lingering list fill before the first fork. */
	usleep(200 * 1000);
	while (forks < max_forks && now_s() < deadline) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork_linger_client: fork");
			rc = 2;
			break;
		}
		if (pid == 0)
			child();
		forks++;
		if (reap(pid) != 0) {
			rc = 1;
			break;
		}
	}
	printf("%d\n", forks);
	fflush(stdout);
	/* The threads block in accept and recv: leave without joining them. */
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	_exit(rc);
}
