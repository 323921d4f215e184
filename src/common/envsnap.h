/*
 * envsnap.h - the preload's private copy of the AGILE_ variables.
 *
 * The environment is the program's: other threads may setenv, unsetenv,
 * putenv or clearenv at any moment, and glibc's getenv and a walk of
 * environ are safe against none of them (a string freed under the reader:
 * 4 crashes in 60 runs of 4 threads changing AGILE_DEST_ variables while 4
 * connect; issue 16, item 2).  So the preload copies the AGILE_ variables
 * once, in its constructor, before main() runs (and so before the program
 * can have started a thread), and reads only the copy from then on
 * (process.c).  Pure: the caller provides the memory.
 */
#ifndef AGILE_PRELOAD_ENVSNAP_H
#define AGILE_PRELOAD_ENVSNAP_H

#include <stddef.h>

struct agile_env_snapshot {
	char *const *entries; /* "AGILE_...=value", NULL-terminated */
	size_t count;
};

/* The bytes agile__env_snapshot_copy needs for the AGILE_ entries of envp
 * (NULL-terminated; NULL is an empty environment). */
size_t agile__env_snapshot_size(char *const *envp);

/* Copy the AGILE_ entries of envp into buf (size bytes, aligned for a
 * pointer; NULL when size is 0), in their order, and describe them in
 * *out.  Entries that do not fit (the environment grew since it was
 * measured) are left out whole; returns how many were. */
size_t agile__env_snapshot_copy(char *const *envp, void *buf, size_t size,
                               struct agile_env_snapshot *out);

/* The value of `name` in the snapshot (the first entry, as getenv), or
 * NULL. */
const char *agile__env_snapshot_get(const struct agile_env_snapshot *snapshot,
                                   const char *name);

#endif /* AGILE_PRELOAD_ENVSNAP_H */
