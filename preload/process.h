/*
 * process.h - the preload's per-process life cycle: the constructor (setuid
 * check, AGILE_STRICT), and the fork handlers that keep per-process state
 * right in a child while the shared mapping stays as it is.
 */
#ifndef AGILE_PRELOAD_PROCESS_H
#define AGILE_PRELOAD_PROCESS_H

#include <stdbool.h>

/*
 * The AGILE_ variables the preload reads: a copy of those the process
 * started with, taken by the constructor before main() runs (envsnap.h).
 * The live environment is never read again, since another thread may be
 * changing it; so a program that sets an AGILE_ variable itself does not
 * configure its own preload (its children, started with it, are
 * configured by it), and one that empties its environment (nginx gives
 * its workers only the variables its `env` directive names) keeps the
 * configuration it started with.
 */
char *const *agile__env_block(void);
const char *agile__env(const char *name);

/* The copy could not be made (no memory for it): no AGILE_ variable is
 * read.  Said once, at the first load. */
bool agile__env_snapshot_failed(void);

/* True when AGILE_STRICT is 1, true, yes or on (any case): configuration
 * and state-file failures stop the process (exit status 2) instead of
 * degrading. */
bool agile__strict(void);

/* What an AGILE_STRICT value asks: 1 (1, true, yes, on), 0 (unset, empty,
 * 0, false, no, off; any case), -1 anything else. */
int agile__strict_value(const char *v);

/* Register the fork handlers, once however often it is called: from the
 * constructor and from symbol binding, before any preload lock can be
 * taken.  Defined by the fork list of the library linked: forklist.c in
 * the preload, pacer/pacer.c in the seccomp pacer. */
void agile__process_register_atfork(void);

/* The process's own part of a fork child's handler: it is now the owner of
 * this address space (see agile__in_vfork_child). */
void agile__process_atfork_child(void);

/* The locks of hooks_dlopen.c, keys_hook.c and inbound_shed.c, taken
 * before fork() and released after it in both processes, in the order
 * forklist.c lists (destinations.h declares that module's own). */
void agile__dlopen_atfork_prepare(void);
void agile__dlopen_atfork_release(void);
void agile__keys_atfork_prepare(void);
void agile__keys_atfork_release(void);
void agile__inbound_atfork_prepare(void);
void agile__inbound_atfork_release(void);

/*
 * True in the child of a vfork() (or of a clone() sharing memory) that has
 * not yet called exec: it runs in its parent's address space, so the
 * preload's tables are the parent's.  Python's subprocess, for one, closes
 * every descriptor above 2 in such a child with close_range(); the hooks must
 * not take that for the parent closing its own sockets.
 *
 * Free until the process has made such a child: vfork(), clone() with
 * CLONE_VM and without CLONE_THREAD, and the vfork, clone and clone3 system
 * calls made through syscall() are hooked and set agile__shared_child, which
 * is never cleared.  From then on each answer costs a getpid() system call
 * (about 0.3 us), and the hooks ask only on a tracked socket's close, dup2
 * or connect.  posix_spawn() needs no hook: its child runs inside libc,
 * where no hook is called.
 */
#if defined(__x86_64__) || defined(__aarch64__)
#define AGILE_SHARED_CHILD_HOOKED 1 /* hooks_process.c has a vfork hook */
#else
#define AGILE_SHARED_CHILD_HOOKED 0
#endif
extern int agile__shared_child;
bool agile__in_vfork_child(void);
/* Set agile__shared_child: a child sharing this memory may now exist. */
void agile__note_shared_child(void);

/*
 * The preload's own descriptors, when the program has used all it allowed
 * itself.  The preload opens a file only briefly (libm at the first connect,
 * the state file once), so a program at its RLIMIT_NOFILE soft limit would
 * otherwise cost the preload libm (and with it throttling altogether) or the
 * shared budget.  agile__nofile_raise lifts the soft limit by a few
 * descriptors, never past the hard limit, and stores the old limit in
 * *saved for agile__nofile_restore; false when it cannot (the soft limit is
 * the hard one).  errno is preserved by both.
 */
struct rlimit;
bool agile__nofile_raise(struct rlimit *saved);
void agile__nofile_restore(const struct rlimit *saved);

/* Stop the process because of a failure under AGILE_STRICT=1. */
__attribute__((noreturn)) void agile__strict_exit(void);

#endif /* AGILE_PRELOAD_PROCESS_H */
