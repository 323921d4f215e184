/*
 * resilience.h - the resilience settings of a rule (concurrency cap, SRE
 * breaker, period quota and sliding window, HTTP verdicts, connect timeout
 * and retries, per-address keys, inbound shedding) and their shared state.
 *
 * The primitives are libagile's (agile_resilience.h, agile_laws.h,
 * agile_keyed.h, agile.h); this header is what the preload adds around them:
 *
 *  - struct agile_resilience_config, parsed by rules.c into each rule.  It is
 *    pointer-free and fixed-width, and it is hashed with the controller's
 *    configuration, so processes that configure a destination differently
 *    never share (and never corrupt) each other's state.
 *  - struct agile_state_resilience, one per slot of the state file (see
 *    state.h): whatever must hold across threads, processes and runs — the
 *    permit table of the concurrency cap, the breaker's window, the quota's
 *    counter and the sliding window's stamps, the HTTP pause — and the
 *    counters agilestat shows.  Its layout is part of the state file's
 *    checked contract (tests/common/check_state_layout.c).
 *
 * Locking: the breaker, the quota, the sliding window and the shedder are not
 * synchronised by libagile, so each sits behind a struct agile_state_lock, a
 * spin lock whose word holds the owner's pid.  Critical sections are a few
 * hundred nanoseconds of arithmetic and never wait; a waiter that finds the
 * owner dead (SIGKILL inside the section) takes the lock over, so a killed
 * process never stalls the others.  The permit table needs no lock at all:
 * each permit is a word claimed by compare-and-swap with the holder's pid.
 */
#ifndef AGILE_PRELOAD_RESILIENCE_H
#define AGILE_PRELOAD_RESILIENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "agile.h"
#include "agile_clients.h"
#include "agile_laws.h"
#include "agile_resilience.h"

/* ------------------------------------------------------------------------ */
/* Settings                                                                  */
/* ------------------------------------------------------------------------ */

/* Permits a concurrency cap can hand out at once: the size of the per-slot
 * table of holders, so also the largest concurrency=N and listener max. */
#define AGILE_STATE_PERMITS 1024
/* Stamps a sliding window keeps: the largest window=N. */
#define AGILE_STATE_WINDOW_MAX 2048
/* proto=http's status lists (overload=, unreachable=, ignore=): which
 * list, and a bit per status from 100 to 599.  overload's default is 429
 * and 503; the others' is none. */
enum agile_status_list {
	AGILE_STATUS_OVERLOAD = 0,
	AGILE_STATUS_UNREACHABLE,
	AGILE_STATUS_IGNORE,
	AGILE_STATUS_LISTS
};
#define AGILE_STATUS_WORDS 8
/* cache_hit=: at most this many header names, each shorter than LEN. */
#define AGILE_CACHE_HIT_MAX 4
#define AGILE_CACHE_HIT_LEN 32
/* client_key=header:NAME: NAME's room, with its NUL. */
#define AGILE_CLIENT_HEADER_LEN 48
/* Paths in exclude=, and the longest one. */
#define AGILE_EXCLUDE_MAX 8
#define AGILE_EXCLUDE_LEN 48

enum agile_conc_mode {
	AGILE_CONC_OFF = 0,  /* no cap */
	AGILE_CONC_FIXED,    /* concurrency=N */
	AGILE_CONC_ADAPTIVE  /* concurrency=adaptive[,law=...] */
};

enum agile_over {
	AGILE_OVER_REFUSE = 0, /* over quota: connect fails with ECONNREFUSED */
	AGILE_OVER_WAIT        /* over quota: connect waits for room */
};

/* proto=: what the preload reads of the protocol a destination speaks. */
enum agile_proto {
	AGILE_PROTO_NONE = 0, /* nothing */
	AGILE_PROTO_HTTP,     /* HTTP/1.x verdicts and exclude= (http.c) */
	AGILE_PROTO_REDIS,    /* QUIT is no request (goodbye.c) */
	AGILE_PROTO_POSTGRES, /* Terminate is no request (goodbye.c) */
	AGILE_PROTO_MYSQL,    /* COM_QUIT is no request (goodbye.c) */
	AGILE_PROTO_MEMCACHED /* quit is no request (goodbye.c) */
};

enum agile_shed_response {
	AGILE_SHED_CLOSE = 0,  /* a shed connection is closed at once */
	AGILE_SHED_HTTP        /* it is answered with shed_status first */
};

struct agile_resilience_config {
	/* concurrency= and acquire_timeout= */
	uint32_t conc_mode;          /* enum agile_conc_mode */
	uint32_t conc_law;           /* enum agile_law_kind, adaptive caps
	                                and listeners */
	int64_t conc_limit;          /* concurrency=N */
	int64_t acquire_timeout_ns;  /* 0: the default, 30 s */
	/* concurrency_min=, concurrency_initial=, concurrency_max=: an
	 * outbound adaptive cap's bounds; 0: adaptx's 1, 10 and 1000 */
	int32_t conc_min;
	int32_t conc_initial;
	int32_t conc_max;
	uint32_t pad_conc;
	/* law_smoothing=, law_increase=, law_decrease=, law_utilization=,
	 * law_tolerance=, law_warmup=, law_min_decay=, law_jitter=: a
	 * windowed law's options (agile_laws.h) beyond its bounds, target
	 * (slo=) and window (tick=), for concurrency=adaptive and listeners;
	 * an option not given is adaptx's default */
	uint32_t law_given;          /* AGILE_LAW_GIVEN_* bits */
	uint32_t pad_law;
	double law_smoothing;
	double law_increase_rate;
	double law_decrease_ratio;
	double law_utilization;
	double law_tolerance;
	double law_min_latency_decay;
	double law_jitter;
	int64_t law_warmup_samples;
	/* breaker=sre, breaker_k=, breaker_protection=, breaker_window=,
	 * breaker_floor=, breaker_probe=, breaker_buckets= */
	uint32_t breaker;            /* 1: breaker=sre */
	int32_t breaker_buckets;     /* 0: the preset's 40 */
	double breaker_k;            /* 0: the preset's 1.5 */
	double breaker_protection;   /* < 0: unset, the preset's 5 */
	int64_t breaker_window_ns;   /* 0: the preset's 10 s */
	double breaker_floor;        /* 0: the preset's 1.1 (at most k) */
	int64_t breaker_probe_ns;    /* 0: the preset's 1 s */
	/* shed_window=, shed_buckets=, shed_latency=, shed_cool=,
	 * shed_beta=, shed_floor=: the CPU shedder's (shed=cpu) */
	int64_t shed_window_ns;      /* 0: the preset's 5 s */
	int64_t shed_latency_ns;     /* 0: the preset's 1 s */
	int64_t shed_cool_ns;        /* 0: the preset's 1 s */
	double shed_beta;            /* AGILE_KNOB_SHED_BETA given, else 0.9 */
	double shed_floor;           /* AGILE_KNOB_SHED_FLOOR given, else 0.1 */
	int32_t shed_buckets;        /* 0: the preset's 50 */
	/* retry_base=, retry_cap=, retry_factor=, retry_jitter=: retry='s
	 * backoff between refused connects */
	uint32_t retry_jitter;       /* enum agile_jitter + 1; 0: SPREAD */
	int64_t retry_base_ns;       /* 0: the preset's 100 ms */
	int64_t retry_cap_ns;        /* 0: the preset's 1 s */
	double retry_factor;         /* 0: the preset's 2 */
	double retry_spread;         /* AGILE_KNOB_RETRY_SPREAD given, else
	                                0.2 */
	uint32_t knobs_given;        /* AGILE_KNOB_* bits: settings whose 0
	                                is a value, not "unset" */
	uint32_t pad_knobs;
	/* quota=N/PERIOD[,align], window=N/SPAN, over= */
	int32_t quota;               /* 0: no quota */
	uint32_t quota_align;        /* 1: periods on the wall clock's grid */
	int64_t quota_period_ns;
	int32_t window;              /* 0: no sliding window */
	uint32_t over;               /* enum agile_over */
	int64_t window_span_ns;
	/* proto=, exclude= */
	uint32_t proto;              /* enum agile_proto */
	uint32_t exclude_count;
	char exclude[AGILE_EXCLUDE_MAX][AGILE_EXCLUDE_LEN];
	/* connect_timeout=, retry= */
	int64_t connect_timeout_ns;  /* 0: the system's */
	int32_t retry;               /* connect retries after a refusal */
	uint32_t pad1;
	/* key_rate=, keys= (a CIDR or wildcard rule, per address) */
	double key_rate;             /* connects per second per address; 0 off */
	int64_t keys;                /* key bound; 0: the default 100,000 */
	double key_burst;            /* key_rate=R,burst=B: 0, the rate */
	/* Inbound (AGILE_LISTEN_): shed=cpu, shed_status=, retry_after= */
	uint32_t inbound;            /* 1: a listener rule */
	uint32_t shed_cpu;           /* 1: shed=cpu */
	int32_t shed_cpu_permille;   /* hot at this CPU use; 0: the preset's */
	uint32_t shed_response;      /* enum agile_shed_response */
	int32_t shed_status;         /* HTTP status sent to a shed connection */
	uint32_t grpc;               /* 1: proto=grpc, which is proto=http
	                                whose listeners answer a shed HTTP/2
	                                stream with gRPC's UNAVAILABLE */
	int64_t retry_after_ns;      /* 0: no Retry-After header */
	/* client_rate=R[,burst=B], client_prefix=, client_key=, clients=
	 * (listeners: one bucket per client, agile_clients.h) */
	double client_rate;          /* per client per second; 0 off */
	double client_burst;         /* 0: the rate (never under one) */
	int32_t client_prefix;       /* address bits naming a client, IPv6
	                                as is and IPv4 at most 32; 0: 64 */
	uint32_t clients;            /* keys held at most; 0:
	                                AGILE_CLIENTS_MAX */
	char client_header[AGILE_CLIENT_HEADER_LEN]; /* client_key=header:
	                                NAME; "" keys by the address */
	/* proto=http's verdicts: overload=, unreachable=, ignore= (status
	 * lists, a bit per status from 100 to 599) and cache_hit= */
	uint32_t status_lists;        /* AGILE_STATUS_LIST_* given; a list
	                                 not given is its default */
	uint32_t cache_hit_count;     /* cache_hit= names; 0: X-Cache, Age */
	uint64_t status_list[AGILE_STATUS_LISTS][AGILE_STATUS_WORDS];
	char cache_hit[AGILE_CACHE_HIT_MAX][AGILE_CACHE_HIT_LEN];
};

/* law_given: which of a windowed law's options a rule gives. */
#define AGILE_LAW_GIVEN_SMOOTHING 0x01u
#define AGILE_LAW_GIVEN_INCREASE 0x02u
#define AGILE_LAW_GIVEN_DECREASE 0x04u
#define AGILE_LAW_GIVEN_UTILIZATION 0x08u
#define AGILE_LAW_GIVEN_TOLERANCE 0x10u
#define AGILE_LAW_GIVEN_MIN_DECAY 0x20u
#define AGILE_LAW_GIVEN_JITTER 0x40u
#define AGILE_LAW_GIVEN_WARMUP 0x80u
/* knobs_given: the settings whose zero is a value. */
#define AGILE_KNOB_SHED_BETA 0x1u
#define AGILE_KNOB_SHED_FLOOR 0x2u
#define AGILE_KNOB_RETRY_SPREAD 0x4u

/* The libagile settings a rule's keys make, each its preset with the
 * rule's keys applied (pure; the state's initialisation, the connect hook
 * and agilestat --config share them).  agile__resilience_backoff's
 * attempts are retry= + 1. */
void agile__resilience_law(const struct agile_resilience_config *c,
                          struct agile_law_options *out);
void agile__resilience_sre(const struct agile_resilience_config *c,
                          struct agile_sre *out);
void agile__resilience_shed(const struct agile_resilience_config *c,
                           struct agile_shed *out);
void agile__resilience_backoff(const struct agile_resilience_config *c,
                              struct agile_backoff *out);

/* Whether `status` is in the rule's list (its default when the rule
 * gives none; c NULL: every default).  In http.c. */
bool agile__http_in_list(const struct agile_resilience_config *c,
                         enum agile_status_list list, int status);

/* The default acquire_timeout: adaptx's suggested drain bound, long enough
 * for any request, short enough that a leaked permit is noticed. */
#define AGILE_ACQUIRE_TIMEOUT_DEFAULT_NS (30 * AGILE_NS_PER_S)

/* True when any outbound resilience feature is configured. */
bool agile__resilience_any(const struct agile_resilience_config *c);

/* FNV-1a of the configuration's bytes folded into `h` (the config hash). */
uint64_t agile__resilience_hash(const struct agile_resilience_config *c,
                               uint64_t h);

/* ------------------------------------------------------------------------ */
/* Shared state                                                              */
/* ------------------------------------------------------------------------ */

/* Which features a slot's rule configured (features, for agilestat). */
#define AGILE_FEATURE_CONCURRENCY 0x001
#define AGILE_FEATURE_BREAKER 0x002
#define AGILE_FEATURE_QUOTA 0x004
#define AGILE_FEATURE_WINDOW 0x008
#define AGILE_FEATURE_HTTP 0x010
#define AGILE_FEATURE_CONNECT 0x020 /* connect_timeout or retry */
#define AGILE_FEATURE_KEYS 0x040
#define AGILE_FEATURE_INBOUND 0x080
#define AGILE_FEATURE_SHED_CPU 0x100
#define AGILE_FEATURE_CLIENTS 0x200

/* A lock word: 0 when free, else the holder's pid. */
struct agile_state_lock {
	int32_t pid;
	uint32_t pad;
};

/*
 *   offset  size   struct agile_state_resilience (region at slot + 8064)
 *        0    64   concurrency: limit, admitted, waited, timeouts,
 *                  reclaimed, release generation, mode, law, high water,
 *                  features
 *       64    64   breaker: lock, allowed, refused, failures, passes
 *      128    64   quota: lock, refused, waited, struct agile_period_quota
 *      192    64   window: lock, refused, waited; retry='s backoff
 *      256    64   http: paused_until, pauses, cache hits, excluded, 5xx,
 *                  ignored
 *      320    64   connect: retries, timeouts; keys: refused, idle and
 *                  capacity evictions, held
 *      384    64   inbound: accepted, shed, shed_cpu, lock, client
 *                  table's lock
 *      448  4096   permit_owner[1024]: pid holding each permit, 0 free
 *     4544  2048   permit_refs[1024]: descriptors of the owner sharing it
 *     6592 16408   window: struct agile_sliding_window and 2048 stamps
 *    23000     -   libagile's struct agile_breaker, struct agile_shedder
 *                  and struct agile_conc_limiter (every adaptive cap,
 *                  outbound and listeners, with the law that moves it;
 *                  64-byte aligned), then struct agile_client_table (a
 *                  listener's client_rate= buckets, agile_clients.h,
 *                  64-byte aligned); their sizes are libagile's, and the
 *                  header's resilience_size records the whole region's
 */
struct agile_state_resilience {
	/* Concurrency (0) */
	int64_t conc_limit;       /* live cap; 0 when there is none */
	uint64_t conc_admitted;   /* permits handed out */
	uint64_t conc_waited;     /* connects that had to wait for one */
	uint64_t conc_timeouts;   /* waits that ended in ETIMEDOUT */
	uint64_t conc_reclaimed;  /* permits taken back from dead processes */
	uint32_t permit_gen;      /* futex word: bumped at every release */
	uint32_t pad0;
	uint32_t conc_mode;       /* enum agile_conc_mode */
	uint32_t conc_law;        /* enum agile_law_kind */
	uint32_t permit_high;     /* permits ever used lie below this */
	uint32_t features;        /* AGILE_FEATURE_* configured */
	/* Breaker (64) */
	struct agile_state_lock breaker_lock;
	uint64_t breaker_allowed;
	uint64_t breaker_refused;
	uint64_t breaker_failures;
	uint64_t breaker_passes;
	uint64_t pad1[3];
	/* Quota (128) */
	struct agile_state_lock quota_lock;
	uint64_t quota_refused;
	uint64_t quota_waited;
	struct agile_period_quota quota;
	uint64_t pad6;
	/* Sliding window (192) */
	struct agile_state_lock window_lock;
	uint64_t window_refused;
	uint64_t window_waited;
	/* retry='s backoff as the rule made it (agile__resilience_backoff),
	 * for agilestat --config: the connect section has no room left. */
	struct agile_backoff retry_backoff;
	/* HTTP (256) */
	int64_t paused_until_ns;  /* monotonic; the bucket waits until then */
	uint64_t http_pauses;     /* 429/503 responses with a Retry-After */
	uint64_t http_cache_hits; /* responses kept out of the signal */
	uint64_t http_excluded;   /* requests to excluded paths, and a
	                             listener's OPTIONS (CORS preflights) */
	uint64_t http_5xx;        /* inbound: fast 5xx recorded unreachable */
	uint64_t http_ignored;    /* responses with a status in ignore= */
	uint64_t pad3[2];
	/* Connect and keys (320) */
	uint64_t connect_retries;
	uint64_t connect_timeouts;
	uint64_t key_refused;
	uint64_t key_idle_evictions;
	uint64_t key_capacity_evictions;
	uint64_t keys_held;
	uint64_t pad4[2];
	/* Inbound (384) */
	uint64_t accepted;
	uint64_t shed;            /* shed connections, any reason */
	uint64_t shed_cpu;        /* of those, shed by the CPU shedder */
	struct agile_state_lock shed_lock;
	struct agile_state_lock clients_lock; /* the client table's */
	uint64_t pad5[3];
	/* Tables (448) */
	int32_t permit_owner[AGILE_STATE_PERMITS];
	uint16_t permit_refs[AGILE_STATE_PERMITS];
	/* struct agile_sliding_window with AGILE_STATE_WINDOW_MAX stamps, as
	 * int64_t words: a struct with a flexible array member cannot be
	 * embedded. */
	int64_t window[AGILE_SLIDING_WINDOW_BYTES(AGILE_STATE_WINDOW_MAX) /
	               sizeof(int64_t)];
	/* libagile's primitives (23000): their sizes are libagile's, so the
	 * offsets from here on are checked through the header's
	 * resilience_size rather than as literals. */
	struct agile_breaker breaker;
	struct agile_shedder shedder;
	struct agile_conc_limiter core __attribute__((aligned(64)));
	/* A listener's client_rate= buckets, shared by every worker
	 * process (agile_clients.h), under clients_lock. */
	struct agile_client_table clients __attribute__((aligned(64)));
} __attribute__((aligned(64)));

static inline struct agile_sliding_window *
agile_state_window(struct agile_state_resilience *z)
{
	return (struct agile_sliding_window *)(void *)z->window;
}

static inline const struct agile_sliding_window *
agile_state_window_const(const struct agile_state_resilience *z)
{
	return (const struct agile_sliding_window *)(const void *)z->window;
}

/*
 * Initialise a slot's region from the rule's settings and the controller's
 * configuration (`config`: a listener's core limiter runs with it).  Clocks:
 * now_ns monotonic, now_unix_ns the wall clock.  Returns 0 or -EINVAL.
 */
int agile__resilience_state_init(struct agile_state_resilience *z,
                                const struct agile_resilience_config *c,
                                const struct agile_config *config,
                                int64_t now_ns);

/* Whether the region's own bookkeeping is in range (window sizes, ring
 * positions, enumerations), so a damaged file cannot make a reader index
 * outside it.  The state file check rejects a READY slot that fails it. */
bool agile__resilience_state_valid(const struct agile_state_resilience *z);

/* Permits held now (a scan of the owner table; agilestat and the hooks). */
int64_t agile__resilience_permits_held(const struct agile_state_resilience *z);

/* The clock a quota runs on: the wall clock when aligned, else monotonic. */
static inline bool agile_resilience_quota_wall(const struct agile_state_resilience *z)
{
	return z->quota.align != 0;
}

/* "agile", "aimd", ... for the adaptive cap; "fixed" or "off" otherwise. */
const char *agile__resilience_conc_name(const struct agile_state_resilience *z);

#endif /* AGILE_PRELOAD_RESILIENCE_H */
