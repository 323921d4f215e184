/*
 * fleet_state.c - create, validate and map the fleet companion file, and
 * find a destination's record in it (layout in fleet_state.h).
 *
 * Linked into the preload and agilestat; prints nothing.  Opening, creating
 * and replacing the file is shmfile.c's, as for the state file; this file
 * supplies the fleet file's judge (agile__fleet_check_map) and writer.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "fleet_state.h"
#include "shmfile.h"

_Static_assert(offsetof(struct agile_fleet_record, turn) == 160, "turn");
_Static_assert(offsetof(struct agile_fleet_record, lease) == 320, "lease");
_Static_assert(offsetof(struct agile_fleet_record, fallback_bucket) == 576,
               "fallback_bucket");
_Static_assert(offsetof(struct agile_fleet_record, admits) == 640, "admits");
_Static_assert(offsetof(struct agile_fleet_record, last_error) == 768,
               "last_error");
_Static_assert(sizeof(((struct agile_fleet_header *)0)->boot_id) ==
               AGILE_SHMFILE_BOOT_ID_MAX, "boot id width");

size_t agile__fleet_path(const char *state_path, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s", state_path, AGILE_FLEET_SUFFIX);

	return n < 0 ? 0 : (size_t)n;
}

int agile__fleet_check_map(const void *map, size_t size, char *why,
                          size_t why_len)
{
	const struct agile_fleet_header *h = map;
	char boot_id[AGILE_SHMFILE_BOOT_ID_MAX];

#define REJECT(...) do { snprintf(why, why_len, __VA_ARGS__); \
		return -EINVAL; } while (0)
	if (size < sizeof(*h))
		REJECT("truncated: %zu bytes", size);
	if (memcmp(h->magic, AGILE_FLEET_MAGIC, sizeof(h->magic)) != 0)
		REJECT("not an agilepreload fleet file (bad magic)");
	if (h->version != AGILE_FLEET_VERSION)
		REJECT("format version %u, this build reads %u", h->version,
		       AGILE_FLEET_VERSION);
	if (h->header_size != sizeof(*h) ||
	    h->record_size != sizeof(struct agile_fleet_record) ||
	    h->record_count != AGILE_FLEET_RECORDS ||
	    h->file_size != AGILE_FLEET_SIZE || size < AGILE_FLEET_SIZE)
		REJECT("layout differs from this build's");
	if (__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) != AGILE_FLEET_READY)
		REJECT("never finished being written");
	if (memchr(h->boot_id, '\0', sizeof(h->boot_id)) == NULL ||
	    memchr(h->host_id, '\0', sizeof(h->host_id)) == NULL ||
	    h->host_id[0] == '\0')
		REJECT("unterminated boot or host id");
	agile__shmfile_boot_id(boot_id);
	if (strcmp(boot_id, h->boot_id) != 0)
		REJECT("written before the last reboot (its clock is stale)");
	for (unsigned int i = 0; i < AGILE_FLEET_RECORDS; i++) {
		const struct agile_fleet_record *r = (const void *)
			((const char *)map + sizeof(*h) + (size_t)i *
			 sizeof(struct agile_fleet_record));
		uint64_t st = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);

		if (st != AGILE_FLEET_FREE && st != AGILE_FLEET_IN_USE &&
		    (st & 0xff) != AGILE_FLEET_INIT)
			REJECT("record %u has an invalid state word", i);
		if (st == AGILE_FLEET_IN_USE &&
		    (memchr(r->name, '\0', sizeof(r->name)) == NULL ||
		     memchr(r->redis, '\0', sizeof(r->redis)) == NULL ||
		     memchr(r->last_error, '\0', sizeof(r->last_error)) == NULL))
			REJECT("record %u has an unterminated string", i);
	}
#undef REJECT
	return 0;
}

/* "host-0123456789abcdef": the machine's name (for a reader of Redis) and
 * 64 random bits (so two state files on one machine are two hosts). */
static void make_host_id(char out[AGILE_FLEET_HOST_ID_MAX])
{
	char name[24] = "";
	uint64_t bits = 0;

	if (getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != sizeof(bits)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		bits = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
		       ((uint64_t)getpid() << 40);
	}
	if (gethostname(name, sizeof(name) - 1) != 0)
		strcpy(name, "host");
	name[sizeof(name) - 1] = '\0';
	/* Keep it a plain token: Redis members are binary safe, but a
	 * person reading ZRANGE should not meet control characters. */
	for (char *c = name; *c != '\0'; c++)
		if (*c <= ' ' || *c == ':' || *c > '~')
			*c = '_';
	snprintf(out, AGILE_FLEET_HOST_ID_MAX, "%s-%016llx", name,
	         (unsigned long long)bits);
}

/* shmfile's writer: the blocks are zero, so every record is FREE. */
static void format_fresh(void *map)
{
	struct agile_fleet_header *h = map;
	struct timespec ts;

	memcpy(h->magic, AGILE_FLEET_MAGIC, sizeof(h->magic));
	h->version = AGILE_FLEET_VERSION;
	h->header_size = sizeof(*h);
	h->record_size = sizeof(struct agile_fleet_record);
	h->record_count = AGILE_FLEET_RECORDS;
	h->file_size = AGILE_FLEET_SIZE;
	clock_gettime(CLOCK_REALTIME, &ts);
	h->created_unix_ns = (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
	agile__shmfile_boot_id(h->boot_id);
	make_host_id(h->host_id);
	/* Last, and released: a reader that sees READY sees the rest. */
	__atomic_store_n(&h->ready, AGILE_FLEET_READY, __ATOMIC_RELEASE);
}

/* Read-only, too, only a file of the exact size is mapped: agilestat
 * reports any other by its size ("size N bytes, expected M"). */
static const struct agile_shmfile_type fleet_file = {
	.size = AGILE_FLEET_SIZE,
	.header_size = 0,
	.ro_any_size = false,
	.validate = agile__fleet_check_map,
	.format = format_fresh,
};

void agile__fleet_close(struct agile_fleet_map *m)
{
	if (m->header != NULL)
		munmap(m->header, m->size);
	m->header = NULL;
	m->size = 0;
}

int agile__fleet_open_rw(const char *path, struct agile_fleet_map *out,
                        char *replaced_why, size_t why_len)
{
	void *map;
	int rc = agile__shmfile_open_rw(&fleet_file, path, &map, replaced_why,
	                               why_len);

	if (rc < 0)
		return rc;
	out->header = map;
	out->size = AGILE_FLEET_SIZE;
	return 0;
}

int agile__fleet_open_ro(const char *path, struct agile_fleet_map *out,
                        char *why, size_t why_len)
{
	void *map;
	size_t size;
	int rc = agile__shmfile_open_ro(&fleet_file, path, &map, &size, why,
	                               why_len);

	if (rc < 0)
		return rc;
	out->header = map;
	out->size = size;
	return 0;
}

/* Claim `r` from state `seen` and make it a fresh record for `name`. */
static bool claim(struct agile_fleet_record *r, uint64_t seen,
                  const char *name, uint64_t config_hash)
{
	uint64_t mine = ((uint64_t)(uint32_t)getpid() << 8) | AGILE_FLEET_INIT;

	if (!agile__cas_u64(&r->state, &seen, mine))
		return false;
	memset((char *)r + sizeof(r->state), 0, sizeof(*r) - sizeof(r->state));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->config_hash = config_hash;
	agile__store_u64(&r->state, AGILE_FLEET_IN_USE);
	return true;
}

int agile__fleet_record_acquire(const struct agile_fleet_map *m,
                               const char *name, uint64_t config_hash,
                               struct agile_fleet_record **out)
{
	unsigned int home = (unsigned int)(agile__shmfile_name_hash(name) %
	                                     AGILE_FLEET_RECORDS);

	/* Linear probing from the name's home record, as the state file's
	 * slots: records are never freed, so the first free one on the path
	 * proves the name absent, and every process claims that same one. */
	for (unsigned int k = 0; k < AGILE_FLEET_RECORDS; k++) {
		struct agile_fleet_record *r =
			agile_fleet_record(m, (home + k) % AGILE_FLEET_RECORDS);

		for (int spins = 0;; spins++) {
			uint64_t st = agile__load_u64(&r->state);

			if (st == AGILE_FLEET_FREE) {
				if (claim(r, st, name, config_hash))
					break;
				continue;
			}
			if ((st & 0xff) == AGILE_FLEET_INIT) {
				/* Initialisation is a memset: microseconds,
				 * unless its process died in it. */
				struct timespec ts = { 0, 100000 };
				int32_t pid = (int32_t)(st >> 8);

				if (!agile__shmfile_pid_alive(pid) ||
				    spins > 2000) {
					if (claim(r, st, name, config_hash))
						break;
					continue;
				}
				nanosleep(&ts, NULL);
				continue;
			}
			if (strncmp(r->name, name, sizeof(r->name)) != 0)
				break;
			/* Ours.  A record made for other settings is made
			 * again: it holds leases and counters, no promise
			 * another process still relies on for long. */
			if (agile__load_u64(&r->config_hash) != config_hash &&
			    !claim(r, st, name, config_hash))
				continue;
			*out = r;
			return 0;
		}
		if (strncmp(r->name, name, sizeof(r->name)) == 0) {
			*out = r;
			return 0;
		}
	}
	return -ENOSPC;
}

const struct agile_fleet_record *
agile__fleet_record_find(const struct agile_fleet_map *m, const char *name)
{
	for (unsigned int i = 0; i < m->header->record_count; i++) {
		const struct agile_fleet_record *r = agile_fleet_record(m, i);

		if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) ==
		    AGILE_FLEET_IN_USE &&
		    strncmp(r->name, name, sizeof(r->name)) == 0)
			return r;
	}
	return NULL;
}
