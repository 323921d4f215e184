/*
 * hooks_process.c - the hooks on a process's making of children that share
 * its memory: vfork() and clone() (see process.h, agile__shared_child).
 * They only note that such a child may now exist; the rest of the
 * process's life cycle is process.c's.
 */
#include "config.h"

#include <dlfcn.h>
#include <sched.h>
#include <stdarg.h>
#include <unistd.h>

#include "process.h"
#include "symbols.h"

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
#if AGILE_SHARED_CHILD_HOOKED
static pid_t vfork_as_fork(void)
{
	return fork();
}

/* Used: the only reads are the hook's own, in assembly, which link-time
 * optimisation does not see, so it must not rename or drop it. */
__attribute__((used)) void *agile__vfork_next = (void *)vfork_as_fork;

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

/* Even in a program the preload leaves alone, its vfork hook runs, so it
 * is bound before process.c's constructor looks at AT_SECURE. */
__attribute__((constructor)) static void hooks_process_start(void)
{
	vfork_bind();
}
