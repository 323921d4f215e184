/*
 * agilestat_view.h - what agilestat reads of each destination in a state
 * file, and the formats it prints them in: the table (also --watch's), JSON,
 * Prometheus, the history CSV and the resolved configuration.
 *
 * Apart from agilestat.c's options and --watch loop, so that
 * tests/fuzz/fuzz_agilestat.c drives exactly what agilestat does with a
 * hostile file.  Everything here reads a mapping that agile__state_open_ro
 * (or agile__state_read_fd) accepted, and prints to stdout.
 */
#ifndef AGILESTAT_VIEW_H
#define AGILESTAT_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "agile.h"
#include "agilestat_json.h"
#include "state.h"

/* Everything printed about one destination, read once. */
struct agilestat_view {
	const struct agile_state_slot *slot;
	struct agile_stats stats;
	const struct agile_resolved *config;
	int32_t pids[AGILE_STATE_PIDS];
	int live;
	bool blind;
	uint64_t blind_for; /* ticks without a sample, or without any step */
	/* The limiter fails the core's check (agile_rate_validate): another
	 * process left garbage there, which the next process to take a
	 * grant repairs.  Its statistics are shown as 0, not as garbage. */
	bool damaged;
	char damage[sizeof(((struct agile_problem *)0)->message)];
	uint64_t connects, unreachable, truncated;
};

/* A slot's name and destination as the terminal may be shown them
 * (agilestat_text): the file is anyone's of this user's to write. */
struct agilestat_labels {
	char name[AGILESTAT_TEXT_SIZE(AGILE_STATE_NAME_MAX)];
	char dest[AGILESTAT_TEXT_SIZE(AGILE_STATE_DEST_MAX)];
};

/* A slot's name and destination for the terminal, into `out`. */
const struct agilestat_labels *
agilestat_labels(const struct agile_state_slot *s,
                 struct agilestat_labels *out);

/* The READY slots of the file, sorted by name, into `out` (room for
 * AGILE_STATE_SLOTS).  Returns their number. */
int agilestat_read_views(const struct agile_state_map *m,
                         struct agilestat_view *out);

/* The ring's entries oldest first, at most `last`, into `out` (room for
 * AGILE_STATE_RING).  Returns their number. */
int agilestat_ring_entries(const struct agile_state_slot *s, unsigned int last,
                           struct agile_state_tick *out);

/* The `n` views in each of agilestat's formats, on stdout. */
void agilestat_print_table(const struct agilestat_view *v, int n);
void agilestat_print_json(const struct agilestat_view *v, int n,
                          const struct agile_state_map *m);
/* After the table: the preload's messages a program's stderr could not
 * take, as the file counts them, and the last of them. */
void agilestat_print_unsaid_table(const struct agile_state_map *m);
void agilestat_print_prometheus(const struct agilestat_view *v, int n);
void agilestat_print_history(const struct agilestat_view *v, int n);
void agilestat_print_config(const struct agilestat_view *v, int n);

#endif /* AGILESTAT_VIEW_H */
