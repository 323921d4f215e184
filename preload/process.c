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
 * error stops the program before main() runs.  Everything else is bound and loaded at first use.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
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
	size_t size = agile_env_snapshot_size(environ);
	void *buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (buf == MAP_FAILED) {
		snapshot_failed = 1;
		agile_env_snapshot_copy(NULL, NULL, 0, &snapshot);
		return;
	}
	agile_env_snapshot_copy(environ, buf, size, &snapshot);
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
	return agile_env_snapshot_get(env_snapshot(), name);
}

/* The process whose address space this is: set by the constructor and by the
 * fork child handler.  A vfork child runs neither, so getpid() differs from
 * it there.  0 until the constructor runs. */
static pid_t owner_pid;

/* 1 once the fork handlers are registered (the constructor and symbol
 * binding both ask; whichever runs first does it). */
static int atfork_registered;

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

/* See process.h.  Where no vfork hook is built (below), any vfork may
 * have happened: set from the start. */
#if defined(__x86_64__) || defined(__aarch64__)
#define SHARED_CHILD_HOOKED 1
#else
#define SHARED_CHILD_HOOKED 0
#endif
int agile__shared_child = !SHARED_CHILD_HOOKED;

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

/*
 * vfork() cannot be wrapped by a C function: the child returns from the
 * wrapper first and goes on using the stack below its caller, and the
 * parent, resumed at exec or exit, would return through the wrapper's frame
 * after the child has overwritten it.  The hook is therefore a tail jump:
 * it sets the flag (the child runs in this memory, so the flag is set for
 * the child as for the parent, which is what makes it safe) and jumps to
 * libc's vfork, which returns straight to the caller in both processes.
 *
 * The jump's target is libc's vfork from the constructor on.  Before that
 * (another library's constructor forking) it is a fork(), which POSIX
 * allows any vfork() to be.
 */
#if SHARED_CHILD_HOOKED
static pid_t vfork_as_fork(void)
{
	return fork();
}

void *agile__vfork_next = (void *)vfork_as_fork;

#if defined(__x86_64__)
__asm__(
	"	.text\n"
	"	.globl vfork\n"
	"	.type vfork, @function\n"
	"vfork:\n"
#ifdef __CET__
	"	endbr64\n"
#endif
	"	movl $1, agile__shared_child(%rip)\n"
	"	jmp *agile__vfork_next(%rip)\n"
	"	.size vfork, .-vfork\n");
#else
/* x16 and x17 are the scratch registers a PLT stub may clobber too; the
 * first instruction is BTI C (a no-op where branch targets are not
 * enforced).  Checked under qemu-aarch64, which runs vfork as a fork: the
 * flag set, libc's vfork reached, the child's exit status returned. */
__asm__(
	"	.text\n"
	"	.globl vfork\n"
	"	.type vfork, %function\n"
	"vfork:\n"
	"	hint 34\n"
	"	adrp x16, agile__shared_child\n"
	"	add x16, x16, :lo12:agile__shared_child\n"
	"	mov w17, #1\n"
	"	str w17, [x16]\n"
	"	adrp x16, agile__vfork_next\n"
	"	ldr x16, [x16, :lo12:agile__vfork_next]\n"
	"	br x16\n"
	"	.size vfork, .-vfork\n");
#endif

static void vfork_bind(void)
{
	void *next = dlsym(RTLD_NEXT, "vfork");

	if (next != NULL)
		__atomic_store_n(&agile__vfork_next, next, __ATOMIC_RELEASE);
}
#else
static void vfork_bind(void)
{
}
#endif

/* clone() is a C function whose child runs fn on its own stack and never
 * returns through the caller, so an ordinary wrapper serves.  Its three
 * optional arguments are read whether passed or not, as libc's own clone
 * reads them from their registers. */
typedef int (*clone_fn)(int (*)(void *), void *, int, void *, ...);

AGILE_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg,
                       ...)
{
	static clone_fn next;
	clone_fn real = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
	void *parent_tid, *tls, *child_tid;
	va_list ap;

	va_start(ap, arg);
	parent_tid = va_arg(ap, void *);
	tls = va_arg(ap, void *);
	child_tid = va_arg(ap, void *);
	va_end(ap);
	if (real == NULL) {
		*(void **)&real = dlsym(RTLD_NEXT, "clone");
		__atomic_store_n(&next, real, __ATOMIC_RELEASE);
	}
	if ((flags & CLONE_VM) && !(flags & CLONE_THREAD))
		agile__note_shared_child();
	return real(fn, stack, flags, arg, parent_tid, tls, child_tid);
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
 *   linger_lock  inbound.c        the ring of shed connections waiting to
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
	__atomic_store_n(&owner_pid, getpid(), __ATOMIC_RELAXED);
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

__attribute__((constructor)) static void agile_preload_start(void)
{
	/* Even in a program the preload leaves alone, its vfork hook runs. */
	vfork_bind();
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
