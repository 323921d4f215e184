/*
 * fleet_state.c - create, validate and map the fleet companion file, and
 * find a destination's record in it (layout in fleet_state.h).
 *
 * Linked into the preload and agilestat; prints nothing.  Creation follows
 * the state file's discipline (state.c): write a complete file under a
 * temporary name, then link() it into place when none exists, so racing
 * creators agree on one winner, or rename() it over a rejected file that is
 * still the very inode that was rejected.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "fleet_state.h"

_Static_assert(offsetof(struct agile_fleet_record, turn) == 160, "turn");
_Static_assert(offsetof(struct agile_fleet_record, lease) == 320, "lease");
_Static_assert(offsetof(struct agile_fleet_record, fallback_bucket) == 576,
               "fallback_bucket");
_Static_assert(offsetof(struct agile_fleet_record, admits) == 640, "admits");
_Static_assert(offsetof(struct agile_fleet_record, last_error) == 768,
               "last_error");

size_t agile_fleet_path(const char *state_path, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s", state_path, AGILE_FLEET_SUFFIX);

	return n < 0 ? 0 : (size_t)n;
}

static void read_boot_id(char out[40])
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	memset(out, 0, 40);
	if (fd < 0)
		return;
	n = read(fd, out, 39);
	close(fd);
	if (n <= 0) {
		memset(out, 0, 40);
		return;
	}
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
		out[--n] = '\0';
}

int agile_fleet_check_map(const void *map, size_t size, char *why,
                          size_t why_len)
{
	const struct agile_fleet_header *h = map;
	char boot_id[40];

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
	read_boot_id(boot_id);
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

static int write_fresh(const char *tmp)
{
	struct agile_fleet_header *h;
	struct timespec ts;
	void *p;
	int fd, rc;

	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	/* Reserve the blocks now: a store into a hole of a full tmpfs would
	 * be a SIGBUS in the host program. */
	rc = posix_fallocate(fd, 0, (off_t)AGILE_FLEET_SIZE);
	if (rc != 0) {
		close(fd);
		return -rc;
	}
	p = mmap(NULL, AGILE_FLEET_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	         0);
	rc = p == MAP_FAILED ? -errno : 0;
	close(fd);
	if (rc < 0)
		return rc;
	h = p;
	memcpy(h->magic, AGILE_FLEET_MAGIC, sizeof(h->magic));
	h->version = AGILE_FLEET_VERSION;
	h->header_size = sizeof(*h);
	h->record_size = sizeof(struct agile_fleet_record);
	h->record_count = AGILE_FLEET_RECORDS;
	h->file_size = AGILE_FLEET_SIZE;
	clock_gettime(CLOCK_REALTIME, &ts);
	h->created_unix_ns = (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
	read_boot_id(h->boot_id);
	make_host_id(h->host_id);
	__atomic_store_n(&h->ready, AGILE_FLEET_READY, __ATOMIC_RELEASE);
	munmap(p, AGILE_FLEET_SIZE);
	return 0;
}

/* As state.c's install_fresh: -EEXIST/-ESTALE mean "open it again". */
static int install_fresh(const char *path, ino_t rejected_ino)
{
	char tmp[4096];
	struct timespec now;
	struct stat st;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (snprintf(tmp, sizeof(tmp), "%s.%ld.%ld%09ld.tmp", path,
	             (long)getpid(), (long)now.tv_sec, now.tv_nsec) >=
	    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	rc = write_fresh(tmp);
	if (rc < 0) {
		unlink(tmp);
		return rc;
	}
	if (rejected_ino == 0)
		rc = link(tmp, path) == 0 ? 0 : -errno;
	else if (lstat(path, &st) == 0 && st.st_ino == rejected_ino)
		rc = rename(tmp, path) == 0 ? 0 : -errno;
	else
		rc = -ESTALE;
	unlink(tmp);
	return rc;
}

void agile_fleet_close(struct agile_fleet_map *m)
{
	if (m->header != NULL)
		munmap(m->header, m->size);
	m->header = NULL;
	m->size = 0;
}

int agile_fleet_open_rw(const char *path, struct agile_fleet_map *out,
                        char *replaced_why, size_t why_len)
{
	char why[160];
	int rc = -EAGAIN;

	replaced_why[0] = '\0';
	for (int attempt = 0; attempt < 4; attempt++) {
		struct stat st;
		void *p;
		int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

		if (fd < 0) {
			if (errno != ENOENT)
				return -errno;
			rc = install_fresh(path, 0);
			if (rc < 0 && rc != -EEXIST)
				return rc;
			continue;
		}
		if (fstat(fd, &st) != 0) {
			rc = -errno;
			close(fd);
			return rc;
		}
		if (st.st_uid != geteuid() || !S_ISREG(st.st_mode)) {
			close(fd);
			return -EPERM;
		}
		if ((size_t)st.st_size == AGILE_FLEET_SIZE) {
			p = mmap(NULL, AGILE_FLEET_SIZE, PROT_READ | PROT_WRITE,
			         MAP_SHARED, fd, 0);
			rc = p == MAP_FAILED ? -errno : 0;
			close(fd);
			if (rc < 0)
				return rc;
			if (agile_fleet_check_map(p, AGILE_FLEET_SIZE, why,
			                          sizeof(why)) == 0) {
				out->header = p;
				out->size = AGILE_FLEET_SIZE;
				return 0;
			}
			munmap(p, AGILE_FLEET_SIZE);
		} else {
			close(fd);
			snprintf(why, sizeof(why), "size %lld bytes, expected "
			         "%zu", (long long)st.st_size,
			         (size_t)AGILE_FLEET_SIZE);
		}
		snprintf(replaced_why, why_len, "%s", why);
		rc = install_fresh(path, st.st_ino);
		if (rc < 0 && rc != -ESTALE)
			return rc;
	}
	return rc;
}

int agile_fleet_open_ro(const char *path, struct agile_fleet_map *out,
                        char *why, size_t why_len)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc;

	why[0] = '\0';
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if ((size_t)st.st_size != AGILE_FLEET_SIZE) {
		close(fd);
		snprintf(why, why_len, "size %lld bytes, expected %zu",
		         (long long)st.st_size, (size_t)AGILE_FLEET_SIZE);
		return -EINVAL;
	}
	p = mmap(NULL, AGILE_FLEET_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	rc = p == MAP_FAILED ? -errno : 0;
	close(fd);
	if (rc < 0)
		return rc;
	rc = agile_fleet_check_map(p, AGILE_FLEET_SIZE, why, why_len);
	if (rc < 0) {
		munmap(p, AGILE_FLEET_SIZE);
		return rc;
	}
	out->header = p;
	out->size = AGILE_FLEET_SIZE;
	return 0;
}

static uint64_t name_hash(const char *name)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (const char *c = name; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * UINT64_C(1099511628211);
	return h;
}

static bool pid_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
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

int agile_fleet_record_acquire(const struct agile_fleet_map *m,
                               const char *name, uint64_t config_hash,
                               struct agile_fleet_record **out)
{
	unsigned int home = (unsigned int)(name_hash(name) % AGILE_FLEET_RECORDS);

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

				if (!pid_alive((int32_t)(st >> 8)) ||
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
agile_fleet_record_find(const struct agile_fleet_map *m, const char *name)
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
