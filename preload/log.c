/*
 * log.c - stderr diagnostics (see log.h).
 *
 * A message is formatted into a stack buffer and written with one write(2)
 * on fd 2 through the real libc symbol, so it cannot interleave with another
 * thread's line and never re-enters the hooks; and only while fd 2 is still
 * the stderr the program was started with (see agile__log_note_stderr).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "log.h"
#include "process.h"
#include "symbols.h"

static int log_level = AGILE_LOG_WARN;

/* fd 2 as the program was started with it.  stderr_state is 0 until noted,
 * 1 when stderr_dev/stderr_ino identify it, -1 when fd 2 was closed. */
static int stderr_state;
static dev_t stderr_dev;
static ino_t stderr_ino;

void agile__log_note_stderr(void)
{
	int saved = errno;
	struct stat st;

	if (fstat(2, &st) == 0) {
		stderr_dev = st.st_dev;
		stderr_ino = st.st_ino;
		stderr_state = 1;
	} else {
		stderr_state = -1;
	}
	errno = saved;
}

/* Whether fd 2 is still the program's original stderr.  A message logged
 * before the constructor ran (another library's constructor connecting)
 * notes it then: main() has not run, so fd 2 is still the original. */
static int stderr_unchanged(void)
{
	struct stat st;

	if (stderr_state == 0)
		agile__log_note_stderr();
	return stderr_state == 1 && fstat(2, &st) == 0 &&
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
	line[n++] = '\n';
	if (agile__libc.write != NULL && stderr_unchanged())
		(void)agile__libc.write(2, line, (size_t)n);
	errno = saved;
}
