/*
 * fuzz_env.c - libFuzzer harness for the preload's copy of the environment
 * (preload/envsnap.c), which every program the preload enters makes in
 * its constructor, and for the rule parser reading that copy.
 *
 * The input's first byte chooses the room given to the copy (its measured
 * size, or less: the environment grown since it was measured); the rest is
 * split at newlines, each line one environment entry.  The copy is then
 * read as the preload reads it: looked up by name, and parsed by
 * agile__rules_parse.
 *
 * Besides the sanitizers' own checks, the harness aborts when:
 *   - the copy holds an entry that is not an AGILE_ one, or not a copy of
 *     the environment's next AGILE_ entry, in order;
 *   - entries were left out though the room was the measured size, or the
 *     entries kept and left out are not all of them;
 *   - a lookup of an entry's name does not give the first entry of that
 *     name, as getenv would;
 *   - the copy reaches past its room;
 *   - a parser's message is empty, longer than 511 characters or has a
 *     newline in it.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "envsnap.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ENTRIES_MAX 64
#define INPUT_MAX 16384

static void check_message(const char *message, void *arg)
{
	size_t len = strlen(message);

	(void)arg;
	if (len == 0 || len > 511 || strchr(message, '\n') != NULL)
		abort();
}

/* The value getenv would give for the name of entry e, from env. */
static const char *first_value(char *const *env, const char *e)
{
	size_t len = strcspn(e, "=");

	for (char *const *p = env; *p != NULL; p++)
		if (strncmp(*p, e, len) == 0 && (*p)[len] == '=')
			return *p + len + 1;
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[INPUT_MAX + 1];
	char *env[ENTRIES_MAX + 1];
	char *agile[ENTRIES_MAX + 1];
	struct agile_env_snapshot snapshot;
	struct agile_rules rules;
	size_t measured, room, left_out, n_agile = 0;
	int n = 0;
	uint8_t choice;
	char *buf;

	if (size < 1 || size - 1 > INPUT_MAX)
		return 0;
	choice = data[0];
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	for (char *line = text; line != NULL && n < ENTRIES_MAX;) {
		char *next = strchr(line, '\n');

		if (next != NULL)
			*next++ = '\0';
		env[n++] = line;
		line = next;
	}
	env[n] = NULL;
	for (int i = 0; i < n; i++)
		if (strncmp(env[i], "AGILE_", 6) == 0)
			agile[n_agile++] = env[i];
	agile[n_agile] = NULL;

	measured = agile__env_snapshot_size(env);
	/* 0-127: the measured room; 128-255: a share of it. */
	room = choice < 128 ? measured : measured * (choice - 128) / 128;
	/* Exactly room bytes, so ASan sees a write past them. */
	buf = malloc(room > 0 ? room : 1);
	if (buf == NULL)
		return 0;
	left_out = agile__env_snapshot_copy(env, room > 0 ? buf : NULL, room,
	                                   &snapshot);
	if (snapshot.entries[snapshot.count] != NULL ||
	    snapshot.count + left_out != n_agile ||
	    (room == measured && left_out != 0))
		abort();
	/* In order: each kept entry is the next AGILE_ entry kept. */
	for (size_t i = 0, j = 0; i < snapshot.count; i++, j++) {
		while (j < n_agile && strcmp(agile[j], snapshot.entries[i]) != 0)
			j++;
		if (j == n_agile || snapshot.entries[i] == agile[j])
			abort();
	}
	if (left_out == 0)
		for (size_t i = 0; i < snapshot.count; i++) {
			const char *e = snapshot.entries[i];
			const char *got, *want = first_value(agile, e);
			char name[256];
			size_t len = strcspn(e, "=");

			if (len >= sizeof(name) || e[len] != '=')
				continue;
			memcpy(name, e, len);
			name[len] = '\0';
			got = agile__env_snapshot_get(&snapshot, name);
			if (got == NULL || want == NULL || strcmp(got, want) != 0)
				abort();
		}
	agile__rules_parse(snapshot.entries, &rules, check_message, NULL);
	free(buf);
	return 0;
}
