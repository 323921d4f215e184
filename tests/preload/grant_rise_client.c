/*
 * grant_rise_client.c - a grant planned at a low rate, waited for after
 * the rate rose.
 *
 *     grant_rise_client PORT STATE NAME COUNT RATE
 *
 * Connects COUNT sockets to the HTTP server on 127.0.0.1:PORT one after
 * another: the preload plans each connection's grant at its connect, at
 * the destination's rate then (the rule's initial=, low), so the last is
 * (COUNT - 1) spacings ahead; the grants are waited for at the first send.
 * Then it raises the destination NAME's rate to RATE in the state file
 * STATE, as a controller in another process sharing the budget does (its
 * target, its bucket's spacing and the time of the rise), and sends on the
 * LAST socket first: its grant was planned before the rise, and its wait
 * begins after it.  Then on the others from the first, one after another
 * as an event loop does, and reads every answer.
 *
 * Prints the seconds the first send took and the seconds of all of them;
 * exit 0 when every request was answered.
 */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "state.h"

#define MOST 16

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

/* The rise: the slot's controller target, its bucket's spacing and the
 * time of the rise, as agile_rate_tick leaves them (the next tick, blind,
 * keeps the target). */
static void raise_rate(const char *path, const char *name, double rate)
{
	int fd = open(path, O_RDWR);
	size_t size = AGILE_STATE_SIZE;

	if (fd < 0)
		die("open state");
	char *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap state");
	close(fd);
	struct agile_state_slot *slots =
		(struct agile_state_slot *)(map + sizeof(struct agile_state_header));
	for (int i = 0; i < AGILE_STATE_SLOTS; i++) {
		struct agile_rate_limiter *l = &slots[i].limiter;

		if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) !=
		    AGILE_SLOT_READY || strcmp(slots[i].name, name) != 0)
			continue;
		__atomic_store(&l->loop.ctl.rate, &rate, __ATOMIC_RELAXED);
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		__atomic_store_n(&l->bucket.rise_ns,
		                 (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
		                 __ATOMIC_RELAXED);
		__atomic_store_n(&l->bucket.interval_ns,
		                 (int64_t)(1e9 / rate), __ATOMIC_RELEASE);
		munmap(map, size);
		return;
	}
	fprintf(stderr, "grant_rise_client: no slot named %s\n", name);
	exit(3);
}

int main(int argc, char **argv)
{
	struct sockaddr_in server = { .sin_family = AF_INET };
	int fds[MOST];
	char buf[4096];

	if (argc != 6) {
		fprintf(stderr, "usage: grant_rise_client PORT STATE NAME "
		        "COUNT RATE\n");
		return 2;
	}
	int count = atoi(argv[4]);
	if (count < 2 || count > MOST)
		return 2;
	server.sin_port = htons((uint16_t)atoi(argv[1]));
	server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < count; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 ||
		    connect(fds[i], (struct sockaddr *)&server, sizeof server))
			die("connect");
	}
	raise_rate(argv[2], argv[3], atof(argv[5]));

	static const char request[] =
		"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	double start = now_s(), first = 0;
	for (int i = 0; i < count; i++) {
		int k = i == 0 ? count - 1 : i - 1;

		if (send(fds[k], request, sizeof request - 1, 0) !=
		    (ssize_t)(sizeof request - 1))
			die("send");
		if (i == 0)
			first = now_s() - start;
	}
	double all = now_s() - start;
	for (int i = 0; i < count; i++) {
		ssize_t n, got = 0;
		bool http = false;

		while ((n = recv(fds[i], buf, sizeof buf, 0)) > 0) {
			if (got == 0)
				http = n >= 7 && memcmp(buf, "HTTP/1.", 7) == 0;
			got += n;
		}
		if (!http) {
			fprintf(stderr, "socket %d: no answer\n", i);
			return 1;
		}
		close(fds[i]);
	}
	printf("%.3f %.3f\n", first, all);
	return 0;
}
