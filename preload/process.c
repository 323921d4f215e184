/*
 * process.c - the preload's per-process life cycle (see process.h).
 *
 * The constructor does as little as possible, because LD_PRELOAD is
 * inherited by every child of the program: it checks AT_SECURE, notes the
 * process id and registers the fork handlers (so that a child forked before
 * any hook ran is still known for a fork child, not a vfork one), notes
 * which file fd 2 is (the only place the preload's messages may go), reads
 * AGILE_STRICT, and only under AGILE_STRICT=1 parses the configuration
 * early, so that a configuration error stops the program before main()
 * runs.  Everything else is bound and loaded at first use.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <unistd.h>

#include "destinations.h"
#include "log.h"
#include "process.h"
#include "symbols.h"

static int strict_mode = -1;

/* The process whose address space this is: set by the constructor and by the
 * fork child handler.  A vfork child runs neither, so getpid() differs from
 * it there.  0 until the constructor runs. */
static pid_t owner_pid;

/* 1 once the fork handlers are registered (the constructor and symbol
 * binding both ask; whichever runs first does it). */
static int atfork_registered;

bool agile__strict(void)
{
	if (strict_mode < 0) {
		const char *v = getenv("AGILE_STRICT");

		strict_mode = v != NULL && strcmp(v, "1") == 0;
	}
	return strict_mode == 1;
}

bool agile__in_vfork_child(void)
{
	pid_t owner = __atomic_load_n(&owner_pid, __ATOMIC_RELAXED);

	return owner != 0 && getpid() != owner;
}

/* Enough for any one opening the preload makes: libm, or the state file
 * with its temporary copy and /proc's boot id. */
#define NOFILE_SPARE 4

bool agile__nofile_raise(struct rlimit *saved)
{
	int saved_errno = errno;
	struct rlimit more;
	bool raised = false;

	if (getrlimit(RLIMIT_NOFILE, saved) == 0 &&
	    saved->rlim_cur != RLIM_INFINITY &&
	    saved->rlim_cur < saved->rlim_max) {
		more = *saved;
		more.rlim_cur = saved->rlim_max - saved->rlim_cur > NOFILE_SPARE
		                ? saved->rlim_cur + NOFILE_SPARE
		                : saved->rlim_max;
		raised = setrlimit(RLIMIT_NOFILE, &more) == 0;
	}
	errno = saved_errno;
	return raised;
}

void agile__nofile_restore(const struct rlimit *saved)
{
	int saved_errno = errno;

	setrlimit(RLIMIT_NOFILE, saved);
	errno = saved_errno;
}

void agile__strict_exit(void)
{
	/* _exit: the host's atexit handlers must not run in a process the
	 * preload stops from inside one of its calls. */
	_exit(2);
}

static void atfork_prepare(void)
{
	agile__destinations_atfork_prepare();
}

static void atfork_parent(void)
{
	agile__destinations_atfork_parent();
}

static void atfork_child(void)
{
	__atomic_store_n(&owner_pid, getpid(), __ATOMIC_RELAXED);
	agile__destinations_atfork_child();
}

void agile__process_register_atfork(void)
{
	if (__atomic_exchange_n(&atfork_registered, 1, __ATOMIC_ACQ_REL) == 0)
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

__attribute__((constructor)) static void agile_preload_start(void)
{
	/* A setuid or setgid program runs with privileges the user does not
	 * have; the preload does not touch it (the dynamic loader already
	 * ignores LD_PRELOAD paths with slashes there, but a library in the
	 * system path would still load). */
	if (getauxval(AT_SECURE) != 0) {
		__atomic_store_n(&agile__disabled, 1, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&owner_pid, getpid(), __ATOMIC_RELAXED);
	agile__process_register_atfork();
	agile__log_note_stderr();
	if (agile__strict()) {
		agile__bind();
		agile__destinations_load();
	}
}
