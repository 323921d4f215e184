/*
 * rules_internal.h - what the files of the rule parser and matcher
 * (rules.h) share: the messages' reporter, the number lexers, the key table,
 * the destination reader, and each file's entry points for the others.
 *
 *   rules_report.c      the reporter: one line per problem, repeats folded
 *   rules_lex.c         numbers, durations, periods and rates
 *   rules_keys.c        the key table, "did you mean", storing one setting
 *   rules_resilience.c  the resilience keys, one reader each
 *   rules_knobs.c       the seed knobs that only need a value in range
 *   rules_checks.c      what a rule's settings say together
 *   rules_dest.c        destinations and listening addresses
 *   rules.c             one variable's value, word by word
 *   rules_env.c         the environment scan: every AGILE_DEST_/_LISTEN_
 *   rules_match.c       matching an address, and the per-thread match cache
 *   rules_hosts.c       host names: learning their addresses, resolving them
 *
 * Everything here is pure but rules_hosts.c's resolver: see rules.h.
 */
#ifndef AGILE_COMMON_RULES_INTERNAL_H
#define AGILE_COMMON_RULES_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rules.h"

#define DEST_PREFIX "AGILE_DEST_"
#define DEST_PREFIX_LEN (sizeof(DEST_PREFIX) - 1)
#define LISTEN_PREFIX "AGILE_LISTEN_"
#define LISTEN_PREFIX_LEN (sizeof(LISTEN_PREFIX) - 1)

/* The longest line a message can be; longer user text is cut short. */
#define MESSAGE_MAX 512
/* How much of a user's value a message quotes. */
#define QUOTE_MAX 64

/* Room for a rate as agile_rate_format() writes it. */
#define RATE_TEXT 48

static inline void format_rate(char out[RATE_TEXT], double rate)
{
	agile_rate_format(rate, out, RATE_TEXT);
}

/* A rate above one grant per nanosecond cannot be spaced by the bucket, whose
 * clock is in whole nanoseconds; such a `max` would silently mean no limit. */
#define RATE_LIMIT_MAX INT64_C(1000000000)

#define DEST_EXPECTED \
	"expected IPv4:PORT, [IPv6]:PORT, CIDR:PORT, HOST:PORT or unix:/path"
/* A listener is matched by the address its socket is bound to, so neither
 * a host name nor a Unix path can name one. */
#define LISTEN_EXPECTED \
	"expected :PORT, IPv4:PORT, [IPv6]:PORT or CIDR:PORT, such as :8080"
#define RATE_FORMS \
	"requests per second such as 5 or 0.5, or a count per period such as " \
	"1/10s or 30/1m"

#define CONFIG_FIELD(field) offsetof(struct agile_config, field)

/* ------------------------------------------------------------------------ */
/* Reporting (rules_report.c)                                                */
/* ------------------------------------------------------------------------ */

/* The kinds of problem a deferring reporter keeps apart (each further
 * kind is passed on at once). */
#define REPORT_KINDS 8

/* Where messages go while one variable is parsed. */
struct reporter {
	const char *var; /* "AGILE_DEST_API", the prefix of every message */
	agile_rules_error_fn fn;
	void *arg;
	int errors;
	/* A rule's reporter defers: a problem repeated in one variable (a
	 * key given 9,999 times, 30,000 stray words) is one line, its first
	 * occurrence with the count, at agile__rules_flush.  Two messages
	 * are the same problem when they are equal but for what they quote
	 * (the key, the value, the word). */
	bool defer;
	int kinds;
	struct {
		int count;
		char line[MESSAGE_MAX];
	} kind[REPORT_KINDS];
};

/* Format one message, prefix it with the variable's name and pass it on,
 * or keep it for agile__rules_flush. */
__attribute__((format(printf, 2, 0)))
void agile__rules_vreport(struct reporter *r, const char *fmt, va_list ap);

/* agile__rules_vreport's printf form, under the short name every reader of
 * the rules calls it by. */
__attribute__((format(printf, 2, 3)))
static inline void report(struct reporter *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	agile__rules_vreport(r, fmt, ap);
	va_end(ap);
}

/* Pass on what a deferring reporter kept, one line per kind, in the order
 * first seen; returns the errors counted. */
int agile__rules_flush(struct reporter *r);

/* ------------------------------------------------------------------------ */
/* Numbers (rules_lex.c)                                                     */
/* ------------------------------------------------------------------------ */

/* Why a number could not be read; each has its own message. */
enum number_error {
	NUMBER_OK = 0,
	NUMBER_EMPTY,        /* nothing after the `=` */
	NUMBER_NOT_NUMBER,   /* not digits at all */
	NUMBER_EXPONENT,     /* "1e3": digits, but with an exponent */
	NUMBER_NOT_WHOLE,    /* a decimal where a whole number is needed */
	NUMBER_NEGATIVE,
	NUMBER_TOO_LARGE,
	NUMBER_NO_UNIT,      /* a duration without its unit */
	NUMBER_BAD_UNIT,     /* a duration with a unit we do not know */
	NUMBER_TOO_SLOW,     /* a rate below AGILE_MIN_RATE */
	NUMBER_ZERO_PERIOD   /* a rate per a period of 0 */
};

/* A whole number from 0 to `limit`, in plain digits. */
enum number_error agile__lex_whole(const char *text, uint64_t limit,
                                   uint64_t *out);
/* A decimal number, 0 or more, in plain digits, at most a million. */
enum number_error agile__lex_decimal(const char *text, double *out);
/* A duration with its unit (ns, us, ms, s, m, h), exact in nanoseconds. */
enum number_error agile__lex_duration(const char *text, int64_t *out_ns);
/* A rate: requests per second in plain digits, or a count per period. */
enum number_error agile__lex_rate(const char *text, double *out);
/* "N/PERIOD" with N in [1, max_count]; the text after PERIOD (from the
 * first ',') is left in *rest, or NULL. */
bool agile__lex_count_per(const char *value, int64_t max_count,
                          int32_t *count, int64_t *period_ns,
                          const char **rest);

/* ------------------------------------------------------------------------ */
/* Keys (rules_keys.c)                                                       */
/* ------------------------------------------------------------------------ */

enum key_type {
	KEY_RATE,     /* double requests per second, >= 0: see agile__lex_rate */
	KEY_COUNT,    /* int ticks, >= 0 */
	KEY_DURATION, /* int64_t nanoseconds, with a unit */
	KEY_TICK,     /* a KEY_DURATION of 0 (unset) or from AGILE_TICK_MIN_NS
	                 to AGILE_TICK_MAX_NS */
	KEY_INTERVAL, /* a KEY_DURATION, or off (stored as -1) */
	KEY_DECIMAL,  /* double, >= 0 */
	KEY_RULE,     /* a KEY_DECIMAL of one of the controller's rules a-d,
	                 or "off" (struct agile_config's rules_off) */
	KEY_ANCHOR,
	KEY_PRESET,
	KEY_PACE,
	KEY_INFLIGHT, /* struct agile_rule's inflight: auto, off or a gain */
	KEY_RESILIENCE, /* struct agile_resilience_config: rules_resilience.c */
	KEY_FLEET      /* struct agile_fleet_rule: see fleet_config.h */
};

/* Which rules a key applies to. */
enum key_scope {
	SCOPE_BOTH = 0, /* destinations and listeners */
	SCOPE_DEST,     /* AGILE_DEST_ only */
	SCOPE_LISTEN    /* AGILE_LISTEN_ only */
};

struct key_spec {
	const char *name;
	enum key_type type;
	size_t offset;      /* into struct agile_config; unused for KEY_PACE,
	                       KEY_INFLIGHT and KEY_RESILIENCE */
	const char *expect; /* the "expected ..." tail of a message */
	enum key_scope scope;
};

/* The key table, in agilepreload(7)'s order; max, the one required key,
 * comes first.  It holds at most RULES_KEYS_MAX keys (a rule's parser
 * marks the keys it has seen in an array of that size). */
#define RULES_KEYS_MAX 128
extern const struct key_spec agile__rules_keys[];
#define KEY_MAX (&agile__rules_keys[0])

/* The key named by word[0, len), or NULL. */
const struct key_spec *agile__rules_find_key(const char *word, size_t len);
/* Report word[0, len) as an unknown key, with the nearest key if one is
 * close enough to be the one meant. */
void agile__rules_report_unknown_key(struct reporter *r, const char *word,
                                     size_t len);
/* The message for a number that could not be read, e.g.
 *   key "max": "fast" is not a number; expected ... */
void agile__rules_report_number(struct reporter *r, const struct key_spec *key,
                                const char *value, enum number_error why);
/* Store one setting into the rule.  On any error the field keeps the value
 * it had (the default, zero) and the error is reported. */
bool agile__rules_apply(struct reporter *r, struct agile_rule *rule,
                        const struct key_spec *key, const char *value);

/* ------------------------------------------------------------------------ */
/* Resilience settings (rules_resilience.c)                                  */
/* ------------------------------------------------------------------------ */

/* One key of struct agile_resilience_config; false (and reported) when its
 * value cannot be read. */
bool agile__rules_resilience(struct reporter *r, struct agile_rule *rule,
                             const struct key_spec *key, const char *value);
/* A positive duration into *out_ns; false, and reported, otherwise. */
bool agile__rules_duration(struct reporter *r, const struct key_spec *key,
                           const char *value, int64_t *out_ns);

/* ------------------------------------------------------------------------ */
/* Seed knobs (rules_knobs.c)                                                */
/* ------------------------------------------------------------------------ */

/* One of the knobs that only need a value in range (law_*, breaker_floor,
 * _probe, _buckets, shed_* but shed_response, retry_base, _cap, _factor):
 * stored when read whole and in range, else reported. */
bool agile__rules_knob(struct reporter *r, const struct key_spec *key,
                       const char *value, struct agile_resilience_config *c);
/* retry_jitter=rigid|full|equal|decorrelated|spread[:F]: false when the
 * value is none of them. */
bool agile__rules_retry_jitter(const char *value,
                               struct agile_resilience_config *c);
/* The first seed knob whose name starts with `prefix` (law_, breaker_,
 * shed_, retry_) that the rule gave, retry_jitter= included, or NULL. */
const char *agile__rules_knob_given(const struct agile_resilience_config *c,
                                    const char *prefix);

/* ------------------------------------------------------------------------ */
/* What a rule's settings say together (rules_checks.c)                      */
/* ------------------------------------------------------------------------ */

/* The resilience keys, checked once every key is read: settings that
 * cannot apply to the rule as written are reported (and, where keeping
 * them would mislead, dropped). */
void agile__rules_check_resilience(struct reporter *r,
                                   struct agile_rule *rule);
/* The rates of a rule whose max was read: each of floor, min, probe and
 * initial above max (and probe above floor) is reported and falls back to
 * its default; then the core's own validation, in the user's key names. */
void agile__rules_check_rates(struct reporter *r, struct agile_config *c);

/* ------------------------------------------------------------------------ */
/* Destinations (rules_dest.c)                                               */
/* ------------------------------------------------------------------------ */

/* Why a destination could not be read, beyond the generic message. */
enum dest_error {
	DEST_OK = 0,
	DEST_UNREADABLE, /* the generic "cannot read destination" */
	DEST_BAD_PORT,   /* a number outside 1..65535 */
	DEST_BAD_PREFIX, /* a prefix length past the address family's bits */
	DEST_TOO_LONG,   /* a unix path longer than sun_path */
	DEST_NO_PORT,    /* an address or name with no ":PORT" after it */
	DEST_BRACKETS,   /* an IPv6 address without its brackets */
	DEST_PREFIX_OUTSIDE, /* "[fd00::]/8:443": the length outside them */
	DEST_NOT_LISTENABLE, /* a listener given a host name or a unix: path */
	DEST_NUMERIC_FORM,   /* "0x7f.0.0.1": IPv4, not in dotted decimal */
	DEST_HOST_BITS       /* read, but with bits set past its prefix */
};

/* Read a destination into the rule's kind, address, host or path, and
 * port. */
enum dest_error agile__rules_dest(const char *text, struct agile_rule *rule);
/* The message for a destination that could not be read (`inbound`: a
 * listening address). */
void agile__rules_report_dest(struct reporter *r, const char *text,
                              enum dest_error e, bool inbound);
/* An IPv4 address as the IPv4-mapped IPv6 address rules store. */
void agile__rules_map_ipv4(struct agile_inet_prefix *p,
                           const struct in_addr *a);
/* Copy at most `len` bytes of src, cut to fit, lower-cased if asked. */
void agile__rules_copy_text(char *dst, size_t size, const char *src,
                            size_t len, bool lower);
/* Copy a hostname without case and without a trailing dot, the form that
 * agile__rules_learn() compares. */
void agile__rules_normalise_host(char *dst, size_t size, const char *src);

/* ------------------------------------------------------------------------ */
/* The other files' entry points                                             */
/* ------------------------------------------------------------------------ */

/* rules.c: one rule of either kind; `inbound` for an AGILE_LISTEN_
 * variable.  Returns the errors reported. */
int agile__rules_parse_rule(const char *var, const char *name,
                            const char *value, bool inbound,
                            struct agile_rule *out,
                            agile_rules_error_fn on_error, void *arg);

/* rules_match.c: the address and port of an AF_INET or AF_INET6 sockaddr,
 * IPv4 mapped. */
bool agile__rules_inet_key(const struct sockaddr *addr, socklen_t len,
                           uint8_t out[16], int *port);

#endif /* AGILE_COMMON_RULES_INTERNAL_H */
