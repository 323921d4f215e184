/*
 * process.c - the preload's per-process life cycle (see process.h).
 *
 * The constructor does as little as possible, because LD_PRELOAD is
 * inherited by every child of the program: it checks AT_SECURE, notes the
 * process id and registers the fork handlers (so that a child forked before
 * any hook ran is still known for a fork child, not a vfork one), notes
 * which file fd 2 is (the only place the preload's messages may go), copies
 * the AGILE_ variables (see process.h), reads AGILE_STRICT, and only under
 * AGILE_STRICT=1 parses the configuration early, so that a configuration
 * error stops the program before main() runs.  Everything else is bound and
 * loaded at first use.
 *
 * This is the preload's base, which the seccomp pacer (pacer/) links too:
 * the hooks that take part in a process's life (vfork, clone) are in
 * hooks/hooks_process.c, and the fork list of every lock in forklist.c.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "destinations.h"
#include "envsnap.h"
#include "log.h"
#include "process.h"
#include "symbols.h"

static int strict_mode = -1;

extern char **environ;

/* The AGILE_ variables as the process started with them (envsnap.h),
 * copied once into a private mapping of their size, which a fork child
 * inherits.  snapshot_failed: the mapping could not be made, and no
 * variable is read (said at the first load). */
static struct agile_env_snapshot snapshot = { .entries = NULL, .count = 0 };
static pthread_once_t snapshot_once = PTHREAD_ONCE_INIT;
static int snapshot_failed;

static void take_snapshot(void)
{
	size_t size = agile__env_snapshot_size(environ);
	void *buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (buf == MAP_FAILED) {
		snapshot_failed = 1;
		agile__env_snapshot_copy(NULL, NULL, 0, &snapshot);
		return;
	}
	agile__env_snapshot_copy(environ, buf, size, &snapshot);
}

/* The snapshot, taken by the constructor; or here, by a hook that runs
 * first (another library's constructor connecting): before main() too. */
static const struct agile_env_snapshot *env_snapshot(void)
{
	int saved = errno;

	pthread_once(&snapshot_once, take_snapshot);
	errno = saved;
	return &snapshot;
}

bool agile__env_snapshot_failed(void)
{
	(void)env_snapshot();
	return snapshot_failed != 0;
}

char *const *agile__env_block(void)
{
	return env_snapshot()->entries;
}

const char *agile__env(const char *name)
{
	return agile__env_snapshot_get(env_snapshot(), name);
}

/* The process whose address space this is: set by the constructor and by the
 * fork child handler.  A vfork child runs neither, so getpid() differs from
 * it there.  0 until the constructor runs. */
static pid_t owner_pid;

int agile__strict_value(const char *v)
{
	static const char *const on[] = { "1", "true", "yes", "on" };
	static const char *const off[] = { "", "0", "false", "no", "off" };

	if (v == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
		if (strcasecmp(v, on[i]) == 0)
			return 1;
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		if (strcasecmp(v, off[i]) == 0)
			return 0;
	return -1;
}

bool agile__strict(void)
{
	if (strict_mode < 0)
		strict_mode = agile__strict_value(agile__env("AGILE_STRICT")) ==
		              1;
	return strict_mode == 1;
}

/* See process.h.  Where no vfork hook is built (hooks_process.c), any
 * vfork may have happened: set from the start. */
int agile__shared_child = !AGILE_SHARED_CHILD_HOOKED;

bool agile__in_vfork_child(void)
{
	pid_t owner;

	if (!__atomic_load_n(&agile__shared_child, __ATOMIC_RELAXED))
		return false;
	owner = __atomic_load_n(&owner_pid, __ATOMIC_RELAXED);
	return owner != 0 && getpid() != owner;
}

void agile__note_shared_child(void)
{
	__atomic_store_n(&agile__shared_child, 1, __ATOMIC_RELAXED);
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

void agile__process_atfork_child(void)
{
	__atomic_store_n(&owner_pid, getpid(), __ATOMIC_RELAXED);
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
	(void)env_snapshot();
	agile__process_register_atfork();
	agile__log_note_stderr();
	if (agile__strict()) {
		agile__bind();
		agile__destinations_load();
	}
}
