/*
 * forklist.c - the preload's fork list: every lock of the library, taken
 * before fork() in one written order and released after it (see below).
 * Apart from process.c, which the seccomp pacer links too, since the list
 * names the locks of the hooks and of the resilience features, which the
 * pacer has not (pacer/pacer.c keeps a list of the base's locks alone).
 */
#include "config.h"

#include <pthread.h>

#include "destinations.h"
#include "process.h"

/* 1 once the fork handlers are registered (the constructor and symbol
 * binding both ask; whichever runs first does it). */
static int atfork_registered;

/*
 * Every lock of the preload, taken before fork() in this one order and
 * released after it in the reverse order, in the parent and in the child,
 * so that a child never inherits a lock held by a thread that does not
 * exist there (socket_wrapper's SWRAP_LOCK_ALL).  No code takes a lock
 * while it holds one later in the list, so the order cannot deadlock:
 *
 *   patch_lock   hooks_dlopen.c   one patcher of a library's relocations
 *                                 at a time
 *   learn_lock   destinations.c   learning host names' addresses into the
 *                                 rules, and the host-name fallback
 *   attach_lock  destinations.c   attaching destinations to the state
 *                                 file's slots, and opening it
 *   keys_lock    keys_hook.c      the per-rule tables of keys=
 *   linger_lock  inbound_shed.c   the ring of shed connections waiting to
 *                                 be closed, held across their recv() and
 *                                 close()
 *
 * The shared-memory locks of the state file (shlock.h) are not here: held
 * by a thread of another process, or of this one, they are released by
 * their holder whatever fork() does.
 */
static void atfork_prepare(void)
{
	agile__dlopen_atfork_prepare();
	agile__destinations_atfork_prepare();
	agile__keys_atfork_prepare();
	agile__inbound_atfork_prepare();
}

static void atfork_parent(void)
{
	agile__inbound_atfork_release();
	agile__keys_atfork_release();
	agile__destinations_atfork_parent();
	agile__dlopen_atfork_release();
}

static void atfork_child(void)
{
	agile__process_atfork_child();
	agile__inbound_atfork_release();
	agile__keys_atfork_release();
	agile__destinations_atfork_child();
	agile__dlopen_atfork_release();
}

void agile__process_register_atfork(void)
{
	if (__atomic_exchange_n(&atfork_registered, 1, __ATOMIC_ACQ_REL) == 0)
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}
