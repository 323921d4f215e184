/*
 * rules_env.c - the environment scan: every AGILE_DEST_<NAME> and
 * AGILE_LISTEN_<NAME> entry of an environment, parsed in NAME order into
 * one array of rules, so that every process of a program sorts the same
 * variables the same way whatever order its environment holds them in.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "rules_internal.h"

/* NAME of an "AGILE_DEST_NAME=value" entry, its length, and the value. */
static bool dest_entry(const char *entry, const char **name, size_t *len,
                       const char **value, bool *inbound)
{
	const char *eq;

	if (strncmp(entry, DEST_PREFIX, DEST_PREFIX_LEN) == 0)
		*inbound = false;
	else if (strncmp(entry, LISTEN_PREFIX, LISTEN_PREFIX_LEN) == 0)
		*inbound = true;
	else
		return false;
	eq = strchr(entry, '=');
	if (eq == NULL)
		return false;
	*name = entry + (*inbound ? LISTEN_PREFIX_LEN : DEST_PREFIX_LEN);
	*len = (size_t)(eq - *name);
	*value = eq + 1;
	return true;
}

/* One AGILE_DEST_ entry's place in the order of rules. */
struct entry_key {
	const char *name;
	size_t len;
	size_t index; /* in envp */
	bool inbound; /* AGILE_LISTEN_ rather than AGILE_DEST_ */
};

/*
 * Order of entries: NAME without case, then NAME as written, then position
 * in envp, so the order is total and every process sorts the same variables
 * the same way whatever order its environment holds them in.
 */
static int compare_entries(const struct entry_key *a,
                           const struct entry_key *b)
{
	int c;

	for (size_t i = 0; i < a->len && i < b->len; i++) {
		c = tolower((unsigned char)a->name[i]) -
		    tolower((unsigned char)b->name[i]);
		if (c != 0)
			return c;
	}
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	c = memcmp(a->name, b->name, a->len);
	if (c != 0)
		return c;
	return a->index < b->index ? -1 : a->index > b->index;
}

/*
 * Rules are taken in sorted order by selection: each round scans envp for
 * the smallest entry after the previous one.  O(rules x environment), at
 * most 33 passes over a few dozen strings, and no allocation, which matters
 * in a constructor that runs in every process of a script.
 */
int agile__rules_parse(char *const *envp, struct agile_rules *out,
                      agile_rules_error_fn on_error, void *arg)
{
	struct entry_key previous = { NULL, 0, 0, false };
	int errors = 0;

	memset(out, 0, sizeof(*out));
	out->generation = 1;
	if (envp == NULL)
		return 0;
	for (;;) {
		struct entry_key next = { NULL, 0, 0, false };
		struct entry_key candidate;
		const char *value = NULL;
		const char *candidate_value;
		char var[LISTEN_PREFIX_LEN + AGILE_RULE_DEST_MAX];
		char name[AGILE_RULE_DEST_MAX];
		const char *prefix;
		struct agile_rule *rule;
		struct reporter r;

		for (size_t i = 0; envp[i] != NULL; i++) {
			if (!dest_entry(envp[i], &candidate.name, &candidate.len,
			                &candidate_value, &candidate.inbound))
				continue;
			candidate.index = i;
			if (previous.name != NULL &&
			    compare_entries(&candidate, &previous) <= 0)
				continue;
			if (next.name == NULL ||
			    compare_entries(&candidate, &next) < 0) {
				next = candidate;
				value = candidate_value;
			}
		}
		if (next.name == NULL)
			break;
		previous = next;
		prefix = next.inbound ? LISTEN_PREFIX : DEST_PREFIX;
		snprintf(var, sizeof(var), "%s%.*s", prefix, (int)next.len,
		         next.name);
		r = (struct reporter){ var, on_error, arg, 0, .defer = false };

		if (next.len == 0) {
			report(&r, "no NAME after %s; expected %s<NAME>=%s "
			       "key=value...", prefix, prefix,
			       next.inbound ? "[ADDRESS]:PORT" : "DEST");
			errors += r.errors;
			continue;
		}
		if (out->count == AGILE_RULES_MAX) {
			report(&r, "too many destinations; at most %d are read "
			       "and this one is ignored", AGILE_RULES_MAX);
			errors += r.errors;
			continue;
		}

		rule = &out->rule[out->count];
		snprintf(name, sizeof(name), "%.*s", (int)next.len, next.name);
		errors += agile__rules_parse_rule(var, name, value,
		                                  next.inbound, rule, on_error,
		                                  arg);
		for (int i = 0; i < out->count; i++) {
			if (strcmp(out->rule[i].name, rule->name) != 0)
				continue;
			report(&r, "the name \"%s\" is already used by another "
			       "%s variable (names are compared without "
			       "case); both rules are kept", rule->name,
			       out->rule[i].inbound ? "AGILE_LISTEN_"
			                            : "AGILE_DEST_");
			errors += r.errors;
			break;
		}
		out->count++;
	}
	return errors;
}

size_t agile__rule_var(const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, DEST_PREFIX "%s", name);

	for (size_t i = DEST_PREFIX_LEN; i < len && buf[i] != '\0'; i++)
		buf[i] = (char)toupper((unsigned char)buf[i]);
	return n < 0 ? 0 : (size_t)n;
}
