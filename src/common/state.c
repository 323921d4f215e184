/*
 * state.c - find, create, validate, map and allocate slots in the state
 * file (layout in state.h).
 *
 * The default path is chosen here, for the preload and agilestat alike
 * (agile__state_path): a directory only the real user can write, checked
 * with O_NOFOLLOW and fstat, since anyone may create names in /dev/shm.
 *
 * Nothing here prints or reads the preload's globals: the preload and
 * agilestat both link this file, and the caller decides what to say about a
 * failure.  Every call the preload makes from here runs with its re-entrancy
 * guard set, so the libc calls below go straight to libc.
 *
 * Opening, creating and replacing the file is shmfile.c's, shared with the
 * fleet companion file; this file supplies the state file's judge
 * (agile__state_check) and writer (agile__state_format).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "shmfile.h"
#include "state.h"

_Static_assert(sizeof(struct agile_state_header) == 256, "header size");
_Static_assert(sizeof(struct agile_state_tick) == 64, "tick size");
_Static_assert(offsetof(struct agile_state_slot, resilience) == 8064,
               "resilience offset");
_Static_assert(offsetof(struct agile_state_slot, limiter) ==
               8064 + sizeof(struct agile_state_resilience),
               "limiter offset");
_Static_assert(sizeof(struct agile_state_slot) % 64 == 0, "slot alignment");
_Static_assert(AGILE_STATE_BOOT_ID_MAX == AGILE_SHMFILE_BOOT_ID_MAX,
               "boot id width");

/*
 * Whether `dir` is a directory of `uid`'s that no other user can write
 * into: owned by `uid`, reached without following a symbolic link at its
 * last component, and with no group or other bits at all (`private`: the
 * directory of the state file itself) or no group or other write bit (its
 * parents in the home directory).  With `create`, it is made 0700 when
 * absent.  Returns 0, or -errno with a phrase in `why`.
 */
static int owned_dir(const char *dir, bool create, bool private, uid_t uid,
                     char *why, size_t why_len)
{
	struct stat st;
	int fd, rc;

	if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(why, why_len, "%.200s: cannot create it: %s", dir,
		         strerror(-rc));
		return rc;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, why_len, "%.200s: %s", dir,
		         rc == -ELOOP || rc == -ENOTDIR
		         ? "a symbolic link or not a directory" : strerror(-rc));
		return rc;
	}
	rc = fstat(fd, &st) == 0 ? 0 : -errno;
	close(fd);
	if (rc < 0) {
		snprintf(why, why_len, "%.200s: %s", dir, strerror(-rc));
		return rc;
	}
	if (st.st_uid != uid) {
		snprintf(why, why_len, "%.200s belongs to uid %u, not to uid %u "
		         "(another user made it)", dir, (unsigned int)st.st_uid,
		         (unsigned int)uid);
		return -EPERM;
	}
	if ((st.st_mode & (private ? 0077 : 0022)) != 0) {
		snprintf(why, why_len, "%.200s has mode %04o, expected %s", dir,
		         (unsigned int)(st.st_mode & 07777),
		         private ? "0700" : "no group or other write bit");
		return -EPERM;
	}
	return 0;
}

/* `dir`/`name` into buf; -ENAMETOOLONG when it does not fit. */
static int join(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The last resort, <home>/.cache/agilepreload/state: the one default place
 * that no other user can name first, because they cannot write in the home
 * directory.  Into `buf`, then checked (and made) as owned_dir says. */
static int home_path(const char *home, bool create, uid_t uid, char *buf,
                     size_t len, char *why, size_t why_len)
{
	char dir[4096];
	int rc;

	if (home == NULL || home[0] != '/') {
		snprintf(why, why_len, "the home directory %s", home == NULL
		         ? "is unknown" : "is not an absolute path");
		return -EINVAL;
	}
	if ((rc = join(dir, sizeof(dir), home, ".cache/agilepreload")) < 0 ||
	    (rc = join(buf, len, dir, "state")) < 0)
		return rc;
	if ((rc = owned_dir(home, false, false, uid, why, why_len)) < 0 ||
	    (rc = join(dir, sizeof(dir), home, ".cache")) < 0 ||
	    (rc = owned_dir(dir, create, false, uid, why, why_len)) < 0 ||
	    (rc = join(dir, sizeof(dir), home, ".cache/agilepreload")) < 0 ||
	    (rc = owned_dir(dir, create, true, uid, why, why_len)) < 0)
		return rc;
	return 0;
}

int agile__state_path(const char *state_env, const char *(*home_of)(void),
                     bool create, char *buf, size_t len, char *note,
                     size_t note_len)
{
	/* The real uid, for the directory's name and for its owner: a root
	 * process that seteuid()s to another user still names root's
	 * directory, and creates nothing there (it would be the other
	 * user's, and root's next process would refuse it). */
	uid_t uid = getuid();
	bool reader = !create;
	char run[64], shm[64], why[320], home_why[320];
	int rc;

	note[0] = '\0';
	create = create && geteuid() == uid;
	if (state_env != NULL && state_env[0] != '\0') {
		int n = snprintf(buf, len, "%s", state_env);

		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	/* The runtime directory, when there is one and it is this user's
	 * alone; the preload never makes it. */
	snprintf(run, sizeof(run), "%s/%u", AGILE_STATE_RUNTIME_ROOT,
	         (unsigned int)uid);
	if (owned_dir(run, false, true, uid, why, sizeof(why)) == 0)
		return join(buf, len, run, "agilepreload.state");
	snprintf(shm, sizeof(shm), "%s/agilepreload-%u", AGILE_STATE_DEFAULT_DIR,
	         (unsigned int)uid);
	rc = owned_dir(shm, create, true, uid, why, sizeof(why));
	if (rc == -ENOENT && !create) {
		/* Not made yet, as far as a reader or a process that may not
		 * make it can tell: the file is absent too, unless a preload
		 * could not make the directory and moved to the home one. */
		if (reader && home_path(home_of(), false, uid, buf, len,
		                        home_why, sizeof(home_why)) == 0 &&
		    access(buf, F_OK) == 0) {
			snprintf(note, note_len, "%s; using %s", why, buf);
			return 0;
		}
		rc = 0;
	}
	if (rc == 0)
		return join(buf, len, shm, "state");
	/* Another user made the directory first (anyone may write in
	 * /dev/shm), or it cannot be made: a file in another user's
	 * directory would be theirs to read and write, and a limiter of each
	 * process's own would lift the ceiling.  Every process of this user
	 * finds the same, so all of them move to the same place in the home
	 * directory and still share one budget. */
	rc = home_path(home_of(), create, uid, buf, len, home_why,
	               sizeof(home_why));
	if (rc == 0 || (rc == -ENOENT && !create)) {
		snprintf(note, note_len, "%s; using %s instead", why, buf);
		return 0;
	}
	snprintf(note, note_len, "%s; and the fallback: %s", why, home_why);
	if (join(buf, len, shm, "state") < 0)
		buf[0] = '\0';
	return rc;
}

static bool bounded_string(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL;
}

int agile__state_validate(const void *map, size_t size, const char *boot_id,
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
		    !agile__resilience_state_valid(&s->resilience))
			REJECT("slot %u has damaged resilience state", i);
	}
#undef REJECT
	return 0;
}

int agile__state_check(const void *map, size_t size, char *why, size_t why_len)
{
	char boot_id[AGILE_STATE_BOOT_ID_MAX];

	agile__shmfile_boot_id(boot_id);
	return agile__state_validate(map, size, boot_id, why, why_len);
}

void agile__state_close(struct agile_state_map *m)
{
	if (m->header != NULL)
		munmap(m->header, m->size);
	m->header = NULL;
	m->size = 0;
}

void agile__state_format(void *map, const char *boot_id,
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

/* shmfile's writer: the blocks are zero, so every slot is FREE. */
static void format_fresh(void *map)
{
	struct timespec ts;
	char boot_id[AGILE_SHMFILE_BOOT_ID_MAX];

	clock_gettime(CLOCK_REALTIME, &ts);
	agile__shmfile_boot_id(boot_id);
	agile__state_format(map, boot_id,
	                   (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec);
}

/* Any size from the header up is mapped read-only, so that agilestat, given
 * another build's file, says what differs (its version, its layout) rather
 * than only that its size does. */
static const struct agile_shmfile_type state_file = {
	.size = AGILE_STATE_SIZE,
	.header_size = sizeof(struct agile_state_header),
	.ro_any_size = true,
	.validate = agile__state_check,
	.format = format_fresh,
};

int agile__state_open_rw(const char *path, struct agile_state_map *out,
                        char *replaced_why, size_t why_len)
{
	void *map;
	int rc = agile__shmfile_open_rw(&state_file, path, &map, replaced_why,
	                               why_len);

	if (rc < 0)
		return rc;
	out->header = map;
	out->size = AGILE_STATE_SIZE;
	out->writable = true;
	return 0;
}

int agile__state_open_ro(const char *path, struct agile_state_map *out,
                        char *why, size_t why_len)
{
	void *map;
	size_t size;
	int rc = agile__shmfile_open_ro(&state_file, path, &map, &size, why,
	                               why_len);

	if (rc < 0)
		return rc;
	out->header = map;
	out->size = size;
	out->writable = false;
	return 0;
}

int agile__state_read_fd(int fd, off_t file_size, struct agile_state_map *out,
                        char *why, size_t why_len)
{
	void *map;
	size_t size;
	int rc = agile__shmfile_read_fd(&state_file, fd, file_size, &map, &size,
	                               why, why_len);

	if (rc < 0)
		return rc;
	out->header = map;
	out->size = size;
	out->writable = false;
	return 0;
}

uint64_t agile__state_config_hash(const struct agile_resolved *resolved,
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
		h = agile__resilience_hash(res, h);
	return h;
}

static int resolve(const struct agile_config *config,
                   struct agile_resolved *out)
{
	memset(out, 0, sizeof(*out));
	return agile_resolve(config, AGILE_KIND_RATE, out);
}

int agile__state_slot_init(struct agile_state_slot *s, const char *name,
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
	rc = agile__resilience_state_init(&s->resilience,
	                                 res != NULL ? res : &none, config,
	                                 now_ns);
	if (rc < 0)
		return rc;
	s->config_hash = agile__state_config_hash(&resolved, dest, pace, res);
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->dest, sizeof(s->dest), "%s", dest);
	s->pace = pace;
	s->created_unix_ns = now_unix_ns;
	s->last_tick_unix_ns = now_unix_ns;
	return 0;
}

int agile__state_slot_repair(struct agile_state_slot *s,
                            const struct agile_config *config,
                            int64_t now_ns, char *why, size_t why_len)
{
	uint64_t mine = ((uint64_t)(uint32_t)getpid() << 8) | AGILE_SLOT_INIT;
	uint64_t seen = agile__load_u64(&s->state);
	struct agile_resolved resolved;
	struct agile_problem problem;
	int rc = resolve(config, &resolved);

	if (rc < 0)
		return rc;
	if (agile_rate_validate(&s->limiter, &resolved, now_ns, NULL) == 0)
		return 0;
	/* One process repairs.  The others find the slot claimed and carry
	 * on with the limiter as it is (the core is total on garbage), and
	 * find it repaired at their next check; a process attaching waits
	 * for the claim as for an initialisation.  A claim whose process
	 * died mid-repair is taken over: the slot was in use, so only its
	 * limiter can be unfinished. */
	if (seen != AGILE_SLOT_READY &&
	    ((seen & 0xff) != AGILE_SLOT_INIT ||
	     agile__shmfile_pid_alive(AGILE_SLOT_INIT_PID(seen))))
		return 0;
	if (!agile__cas_u64(&s->state, &seen, mine))
		return 0;
	/* Checked again under the claim: a repair that landed between the
	 * first check and the claim is not redone. */
	if (agile_rate_validate(&s->limiter, &resolved, now_ns,
	                        &problem) == 0) {
		agile__store_u64(&s->state, AGILE_SLOT_READY);
		return 0;
	}
	rc = agile_rate_init(&s->limiter, config, now_ns);
	/* The next grant one interval after now, not at once: a grant the
	 * damaged bucket handed out just before may be due now. */
	agile__store_i64(&s->limiter.bucket.last_ns, now_ns);
	agile__store_u64(&s->state, AGILE_SLOT_READY);
	if (rc < 0)
		return rc;
	snprintf(why, why_len, "%s", problem.message);
	return 1;
}

/* How long to wait for another process to finish initialising a slot
 * before giving up on it: initialisation takes microseconds, so this only
 * matters when that process was stopped or killed mid-way. */
#define INIT_WAIT_NS (200 * AGILE_NS_PER_MS)
#define INIT_POLL_NS (1 * AGILE_NS_PER_MS)

/* What a slot is acquired for: agile__state_slot_acquire's arguments. */
struct slot_request {
	const char *name;
	const char *dest;
	uint32_t pace;
	const struct agile_config *config;
	const struct agile_resilience_config *res;
	int64_t now_ns;
	int64_t now_unix_ns;
};

/* Claim a slot whose state word is `seen` and initialise it for q. */
static int claim_and_init(struct agile_state_slot *s, uint64_t seen,
                          const struct slot_request *q)
{
	uint64_t mine = ((uint64_t)(uint32_t)getpid() << 8) | AGILE_SLOT_INIT;
	int rc;

	if (!agile__cas_u64(&s->state, &seen, mine))
		return -EAGAIN;
	rc = agile__state_slot_init(s, q->name, q->dest, q->pace, q->config,
	                           q->res, q->now_ns, q->now_unix_ns);
	/* A slot that cannot be initialised goes back to FREE, never stays
	 * claimed. */
	agile__store_u64(&s->state, rc < 0 ? AGILE_SLOT_FREE : AGILE_SLOT_READY);
	return rc;
}

/*
 * Wait while another process initialises slot s, at most INIT_WAIT_NS in
 * all (counted in *waited); then *state is the slot's state word: free,
 * ready, or still being initialised by a process that died mid-way.
 * -EBUSY when a live initialiser takes longer than that.
 */
static int wait_initialised(struct agile_state_slot *s, int64_t *waited,
                            uint64_t *state)
{
	for (;;) {
		struct timespec ts = { 0, INIT_POLL_NS };

		*state = agile__load_u64(&s->state);
		if ((*state & 0xff) != AGILE_SLOT_INIT ||
		    !agile__shmfile_pid_alive(AGILE_SLOT_INIT_PID(*state)))
			return 0;
		if (*waited >= INIT_WAIT_NS)
			return -EBUSY;
		nanosleep(&ts, NULL);
		*waited += INIT_POLL_NS;
	}
}

static bool other_live_pid(const struct agile_state_slot *s, int32_t self,
                           int32_t *other)
{
	for (int i = 0; i < AGILE_STATE_PIDS; i++) {
		int32_t pid = __atomic_load_n(&s->pids[i], __ATOMIC_ACQUIRE);

		if (pid != 0 && pid != self && agile__shmfile_pid_alive(pid)) {
			*other = pid;
			return true;
		}
	}
	return false;
}

/*
 * The READY slot with no live process attached whose last tick is the
 * oldest (the lowest index among equals, so that processes looking at the
 * same file at once choose the same one), or NULL when every slot has a
 * live process.  A slot's pids list the processes attached (up to 16; a
 * slot with more lists 16 live ones), so an empty list means no process
 * uses it.
 */
static struct agile_state_slot *reclaimable(const struct agile_state_map *m)
{
	struct agile_state_slot *best = NULL;
	int64_t best_tick = INT64_MAX;

	for (unsigned int i = 0; i < AGILE_STATE_SLOTS; i++) {
		struct agile_state_slot *s = agile_state_slot(m, i);
		int32_t pids[AGILE_STATE_PIDS];
		int64_t tick = agile__load_i64(&s->last_tick_unix_ns);

		if (agile__load_u64(&s->state) != AGILE_SLOT_READY ||
		    agile__state_slot_live_pids(s, pids, AGILE_STATE_PIDS) > 0)
			continue;
		if (best == NULL || tick < best_tick) {
			best = s;
			best_tick = tick;
		}
	}
	return best;
}

int agile__state_slot_acquire(const struct agile_state_map *m,
                             const char *name, const char *dest,
                             uint32_t pace, const struct agile_config *config,
                             const struct agile_resilience_config *res,
                             int64_t now_ns, int64_t now_unix_ns,
                             struct agile_state_slot **out, int32_t *other_pid)
{
	const struct slot_request q = { name, dest, pace, config, res, now_ns,
	                                now_unix_ns };
	unsigned int start = (unsigned int)(agile__shmfile_name_hash(name) %
	                                      AGILE_STATE_SLOTS);
	struct agile_state_slot *takeover;
	struct agile_resolved resolved;
	uint64_t hash;
	bool beside;
	int rc = resolve(config, &resolved);

	if (rc < 0)
		return rc;
	hash = agile__state_config_hash(&resolved, dest, pace, res);
again:
	takeover = NULL;
	beside = false;
	/* Linear probing from the name's home slot.  A slot is never freed
	 * (only the whole file is recreated, or a slot reclaimed for another
	 * name once every slot is taken, which leaves none free), so the first
	 * free slot on the probe path proves the name is absent, and every
	 * process probing for the same name claims that same slot: the CAS
	 * picks one initialiser and the others wait for it and attach. */
	for (unsigned int k = 0; k < AGILE_STATE_SLOTS; k++) {
		struct agile_state_slot *s =
			agile_state_slot(m, (start + k) % AGILE_STATE_SLOTS);
		int64_t waited = 0;
		uint64_t st;

		for (;;) {
			rc = wait_initialised(s, &waited, &st);
			if (rc < 0)
				return rc;
			/* The configuration is absent: a slot of the name's
			 * that no live process uses is taken over before a
			 * free one is claimed. */
			if (st == AGILE_SLOT_FREE && takeover != NULL)
				goto take_over;
			if (st != AGILE_SLOT_FREE &&
			    (st & 0xff) != AGILE_SLOT_INIT)
				break; /* READY */
			/* Free, or its initialiser died mid-way. */
			rc = claim_and_init(s, st, &q);
			if (rc == -EAGAIN)
				continue;
			if (rc < 0)
				return rc;
			*out = s;
			return st == AGILE_SLOT_FREE && beside
			       ? AGILE_SLOT_BESIDE : AGILE_SLOT_CREATED;
		}
		if (strncmp(s->name, name, sizeof(s->name)) != 0)
			continue;
		if (agile__load_u64(&s->config_hash) == hash) {
			*out = s;
			return AGILE_SLOT_ATTACHED;
		}
		/* Same name, another configuration.  A live process using it
		 * keeps it, and this configuration's processes share a slot
		 * of their own beside it, further on the probe path; one that
		 * no live process uses is taken over, once the rest of the
		 * path shows that this configuration has no slot yet. */
		if (other_live_pid(s, (int32_t)getpid(), other_pid))
			beside = true;
		else if (takeover == NULL)
			takeover = s;
	}
	if (takeover != NULL)
		goto take_over;
	/* Every slot is taken and none is this name's: reclaim the one no
	 * live process is attached to that ticked longest ago. */
	{
		struct agile_state_slot *victim = reclaimable(m);

		if (victim == NULL)
			return -ENOSPC;
		rc = claim_and_init(victim, AGILE_SLOT_READY, &q);
		if (rc == -EAGAIN)
			goto again; /* another process took it first */
		if (rc < 0)
			return rc;
		*out = victim;
		return AGILE_SLOT_RECLAIMED;
	}
take_over:
	rc = claim_and_init(takeover, AGILE_SLOT_READY, &q);
	if (rc == -EAGAIN)
		goto again; /* it changed under us: look again */
	if (rc < 0)
		return rc;
	*out = takeover;
	return AGILE_SLOT_RECONFIGURED;
}

struct agile_state_slot *agile__state_stricter(const struct agile_state_map *m,
                                              const struct agile_state_slot *s,
                                              double max_rate)
{
	struct agile_state_slot *best = NULL;
	double best_max = max_rate;

	for (unsigned int i = 0; i < AGILE_STATE_SLOTS; i++) {
		struct agile_state_slot *x = agile_state_slot(m, i);
		int32_t pids[AGILE_STATE_PIDS];
		double max;

		if (x == s || agile__load_u64(&x->state) != AGILE_SLOT_READY ||
		    strncmp(x->name, s->name, sizeof(x->name)) != 0)
			continue;
		/* The stored ceiling, as its processes configured it; the
		 * core takes grants from whatever the bucket holds. */
		max = agile_rate_config(&x->limiter)->max_rate;
		if (!(max > 0 && max < best_max) ||
		    agile__state_slot_live_pids(x, pids, AGILE_STATE_PIDS) == 0)
			continue;
		best = x;
		best_max = max;
	}
	return best;
}

void agile__state_slot_attach_pid(struct agile_state_slot *s, int32_t pid)
{
	int free_index = -1;

	for (int i = 0; i < AGILE_STATE_PIDS; i++) {
		int32_t cur = __atomic_load_n(&s->pids[i], __ATOMIC_ACQUIRE);

		if (cur == pid)
			return;
		if (free_index < 0 &&
		    (cur == 0 || !agile__shmfile_pid_alive(cur)))
			free_index = i;
	}
	for (int i = free_index; i >= 0 && i < AGILE_STATE_PIDS; i++) {
		int32_t cur = __atomic_load_n(&s->pids[i], __ATOMIC_ACQUIRE);

		if ((cur == 0 || !agile__shmfile_pid_alive(cur)) &&
		    __atomic_compare_exchange_n(&s->pids[i], &cur, pid, false,
		                                __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			return;
	}
	/* Full of live processes: this one is not listed, which only makes
	 * agilestat's count a lower bound. */
}

int agile__state_slot_live_pids(const struct agile_state_slot *s,
                               int32_t *pids, int cap)
{
	int n = 0;

	for (int i = 0; i < AGILE_STATE_PIDS; i++) {
		int32_t pid = __atomic_load_n(&s->pids[i], __ATOMIC_ACQUIRE);

		if (agile__shmfile_pid_alive(pid)) {
			if (n < cap)
				pids[n] = pid;
			n++;
		}
	}
	return n;
}

void agile__state_slot_append_tick(struct agile_state_slot *s,
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
