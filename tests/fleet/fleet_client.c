/*
 * fleet_client.c - one "host"'s HTTP client for the fleet tests.
 *
 *     fleet_client PORT SECONDS THREADS OUT.json [RATE]
 *
 * THREADS threads each make requests on a fresh connection (connect, send
 * a GET, read until the server closes) for SECONDS seconds: as fast as
 * they can (closed loop, the preload paces them), or, with RATE > 0, RATE
 * requests per second for the whole client (open loop: each thread takes
 * the next turn, waits for it, and a turn already past is taken at once).
 *
 * OUT.json gets, per request, the CLOCK_MONOTONIC time its connect()
 * started (the clock of the preload and of httpd.py's arrival log), how
 * long connect() took, how long the whole request took and how long until
 * its send() returned (the preload's waits, pacing and fleet, end there:
 * the rest is the server's), in seconds, as {"start":..,"end":..,
 * "failed":N,"calls":[[t0,connect_s,total_s,sent_s],...]}.
 * C rather than Python so that three of them and the servers leave the
 * CPU to the rest of `make check`.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CALLS_MAX 200000

struct call {
	double t0, connect_s, total_s, sent_s;
};

static struct sockaddr_in addr;
static double start, end, rate;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct call *calls;
static long count, failed, turn;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

static void one(void)
{
	static const char request[] = "GET /fleet HTTP/1.0\r\nHost: x\r\n\r\n";
	char buf[4096];
	double t0 = now(), t1, t2, sent = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;
	int ok = 0;

	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
		t1 = now();
		if (send(fd, request, sizeof(request) - 1, 0) ==
		    (ssize_t)sizeof(request) - 1) {
			sent = now();
			while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
				;
			ok = n == 0;
		}
	} else {
		t1 = now();
	}
	t2 = now();
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&lock);
	if (!ok)
		failed++;
	else if (count < CALLS_MAX)
		calls[count++] = (struct call){ t0, t1 - t0, t2 - t0,
		                                sent - t0 };
	pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		if (rate > 0) {
			double due;

			pthread_mutex_lock(&lock);
			due = start + (double)turn++ / rate;
			pthread_mutex_unlock(&lock);
			if (due >= end)
				return NULL;
			sleep_until(due);
		} else if (now() >= end) {
			return NULL;
		}
		one();
	}
}

static int by_start(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	return (x->t0 > y->t0) - (x->t0 < y->t0);
}

int main(int argc, char **argv)
{
	pthread_t tid[256];
	int threads;
	FILE *out;

	if (argc < 5) {
		fprintf(stderr, "usage: fleet_client PORT SECONDS THREADS "
		        "OUT.json [RATE]\n");
		return 2;
	}
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)atoi(argv[1]));
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	threads = atoi(argv[3]);
	if (threads < 1 || threads > 256)
		return 2;
	rate = argc > 5 ? atof(argv[5]) : 0;
	calls = calloc(CALLS_MAX, sizeof(*calls));
	if (calls == NULL)
		return 1;
	start = now();
	end = start + atof(argv[2]);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, worker, NULL) != 0)
			return 1;
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	qsort(calls, (size_t)count, sizeof(*calls), by_start);
	out = fopen(argv[4], "w");
	if (out == NULL)
		return 1;
	fprintf(out, "{\"start\":%.6f,\"end\":%.6f,\"failed\":%ld,\"calls\":[",
	        start, end, failed);
	for (long i = 0; i < count; i++)
		fprintf(out, "%s[%.6f,%.6f,%.6f,%.6f]", i ? "," : "",
		        calls[i].t0, calls[i].connect_s, calls[i].total_s,
		        calls[i].sent_s);
	fprintf(out, "]}\n");
	return fclose(out) == 0 ? 0 : 1;
}
