/*
 * agilerun_env.c - agilerun's -d and -s, checked with the preload's own
 * parser and turned into the environment the command runs with
 * (AGILE_DEST_<NAME>, AGILE_STATE): a mistake is reported here, once,
 * before anything runs.
 */
#include "config.h"

#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "agilerun.h"
#include "rules.h"

/* The NAMEs of the -d options read so far, lower-cased as agilestat shows
 * them: two -d of one NAME would set one variable twice, and the second
 * would silently replace the first. */
static char spec_names[AGILE_RULES_MAX][AGILE_RULE_NAME_MAX];
static int spec_count;
/* The -d options with fleet settings, which need AGILE_REDIS. */
static int fleet_specs;

/* Print one parser message the way every message of agilerun looks. */
static void print_problem(const char *message, void *arg)
{
	(void)arg;
	warnx("%s", message);
}

void agilerun_set_variable(const char *name, const char *value)
{
	if (setenv(name, value, 1) != 0)
		err(EXIT_AGILERUN, "cannot set %s", name);
	if (agilerun_verbose)
		warnx("%s=%s", name, value);
}

/*
 * Unset the exported variables that name `var`'s destination in another
 * case (AGILE_DEST_api for AGILE_DEST_API).  The preload compares NAMEs
 * without case, so such a variable is the same NAME as the -d: left in
 * place it would not be replaced as agilerun(1) promises, and every process
 * would run both rules and warn about the second.
 */
static void unset_other_cases(const char *var)
{
	size_t len = strlen(var);
	char found[sizeof("AGILE_DEST_") + AGILE_RULE_NAME_MAX];

	for (;;) {
		found[0] = '\0';
		for (char **e = environ; *e != NULL; e++) {
			if (strncmp(*e, "AGILE_DEST_", 11) == 0 &&
			    strncasecmp(*e, var, len) == 0 && (*e)[len] == '=' &&
			    strncmp(*e, var, len) != 0) {
				memcpy(found, *e, len);
				found[len] = '\0';
				break;
			}
		}
		if (found[0] == '\0')
			return;
		if (unsetenv(found) != 0)
			err(EXIT_AGILERUN, "cannot unset %s", found);
		if (agilerun_verbose)
			warnx("unset %s: the -d of the same NAME replaces it",
			      found);
	}
}

/*
 * Check one -d SPEC and set its variable.  Returns the number of problems
 * reported: a NAME that cannot be a variable name, or whatever the rules
 * parser finds in the value.  A rule the preload would disable or run with a
 * default instead of what was written is equally an error here, since
 * nothing has run yet and the user is at the keyboard.
 */
int agilerun_apply_spec(const char *spec)
{
	const char *eq = strchr(spec, '=');
	char var[sizeof("AGILE_DEST_") + AGILE_RULE_NAME_MAX];
	char name[AGILE_RULE_NAME_MAX];
	struct agile_rule rule;
	size_t len;
	int problems;

	len = eq != NULL ? (size_t)(eq - spec) : 0;
	if (eq == NULL || len == 0) {
		warnx("-d \"%s\": expected NAME=DEST key=value...", spec);
		return 1;
	}
	if (len >= sizeof(name)) {
		warnx("-d \"%s\": the name is longer than %zu characters", spec,
		      sizeof(name) - 1);
		return 1;
	}
	if (strspn(spec, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	                 "0123456789_") < len) {
		warnx("-d \"%.*s\": the name may hold only letters, digits and "
		      "'_'", (int)len, spec);
		return 1;
	}
	memcpy(name, spec, len);
	name[len] = '\0';
	for (int i = 0; i < spec_count; i++) {
		if (strcasecmp(spec_names[i], name) == 0) {
			warnx("-d \"%s\": the name is given twice (names are "
			      "compared without case); expected each NAME once",
			      name);
			return 1;
		}
	}
	if (spec_count < AGILE_RULES_MAX) {
		for (size_t i = 0; i <= len; i++)
			spec_names[spec_count][i] =
				(char)tolower((unsigned char)name[i]);
		spec_count++;
	}
	agile__rule_var(name, var, sizeof(var));

	problems = agile__rule_parse(var, name, eq + 1, &rule, print_problem,
	                            NULL);
	if (agile_fleet_rule_any(&rule.fleet))
		fleet_specs++;
	if (problems == 0) {
		unset_other_cases(var);
		agilerun_set_variable(var, eq + 1);
	}
	return problems;
}

/* Fleet settings without a usable AGILE_REDIS are enforced on this host
 * alone, which the preload reports in every process (and AGILE_STRICT=1
 * refuses): say it here, once, before anything runs.  Returns the number
 * of problems reported (0 or 1). */
int agilerun_check_redis(void)
{
	const char *url = getenv("AGILE_REDIS");
	struct agile_redis_addr addr;
	char why[256];

	if (fleet_specs == 0)
		return 0;
	if (url == NULL || *url == '\0') {
		warnx("AGILE_REDIS is not set: %d -d destination%s with fleet "
		      "settings would enforce them on this host alone; expected "
		      "AGILE_REDIS=redis://HOST:PORT/DB", fleet_specs,
		      fleet_specs == 1 ? "" : "s");
		return 1;
	}
	if (agile__redis_url_parse(url, &addr, why, sizeof(why)) < 0) {
		warnx("AGILE_REDIS: %s", why);
		return 1;
	}
	return 0;
}

/* The preload reads at most AGILE_RULES_MAX rules and ignores the rest,
 * so more of them, -d and exported variables together, is an error here
 * rather than a destination silently left unthrottled.  Returns the
 * number of problems reported (0 or 1). */
int agilerun_count_rules(void)
{
	int count = 0;

	for (char **e = environ; *e != NULL; e++)
		if (strncmp(*e, "AGILE_DEST_", 11) == 0 ||
		    strncmp(*e, "AGILE_LISTEN_", 13) == 0)
			count++;
	if (count <= AGILE_RULES_MAX)
		return 0;
	warnx("%d destinations and listeners (-d and AGILE_DEST_* or "
	      "AGILE_LISTEN_* variables); expected at most %d, the most one "
	      "process reads", count, AGILE_RULES_MAX);
	return 1;
}

/* AGILE_STATE as an absolute path: the command may chdir before it opens
 * the file, and every process must find the same one. */
void agilerun_set_state(const char *path)
{
	char cwd[PATH_MAX];
	char *absolute;

	if (path[0] == '\0')
		errx(EXIT_CONFIG, "-s: the state file name is empty");
	if (path[0] == '/') {
		agilerun_set_variable("AGILE_STATE", path);
		return;
	}
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		err(EXIT_AGILERUN, "-s %s: cannot read the current directory",
		    path);
	if (asprintf(&absolute, "%s/%s", cwd, path) < 0)
		err(EXIT_AGILERUN, "-s %s", path);
	agilerun_set_variable("AGILE_STATE", absolute);
	free(absolute);
}
