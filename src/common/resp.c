/*
 * resp.c - RESP2 encoding and parsing (see resp.h).
 *
 * The parser is a recursive descent over a complete-or-not buffer: it
 * never keeps state between calls, so a caller that read more bytes simply
 * parses again from the start of the reply.  Replies the preload reads are
 * a few hundred bytes, so re-parsing costs nothing worth a state machine.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

static int put(char *buf, size_t cap, size_t *at, const void *data,
               size_t len)
{
	if (len > cap - *at)
		return -ENOSPC;
	memcpy(buf + *at, data, len);
	*at += len;
	return 0;
}

static int put_header(char *buf, size_t cap, size_t *at, char kind,
                      size_t n)
{
	char head[32];
	int len = snprintf(head, sizeof(head), "%c%zu\r\n", kind, n);

	return put(buf, cap, at, head, (size_t)len);
}

int agile__resp_command(char *buf, size_t cap, size_t *used, int argc,
                       const char *const *argv, const size_t *lens)
{
	size_t at = *used;

	if (at > cap || put_header(buf, cap, &at, '*', (size_t)argc) < 0)
		return -ENOSPC;
	for (int i = 0; i < argc; i++) {
		size_t len = lens == NULL || lens[i] == (size_t)-1
		             ? strlen(argv[i]) : lens[i];

		if (put_header(buf, cap, &at, '$', len) < 0 ||
		    put(buf, cap, &at, argv[i], len) < 0 ||
		    put(buf, cap, &at, "\r\n", 2) < 0)
			return -ENOSPC;
	}
	*used = at;
	return 0;
}

/* The line at buf[at..): its length before "\r\n", or -1 if incomplete. */
static ssize_t line_length(const char *buf, size_t len, size_t at)
{
	for (size_t i = at; i + 1 < len; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n')
			return (ssize_t)(i - at);
	return -1;
}

/* A signed decimal that fills the whole line, within the length bound. */
static int line_number(const char *s, size_t len, long long *out)
{
	char text[32];
	char *end;

	if (len == 0 || len >= sizeof(text))
		return -EPROTO;
	memcpy(text, s, len);
	text[len] = '\0';
	errno = 0;
	*out = strtoll(text, &end, 10);
	if (errno != 0 || *end != '\0' || end == text)
		return -EPROTO;
	return 0;
}

struct parser {
	const char *buf;
	size_t len;
	struct agile_resp *nodes;
	size_t cap;
	size_t used; /* nodes handed out */
};

/* Parse the value at *at into `node`; >0 done, 0 incomplete, <0 error. */
static int parse_value(struct parser *p, size_t *at, struct agile_resp *node,
                       int depth)
{
	const char *text;
	ssize_t line;
	long long n;

	if (*at >= p->len)
		return 0;
	text = p->buf + *at + 1;
	line = line_length(p->buf, p->len, *at + 1);
	if (line < 0) {
		/* A line is short; a missing CRLF after a long one means the
		 * peer is not speaking RESP. */
		return p->len - *at > 64 + 1 && p->buf[*at] != '+' &&
		       p->buf[*at] != '-' ? -EPROTO : 0;
	}
	memset(node, 0, sizeof(*node));
	switch (p->buf[*at]) {
	case '+':
	case '-':
		node->type = p->buf[*at] == '+' ? AGILE_RESP_STATUS
		                                : AGILE_RESP_ERROR;
		node->str = text;
		node->len = (size_t)line;
		*at += 1 + (size_t)line + 2;
		return 1;
	case ':':
		if (line_number(text, (size_t)line, &n) < 0)
			return -EPROTO;
		node->type = AGILE_RESP_INTEGER;
		node->integer = n;
		*at += 1 + (size_t)line + 2;
		return 1;
	case '$':
		if (line_number(text, (size_t)line, &n) < 0 || n < -1 ||
		    n > AGILE_RESP_LENGTH_MAX)
			return -EPROTO;
		*at += 1 + (size_t)line + 2;
		if (n == -1) {
			node->type = AGILE_RESP_NIL;
			return 1;
		}
		if (p->len - *at < (size_t)n + 2)
			return 0;
		if (p->buf[*at + (size_t)n] != '\r' ||
		    p->buf[*at + (size_t)n + 1] != '\n')
			return -EPROTO;
		node->type = AGILE_RESP_BULK;
		node->str = p->buf + *at;
		node->len = (size_t)n;
		*at += (size_t)n + 2;
		return 1;
	case '*':
		if (line_number(text, (size_t)line, &n) < 0 || n < -1 ||
		    n > AGILE_RESP_LENGTH_MAX)
			return -EPROTO;
		*at += 1 + (size_t)line + 2;
		if (n == -1) {
			node->type = AGILE_RESP_NIL;
			return 1;
		}
		if (depth >= AGILE_RESP_DEPTH)
			return -EPROTO;
		if ((size_t)n > p->cap - p->used)
			return -ENOSPC;
		node->type = AGILE_RESP_ARRAY;
		node->count = (size_t)n;
		node->element = p->nodes + p->used;
		p->used += (size_t)n;
		for (size_t i = 0; i < node->count; i++) {
			int rc = parse_value(p, at, &node->element[i],
			                     depth + 1);
			if (rc <= 0)
				return rc;
		}
		return 1;
	default:
		return -EPROTO;
	}
}

ssize_t agile__resp_parse(const char *buf, size_t len, struct agile_resp *nodes,
                         size_t cap, size_t *nodes_used)
{
	struct parser p = { buf, len, nodes, cap, 1 };
	size_t at = 0;
	int rc;

	if (cap == 0)
		return -ENOSPC;
	rc = parse_value(&p, &at, &nodes[0], 0);
	if (rc <= 0)
		return rc;
	if (nodes_used != NULL)
		*nodes_used = p.used;
	return (ssize_t)at;
}

int agile__resp_is_error(const struct agile_resp *r, const char *prefix)
{
	size_t len = strlen(prefix);

	return r->type == AGILE_RESP_ERROR && r->len >= len &&
	       memcmp(r->str, prefix, len) == 0 &&
	       (r->len == len || r->str[len] == ' ');
}

/* The text of a string-like reply, NUL-terminated, into text. */
static int reply_text(const struct agile_resp *r, char *text, size_t cap)
{
	if (r->type == AGILE_RESP_INTEGER) {
		snprintf(text, cap, "%lld", r->integer);
		return 0;
	}
	if ((r->type != AGILE_RESP_BULK && r->type != AGILE_RESP_STATUS) ||
	    r->len == 0 || r->len >= cap)
		return -EINVAL;
	memcpy(text, r->str, r->len);
	text[r->len] = '\0';
	return 0;
}

int agile__resp_double(const struct agile_resp *r, double *out)
{
	char text[64];
	char *end;
	double v;

	if (reply_text(r, text, sizeof(text)) < 0)
		return -EINVAL;
	/* Lua's string.format always writes a '.' decimal point; strtod
	 * would want the program's locale's, so read the digits ourselves
	 * when the locale disagrees: integer part, then fraction. */
	v = strtod(text, &end);
	if (*end == '.') {
		double scale = 0.1, frac = 0;

		for (end++; *end >= '0' && *end <= '9'; end++, scale /= 10)
			frac += (*end - '0') * scale;
		v = v < 0 || text[0] == '-' ? v - frac : v + frac;
	}
	if (*end != '\0' || end == text)
		return -EINVAL;
	*out = v;
	return 0;
}

int agile__resp_int64(const struct agile_resp *r, int64_t *out)
{
	char text[32];
	char *end;
	long long v;

	if (r->type == AGILE_RESP_INTEGER) {
		*out = r->integer;
		return 0;
	}
	if (reply_text(r, text, sizeof(text)) < 0)
		return -EINVAL;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno != 0 || *end != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}
