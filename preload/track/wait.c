/*
 * wait.c - the wait for a grant: this thread's list of sockets with a
 * request in flight, whose responses the wait stamps, and the signal
 * policy that decides whether a signal ends the wait with EINTR.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "clock.h"
#include "h2conn.h"
#include "symbols.h"
#include "track.h"
#include "track_internal.h"

/*
 * The sockets on which this thread has a request in flight.  While the
 * thread sleeps for a grant (in an event loop: in one socket's send), the
 * responses on these sockets cannot be read, so the wait watches them with
 * ppoll and stamps response_ns when one becomes readable: the round trip
 * ends there, not when the program finally reads it.  A thread-per-
 * connection program has no other socket in flight and just sleeps.  Only
 * the sending thread's sockets are watched; 64 covers any event loop's
 * concurrency that pacing leaves room for, and a socket beyond it is
 * measured at its read as before.
 *
 * Every request's first send adds its socket, and the list is pruned only
 * when the thread waits, so with a ceiling far above the load it holds
 * every connection of an event loop: finding whether a number is already
 * in it by walking the list cost redis-benchmark (50 connections) 180 of
 * the preload's 800 instructions per request.  watch_bits mirrors the list
 * for the numbers below WATCH_BITS_FDS, so the common case is one bit test;
 * a higher number is looked for in the list as before.
 */
#define WATCH_MAX 64
#define WATCH_BITS_FDS 1024
static __thread int watch_fds[WATCH_MAX]
	__attribute__((tls_model("initial-exec")));
static __thread int watch_count __attribute__((tls_model("initial-exec")));
static __thread uint64_t watch_bits[WATCH_BITS_FDS / 64]
	__attribute__((tls_model("initial-exec")));


/* Is fd in this thread's list?  Set or clear its bit (fd below
 * WATCH_BITS_FDS only). */
static bool watched(int fd)
{
	if (fd < WATCH_BITS_FDS)
		return watch_bits[fd / 64] & (UINT64_C(1) << (fd % 64));
	for (int i = 0; i < watch_count; i++)
		if (watch_fds[i] == fd)
			return true;
	return false;
}

static void watch_mark(int fd, bool on)
{
	if (fd >= WATCH_BITS_FDS)
		return;
	if (on)
		watch_bits[fd / 64] |= UINT64_C(1) << (fd % 64);
	else
		watch_bits[fd / 64] &= ~(UINT64_C(1) << (fd % 64));
}

void agile__track_watch(int fd)
{
	if (watch_count < WATCH_MAX && !watched(fd)) {
		watch_fds[watch_count++] = fd;
		watch_mark(fd, true);
	}
}

/* Keep the watched sockets whose response has not been seen; fill pfd. */
static int watch_prepare(struct pollfd *pfd)
{
	int keep = 0;

	for (int i = 0; i < watch_count; i++) {
		int fd = watch_fds[i];
		struct agile_fd *t = agile__fd_lookup(fd);

		if (t == NULL ||
		    (__atomic_load_n(&t->h2conn, __ATOMIC_ACQUIRE) != 0
		     ? !agile__h2conn_waiting(t)
		     : __atomic_load_n(&t->request, __ATOMIC_ACQUIRE) !=
		       AGILE_REQ_IN_FLIGHT ||
		       __atomic_load_n(&t->response_ns, __ATOMIC_ACQUIRE) !=
		       0)) {
			watch_mark(fd, false);
			continue;
		}
		watch_fds[keep] = fd;
		pfd[keep].fd = fd;
		pfd[keep].events = POLLIN | POLLRDHUP;
		pfd[keep].revents = 0;
		keep++;
	}
	watch_count = keep;
	return keep;
}

/*
 * Does the signal handler that just interrupted a wait in a send on `fd`
 * expect that send to fail with EINTR?  The kernel's rule for a blocking
 * send it holds (for room in the socket buffer): a handler installed
 * without SA_RESTART makes it fail with EINTR, one with SA_RESTART restarts
 * it; a non-blocking socket never waits, so never fails that way.  The
 * preload's wait for a grant is such a hold, and a program that installs a
 * handler without SA_RESTART is asking for it: alarm() as the timeout of a
 * request, a flag set by SIGTERM that the main loop checks when a call
 * fails.  Resumed instead, the wait swallowed that timeout: the request
 * went out after it, and a server that never answered held the program's
 * receive for ever (tests/preload/alarm_timeout.sh).
 *
 * The kernel does not say which signal interrupted the sleep, so every
 * signal that could have is asked: one not blocked in this thread (the
 * handler's own mask is undone when it returns) with a handler installed
 * without SA_RESTART.  When there is none, every handler that can have run
 * wants restarting, and the wait resumes; when there is one, the send
 * fails, also in the rare program that has both kinds and got a restarting
 * one.  The signals of a faulting instruction (SIGSEGV and the like) are
 * not asked: they are not sent to a sleeping thread, and the handlers that
 * sanitizers and virtual machines install for them have no SA_RESTART (with
 * ASan's, every wait failed).  About 64 sigaction() calls, made only when
 * a handler ran during a wait.  Nothing is asked unless the socket is
 * blocking.
 */
static bool is_fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
	       sig == SIGILL || sig == SIGTRAP || sig == SIGSYS;
}

static bool interrupt_reported(int fd, const sigset_t *during)
{
	sigset_t blocked;
	int saved = errno;
	int flags = agile__libc.fcntl(fd, F_GETFL);
	bool report = false;

	if (during != NULL)
		blocked = *during;
	if (flags >= 0 && !(flags & O_NONBLOCK) &&
	    (during != NULL ||
	     pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0)) {
		for (int sig = 1; sig < NSIG && !report; sig++) {
			struct sigaction action;

			if (sig == SIGKILL || sig == SIGSTOP ||
			    is_fault_signal(sig) ||
			    sigismember(&blocked, sig) == 1 ||
			    sigaction(sig, NULL, &action) != 0)
				continue;
			report = action.sa_handler != SIG_DFL &&
			         action.sa_handler != SIG_IGN &&
			         !(action.sa_flags & SA_RESTART);
		}
	}
	errno = saved;
	return report;
}

/* The frame of the tracked call this thread is in (track.h). */
__thread uintptr_t agile__hook_frame __attribute__((tls_model("initial-exec")));

static bool wait_on(int64_t planned, int interruptible_fd,
                    const sigset_t *during);

/*
 * Sleep until `planned`, stamping responses that arrive meanwhile.  A
 * signal's handler runs, and the wait then resumes (as in
 * agile__sleep_until), unless `interruptible_fd` is a socket whose send
 * the handler expects to fail with EINTR (interrupt_reported): then it
 * returns true, early.  -1: never early.  A handler's own tracked calls
 * meanwhile are not paced (track.h, agile__track_in_handler): a wait
 * reached outside the send and connect hooks (a dup onto fd 1, an
 * fdopen) is a tracked call too.
 */
#define H2_PEEK_AGAIN_NS (2 * AGILE_NS_PER_MS)

/*
 * Both entries, with `during` the mask the sleep takes: NULL, the
 * thread's own; or, for a caller that blocks the signals itself between
 * waits (agile__track_wait_grant, which wakes every 100 ms to follow the
 * rate), that caller's own mask, for the sleep's duration only, as ppoll
 * does atomically, so a signal that comes between two waits stays pending
 * until the next one and ends it as if it had come during it.  Unmasked
 * between them, the handler of a timer that fell due at a wake-up ran
 * outside any sleep, and the send went on waiting past the program's
 * timeout (tests/preload/alarm_timeout.sh).
 */
__attribute__((noinline))
static bool wait_framed(int64_t planned, int interruptible_fd,
                        const sigset_t *during)
{
	uintptr_t outer = agile__hook_frame;
	bool early;

	if (outer == 0)
		agile__hook_frame = (uintptr_t)__builtin_frame_address(0);
	early = wait_on(planned, interruptible_fd, during);
	agile__hook_frame = outer;
	return early;
}

bool agile__track_wait_on(int64_t planned, int interruptible_fd)
{
	return wait_framed(planned, interruptible_fd, NULL);
}

/*
 * Read a plain connection's answer now, by a peek, as the program's own
 * MSG_PEEK would be read (recv.c): its round trip, and with proto=http
 * its verdict, are recorded while the thread still waits, and the bytes
 * stay for the program's read, which then finds no request in flight.
 * Stamped only, the answer reached the law when the event loop got back
 * to its sockets: ab -c 32 paced at 1 request a second sleeps through
 * its 32 sends one after another, and read its answers 32 s later, so
 * after an SLO break had taken the rate to that floor no tick saw an
 * answer to climb back on, and it stayed there (issue 15).  Plain text
 * only (over TLS the bytes are records, which the read's walker follows),
 * and only readable bytes: an end of file is the read's to judge.
 */
#define ANSWER_PEEK_BYTES 1024

static void answer_early(struct agile_fd *t, int fd, short revents)
{
	char buf[ANSWER_PEEK_BYTES];
	int saved = errno;

	if (!(revents & POLLIN) ||
	    agile__tls_stage(&t->tls) != AGILE_TLS_OFF ||
	    __atomic_load_n(&t->tls_plain, __ATOMIC_ACQUIRE))
		return;
	ssize_t n = agile__libc.recv(fd, buf, sizeof(buf),
	                             MSG_PEEK | MSG_DONTWAIT);
	/* An interim answer (100 Continue, HTTP/2's SETTINGS) keeps the
	 * request in flight, and its bytes stay readable: judged here, the
	 * socket would be watched again and poll would find it readable at
	 * once, round after round, for the rest of the wait.  It is the
	 * read's to judge, as before, with the stamp standing. */
	if (n > 0 && !agile__track_bytes_interim(t, buf, (size_t)n)) {
		struct iovec iov = { .iov_base = buf, .iov_len = (size_t)n };

		agile__track_recv_after(t, n, 0, sizeof(buf), &iov, 1, true);
	}
	errno = saved;
}

/*
 * Stamp the response of each watched socket poll found readable: its
 * round trip ends now, and its place under inflight= is given back
 * (inflight.c); a plain connection's answer is read at once
 * (answer_early).  True when an HTTP/2 connection's bytes were peeked at
 * and stay readable (h2conn.h).
 */
static bool stamp_ready(const struct pollfd *pfd, int n, int64_t now)
{
	bool stale = false;

	for (int i = 0; i < n; i++) {
		struct agile_fd *t;
		int64_t zero = 0;

		if (!(pfd[i].revents & (POLLIN | POLLRDHUP | POLLHUP |
		                        POLLERR)) ||
		    (t = agile__fd_lookup(pfd[i].fd)) == NULL)
			continue;
		/* Over TLS the bytes to peek at are ciphertext: the streams'
		 * answers cannot be told apart, and none is stamped (the
		 * round trips then include the stall). */
		if (__atomic_load_n(&t->h2conn, __ATOMIC_ACQUIRE)) {
			stale |= __atomic_load_n(&t->tls_plain,
			                         __ATOMIC_ACQUIRE) ||
			         !agile__h2conn_peek(t, pfd[i].fd, now);
			continue;
		}
		if (__atomic_compare_exchange_n(&t->response_ns, &zero, now,
		                                false, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE)) {
			agile__inflight_release(t);
			answer_early(t, pfd[i].fd, pfd[i].revents);
		}
	}
	return stale;
}

static int wait_room(int64_t deadline, int interruptible_fd,
                     bool (*enter)(void *),
                     int (*sleep)(void *, int64_t, int64_t), void *arg,
                     int64_t recheck_ns)
{
	struct pollfd pfd[WATCH_MAX];

	for (;;) {
		int64_t now = agile__now_ns(), until;
		struct timespec timeout;
		int n, rc, busy, error;

		if (enter(arg))
			return 1;
		if (now >= deadline)
			return 0;
		n = watch_prepare(pfd);
		until = n > 0 && deadline - now > recheck_ns ? now + recheck_ns
		                                             : deadline;
		busy = agile__busy_suspend(); /* a handler may jump out */
		if (n <= 0) {
			error = sleep(arg, now, until);
			rc = error == EINTR ? -1 : 0;
			if (error < 0) {
				agile__busy_resume(busy);
				return 1;
			}
		} else {
			timeout.tv_sec = (until - now) / AGILE_NS_PER_S;
			timeout.tv_nsec = (until - now) % AGILE_NS_PER_S;
			rc = ppoll(pfd, (nfds_t)n, &timeout, NULL);
			error = rc < 0 ? errno : 0;
		}
		agile__busy_resume(busy);
		if (rc < 0 && error == EINTR) {
			if (interruptible_fd >= 0 &&
			    interrupt_reported(interruptible_fd, NULL))
				return -1;
			continue;
		}
		if (rc > 0 && n > 0 && stamp_ready(pfd, n, agile__now_ns())) {
			/* An HTTP/2 connection's bytes stay readable. */
			busy = agile__busy_suspend();
			agile__sleep_until(agile__now_ns() + H2_PEEK_AGAIN_NS <
			                   until ? agile__now_ns() +
			                           H2_PEEK_AGAIN_NS : until);
			agile__busy_resume(busy);
		}
	}
}

__attribute__((noinline))
int agile__track_wait_room(int64_t deadline, int interruptible_fd,
                           bool (*enter)(void *),
                           int (*sleep)(void *, int64_t, int64_t),
                           void *arg, int64_t recheck_ns)
{
	uintptr_t outer = agile__hook_frame;
	int rc;

	if (outer == 0)
		agile__hook_frame = (uintptr_t)__builtin_frame_address(0);
	rc = wait_room(deadline, interruptible_fd, enter, sleep, arg,
	               recheck_ns);
	agile__hook_frame = outer;
	return rc;
}

static bool wait_on(int64_t planned, int interruptible_fd,
                    const sigset_t *during)
{
	struct pollfd pfd[WATCH_MAX];
	bool stale;

	for (;;) {
		int64_t now = agile__now_ns();
		struct timespec timeout;
		int n, rc, busy, error;

		if (now >= planned)
			return false;
		n = watch_prepare(pfd);
		busy = agile__busy_suspend(); /* a handler may jump out */
		if (during != NULL) {
			timeout.tv_sec = (planned - now) / AGILE_NS_PER_S;
			timeout.tv_nsec = (planned - now) % AGILE_NS_PER_S;
			rc = ppoll(n > 0 ? pfd : NULL, (nfds_t)n, &timeout,
			           during);
			error = rc < 0 ? errno : 0;
		} else if (n == 0) {
			timeout.tv_sec = planned / AGILE_NS_PER_S;
			timeout.tv_nsec = planned % AGILE_NS_PER_S;
			error = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
			                        &timeout, NULL);
			rc = error == 0 ? 0 : -1;
		} else {
			timeout.tv_sec = (planned - now) / AGILE_NS_PER_S;
			timeout.tv_nsec = (planned - now) % AGILE_NS_PER_S;
			rc = ppoll(pfd, (nfds_t)n, &timeout, NULL);
			error = rc < 0 ? errno : 0;
		}
		agile__busy_resume(busy);
		if (rc < 0 && error == EINTR) {
			if (interruptible_fd >= 0 &&
			    interrupt_reported(interruptible_fd, during))
				return true;
			continue;
		}
		if (rc < 0) {
			agile__sleep_until(planned);
			return false;
		}
		if (rc == 0 || n == 0)
			continue;
		now = agile__now_ns();
		stale = stamp_ready(pfd, n, now);
		/* An HTTP/2 connection's bytes, peeked at already, stay
		 * readable: no poll until a little later (h2conn.h). */
		if (stale) {
			busy = agile__busy_suspend();
			agile__sleep_until(now + H2_PEEK_AGAIN_NS < planned
			                   ? now + H2_PEEK_AGAIN_NS : planned);
			agile__busy_resume(busy);
		}
	}
}

/*
 * How often a wait for a grant further ahead looks whether the rate rose
 * meanwhile.  The grant was planned at the rate of its take; a program
 * whose threads all took theirs at a low rate would sleep through them at
 * that rate after the controller raised it, and its ticks, with no answer
 * to read, could not raise it further (32 Python threads at 1 req/s held
 * grants up to 32 s ahead, issue 15).  The bucket moves the grants it
 * planned at each rise (agile_bucket_retime); each waiter moves its own
 * (agile_bucket_replan) as its wait begins, by every rise since its grant
 * was planned (agile__track_plan_grant), and then when it wakes, at most
 * this late after a rise.
 */
#define GRANT_RECHECK_NS (100 * AGILE_NS_PER_MS)

/* Sleep until *planned, moving it closer when the rate rises; true when a
 * signal's handler cut the wait short (agile__track_wait_on).  Between two
 * of its sleeps the signals are blocked (wait_framed), but
 * for the faults of an instruction, which are never sent to a sleeping
 * thread and kill one that blocks them. */
bool agile__track_wait_grant(struct agile_fd *t, int64_t *planned, int64_t now,
                            int fd)
{
	const struct agile_bucket *b = &slot_of(t)->limiter.bucket;
	sigset_t block, during;
	int64_t ref, keep;
	bool early = false;

	/* A destination whose stricter sibling slot planned the grant
	 * (destinations.c) keeps it: this bucket's rise is not that one's. */
	if (*planned - now <= GRANT_RECHECK_NS ||
	    __atomic_load_n(&agile__destination[t->dest].stricter,
	                    __ATOMIC_ACQUIRE) != NULL)
		return agile__track_wait_on(*planned, fd);
	sigfillset(&block);
	for (int sig = 1; sig < NSIG; sig++)
		if (is_fault_signal(sig))
			sigdelset(&block, sig);
	if (pthread_sigmask(SIG_BLOCK, &block, &during) != 0)
		return agile__track_wait_on(*planned, fd);
	/* The spacing the grant was planned at: a rise between its take and
	 * this wait moves it before the first sleep. */
	ref = __atomic_load_n(&t->grant_interval_ns, __ATOMIC_RELAXED);
	if (ref <= 0)
		ref = agile_bucket_interval_ns(b);
	keep = agile__destination[t->dest].config.tick_ns;
	for (;;) {
		/* Before the first sleep too: an event loop's waits come one
		 * after another, and 100 ms each before a rise moved them
		 * would be 3 s for 32 grants. */
		*planned = agile_bucket_replan(b, *planned, &ref, now, keep);
		if (now >= *planned)
			break;
		int64_t until = *planned;

		if (until - now > GRANT_RECHECK_NS)
			until = now + GRANT_RECHECK_NS;
		if (wait_framed(until, fd, &during)) {
			early = true;
			break;
		}
		now = agile__now_ns();
	}
	pthread_sigmask(SIG_SETMASK, &during, NULL);
	return early;
}

/* agile__track_wait_on that is never cut short (the fleet's callback too). */
void agile__track_wait(int64_t planned)
{
	(void)agile__track_wait_on(planned, -1);
}
