/*
 * fuzz_state.c - libFuzzer harness for the state file's loader: the check
 * every process makes before it trusts a mapped file (agile_state_validate),
 * and, for a file it accepts, what preload/state.c then does with the slots
 * in it.  The file is shared memory that any process of the user (or an
 * older build, or a crash) may have left in any shape.
 *
 * The first input byte picks a mode:
 *
 *   even  the rest of the input is the whole file, of exactly that size:
 *         every header field, and every truncation, as found on disk.
 *
 *   odd   the rest is a list of patches applied to a freshly formatted file
 *         (agile_state_format, the preload's own writer): each patch is a
 *         4-byte little-endian offset (taken modulo the file size), a length
 *         byte, and that many bytes.  This reaches what a whole-file input
 *         of 4 MiB cannot: a valid header over slots holding anything.
 *
 * The boot id is fixed ("fuzz"), so the corpus is valid on every machine.
 * When the file is accepted, every slot is read the way agilestat and the
 * preload read it (state word, name, history ring, statistics, attached
 * processes, and agilestat's table and JSON of the resilience region, whose
 * ranges the check covers), a history entry is appended to each ready one,
 * and the preload attaches a destination of its own
 * (agile_state_slot_acquire, which probes, claims, re-initialises or
 * attaches).  Slots claimed by a live process are left out of that last
 * step, which would wait for them.
 *
 * Out of scope, on purpose: the arithmetic of the limiter and resilience
 * primitives on a slot body full of garbage.  The check covers the header,
 * each slot's state word and strings and the resilience region's ranges;
 * the rest of a ready slot is trusted (README.md, "Hardening and limits",
 * says what that means).
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
	agile_state_format(image, BOOT_ID, 1);
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
	check_rejection(agile_state_validate(copy, size, BOOT_ID, why,
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
	agile_state_slot_live_pids(s, pids, AGILE_STATE_PIDS);
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
	agile_state_slot_append_tick(s, now_ns);
}

/* A valid file's slots, whatever they hold. */
static void patched_file(const uint8_t *data, size_t size)
{
	struct agile_state_map m = { (void *)image, AGILE_STATE_SIZE, true };
	struct agile_config config = { .max_rate = 100, .floor_rate = 10 };
	const int64_t now_ns = INT64_C(5000) * AGILE_NS_PER_S;
	struct agile_state_slot *mine = NULL;
	int32_t other = 0;
	bool waits = false;
	char why[160];
	int rc;

	apply_patches(data, size);
	rc = agile_state_validate(image, AGILE_STATE_SIZE, BOOT_ID, why,
	                          sizeof(why));
	check_rejection(rc, why, sizeof(why));
	if (rc != 0)
		return;
	for (unsigned int i = 0; i < AGILE_STATE_SLOTS; i++) {
		struct agile_state_slot *s = agile_state_slot(&m, i);

		if (s->state == AGILE_SLOT_READY) {
			dirty[i] = true;
			use_slot(s, now_ns);
		} else if ((s->state & 0xff) == AGILE_SLOT_INIT &&
		           pid_alive(AGILE_SLOT_INIT_PID(s->state))) {
			waits = true;
		}
	}
	if (waits)
		return;
	rc = agile_state_slot_acquire(&m, "fuzz", "127.0.0.1:80", 0, &config,
	                              NULL, now_ns, now_ns, &mine, &other);
	if (rc >= 0) {
		dirty[SLOT_OF((size_t)((uint8_t *)mine - image))] = true;
		agile_state_slot_attach_pid(mine, (int32_t)getpid());
		use_slot(mine, now_ns);
	}
}

/* Put the image back to a freshly formatted file, slot by slot. */
static void restore_image(void)
{
	memset(image, 0, sizeof(struct agile_state_header));
	agile_state_format(image, BOOT_ID, 1);
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
