/*
 * rules_report.c - the rule parser's messages: each problem one complete
 * line, prefixed with the variable's name, passed to the caller's callback.
 *
 * A rule's reporter defers its lines, so that a problem repeated in one
 * variable (a key given 9,999 times, 30,000 stray words) reaches the user
 * as one line with the count of the others, not as a flood.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "rules_internal.h"

/* Are messages a and b equal outside their quoted ("...") parts? */
static bool same_problem(const char *a, const char *b)
{
	for (;;) {
		if (*a == '"' && *b == '"') {
			a = strchr(a + 1, '"');
			b = strchr(b + 1, '"');
			if (a == NULL || b == NULL)
				return a == b;
		}
		if (*a != *b)
			return false;
		if (*a == '\0')
			return true;
		a++;
		b++;
	}
}

void agile__rules_vreport(struct reporter *r, const char *fmt, va_list ap)
{
	char line[MESSAGE_MAX];
	int n, k = 0;

	r->errors++;
	n = snprintf(line, sizeof(line), "%s: ", r->var);
	if (n >= 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (r->defer) {
		while (k < r->kinds && !same_problem(r->kind[k].line, line))
			k++;
		if (k < r->kinds) {
			r->kind[k].count++;
			return;
		}
	}
	if (r->defer && k < REPORT_KINDS) {
		r->kind[k].count = 1;
		memcpy(r->kind[k].line, line, sizeof(line));
		r->kinds++;
		return;
	}
	if (r->fn != NULL)
		r->fn(line, r->arg);
}

int agile__rules_flush(struct reporter *r)
{
	for (int k = 0; k < r->kinds; k++) {
		char *line = r->kind[k].line;
		size_t n = strlen(line);

		if (r->kind[k].count > 1)
			snprintf(line + n, MESSAGE_MAX - n, " (and %d more like "
			         "it)", r->kind[k].count - 1);
		if (r->fn != NULL)
			r->fn(line, r->arg);
	}
	r->kinds = 0;
	return r->errors;
}
