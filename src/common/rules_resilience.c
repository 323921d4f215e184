/*
 * rules_resilience.c - the resilience keys of a rule (struct
 * agile_resilience_config, resilience.h): one small reader per key, found
 * through one table, and the checks of what the keys say together once
 * every key of the rule is read.
 *
 * Like every other setting, a value that cannot be read is reported and
 * the key keeps its default; the rule stays in force.
 */
#include "config.h"

#include <string.h>

#include "internal.h"
#include "rules_internal.h"

bool agile__rules_duration(struct reporter *r, const struct key_spec *key,
                           const char *value, int64_t *out_ns)
{
	int64_t ns;
	enum number_error why = agile__lex_duration(value, &ns);

	if (why != NUMBER_OK) {
		agile__rules_report_number(r, key, value, why);
		return false;
	}
	if (ns <= 0) {
		report(r, "key \"%s\": \"%.*s\" is not greater than 0; %s",
		       key->name, QUOTE_MAX, value, key->expect);
		return false;
	}
	*out_ns = ns;
	return true;
}

/* The paths of exclude=: each begins with '/', none is empty or too long. */
static bool parse_exclude(const char *value, struct agile_resilience_config *c)
{
	const char *p = value;
	uint32_t n = 0;

	if (*value == '\0')
		return false;
	while (*p != '\0') {
		size_t len = strcspn(p, ",");

		if (len == 0 || p[0] != '/' || len >= AGILE_EXCLUDE_LEN ||
		    n == AGILE_EXCLUDE_MAX)
			return false;
		memcpy(c->exclude[n], p, len);
		c->exclude[n][len] = '\0';
		n++;
		p += len;
		/* A trailing comma is an empty path, not a separator. */
		if (*p == ',' && *++p == '\0')
			return false;
	}
	c->exclude_count = n;
	return true;
}

/* concurrency=N | adaptive | adaptive,law=NAME */
static bool parse_concurrency(const char *value,
                              struct agile_resilience_config *c)
{
	enum agile_law_kind law = AGILE_LAW_AGILE;
	uint64_t n;

	if (agile__name_starts(value, "adaptive")) {
		if (value[8] == ',') {
			if (!agile__name_starts(value + 9, "law=") ||
			    agile_law_parse(value + 13, &law) != 0)
				return false;
		} else if (value[8] != '\0') {
			return false;
		}
		c->conc_mode = AGILE_CONC_ADAPTIVE;
		c->conc_law = (uint32_t)law;
		return true;
	}
	if (agile__lex_whole(value, AGILE_STATE_PERMITS, &n) != NUMBER_OK ||
	    n == 0)
		return false;
	c->conc_mode = AGILE_CONC_FIXED;
	c->conc_limit = (int64_t)n;
	return true;
}

/* The characters of an HTTP field name (RFC 9110's tchar). */
#define HEADER_NAME_CHARS \
	"!#$%&'*+-.^_`|~0123456789" \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/* overload=, unreachable=, ignore=: "none" or statuses from 100 to 599;
 * the list is given (its default no longer applies) only when all of it
 * reads. */
static bool parse_status_list(const char *value,
                              struct agile_resilience_config *c,
                              enum agile_status_list list)
{
	uint64_t bits[AGILE_STATUS_WORDS] = { 0 };
	const char *p = value;

	if (!agile__name_is(value, "none")) {
		for (;;) {
			int status = 0, digits = 0;

			while (*p >= '0' && *p <= '9' && digits < 4) {
				status = status * 10 + (*p++ - '0');
				digits++;
			}
			if (digits != 3 || status < 100 || status > 599 ||
			    (*p != ',' && *p != '\0'))
				return false;
			bits[(status - 100) / 64] |= UINT64_C(1)
			                             << ((status - 100) % 64);
			if (*p++ == '\0')
				break;
		}
	}
	memcpy(c->status_list[list], bits, sizeof(bits));
	c->status_lists |= 1u << list;
	return true;
}

/* cache_hit=NAME[,NAME]...: header names (RFC 9110's tchar). */
static bool parse_cache_hit(const char *value,
                            struct agile_resilience_config *c)
{
	char names[AGILE_CACHE_HIT_MAX][AGILE_CACHE_HIT_LEN];
	uint32_t count = 0;
	const char *p = value;

	for (;;) {
		size_t n = strcspn(p, ",");

		if (n == 0 || n >= AGILE_CACHE_HIT_LEN ||
		    count == AGILE_CACHE_HIT_MAX ||
		    strspn(p, HEADER_NAME_CHARS) < n)
			return false;
		memcpy(names[count], p, n);
		names[count++][n] = '\0';
		if (p[n] == '\0')
			break;
		p += n + 1;
	}
	memcpy(c->cache_hit, names, sizeof(names));
	c->cache_hit_count = count;
	return true;
}

/* client_rate=R[,burst=B]: R > 0 requests a second per client, B >= 1. */
static bool parse_client_rate(const char *value,
                              struct agile_resilience_config *c)
{
	char rate[32];
	const char *comma = strchr(value, ',');
	size_t n = comma != NULL ? (size_t)(comma - value) : strlen(value);
	double r, burst = 0;

	if (n >= sizeof(rate))
		return false;
	memcpy(rate, value, n);
	rate[n] = '\0';
	if (agile__lex_decimal(rate, &r) != NUMBER_OK || !(r > 0) || r > 1e9)
		return false;
	if (comma != NULL &&
	    (!agile__name_starts(comma + 1, "burst=") ||
	     agile__lex_decimal(comma + 7, &burst) != NUMBER_OK ||
	     !(burst >= 1) || burst > 1e9))
		return false;
	c->client_rate = r;
	c->client_burst = burst;
	return true;
}

/* What a key's reader made of its value: read and stored; not valid, which
 * agile__rules_resilience reports with the key's expectation; or reported
 * already, in words of its own. */
enum value_read { READ_OK, READ_INVALID, READ_REPORTED };

/* One value to read: the key, its text, the rule's settings, and where the
 * reader stores it when its table entry names a field. */
struct reading {
	struct reporter *r;
	const struct key_spec *key;
	const char *value;
	struct agile_resilience_config *c;
	size_t field; /* offsetof(struct agile_resilience_config, ...) */
};

#define RESILIENCE_FIELD(f) offsetof(struct agile_resilience_config, f)

static enum value_read valid(bool ok)
{
	return ok ? READ_OK : READ_INVALID;
}

/* A number that did not lex, reported by its reason. */
static enum value_read bad_number(const struct reading *in,
                                  enum number_error why)
{
	agile__rules_report_number(in->r, in->key, in->value, why);
	return READ_REPORTED;
}

static void *field_of(const struct reading *in)
{
	return (char *)in->c + in->field;
}

/* acquire_timeout=, breaker_window=, connect_timeout=, retry_after=: a
 * positive duration into the int64_t field. */
static enum value_read read_duration(const struct reading *in)
{
	return agile__rules_duration(in->r, in->key, in->value,
	                             (int64_t *)field_of(in)) ? READ_OK
	                                                      : READ_REPORTED;
}

static enum value_read read_concurrency(const struct reading *in)
{
	enum agile_law_kind law;

	/* A misspelt law is the likely mistake: name it, not the whole
	 * syntax. */
	if (agile__name_starts(in->value, "adaptive,law=") &&
	    agile_law_parse(in->value + 13, &law) != 0) {
		report(in->r, "key \"concurrency\": law \"%.*s\" is not known; "
		       "expected agile, aimd, vegas or gradient", QUOTE_MAX,
		       in->value + 13);
		return READ_REPORTED;
	}
	return valid(parse_concurrency(in->value, in->c));
}

/* law=: a listener's cap is always adaptive; this picks its law. */
static enum value_read read_law(const struct reading *in)
{
	enum agile_law_kind law;

	if (agile_law_parse(in->value, &law) != 0)
		return READ_INVALID;
	in->c->conc_law = (uint32_t)law;
	return READ_OK;
}

/* concurrency_min=, _initial=, _max=: 1 to AGILE_STATE_PERMITS into the
 * int32_t field. */
static enum value_read read_conc_bound(const struct reading *in)
{
	uint64_t whole;

	if (agile__lex_whole(in->value, AGILE_STATE_PERMITS, &whole) !=
	    NUMBER_OK || whole < 1)
		return READ_INVALID;
	*(int32_t *)field_of(in) = (int32_t)whole;
	return READ_OK;
}

static enum value_read read_breaker(const struct reading *in)
{
	bool ok = agile__name_is(in->value, "sre");

	in->c->breaker = ok;
	return valid(ok);
}

static enum value_read read_breaker_k(const struct reading *in)
{
	double decimal;
	enum number_error why = agile__lex_decimal(in->value, &decimal);

	if (why != NUMBER_OK)
		return bad_number(in, why);
	if (!(decimal >= 1.0))
		return READ_INVALID;
	in->c->breaker_k = decimal;
	return READ_OK;
}

static enum value_read read_breaker_protection(const struct reading *in)
{
	double decimal;
	enum number_error why = agile__lex_decimal(in->value, &decimal);

	if (why != NUMBER_OK)
		return bad_number(in, why);
	in->c->breaker_protection = decimal;
	return READ_OK;
}

/* quota=N/PERIOD[,align] */
static enum value_read read_quota(const struct reading *in)
{
	struct agile_resilience_config *c = in->c;
	const char *rest;
	bool ok = agile__lex_count_per(in->value, INT32_MAX, &c->quota,
	                               &c->quota_period_ns, &rest);

	if (ok && rest != NULL) {
		ok = agile__name_is(rest, "align");
		c->quota_align = ok;
	}
	if (!ok)
		c->quota = 0;
	return valid(ok);
}

/* window=N/SPAN (window=N/SPAN,shared is the fleet's: rules_keys.c) */
static enum value_read read_window(const struct reading *in)
{
	struct agile_resilience_config *c = in->c;
	const char *rest;
	bool ok = agile__lex_count_per(in->value, AGILE_STATE_WINDOW_MAX,
	                               &c->window, &c->window_span_ns,
	                               &rest) && rest == NULL;

	if (!ok)
		c->window = 0;
	return valid(ok);
}

static enum value_read read_over(const struct reading *in)
{
	if (agile__name_is(in->value, "refuse"))
		in->c->over = AGILE_OVER_REFUSE;
	else if (agile__name_is(in->value, "wait"))
		in->c->over = AGILE_OVER_WAIT;
	else
		return READ_INVALID;
	return READ_OK;
}

static enum value_read read_proto(const struct reading *in)
{
	/* grpc is http whose listeners answer a shed HTTP/2 stream with
	 * gRPC's UNAVAILABLE (preload/resilience/inbound_h2.c). */
	static const struct {
		const char *word;
		uint32_t proto;
		uint32_t grpc;
	} protos[] = {
		{ "http", AGILE_PROTO_HTTP, 0 },
		{ "grpc", AGILE_PROTO_HTTP, 1 },
		{ "redis", AGILE_PROTO_REDIS, 0 },
		{ "postgres", AGILE_PROTO_POSTGRES, 0 },
		{ "mysql", AGILE_PROTO_MYSQL, 0 },
		{ "memcached", AGILE_PROTO_MEMCACHED, 0 },
		{ "none", AGILE_PROTO_NONE, 0 },
	};

	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (agile__name_is(in->value, protos[i].word)) {
			in->c->proto = protos[i].proto;
			in->c->grpc = protos[i].grpc;
			return READ_OK;
		}
	return READ_INVALID;
}

static enum value_read read_exclude(const struct reading *in)
{
	bool ok = parse_exclude(in->value, in->c);

	if (!ok)
		in->c->exclude_count = 0;
	return valid(ok);
}

/* retry=N, from 0 to 100 */
static enum value_read read_retry(const struct reading *in)
{
	uint64_t whole;
	enum number_error why = agile__lex_whole(in->value, 100, &whole);

	if (why != NUMBER_OK)
		return bad_number(in, why);
	in->c->retry = (int32_t)whole;
	return READ_OK;
}

/* key_rate=R[,burst=B]: R > 0 connects a second per address; B, the seed's
 * burst, is the tokens an address may save up. */
static enum value_read read_key_rate(const struct reading *in)
{
	const char *value = in->value;
	const char *comma = strchr(value, ',');
	size_t n = comma != NULL ? (size_t)(comma - value) : strlen(value);
	char rate[32];
	double decimal, burst = 0;
	enum number_error why;

	if (n >= sizeof(rate))
		return READ_INVALID;
	memcpy(rate, value, n);
	rate[n] = '\0';
	why = agile__lex_decimal(rate, &decimal);
	if (why != NUMBER_OK && comma == NULL)
		return bad_number(in, why);
	if (why != NUMBER_OK || !(decimal > 0))
		return READ_INVALID;
	if (comma != NULL &&
	    !(agile__name_starts(comma + 1, "burst=") &&
	      agile__lex_decimal(comma + 7, &burst) == NUMBER_OK &&
	      burst >= 1 && burst <= 1e9))
		return READ_INVALID;
	in->c->key_rate = decimal;
	in->c->key_burst = burst;
	return READ_OK;
}

/* keys=N, from 1 to ten million */
static enum value_read read_keys(const struct reading *in)
{
	uint64_t whole;
	enum number_error why = agile__lex_whole(in->value, 10000000, &whole);

	if (why != NUMBER_OK)
		return bad_number(in, why);
	if (whole == 0)
		return READ_INVALID;
	in->c->keys = (int64_t)whole;
	return READ_OK;
}

/* shed=cpu | cpu:PERMILLE */
static enum value_read read_shed(const struct reading *in)
{
	const char *value = in->value;
	bool ok = agile__name_starts(value, "cpu");
	uint64_t whole;

	if (ok && value[3] == ':') {
		ok = agile__lex_whole(value + 4, 999, &whole) == NUMBER_OK &&
		     whole > 0;
		if (ok)
			in->c->shed_cpu_permille = (int32_t)whole;
	} else if (ok && value[3] != '\0') {
		ok = false;
	}
	in->c->shed_cpu = ok;
	return valid(ok);
}

/* shed_response=close | STATUS, from 400 to 599 */
static enum value_read read_shed_response(const struct reading *in)
{
	uint64_t whole;

	if (agile__name_is(in->value, "close")) {
		in->c->shed_response = AGILE_SHED_CLOSE;
		return READ_OK;
	}
	if (agile__lex_whole(in->value, 599, &whole) != NUMBER_OK ||
	    whole < 400)
		return READ_INVALID;
	in->c->shed_response = AGILE_SHED_HTTP;
	in->c->shed_status = (int32_t)whole;
	return READ_OK;
}

static enum value_read read_overload(const struct reading *in)
{
	return valid(parse_status_list(in->value, in->c,
	                               AGILE_STATUS_OVERLOAD));
}

static enum value_read read_unreachable(const struct reading *in)
{
	return valid(parse_status_list(in->value, in->c,
	                               AGILE_STATUS_UNREACHABLE));
}

static enum value_read read_ignore(const struct reading *in)
{
	return valid(parse_status_list(in->value, in->c, AGILE_STATUS_IGNORE));
}

static enum value_read read_cache_hit(const struct reading *in)
{
	return valid(parse_cache_hit(in->value, in->c));
}

static enum value_read read_client_rate(const struct reading *in)
{
	return valid(parse_client_rate(in->value, in->c));
}

/* client_prefix=BITS, from 1 to 128 */
static enum value_read read_client_prefix(const struct reading *in)
{
	uint64_t whole;

	if (agile__lex_whole(in->value, 128, &whole) != NUMBER_OK || whole < 1)
		return READ_INVALID;
	in->c->client_prefix = (int32_t)whole;
	return READ_OK;
}

/* client_key=header:NAME */
static enum value_read read_client_key(const struct reading *in)
{
	struct agile_resilience_config *c = in->c;
	const char *header = in->value + strlen("header:");

	if (!agile__name_starts(in->value, "header:") || *header == '\0' ||
	    strlen(header) >= sizeof(c->client_header) ||
	    strspn(header, HEADER_NAME_CHARS) != strlen(header))
		return READ_INVALID;
	memcpy(c->client_header, header, strlen(header) + 1);
	return READ_OK;
}

/* clients=N, from 1 to AGILE_CLIENTS_MAX */
static enum value_read read_clients(const struct reading *in)
{
	uint64_t whole;

	if (agile__lex_whole(in->value, AGILE_CLIENTS_MAX, &whole) !=
	    NUMBER_OK || whole < 1)
		return READ_INVALID;
	in->c->clients = (uint32_t)whole;
	return READ_OK;
}

/* The seed knobs (rules_knobs.c): each reports its own mistakes. */
static enum value_read read_knob(const struct reading *in)
{
	return agile__rules_knob(in->r, in->key, in->value, in->c)
	       ? READ_OK : READ_REPORTED;
}

static enum value_read read_retry_jitter(const struct reading *in)
{
	return valid(agile__rules_retry_jitter(in->value, in->c));
}

/* Each resilience key's reader, in the key table's order; `field` for the
 * readers that serve several keys. */
static const struct {
	const char *name;
	enum value_read (*read)(const struct reading *in);
	size_t field;
} readers[] = {
	{ "concurrency", read_concurrency, 0 },
	{ "acquire_timeout", read_duration,
	  RESILIENCE_FIELD(acquire_timeout_ns) },
	{ "breaker", read_breaker, 0 },
	{ "breaker_k", read_breaker_k, 0 },
	{ "breaker_protection", read_breaker_protection, 0 },
	{ "breaker_window", read_duration,
	  RESILIENCE_FIELD(breaker_window_ns) },
	{ "breaker_floor", read_knob, 0 },
	{ "breaker_probe", read_knob, 0 },
	{ "breaker_buckets", read_knob, 0 },
	{ "quota", read_quota, 0 },
	{ "window", read_window, 0 },
	{ "over", read_over, 0 },
	{ "proto", read_proto, 0 },
	{ "exclude", read_exclude, 0 },
	{ "connect_timeout", read_duration,
	  RESILIENCE_FIELD(connect_timeout_ns) },
	{ "retry", read_retry, 0 },
	{ "retry_base", read_knob, 0 },
	{ "retry_cap", read_knob, 0 },
	{ "retry_factor", read_knob, 0 },
	{ "retry_jitter", read_retry_jitter, 0 },
	{ "key_rate", read_key_rate, 0 },
	{ "keys", read_keys, 0 },
	{ "shed", read_shed, 0 },
	{ "shed_window", read_knob, 0 },
	{ "shed_buckets", read_knob, 0 },
	{ "shed_latency", read_knob, 0 },
	{ "shed_cool", read_knob, 0 },
	{ "shed_beta", read_knob, 0 },
	{ "shed_floor", read_knob, 0 },
	{ "shed_response", read_shed_response, 0 },
	{ "retry_after", read_duration, RESILIENCE_FIELD(retry_after_ns) },
	{ "concurrency_min", read_conc_bound, RESILIENCE_FIELD(conc_min) },
	{ "concurrency_initial", read_conc_bound,
	  RESILIENCE_FIELD(conc_initial) },
	{ "concurrency_max", read_conc_bound, RESILIENCE_FIELD(conc_max) },
	{ "overload", read_overload, 0 },
	{ "unreachable", read_unreachable, 0 },
	{ "ignore", read_ignore, 0 },
	{ "cache_hit", read_cache_hit, 0 },
	{ "client_rate", read_client_rate, 0 },
	{ "client_prefix", read_client_prefix, 0 },
	{ "client_key", read_client_key, 0 },
	{ "clients", read_clients, 0 },
	{ "law", read_law, 0 },
	{ "law_smoothing", read_knob, 0 },
	{ "law_increase", read_knob, 0 },
	{ "law_decrease", read_knob, 0 },
	{ "law_utilization", read_knob, 0 },
	{ "law_tolerance", read_knob, 0 },
	{ "law_warmup", read_knob, 0 },
	{ "law_min_decay", read_knob, 0 },
	{ "law_jitter", read_knob, 0 },
};

bool agile__rules_resilience(struct reporter *r, struct agile_rule *rule,
                             const struct key_spec *key, const char *value)
{
	struct reading in = { r, key, value, &rule->resilience, 0 };
	enum value_read got = READ_OK;

	if (*value == '\0') {
		report(r, "key \"%s\" has no value; %s", key->name, key->expect);
		return false;
	}
	for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++)
		if (strcmp(readers[i].name, key->name) == 0) {
			in.field = readers[i].field;
			got = readers[i].read(&in);
			break;
		}
	if (got == READ_INVALID)
		report(r, "key \"%s\": \"%.*s\" is not valid; %s", key->name,
		       QUOTE_MAX, value, key->expect);
	return got == READ_OK;
}
