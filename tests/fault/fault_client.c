/*
 * fault_client.c - the client of the fault-injection tests: HTTP/1.0
 * requests, one connection each, to 127.0.0.1:PORT, under whatever fault the
 * test arranges around it.
 *
 *     fault_client [options] PORT
 *
 *   -t THREADS   threads, released together from a barrier (default 1)
 *   -n N         requests per thread (default 1)
 *   -T FILE      append the CLOCK_MONOTONIC time each request ended,
 *                answered or not
 *   -b           non-blocking connect: poll for writability and read the
 *                result with getsockopt(SO_ERROR), as event loops do; the
 *                connect must fail with EINPROGRESS, exactly as without
 *                the preload
 *   -B           -b, collecting the result with a second connect() (0 or
 *                EISCONN: connected), as some event loops do, instead of
 *                getsockopt(SO_ERROR)
 *   -a USEC      deliver SIGALRM every USEC microseconds (setitimer) to a
 *                handler installed without SA_RESTART, so that a blocking
 *                call the signal interrupts fails with EINTR; sends and
 *                receives are retried then, as such a program must, and
 *                counted (without the preload a send has room in the
 *                socket buffer, so it never blocks and never fails so)
 *   -R           install that handler with SA_RESTART: the kernel restarts
 *                an interrupted blocking call, so none fails with EINTR
 *   -f LIMIT     lower the soft RLIMIT_NOFILE to LIMIT and fill every free
 *                descriptor with /dev/null before each request, leaving
 *                exactly one for the request's socket: the preload has none
 *                of its own
 *   -F LIMIT     the same with the hard limit lowered to LIMIT too
 *   -r           make the socket calls with syscall(2) itself, as Go's
 *                runtime does, not through the C library's functions
 *   -c           after the first request, close every descriptor (stdin,
 *                stdout and stderr too, with close() from 0 up to the limit,
 *                then close_range() and closefrom()), as a daemon might,
 *                and make the rest of the requests in that state; the
 *                summary then goes nowhere, the exit status alone reports
 *
 * Prints one line: "requests R failed F elapsed S signals K send_eintr E
 * recv_eintr I preload P connect_error C", P being 1 when libagilepreload
 * is mapped into the process, C the errno of the first connect that failed
 * (0 when none did).  Exit 0 when every request got a response starting
 * with "HTTP/", and with -R no call failed with EINTR; 1 otherwise; 2 on
 * bad usage.
 *
 * Built dynamically by make; tests/fault/exec.sh also builds it with
 * `cc -static`, a program the preload cannot enter.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int port;
static int threads = 1;
static int requests = 1;
static const char *times_path;
static bool nonblocking_connect;
static bool second_connect;
static long alarm_usec;
static bool alarm_restart;
static long fd_limit;
static bool fd_limit_hard;
static bool close_all;
static bool raw_syscalls;

static volatile sig_atomic_t signals;
static int failed, send_eintr, recv_eintr;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start_line;
static FILE *times_file;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void count(int *counter)
{
	pthread_mutex_lock(&count_lock);
	(*counter)++;
	pthread_mutex_unlock(&count_lock);
}

static void on_alarm(int sig)
{
	(void)sig;
	signals++;
}

/* Fill every free descriptor but one with /dev/null; returns how many were
 * opened, to be closed after the request. */
static int fill_descriptors(int *opened, int cap)
{
	int n = 0;

	for (;;) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			break;
		if (n == cap) {
			close(fd);
			break;
		}
		opened[n++] = fd;
	}
	if (n > 0)
		close(opened[--n]);
	return n;
}

/* The errno of the first connect that failed, 0 until one does. */
static int connect_error;

static void connect_failed(int error)
{
	int none = 0;

	__atomic_compare_exchange_n(&connect_error, &none, error, false,
	                            __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static int connect_socket(int fd, const struct sockaddr_in *addr)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int error = 0;
	socklen_t len = sizeof(error);

	if (!nonblocking_connect) {
		if (connect(fd, (const struct sockaddr *)addr,
		            sizeof(*addr)) != 0) {
			if (errno != EINTR) {
				connect_failed(errno);
				return -1;
			}
			/* An interrupted connect goes on in the kernel. */
			while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
				;
		}
	} else {
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		if (connect(fd, (const struct sockaddr *)addr,
		            sizeof(*addr)) == 0 || errno != EINPROGRESS) {
			fprintf(stderr, "non-blocking connect: expected "
			        "EINPROGRESS, got %s\n", strerror(errno));
			return -1;
		}
		while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
			;
		if (second_connect &&
		    connect(fd, (const struct sockaddr *)addr,
		            sizeof(*addr)) != 0 && errno != EISCONN) {
			connect_failed(errno);
			return -1;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 ||
	    error != 0) {
		connect_failed(error != 0 ? error : errno);
		return -1;
	}
	return 0;
}

/* One request made with raw system calls (-r): true when a response
 * arrived. */
static bool raw_request(const struct sockaddr_in *addr, const char *req,
                        size_t len)
{
	char buf[512];
	long n, have = 0;
	bool ok = false;
	long fd = syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	if (syscall(SYS_connect, fd, addr, sizeof(*addr)) != 0)
		connect_failed(errno);
	else if (syscall(SYS_sendto, fd, req, len, MSG_NOSIGNAL, NULL, 0) ==
	         (long)len) {
		for (;;) {
			n = syscall(SYS_recvfrom, fd, buf + have,
			            sizeof(buf) - 1 - (size_t)have, 0, NULL, NULL);
			if (n <= 0)
				break;
			have += n;
			if (have == (long)sizeof(buf) - 1)
				break;
		}
		buf[have] = '\0';
		ok = strncmp(buf, "HTTP/", 5) == 0;
	}
	syscall(SYS_close, fd);
	return ok;
}

/* One request on a fresh connection: true when a response arrived. */
static bool request(void)
{
	static const char req[] = "GET /fault HTTP/1.0\r\nHost: x\r\n\r\n";
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	char buf[512];
	size_t have = 0;
	ssize_t n;
	bool ok = false;
	int fd;

	if (raw_syscalls)
		return raw_request(&addr, req, sizeof(req) - 1);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (connect_socket(fd, &addr) != 0)
		goto out;
	while ((n = send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL)) < 0 &&
	       errno == EINTR)
		count(&send_eintr);
	if (n != (ssize_t)sizeof(req) - 1)
		goto out;
	for (;;) {
		n = recv(fd, buf + have, sizeof(buf) - 1 - have, 0);
		if (n < 0 && errno == EINTR) {
			count(&recv_eintr);
			continue;
		}
		if (n <= 0)
			break;
		have += (size_t)n;
		if (have == sizeof(buf) - 1)
			break;
	}
	buf[have] = '\0';
	ok = strncmp(buf, "HTTP/", 5) == 0;
out:
	close(fd);
	return ok;
}

static void record_time(void)
{
	if (times_file == NULL)
		return;
	pthread_mutex_lock(&count_lock);
	fprintf(times_file, "%.6f\n", now_s());
	fflush(times_file);
	pthread_mutex_unlock(&count_lock);
}

static void close_everything(void)
{
	struct rlimit lim;
	long top = 1024;

	if (times_file != NULL) {
		fclose(times_file);
		times_file = NULL;
	}
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
		top = (long)lim.rlim_cur;
	for (long fd = 0; fd < top; fd++)
		close((int)fd);
	/* Both of the wholesale ways too; each must leave the preload's state
	 * usable (it holds no descriptor of its own to lose). */
	syscall(SYS_close_range, 0U, ~0U, 0);
	closefrom(0);
}

static void *worker(void *arg)
{
	int opened[4096];

	(void)arg;
	pthread_barrier_wait(&start_line);
	for (int i = 0; i < requests; i++) {
		int filled = fd_limit > 0 ? fill_descriptors(opened, 4096) : 0;
		bool ok = request();

		for (int k = 0; k < filled; k++)
			close(opened[k]);
		record_time();
		if (!ok)
			count(&failed);
		if (close_all && i == 0)
			close_everything();
	}
	return NULL;
}

/* Whether the dynamic loader mapped the preload into this process. */
static int preload_mapped(void)
{
	char line[4096];
	int found = 0;
	FILE *maps = fopen("/proc/self/maps", "r");

	if (maps == NULL)
		return 0;
	while (!found && fgets(line, sizeof(line), maps) != NULL)
		found = strstr(line, "libagilepreload") != NULL;
	fclose(maps);
	return found;
}

static void usage(void)
{
	fprintf(stderr, "usage: fault_client [-t THREADS] [-n N] [-T FILE] "
	        "[-b|-B] [-a USEC [-R]] [-f|-F LIMIT] [-r] [-c] PORT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	pthread_t tid[1024];
	double start;
	int opt;

	while ((opt = getopt(argc, argv, "t:n:T:bBa:Rf:F:rc")) != -1) {
		switch (opt) {
		case 't': threads = atoi(optarg); break;
		case 'n': requests = atoi(optarg); break;
		case 'T': times_path = optarg; break;
		case 'b': nonblocking_connect = true; break;
		case 'B': nonblocking_connect = second_connect = true; break;
		case 'a': alarm_usec = atol(optarg); break;
		case 'R': alarm_restart = true; break;
		case 'f': fd_limit = atol(optarg); break;
		case 'F': fd_limit = atol(optarg); fd_limit_hard = true; break;
		case 'r': raw_syscalls = true; break;
		case 'c': close_all = true; break;
		default: usage();
		}
	}
	if (optind + 1 != argc || threads < 1 || threads > 1024 ||
	    requests < 1)
		usage();
	port = atoi(argv[optind]);
	if ((close_all || fd_limit > 0) && threads != 1)
		usage();
	if (times_path != NULL && (times_file = fopen(times_path, "a")) == NULL) {
		perror(times_path);
		return 2;
	}
	if (fd_limit > 0) {
		struct rlimit lim;

		getrlimit(RLIMIT_NOFILE, &lim);
		lim.rlim_cur = (rlim_t)fd_limit;
		if (fd_limit_hard)
			lim.rlim_max = (rlim_t)fd_limit;
		if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
			perror("setrlimit");
			return 2;
		}
	}
	if (alarm_usec > 0) {
		struct sigaction sa = { .sa_handler = on_alarm };
		struct itimerval it = {
			.it_interval = { alarm_usec / 1000000, alarm_usec % 1000000 },
			.it_value = { alarm_usec / 1000000, alarm_usec % 1000000 },
		};

		sigemptyset(&sa.sa_mask);
		/* Without SA_RESTART an interrupted blocking call fails. */
		sa.sa_flags = alarm_restart ? SA_RESTART : 0;
		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
	}
	pthread_barrier_init(&start_line, NULL, (unsigned)threads);
	start = now_s();
	for (int i = 1; i < threads; i++)
		if (pthread_create(&tid[i], NULL, worker, NULL) != 0) {
			perror("pthread_create");
			return 2;
		}
	worker(NULL);
	for (int i = 1; i < threads; i++)
		pthread_join(tid[i], NULL);
	if (alarm_usec > 0) {
		struct itimerval off = { { 0, 0 }, { 0, 0 } };

		setitimer(ITIMER_REAL, &off, NULL);
	}
	printf("requests %d failed %d elapsed %.3f signals %d send_eintr %d "
	       "recv_eintr %d preload %d connect_error %d\n",
	       threads * requests, failed, now_s() - start, (int)signals,
	       send_eintr, recv_eintr, preload_mapped(), connect_error);
	return failed == 0 &&
	       (!alarm_restart || send_eintr + recv_eintr == 0) ? 0 : 1;
}
