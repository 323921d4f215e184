/*
 * hosts_fallback.c - the fallback lookup of configured host names (see
 * hosts_fallback.h): in a thread of its own, never on a connect's path
 * for longer than FALLBACK_WAIT_NS, never under a lock fork() takes.
 *
 * A host-name rule matches the addresses the program's own lookups
 * returned (hooks_dns.c).  A program that connects before it has looked
 * the name up (curl resolves "localhost" by itself) would match nothing,
 * so at the first connect that matches no rule the configured names are
 * resolved once.  That lookup used to run on the connect itself, under
 * learn_lock: with a resolver that never answers, a connect to an address
 * no rule names took 10 s instead of 0.02 s, a non-blocking connect()
 * blocked as long, and a fork() in another thread waited 9.5 s for the
 * lock its handler takes (issue 16, item 3; tests/preload/dns_stall.sh).
 *
 * Now the names are first looked for in /etc/hosts, on the connect
 * itself: a file read, never the network, and what "localhost" needs.
 * Then the full lookup runs in a thread the preload starts (all signals
 * blocked in it, so the program's handlers never run there; its own calls
 * pass through the hooks), and each answer is learnt under learn_lock
 * alone, for microseconds.  A blocking connect made before it ends waits
 * for it until FALLBACK_WAIT_NS after it started, a non-blocking one not
 * at all, and each then goes on matched or not; a name only DNS knows is
 * learnt when its answer comes, for the connections after.  A fork()
 * child inherits no thread: a lookup its parent had running is started
 * again there when needed.
 *
 * Rejected: getaddrinfo_a(3), which starts a thread just the same and
 * gives no way to learn each answer as it comes; a lookup with a timeout
 * of our own (res_query), which would bypass nsswitch.conf and
 * /etc/hosts.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "destinations.h"
#include "hosts_fallback.h"
#include "log.h"
#include "symbols.h"

/* How long a connect may wait for the fallback lookup, counted from the
 * lookup's start: 20 ms, once per process at most. */
#define FALLBACK_WAIT_NS (20 * 1000 * 1000LL)

enum { LOOKUP_NONE, LOOKUP_RUNNING, LOOKUP_DONE };

/* lookup_lock guards lookup_state and lookup_started_ns, and lookup_done
 * is signalled under it when the lookup ends.  Held for no call that can
 * block; a fork child gets fresh ones (agile__hosts_fallback_atfork_child). */
static pthread_mutex_t lookup_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lookup_done;
static pthread_once_t cond_once = PTHREAD_ONCE_INIT;
static bool cond_ready;
static int lookup_state;
static int64_t lookup_started_ns;

/* The condition variable waits on the monotonic clock, as agile__now_ns
 * reads it. */
static void cond_init(void)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&lookup_done, &attr);
	pthread_condattr_destroy(&attr);
	cond_ready = true;
}

/* The connect asking (agile__hosts_fallback_connecting), or -1. */
static __thread int connecting_fd __attribute__((tls_model("initial-exec"))) = -1;

void agile__hosts_fallback_connecting(int fd)
{
	connecting_fd = fd;
}

/* Is `name` (from /etc/hosts) the host of an enabled host-name rule,
 * compared as agile__rules_learn compares: without case or trailing dot? */
static const char *configured(const char *name)
{
	const struct agile_rules *rules = agile__dest_rules;
	size_t n = strlen(name);

	if (n > 0 && name[n - 1] == '.')
		n--;
	for (int i = 0; i < rules->count; i++) {
		const struct agile_rule *r = &rules->rule[i];

		if (r->enabled && r->kind == AGILE_DEST_HOST &&
		    strlen(r->host) == n && strncasecmp(r->host, name, n) == 0)
			return r->host;
	}
	return NULL;
}

/* One line of /etc/hosts: an address, then its names, then a comment. */
static void hosts_line(char *line)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char *save = NULL, *word;
	char *hash = strchr(line, '#');

	if (hash != NULL)
		*hash = '\0';
	word = strtok_r(line, " \t\r", &save);
	if (word == NULL)
		return;
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, word,
	              &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, word,
	                     &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		len = sizeof(struct sockaddr_in6);
	} else {
		return;
	}
	while ((word = strtok_r(NULL, " \t\r", &save)) != NULL) {
		const char *host = configured(word);

		if (host != NULL)
			agile__destinations_learn_address(
				host, (const struct sockaddr *)&ss, len);
	}
}

/* The configured names /etc/hosts gives addresses for, learnt at once:
 * what getaddrinfo's "files" source would answer, read directly (the
 * first 64 KiB), so that no lookup that may reach a resolver runs here.
 * Run by the one connect that starts the lookup (no lock: a fork child
 * that starts it again is that process's one). */
static void learn_from_hosts_file(void)
{
	static char text[65536];
	int fd = open("/etc/hosts", O_RDONLY | O_CLOEXEC);
	size_t used = 0;
	ssize_t n;

	if (fd < 0)
		return;
	while (used < sizeof(text) - 1 &&
	       (n = agile__libc.read(fd, text + used,
	                             sizeof(text) - 1 - used)) > 0)
		used += (size_t)n;
	agile__libc.close(fd);
	text[used] = '\0';
	for (char *line = text, *next; line != NULL; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		hosts_line(line);
	}
}

/* May the connect asking wait for the lookup: not a non-blocking one. */
static bool may_wait(void)
{
	int flags;

	if (connecting_fd < 0)
		return true;
	flags = agile__libc.fcntl(connecting_fd, F_GETFL);
	return flags < 0 || !(flags & O_NONBLOCK);
}

static void resolve_one(const char *host)
{
	struct addrinfo hints, *res = NULL;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = agile__libc.getaddrinfo(host, NULL, &hints, &res);
	/* Learnt (or counted unreachable) as the program's own lookup
	 * would be, under learn_lock for the learning only. */
	agile__destinations_learn_addrinfo(host, rc == 0 ? res : NULL, rc);
	if (rc != 0)
		agile__log(AGILE_LOG_WARN, "cannot resolve host \"%s\" (%s); "
		           "its connections count as unreachable until the "
		           "program resolves it", host, gai_strerror(rc));
	if (res != NULL)
		freeaddrinfo(res);
}

static void *lookup_thread(void *arg)
{
	const struct agile_rules *rules = agile__dest_rules;

	(void)arg;
	agile__enter();
	for (int i = 0; i < rules->count; i++) {
		const struct agile_rule *r = &rules->rule[i];

		if (r->enabled && r->kind == AGILE_DEST_HOST &&
		    __atomic_load_n(&r->host_addr_count, __ATOMIC_ACQUIRE) == 0)
			resolve_one(r->host);
	}
	pthread_mutex_lock(&lookup_lock);
	lookup_state = LOOKUP_DONE;
	pthread_cond_broadcast(&lookup_done);
	pthread_mutex_unlock(&lookup_lock);
	agile__leave();
	return NULL;
}

/* Start the lookup thread; under lookup_lock.  False when it cannot be. */
static bool start_lookup(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t thread;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&thread, &attr, lookup_thread, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		agile__log(AGILE_LOG_INFO, "cannot start the host name lookup "
		           "(%s); names are learnt from the program's own "
		           "lookups only", strerror(rc));
		return false;
	}
	return true;
}

bool agile__hosts_fallback_wait(void)
{
	int saved = errno;
	bool done;

	bool first = false, wait;

	pthread_once(&cond_once, cond_init);
	pthread_mutex_lock(&lookup_lock);
	if (lookup_state == LOOKUP_NONE) {
		lookup_started_ns = agile__now_ns();
		lookup_state = LOOKUP_RUNNING;
		first = true;
	}
	pthread_mutex_unlock(&lookup_lock);
	if (first) {
		/* Outside lookup_lock: a file read, but a read all the same. */
		agile__enter();
		learn_from_hosts_file();
		agile__leave();
		pthread_mutex_lock(&lookup_lock);
		if (!start_lookup())
			lookup_state = LOOKUP_DONE;
		pthread_mutex_unlock(&lookup_lock);
	}
	wait = may_wait();
	pthread_mutex_lock(&lookup_lock);
	while (wait && lookup_state == LOOKUP_RUNNING) {
		int64_t deadline = lookup_started_ns + FALLBACK_WAIT_NS;
		struct timespec until = {
			.tv_sec = (time_t)(deadline / 1000000000LL),
			.tv_nsec = (long)(deadline % 1000000000LL)
		};

		if (agile__now_ns() >= deadline ||
		    pthread_cond_timedwait(&lookup_done, &lookup_lock,
		                           &until) == ETIMEDOUT)
			break;
	}
	done = lookup_state == LOOKUP_DONE;
	pthread_mutex_unlock(&lookup_lock);
	errno = saved;
	/* What /etc/hosts gave is learnt already: match again anyway. */
	return done || first;
}

bool agile__hosts_fallback_done(void)
{
	return __atomic_load_n(&lookup_state, __ATOMIC_ACQUIRE) == LOOKUP_DONE;
}

void agile__hosts_fallback_atfork_child(void)
{
	/* The thread, and whoever held the lock, stayed in the parent. */
	pthread_mutex_init(&lookup_lock, NULL);
	if (cond_ready)
		cond_init();
	if (lookup_state == LOOKUP_RUNNING)
		lookup_state = LOOKUP_NONE;
}
