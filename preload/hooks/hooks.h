/*
 * hooks.h - what every hook file shares: the fast path.
 *
 * A hook asks one question before anything else: is this fd a tracked
 * socket, and is the calling thread outside the preload's own code?  If
 * not, it calls libc directly.  Files, pipes, terminals and unmatched
 * sockets therefore cost one table lookup.
 */
#ifndef AGILE_PRELOAD_HOOKS_H
#define AGILE_PRELOAD_HOOKS_H

#include "fdtable.h"
#include "symbols.h"

/* The tracked entry of `fd` a hook acts on, or NULL: none while the
 * preload's own code runs (agile__busy), the table once bound. */
static inline struct agile_fd *agile__hook_entry(int fd)
{
	if (agile__busy)
		return NULL;
	return agile__fd_lookup(fd);
}

static inline struct agile_fd *agile__hook_tracked(int fd)
{
	agile__bind();
	return agile__hook_entry(fd);
}

#endif /* AGILE_PRELOAD_HOOKS_H */
