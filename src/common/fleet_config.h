/*
 * fleet_config.h - what a user writes to share a destination's budget
 * across machines, read without any I/O (the rules parser, agilerun and
 * the Check suites call it as they are).
 *
 *   AGILE_REDIS=redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
 *   AGILE_REDIS=unix:/PATH[?db=N]       (also unix:///PATH, redis+unix://)
 *
 * and, on a destination (AGILE_DEST_<NAME>):
 *
 *   fleet_max=N           requests per second for the whole fleet
 *   fleet=static          the fleet bucket runs at fleet_max (the default)
 *   fleet=adaptive        one control step per tick on the fleet's merged
 *                         histogram sets the fleet rate, up to fleet_max
 *   window=N/SPAN,shared  at most N calls in any SPAN across the fleet
 *   redis_timeout=DUR     the longest one Redis round trip may take before
 *                         the host falls back to its local share (50ms)
 *
 * rediss:// (TLS) is refused with a message: the preload speaks RESP
 * itself over a plain socket (see redis_client.h for why) and carries no
 * TLS library.
 */
#ifndef AGILE_PRELOAD_FLEET_CONFIG_H
#define AGILE_PRELOAD_FLEET_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum agile_fleet_mode {
	AGILE_FLEET_NONE = 0,  /* no fleet_max: no fleet bucket */
	AGILE_FLEET_STATIC,    /* the fleet bucket runs at fleet_max */
	AGILE_FLEET_ADAPTIVE   /* it runs at the fleet controller's rate */
};

/* The default and the bounds of redis_timeout=. */
#define AGILE_FLEET_TIMEOUT_DEFAULT_NS (50 * INT64_C(1000000))
#define AGILE_FLEET_TIMEOUT_MIN_NS INT64_C(1000000)          /* 1 ms */
#define AGILE_FLEET_TIMEOUT_MAX_NS (5 * INT64_C(1000000000)) /* 5 s */
/* The largest window=N,shared (each call is one member of a sorted set). */
#define AGILE_FLEET_WINDOW_MAX 1000000

/* A rule's fleet settings; all zero when it has none.  Pointer-free and
 * fixed-width: it is hashed into the fleet record's configuration. */
struct agile_fleet_rule {
	int64_t max_rate;        /* fleet_max=, requests per second; 0 none */
	uint32_t mode;           /* enum agile_fleet_mode */
	int32_t window;          /* window=N/SPAN,shared: N; 0 none */
	int64_t window_span_ns;  /* SPAN */
	int64_t timeout_ns;      /* redis_timeout=; 0 means the default */
};

/* True when the rule needs Redis at all. */
static inline bool agile_fleet_rule_any(const struct agile_fleet_rule *f)
{
	return f->max_rate > 0 || f->window > 0;
}

/* redis_timeout= as in force. */
static inline int64_t agile_fleet_timeout_ns(const struct agile_fleet_rule *f)
{
	return f->timeout_ns > 0 ? f->timeout_ns
	                         : AGILE_FLEET_TIMEOUT_DEFAULT_NS;
}

/*
 * Whether `value` of a window= key is the shared form "N/SPAN,shared" (the
 * rules parser then hands it here rather than to the per-host window).
 */
bool agile__fleet_window_is_shared(const char *value);

/*
 * Read one fleet setting into `f`.  `key` is "fleet_max", "fleet",
 * "redis_timeout" or "window" (the shared form).  Returns 0, or -EINVAL
 * with the tail of a message in `why` ("\"x\" is not a number; expected
 * ..."), the value then left as it was.
 */
int agile__fleet_setting(struct agile_fleet_rule *f, const char *key,
                        const char *value, char *why, size_t why_len);

/*
 * What the settings say together, checked once the rule is read: returns
 * 0, or -EINVAL with a message in `why` and the offending setting undone
 * (fleet=adaptive without fleet_max is dropped back to none).
 */
int agile__fleet_check(struct agile_fleet_rule *f, char *why, size_t why_len);

/* ------------------------------------------------------------------------ */
/* AGILE_REDIS                                                               */
/* ------------------------------------------------------------------------ */

struct agile_redis_addr {
	char host[256];      /* name or numeric address; "" for unix */
	uint16_t port;       /* 6379 unless given */
	char path[108];      /* unix socket path; "" for TCP */
	char username[64];   /* AUTH user ("" for the default user) */
	char password[128];  /* AUTH password ("" for none) */
	int db;              /* SELECT, 0 unless given */
};

/*
 * Parse an AGILE_REDIS value.  Returns 0, or -EINVAL with a message tail
 * in `why`, e.g. "rediss:// (TLS) is not supported; ...".  IPv6 hosts are
 * written in brackets: redis://[::1]:6379/0.
 */
int agile__redis_url_parse(const char *url, struct agile_redis_addr *out,
                          char *why, size_t why_len);

/* "127.0.0.1:6379", "[::1]:6379" or "unix:/run/redis.sock" (no
 * credentials), snprintf-style. */
size_t agile__redis_addr_format(const struct agile_redis_addr *a, char *buf,
                               size_t len);

#endif /* AGILE_PRELOAD_FLEET_CONFIG_H */
