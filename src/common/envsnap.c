/*
 * envsnap.c - the private copy of the AGILE_ variables (see envsnap.h).
 *
 * The copy is one block: the NULL-terminated pointer array first, then
 * the strings, so that it needs one allocation the caller makes (the
 * preload maps it in its constructor) and holds nothing that points
 * outside itself.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "envsnap.h"

#define PREFIX "AGILE_"
#define PREFIX_LEN (sizeof(PREFIX) - 1)

static char *const no_entries[1] = { NULL };

static int is_agile(const char *entry)
{
	return strncmp(entry, PREFIX, PREFIX_LEN) == 0;
}

size_t agile__env_snapshot_size(char *const *envp)
{
	size_t size = sizeof(char *); /* the terminating NULL */

	for (char *const *e = envp; e != NULL && *e != NULL; e++)
		if (is_agile(*e))
			size += sizeof(char *) + strlen(*e) + 1;
	return size;
}

size_t agile__env_snapshot_copy(char *const *envp, void *buf, size_t size,
                               struct agile_env_snapshot *out)
{
	size_t n = 0, left_out = 0, slots, used;
	char **array = buf;

	out->entries = no_entries;
	out->count = 0;
	for (char *const *e = envp; e != NULL && *e != NULL; e++)
		n += is_agile(*e) != 0;
	if (buf == NULL || size < sizeof(char *))
		return n;
	/* Room for at most this many pointers and their NULL. */
	slots = size / sizeof(char *) - 1;
	if (n < slots)
		slots = n;
	used = (slots + 1) * sizeof(char *);
	n = 0;
	for (char *const *e = envp; e != NULL && *e != NULL; e++) {
		size_t len;

		if (!is_agile(*e))
			continue;
		len = strlen(*e) + 1;
		if (n == slots || len > size - used) {
			left_out++;
			continue;
		}
		array[n++] = memcpy((char *)buf + used, *e, len);
		used += len;
	}
	array[n] = NULL;
	out->entries = array;
	out->count = n;
	return left_out;
}

const char *agile__env_snapshot_get(const struct agile_env_snapshot *snapshot,
                                   const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < snapshot->count; i++) {
		const char *e = snapshot->entries[i];

		if (strncmp(e, name, len) == 0 && e[len] == '=')
			return e + len + 1;
	}
	return NULL;
}
