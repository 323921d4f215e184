/*
 * fleet_state.h - this host's side of the fleet budget, shared by every
 * process on the machine that uses the same state file.
 *
 * It lives in a companion file next to the state file (AGILE_STATE with
 * ".fleet" appended), created only when a destination has fleet settings,
 * so the state file's checked layout (state.h) is untouched for everyone
 * else.  Like the state file it is a fixed array of fixed-width records,
 * updated with lock-free atomics only, created under a temporary name and
 * link()ed into place, and rejected and replaced when its header disagrees
 * with this build (magic, version, sizes, boot).
 *
 * One record per destination, found by name.  It holds:
 *  - the Redis turn: the one process of this host that may talk to Redis
 *    for the destination at a time, a word claimed by compare-and-swap
 *    holding that process's pid and an expiry, so a process killed in the
 *    middle of a round trip blocks nobody past the expiry;
 *  - the leases: a ring of AGILE_FLEET_LEASES batches of fleet slots
 *    fetched from Redis, consumed by every process through one cursor word
 *    (lease number << 32 | slots used), so the processes of one host share
 *    one lease and only the turn holder calls Redis;
 *  - the fallback: whether Redis is away, the live host count last seen,
 *    and the local bucket (fleet_max / hosts) used meanwhile;
 *  - counters agilestat shows (round trips, admissions, their rates per
 *    second, the longest a call waited on Redis).
 *
 * The host id (header) is how Redis tells this host from the others: made
 * once per file from random bytes, so three state files on one machine are
 * three hosts, and one state file's processes are one.
 *
 *   header (256 bytes)
 *        0     8   magic "AGILEFL1"
 *        8     4   version (AGILE_FLEET_VERSION)
 *       12     4   header_size (256)
 *       16     4   record_size (1024)
 *       20     4   record_count (64)
 *       24     8   file_size
 *       32     8   created_unix_ns
 *       40    40   boot_id, NUL-padded
 *       80    40   host_id, NUL-terminated
 *      120     8   ready: AGILE_FLEET_READY once fully written
 *      128   128   reserved, zero
 *   record i at 256 + i * 1024 (struct agile_fleet_record; offsets are
 *   asserted by tests/common/check_fleet.c)
 */
#ifndef AGILE_PRELOAD_FLEET_STATE_H
#define AGILE_PRELOAD_FLEET_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agile.h"

#define AGILE_FLEET_MAGIC "AGILEFL1"
#define AGILE_FLEET_VERSION 1
#define AGILE_FLEET_RECORDS 64
#define AGILE_FLEET_RECORD_SIZE 1024
#define AGILE_FLEET_LEASES 4
#define AGILE_FLEET_NAME_MAX 48
#define AGILE_FLEET_HOST_ID_MAX 40
#define AGILE_FLEET_READY UINT64_C(0x5245414459) /* "READY" */
#define AGILE_FLEET_SUFFIX ".fleet"

/* Record state word, as the state file's slots. */
#define AGILE_FLEET_FREE UINT64_C(0)
#define AGILE_FLEET_IN_USE UINT64_C(1)
#define AGILE_FLEET_INIT UINT64_C(2) /* low byte; the pid is above it */

/* The turn word: 0 free, else (until_ms << 22) | pid, until_ms on
 * CLOCK_MONOTONIC.  Linux pids are below 2^22. */
#define AGILE_FLEET_TURN_PID_BITS 22

struct agile_fleet_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint32_t record_size;
	uint32_t record_count;
	uint64_t file_size;
	int64_t created_unix_ns;
	char boot_id[40];
	char host_id[AGILE_FLEET_HOST_ID_MAX];
	uint64_t ready;
	uint8_t reserved[128];
};

/* One batch of fleet slots from one Redis round trip.  Written by the turn
 * holder only while no cursor can point at it; `number` is written last. */
struct agile_fleet_lease {
	uint64_t number;      /* lease number + 1 once written; 0 never */
	int64_t start_ns;     /* local time of the first slot */
	int64_t interval_ns;  /* spacing of the slots (1 / fleet rate); 0:
	                         all usable at start (a window-only lease) */
	uint64_t count;       /* slots in the lease */
	int64_t expires_ns;   /* slots not taken by then are void */
	uint64_t window_id;   /* its shared-window members' id, 0 none */
	uint64_t reserved[2];
};

/* Where the fleet budget is coming from. */
enum agile_fleet_source {
	AGILE_FLEET_FROM_REDIS = 0, /* leases from Redis */
	AGILE_FLEET_FALLBACK,       /* Redis away: fleet_max / hosts locally */
	AGILE_FLEET_NO_REDIS        /* AGILE_REDIS unset or unreadable */
};

struct agile_fleet_record {
	/* 0: identity */
	uint64_t state;               /* FREE, IN_USE, or pid << 8 | INIT */
	uint64_t config_hash;         /* the fleet settings it was made for */
	char name[AGILE_FLEET_NAME_MAX];
	/* 64: the settings, for agilestat */
	int64_t fleet_max;            /* fleet_max=, req/s; 0 none */
	uint32_t mode;                /* enum agile_fleet_mode */
	int32_t window;               /* window=N/SPAN,shared: N; 0 none */
	int64_t window_span_ns;
	int64_t timeout_ns;           /* redis_timeout= in force */
	char redis[64];               /* where Redis is (no credentials) */
	/* 160: coordination */
	uint64_t turn;                /* the Redis turn (see above) */
	uint64_t cursor;              /* lease number << 32 | slots used */
	uint64_t leases;              /* leases installed ever */
	int64_t retry_at_ns;          /* the fleet is full until then */
	uint32_t source;              /* enum agile_fleet_source */
	uint32_t hosts;               /* live hosts Redis last counted */
	int64_t next_probe_ns;        /* in fallback: next try of Redis */
	int64_t since_unix_ns;        /* when `source` last changed */
	double fleet_rate;            /* the fleet bucket's rate, req/s */
	double demand_per_s;          /* this host's admissions, smoothed */
	uint64_t admits_at_fetch;     /* admits when the last lease came */
	int64_t fetch_ns;             /* when the last lease came */
	uint64_t handback;            /* window members of an expired lease
	                                 to hand back: (lease number + 1)
	                                 << 32 | first unused << 16 | count */
	uint64_t admits_at_tick;      /* fleet=adaptive: admits at the last
	                                 tick this host ran */
	uint64_t reserved_hb;
	uint64_t starved;             /* calls that found no slot since the
	                                 last lease (they raise the next) */
	uint64_t reserved0[5];
	/* 320: the lease ring */
	struct agile_fleet_lease lease[AGILE_FLEET_LEASES];
	/* 576: the fallback budget */
	struct agile_bucket fallback_bucket;
	double fallback_rate;         /* its rate, req/s */
	uint64_t reserved1[2];        /* the bucket's rise_ns took a third
	                                 (a zero an older file left there
	                                 reads as a rise long ago) */
	/* 640: counters */
	uint64_t admits;              /* calls admitted, every path */
	uint64_t fallback_admits;     /* of them, from the fallback bucket */
	uint64_t round_trips;         /* Redis round trips this host made */
	uint64_t redis_errors;        /* round trips that failed */
	uint64_t slots_leased;        /* fleet slots Redis granted */
	uint64_t leases_short;        /* leases refused: the fleet was full */
	uint64_t fallbacks;           /* times Redis went away */
	int64_t max_wait_ns;          /* longest a call waited on Redis */
	int64_t meter_ns;             /* the per-second meter's last mark */
	uint64_t meter_admits;        /* admits at that mark */
	uint64_t meter_round_trips;   /* round trips at that mark */
	double admits_per_s;          /* over the last full second */
	double round_trips_per_s;
	uint64_t steps_won;           /* fleet=adaptive: control steps run */
	int64_t last_epoch;           /* fleet=adaptive: the last tick epoch */
	uint64_t reserved2;
	/* 768 */
	char last_error[128];         /* the last Redis failure, a sentence */
	uint8_t reserved3[128];
};

_Static_assert(sizeof(struct agile_fleet_header) == 256, "fleet header");
_Static_assert(sizeof(struct agile_fleet_lease) == 64, "fleet lease");
_Static_assert(sizeof(struct agile_fleet_record) == AGILE_FLEET_RECORD_SIZE,
               "fleet record");

#define AGILE_FLEET_SIZE \
	(sizeof(struct agile_fleet_header) + \
	 AGILE_FLEET_RECORDS * sizeof(struct agile_fleet_record))

struct agile_fleet_map {
	struct agile_fleet_header *header; /* NULL when not mapped */
	size_t size;
};

/* Record i, by this build's sizes (which a file must state exactly to be
 * used), never by the header's fields, which a process can overwrite under
 * a mapping in use. */
static inline struct agile_fleet_record *
agile_fleet_record(const struct agile_fleet_map *m, unsigned int i)
{
	return (struct agile_fleet_record *)((char *)m->header +
	                                     sizeof(struct agile_fleet_header) +
	                                     (size_t)i *
	                                     sizeof(struct agile_fleet_record));
}

/* The companion path of a state file path, snprintf-style. */
size_t agile__fleet_path(const char *state_path, char *buf, size_t len);

/* Check a mapping against this build; 0 or -EINVAL with `why`. */
int agile__fleet_check_map(const void *map, size_t size, char *why,
                          size_t why_len);

/* Map read-write, creating or replacing the file as the state file is
 * (state.h); *replaced_why says why a file was replaced.  0 or -errno. */
int agile__fleet_open_rw(const char *path, struct agile_fleet_map *out,
                        char *replaced_why, size_t why_len);

/* Map read-only (agilestat): -ENOENT when absent. */
int agile__fleet_open_ro(const char *path, struct agile_fleet_map *out,
                        char *why, size_t why_len);

void agile__fleet_close(struct agile_fleet_map *m);

/*
 * The record named `name`, claimed and initialised (zeroed, with name and
 * config_hash) when absent, or re-initialised when its config_hash differs.
 * Returns 0 and *out, -ENOSPC when every record is taken.
 */
int agile__fleet_record_acquire(const struct agile_fleet_map *m,
                               const char *name, uint64_t config_hash,
                               struct agile_fleet_record **out);

/* The in-use record named `name`, or NULL (agilestat). */
const struct agile_fleet_record *
agile__fleet_record_find(const struct agile_fleet_map *m, const char *name);

#endif /* AGILE_PRELOAD_FLEET_STATE_H */
