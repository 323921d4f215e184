/*
 * fuzz_state.c - libFuzzer harness for the state file's loader: the check
 * every process makes before it trusts a mapped file (agile__state_validate),
 * and, for a file it accepts, what src/common/state.c then does with the slots
 * in it.  The file is shared memory that any process of the user (or an
 * older build, or a crash) may have left in any shape.
 *
 * The first input byte picks a mode:
 *
 *   even  the rest of the input is the whole file, of exactly that size:
 *         every header field, and every truncation, as found on disk.
 *
 *   odd   the rest is a list of patches applied to a freshly formatted file
 *         (agile__state_format, the preload's own writer): each patch is a
 *         4-byte little-endian offset (taken modulo the file size), a length
 *         byte, and that many bytes.  This reaches what a whole-file input
 *         of 4 MiB cannot: a valid header over slots holding anything.
 *
 * The boot id is fixed ("fuzz"), so the corpus is valid on every machine.
 * When the file is accepted, every slot is read the way agilestat and the
 * preload read it (state word, name, history ring, statistics, attached
 * processes, and agilestat's table and JSON of the resilience region, whose
 * ranges the check covers), and a history entry is appended to each ready
 * one.  Each ready slot's limiter body, which patches reach like any other
 * bytes and which the file check does not cover, is then checked against
 * its own stored configuration (agile_rate_validate) and driven through
 * every operation of the core as it is, garbage or not: takes, try-takes,
 * outcomes, ticks over a few periods, statistics; and a concurrency limiter
 * made of the same bytes likewise.  The core must be total on any bit
 * pattern, which the sanitizers check.  Last, the preload attaches a
 * destination of its own (agile__state_slot_acquire, which probes, claims,
 * re-initialises or attaches) and repairs the slot it got
 * (agile__state_slot_repair), after which its limiter must pass the check
 * and two grants must be at least the ceiling's spacing apart.  Slots
 * claimed by a live process are left out of that last step, which would
 * wait for them.
 *
 * tests/fuzz/replay.c turns this file into a program that replays the
 * committed corpus in every `make check`.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agilestat_resilience.h"
#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define BOOT_ID "fuzz"
#define SLOT_OF(offset) \
	(((offset) - sizeof(struct agile_state_header)) / \
	 sizeof(struct agile_state_slot))

static uint8_t *image; /* AGILE_STATE_SIZE bytes, formatted */
static volatile double sink; /* keeps the reads from being optimised out */
static bool dirty[AGILE_STATE_SLOTS];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* agilestat's printers write to stdout. */
	if (freopen("/dev/null", "w", stdout) == NULL)
		abort();
	if (posix_memalign((void **)&image, 4096, AGILE_STATE_SIZE) != 0)
		abort();
	memset(image, 0, AGILE_STATE_SIZE);
	agile__state_format(image, BOOT_ID, 1);
	return 0;
}

static void check_rejection(int rc, const char *why, size_t why_len)
{
	if (rc != 0 && (rc != -EINVAL || memchr(why, '\0', why_len) == NULL ||
	                why[0] == '\0'))
		abort();
}

/* The whole file, as found: only the check runs on it. */
static void whole_file(const uint8_t *data, size_t size)
{
	char why[160];
	/* Exactly `size` bytes, so a read past the file is caught; malloc's
	 * alignment is the header's.  (A page-aligned copy, as a mapping is,
	 * made ASan's quarantine grow by a page an input.)  An input holds at
	 * most a few KiB, far less than a whole file, so the check never
	 * reaches the 64-byte-aligned slots here. */
	void *copy = malloc(size > 0 ? size : 1);

	if (copy == NULL)
		abort();
	memcpy(copy, data, size);
	why[0] = 'x';
	check_rejection(agile__state_validate(copy, size, BOOT_ID, why,
	                                     sizeof(why)), why, sizeof(why));
	free(copy);
}

static void apply_patches(const uint8_t *p, size_t size)
{
	while (size >= 5) {
		uint32_t offset = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
		                  (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		size_t len = p[4];
		size_t at = offset % AGILE_STATE_SIZE;

		p += 5;
		size -= 5;
		if (len > size)
			len = size;
		if (len > AGILE_STATE_SIZE - at)
			len = AGILE_STATE_SIZE - at;
		memcpy(image + at, p, len);
		for (size_t o = at; o < at + len; o++)
			if (o >= sizeof(struct agile_state_header))
				dirty[SLOT_OF(o)] = true;
		p += len;
		size -= len;
	}
}

static bool pid_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Read a ready slot as agilestat and the preload do, and append a history
 * entry as the tick winner does. */
static void use_slot(struct agile_state_slot *s, int64_t now_ns)
{
	struct agile_stats stats;
	int32_t pids[AGILE_STATE_PIDS];
	uint64_t count = __atomic_load_n(&s->ring_count, __ATOMIC_ACQUIRE);
	double sum = 0;

	if (memchr(s->name, '\0', sizeof(s->name)) == NULL ||
	    memchr(s->dest, '\0', sizeof(s->dest)) == NULL)
		abort(); /* the check promised terminated strings */
	sum += (double)strlen(s->name) + (double)strlen(s->dest);
	agile_rate_stats(&s->limiter, &stats);
	agile__state_slot_live_pids(s, pids, AGILE_STATE_PIDS);
	/* The history, newest first, as agilestat --history walks it. */
	for (uint64_t i = 0; i < count && i < AGILE_STATE_RING; i++) {
		const struct agile_state_tick *t =
			&s->ring[(count - 1 - i) % AGILE_STATE_RING];

		sum += t->rate + t->used + (double)t->p99_ns +
		       (double)t->samples;
	}
	sink = sum + stats.rate;
	agilestat_resilience_table(s);
	agilestat_resilience_json(s);
	agile__state_slot_append_tick(s, now_ns);
}

/* A check's verdict must be 0, or -EINVAL with a field and a sentence. */
static void check_verdict(int rc, const struct agile_problem *why)
{
	if (rc == 0)
		return;
	if (rc != -EINVAL ||
	    memchr(why->field, '\0', sizeof(why->field)) == NULL ||
	    memchr(why->message, '\0', sizeof(why->message)) == NULL ||
	    why->field[0] == '\0' || why->message[0] == '\0')
		abort();
}

/* Drive a limiter body through the core as it is: whatever it holds, no
 * operation may overflow, convert a NaN or divide by zero. */
static void drive_limiter(struct agile_rate_limiter *l,
                          const uint8_t *slot_bytes, int64_t now_ns)
{
	struct agile_conc_limiter conc;
	struct agile_problem why;
	struct agile_stats stats;
	int64_t planned = 0;
	double sum = 0;

	memset(&why, 0, sizeof(why));
	check_verdict(agile_rate_validate(l, &l->loop.config, now_ns, &why),
	              &why);
	check_verdict(agile_controller_validate(&l->loop.ctl, &l->loop.config,
	                                        &why), &why);
	for (int k = 0; k < 4; k++) {
		int64_t t = now_ns + k * AGILE_NS_PER_S;

		sum += (double)agile_rate_take(l, t);
		if (agile_rate_try_take(l, t, AGILE_NS_PER_S, &planned))
			sum += (double)planned;
		agile_rate_observe(l, 20 * AGILE_NS_PER_MS);
		agile_rate_observe_truncated(l, 3 * AGILE_NS_PER_S);
		if (k == 1)
			agile_rate_unavailable(l);
		agile_rate_aborted(l);
		agile_rate_tick_if_due(l, t);
		agile_rate_tick(l, t + 1);
		sum += agile_rate_rate(l) + agile_bucket_rate(&l->bucket);
		agile_rate_stats(l, &stats);
		sum += stats.rate + (double)stats.p99_ns;
	}

	/* The loop of a concurrency limiter is the rate limiter's; the rest
	 * (its counters and its law) comes from the bytes after the loop and
	 * then from the slot's start, garbage either way. */
	memcpy(&conc, l, sizeof(*l) < sizeof(conc) ? sizeof(*l) : sizeof(conc));
	if (sizeof(conc) > sizeof(*l))
		memcpy((uint8_t *)&conc + sizeof(*l), slot_bytes,
		       sizeof(conc) - sizeof(*l));
	for (int k = 0; k < 3; k++) {
		int64_t t = now_ns + k * AGILE_NS_PER_S;

		if (agile_conc_try_take(&conc))
			agile_conc_release(&conc);
		agile_conc_observe(&conc, 5 * AGILE_NS_PER_MS);
		agile_conc_observe_truncated(&conc, 2 * AGILE_NS_PER_S);
		agile_conc_unavailable(&conc);
		agile_conc_tick_if_due(&conc, t);
		agile_conc_tick(&conc, t + 1);
		agile_conc_stats(&conc, &stats);
		sum += stats.rate + (double)agile_conc_limit(&conc) +
		       (double)agile_conc_in_flight(&conc);
	}
	sink = sum;
}

/* A valid file's slots, whatever they hold. */
static void patched_file(const uint8_t *data, size_t size)
{
	struct agile_state_map m = { (void *)image, AGILE_STATE_SIZE, true };
	struct agile_config config = { .max_rate = 100, .floor_rate = 10 };
	const int64_t now_ns = INT64_C(5000) * AGILE_NS_PER_S;
	struct agile_state_slot *mine = NULL;
	struct agile_resolved resolved;
	struct agile_problem problem;
	int32_t other = 0;
	bool waits = false;
	char why[256];
	int rc;

	apply_patches(data, size);
	rc = agile__state_validate(image, AGILE_STATE_SIZE, BOOT_ID, why,
	                          sizeof(why));
	check_rejection(rc, why, sizeof(why));
	if (rc != 0)
		return;
	for (unsigned int i = 0; i < AGILE_STATE_SLOTS; i++) {
		struct agile_state_slot *s = agile_state_slot(&m, i);

		if (s->state == AGILE_SLOT_READY) {
			dirty[i] = true;
			use_slot(s, now_ns);
			drive_limiter(&s->limiter, (const uint8_t *)s, now_ns);
		} else if ((s->state & 0xff) == AGILE_SLOT_INIT &&
		           pid_alive(AGILE_SLOT_INIT_PID(s->state))) {
			waits = true;
		}
	}
	if (waits)
		return;
	rc = agile__state_slot_acquire(&m, "fuzz", "127.0.0.1:80", 0, &config,
	                              NULL, now_ns, now_ns, &mine, &other);
	if (rc < 0)
		return;
	dirty[SLOT_OF((size_t)((uint8_t *)mine - image))] = true;
	agile__state_slot_attach_pid(mine, (int32_t)getpid());
	/* What the preload does with a slot it did not initialise. */
	why[0] = '\0';
	rc = agile__state_slot_repair(mine, &config, now_ns, why, sizeof(why));
	if (rc < 0 || (rc == 1 && why[0] == '\0'))
		abort();
	if (agile_resolve(&config, AGILE_KIND_RATE, &resolved) != 0 ||
	    agile_rate_validate(&mine->limiter, &resolved, now_ns,
	                        &problem) != 0)
		abort(); /* a repaired or attached limiter passes the check */
	{
		int64_t first = agile_rate_take(&mine->limiter, now_ns);
		int64_t second = agile_rate_take(&mine->limiter, now_ns);

		int64_t spacing = mine->limiter.bucket.min_interval_ns;

		if (second - first < spacing ||
		    spacing != 10 * AGILE_NS_PER_MS)
			abort(); /* the ceiling of max_rate 100 holds */
	}
	use_slot(mine, now_ns);
}

/* Put the image back to a freshly formatted file, slot by slot. */
static void restore_image(void)
{
	memset(image, 0, sizeof(struct agile_state_header));
	agile__state_format(image, BOOT_ID, 1);
	for (unsigned int i = 0; i < AGILE_STATE_SLOTS; i++) {
		if (!dirty[i])
			continue;
		memset(image + sizeof(struct agile_state_header) +
		       (size_t)i * sizeof(struct agile_state_slot), 0,
		       sizeof(struct agile_state_slot));
		dirty[i] = false;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (image == NULL)
		LLVMFuzzerInitialize(NULL, NULL);
	if (size == 0)
		return 0;
	if ((data[0] & 1) == 0) {
		whole_file(data + 1, size - 1);
	} else {
		patched_file(data + 1, size - 1);
		restore_image();
	}
	return 0;
}
