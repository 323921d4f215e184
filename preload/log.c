/*
 * log.c - stderr diagnostics (see log.h).
 *
 * A message is formatted into a stack buffer and written with one write(2)
 * on fd 2 through the real libc symbol, so it cannot interleave with another
 * thread's line and never re-enters the hooks; and only while fd 2 is still
 * the stderr the program was started with (see agile__log_note_stderr).
 *
 * Where stderr cannot take it, a message is never forced on it (issue 16,
 * item 4; tests/fault/stderr_socket.sh):
 *   - fd 2 a socket is the program's peer (inetd and socket activation
 *     hand the connection as fds 0, 1 and 2), whose byte stream a line of
 *     ours would corrupt.  The one socket that is a log is journald's
 *     (systemd's StandardError=journal), told by its peer's path.
 *   - A write to a closed pipe (`prog 2>&1 | head -1`) raises SIGPIPE,
 *     which kills a program that does not expect it: the write is made
 *     with SIGPIPE blocked in the calling thread, a SIGPIPE it raised is
 *     taken back, and nothing more is written there.
 * Such messages are counted in the state file's header with the last of
 * them (state.h), for agilestat to show; a message from before the state
 * file is mapped is kept until it is.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "internal.h"
#include "log.h"
#include "process.h"
#include "state.h"
#include "symbols.h"

static int log_level = AGILE_LOG_WARN;

/* fd 2 as the program was started with it.  stderr_state is
 * STDERR_UNNOTED until noted, STDERR_USABLE when stderr_dev/stderr_ino
 * identify it, and one of the others when nothing is to be written to it. */
enum {
	STDERR_UNNOTED = 0,
	STDERR_USABLE = 1,
	STDERR_CLOSED = -1,  /* closed at start-up */
	STDERR_SOCKET = -2,  /* a socket, not journald's */
	STDERR_BROKEN = -3   /* a write found the pipe closed */
};
static int stderr_state;
static dev_t stderr_dev;
static ino_t stderr_ino;

/* Is socket fd journald's stream socket (its peer's path)? */
static bool is_journal(int fd)
{
	static const char journal[] = "/run/systemd/journal/stdout";
	struct sockaddr_un peer;
	socklen_t len = sizeof(peer);

	return getpeername(fd, (struct sockaddr *)&peer, &len) == 0 &&
	       peer.sun_family == AF_UNIX &&
	       len >= offsetof(struct sockaddr_un, sun_path) + sizeof(journal) -
	              1 &&
	       strncmp(peer.sun_path, journal, sizeof(journal) - 1) == 0;
}

void agile__log_note_stderr(void)
{
	int saved = errno;
	struct stat st;

	if (fstat(2, &st) != 0) {
		stderr_state = STDERR_CLOSED;
	} else if (S_ISSOCK(st.st_mode) && !is_journal(2)) {
		stderr_state = STDERR_SOCKET;
	} else {
		stderr_dev = st.st_dev;
		stderr_ino = st.st_ino;
		stderr_state = STDERR_USABLE;
	}
	errno = saved;
}

/* The state file's header once mapped (agile__log_attach), and the
 * messages not said before it was: their number and the last one. */
static struct agile_state_header *unsaid_header;
static uint64_t unsaid_pending;
static char unsaid_pending_last[sizeof(unsaid_header->unsaid_last)];

static void copy_last(char *to, size_t size, const char *line, size_t n)
{
	/* Without the prefix and the newline. */
	static const char prefix[] = "agilepreload: ";

	if (n >= sizeof(prefix) - 1) {
		line += sizeof(prefix) - 1;
		n -= sizeof(prefix) - 1;
	}
	if (n > 0 && line[n - 1] == '\n')
		n--;
	if (n > size - 1)
		n = size - 1;
	memcpy(to, line, n);
	to[n] = '\0';
}

/* A message stderr could not take: into the state file, or kept for it. */
static void unsaid(const char *line, size_t n)
{
	struct agile_state_header *h =
		__atomic_load_n(&unsaid_header, __ATOMIC_ACQUIRE);

	if (h == NULL) {
		__atomic_fetch_add(&unsaid_pending, 1, __ATOMIC_RELAXED);
		copy_last(unsaid_pending_last, sizeof(unsaid_pending_last),
		          line, n);
		return;
	}
	copy_last(h->unsaid_last, sizeof(h->unsaid_last), line, n);
	__atomic_fetch_add(&h->unsaid, 1, __ATOMIC_RELEASE);
}

void agile__log_attach(struct agile_state_header *header)
{
	uint64_t pending;

	if (header == NULL)
		return;
	__atomic_store_n(&unsaid_header, header, __ATOMIC_RELEASE);
	pending = __atomic_exchange_n(&unsaid_pending, 0, __ATOMIC_ACQ_REL);
	if (pending > 0) {
		memcpy(header->unsaid_last, unsaid_pending_last,
		       sizeof(header->unsaid_last));
		header->unsaid_last[sizeof(header->unsaid_last) - 1] = '\0';
		__atomic_fetch_add(&header->unsaid, pending, __ATOMIC_RELEASE);
	}
}

/* Write the line to fd 2 with SIGPIPE blocked in this thread; a SIGPIPE
 * the write raised is taken back (one already pending is left).  Returns
 * whether the line was written. */
static bool write_stderr(const char *line, size_t n)
{
	sigset_t pipe_only, old, pending;
	bool was_pending;
	ssize_t rc;

	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
	was_pending = sigpending(&pending) == 0 &&
	              sigismember(&pending, SIGPIPE);
	rc = agile__libc.write(2, line, n);
	if (rc < 0 && errno == EPIPE) {
		if (!was_pending)
			(void)sigtimedwait(&pipe_only, NULL,
			                   &(struct timespec){ 0, 0 });
		__atomic_store_n(&stderr_state, STDERR_BROKEN,
		                 __ATOMIC_RELAXED);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc >= 0;
}

/* Whether fd 2 is still the program's original stderr.  A message logged
 * before the constructor ran (another library's constructor connecting)
 * notes it then: main() has not run, so fd 2 is still the original. */
static int stderr_unchanged(void)
{
	struct stat st;

	if (stderr_state == STDERR_UNNOTED)
		agile__log_note_stderr();
	return stderr_state == STDERR_USABLE && fstat(2, &st) == 0 &&
	       st.st_dev == stderr_dev && st.st_ino == stderr_ino;
}

void agile__log_init(void)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	const char *value = agile__env("AGILE_LOG");
	int level;

	if (value == NULL || *value == '\0')
		return;
	level = agile__name_index(value, names,
	                          (int)(sizeof(names) / sizeof(names[0])));
	if (level >= 0) {
		log_level = level;
		return;
	}
	agile__log(AGILE_LOG_WARN,
	           "AGILE_LOG: \"%s\" is not a level; expected error, warn, "
	           "info or debug (using warn)", value);
}

int agile__log_enabled(enum agile_log_level level)
{
	return (int)level <= log_level;
}

/*
 * Control bytes in line[0..n) as \xNN, in place, within cap bytes; returns
 * the new length.  Messages quote the environment's values, and a value
 * holding an escape sequence would otherwise reach the terminal raw.
 */
static int escape_controls(char *line, int n, int cap)
{
	static const char hex[] = "0123456789abcdef";
	int extra = 0;

	for (int i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			extra += 3;
	if (extra == 0)
		return n;
	while (n + extra > cap) /* cut the message, not the escapes */
		if ((unsigned char)line[--n] < 0x20 || line[n] == 0x7f)
			extra -= 3;
	for (int i = n - 1, j = n + extra - 1; i >= 0; i--) {
		unsigned char c = (unsigned char)line[i];

		if (c < 0x20 || c == 0x7f) {
			line[j--] = hex[c & 15];
			line[j--] = hex[c >> 4];
			line[j--] = 'x';
			line[j--] = '\\';
		} else {
			line[j--] = (char)c;
		}
	}
	return n + extra;
}

void agile__log(enum agile_log_level level, const char *fmt, ...)
{
	char line[640];
	int saved = errno;
	va_list ap;
	int n;

	if (!agile__log_enabled(level))
		return;
	agile__bind();
	n = snprintf(line, sizeof(line), "agilepreload: ");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	n = escape_controls(line, n, (int)sizeof(line) - 1);
	line[n++] = '\n';
	if (agile__libc.write == NULL || !stderr_unchanged() ||
	    !write_stderr(line, (size_t)n))
		unsaid(line, (size_t)n);
	errno = saved;
}
