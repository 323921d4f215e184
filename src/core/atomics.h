/*
 * atomics.h - the few atomic operations libagile uses, on plain naturally
 * aligned 8-byte fields.  The GCC/Clang __atomic builtins on such fields are
 * lock-free on every 64-bit target we build for, and lock-free atomics are
 * address-free, so they stay correct when the struct sits in a shared-memory
 * file mapped at different addresses by different processes.  _Atomic types
 * are avoided on purpose: they would make the shared layout depend on the
 * compiler's representation instead of on fixed-width fields.
 */
#ifndef AGILE_ATOMICS_H
#define AGILE_ATOMICS_H

#include <stdbool.h>
#include <stdint.h>

static inline uint64_t agile__load_u64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void agile__store_u64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline uint64_t agile__add_u64(uint64_t *p, uint64_t v)
{
	return __atomic_add_fetch(p, v, __ATOMIC_RELAXED);
}

static inline uint64_t agile__sub_u64(uint64_t *p, uint64_t v)
{
	return __atomic_sub_fetch(p, v, __ATOMIC_RELAXED);
}

static inline int64_t agile__load_i64(const int64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void agile__store_i64(int64_t *p, int64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Compare-and-swap; on failure *expected is updated to the current value. */
static inline bool agile__cas_i64(int64_t *p, int64_t *expected, int64_t desired)
{
	return __atomic_compare_exchange_n(p, expected, desired, false,
	                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static inline bool agile__cas_u64(uint64_t *p, uint64_t *expected, uint64_t desired)
{
	return __atomic_compare_exchange_n(p, expected, desired, false,
	                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static inline uint32_t agile__load_u32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void agile__store_u32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline int32_t agile__load_i32(const int32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void agile__store_i32(int32_t *p, int32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Doubles are read and written whole through the generic builtins, so a
 * reader never sees a torn value. */
static inline double agile__load_double(const double *p)
{
	double v;
	__atomic_load(p, &v, __ATOMIC_ACQUIRE);
	return v;
}

static inline void agile__store_double(double *p, double v)
{
	__atomic_store(p, &v, __ATOMIC_RELEASE);
}

/* Raise *p to at least v. */
static inline void agile__max_u64(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, true,
	                                               __ATOMIC_RELAXED,
	                                               __ATOMIC_RELAXED))
		;
}

#endif /* AGILE_ATOMICS_H */
