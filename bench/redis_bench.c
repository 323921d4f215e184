/*
 * redis_bench.c - what a fleet budget on Redis costs per granted connect.
 *
 *     redis_bench RATE SECONDS THREADS SETTINGS [EVALSHA_REDIS_PORT]
 *
 * Serves a trivial TCP downstream on 127.0.0.1 in a thread of its own (read
 * one byte, close), sets AGILE_DEST_BENCH="127.0.0.1:PORT SETTINGS" (the
 * preload reads the environment at the first connect, so this is before),
 * and calls it RATE times a second for SECONDS seconds, open loop, from
 * THREADS threads: connect, send one byte, read to end of file, close.
 * Run under the preload, each call takes its grant in connect() and waits
 * for it (and for its fleet slot) in the send.
 *
 * Per call it measures the admission: from just before connect() to just
 * after the send returned, which is the kernel's connect and send plus
 * whatever the preload added.  With EVALSHA_REDIS_PORT it also runs, before
 * each connect, the usual Lua rate-limit script (a token bucket in a hash,
 * EVALSHA on a connection of the thread's own): the baseline of one Redis
 * round trip per request, counted in the admission.
 *
 * Prints one JSON object: the calls made, the rate achieved, the admission
 * p50 and p99 in microseconds, and the EVALSHA round trips made.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "resp.h"

#define CALLS_MAX 400000

/* The usual per-request limiter: a token bucket refilled from Redis's
 * clock, one EVALSHA per request. */
static const char script[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) + tonumber(t[2]) / 1000000\n"
	"local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])\n"
	"local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')\n"
	"local tokens = tonumber(b[1]) or burst\n"
	"local ts = tonumber(b[2]) or now\n"
	"tokens = math.min(burst, tokens + (now - ts) * rate)\n"
	"local ok = 0\n"
	"if tokens >= 1 then tokens = tokens - 1; ok = 1 end\n"
	"redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)\n"
	"redis.call('PEXPIRE', KEYS[1], 60000)\n"
	"return ok\n";

static double rate;
static double start, end;
static int redis_port;
static struct sockaddr_in target;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long turn, count, failed, evals;
static double *admission;
static char sha[41];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
	struct timespec ts = { (time_t)t, (long)((t - (double)(time_t)t) * 1e9) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

/* One blocking command on fd; the reply's first node into *out. */
static int command(int fd, int argc, const char *const *argv,
                   struct agile_resp *out)
{
	static __thread char buf[8192];
	struct agile_resp nodes[8];
	size_t used = 0, have = 0, taken;
	ssize_t n;

	if (agile__resp_command(buf, sizeof(buf), &used, argc, argv, NULL) < 0 ||
	    send(fd, buf, used, MSG_NOSIGNAL) != (ssize_t)used)
		return -1;
	for (;;) {
		n = agile__resp_parse(buf, have, nodes, 8, &taken);
		if (n > 0) {
			*out = nodes[0];
			return out->type == AGILE_RESP_ERROR ? -1 : 0;
		}
		if (n < 0 || have == sizeof(buf))
			return -1;
		n = recv(fd, buf + have, sizeof(buf) - have, 0);
		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
}

static int redis_connect(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	a.sin_port = htons((uint16_t)redis_port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int one_call(int redis)
{
	char rate_s[32], burst_s[32], buf[64];
	double t0 = now(), t1;
	struct agile_resp r;
	int fd;

	if (redis >= 0) {
		const char *argv[] = { "EVALSHA", sha, "1", "bench:bucket",
		                       rate_s, burst_s };

		snprintf(rate_s, sizeof(rate_s), "%.0f", rate * 2);
		snprintf(burst_s, sizeof(burst_s), "%.0f", rate / 10 + 1);
		if (command(redis, 6, argv, &r) < 0)
			return -1;
		__atomic_add_fetch(&evals, 1, __ATOMIC_RELAXED);
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&target, sizeof(target)) != 0 ||
	    send(fd, "x", 1, 0) != 1) {
		close(fd);
		return -1;
	}
	t1 = now();
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		;
	close(fd);
	pthread_mutex_lock(&lock);
	if (count < CALLS_MAX)
		admission[count++] = t1 - t0;
	pthread_mutex_unlock(&lock);
	return 0;
}

static void *caller(void *arg)
{
	int redis = -1;

	(void)arg;
	if (redis_port > 0 && (redis = redis_connect()) < 0) {
		fprintf(stderr, "redis_bench: cannot connect to Redis\n");
		exit(1);
	}
	for (;;) {
		double due;

		pthread_mutex_lock(&lock);
		due = start + (double)turn++ / rate;
		pthread_mutex_unlock(&lock);
		if (due >= end)
			break;
		sleep_until(due);
		if (one_call(redis) < 0)
			__atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED);
	}
	if (redis >= 0)
		close(redis);
	return NULL;
}

/* The downstream: read a byte, close (so TIME_WAIT stays on this side). */
static void *server(void *arg)
{
	int listener = *(int *)arg;

	for (;;) {
		char c;
		int fd = accept(listener, NULL, NULL);

		if (fd < 0)
			continue;
		(void)recv(fd, &c, 1, 0);
		close(fd);
	}
	return NULL;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	pthread_t tid[64], srv;
	char dest[512];
	int listener, threads;
	double seconds;

	if (argc < 5) {
		fprintf(stderr, "usage: redis_bench RATE SECONDS THREADS SETTINGS "
		        "[EVALSHA_REDIS_PORT]\n");
		return 2;
	}
	rate = atof(argv[1]);
	seconds = atof(argv[2]);
	threads = atoi(argv[3]);
	redis_port = argc > 5 ? atoi(argv[5]) : 0;
	if (rate <= 0 || seconds <= 0 || threads < 1 || threads > 64)
		return 2;
	admission = calloc(CALLS_MAX, sizeof(*admission));
	listener = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (admission == NULL || listener < 0 ||
	    bind(listener, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(listener, 4096) != 0 ||
	    getsockname(listener, (struct sockaddr *)&a, &len) != 0) {
		perror("redis_bench: server");
		return 1;
	}
	target = a;
	snprintf(dest, sizeof(dest), "127.0.0.1:%u %s",
	         (unsigned)ntohs(a.sin_port), argv[4]);
	setenv("AGILE_DEST_BENCH", dest, 1);
	pthread_create(&srv, NULL, server, &listener);
	if (redis_port > 0) {
		struct agile_resp r;
		const char *load[] = { "SCRIPT", "LOAD", script };
		int fd = redis_connect();

		if (fd < 0 || command(fd, 3, load, &r) < 0 || r.len != 40) {
			fprintf(stderr, "redis_bench: SCRIPT LOAD failed\n");
			return 1;
		}
		memcpy(sha, r.str, 40);
		close(fd);
	}
	start = now() + 0.05;
	end = start + seconds;
	for (int i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, caller, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	qsort(admission, (size_t)count, sizeof(*admission), by_value);
	printf("{\"rate\":%.0f,\"calls\":%ld,\"failed\":%ld,\"achieved\":%.1f,"
	       "\"p50_us\":%.1f,\"p99_us\":%.1f,\"evalsha\":%ld}\n", rate, count,
	       failed, (double)count / seconds,
	       count ? admission[count / 2] * 1e6 : 0.0,
	       count ? admission[(long)((double)count * 0.99)] * 1e6 : 0.0,
	       evals);
	return failed == 0 ? 0 : 1;
}
