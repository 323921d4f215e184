/*
 * tls_sessions.h - which socket a TLS session writes through when its
 * library does not say: a table from a session's address (an SSL *, a
 * gnutls_session_t) to the descriptor its handshake was first seen on
 * (preload/hooks/tls_plain.h says when the preload needs it, and how the
 * descriptor is learnt).
 *
 * Open addressing over a power of two of slots, one 64-bit word each: the
 * session's address shifted left by 16 bits, ORed with the descriptor; 0
 * for an empty slot.  A session is looked for in the
 * AGILE_TLS_SESSION_PROBES slots from its home on; slots are read and
 * written with atomics only, so that a lookup takes no lock and a fork
 * never finds one held.  A session holds one slot at most (but while two
 * threads learn it at once): learnt again on another descriptor, it takes
 * its own slot again.  A slot is taken by another session only once its
 * descriptor is no longer tracked (the caller says which are); a session
 * for which no slot is left in its window is not mapped, and the preload
 * follows it by its records (tls.h).  Addresses of 47 bits or more and
 * descriptors above AGILE_TLS_SESSION_FD_MAX are never mapped.
 *
 * Pure: no system call, no global; the caller owns the slots (the preload
 * one static table of AGILE_TLS_SESSIONS, the fuzz harness smaller ones, to
 * reach full windows) and an address is only a number here, never
 * dereferenced.  Rejected: a lock-protected map (a lock in every TLS read
 * and write, and one more for the fork list), and keying on the BIO (curl's
 * own BIO holds no descriptor either).
 */
#ifndef AGILE_COMMON_TLS_SESSIONS_H
#define AGILE_COMMON_TLS_SESSIONS_H

#include <stdbool.h>
#include <stdint.h>

/* The preload's table: 4096 slots, 32 KiB. */
#define AGILE_TLS_SESSIONS_BITS 12
#define AGILE_TLS_SESSIONS (1u << AGILE_TLS_SESSIONS_BITS)
/* Slots a session may be in, from its home on; a table has at least as
 * many (bits of 4 or more). */
#define AGILE_TLS_SESSION_PROBES 16
#define AGILE_TLS_SESSION_FD_MAX 0xffff

/* The descriptor mapped to `session` in the table of 1 << bits slots, or
 * -1. */
int agile__tls_sessions_fd(const uint64_t *slots, unsigned bits,
                           const void *session);

/* Forget `session`'s mapping (a new handshake starts on it). */
void agile__tls_sessions_forget(uint64_t *slots, unsigned bits,
                                const void *session);

/* Map `session` to `fd`, taking its own slot, an empty one or one whose
 * descriptor `tracked` says is no longer a tracked socket.  Returns
 * whether `session` is mapped to `fd` after. */
bool agile__tls_sessions_learn(uint64_t *slots, unsigned bits,
                               const void *session, int fd,
                               bool (*tracked)(int fd));

#endif /* AGILE_COMMON_TLS_SESSIONS_H */
