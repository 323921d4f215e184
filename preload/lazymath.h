/*
 * lazymath.h - the libm functions the core calls, bound at first use
 * instead of loading libm into every process the preload is inherited by.
 */
#ifndef AGILE_PRELOAD_LAZYMATH_H
#define AGILE_PRELOAD_LAZYMATH_H

/*
 * Load libm (or find it already loaded) and bind the functions the core
 * calls; idempotent and thread-safe.  0, or -ENOENT when a function cannot
 * be found, in which case the core must not run: the caller disables the
 * preload, as the dynamic loader used to when it could not load libm.
 */
int agile__lazymath_bind(void);

#endif /* AGILE_PRELOAD_LAZYMATH_H */
