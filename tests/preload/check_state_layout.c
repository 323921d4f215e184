/*
 * check_state_layout.c - the state file format is a checked contract.
 *
 * The preload of one build and the agilestat of another (or two preloads
 * of different builds in one pipeline) share the file, so every offset and
 * size of the format documented in preload/state.h is asserted here with
 * literal numbers.  A change to the layout must change this test and bump
 * AGILE_STATE_VERSION together; the header fields that depend on the core's
 * struct agile_rate_limiter (its size) are checked at run time by
 * agile_state_check instead.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "state.h"

static int failures;

#define EXPECT(what, got, want) do { \
	unsigned long got_ = (unsigned long)(got); \
	unsigned long want_ = (unsigned long)(want); \
	if (got_ != want_) { \
		fprintf(stderr, "FAIL %s: %lu, expected %lu\n", what, got_, \
		        want_); \
		failures++; \
	} \
} while (0)

#define OFF(type, field, want) \
	EXPECT(#type "." #field, offsetof(struct type, field), want)
#define SIZE(type, field, want) \
	EXPECT("sizeof " #type "." #field, \
	       sizeof(((struct type *)0)->field), want)

int main(void)
{
	EXPECT("AGILE_STATE_VERSION", AGILE_STATE_VERSION, 1);
	EXPECT("magic length", strlen(AGILE_STATE_MAGIC), 8);

	EXPECT("sizeof header", sizeof(struct agile_state_header), 256);
	OFF(agile_state_header, magic, 0);          SIZE(agile_state_header, magic, 8);
	OFF(agile_state_header, version, 8);        SIZE(agile_state_header, version, 4);
	OFF(agile_state_header, header_size, 12);   SIZE(agile_state_header, header_size, 4);
	OFF(agile_state_header, slot_size, 16);     SIZE(agile_state_header, slot_size, 4);
	OFF(agile_state_header, slot_count, 20);    SIZE(agile_state_header, slot_count, 4);
	OFF(agile_state_header, ring_len, 24);      SIZE(agile_state_header, ring_len, 4);
	OFF(agile_state_header, pids_max, 28);      SIZE(agile_state_header, pids_max, 4);
	OFF(agile_state_header, file_size, 32);     SIZE(agile_state_header, file_size, 8);
	OFF(agile_state_header, limiter_size, 40);  SIZE(agile_state_header, limiter_size, 8);
	OFF(agile_state_header, limiter_offset, 48); SIZE(agile_state_header, limiter_offset, 8);
	OFF(agile_state_header, created_unix_ns, 56); SIZE(agile_state_header, created_unix_ns, 8);
	OFF(agile_state_header, boot_id, 64);       SIZE(agile_state_header, boot_id, 40);
	OFF(agile_state_header, ready, 104);        SIZE(agile_state_header, ready, 8);
	OFF(agile_state_header, reserved, 112);     SIZE(agile_state_header, reserved, 144);

	EXPECT("sizeof tick", sizeof(struct agile_state_tick), 64);
	OFF(agile_state_tick, unix_ns, 0);
	OFF(agile_state_tick, rate, 8);
	OFF(agile_state_tick, used, 16);
	OFF(agile_state_tick, p50_ns, 24);
	OFF(agile_state_tick, p99_ns, 32);
	OFF(agile_state_tick, samples, 40);
	OFF(agile_state_tick, unreachable, 48);
	OFF(agile_state_tick, truncated, 56);

	OFF(agile_state_slot, state, 0);            SIZE(agile_state_slot, state, 8);
	OFF(agile_state_slot, config_hash, 8);      SIZE(agile_state_slot, config_hash, 8);
	OFF(agile_state_slot, name, 16);            SIZE(agile_state_slot, name, 48);
	OFF(agile_state_slot, dest, 64);            SIZE(agile_state_slot, dest, 128);
	OFF(agile_state_slot, pace, 192);           SIZE(agile_state_slot, pace, 4);
	OFF(agile_state_slot, reserved0, 196);
	OFF(agile_state_slot, connects, 200);
	OFF(agile_state_slot, unreachable, 208);
	OFF(agile_state_slot, truncated, 216);
	OFF(agile_state_slot, truncated_at_tick, 224);
	OFF(agile_state_slot, ring_count, 232);
	OFF(agile_state_slot, created_unix_ns, 240);
	OFF(agile_state_slot, last_tick_unix_ns, 248);
	OFF(agile_state_slot, pids, 256);           SIZE(agile_state_slot, pids, 64);
	OFF(agile_state_slot, ring, 320);           SIZE(agile_state_slot, ring, 7680);
	OFF(agile_state_slot, reserved1, 8000);     SIZE(agile_state_slot, reserved1, 64);
	OFF(agile_state_slot, limiter, 8064);
	EXPECT("slot size multiple of 64", sizeof(struct agile_state_slot) % 64, 0);
	EXPECT("slot size covers the limiter",
	       sizeof(struct agile_state_slot) >=
	       8064 + sizeof(struct agile_rate_limiter), 1);
	EXPECT("file size", AGILE_STATE_SIZE,
	       256 + 64 * sizeof(struct agile_state_slot));

	EXPECT("slot count", AGILE_STATE_SLOTS, 64);
	EXPECT("ring length", AGILE_STATE_RING, 120);
	EXPECT("pids per slot", AGILE_STATE_PIDS, 16);
	EXPECT("FREE", AGILE_SLOT_FREE, 0);
	EXPECT("READY", AGILE_SLOT_READY, 1);
	EXPECT("INIT", AGILE_SLOT_INIT, 2);

	if (failures == 0)
		printf("state layout: every offset and size as documented\n");
	return failures == 0 ? 0 : 1;
}
