/*
 * check_state_layout.c - the state file format is a checked contract.
 *
 * The preload of one build and the agilestat of another (or two preloads
 * of different builds in one pipeline) share the file, so every offset and
 * size of the format documented in src/common/state.h is asserted here with
 * literal numbers.  A change to the layout must change this test and bump
 * AGILE_STATE_VERSION together; the header fields that depend on the core's
 * structs (struct agile_rate_limiter's size, and the resilience region's,
 * which ends with libagile's breaker, shedder and concurrency limiter, the
 * last holding the adaptive laws' state) are checked at run time by
 * agile__state_check instead, and here only where they sit relative to each
 * other.
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
	EXPECT("AGILE_STATE_VERSION", AGILE_STATE_VERSION, 11);
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
	OFF(agile_state_header, resilience_size, 112); SIZE(agile_state_header, resilience_size, 8);
	OFF(agile_state_header, unsaid, 120);       SIZE(agile_state_header, unsaid, 8);
	OFF(agile_state_header, unsaid_last, 128);  SIZE(agile_state_header, unsaid_last, 96);
	OFF(agile_state_header, reserved, 224);     SIZE(agile_state_header, reserved, 32);

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
	OFF(agile_state_slot, send_tat_ns, 8000);   SIZE(agile_state_slot, send_tat_ns, 8);
	OFF(agile_state_slot, reserved1, 8008);     SIZE(agile_state_slot, reserved1, 56);
	OFF(agile_state_slot, resilience, 8064);
	EXPECT("limiter after the resilience region",
	       offsetof(struct agile_state_slot, limiter),
	       8064 + sizeof(struct agile_state_resilience));

	/* The resilience region (resilience.h), relative to its start. */
	OFF(agile_state_resilience, conc_limit, 0);
	OFF(agile_state_resilience, conc_admitted, 8);
	OFF(agile_state_resilience, conc_waited, 16);
	OFF(agile_state_resilience, conc_timeouts, 24);
	OFF(agile_state_resilience, conc_reclaimed, 32);
	OFF(agile_state_resilience, permit_gen, 40);
	OFF(agile_state_resilience, conc_mode, 48);
	OFF(agile_state_resilience, conc_law, 52);
	OFF(agile_state_resilience, permit_high, 56);
	OFF(agile_state_resilience, features, 60);
	OFF(agile_state_resilience, breaker_lock, 64);
	SIZE(agile_state_resilience, breaker_lock, 8);
	OFF(agile_state_resilience, breaker_allowed, 72);
	OFF(agile_state_resilience, breaker_refused, 80);
	OFF(agile_state_resilience, breaker_failures, 88);
	OFF(agile_state_resilience, breaker_passes, 96);
	OFF(agile_state_resilience, quota_lock, 128);
	OFF(agile_state_resilience, quota_refused, 136);
	OFF(agile_state_resilience, quota_waited, 144);
	OFF(agile_state_resilience, quota, 152);
	SIZE(agile_state_resilience, quota, 32);
	OFF(agile_state_resilience, window_lock, 192);
	OFF(agile_state_resilience, window_refused, 200);
	OFF(agile_state_resilience, window_waited, 208);
	OFF(agile_state_resilience, retry_backoff, 216);
	SIZE(agile_state_resilience, retry_backoff, 40);
	OFF(agile_state_resilience, paused_until_ns, 256);
	OFF(agile_state_resilience, http_pauses, 264);
	OFF(agile_state_resilience, http_cache_hits, 272);
	OFF(agile_state_resilience, http_excluded, 280);
	OFF(agile_state_resilience, http_5xx, 288);
	OFF(agile_state_resilience, http_ignored, 296);
	OFF(agile_state_resilience, connect_retries, 320);
	OFF(agile_state_resilience, connect_timeouts, 328);
	OFF(agile_state_resilience, key_refused, 336);
	OFF(agile_state_resilience, key_idle_evictions, 344);
	OFF(agile_state_resilience, key_capacity_evictions, 352);
	OFF(agile_state_resilience, keys_held, 360);
	OFF(agile_state_resilience, accepted, 384);
	OFF(agile_state_resilience, shed, 392);
	OFF(agile_state_resilience, shed_cpu, 400);
	OFF(agile_state_resilience, shed_lock, 408);
	OFF(agile_state_resilience, clients_lock, 416);
	OFF(agile_state_resilience, permit_owner, 448);
	SIZE(agile_state_resilience, permit_owner, 4096);
	OFF(agile_state_resilience, permit_refs, 4544);
	SIZE(agile_state_resilience, permit_refs, 2048);
	OFF(agile_state_resilience, window, 6592);
	SIZE(agile_state_resilience, window, 16408);
	OFF(agile_state_resilience, breaker, 23000);
	EXPECT("shedder after the breaker",
	       offsetof(struct agile_state_resilience, shedder),
	       23000 + sizeof(struct agile_breaker));
	EXPECT("core limiter 64-byte aligned",
	       offsetof(struct agile_state_resilience, core) % 64, 0);
	EXPECT("client table after the core limiter, 64-byte aligned",
	       offsetof(struct agile_state_resilience, clients),
	       (offsetof(struct agile_state_resilience, core) +
	        sizeof(struct agile_conc_limiter) + 63) / 64 * 64);
	/* The client table (agile_clients.h), relative to its start. */
	EXPECT("sizeof client table", sizeof(struct agile_client_table), 45200);
	OFF(agile_client_table, rate_per_s, 0);
	OFF(agile_client_table, burst, 8);
	OFF(agile_client_table, interval_ns, 16);
	OFF(agile_client_table, tolerance_ns, 24);
	OFF(agile_client_table, idle_ns, 32);
	OFF(agile_client_table, hash_key, 40);
	OFF(agile_client_table, capacity, 56);
	OFF(agile_client_table, count, 60);
	OFF(agile_client_table, newest, 64);
	OFF(agile_client_table, oldest, 68);
	OFF(agile_client_table, unused, 72);
	OFF(agile_client_table, free_list, 76);
	OFF(agile_client_table, allowed, 80);
	OFF(agile_client_table, refused, 88);
	OFF(agile_client_table, idle_evictions, 96);
	OFF(agile_client_table, capacity_evictions, 104);
	OFF(agile_client_table, resets, 112);
	OFF(agile_client_table, heads, 144);
	OFF(agile_client_table, entries, 4240);
	EXPECT("sizeof client entry", sizeof(struct agile_client_entry), 40);
	OFF(agile_client_entry, key, 0);
	OFF(agile_client_entry, tat_ns, 8);
	OFF(agile_client_entry, seen_ns, 16);
	OFF(agile_client_entry, older, 24);
	OFF(agile_client_entry, newer, 28);
	OFF(agile_client_entry, chain, 32);
	OFF(agile_client_entry, used, 36);
	EXPECT("clients per table", AGILE_CLIENTS_MAX, 1024);
	EXPECT("region size multiple of 64",
	       sizeof(struct agile_state_resilience) % 64, 0);
	EXPECT("permits", AGILE_STATE_PERMITS, 1024);
	EXPECT("window stamps", AGILE_STATE_WINDOW_MAX, 2048);
	EXPECT("slot size multiple of 64", sizeof(struct agile_state_slot) % 64, 0);
	EXPECT("slot size covers the limiter",
	       sizeof(struct agile_state_slot) >=
	       offsetof(struct agile_state_slot, limiter) +
	       sizeof(struct agile_rate_limiter), 1);
	/* Where tests/fault/slot_garbage.sh writes its garbage: the
	 * controller's doubles after the 208-byte resolved configuration, and
	 * the bucket's times at 40 bytes from the limiter's end. */
	OFF(agile_rate_limiter, loop.ctl, 208);
	SIZE(agile_rate_limiter, loop.ctl, 272);
	OFF(agile_controller, rate, 0);
	OFF(agile_controller, used, 56);
	OFF(agile_controller, fastest_ns, 264);
	EXPECT("bucket 40 bytes from the limiter's end",
	       sizeof(struct agile_rate_limiter) -
	       offsetof(struct agile_rate_limiter, bucket), 48);
	OFF(agile_bucket, last_ns, 0);
	OFF(agile_bucket, interval_ns, 8);
	OFF(agile_bucket, min_interval_ns, 16);
	OFF(agile_bucket, rise_ns, 32);
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
