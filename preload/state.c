/*
 * state.c - create, validate, map and allocate slots in the state file
 * (layout in state.h).
 *
 * Nothing here prints or reads the preload's globals: the preload and
 * agilestat both link this file, and the caller decides what to say about a
 * failure.  Every call the preload makes from here runs with its re-entrancy
 * guard set, so the libc calls below go straight to libc.
 *
 * Creation never exposes a half-written file: a fresh file is written under
 * a temporary name, filled, and then link()ed into place when no file exists
 * (so two processes racing to create agree on one winner: the loser's link
 * fails with EEXIST and it maps the winner's) or rename()d over a rejected
 * file (checked to be the very inode that was rejected, so a file another
 * process has just replaced is not replaced again).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "state.h"

_Static_assert(sizeof(struct agile_state_header) == 256, "header size");
_Static_assert(sizeof(struct agile_state_tick) == 64, "tick size");
_Static_assert(offsetof(struct agile_state_slot, resilience) == 8064,
               "resilience offset");
_Static_assert(offsetof(struct agile_state_slot, limiter) ==
               8064 + sizeof(struct agile_state_resilience),
               "limiter offset");
_Static_assert(sizeof(struct agile_state_slot) % 64 == 0, "slot alignment");

size_t agile_state_path(char *buf, size_t len)
{
	const char *env = getenv("AGILE_STATE");
	int n;

	if (env != NULL && *env != '\0')
		n = snprintf(buf, len, "%s", env);
	else
		n = snprintf(buf, len, "%s/agilepreload-%u.state",
		             AGILE_STATE_DEFAULT_DIR, (unsigned int)getuid());
	return n < 0 ? 0 : (size_t)n;
}

/* The current boot's id, NUL-padded; an empty string when unreadable (a
 * file written then still matches, which is the best we can do). */
static void read_boot_id(char out[AGILE_STATE_BOOT_ID_MAX])
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = 0;

	memset(out, 0, AGILE_STATE_BOOT_ID_MAX);
	if (fd < 0)
		return;
	n = read(fd, out, AGILE_STATE_BOOT_ID_MAX - 1);
	close(fd);
	if (n <= 0) {
		memset(out, 0, AGILE_STATE_BOOT_ID_MAX);
		return;
	}
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
		out[--n] = '\0';
}

static bool bounded_string(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL;
}

int agile_state_validate(const void *map, size_t size, const char *boot_id,
                         char *why, size_t why_len)
{
	const struct agile_state_header *h = map;

#define REJECT(...) do { snprintf(why, why_len, __VA_ARGS__); \
		return -EINVAL; } while (0)
	if (size < sizeof(*h))
		REJECT("truncated: %zu bytes, shorter than its header", size);
	if (memcmp(h->magic, AGILE_STATE_MAGIC, sizeof(h->magic)) != 0)
		REJECT("not an agilepreload state file (bad magic)");
	if (h->version != AGILE_STATE_VERSION)
		REJECT("format version %u, this build reads %u", h->version,
		       AGILE_STATE_VERSION);
	if (h->header_size != sizeof(*h) ||
	    h->slot_size != sizeof(struct agile_state_slot) ||
	    h->slot_count != AGILE_STATE_SLOTS ||
	    h->ring_len != AGILE_STATE_RING ||
	    h->pids_max != AGILE_STATE_PIDS ||
	    h->limiter_size != sizeof(struct agile_rate_limiter) ||
	    h->resilience_size != sizeof(struct agile_state_resilience) ||
	    h->limiter_offset != offsetof(struct agile_state_slot, limiter))
		REJECT("layout differs from this build's (another build of "
		       "libagile wrote it)");
	if (h->file_size != AGILE_STATE_SIZE || size < AGILE_STATE_SIZE)
		REJECT("truncated: %zu bytes, expected %zu", size,
		       (size_t)AGILE_STATE_SIZE);
	if (__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) != AGILE_STATE_READY)
		REJECT("never finished being written");
	if (!bounded_string(h->boot_id, sizeof(h->boot_id)) ||
	    strcmp(boot_id, h->boot_id) != 0)
		REJECT("written before the last reboot (its clock is stale)");
	for (unsigned int i = 0; i < AGILE_STATE_SLOTS; i++) {
		const struct agile_state_slot *s = (const void *)
			((const char *)map + sizeof(*h) +
			 (size_t)i * sizeof(struct agile_state_slot));
		uint64_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (st != AGILE_SLOT_FREE && st != AGILE_SLOT_READY &&
		    ((st & 0xff) != AGILE_SLOT_INIT ||
		     AGILE_SLOT_INIT_PID(st) <= 0))
			REJECT("slot %u has an invalid state word", i);
		if (st == AGILE_SLOT_READY &&
		    (!bounded_string(s->name, sizeof(s->name)) ||
		     !bounded_string(s->dest, sizeof(s->dest))))
			REJECT("slot %u has an unterminated name", i);
		if (st == AGILE_SLOT_READY &&
		    !agile_resilience_state_valid(&s->resilience))
			REJECT("slot %u has damaged resilience state", i);
	}
#undef REJECT
	return 0;
}

int agile_state_check(const void *map, size_t size, char *why, size_t why_len)
{
	char boot_id[AGILE_STATE_BOOT_ID_MAX];

	read_boot_id(boot_id);
	return agile_state_validate(map, size, boot_id, why, why_len);
}

static int map_fd(int fd, size_t size, bool writable,
                  struct agile_state_map *out)
{
	void *p = mmap(NULL, size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
	               MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	out->header = p;
	out->size = size;
	out->writable = writable;
	return 0;
}

void agile_state_close(struct agile_state_map *m)
{
	if (m->header != NULL)
		munmap(m->header, m->size);
	m->header = NULL;
	m->size = 0;
}

void agile_state_format(void *map, const char *boot_id,
                        int64_t created_unix_ns)
{
	struct agile_state_header *h = map;

	memset(h, 0, sizeof(*h));
	memcpy(h->magic, AGILE_STATE_MAGIC, sizeof(h->magic));
	h->version = AGILE_STATE_VERSION;
	h->header_size = sizeof(*h);
	h->slot_size = sizeof(struct agile_state_slot);
	h->slot_count = AGILE_STATE_SLOTS;
	h->ring_len = AGILE_STATE_RING;
	h->pids_max = AGILE_STATE_PIDS;
	h->file_size = AGILE_STATE_SIZE;
	h->limiter_size = sizeof(struct agile_rate_limiter);
	h->limiter_offset = offsetof(struct agile_state_slot, limiter);
	h->resilience_size = sizeof(struct agile_state_resilience);
	h->created_unix_ns = created_unix_ns;
	snprintf(h->boot_id, sizeof(h->boot_id), "%s", boot_id);
	/* Last, and released: a reader that sees READY sees the rest. */
	__atomic_store_n(&h->ready, AGILE_STATE_READY, __ATOMIC_RELEASE);
}

/* Write a fresh, empty, valid file at `tmp`. */
static int write_fresh(const char *tmp)
{
	struct agile_state_map m = { 0 };
	int fd, rc;

	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	          0600);
	if (fd < 0)
		return -errno;
	/* Reserve the blocks now: on a full tmpfs a later store into the
	 * mapping would be a SIGBUS in the host program, not an error. */
	rc = posix_fallocate(fd, 0, (off_t)AGILE_STATE_SIZE);
	if (rc == 0)
		rc = -map_fd(fd, AGILE_STATE_SIZE, true, &m);
	close(fd);
	if (rc != 0)
		return -rc;
	{
		struct timespec ts;
		char boot_id[AGILE_STATE_BOOT_ID_MAX];

		clock_gettime(CLOCK_REALTIME, &ts);
		read_boot_id(boot_id);
		/* Slots are zero (FREE) from posix_fallocate. */
		agile_state_format(m.header, boot_id,
		                   (int64_t)ts.tv_sec * AGILE_NS_PER_S +
		                   ts.tv_nsec);
	}
	agile_state_close(&m);
	return 0;
}

/*
 * Put a fresh file at `path`.  With rejected_ino == 0 the path must not
 * exist (link); otherwise it must still be that inode (rename over it).
 * Returns 0, or -errno; -EEXIST/-ESTALE mean "someone else got there first,
 * just open the path again".
 */
static int install_fresh(const char *path, ino_t rejected_ino)
{
	char tmp[4096];
	struct stat st;
	int rc;

	struct timespec now;

	/* pid and time make the name unique among concurrent creators. */
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
	if (rejected_ino == 0) {
		rc = link(tmp, path) == 0 ? 0 : -errno;
	} else if (lstat(path, &st) == 0 && st.st_ino == rejected_ino) {
		rc = rename(tmp, path) == 0 ? 0 : -errno;
	} else {
		rc = -ESTALE;
	}
	unlink(tmp);
	return rc;
}

int agile_state_open_rw(const char *path, struct agile_state_map *out,
                        char *replaced_why, size_t why_len)
{
	char why[160];
	int rc = -EAGAIN;

	replaced_why[0] = '\0';
	for (int attempt = 0; attempt < 4; attempt++) {
		struct stat st;
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
		if ((size_t)st.st_size == AGILE_STATE_SIZE) {
			rc = map_fd(fd, AGILE_STATE_SIZE, true, out);
			close(fd);
			if (rc < 0)
				return rc;
			if (agile_state_check(out->header, out->size, why,
			                      sizeof(why)) == 0)
				return 0;
			agile_state_close(out);
		} else {
			close(fd);
			if (st.st_size < (off_t)sizeof(struct agile_state_header))
				snprintf(why, sizeof(why), "truncated: %lld "
				         "bytes", (long long)st.st_size);
			else
				snprintf(why, sizeof(why), "size %lld bytes, "
				         "expected %zu", (long long)st.st_size,
				         (size_t)AGILE_STATE_SIZE);
		}
		snprintf(replaced_why, why_len, "%s", why);
		rc = install_fresh(path, st.st_ino);
		if (rc < 0 && rc != -ESTALE)
			return rc;
	}
	return rc;
}

int agile_state_open_ro(const char *path, struct agile_state_map *out,
                        char *why, size_t why_len)
{
	struct stat st;
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
	if ((size_t)st.st_size < sizeof(struct agile_state_header)) {
		close(fd);
		snprintf(why, why_len, "truncated: %lld bytes",
		         (long long)st.st_size);
		return -EINVAL;
	}
	rc = map_fd(fd, (size_t)st.st_size, false, out);
	close(fd);
	if (rc < 0)
		return rc;
	rc = agile_state_check(out->header, out->size, why, why_len);
	if (rc < 0)
		agile_state_close(out);
	return rc;
}

uint64_t agile_state_config_hash(const struct agile_resolved *resolved,
                                 const char *dest, uint32_t pace,
                                 const struct agile_resilience_config *res)
{
	/* FNV-1a over the resolved configuration (pointer-free, zero padded
	 * by agile_resolve's callers), the destination text and the pace. */
	uint64_t h = UINT64_C(14695981039346656037);
	const unsigned char *p = (const unsigned char *)resolved;

	for (size_t i = 0; i < sizeof(*resolved); i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	for (const char *c = dest; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * UINT64_C(1099511628211);
	h = (h ^ pace) * UINT64_C(1099511628211);
	if (res != NULL)
		h = agile_resilience_hash(res, h);
	return h;
}

static int resolve(const struct agile_config *config,
                   struct agile_resolved *out)
{
	memset(out, 0, sizeof(*out));
	return agile_resolve(config, AGILE_KIND_RATE, out);
}

int agile_state_slot_init(struct agile_state_slot *s, const char *name,
                          const char *dest, uint32_t pace,
                          const struct agile_config *config,
                          const struct agile_resilience_config *res,
                          int64_t now_ns, int64_t now_unix_ns)
{
	static const struct agile_resilience_config none;
	struct agile_resolved resolved;
	int rc = resolve(config, &resolved);

	if (rc < 0)
		return rc;
	/* Everything but the state word, which the caller owns. */
	memset((char *)s + sizeof(s->state), 0, sizeof(*s) - sizeof(s->state));
	rc = agile_rate_init(&s->limiter, config, now_ns);
	if (rc < 0)
		return rc;
	rc = agile_resilience_state_init(&s->resilience,
	                                 res != NULL ? res : &none, config,
	                                 now_ns);
	if (rc < 0)
		return rc;
	s->config_hash = agile_state_config_hash(&resolved, dest, pace, res);
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->dest, sizeof(s->dest), "%s", dest);
	s->pace = pace;
	s->created_unix_ns = now_unix_ns;
	s->last_tick_unix_ns = now_unix_ns;
	return 0;
}

static bool pid_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static uint64_t name_hash(const char *name)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (const char *c = name; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * UINT64_C(1099511628211);
	return h;
}

/* How long to wait for another process to finish initialising a slot
 * before giving up on it: initialisation takes microseconds, so this only
 * matters when that process was stopped or killed mid-way. */
#define INIT_WAIT_NS (200 * AGILE_NS_PER_MS)
#define INIT_POLL_NS (1 * AGILE_NS_PER_MS)

/* Claim a slot whose state word is `seen` and initialise it. */
static int claim_and_init(struct agile_state_slot *s, uint64_t seen,
                          const char *name, const char *dest, uint32_t pace,
                          const struct agile_config *config,
                          const struct agile_resilience_config *res,
                          int64_t now_ns, int64_t now_unix_ns)
{
	uint64_t mine = ((uint64_t)(uint32_t)getpid() << 8) | AGILE_SLOT_INIT;
	int rc;

	if (!agile__cas_u64(&s->state, &seen, mine))
		return -EAGAIN;
	rc = agile_state_slot_init(s, name, dest, pace, config, res, now_ns,
	                           now_unix_ns);
	/* A slot that cannot be initialised goes back to FREE, never stays
	 * claimed. */
	agile__store_u64(&s->state, rc < 0 ? AGILE_SLOT_FREE : AGILE_SLOT_READY);
	return rc;
}

static bool other_live_pid(const struct agile_state_slot *s, int32_t self,
                           int32_t *other)
{
	for (int i = 0; i < AGILE_STATE_PIDS; i++) {
		int32_t pid = __atomic_load_n(&s->pids[i], __ATOMIC_ACQUIRE);

		if (pid != 0 && pid != self && pid_alive(pid)) {
			*other = pid;
			return true;
		}
	}
	return false;
}

int agile_state_slot_acquire(const struct agile_state_map *m,
                             const char *name, const char *dest,
                             uint32_t pace, const struct agile_config *config,
                             const struct agile_resilience_config *res,
                             int64_t now_ns, int64_t now_unix_ns,
                             struct agile_state_slot **out, int32_t *other_pid)
{
	unsigned int start = (unsigned int)(name_hash(name) % AGILE_STATE_SLOTS);
	struct agile_resolved resolved;
	uint64_t hash;
	int rc = resolve(config, &resolved);

	if (rc < 0)
		return rc;
	hash = agile_state_config_hash(&resolved, dest, pace, res);
	/* Linear probing from the name's home slot.  Slots are never freed
	 * (only the whole file is recreated), so the first free slot on the
	 * probe path proves the name is absent, and every process probing for
	 * the same name claims that same slot: the CAS picks one initialiser
	 * and the others wait for it and attach. */
	for (unsigned int k = 0; k < AGILE_STATE_SLOTS; k++) {
		struct agile_state_slot *s =
			agile_state_slot(m, (start + k) % AGILE_STATE_SLOTS);
		int64_t waited = 0;

		for (;;) {
			uint64_t st = agile__load_u64(&s->state);

			if (st == AGILE_SLOT_FREE) {
				rc = claim_and_init(s, st, name, dest, pace,
				                    config, res, now_ns,
				                    now_unix_ns);
				if (rc == -EAGAIN)
					continue;
				if (rc < 0)
					return rc;
				*out = s;
				return AGILE_SLOT_CREATED;
			}
			if ((st & 0xff) == AGILE_SLOT_INIT) {
				struct timespec ts = { 0, INIT_POLL_NS };
				int32_t pid = AGILE_SLOT_INIT_PID(st);

				if (!pid_alive(pid) || waited >= INIT_WAIT_NS) {
					if (pid_alive(pid))
						return -EBUSY;
					/* Its initialiser died mid-way. */
					rc = claim_and_init(s, st, name, dest,
					                    pace, config, res,
					                    now_ns, now_unix_ns);
					if (rc == -EAGAIN)
						continue;
					if (rc < 0)
						return rc;
					*out = s;
					return AGILE_SLOT_CREATED;
				}
				nanosleep(&ts, NULL);
				waited += INIT_POLL_NS;
				continue;
			}
			break; /* READY */
		}
		if (strncmp(s->name, name, sizeof(s->name)) != 0)
			continue;
		if (agile__load_u64(&s->config_hash) == hash) {
			*out = s;
			return AGILE_SLOT_ATTACHED;
		}
		/* Same name, different configuration: take it over only when
		 * nobody else is using the old one. */
		if (other_live_pid(s, (int32_t)getpid(), other_pid))
			return -EEXIST;
		rc = claim_and_init(s, AGILE_SLOT_READY, name, dest, pace,
		                    config, res, now_ns, now_unix_ns);
		if (rc == -EAGAIN) {
			k--; /* it changed under us: look at it again */
			continue;
		}
		if (rc < 0)
			return rc;
		*out = s;
		return AGILE_SLOT_RECONFIGURED;
	}
	return -ENOSPC;
}

void agile_state_slot_attach_pid(struct agile_state_slot *s, int32_t pid)
{
	int free_index = -1;

	for (int i = 0; i < AGILE_STATE_PIDS; i++) {
		int32_t cur = __atomic_load_n(&s->pids[i], __ATOMIC_ACQUIRE);

		if (cur == pid)
			return;
		if (free_index < 0 && (cur == 0 || !pid_alive(cur)))
			free_index = i;
	}
	for (int i = free_index; i >= 0 && i < AGILE_STATE_PIDS; i++) {
		int32_t cur = __atomic_load_n(&s->pids[i], __ATOMIC_ACQUIRE);

		if ((cur == 0 || !pid_alive(cur)) &&
		    __atomic_compare_exchange_n(&s->pids[i], &cur, pid, false,
		                                __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			return;
	}
	/* Full of live processes: this one is not listed, which only makes
	 * agilestat's count a lower bound. */
}

int agile_state_slot_live_pids(const struct agile_state_slot *s,
                               int32_t *pids, int cap)
{
	int n = 0;

	for (int i = 0; i < AGILE_STATE_PIDS; i++) {
		int32_t pid = __atomic_load_n(&s->pids[i], __ATOMIC_ACQUIRE);

		if (pid_alive(pid)) {
			if (n < cap)
				pids[n] = pid;
			n++;
		}
	}
	return n;
}

void agile_state_slot_append_tick(struct agile_state_slot *s,
                                  int64_t now_unix_ns)
{
	struct agile_stats stats;
	uint64_t index = agile__load_u64(&s->ring_count);
	struct agile_state_tick *t = &s->ring[index % AGILE_STATE_RING];
	uint64_t truncated = agile__load_u64(&s->truncated);
	uint64_t before = __atomic_exchange_n(&s->truncated_at_tick, truncated,
	                                      __ATOMIC_ACQ_REL);

	agile_rate_stats(&s->limiter, &stats);
	t->unix_ns = now_unix_ns;
	t->rate = stats.rate;
	t->used = stats.used;
	t->p50_ns = stats.p50_ns;
	t->p99_ns = stats.p99_ns;
	t->samples = stats.samples;
	t->unreachable = stats.unreachable;
	t->truncated = truncated - before;
	agile__store_i64(&s->last_tick_unix_ns, now_unix_ns);
	/* Published after the entry is written, so a reader that sees the
	 * count sees the entry it names. */
	agile__store_u64(&s->ring_count, index + 1);
}
