/*
 * env_race_client.c - four threads change AGILE_DEST_ variables while four
 * others make the process's first connects (tests/preload/env_race.sh).
 *
 * The first connect reads the configuration.  When it read the live
 * environment, the changers' setenv, unsetenv and clearenv freed and moved
 * the strings and the array under it: 4 crashes in 60 runs (strncmp in the
 * rule parser on a freed string; issue 16, item 2).  The preload reads the
 * copy its constructor made, so every run must exit 0 with its four
 * connects made to the destination the process started with.
 *
 * The changers take a lock of their own around each change: glibc's
 * environment lock is invisible to ThreadSanitizer, which would otherwise
 * report the changers racing one another inside setenv (tsan_threads.sh
 * runs this); nothing the connecting threads do takes that lock, as
 * nothing a program's other threads do would.
 *
 * Usage: env_race_client PORT.  It listens on 127.0.0.1:PORT itself and
 * connects there; the caller's AGILE_DEST_RACE names that address.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHANGERS 4
#define CONNECTORS 4

static struct sockaddr_in address;
static pthread_barrier_t start;
static pthread_mutex_t changing = PTHREAD_MUTEX_INITIALIZER;
static int connected;
static int failed;

static void *change(void *arg)
{
	int id = (int)(long)arg;
	char name[32], value[256];

	pthread_barrier_wait(&start);
	for (int i = 0; i < 2000 &&
	                !__atomic_load_n(&connected, __ATOMIC_ACQUIRE); i++) {
		snprintf(name, sizeof(name), "AGILE_DEST_CHANGED_%d", i % 8);
		pthread_mutex_lock(&changing);
		switch ((i + id) % 5) {
		case 0:
		case 1:
			snprintf(value, sizeof(value), "127.0.0.%d:%d max=%d "
			         "floor=1 slo=%dms", 1 + i % 200, 1000 + i,
			         1 + i, 10 + id);
			setenv(name, value, 1);
			break;
		case 2:
		case 3:
			unsetenv(name);
			break;
		default:
			/* The one that frees the array itself. */
			if (id == 0)
				clearenv();
			break;
		}
		pthread_mutex_unlock(&changing);
	}
	return NULL;
}

static void *connect_once(void *arg)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)arg;
	pthread_barrier_wait(&start);
	if (fd < 0 ||
	    connect(fd, (struct sockaddr *)&address, sizeof(address)) != 0)
		__atomic_store_n(&failed, 1, __ATOMIC_RELEASE);
	if (fd >= 0)
		close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t changers[CHANGERS], connectors[CONNECTORS];
	int listener;

	if (argc != 2)
		return 2;
	address = (struct sockaddr_in){ .sin_family = AF_INET,
	                                .sin_port = htons((unsigned short)
	                                                  atoi(argv[1])),
	                                .sin_addr.s_addr =
	                                        htonl(INADDR_LOOPBACK) };
	listener = socket(AF_INET, SOCK_STREAM, 0);
	if (listener < 0 ||
	    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 },
	               sizeof(int)) != 0 ||
	    bind(listener, (struct sockaddr *)&address, sizeof(address)) != 0 ||
	    listen(listener, 64) != 0) {
		perror("listen");
		return 2;
	}
	pthread_barrier_init(&start, NULL, CHANGERS + CONNECTORS);
	for (long i = 0; i < CHANGERS; i++)
		pthread_create(&changers[i], NULL, change, (void *)i);
	for (int i = 0; i < CONNECTORS; i++)
		pthread_create(&connectors[i], NULL, connect_once, NULL);
	for (int i = 0; i < CONNECTORS; i++)
		pthread_join(connectors[i], NULL);
	__atomic_store_n(&connected, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < CHANGERS; i++)
		pthread_join(changers[i], NULL);
	if (failed) {
		fprintf(stderr, "a connect failed\n");
		return 1;
	}
	return 0;
}
