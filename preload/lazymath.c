/*
 * lazymath.c - the libm functions the core calls, bound at first use.
 *
 * LD_PRELOAD is inherited by every process a program starts (each sh, sed
 * and grep of a script), and most of them never connect to a configured
 * destination, so they never run a line of the core's arithmetic.  Linking
 * the preload against libm made the dynamic loader map libm into every one
 * of them anyway: 10 more page faults per process, about 50 us of a
 * /bin/true's start-up on the machine of README.md's performance section,
 * half of what the preload added to it (scripts/bench-overhead).
 *
 * So the preload defines, hidden, the few libm functions the core calls.
 * Each forwards to the real one, which agile__lazymath_bind() finds when
 * the configuration is first loaded (the first connect of a process with
 * AGILE_DEST_* set): dlopen() of libm, which only takes a reference when
 * the program has libm mapped already, as most do.  The results are libm's
 * own, bit for bit.
 *
 * The preload is linked with -z defs and without -lm (Makefile.am), so when
 * the core starts calling another libm function the build fails with an
 * undefined reference until the function is added here; it can never fail
 * at run time instead.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <gnu/lib-names.h>
#include <math.h>
#include <pthread.h>
#include <sys/resource.h>

#include "lazymath.h"
#include "process.h"
#include "symbols.h"

#define HIDDEN __attribute__((visibility("hidden")))

static struct {
	double (*ceil)(double);
	double (*exp2)(double);
	double (*floor)(double);
	double (*fmax)(double, double);
	long long (*llround)(double);
	double (*nextafter)(double, double);
	double (*pow)(double, double);
	double (*sqrt)(double);
} real;

static pthread_once_t bind_once = PTHREAD_ONCE_INIT;
static int bind_status = -ENOENT;

/* libm's definition, or failing that the next one after the preload (a C
 * library that carries libm itself, like musl's). */
static void *find(void *libm, const char *name)
{
	void *p = libm != NULL ? dlsym(libm, name) : NULL;

	return p != NULL ? p : dlsym(RTLD_NEXT, name);
}

#define BIND(field) (*(void **)&real.field = find(libm, #field))

static void bind_all(void)
{
	struct rlimit limit;
	void *libm;

	/* dlopen reads and closes files through the hooked functions; they
	 * pass straight through while the preload is busy. */
	agile__enter();
	libm = dlopen(LIBM_SO, RTLD_LAZY | RTLD_LOCAL);
	if (libm == NULL && agile__nofile_raise(&limit)) {
		/* The program may have used every descriptor it allows
		 * itself: without libm the preload could not throttle. */
		libm = dlopen(LIBM_SO, RTLD_LAZY | RTLD_LOCAL);
		agile__nofile_restore(&limit);
	}
	if (BIND(ceil) && BIND(exp2) && BIND(floor) && BIND(fmax) &&
	    BIND(llround) && BIND(nextafter) && BIND(pow) && BIND(sqrt))
		__atomic_store_n(&bind_status, 0, __ATOMIC_RELEASE);
	agile__leave();
}

int agile__lazymath_bind(void)
{
	pthread_once(&bind_once, bind_all);
	return __atomic_load_n(&bind_status, __ATOMIC_ACQUIRE);
}

/* The forwarders.  The configuration load binds the table before the core
 * first runs (destinations.c); binding here too, should another path reach
 * the core first, costs one load and a branch per call. */
static void ensure_bound(void)
{
	if (__atomic_load_n(&bind_status, __ATOMIC_ACQUIRE) != 0)
		(void)agile__lazymath_bind();
}

HIDDEN double ceil(double x)
{
	ensure_bound();
	return real.ceil(x);
}

HIDDEN double exp2(double x)
{
	ensure_bound();
	return real.exp2(x);
}

/* gcc expands floor inline at -O2; clang calls libm's. */
HIDDEN double floor(double x)
{
	ensure_bound();
	return real.floor(x);
}

HIDDEN double fmax(double x, double y)
{
	ensure_bound();
	return real.fmax(x, y);
}

HIDDEN long long llround(double x)
{
	ensure_bound();
	return real.llround(x);
}

/* Folded to a constant by gcc where the core uses it; called by clang. */
HIDDEN double nextafter(double x, double y)
{
	ensure_bound();
	return real.nextafter(x, y);
}

HIDDEN double pow(double x, double y)
{
	ensure_bound();
	return real.pow(x, y);
}

HIDDEN double sqrt(double x)
{
	ensure_bound();
	return real.sqrt(x);
}
