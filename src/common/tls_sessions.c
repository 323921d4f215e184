/*
 * tls_sessions.c - the table from TLS sessions to their sockets
 * (tls_sessions.h).
 */
#include "config.h"

#include <stddef.h>

#include "tls_sessions.h"

#define FD_BITS 16
#define FD_MASK ((uint64_t)AGILE_TLS_SESSION_FD_MAX)

/* The session's key: its address shifted past the descriptor's 16 bits
 * (user-space addresses have 47 bits on x86-64 and AArch64's usual
 * layout), 0 for one that cannot be mapped. */
static uint64_t session_key(const void *session)
{
	uintptr_t p = (uintptr_t)session;

	return p != 0 && p < ((uintptr_t)1 << 47) ? (uint64_t)p << FD_BITS
	                                          : 0;
}

/* Its home slot: Fibonacci hashing of the address without its low 3 bits
 * (sessions are allocations, 8-byte aligned at least). */
static size_t session_home(uint64_t key, unsigned bits)
{
	return (size_t)((key >> (FD_BITS + 3)) * 0x9e3779b97f4a7c15ULL >>
	                (64 - bits));
}

static uint64_t *slot_at(uint64_t *slots, unsigned bits, size_t home,
                         size_t i)
{
	return &slots[(home + i) & (((size_t)1 << bits) - 1)];
}

int agile__tls_sessions_fd(const uint64_t *slots, unsigned bits,
                           const void *session)
{
	uint64_t key = session_key(session);
	size_t home = session_home(key, bits);

	if (key == 0)
		return -1;
	for (size_t i = 0; i < AGILE_TLS_SESSION_PROBES; i++) {
		uint64_t v = __atomic_load_n(slot_at((uint64_t *)slots, bits,
		                                     home, i),
		                             __ATOMIC_ACQUIRE);

		if ((v & ~FD_MASK) == key)
			return (int)(v & FD_MASK);
	}
	return -1;
}

void agile__tls_sessions_forget(uint64_t *slots, unsigned bits,
                                const void *session)
{
	uint64_t key = session_key(session);
	size_t home = session_home(key, bits);

	if (key == 0)
		return;
	for (size_t i = 0; i < AGILE_TLS_SESSION_PROBES; i++) {
		uint64_t *slot = slot_at(slots, bits, home, i);
		uint64_t v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

		if ((v & ~FD_MASK) == key)
			__atomic_compare_exchange_n(slot, &v, 0, false,
			                            __ATOMIC_ACQ_REL,
			                            __ATOMIC_ACQUIRE);
	}
}

bool agile__tls_sessions_learn(uint64_t *slots, unsigned bits,
                               const void *session, int fd,
                               bool (*tracked)(int fd))
{
	uint64_t key = session_key(session);
	size_t home = session_home(key, bits);

	if (key == 0 || fd < 0 || (uint64_t)fd > FD_MASK)
		return false;
	/* Its own slot first: a session in two slots, the first taken by
	 * another session later, would be found again on the descriptor of
	 * the second, which may by then be another connection's. */
	for (size_t i = 0; i < AGILE_TLS_SESSION_PROBES; i++) {
		uint64_t *slot = slot_at(slots, bits, home, i);
		uint64_t v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

		if ((v & ~FD_MASK) != key)
			continue;
		if (v == (key | (uint64_t)fd) ||
		    __atomic_compare_exchange_n(slot, &v, key | (uint64_t)fd,
		                                false, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			return true;
		break; /* another thread moved it: take a free one */
	}
	for (size_t i = 0; i < AGILE_TLS_SESSION_PROBES; i++) {
		uint64_t *slot = slot_at(slots, bits, home, i);
		uint64_t v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

		if ((v == 0 || !tracked((int)(v & FD_MASK))) &&
		    __atomic_compare_exchange_n(slot, &v, key | (uint64_t)fd,
		                                false, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}
