/*
 * log.c - stderr diagnostics (see log.h).
 *
 * A message is formatted into a stack buffer and written with one write(2)
 * on fd 2 through the real libc symbol, so it cannot interleave with another
 * thread's line and never re-enters the hooks.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "symbols.h"

static int log_level = AGILE_LOG_WARN;

void agile__log_init(void)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	const char *value = getenv("AGILE_LOG");

	if (value == NULL || *value == '\0')
		return;
	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
		if (strcasecmp(value, names[i]) == 0) {
			log_level = i;
			return;
		}
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
	if (agile__libc.write != NULL)
		(void)agile__libc.write(2, line, (size_t)n);
	errno = saved;
}
