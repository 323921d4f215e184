/*
 * rules.c - one rule: the value of an AGILE_DEST_<NAME> or AGILE_LISTEN_<NAME>
 * variable read word by word into struct agile_rule, its destination first
 * (rules_dest.c), then each key=value setting (rules_keys.c), then what the
 * settings say together (rules_checks.c).
 *
 * The parser is pure: it reads the strings it is given, writes the structs it
 * is given and reports every problem as one complete line through the
 * caller's callback.  It allocates nothing and does no I/O, so the preload can
 * run it in a constructor and the tests can drive it without a process.  The
 * one function that talks to the network, agile__rules_resolve_hosts(), is
 * kept apart (rules_hosts.c) and called by the preload when it chooses.
 *
 * The error policy is the product's promise about the ceiling: a setting that
 * cannot be read keeps its default and the rule stays in force, because a
 * typo in `floor` must not switch the limit off; only a rule whose
 * destination or `max` cannot be read is disabled, since there is nothing
 * to enforce without them.
 */
#include "config.h"

#include <string.h>

#include "rules_internal.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The next whitespace-separated word of *p, copied into buf; false at the
 * end.  A word longer than the buffer is cut, which makes it unreadable
 * rather than something else. */
static bool next_word(const char **p, char *buf, size_t size)
{
	const char *s = *p;
	size_t n = 0;

	while (is_space(*s))
		s++;
	if (*s == '\0')
		return false;
	while (*s != '\0' && !is_space(*s)) {
		if (n + 1 < size)
			buf[n++] = *s;
		s++;
	}
	buf[n] = '\0';
	*p = s;
	return true;
}

/* "max=500" where the destination should be: a known key before a '='. */
/* "max=500" where the destination should be: a known key before a '='. */
static bool looks_like_setting(const char *word)
{
	const char *eq = strchr(word, '=');

	return eq != NULL &&
	       agile__rules_find_key(word, (size_t)(eq - word)) != NULL;
}

/* A new rule: zeroed, its kind, the defaults that are not zero, and its
 * name (lower case), which agilestat shows. */
static void rule_start(struct reporter *r, struct agile_rule *out,
                       const char *name, bool inbound)
{
	memset(out, 0, sizeof(*out));
	out->inbound = inbound;
	out->resilience.inbound = inbound;
	out->resilience.breaker_protection = -1.0; /* unset: the preset's */
	agile__rules_copy_text(out->name, sizeof(out->name), name, strlen(name),
	                       true);
	if (strlen(name) >= sizeof(out->name))
		report(r, "the name is longer than %zu characters; agilestat "
		       "shows it as \"%s\"", sizeof(out->name) - 1, out->name);
	/* agilerun refuses such a NAME; a variable set some other way (env,
	 * a service unit) is told the same, and its rule still applies. */
	if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	                 "0123456789_") < strlen(name))
		report(r, "the name may hold only letters, digits and '_'; "
		       "agilestat shows it as \"%s\"", out->name);
}

/* The rule's first word, its destination or listening address, in a buffer
 * of `size` bytes that may be rewritten; whether it was read. */
static bool rule_dest(struct reporter *r, struct agile_rule *out, char *word,
                      size_t size, bool inbound)
{
	enum dest_error e;

	agile__rules_copy_text(out->dest_text, sizeof(out->dest_text), word,
	                       strlen(word), false);
	/* A listener's ":8080" is any local address: "*:8080". */
	if (inbound && word[0] == ':' && strlen(word) + 1 < size) {
		memmove(word + 1, word, strlen(word) + 1);
		word[0] = '*';
	}
	e = agile__rules_dest(word, out);
	/* Bits past the prefix: a warning, the rule is kept. */
	if (e == DEST_HOST_BITS) {
		agile__rules_report_dest(r, out->dest_text, e, inbound);
		e = DEST_OK;
	}
	/* A listener is matched by the address its socket is bound to
	 * (agile__rules_match_listen), which no host name or path ever
	 * equals: refuse one rather than never match. */
	if (e == DEST_OK && inbound && out->kind != AGILE_DEST_INET)
		e = DEST_NOT_LISTENABLE;
	if (e != DEST_OK)
		agile__rules_report_dest(r, out->dest_text, e, inbound);
	return e == DEST_OK;
}

/* One word after the destination, which should be key=value; `seen` marks
 * the keys already set, and *max_ok is set when max= reads as a rate
 * greater than 0. */
static void rule_setting(struct reporter *r, struct agile_rule *out,
                         const char *word, bool seen[RULES_KEYS_MAX],
                         bool *max_ok)
{
	const char *eq = strchr(word, '=');
	const struct key_spec *key;
	size_t index;

	if (eq == NULL) {
		key = agile__rules_find_key(word, strlen(word));
		if (key != NULL)
			report(r, "key \"%s\" has no value; expected %s=VALUE",
			       key->name, key->name);
		else
			report(r, "\"%.*s\" is not a setting; expected "
			       "key=value", QUOTE_MAX, word);
		return;
	}
	if (eq == word) {
		/* "max = 5" splits into "max", "=" and "5": the list of
		 * every key would not tell what went wrong. */
		report(r, "\"%.*s\" has no key; expected key=value, with no "
		       "space around \"=\"", QUOTE_MAX, word);
		return;
	}
	key = agile__rules_find_key(word, (size_t)(eq - word));
	if (key == NULL) {
		agile__rules_report_unknown_key(r, word, (size_t)(eq - word));
		return;
	}
	index = (size_t)(key - agile__rules_keys);
	if ((key->scope == SCOPE_DEST && out->inbound) ||
	    (key->scope == SCOPE_LISTEN && !out->inbound)) {
		report(r, "key \"%s\" applies to %s variables only; it is "
		       "ignored here", key->name,
		       out->inbound ? "AGILE_DEST_" : "AGILE_LISTEN_");
		return;
	}
	if (seen[index]) {
		report(r, "key \"%s\" is set twice; expected each key once (the "
		       "first value is kept)", key->name);
		return;
	}
	seen[index] = true;
	if (agile__rules_apply(r, out, key, eq + 1) && key == KEY_MAX) {
		if (out->config.max_rate > 0)
			*max_ok = true;
		else
			report(r, "key \"max\": \"%.*s\" is not greater than 0; "
			       "%s", QUOTE_MAX, eq + 1, KEY_MAX->expect);
	}
}

/* Once every word is read: the defaults that depend on other keys, and
 * what the settings say together. */
static void rule_finish(struct reporter *r, struct agile_rule *out,
                        const bool seen[RULES_KEYS_MAX], bool max_ok)
{
	const struct key_spec *shed_response =
		agile__rules_find_key("shed_response", strlen("shed_response"));
	char text[MESSAGE_MAX / 2];

	if (!seen[KEY_MAX - agile__rules_keys])
		report(r, "key \"max\" is missing; expected max=N, %s",
		       out->inbound ? "a whole number of connections at once "
		                      "greater than 0"
		                    : "a rate greater than 0: " RATE_FORMS);
	/* A listener that reads its requests (proto=http) sheds requests,
	 * not connections, and answers each: 503 unless shed_response= says
	 * otherwise (inbound.c). */
	if (out->inbound && out->resilience.proto == AGILE_PROTO_HTTP &&
	    !seen[shed_response - agile__rules_keys]) {
		out->resilience.shed_response = AGILE_SHED_HTTP;
		out->resilience.shed_status = 503;
	}
	agile__rules_check_resilience(r, out);
	/* What the fleet settings say together (fleet_config.h). */
	if (agile__fleet_check(&out->fleet, text, sizeof(text)) < 0)
		report(r, "%s", text);
	if (max_ok)
		agile__rules_check_rates(r, &out->config);
}

int agile__rules_parse_rule(const char *var, const char *name,
                            const char *value, bool inbound,
                            struct agile_rule *out,
                            agile_rules_error_fn on_error, void *arg)
{
	struct reporter r = { var, on_error, arg, 0, .defer = true };
	bool seen[RULES_KEYS_MAX] = { false };
	bool dest_ok = false;
	bool max_ok = false;
	char word[MESSAGE_MAX / 2];
	const char *p = value;

	rule_start(&r, out, name, inbound);
	if (!next_word(&p, word, sizeof(word))) {
		/* An empty value: nothing else to say about it. */
		report(&r, "no %s; %s", inbound ? "listening address"
		                                : "destination",
		       inbound ? LISTEN_EXPECTED : DEST_EXPECTED);
		return agile__rules_flush(&r);
	}
	if (looks_like_setting(word)) {
		/* A forgotten destination: say so, and still read the settings
		 * so every other mistake is reported in the same run. */
		report(&r, "no %s before \"%.*s\"; %s",
		       inbound ? "listening address" : "destination", QUOTE_MAX,
		       word, inbound ? LISTEN_EXPECTED : DEST_EXPECTED);
		p = value;
	} else {
		dest_ok = rule_dest(&r, out, word, sizeof(word), inbound);
	}
	while (next_word(&p, word, sizeof(word)))
		rule_setting(&r, out, word, seen, &max_ok);
	rule_finish(&r, out, seen, max_ok);
	out->enabled = dest_ok && max_ok;
	return agile__rules_flush(&r);
}

int agile__rule_parse(const char *var, const char *name, const char *value,
                     struct agile_rule *out, agile_rules_error_fn on_error,
                     void *arg)
{
	return agile__rules_parse_rule(var, name, value, false, out, on_error,
	                               arg);
}

int agile__listen_parse(const char *var, const char *name, const char *value,
                       struct agile_rule *out, agile_rules_error_fn on_error,
                       void *arg)
{
	return agile__rules_parse_rule(var, name, value, true, out, on_error,
	                               arg);
}
