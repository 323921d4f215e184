/*
 * fleet_config.c - the fleet settings of a rule and the AGILE_REDIS URL
 * (see fleet_config.h).  Pure: strings in, structs and messages out.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_config.h"
#include "internal.h"
#include "rules.h"

#define RATE_MAX INT64_C(1000000000) /* as rules.c: one grant per ns */

/* What each key expects, for messages. */
static const struct {
	const char *key;
	const char *expect;
} expects[] = {
	{ "fleet_max", "expected a whole number of requests per second for "
	  "the whole fleet, greater than 0" },
	{ "fleet", "expected static or adaptive" },
	{ "redis_timeout", "expected a duration from 1ms to 5s such as 50ms" },
	{ "window", "expected N/SPAN,shared such as 50/10s,shared" },
};

static const char *expect_of(const char *key)
{
	for (size_t i = 0; i < sizeof(expects) / sizeof(expects[0]); i++)
		if (strcmp(key, expects[i].key) == 0)
			return expects[i].expect;
	return "";
}

/* Digits only, at most `limit`: true and *out, or false. */
static bool whole(const char *s, size_t len, uint64_t limit, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		if (v > (limit - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

/* A span: a duration with a unit as agile__parse_duration reads it, also in
 * hours or days, or a bare unit meaning one of it ("s" = "1s"). */
static bool span(const char *text, int64_t *out_ns)
{
	char buf[64];
	size_t len = strlen(text);
	int64_t scale = 1, ns;

	if (len == 0 || len + 2 >= sizeof(buf))
		return false;
	snprintf(buf, sizeof(buf), "%s%s", isdigit((unsigned char)text[0]) ||
	         text[0] == '.' ? "" : "1", text);
	len = strlen(buf);
	if (buf[len - 1] == 'h' || buf[len - 1] == 'd') {
		scale = buf[len - 1] == 'h' ? 3600 : 86400;
		buf[len - 1] = 's';
	}
	if (agile__parse_duration(buf, &ns) != 0 || ns <= 0 ||
	    ns > INT64_MAX / scale)
		return false;
	*out_ns = ns * scale;
	return true;
}

bool agile__fleet_window_is_shared(const char *value)
{
	const char *comma = strrchr(value, ',');

	return comma != NULL && agile__name_is(comma + 1, "shared");
}

#define WHY(...) (snprintf(why, why_len, __VA_ARGS__), -EINVAL)

int agile__fleet_setting(struct agile_fleet_rule *f, const char *key,
                        const char *value, char *why, size_t why_len)
{
	const char *expect = expect_of(key);
	uint64_t n;

	if (*value == '\0')
		return WHY("has no value; %s", expect);
	if (strcmp(key, "fleet_max") == 0) {
		if (!whole(value, strlen(value), (uint64_t)RATE_MAX, &n) ||
		    n == 0)
			return WHY("\"%.64s\" is not a whole number from 1 to "
			           "%" PRId64 "; %s", value, RATE_MAX, expect);
		f->max_rate = (int64_t)n;
		if (f->mode == AGILE_FLEET_NONE)
			f->mode = AGILE_FLEET_STATIC;
		return 0;
	}
	if (strcmp(key, "fleet") == 0) {
		if (agile__name_is(value, "static"))
			f->mode = AGILE_FLEET_STATIC;
		else if (agile__name_is(value, "adaptive"))
			f->mode = AGILE_FLEET_ADAPTIVE;
		else
			return WHY("\"%.64s\" is not a fleet mode; %s", value,
			           expect);
		return 0;
	}
	if (strcmp(key, "redis_timeout") == 0) {
		int64_t ns;

		if (agile__parse_duration(value, &ns) != 0)
			return WHY("\"%.64s\" is not a duration; %s", value,
			           expect);
		if (ns < AGILE_FLEET_TIMEOUT_MIN_NS ||
		    ns > AGILE_FLEET_TIMEOUT_MAX_NS)
			return WHY("\"%.64s\" is out of range; %s", value,
			           expect);
		f->timeout_ns = ns;
		return 0;
	}
	if (strcmp(key, "window") == 0) {
		const char *slash = strchr(value, '/');
		const char *comma = strrchr(value, ',');
		char text[64];
		int64_t ns;

		if (slash == NULL || comma == NULL || comma < slash ||
		    !agile__name_is(comma + 1, "shared") ||
		    !whole(value, (size_t)(slash - value),
		           AGILE_FLEET_WINDOW_MAX, &n) || n == 0 ||
		    (size_t)(comma - slash - 1) >= sizeof(text))
			return WHY("\"%.64s\" is not a shared window; %s (N "
			           "from 1 to %d)", value, expect,
			           AGILE_FLEET_WINDOW_MAX);
		memcpy(text, slash + 1, (size_t)(comma - slash - 1));
		text[comma - slash - 1] = '\0';
		if (!span(text, &ns))
			return WHY("\"%.64s\": \"%s\" is not a span; %s", value,
			           text, expect);
		f->window = (int32_t)n;
		f->window_span_ns = ns;
		return 0;
	}
	return WHY("is not a fleet setting");
}

int agile__fleet_check(struct agile_fleet_rule *f, char *why, size_t why_len)
{
	if (f->mode == AGILE_FLEET_ADAPTIVE && f->max_rate <= 0) {
		f->mode = AGILE_FLEET_NONE;
		return WHY("key \"fleet\": adaptive needs the fleet's ceiling; "
		           "expected fleet_max=N as well");
	}
	if (f->timeout_ns > 0 && !agile_fleet_rule_any(f))
		return WHY("key \"redis_timeout\" has no effect without "
		           "fleet_max or a shared window; expected fleet_max=N "
		           "or window=N/SPAN,shared as well");
	return 0;
}

/* ------------------------------------------------------------------------ */
/* AGILE_REDIS                                                               */
/* ------------------------------------------------------------------------ */

/* Copy [s, s+len) into dst (size cap) if it fits. */
static bool copy(char *dst, size_t cap, const char *s, size_t len)
{
	if (len >= cap)
		return false;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return true;
}

/* "?db=N" (the only query a unix URL takes), or nothing. */
static int unix_query(const char *q, struct agile_redis_addr *out, char *why,
                      size_t why_len)
{
	uint64_t n;

	if (q == NULL)
		return 0;
	if (strncmp(q, "?db=", 4) != 0 || !whole(q + 4, strlen(q + 4), 65535, &n))
		return WHY("\"%.64s\" is not a query this URL takes; expected "
		           "?db=N", q);
	out->db = (int)n;
	return 0;
}

static int parse_unix(const char *path, struct agile_redis_addr *out,
                      char *why, size_t why_len)
{
	const char *q = strchr(path, '?');
	size_t len = q != NULL ? (size_t)(q - path) : strlen(path);

	if (len == 0 || path[0] != '/')
		return WHY("a unix socket needs an absolute path; expected "
		           "unix:/path/to/redis.sock");
	if (!copy(out->path, sizeof(out->path), path, len))
		return WHY("the socket path is longer than %zu bytes",
		           sizeof(out->path) - 1);
	return unix_query(q, out, why, why_len);
}

int agile__redis_url_parse(const char *url, struct agile_redis_addr *out,
                          char *why, size_t why_len)
{
	const char *p, *at, *host_end, *slash;
	uint64_t n;

	memset(out, 0, sizeof(*out));
	out->port = 6379;
	if (url == NULL || *url == '\0')
		return WHY("empty; expected redis://HOST:PORT/DB or "
		           "unix:/path/to/redis.sock");
	if (strncmp(url, "rediss://", 9) == 0)
		return WHY("rediss:// (TLS) is not supported: the preload speaks "
		           "RESP over a plain socket and loads no TLS library; "
		           "expected redis:// through a local TLS tunnel "
		           "(stunnel) or unix:/path");
	if (strncmp(url, "unix://", 7) == 0)
		return parse_unix(url + 7, out, why, why_len);
	if (strncmp(url, "redis+unix://", 13) == 0)
		return parse_unix(url + 13, out, why, why_len);
	if (strncmp(url, "unix:", 5) == 0)
		return parse_unix(url + 5, out, why, why_len);
	if (strncmp(url, "redis://", 8) != 0)
		return WHY("\"%.64s\" is not a Redis URL; expected "
		           "redis://HOST:PORT/DB or unix:/path/to/redis.sock",
		           url);
	p = url + 8;
	/* [[USER]:PASSWORD@]: the last '@' ends the credentials, so a
	 * password may contain '@'. */
	at = strrchr(p, '@');
	if (at != NULL) {
		const char *colon = memchr(p, ':', (size_t)(at - p));

		if (colon == NULL) {
			if (!copy(out->password, sizeof(out->password), p,
			          (size_t)(at - p)))
				return WHY("the password is too long");
		} else if (!copy(out->username, sizeof(out->username), p,
		                 (size_t)(colon - p)) ||
		           !copy(out->password, sizeof(out->password),
		                 colon + 1, (size_t)(at - colon - 1))) {
			return WHY("the user name or password is too long");
		}
		p = at + 1;
	}
	if (*p == '[') {
		host_end = strchr(p, ']');
		if (host_end == NULL)
			return WHY("\"%.64s\": an IPv6 address needs its closing "
			           "']'", url);
		if (!copy(out->host, sizeof(out->host), p + 1,
		          (size_t)(host_end - p - 1)))
			return WHY("the host is too long");
		p = host_end + 1;
	} else {
		size_t len = strcspn(p, ":/");

		if (!copy(out->host, sizeof(out->host), p, len))
			return WHY("the host is too long");
		p += len;
	}
	if (out->host[0] == '\0')
		return WHY("\"%.64s\" has no host; expected redis://HOST:PORT/DB",
		           url);
	if (*p == ':') {
		size_t len = strcspn(p + 1, "/");

		if (!whole(p + 1, len, 65535, &n) || n == 0)
			return WHY("\"%.*s\" is not a port; expected 1 to 65535",
			           (int)(len < 16 ? len : 16), p + 1);
		out->port = (uint16_t)n;
		p += 1 + len;
	}
	slash = p;
	if (*slash == '/' && slash[1] != '\0') {
		if (!whole(slash + 1, strlen(slash + 1), 65535, &n))
			return WHY("\"%.16s\" is not a database number; expected "
			           "/0, /1, ...", slash + 1);
		out->db = (int)n;
	} else if (*slash != '\0' && strcmp(slash, "/") != 0) {
		return WHY("\"%.64s\" is not a Redis URL; expected "
		           "redis://HOST:PORT/DB", url);
	}
	return 0;
}

size_t agile__redis_addr_format(const struct agile_redis_addr *a, char *buf,
                               size_t len)
{
	int n;

	if (a->path[0] != '\0')
		n = snprintf(buf, len, "unix:%s", a->path);
	else if (strchr(a->host, ':') != NULL)
		n = snprintf(buf, len, "[%s]:%u", a->host, (unsigned)a->port);
	else
		n = snprintf(buf, len, "%s:%u", a->host, (unsigned)a->port);
	return n < 0 ? 0 : (size_t)n;
}
