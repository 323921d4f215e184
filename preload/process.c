/*
 * process.c - the preload's per-process life cycle (see process.h).
 *
 * The constructor does as little as possible, because LD_PRELOAD is
 * inherited by every child of the program: it checks AT_SECURE, notes the
 * process id and registers the fork handlers (so that a child forked before
 * any hook ran is still known for a fork child, not a vfork one), notes
 * which file fd 2 is (the only place the preload's messages may go), copies
 * the AGILE_ variables (see process.h), reads AGILE_STRICT, and only under AGILE_STRICT=1 parses the configuration
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

extern char **environ;

/* The AGILE_ variables of the environment the process started with (see
 * process.h): 128 entries and 32 KiB hold 32 destinations and 32 listeners
 * with room to spare; an environment with more is not copied at all, and
 * the live one is read as before.  Static, so a process pays only for the
 * pages its variables touch, and a fork child inherits the copy. */
#define ENV_COPY_MAX 128
#define ENV_COPY_BYTES 32768
static char env_copy_bytes[ENV_COPY_BYTES];
static char *env_copy[ENV_COPY_MAX + 1];
static bool env_copied;
static bool env_use_copy;

static bool is_config_variable(const char *entry)
{
	return strncmp(entry, "AGILE_DEST_", 11) == 0 ||
	       strncmp(entry, "AGILE_LISTEN_", 13) == 0;
}

static void env_snapshot(void)
{
	size_t used = 0;
	int n = 0;

	for (char **e = environ; e != NULL && *e != NULL; e++) {
		size_t len;

		if (strncmp(*e, "AGILE_", 6) != 0)
			continue;
		len = strlen(*e) + 1;
		if (n == ENV_COPY_MAX || len > ENV_COPY_BYTES - used)
			return; /* too many to copy: env_copied stays false */
		memcpy(env_copy_bytes + used, *e, len);
		env_copy[n++] = env_copy_bytes + used;
		used += len;
	}
	env_copy[n] = NULL;
	env_copied = true;
}

void agile__env_choose(void)
{
	if (!env_copied)
		return;
	for (char **e = environ; e != NULL && *e != NULL; e++)
		if (is_config_variable(*e))
			return;
	env_use_copy = true;
}

char *const *agile__env_block(void)
{
	return env_use_copy ? env_copy : environ;
}

const char *agile__env(const char *name)
{
	size_t len = strlen(name);

	if (!env_use_copy)
		return getenv(name);
	for (char **e = env_copy; *e != NULL; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}

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
		const char *v = agile__env("AGILE_STRICT");

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
	env_snapshot();
	agile__process_register_atfork();
	agile__log_note_stderr();
	if (agile__strict()) {
		agile__bind();
		agile__destinations_load();
	}
}
