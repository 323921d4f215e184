/*
 * state.h - the state file: one budget per destination, shared by every
 * process that uses it.
 *
 * The file is a fixed-size array of fixed-size records, memory-mapped
 * MAP_SHARED by every process that talks to a configured destination.  Each
 * destination's whole limiter (bucket, histogram, controller, counters)
 * lives in its slot, so threads, fork children and unrelated programs share
 * one bucket and one controller.  The struct agile_rate_limiter is
 * pointer-free and updated with lock-free atomics (see agile.h), so a
 * process killed at any instant leaves nothing locked.
 *
 * The layout is a contract between the preload and agilestat (and between
 * two builds of the preload): every field is fixed-width, every offset below
 * is asserted by tests/common/check_state_layout.c, and the header records
 * the sizes a reader must agree with.  A file whose header disagrees —
 * another version, a different limiter size, truncated, garbage, or written
 * in an earlier boot (its monotonic timestamps would be meaningless) — is
 * never trusted: the preload renames a fresh file into its place.  A slot's
 * limiter is checked on its own, when a process attaches to it and before
 * each grant it takes, and one that fails is re-initialised in place
 * (agile__state_slot_repair), so the other slots keep their state.
 *
 * Default path (one file per user, mode 0600, in a directory only that user
 * can write; agile__state_path): /run/user/<uid>/agilepreload.state, else
 * /dev/shm/agilepreload-<uid>/state, else, when another user made that
 * directory first, ~/.cache/agilepreload/state; or the path in
 * AGILE_STATE.  What the file trusts and who may write it: SECURITY in
 * agilepreload(7).
 *
 *   offset  size   header (256 bytes)
 *        0     8   magic "AGILEST1"
 *        8     4   version (AGILE_STATE_VERSION)
 *       12     4   header_size (256)
 *       16     4   slot_size
 *       20     4   slot_count (64)
 *       24     4   ring_len (120)
 *       28     4   pids_max (16)
 *       32     8   file_size
 *       40     8   limiter_size: sizeof(struct agile_rate_limiter)
 *       48     8   limiter_offset: where it sits in a slot
 *       56     8   created_unix_ns
 *       64    40   boot_id: /proc/sys/kernel/random/boot_id, NUL-padded
 *      104     8   ready: AGILE_STATE_READY once fully written
 *      112     8   resilience_size: sizeof(struct agile_state_resilience)
 *      120   136   reserved, zero
 *
 *   slot i at header_size + i * slot_size:
 *        0     8   state: FREE 0, READY 1, or (pid << 8 | INIT) while a
 *                  process initialises it; CAS-claimed, never locked
 *        8     8   config_hash of the resolved configuration + dest + pace
 *       16    48   name, NUL-terminated
 *       64   128   dest text, NUL-terminated
 *      192     4   pace (enum agile_pace)
 *      196     4   reserved
 *      200     8   connects: connections paced
 *      208     8   unreachable: refused/unreachable connects, DNS failures
 *      216     8   truncated: requests cut short by close/shutdown/EOF
 *      224     8   truncated_at_tick: truncated when the last tick ran
 *      232     8   ring_count: ticks appended ever (next = ring_count % 120)
 *      240     8   created_unix_ns
 *      248     8   last_tick_unix_ns
 *      256    64   pids[16]: processes attached (0 = empty)
 *      320  7680   ring[120] of struct agile_state_tick (64 bytes each)
 *     8000    64   reserved
 *     8064     -   struct agile_state_resilience (resilience.h): the
 *                  permit table, breaker, quota, sliding window, HTTP pause
 *                  and their counters; resilience_size bytes
 *        -     -   struct agile_rate_limiter at limiter_offset (8064 +
 *                  resilience_size), then padding to 64 bytes
 *
 * Version 2 added the resilience region (version 1 had the limiter at 8064).
 * Version 3 moved the adaptive laws' state into the core concurrency limiter
 * at the region's end (the breaker now sits at its offset 23000).  Version 4
 * gave the controller's first padding word a meaning (backlog_ms), which a
 * version 3 preload's check of a slot would take for garbage and reset.
 * Version 5 stores the resolved config's five rate bounds (max, min, floor,
 * probe, initial) as doubles, for rates below one request per second: the
 * same offsets, but a version 4 preload would read their bits as integers.
 * Version 6 appended the client table (a listener's client_rate=) to the
 * resilience region, and its lock in the inbound block's padding.
 * Version 7 added the controller's peak_knee (rule b above the knee),
 * which moves every field after knee_rate.
 * Version 8 appended the controller's slo_broke (rule d's SLO break, which
 * rule b climbs back from in one tick), growing it by 8 bytes, and the
 * concurrency limiter's baseline probe at its end.
 * Version 9 appended the controller's tail_series_share, tail_series_load
 * and tail_own (a listener's tail that is not its load's).
 * Version 10 appended the controller's last_step (rule c's step, which
 * its step back undoes exactly, and its fast series).
 * Version 11 appended the bucket's rise_ns (the tick a rise keeps, which a
 * waiter's grant planned before it moves past) and the controller's
 * fastest_ns (the lowest baseline learned, rule c's fast series).
 */
#ifndef AGILE_PRELOAD_STATE_H
#define AGILE_PRELOAD_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agile.h"
#include "resilience.h"

#define AGILE_STATE_MAGIC "AGILEST1"
#define AGILE_STATE_VERSION 11
#define AGILE_STATE_SLOTS 64
#define AGILE_STATE_RING 120
#define AGILE_STATE_PIDS 16
#define AGILE_STATE_NAME_MAX 48
#define AGILE_STATE_DEST_MAX 128
#define AGILE_STATE_BOOT_ID_MAX 40
#define AGILE_STATE_READY UINT64_C(0x5245414459) /* "READY" */
#define AGILE_STATE_DEFAULT_DIR "/dev/shm"
#define AGILE_STATE_RUNTIME_ROOT "/run/user" /* + /<uid>: systemd's */

/* Slot state word values. */
#define AGILE_SLOT_FREE UINT64_C(0)
#define AGILE_SLOT_READY UINT64_C(1)
#define AGILE_SLOT_INIT UINT64_C(2) /* low byte; the pid is above it */
#define AGILE_SLOT_INIT_PID(state) ((int32_t)((state) >> 8))

struct agile_state_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint32_t slot_size;
	uint32_t slot_count;
	uint32_t ring_len;
	uint32_t pids_max;
	uint64_t file_size;
	uint64_t limiter_size;
	uint64_t limiter_offset;
	int64_t created_unix_ns;
	char boot_id[AGILE_STATE_BOOT_ID_MAX];
	uint64_t ready;
	uint64_t resilience_size;
	/* Messages the preload could not write to a program's stderr (fd 2
	 * a socket, a closed pipe: log.c), and the last of them, cut at 95
	 * bytes: agilestat shows them instead.  The text is copied without
	 * a lock, so two processes writing at once may leave a mixed one. */
	uint64_t unsaid;
	char unsaid_last[96];
	uint8_t reserved[32];
};

/* One control step, appended by the process that won it. */
struct agile_state_tick {
	int64_t unix_ns;      /* when the step ran (wall clock) */
	double rate;          /* target after the step, req/s */
	double used;          /* req/s granted during the tick */
	int64_t p50_ns;       /* the tick's round-trip quantiles */
	int64_t p99_ns;
	uint64_t samples;     /* samples the tick saw */
	uint64_t unreachable; /* unreachable calls the tick saw */
	uint64_t truncated;   /* truncated requests during the tick */
};

struct agile_state_slot {
	uint64_t state;
	uint64_t config_hash;
	char name[AGILE_STATE_NAME_MAX];
	char dest[AGILE_STATE_DEST_MAX];
	uint32_t pace;
	uint32_t reserved0;
	uint64_t connects;
	uint64_t unreachable;
	uint64_t truncated;
	uint64_t truncated_at_tick;
	uint64_t ring_count;
	int64_t created_unix_ns;
	int64_t last_tick_unix_ns;
	int32_t pids[AGILE_STATE_PIDS];
	struct agile_state_tick ring[AGILE_STATE_RING];
	/* The theoretical time of the destination's next send (monotonic ns,
	 * 0 never): grants are planned in the order sockets connect, but a
	 * program may send on them in another order, and track.c spaces the
	 * sends themselves against this (a GCRA on send times). */
	int64_t send_tat_ns;
	uint8_t reserved1[56];
	struct agile_state_resilience resilience;
	struct agile_rate_limiter limiter __attribute__((aligned(64)));
} __attribute__((aligned(64)));

#define AGILE_STATE_SIZE \
	(sizeof(struct agile_state_header) + \
	 AGILE_STATE_SLOTS * sizeof(struct agile_state_slot))

/* A mapped state file. */
struct agile_state_map {
	struct agile_state_header *header; /* NULL when not mapped */
	size_t size;
	bool writable;
};

/* Slot i of a mapped file.  By this build's sizes, which a file must
 * state exactly to be used (agile__state_validate), never by the header's
 * fields: any process of the user's can overwrite those under a mapping
 * in use, and a slot found through them could lie outside it. */
static inline struct agile_state_slot *
agile_state_slot(const struct agile_state_map *m, unsigned int i)
{
	return (struct agile_state_slot *)((char *)m->header +
	                                   sizeof(struct agile_state_header) +
	                                   (size_t)i *
	                                   sizeof(struct agile_state_slot));
}

/*
 * The state file's path into `buf`: `state_env` (AGILE_STATE) when set and
 * not empty, else the first of these whose directory is the real user's
 * (getuid(), never the effective one) and writable by no one else, checked
 * with O_NOFOLLOW and fstat: /run/user/<uid>/agilepreload.state (the
 * runtime directory systemd makes, mode 0700), then
 * /dev/shm/agilepreload-<uid>/state (made 0700 when absent and `create`),
 * then <home>/.cache/agilepreload/state (made likewise), <home> being what
 * home_of() returns for the real user (NULL: none), asked only then.
 *
 * No other variable of the environment is read, XDG_RUNTIME_DIR and HOME
 * included: every process of a user must find the same file whatever its
 * environment (a cron job's, or one the program cleared), and the preload
 * reads only its snapshot of the AGILE_ variables.
 *
 * Only a process whose effective uid is its real one creates a directory.
 * `note` gets "" or why a place was passed over ("/dev/shm/agilepreload-1000
 * belongs to uid 1001 ...; using ... instead"), which the caller should
 * say.  Returns 0, or -errno when no place is usable (`buf` then holds the
 * /dev/shm path, for messages, and `note` why).
 */
int agile__state_path(const char *state_env, const char *(*home_of)(void),
                     bool create, char *buf, size_t len, char *note,
                     size_t note_len);

/*
 * Check a mapping of `size` bytes against this build's layout and the
 * current boot.  Returns 0, or -EINVAL with a one-phrase reason in `why`
 * ("bad magic", "version 2, this build reads 1", "written before the last
 * reboot", ...).
 */
int agile__state_check(const void *map, size_t size, char *why, size_t why_len);

/*
 * The whole of agile__state_check but the reading of the boot id, which the
 * caller passes (NUL-terminated, at most AGILE_STATE_BOOT_ID_MAX - 1
 * characters; "" when /proc is unreadable).  It reads only the `size` bytes
 * at `map`, whatever they hold, and nothing else: tests/fuzz/fuzz_state.c
 * drives it with arbitrary bytes in a plain buffer.
 */
int agile__state_validate(const void *map, size_t size, const char *boot_id,
                         char *why, size_t why_len);

/*
 * Write the header of a fresh, empty file at `map` (AGILE_STATE_SIZE bytes
 * whose slots the caller has zeroed) for the boot `boot_id`, marking it
 * ready last.
 */
void agile__state_format(void *map, const char *boot_id,
                        int64_t created_unix_ns);

/*
 * Map the state file read-write for the preload, creating it when absent and
 * replacing it when agile__state_check rejects it.  The descriptor is closed
 * before returning.  *replaced_why is set to the reason when a file was
 * replaced ("" otherwise).  Returns 0 or -errno (EACCES, ENOSPC, EPERM for a
 * file owned by another user, ...).
 */
int agile__state_open_rw(const char *path, struct agile_state_map *out,
                        char *replaced_why, size_t why_len);

/* A private read-only copy of an existing state file (agilestat), read
 * with pread and never mapped shared (agile__shmfile_open_ro says why).
 * -ENOENT when absent, -EPERM with `why` when another user's, -EINVAL with
 * `why` when rejected. */
int agile__state_open_ro(const char *path, struct agile_state_map *out,
                        char *why, size_t why_len);

/* The same of the file open at `fd` whose fstat() gave `file_size`
 * (tests/fuzz/fuzz_agilestat.c: a size larger than the file is one
 * truncated while agilestat reads it). */
int agile__state_read_fd(int fd, off_t file_size, struct agile_state_map *out,
                        char *why, size_t why_len);

void agile__state_close(struct agile_state_map *m);

/* The hash that identifies one destination's configuration: the resolved
 * controller configuration, the destination text, the pace and the
 * resilience settings (`res` NULL: none). */
uint64_t agile__state_config_hash(const struct agile_resolved *resolved,
                                 const char *dest, uint32_t pace,
                                 const struct agile_resilience_config *res);

/* Result of agile__state_slot_acquire. */
enum agile_slot_result {
	AGILE_SLOT_ATTACHED = 0, /* found the destination's slot */
	AGILE_SLOT_CREATED,      /* claimed a free slot and initialised it */
	AGILE_SLOT_RECONFIGURED, /* re-initialised: its configuration changed
	                            and no other live process used it */
	AGILE_SLOT_RECLAIMED,    /* every slot was taken: the one no live
	                            process used for longest was given to
	                            this name */
	AGILE_SLOT_BESIDE        /* claimed a free slot for this configuration
	                            beside the name's slot of another one that
	                            a live process uses (*other_pid) */
};

/*
 * Find the slot of `name` in this configuration (the config hash of
 * `config`, `dest`, `pace` and `res`), or claim and initialise one, with a
 * CAS on its state word.  A name has one slot per configuration that live
 * processes use: when the configuration changes while a process of the old
 * one lives (max lowered during an incident), the processes of the new one
 * share a slot of their own (AGILE_SLOT_BESIDE) rather than each getting a
 * limiter of its own; a slot of the name that no live process uses is
 * taken over instead (AGILE_SLOT_RECONFIGURED).  Where two configurations
 * meet, the stricter ceiling wins: see agile__state_stricter.  When every
 * slot is taken and none has this configuration, the slot no live process
 * is attached to that ticked longest ago is re-initialised for it
 * (AGILE_SLOT_RECLAIMED): the history of a destination nobody uses is what
 * a new one costs.  Two processes reclaiming for the same new name at the
 * same instant choose the same slot unless a process died or ticked
 * between their looks; then the name has two slots until one is reclaimed
 * again.  Returns an enum agile_slot_result, or -ENOSPC (every slot taken
 * by a live process), -EBUSY (another process is initialising it and has
 * not finished in a reasonable time), -EINVAL (the config cannot be
 * resolved).
 */
int agile__state_slot_acquire(const struct agile_state_map *m,
                             const char *name, const char *dest,
                             uint32_t pace, const struct agile_config *config,
                             const struct agile_resilience_config *res,
                             int64_t now_ns, int64_t now_unix_ns,
                             struct agile_state_slot **out, int32_t *other_pid);

/*
 * Re-initialise the limiter of a ready slot from `config` when it fails
 * agile_rate_validate against that configuration at now_ns: the slot's
 * body is shared memory that other processes (a bug, a hostile program of
 * the same user) can write.  The slot is claimed for the repair (its state
 * word, as for initialisation), checked again under the claim, and only its
 * limiter is re-initialised: name, counters, history, attached processes and
 * resilience state stay.  A repair claim whose process died is taken over.
 * Returns 1 when it repaired the limiter, with what was wrong in `why`
 * ("bucket.min_interval_ns (0) must be ..."); 0 when the limiter is valid or
 * another live process is repairing it; -EINVAL when the configuration
 * cannot be resolved.
 */
int agile__state_slot_repair(struct agile_state_slot *s,
                            const struct agile_config *config,
                            int64_t now_ns, char *why, size_t why_len);

/*
 * The slot of another configuration of `s`'s name whose stored ceiling is
 * below `max_rate` and that a live process uses, the lowest such; NULL when
 * there is none.  A process of the looser configuration takes its grants
 * from both (agile__destinations_take), so where two configurations meet,
 * the stricter ceiling holds for the processes of both.
 */
struct agile_state_slot *agile__state_stricter(const struct agile_state_map *m,
                                              const struct agile_state_slot *s,
                                              double max_rate);

/* Initialise a slot outside any file (the per-process fallback). */
int agile__state_slot_init(struct agile_state_slot *s, const char *name,
                          const char *dest, uint32_t pace,
                          const struct agile_config *config,
                          const struct agile_resilience_config *res,
                          int64_t now_ns, int64_t now_unix_ns);

/* Record `pid` among the slot's attached processes (replacing a dead one). */
void agile__state_slot_attach_pid(struct agile_state_slot *s, int32_t pid);

/* Number of attached processes still alive; their pids into `pids`. */
int agile__state_slot_live_pids(const struct agile_state_slot *s,
                               int32_t *pids, int cap);

/* Append one tick to the history ring (only the tick winner calls it). */
void agile__state_slot_append_tick(struct agile_state_slot *s,
                                  int64_t now_unix_ns);

#endif /* AGILE_PRELOAD_STATE_H */
