/*
 * pacer.c - pacing the connections of programs LD_PRELOAD cannot reach.
 *
 * A statically linked program runs no dynamic loader, and a Go program
 * makes its socket calls as system calls of its own: neither calls libc's
 * connect(), so the hooks never see them.  `agilerun --seccomp` installs a
 * seccomp filter in the command's process before it execs, which hands
 * every connect(2) of the command and of everything it starts to a
 * supervisor (seccomp_unotify(2)), and this is that supervisor: a process
 * of its own that loads this library (libagilepacer.so: the preload's base,
 * its destinations, state file and fleet, without the hooks), reads each
 * connect's address out of the caller's memory, matches it against the same AGILE_DEST_ rules, takes
 * the connection's grant from the same slot of the same state file as the
 * preload would, and lets the call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE)
 * when the grant is due.  The budget is therefore shared with every
 * preloaded process, and `agilestat` counts these connections as its own.
 *
 * What it cannot do, and says in agilerun(1): it sees the connect and
 * nothing after it, so it paces connections, not the requests on a
 * kept-alive one, measures no round trip and cannot tell a refused
 * connection from an accepted one; the controller holds its rate for
 * these (no samples) unless preloaded processes feed it.
 *
 * A process under the filter that has the preload loaded (a dynamically
 * linked child, LD_PRELOAD being inherited) paces the connects it makes
 * through libc itself, and marks them (AGILE_PACER_MARK, symbols.c): the
 * filter lets those through without asking, or each such connection would
 * take two grants.  A Go program's own connects carry no mark, preload or
 * not, and come here.  The pacer waits for grants with a heap of due times
 * and one ppoll(), so one slow destination never holds up another's
 * connects.  It stops when the filter has no process left (POLLHUP on the
 * listener).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "log.h"
#include "pacer.h"
#include "process.h"
#include "state.h"
#include "symbols.h"

/* A connect held until its grant is due, and the thread that made it. */
struct held {
	int64_t due_ns;
	uint64_t id;
	pid_t tid;
};

/* The held connects, a binary min-heap on due_ns. */
static struct held *heap;
static size_t heap_count, heap_cap;

/* Queue `h`; false when there is no memory to, and it must go on now. */
static bool heap_push(struct held h)
{
	size_t i;

	if (heap_count == heap_cap) {
		size_t cap = heap_cap != 0 ? heap_cap * 2 : 64;
		struct held *grown = realloc(heap, cap * sizeof(*grown));

		if (grown == NULL)
			return false;
		heap = grown;
		heap_cap = cap;
	}
	i = heap_count++;
	while (i > 0 && heap[(i - 1) / 2].due_ns > h.due_ns) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = h;
	return true;
}

/* Make held connect `i` due now: it moves to the top, the heap stays one. */
static void heap_hurry(size_t i)
{
	struct held h = heap[i];

	h.due_ns = 0;
	while (i > 0) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[0] = h;
}

static struct held heap_pop(void)
{
	struct held top = heap[0], last = heap[--heap_count];
	size_t i = 0;

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= heap_count)
			break;
		if (child + 1 < heap_count &&
		    heap[child + 1].due_ns < heap[child].due_ns)
			child++;
		if (heap[child].due_ns >= last.due_ns)
			break;
		heap[i] = heap[child];
		i = child;
	}
	if (heap_count > 0)
		heap[i] = last;
	return top;
}

/* The seccomp listener, and the response buffer, sized as the kernel says. */
static int pacer_listener = -1;
static struct seccomp_notif_resp *resp;
static size_t resp_size;

/* Let the connect with notification `id` go on.  ENOENT: its caller is
 * gone or was interrupted meanwhile, and there is nothing to let go. */
static void release(uint64_t id)
{
	memset(resp, 0, resp_size);
	resp->id = id;
	resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	while (ioctl(pacer_listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0 &&
	       errno == EINTR)
		continue;
}

/* pidfd_open's flag for a thread's own pidfd (Linux 6.9), O_EXCL's value;
 * older headers lack the name. */
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/*
 * A held connect waits killably (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
 * agilerun.c): a signal it catches does not end the wait, so that the
 * call is not failed with EINTR before any connection was started, nor
 * restarted for a second grant.  But the kernel hands a signal sent to
 * the process to one thread, and when that is a held one, its handler
 * waits for the release: ^C of a Go program, whose runtime catches SIGINT,
 * with 20 dials held at 1/10s took 8 to 38 s.  So every HURRY_NS the
 * pacer looks for a signal asking the program to stop (SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT) that waits on a held thread: pending for it or its
 * process, not blocked, caught.  Such a connect goes on at once, as the
 * kernel's own connect wakes for a signal: its grant, already taken, is
 * spent early, and the handler runs.  Other signals wait with the connect:
 * letting it go for them let a program with a periodic SIGALRM (every
 * 100 ms) through at twice its rate.  The cost is a read of each held
 * thread's /proc status each time, none when nothing is held.
 */
#define HURRY_NS (100 * AGILE_NS_PER_MS)

/* The signals of set `mask` (a /proc status word: bit N - 1 for signal N)
 * that ask a program to stop. */
static uint64_t stop_requests(uint64_t mask)
{
	static const int stops[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	uint64_t wanted = 0;

	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		wanted |= UINT64_C(1) << (stops[i] - 1);
	return mask & wanted;
}

/* The hexadecimal word after `field` in /proc status text `text`, 0 when
 * it is not there. */
static uint64_t status_word(const char *text, const char *field)
{
	const char *p = strstr(text, field);

	return p != NULL ? strtoull(p + strlen(field), NULL, 16) : 0;
}

/* Whether thread `tid` has a stop request waiting that it catches (see
 * HURRY_NS). */
static bool signal_waits(pid_t tid)
{
	char path[64], text[4096];
	uint64_t pending, blocked, caught;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	pending = status_word(text, "\nSigPnd:") | status_word(text, "\nShdPnd:");
	blocked = status_word(text, "\nSigBlk:");
	caught = status_word(text, "\nSigCgt:");
	return stop_requests(pending & ~blocked & caught) != 0;
}

/* Let every held connect whose thread has a stop request waiting go on. */
static void hurry_signalled(void)
{
	for (size_t i = 0; i < heap_count; i++)
		if (heap[i].due_ns != 0 && signal_waits(heap[i].tid))
			heap_hurry(i);
}

/* Whether notification `id` still stands for the call it was received for:
 * after reading the caller's memory, so that what was read was that call's
 * (the caller may have died and its thread id been reused meanwhile). */
static bool still_valid(uint64_t id)
{
	return ioctl(pacer_listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

/* Whether stream socket `fd` has no connection made or under way: a TCP
 * socket in state CLOSE (never connected, or its last attempt failed), any
 * other without a peer. */
static bool unconnected(int fd)
{
	struct sockaddr_storage peer;
	struct tcp_info info;
	socklen_t len = sizeof(info);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0)
		return info.tcpi_state == TCP_CLOSE;
	len = sizeof(peer);
	return getpeername(fd, (struct sockaddr *)&peer, &len) != 0;
}

/*
 * Whether connect `req` starts a connection, which takes a grant: 1 when
 * its descriptor is a stream socket with no connection made or under way;
 * 0 when it is no stream socket, or one whose connection a connect has
 * already started (a program collecting a non-blocking connect's result
 * with a second connect(), a blocking one restarted after a signal
 * handler): the kernel answers those EISCONN or EALREADY, or waits for the
 * attempt under way, and the connection has had its grant; -1 when the
 * notification no longer stands.  A copy of the descriptor through
 * pidfd_getfd(2) answers.  When no copy can be had (an older kernel, a
 * process that does not let us) the connect counts as a new connection,
 * as a rule naming its address says it carries requests.
 */
static int starts_connection(const struct seccomp_notif *req)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
	pid_t tid = (pid_t)req->pid;
	int pidfd, copy, type = 0, starts = 1;
	socklen_t len = sizeof(type);

	/* Linux 6.9 opens any thread's pidfd (PIDFD_THREAD); before, only
	 * a thread group leader's: a connect from another thread of the
	 * program is then taken for a new stream connection's. */
	pidfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
	if (pidfd < 0 && errno == EINVAL)
		pidfd = (int)syscall(SYS_pidfd_open, tid, 0);
	if (pidfd < 0)
		return 1;
	/* The thread was opened by number: the notification still standing
	 * once it is open says the caller was waiting all along, so that
	 * number was not reused and this is its process. */
	if (!still_valid(req->id)) {
		close(pidfd);
		return -1;
	}
	copy = (int)syscall(SYS_pidfd_getfd, pidfd, (int)req->data.args[0], 0);
	close(pidfd);
	if (copy < 0)
		return 1;
	if (getsockopt(copy, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
	    (type != SOCK_STREAM || !unconnected(copy)))
		starts = 0;
	close(copy);
	return starts;
#else
	(void)req;
	return 1;
#endif
}

/* The time connect `req` may go on: 0 now, else its grant's planned time;
 * -1 when it no longer needs an answer. */
static int64_t decide(const struct seccomp_notif *req)
{
	static bool told;
	struct sockaddr_storage addr;
	struct iovec local, remote;
	socklen_t len = (socklen_t)req->data.args[2];
	struct agile_state_slot *s;
	int64_t now, planned;
	int dest;

	if (req->data.nr != SYS_connect)
		return 0;
	if (len < sizeof(sa_family_t) || len > sizeof(addr))
		return 0;
	memset(&addr, 0, sizeof(addr));
	local.iov_base = &addr;
	local.iov_len = len;
	remote.iov_base = (void *)(uintptr_t)req->data.args[1];
	remote.iov_len = len;
	if (process_vm_readv((pid_t)req->pid, &local, 1, &remote, 1, 0) !=
	    (ssize_t)len) {
		if (errno == EPERM && !told) {
			told = true;
			agile__log(AGILE_LOG_WARN, "agilerun --seccomp: cannot "
			           "read the program's memory (%s); its "
			           "connections go unpaced", strerror(errno));
		}
		return still_valid(req->id) ? 0 : -1;
	}
	if (!still_valid(req->id))
		return -1;
	dest = agile__destinations_match((const struct sockaddr *)&addr, len);
	if (dest < 0)
		return 0;
	switch (starts_connection(req)) {
	case -1:
		return -1;
	case 0:
		return 0;
	}
	s = agile__destinations_slot(dest);
	now = agile__now_ns();
	planned = agile__destinations_take(dest, s, now);
	agile__add_u64(&s->connects, 1);
	agile__destinations_tick(dest, s, now);
	if (agile__log_enabled(AGILE_LOG_DEBUG))
		agile__log(AGILE_LOG_DEBUG, "pid %d: connect to %s, grant in "
		           "%.3f ms", (int)req->pid, s->name,
		           (double)(planned - now) / AGILE_NS_PER_MS);
	return planned > now ? planned : 0;
}

/*
 * Everything that may stop the pacer, done before it takes the listener:
 * the rules, and each destination's slot in the state file.  Under
 * AGILE_STRICT=1 a configuration error or a state file that cannot be used
 * stops the process with status 2 (destinations.c); here that happens
 * while agilerun can still refuse to run the command.  Once the filter is
 * installed a pacer that stops makes every connect of the command fail
 * with ENOSYS.
 */
static void prepare_destinations(void)
{
	agile__destinations_load();
	for (int dest = 0; dest < agile__dest_rules->count; dest++)
		if (agile__dest_rule[dest].enabled &&
		    !agile__dest_rule[dest].inbound)
			(void)agile__destinations_slot(dest);
}

/* The command's first process has ended: from now on the pacer writes
 * nothing to the standard error it shares with agilerun's caller (pacer.h),
 * and so does not hold it open for the processes left behind. */
static void leave_stderr(void)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (null >= 0) {
		dup2(null, STDERR_FILENO);
		close(null);
	}
}

/*
 * SIGTERM, SIGINT or SIGHUP, the signal a process is asked to stop with,
 * sent to the pacer alone (`kill`, `pkill agilerun`) or with the command
 * (a service manager stopping a unit): a pacer that stopped would make
 * every further connect under the filter fail with ENOSYS, a command
 * shutting down cleanly among them.  So the pacer stops pacing instead:
 * it lets every held connect and every later one go on, and ends with the
 * last process under the filter, as ever.  Caught from the start, and
 * blocked but in ppoll, so that the loop sees the flag at its top.
 */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void catch_stop_signals(sigset_t *during_poll)
{
	static const int stops[] = { SIGTERM, SIGINT, SIGHUP };
	struct sigaction action;
	sigset_t blocked;

	memset(&action, 0, sizeof(action));
	action.sa_handler = on_stop_signal;
	sigemptyset(&action.sa_mask);
	sigemptyset(&blocked);
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		sigaddset(&blocked, stops[i]);
		sigaction(stops[i], &action, NULL);
	}
	sigprocmask(SIG_BLOCK, &blocked, during_poll);
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		sigdelset(during_poll, stops[i]);
}

AGILE_EXPORT int agile_pacer_run(int (*handshake)(void *arg), void *arg,
                                 int command)
{
	bool pacing = true;
	int64_t last_hurry_ns = 0;
	sigset_t during_poll;
	struct seccomp_notif_sizes sizes;
	struct seccomp_notif *req;
	size_t req_size;
	int listener;

	/* The pacer is the supervisor, not a program to throttle: its calls
	 * are the library's own, as inside a hook. */
	agile__enter();
	catch_stop_signals(&during_poll);
	/* A grant due in microseconds must not wait for the default 50 us
	 * of timer slack on top. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
		return -1;
	req_size = sizes.seccomp_notif > sizeof(*req) ? sizes.seccomp_notif
	                                              : sizeof(*req);
	resp_size = sizes.seccomp_notif_resp > sizeof(*resp)
	            ? sizes.seccomp_notif_resp : sizeof(*resp);
	req = calloc(1, req_size);
	resp = calloc(1, resp_size);
	if (req == NULL || resp == NULL)
		return -1;
	prepare_destinations();
	listener = handshake(arg);
	if (listener < 0)
		return 0;
	pacer_listener = listener;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = listener, .events = POLLIN },
		                         { .fd = command, .events = POLLIN } };
		struct timespec wait, *timeout = NULL;
		int64_t now = agile__now_ns();

		if (pacing && stop_signal != 0) {
			pacing = false;
			agile__log(AGILE_LOG_WARN, "agilerun --seccomp: the pacer "
			           "got signal %d (%s): it lets every connect go "
			           "on unpaced from now on", (int)stop_signal,
			           strsignal(stop_signal));
		}
		if (heap_count > 0 && now - last_hurry_ns >= HURRY_NS) {
			hurry_signalled();
			last_hurry_ns = now;
		}
		while (heap_count > 0 && (!pacing || heap[0].due_ns <= now))
			release(heap_pop().id);
		if (heap_count > 0) {
			int64_t left = heap[0].due_ns - now;

			if (left > last_hurry_ns + HURRY_NS - now)
				left = last_hurry_ns + HURRY_NS - now;
			wait.tv_sec = (time_t)(left / AGILE_NS_PER_S);
			wait.tv_nsec = (long)(left % AGILE_NS_PER_S);
			timeout = &wait;
		}
		if (ppoll(pfd, 2, timeout, &during_poll) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (pfd[1].revents != 0) {
			leave_stderr();
			close(command);
			command = -1;
		}
		if (pfd[0].revents & POLLIN) {
			int64_t due;

			memset(req, 0, req_size);
			if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
				continue; /* EINTR, or its caller is gone */
			due = pacing ? decide(req) : 0;
			if (due == 0)
				release(req->id);
			else if (due > 0 &&
			         !heap_push((struct held){ due, req->id,
			                                   (pid_t)req->pid }))
				release(req->id); /* no memory to hold it */
		} else if (pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
			/* No process is left under the filter. */
			return 0;
		}
	}
}

/*
 * The pacer's fork list (process.h): the base's locks alone, in the
 * preload's order (forklist.c), since this library has no hooks and no
 * resilience features.  The pacer itself never forks; the list is here so
 * that a fork by anything else in its process is as safe as in the preload.
 */
static int atfork_registered;

static void atfork_child(void)
{
	agile__process_atfork_child();
	agile__destinations_atfork_child();
}

void agile__process_register_atfork(void)
{
	if (__atomic_exchange_n(&atfork_registered, 1, __ATOMIC_ACQ_REL) == 0)
		pthread_atfork(agile__destinations_atfork_prepare,
		               agile__destinations_atfork_parent, atfork_child);
}
