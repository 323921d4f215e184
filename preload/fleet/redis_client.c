/*
 * redis_client.c - the preload's Redis connection (see redis_client.h).
 *
 * Each call is one or more round trips, each of which sends what is queued
 * in `out` and reads replies into `in` until the deadline.  Nothing is kept
 * between calls but the connection and the scripts' SHA1s: a reply that
 * arrives after its deadline would be mistaken for the next call's, so a
 * timed-out connection is dropped, never reused.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "redis_client.h"
#include "symbols.h"

/*
 * The lowest descriptor number the connection is moved to: well above what
 * programs allocate in practice, yet below 256.  Past the descriptor table
 * a process starts with, the kernel grows the table, and in a threaded
 * process that waits for an RCU grace period: moving to 4032 measured
 * 8-15 ms on the first call, moving to 200 a few microseconds.
 */
#define HIGH_FD_BASE 200

/* Say why in c->error; returns rc. */
__attribute__((format(printf, 3, 4)))
static int fail(struct agile_redis *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	return rc;
}

void agile__redis_init(struct agile_redis *c, const struct agile_redis_addr *addr,
                      const char *const *scripts, int count)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->addr = *addr;
	c->scripts = scripts;
	c->script_count = count < AGILE_REDIS_SCRIPTS_MAX
	                  ? count : AGILE_REDIS_SCRIPTS_MAX;
}

/* Whether fd is still the socket we made (same device and inode). */
static bool still_ours(const struct agile_redis *c)
{
	struct stat st;

	return c->fd >= 0 && fstat(c->fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
	       (uint64_t)st.st_dev == c->dev && (uint64_t)st.st_ino == c->ino;
}

void agile__redis_drop(struct agile_redis *c)
{
	if (c->fd >= 0 && still_ours(c))
		agile__libc.close(c->fd);
	c->fd = -1;
	c->out_len = 0;
	c->in_len = 0;
}

/* Wait for `events` on the connection until the deadline (ppoll: to the
 * nanosecond, so a 50 ms timeout is 50 ms, not 51). */
static int wait_for(struct agile_redis *c, short events, int64_t deadline_ns)
{
	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = events };
		int64_t left = deadline_ns - agile__now_ns();
		struct timespec ts;
		int rc;

		if (left <= 0)
			return -ETIMEDOUT;
		ts.tv_sec = left / AGILE_NS_PER_S;
		ts.tv_nsec = left % AGILE_NS_PER_S;
		rc = ppoll(&p, 1, &ts, NULL);
		if (rc > 0)
			return 0;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int map_buffers(struct agile_redis *c)
{
	char *p;

	if (c->out != NULL)
		return 0;
	p = mmap(NULL, 2 * AGILE_REDIS_BUFFER, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	c->out = p;
	c->in = p + AGILE_REDIS_BUFFER;
	return 0;
}

/* The address as sockaddrs, resolved once per process.  A numeric
 * address costs nothing; a name costs one lookup, through the real
 * getaddrinfo (not the program's hook), the first time, and its first few
 * addresses are tried in turn ("localhost" is often ::1 first, and a
 * Redis bound to 127.0.0.1 refuses it). */
static int resolve(struct agile_redis *c)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char port[8];
	int rc;

	if (c->sa_count > 0)
		return 0;
	if (c->addr.path[0] != '\0') {
		struct sockaddr_un *un = (struct sockaddr_un *)&c->sa[0];

		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, c->addr.path, strlen(c->addr.path) + 1);
		c->sa_len[0] = sizeof(*un);
		c->sa_count = 1;
		return 0;
	}
	snprintf(port, sizeof(port), "%u", (unsigned)c->addr.port);
	hints.ai_flags = AI_NUMERICSERV;
	rc = agile__libc.getaddrinfo(c->addr.host, port, &hints, &res);
	if (rc != 0 || res == NULL)
		return fail(c, -EHOSTUNREACH, "cannot resolve %.100s (%s)",
		            c->addr.host, gai_strerror(rc));
	for (struct addrinfo *ai = res;
	     ai != NULL && c->sa_count < AGILE_REDIS_ADDRESSES; ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof(c->sa[0]))
			continue;
		memcpy(&c->sa[c->sa_count], ai->ai_addr, ai->ai_addrlen);
		c->sa_len[c->sa_count++] = ai->ai_addrlen;
	}
	freeaddrinfo(res);
	return c->sa_count > 0 ? 0 : fail(c, -EHOSTUNREACH, "%.100s has no "
	                                  "usable address", c->addr.host);
}

/* Move fd to a high number, close-on-exec; returns the descriptor to use. */
static int move_high(int fd)
{
	struct rlimit rl;
	int base, high;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return fd;
	base = HIGH_FD_BASE;
	if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)base + 8 > rl.rlim_cur)
		base = (int)rl.rlim_cur - 8;
	if (base <= fd)
		return fd;
	high = agile__libc.fcntl(fd, F_DUPFD_CLOEXEC, base);
	if (high < 0)
		return fd;
	agile__libc.close(fd);
	return high;
}

/* Connect to address i of c, by the deadline. */
static int connect_to(struct agile_redis *c, int i, int64_t deadline_ns)
{
	const struct sockaddr_storage *sa = &c->sa[i];
	struct stat st;
	int fd, rc, error = 0;
	socklen_t len = sizeof(error);
	int one = 1;

	fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	            0);
	if (fd < 0)
		return fail(c, -errno, "socket: %s", strerror(errno));
	c->fd = move_high(fd);
	if (sa->ss_family != AF_UNIX)
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (fstat(c->fd, &st) != 0) {
		rc = -errno;
		agile__libc.close(c->fd);
		c->fd = -1;
		return fail(c, rc, "fstat: %s", strerror(-rc));
	}
	c->dev = (uint64_t)st.st_dev;
	c->ino = (uint64_t)st.st_ino;
	c->pid = (int32_t)getpid();
	rc = agile__libc.connect(c->fd, (const struct sockaddr *)sa,
	                         c->sa_len[i]);
	if (rc != 0 && errno != EINPROGRESS && errno != EAGAIN) {
		rc = -errno;
		agile__redis_drop(c);
		return fail(c, rc, "connect: %s", strerror(-rc));
	}
	if (rc != 0) {
		rc = wait_for(c, POLLOUT, deadline_ns);
		if (rc == 0 && agile__libc.getsockopt(c->fd, SOL_SOCKET, SO_ERROR,
		                                      &error, &len) == 0 &&
		    error != 0)
			rc = -error;
		if (rc < 0) {
			agile__redis_drop(c);
			return fail(c, rc, "connect: %s", rc == -ETIMEDOUT
			            ? "timed out" : strerror(-rc));
		}
	}
	c->connects++;
	return 0;
}

static int open_socket(struct agile_redis *c, int64_t deadline_ns)
{
	int rc = resolve(c);

	for (int i = 0; rc == 0 && i < c->sa_count; i++) {
		rc = connect_to(c, i, deadline_ns);
		if (rc == 0 || rc == -ETIMEDOUT)
			return rc;
		if (i + 1 < c->sa_count)
			rc = 0; /* refused or unreachable: the next address */
	}
	return rc;
}

static int queue(struct agile_redis *c, int argc, const char *const *argv,
                 const size_t *lens)
{
	if (agile__resp_command(c->out, AGILE_REDIS_BUFFER, &c->out_len, argc,
	                       argv, lens) < 0)
		return fail(c, -E2BIG, "command larger than %d bytes",
		            AGILE_REDIS_BUFFER);
	return 0;
}

/* Why a step failed, in c->error, and the connection dropped: its stream
 * position is unknown.  Returns rc. */
static int broken(struct agile_redis *c, int rc)
{
	fail(c, rc, "%s", rc == -ETIMEDOUT ? "timed out" :
	     rc == -ECONNRESET ? "connection closed by Redis" : strerror(-rc));
	agile__redis_drop(c);
	return rc;
}

/* Send everything queued in c->out by the deadline. */
static int send_queued(struct agile_redis *c, int64_t deadline_ns)
{
	size_t sent = 0;
	int rc;

	while (sent < c->out_len) {
		ssize_t n = agile__libc.send(c->fd, c->out + sent,
		                             c->out_len - sent,
		                             MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			rc = wait_for(c, POLLOUT, deadline_ns);
			if (rc < 0)
				return broken(c, rc);
			continue;
		}
		return broken(c, n < 0 ? -errno : -EPIPE);
	}
	c->out_len = 0;
	return 0;
}

/*
 * Read until `count` replies are complete in c->in, into c->reply[].  The
 * bytes already read are parsed again from the start on every call, so a
 * caller may stop (wait false: -EAGAIN when bytes are missing) and come
 * back later.  On any failure the connection is dropped.
 */
static int read_replies(struct agile_redis *c, int count, int64_t deadline_ns,
                        bool wait)
{
	for (;;) {
		size_t parsed = 0, nodes = 0;
		int got = 0, rc;
		ssize_t n = 1;

		while (got < count) {
			size_t used = 0;

			n = agile__resp_parse(c->in + parsed, c->in_len - parsed,
			                     c->nodes + nodes,
			                     AGILE_REDIS_NODES - nodes, &used);
			if (n <= 0)
				break;
			c->reply[got++] = &c->nodes[nodes];
			nodes += used;
			parsed += (size_t)n;
		}
		if (got == count)
			return 0;
		if (n < 0) {
			fail(c, -EPROTO, n == -ENOSPC ? "reply too large"
			                              : "reply is not RESP");
			agile__redis_drop(c);
			return -EPROTO;
		}
		if (c->in_len == AGILE_REDIS_BUFFER) {
			fail(c, -EPROTO, "reply longer than %d bytes",
			     AGILE_REDIS_BUFFER);
			agile__redis_drop(c);
			return -EPROTO;
		}
		n = agile__libc.recv(c->fd, c->in + c->in_len,
		                     AGILE_REDIS_BUFFER - c->in_len,
		                     MSG_DONTWAIT);
		if (n > 0) {
			c->in_len += (size_t)n;
			continue;
		}
		if (n == 0)
			return broken(c, -ECONNRESET);
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return broken(c, -errno);
		if (!wait) {
			if (agile__now_ns() >= deadline_ns)
				return broken(c, -ETIMEDOUT);
			return -EAGAIN;
		}
		rc = wait_for(c, POLLIN, deadline_ns);
		if (rc < 0)
			return broken(c, rc);
	}
}

/* One round trip: send what is queued, read `count` replies. */
static int exchange(struct agile_redis *c, int count, int64_t deadline_ns)
{
	int rc;

	c->in_len = 0;
	c->round_trips++;
	rc = send_queued(c, deadline_ns);
	return rc < 0 ? rc : read_replies(c, count, deadline_ns, true);
}

/* The text of an error reply, for c->error (without the full stop some
 * end with: it goes into a sentence). */
static int remote_error(struct agile_redis *c, const struct agile_resp *r)
{
	size_t len = r->len < 120 ? r->len : 120;

	while (len > 0 && r->str[len - 1] == '.')
		len--;
	return fail(c, -EREMOTE, "%.*s", (int)len, r->str);
}

/* AUTH, SELECT and SCRIPT LOAD of every script, in one round trip. */
static int handshake(struct agile_redis *c, int64_t deadline_ns)
{
	char db[16];
	int count = 0, rc;

	if (c->addr.password[0] != '\0') {
		const char *auth[3] = { "AUTH", c->addr.username,
		                        c->addr.password };

		if (c->addr.username[0] != '\0')
			rc = queue(c, 3, auth, NULL);
		else
			rc = queue(c, 2, (const char *[]){ "AUTH",
			                                   c->addr.password },
			           NULL);
		if (rc < 0)
			return rc;
		count++;
	}
	if (c->addr.db != 0) {
		snprintf(db, sizeof(db), "%d", c->addr.db);
		if ((rc = queue(c, 2, (const char *[]){ "SELECT", db }, NULL)) < 0)
			return rc;
		count++;
	}
	for (int i = 0; i < c->script_count; i++) {
		const char *load[3] = { "SCRIPT", "LOAD", c->scripts[i] };

		if ((rc = queue(c, 3, load, NULL)) < 0)
			return rc;
	}
	rc = exchange(c, count + c->script_count, deadline_ns);
	if (rc < 0)
		return rc;
	for (int i = 0; i < count + c->script_count; i++) {
		const struct agile_resp *r = c->reply[i];

		if (r->type == AGILE_RESP_ERROR) {
			remote_error(c, r);
			agile__redis_drop(c);
			return -EREMOTE;
		}
		if (i >= count) {
			if (r->type != AGILE_RESP_BULK || r->len != 40) {
				agile__redis_drop(c);
				return fail(c, -EPROTO, "SCRIPT LOAD did not "
				            "answer a SHA1");
			}
			memcpy(c->sha[i - count], r->str, 40);
			c->sha[i - count][40] = '\0';
		}
	}
	return 0;
}

static int ensure_connected(struct agile_redis *c, int64_t deadline_ns)
{
	int rc;

	if (c->fd >= 0 && (c->pid != (int32_t)getpid() || !still_ours(c)))
		agile__redis_drop(c); /* forked, or the program took the fd */
	if (c->fd >= 0)
		return 0;
	rc = map_buffers(c);
	if (rc < 0)
		return fail(c, rc, "no memory for buffers");
	rc = open_socket(c, deadline_ns);
	if (rc < 0)
		return rc;
	return handshake(c, deadline_ns);
}

/* "MOVED 3999 127.0.0.1:6381": point the connection at that node. */
static int follow_moved(struct agile_redis *c, const struct agile_resp *r)
{
	char text[160];
	const char *addr, *colon;
	unsigned int port;

	if (r->len >= sizeof(text))
		return -EPROTO;
	memcpy(text, r->str, r->len);
	text[r->len] = '\0';
	addr = strrchr(text, ' ');
	colon = addr != NULL ? strrchr(addr, ':') : NULL;
	if (colon == NULL || sscanf(colon + 1, "%u", &port) != 1 ||
	    port == 0 || port > 65535 ||
	    (size_t)(colon - addr - 1) >= sizeof(c->addr.host))
		return -EPROTO;
	agile__redis_drop(c);
	memcpy(c->addr.host, addr + 1, (size_t)(colon - addr - 1));
	c->addr.host[colon - addr - 1] = '\0';
	c->addr.port = (uint16_t)port;
	c->addr.path[0] = '\0';
	c->sa_count = 0;
	return 0;
}

/* Queue an EVALSHA of `script` on a connected c. */
static int queue_eval(struct agile_redis *c, int script, int nkeys,
                      const char *const *keys, int nargs,
                      const char *const *args, const size_t *lens)
{
	const char *argv[3 + 16 + 24];
	size_t argl[3 + 16 + 24];
	char nk[16];
	int argc = 0;

	if (script < 0 || script >= c->script_count || nkeys > 16 || nargs > 24)
		return fail(c, -EINVAL, "bad call");
	snprintf(nk, sizeof(nk), "%d", nkeys);
	argv[argc] = "EVALSHA";
	argl[argc++] = (size_t)-1;
	argv[argc] = c->sha[script];
	argl[argc++] = (size_t)-1;
	argv[argc] = nk;
	argl[argc++] = (size_t)-1;
	for (int i = 0; i < nkeys; i++) {
		argv[argc] = keys[i];
		argl[argc++] = (size_t)-1;
	}
	for (int i = 0; i < nargs; i++) {
		argv[argc] = args[i];
		argl[argc++] = lens != NULL ? lens[i] : (size_t)-1;
	}
	return queue(c, argc, argv, argl);
}

/* An error reply the next call can cure by itself: NOSCRIPT (Redis lost
 * its scripts: drop, and the next connection loads them) or MOVED (point
 * the connection at the slot's node).  Returns 1 when it was one. */
static int cure(struct agile_redis *c, const struct agile_resp *r)
{
	if (agile__resp_is_error(r, "NOSCRIPT")) {
		agile__redis_drop(c);
		return 1;
	}
	if (agile__resp_is_error(r, "MOVED") && follow_moved(c, r) == 0)
		return 1;
	return 0;
}

int agile__redis_eval(struct agile_redis *c, int script, int nkeys,
                     const char *const *keys, int nargs,
                     const char *const *args, const size_t *lens,
                     const struct agile_resp **out, int64_t deadline_ns)
{
	int rc;

	for (int attempt = 0; attempt <= AGILE_REDIS_REDIRECTS; attempt++) {
		const struct agile_resp *r;

		rc = ensure_connected(c, deadline_ns);
		if (rc < 0)
			return rc;
		if ((rc = queue_eval(c, script, nkeys, keys, nargs, args,
		                     lens)) < 0)
			return rc;
		if ((rc = exchange(c, 1, deadline_ns)) < 0)
			return rc;
		r = c->reply[0];
		if (cure(c, r))
			continue;
		if (r->type == AGILE_RESP_ERROR)
			return remote_error(c, r);
		*out = r;
		return 0;
	}
	return fail(c, -ELOOP, "more than %d redirections",
	            AGILE_REDIS_REDIRECTS);
}

int agile__redis_eval_send(struct agile_redis *c, int script, int nkeys,
                          const char *const *keys, int nargs,
                          const char *const *args, const size_t *lens,
                          int64_t deadline_ns)
{
	int rc = ensure_connected(c, deadline_ns);

	if (rc < 0)
		return rc;
	if ((rc = queue_eval(c, script, nkeys, keys, nargs, args, lens)) < 0)
		return rc;
	c->in_len = 0;
	c->round_trips++;
	return send_queued(c, deadline_ns);
}

int agile__redis_eval_collect(struct agile_redis *c,
                             const struct agile_resp **out,
                             int64_t deadline_ns, bool wait)
{
	const struct agile_resp *r;
	int rc;

	if (c->fd < 0)
		return fail(c, -ENOTCONN, "not connected");
	rc = read_replies(c, 1, deadline_ns, wait);
	if (rc < 0)
		return rc;
	r = c->reply[0];
	if (cure(c, r))
		return -ESTALE;
	if (r->type == AGILE_RESP_ERROR)
		return remote_error(c, r);
	*out = r;
	return 0;
}
