/*
 * inbound.c - AGILE_LISTEN_<NAME>: protect a server program.
 *
 * A listener rule matches the local address of a listening socket.  Each
 * connection the program accepts there asks, in order:
 *
 *   shed=cpu      libagile's CPU-aware shedder, fed this process's CPU use
 *                 (below): refuses only when the CPU is hot and more
 *                 connections are in flight than the server has shown it
 *                 can finish within one response time;
 *   the cap       a permit of the slot's table (concurrency_hook.c) below
 *                 the adaptive limit that the core concurrency limiter sets
 *                 from the handling times, with the rule's max, slo and
 *                 other knobs.
 *
 * A connection refused by either is shed at once, before the program sees
 * it: closed, or with shed_response=STATUS answered first with a minimal
 * HTTP/1.1 response of that status (503 Service Unavailable, say) and a
 * Retry-After header only when retry_after= is set — an invented one would
 * tell clients something the operator never decided.  The accept hook then
 * accepts the next connection, so the program's accept returns one it may
 * serve (or EAGAIN on a non-blocking listener with none left).
 *
 * A shed connection is answered the moment it is accepted, usually before
 * its request has arrived.  Closing it then would make the request, when it
 * comes, draw a reset that can destroy the answer unread (ab sees nothing
 * at all); so an answered connection lingers: its write side is shut, and
 * it is closed 500 ms later, or when 256 others linger, by whichever
 * accept comes next, its request read and dropped first.
 *
 * With proto=http the permits are taken by requests instead (HTTP/1.x):
 * a connection is accepted without one, each request takes one when its
 * first bytes are read and gives it back when its response is complete by
 * its framing (response_written), so an idle keep-alive connection holds
 * nothing.  A request that gets none is answered in the program's place
 * (shed_request) and its bytes are not the program's: the receive hook
 * reads again (inbound.h), and the program, blocking or not, sees the next
 * request or EAGAIN as if the shed one had never come.  The connection is
 * kept when the answer can be sure where the request ended (all of it,
 * and nothing more, in that one read); otherwise the answer closes it, and
 * the program reads an end of file.
 *
 * An admitted connection is tracked with AGILE_FD_INBOUND and is never
 * paced.  Its requests are timed the other way round from a client's: the
 * first read returning data starts a request, the first write after it ends
 * it, and that handling time is the sample the limiter runs on.  With
 * proto=http, a request to an exclude= path, an OPTIONS (a CORS
 * preflight), a response with a status in ignore= or marked a cache hit
 * (cache_hit=, X-Cache and Age by default) are no samples; a status in
 * overload= (429 and 503 by default) or unreachable= is recorded as
 * unreachable, and so is any other 5xx written faster than the SLO (any
 * 5xx without an SLO): a server failing fast is not a fast server.  A connection closed with a
 * request unanswered is a truncated observation.
 *
 * The CPU reading.  Once per 100 ms at most, a process compares its CPU time
 * (CLOCK_PROCESS_CPUTIME_ID) with the wall time since the last reading,
 * over the CPUs it may use: the smaller of its affinity mask and its cgroup
 * v2 quota (cpu.max of the cgroup named in /proc/self/cgroup), so a server
 * limited to half a CPU reads 1000 when it uses half a CPU.  Each process
 * reads its own use; the shedder they share sees the last one that
 * admitted a connection.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "http2.h"
#include "inbound.h"
#include "inbound_h2.h"
#include "log.h"
#include "process.h"
#include "resilience_hook.h"
#include "shlock.h"
#include "symbols.h"

#define CPU_PERIOD_NS (100 * AGILE_NS_PER_MS)
#define LINGER_NS (500 * AGILE_NS_PER_MS)
#define LINGER_MAX 256

/* Answered shed connections waiting to be closed, oldest first in a ring;
 * the lock is held for a few recv and close calls at most, never while
 * waiting, and across fork() (forklist.c lists every lock in its order). */
static struct {
	int fd;
	int64_t since_ns;
} lingering[LINGER_MAX];
static unsigned int linger_first, linger_count;
static pthread_mutex_t linger_lock = PTHREAD_MUTEX_INITIALIZER;

void agile__inbound_atfork_prepare(void)
{
	pthread_mutex_lock(&linger_lock);
}

void agile__inbound_atfork_release(void)
{
	pthread_mutex_unlock(&linger_lock);
}

static void drain_and_close(int fd)
{
	char buf[4096];

	while (agile__libc.recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	agile__libc.close(fd);
}

/* Close the lingering connections that have waited long enough (all of
 * them when `all`); then, when `fd` >= 0, add it. */
static void linger(int fd, int64_t now)
{
	pthread_mutex_lock(&linger_lock);
	while (linger_count > 0 &&
	       (now - lingering[linger_first].since_ns >= LINGER_NS ||
	        (fd >= 0 && linger_count == LINGER_MAX))) {
		drain_and_close(lingering[linger_first].fd);
		linger_first = (linger_first + 1) % LINGER_MAX;
		linger_count--;
	}
	if (fd >= 0) {
		unsigned int i = (linger_first + linger_count) % LINGER_MAX;

		lingering[i].fd = fd;
		lingering[i].since_ns = now;
		linger_count++;
	}
	pthread_mutex_unlock(&linger_lock);
}

static int64_t cpus_milli;    /* thousandths of the CPUs this process may
                                 use; 0 until read */
static int64_t cpu_read_ns;   /* when the CPU was last read (claimed) */
static int64_t cpu_time_ns;   /* the process's CPU time then */
static int32_t cpu_permille;  /* the last reading */

/* The cgroup v2 quota of this process in CPUs, or 0 when it has none. */
static double cgroup_cpus(void)
{
	char line[512], path[600], buf[64];
	double quota = 0, period = 0;
	FILE *f = fopen("/proc/self/cgroup", "re");
	int fd;
	ssize_t n;

	path[0] = '\0';
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "0::", 3) == 0) {
				line[strcspn(line, "\n")] = '\0';
				snprintf(path, sizeof(path),
				         "/sys/fs/cgroup%s/cpu.max", line + 3);
			}
		fclose(f);
	}
	fd = path[0] != '\0' ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		fd = open("/sys/fs/cgroup/cpu.max", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "max 100000" is no quota; "50000 100000" is half a CPU. */
	if (sscanf(buf, "%lf %lf", &quota, &period) != 2 || period <= 0)
		return 0;
	return quota / period;
}

static double usable_cpus(void)
{
	int64_t milli = __atomic_load_n(&cpus_milli, __ATOMIC_ACQUIRE);
	cpu_set_t set;
	double cpus, quota;

	if (milli > 0)
		return (double)milli / 1000;
	cpus = (double)sysconf(_SC_NPROCESSORS_ONLN);
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0 &&
	    CPU_COUNT(&set) < cpus)
		cpus = CPU_COUNT(&set);
	quota = cgroup_cpus();
	if (quota > 0 && quota < cpus)
		cpus = quota;
	if (cpus < 0.001)
		cpus = 1;
	__atomic_store_n(&cpus_milli, (int64_t)(cpus * 1000), __ATOMIC_RELEASE);
	return cpus;
}

/* This process's CPU use in thousandths of what it may use. */
static int32_t read_cpu(int64_t now)
{
	int64_t last = __atomic_load_n(&cpu_read_ns, __ATOMIC_ACQUIRE);
	struct timespec ts;
	int64_t cpu, before;
	double use;

	if (now - last < CPU_PERIOD_NS ||
	    !__atomic_compare_exchange_n(&cpu_read_ns, &last, now, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return __atomic_load_n(&cpu_permille, __ATOMIC_ACQUIRE);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	cpu = (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
	before = __atomic_exchange_n(&cpu_time_ns, cpu, __ATOMIC_ACQ_REL);
	if (last == 0 || before == 0)
		return 0; /* the first reading has nothing to compare with */
	use = (double)(cpu - before) / ((double)(now - last) * usable_cpus());
	use = use < 0 ? 0 : use > 1 ? 1 : use;
	__atomic_store_n(&cpu_permille, (int32_t)(use * 1000), __ATOMIC_RELEASE);
	return (int32_t)(use * 1000);
}

/* The status a shed is answered with, 0 for none (shed_response=). */
static int shed_status(const struct agile_resilience_config *c)
{
	return c->shed_response == AGILE_SHED_HTTP ? (int)c->shed_status : 0;
}

static const char *reason(int status)
{
	switch (status) {
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

/* The minimal answer of `status` into head[0, size): its length.  A
 * Retry-After of retry_ns, in whole seconds rounded up, when it is > 0. */
static int answer(char *head, size_t size, int status, int64_t retry_ns,
                  bool close)
{
	int n = snprintf(head, size, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n%s",
	                 status, reason(status),
	                 close ? "Connection: close\r\n" : "");

	if (retry_ns > 0)
		n += snprintf(head + n, size - (size_t)n, "Retry-After: %lld\r\n",
		              (long long)((retry_ns + AGILE_NS_PER_S - 1) /
		                          AGILE_NS_PER_S));
	n += snprintf(head + n, size - (size_t)n, "\r\n");
	return n;
}

/* Turn a connection away: answer it with `status` (0: not at all), a
 * Retry-After of retry_ns when > 0, then close it. */
static void shed(int fd, int status, int64_t retry_ns, int64_t now)
{
	if (status > 0) {
		char head[256];
		int n = answer(head, sizeof(head), status, retry_ns, true);

		(void)agile__libc.send(fd, head, (size_t)n,
		                       MSG_DONTWAIT | MSG_NOSIGNAL);
		/* Say "that was all", and close later (see above). */
		agile__libc.shutdown(fd, SHUT_WR);
		linger(fd, now);
		return;
	}
	agile__libc.close(fd);
}

/* A shed=cpu call admitted at accept that will have no outcome. */
static void fail_shedder(struct agile_state_resilience *z)
{
	struct agile_shedder_ticket ticket = { .open = 1 };

	agile__shlock(&z->shed_lock);
	agile_shedder_fail(&z->shedder, &ticket);
	agile__shunlock(&z->shed_lock);
}

int agile__inbound_accepted(int listen_fd, int fd)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	const struct agile_resilience_config *c;
	struct agile_state_resilience *z;
	struct agile_state_slot *s;
	struct agile_fd *t;
	bool shed_open = false, per_request;
	uint8_t client[17];
	size_t client_len = 0;
	int64_t retry = 0;
	int saved = errno;
	int32_t permit;
	int64_t now;
	int rule;

	if (!agile__destinations_any_listen() ||
	    getsockname(listen_fd, (struct sockaddr *)&local, &len) != 0 ||
	    (rule = agile__destinations_match_listen((struct sockaddr *)&local,
	                                             len)) < 0) {
		errno = saved;
		return 0;
	}
	agile__enter();
	c = &agile__destinations_rule(rule)->resilience;
	s = agile__destinations_slot(rule);
	z = &s->resilience;
	now = agile__now_ns();
	agile__add_u64(&z->accepted, 1);
	if (c->shed_cpu) {
		struct agile_shedder_ticket ticket;
		int32_t cpu = read_cpu(now);

		agile__shlock(&z->shed_lock);
		shed_open = agile_shedder_allow(&z->shedder, now, cpu, &ticket);
		agile__shunlock(&z->shed_lock);
		if (!shed_open) {
			agile__add_u64(&z->shed, 1);
			agile__add_u64(&z->shed_cpu, 1);
			shed(fd, shed_status(c), c->retry_after_ns, now);
			agile__leave();
			errno = saved;
			return -1;
		}
	}
	if (linger_count > 0)
		linger(-1, now);
	if (c->client_rate > 0) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);

		client_len = getpeername(fd, (struct sockaddr *)&peer,
		                         &plen) == 0
		             ? agile__clients_address(c, (struct sockaddr *)&peer,
		                                      plen, client) : 0;
		/* Without proto=http the client's connections are what its
		 * bucket counts. */
		if (c->proto != AGILE_PROTO_HTTP && client_len > 0 &&
		    !agile__clients_admit(z, c, client, client_len, now,
		                          &retry)) {
			if (shed_open)
				fail_shedder(z);
			shed(fd, c->shed_response == AGILE_SHED_HTTP ? 429 : 0,
			     retry, now);
			agile__leave();
			errno = saved;
			return -1;
		}
	}
	/* A server killed with connections open left their permits held by
	 * its pid: they are reclaimed here, or a restarted server would shed
	 * everything. */
	per_request = c->proto == AGILE_PROTO_HTTP;
	permit = per_request ? 0 : agile__permit_try_reclaiming(z, now);
	t = permit > 0 || per_request ? agile__fd_entry(fd) : NULL;
	if (t == NULL) {
		if (shed_open)
			fail_shedder(z);
		if (permit > 0) {
			agile__permit_release(z, permit, 0);
		} else if (!per_request) {
			agile__add_u64(&z->shed, 1);
			shed(fd, shed_status(c), c->retry_after_ns, now);
			agile__leave();
			errno = saved;
			return -1;
		}
		agile__leave();
		errno = saved;
		return 0; /* no table: served, unprotected */
	}
	/* A connection on this number whose close no hook saw. */
	if (__atomic_load_n(&t->inbound_h2, __ATOMIC_ACQUIRE) != 0)
		agile__inbound_h2_close(t);
	__atomic_store_n(&t->tracked, 0, __ATOMIC_RELEASE);
	t->dest = rule;
	t->phase = AGILE_FD_CONNECTED;
	t->request = AGILE_REQ_FREE;
	t->flags = AGILE_FD_INBOUND | (shed_open ? AGILE_FD_SHED_OPEN : 0);
	t->grant_ns = 0;
	t->request_start_ns = 0;
	t->response_ns = 0;
	t->permit = permit;
	t->permit_tid = 0;
	t->conn_id = agile__fd_new_conn_id();
	t->stdio_inode = 0;
	t->peer = 0;
	t->inbound_left = 0;
	t->inbound_head = 0;
	t->inbound_shed = AGILE_INBOUND_KEEP;
	t->inbound_drain = 0;
	t->client_len = (uint8_t)client_len;
	memcpy(t->client, client, client_len);
	__atomic_store_n(&t->tracked, 1, __ATOMIC_RELEASE);
	agile__add_u64(&s->connects, 1);
	agile__leave();
	errno = saved;
	return 0;
}

/* The descriptor of the entry t. */
static int fd_of(const struct agile_fd *t)
{
	return (int)(t - __atomic_load_n(&agile__fd_table, __ATOMIC_ACQUIRE));
}

/* Answer a request read on `t` that gets no permit, in place of the
 * program.  p[0, n) is what the read returned (n of `result` bytes in its
 * first buffer).  The connection is kept when the whole request, and
 * nothing more, was in that read and neither side asked for a close: the
 * program then never sees it.  Otherwise the answer says "Connection:
 * close", the write side is shut and the program reads an end of file
 * (what is left of the request is drained at its close, so that no reset
 * destroys the answer unread). */
static void shed_request(struct agile_fd *t, const char *p, size_t n,
                         ssize_t result, int status, int64_t retry_ns)
{
	struct agile_http_frame f;
	int fd = fd_of(t);
	bool keep;
	char head[256];
	int len;
	ssize_t sent = -1;

	agile__http_frame(p, n, false, &f);
	keep = status > 0 && f.head_len > 0 && !f.close && f.body >= 0 &&
	       (size_t)result == n && f.head_len + (size_t)f.body == n;
	if (status > 0) {
		len = answer(head, sizeof(head), status, retry_ns, !keep);
		sent = agile__libc.send(fd, head, (size_t)len,
		                        MSG_DONTWAIT | MSG_NOSIGNAL);
		/* An answer the socket could not take whole ends the
		 * connection: a client must never read half of one. */
		keep = keep && sent == len;
	}
	if (!keep) {
		agile__libc.shutdown(fd, SHUT_WR);
		__atomic_store_n(&t->inbound_drain, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&t->inbound_shed,
	                 keep ? AGILE_INBOUND_AGAIN : AGILE_INBOUND_END,
	                 __ATOMIC_RELEASE);
}

/* Whether p[0, n) starts an HTTP/1 request line: a method of capitals and
 * a space, and not HTTP/2's preface.  TLS records and HTTP/2 frames are
 * not requests the preload can count or answer. */
static bool http1_request(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && i < 24 && ((p[i] >= 'A' && p[i] <= 'Z') || p[i] == '-'))
		i++;
	if (i == 0 || i >= n || p[i] != ' ')
		return false;
	return !(n >= 14 && memcmp(p, "PRI * HTTP/2.0", 14) == 0);
}

/* proto=http: the request whose first bytes p[0, n) were just read asks
 * its client's bucket (client_rate=), then takes a permit, unless the
 * connection still holds one for a response not yet complete (a
 * pipelined request rides on it).  False: refused, and answered.
 *
 * Bytes that are no HTTP/1 request (a TLS handshake, HTTP/2) take no
 * permit and are served.  A request read through the program's TLS
 * library (tls_plain.h) takes one, but one beyond the limits is served
 * too: the preload cannot answer inside the TLS session. */
static bool admit_request(struct agile_fd *t,
                          const struct agile_resilience_config *c,
                          const char *p, size_t n, ssize_t result)
{
	struct agile_state_slot *s;
	struct agile_http_frame f;
	int32_t permit;
	int64_t now;
	bool plain;

	if (p == NULL || !http1_request(p, n))
		return true;
	plain = __atomic_load_n(&t->tls_plain, __ATOMIC_ACQUIRE) != 0;
	agile__http_frame(p, n, false, &f);
	__atomic_store_n(&t->inbound_head, f.head_method, __ATOMIC_RELEASE);
	agile__enter();
	s = agile__destinations_slot(t->dest);
	now = agile__now_ns();
	if (c->client_rate > 0) {
		const void *key = t->client;
		size_t key_len = t->client_len;
		int64_t retry;

		if (c->client_header[0] != '\0') {
			size_t vlen;
			const char *v = agile__http_header(p, n, c->client_header,
			                                   &vlen);

			if (v != NULL && vlen > 0) {
				key = v;
				key_len = vlen;
			}
		}
		if (key_len > 0 &&
		    !agile__clients_admit(&s->resilience, c, key, key_len, now,
		                          &retry) && !plain) {
			shed_request(t, p, n, result, 429, retry);
			agile__leave();
			return false;
		}
	}
	if (__atomic_load_n(&t->permit, __ATOMIC_ACQUIRE) != 0) {
		agile__leave();
		return true;
	}
	permit = agile__permit_try_reclaiming(&s->resilience, now);
	if (permit > 0) {
		t->permit_tid = agile__thread_id();
		__atomic_store_n(&t->permit, permit, __ATOMIC_RELEASE);
		__atomic_store_n(&t->inbound_left, 0, __ATOMIC_RELEASE);
		agile__leave();
		return true;
	}
	if (plain) {
		agile__leave();
		return true;
	}
	agile__add_u64(&s->resilience.shed, 1);
	shed_request(t, p, n, result, shed_status(c), c->retry_after_ns);
	agile__leave();
	return false;
}

__thread size_t agile__inbound_grown
	__attribute__((tls_model("initial-exec")));

static void settle_shedder(struct agile_fd *t,
                           struct agile_state_resilience *z, bool pass,
                           int64_t start, int64_t now);

/* proto=http: is the connection HTTP/2 (its first read began with the
 * client's preface)?  Then its streams are what the limit counts
 * (inbound_h2.c), and the read is walked there. */
static bool h2_read(struct agile_fd *t, ssize_t result,
                    const struct iovec *iov, int count, size_t asked,
                    bool peek, const void *data, size_t n)
{
	size_t grown;

	if (__atomic_load_n(&t->inbound_h2, __ATOMIC_ACQUIRE) == 0) {
		if (peek || data == NULL ||
		    __atomic_load_n(&t->request, __ATOMIC_ACQUIRE) !=
		    AGILE_REQ_FREE || !agile__h2_preface(data, n) ||
		    !agile__inbound_h2_open(t))
			return false;
		/* shed=cpu admitted the connection; its streams are what is
		 * in flight from here on, so its own call lands now, without
		 * a handling time (it would fly until the close). */
		agile__enter();
		settle_shedder(t, &agile__destinations_slot(t->dest)->resilience,
		               false, 0, agile__now_ns());
		agile__leave();
	} else if (peek) {
		return true; /* its bytes are walked when read */
	}
	grown = agile__inbound_h2_received(t, iov, count, (size_t)result,
	                                   asked);
	if (grown > 0) {
		agile__inbound_grown = grown;
		__atomic_store_n(&t->inbound_shed, AGILE_INBOUND_GROWN,
		                 __ATOMIC_RELEASE);
	}
	return true;
}

void agile__inbound_after_recv(struct agile_fd *t, ssize_t result,
                               const struct iovec *iov, int count,
                               size_t asked, bool peek)
{
	const struct agile_resilience_config *c =
		&agile__destinations_rule(t->dest)->resilience;
	uint8_t expected = AGILE_REQ_FREE;
	const void *data = iov != NULL && count > 0 ? iov[0].iov_base : NULL;
	size_t len = iov != NULL && count > 0 ? iov[0].iov_len : 0;
	size_t n = len < (size_t)result ? len : (size_t)result;

	if (result <= 0)
		return; /* an end of file is settled at close */
	if (c->proto == AGILE_PROTO_HTTP &&
	    h2_read(t, result, iov, count, asked, peek, data, n))
		return;
	/* A peek's bytes are read again: that read is the request's. */
	if (peek && c->proto == AGILE_PROTO_HTTP)
		return;
	if (!__atomic_compare_exchange_n(&t->request, &expected,
	                                 AGILE_REQ_IN_FLIGHT, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return; /* more of a request already started */
	if (c->proto == AGILE_PROTO_HTTP &&
	    !admit_request(t, c, data, n, result)) {
		__atomic_store_n(&t->request, AGILE_REQ_FREE, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&t->request_start_ns, agile__now_ns(),
	                 __ATOMIC_RELEASE);
	if (c->proto == AGILE_PROTO_HTTP) {
		agile__http_request(t, c, data, n);
		/* A CORS preflight is answered from the headers alone: its
		 * handling time says nothing of the server's work. */
		if (n >= 8 && memcmp(data, "OPTIONS ", 8) == 0)
			__atomic_fetch_or(&t->flags, AGILE_FD_EXCLUDED,
			                  __ATOMIC_ACQ_REL);
	}
}

/* proto=http: give the request's permit back, its response complete. */
static void release_request(struct agile_fd *t, struct agile_state_slot *s)
{
	int32_t permit = __atomic_exchange_n(&t->permit, 0, __ATOMIC_ACQ_REL);

	__atomic_store_n(&t->inbound_left, 0, __ATOMIC_RELEASE);
	agile__permit_release(&s->resilience, permit, t->permit_tid);
}

/* proto=http: `result` bytes of a response were written, p[0, n) of them
 * in the first buffer, `first` when they are its first.  The permit goes
 * back once the response is complete by its framing: its Content-Length
 * of body written after the head, a chunked body's last chunk ending a
 * write, at once for a head alone (a HEAD's response, 204, 304); a
 * response framed by the close, or whose head the first write did not
 * hold whole, keeps it until the close. */
static void response_written(struct agile_fd *t, struct agile_state_slot *s,
                             const char *p, size_t n, ssize_t result,
                             bool first)
{
	int64_t left = __atomic_load_n(&t->inbound_left, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&t->permit, __ATOMIC_ACQUIRE) == 0)
		return;
	if (first) {
		struct agile_http_frame f;

		agile__http_frame(p, n, true, &f);
		if (f.head_len == 0 || f.body == AGILE_HTTP_TO_CLOSE)
			left = AGILE_HTTP_TO_CLOSE;
		else if (f.body == AGILE_HTTP_CHUNKED &&
		         !__atomic_load_n(&t->inbound_head, __ATOMIC_ACQUIRE))
			left = AGILE_HTTP_CHUNKED;
		else
			left = (int64_t)f.head_len - result +
			       (__atomic_load_n(&t->inbound_head,
			                        __ATOMIC_ACQUIRE) ||
			        f.body < 0 ? 0 : f.body);
		if (left <= 0 && left != AGILE_HTTP_CHUNKED &&
		    left != AGILE_HTTP_TO_CLOSE) {
			release_request(t, s);
			return;
		}
		__atomic_store_n(&t->inbound_left, left, __ATOMIC_RELEASE);
		if (left != AGILE_HTTP_CHUNKED)
			return;
	}
	if (left == AGILE_HTTP_CHUNKED) {
		/* The last chunk (and an empty trailer) ends the body. */
		if (n == (size_t)result && n >= 5 &&
		    memcmp(p + n - 5, "0\r\n\r\n", 5) == 0)
			release_request(t, s);
	} else if (left > 0) {
		left -= result;
		if (left <= 0)
			release_request(t, s);
		else
			__atomic_store_n(&t->inbound_left, left,
			                 __ATOMIC_RELEASE);
	}
}

/* Settle the connection's shedder call: a pass with the handling time, or
 * a failure. */
static void settle_shedder(struct agile_fd *t, struct agile_state_resilience *z,
                           bool pass, int64_t start, int64_t now)
{
	struct agile_shedder_ticket ticket = { .start_ns = start, .open = 1 };
	uint8_t flags = __atomic_fetch_and(&t->flags,
	                                   (uint8_t)~AGILE_FD_SHED_OPEN,
	                                   __ATOMIC_ACQ_REL);

	if (!(flags & AGILE_FD_SHED_OPEN))
		return;
	agile__shlock(&z->shed_lock);
	if (pass)
		agile_shedder_pass(&z->shedder, &ticket, now);
	else
		agile_shedder_fail(&z->shedder, &ticket);
	agile__shunlock(&z->shed_lock);
}

void agile__inbound_before_send(struct agile_fd *t, const struct iovec *iov,
                                int count, size_t *limit)
{
	if (__atomic_load_n(&t->inbound_h2, __ATOMIC_ACQUIRE) != 0)
		agile__inbound_h2_before_send(t, iov, count, limit);
}

void agile__inbound_dup(const struct agile_fd *from, struct agile_fd *to)
{
	agile__inbound_h2_dup(from, to);
}

void agile__inbound_after_send(struct agile_fd *t, ssize_t result,
                               const struct iovec *iov, int count)
{
	const struct agile_resilience_config *c;
	struct agile_state_slot *s;
	int64_t start, now, took;
	uint8_t flags;
	int status;
	const void *data = iov != NULL && count > 0 ? iov[0].iov_base : NULL;
	size_t len = iov != NULL && count > 0 ? iov[0].iov_len : 0;

	if (__atomic_load_n(&t->inbound_h2, __ATOMIC_ACQUIRE) != 0) {
		agile__inbound_h2_sent(t, iov, count, result);
		return;
	}
	if (result <= 0)
		return;
	if (__atomic_load_n(&t->request, __ATOMIC_ACQUIRE) !=
	    AGILE_REQ_IN_FLIGHT) {
		/* More of a response whose first bytes ended its request. */
		if (__atomic_load_n(&t->inbound_left, __ATOMIC_ACQUIRE) != 0) {
			agile__enter();
			response_written(t, agile__destinations_slot(t->dest),
			                 data, len < (size_t)result
			                       ? len : (size_t)result,
			                 result, false);
			agile__leave();
		}
		return;
	}
	/* "100 Continue" before the client sends its body (Python's
	 * http.server writes it for any request that expects it) is no
	 * response: the handling runs on to the final one, as track.c's
	 * outbound requests do. */
	if (len >= (size_t)result && agile__http_interim(data, (size_t)result))
		return;
	start = __atomic_exchange_n(&t->request_start_ns, 0, __ATOMIC_ACQ_REL);
	if (start == 0)
		return;
	__atomic_store_n(&t->request, AGILE_REQ_FREE, __ATOMIC_RELEASE);
	agile__enter();
	c = &agile__destinations_rule(t->dest)->resilience;
	s = agile__destinations_slot(t->dest);
	now = agile__now_ns();
	took = now - start;
	flags = __atomic_fetch_and(&t->flags, (uint8_t)~AGILE_FD_EXCLUDED,
	                           __ATOMIC_ACQ_REL);
	status = c->proto == AGILE_PROTO_HTTP ? agile__http_status(data, len < (size_t)result
	                                            ? len : (size_t)result)
	                 : 0;
	settle_shedder(t, &s->resilience, true, start, now);
	if (c->proto == AGILE_PROTO_HTTP)
		response_written(t, s, data, len < (size_t)result
		                             ? len : (size_t)result,
		                 result, true);
	if (flags & AGILE_FD_EXCLUDED) {
		agile__add_u64(&s->resilience.http_excluded, 1);
	} else if (c->proto == AGILE_PROTO_HTTP &&
	           agile__http_in_list(c, AGILE_STATUS_IGNORE, status)) {
		agile__add_u64(&s->resilience.http_ignored, 1);
	} else if (c->proto == AGILE_PROTO_HTTP &&
	           !agile__http_in_list(c, AGILE_STATUS_OVERLOAD, status) &&
	           !agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, status) &&
	           agile__http_cache_hit(c, data, len < (size_t)result
	                                          ? len : (size_t)result)) {
		/* Answered from a cache: not the work being protected. */
		agile__add_u64(&s->resilience.http_cache_hits, 1);
	} else if (c->proto == AGILE_PROTO_HTTP &&
	           (agile__http_in_list(c, AGILE_STATUS_OVERLOAD, status) ||
	            agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, status))) {
		/* The server turned the request away, or could not reach what
		 * it needed: whatever it took, no handling time of the work. */
		agile__add_u64(&s->unreachable, 1);
		agile__conc_outcome(&s->resilience, AGILE_OUTCOME_UNREACHABLE, 0,
		                    now);
	} else if (status >= 500 &&
	           (agile_conc_config(&s->resilience.core)->slo_ns <= 0 ||
	            took < agile_conc_config(&s->resilience.core)->slo_ns)) {
		/* A fast 5xx: the server failing fast, not a fast server. */
		agile__add_u64(&s->resilience.http_5xx, 1);
		agile__add_u64(&s->unreachable, 1);
		agile__conc_outcome(&s->resilience, AGILE_OUTCOME_UNREACHABLE, 0,
		                    now);
	} else {
		agile__conc_outcome(&s->resilience, AGILE_OUTCOME_ANSWERED, took,
		                    now);
	}
	agile__leave();
}

void agile__inbound_close(struct agile_fd *t)
{
	struct agile_state_slot *s;
	int64_t start, now;

	agile__enter();
	agile__inbound_h2_close(t);
	s = agile__destinations_slot(t->dest);
	now = agile__now_ns();
	start = __atomic_exchange_n(&t->request_start_ns, 0, __ATOMIC_ACQ_REL);
	if (start != 0 && __atomic_load_n(&t->request, __ATOMIC_ACQUIRE) ==
	    AGILE_REQ_IN_FLIGHT) {
		agile__add_u64(&s->truncated, 1);
		agile__conc_outcome(&s->resilience, AGILE_OUTCOME_TRUNCATED,
		                    now - start, now);
	}
	settle_shedder(t, &s->resilience, false, start, now);
	agile__resilience_close(t); /* the permit */
	if (__atomic_exchange_n(&t->inbound_drain, 0, __ATOMIC_ACQ_REL)) {
		char buf[4096];

		/* The rest of a request answered and shut (shed_request). */
		while (agile__libc.recv(fd_of(t), buf, sizeof(buf),
		                        MSG_DONTWAIT) > 0)
			;
	}
	agile__leave();
}
