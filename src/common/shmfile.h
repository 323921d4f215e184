/*
 * shmfile.h - a checked shared-memory file: the creation, mapping and
 * replacement discipline the state file (state.h) and the fleet companion
 * file (fleet_state.h) share, and the small helpers both need.
 *
 * A file type is described by its exact size and two callbacks: one that
 * judges a mapping (layout, boot, every record), one that writes a fresh,
 * empty one.  The read-write open creates the file when absent, maps it, and
 * replaces it when the judge rejects it; no process ever sees a half-written
 * file (see shmfile.c for how).  Nothing here prints: callers decide what to
 * say about a failure, and the replaced file's reason is handed back to them.
 */
#ifndef AGILE_PRELOAD_SHMFILE_H
#define AGILE_PRELOAD_SHMFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Room for /proc/sys/kernel/random/boot_id (36 characters) and its NUL;
 * the width of the boot_id field of both file headers. */
#define AGILE_SHMFILE_BOOT_ID_MAX 40

struct agile_shmfile_type {
	/* The exact size of a valid file, created with this size. */
	size_t size;
	/* A file shorter than this is reported as "truncated: N bytes", any
	 * other wrong size as "size N bytes, expected M"; 0: always the
	 * latter. */
	size_t header_size;
	/* Whether the read-only open maps a file of any size from
	 * header_size up and leaves the verdict to validate (which can then
	 * name what differs in another build's file), rather than rejecting
	 * every size but `size` by its size alone. */
	bool ro_any_size;
	/* 0 when the `size` bytes at `map` are a usable file for this build
	 * and boot, else -EINVAL with a one-phrase reason in `why`. */
	int (*validate)(const void *map, size_t size, char *why,
	                size_t why_len);
	/* Fill a fresh file: `size` zero bytes, mapped read-write, that no
	 * other process can see yet.  It marks the file ready last. */
	void (*format)(void *map);
};

/*
 * Map the file at `path` read-write, `type->size` bytes at *map: create it
 * when absent, and replace it when it is the wrong size or validate rejects
 * it, up to four attempts when other processes race to do the same.  The
 * file must be a regular file owned by the real user (-EPERM otherwise); a
 * symbolic link is refused (O_NOFOLLOW); files are created 0600, and only
 * by a process whose effective uid is its real one (-EPERM otherwise).
 * On success *replaced_why is set to the reason a file was replaced, ""
 * when none was; on -EPERM, to why the file was refused.  Returns 0 or
 * -errno; the descriptor is closed either way.
 */
int agile__shmfile_open_rw(const struct agile_shmfile_type *type,
                          const char *path, void **map, char *replaced_why,
                          size_t why_len);

/*
 * A private, read-only copy of an existing file (agilestat), to unmap with
 * munmap(*map, *size): the first type->size bytes when type->ro_any_size
 * (and the file is at least type->header_size long), else exactly
 * type->size bytes.  The file is read with pread(), never mapped: a file
 * mapped shared and truncated under its reader (any process of the user's
 * can) kills the reader with SIGBUS at its next load; a short read is a
 * rejection instead.  The copy is judged by validate.  Each value in it is
 * as the kernel's copy found it, not an atomic load: a value being written
 * at that instant may in principle be torn, which the checks of a slot
 * (agile_rate_validate) show as damage.  Returns 0 with *map and *size,
 * -ENOENT when absent, -EPERM with `why` when it is not a regular file of
 * the real user's, -EINVAL with `why` when rejected, or another -errno.
 */
int agile__shmfile_open_ro(const struct agile_shmfile_type *type,
                          const char *path, void **map, size_t *size,
                          char *why, size_t why_len);

/* The reading and judging of agile__shmfile_open_ro, of the file open at
 * `fd` whose fstat() gave `file_size`: tests/fuzz/ passes a size larger
 * than the file holds, as if it were truncated after the fstat. */
int agile__shmfile_read_fd(const struct agile_shmfile_type *type, int fd,
                          off_t file_size, void **copy, size_t *size,
                          char *why, size_t why_len);

/* The current boot's id, NUL-padded; an empty string when unreadable (a
 * file written then still matches, which is the best we can do). */
void agile__shmfile_boot_id(char out[AGILE_SHMFILE_BOOT_ID_MAX]);

/* Whether process `pid` exists (a process of another user counts). */
bool agile__shmfile_pid_alive(int32_t pid);

/* FNV-1a of a NUL-terminated name: a record's home index in a file's
 * open-addressed table. */
uint64_t agile__shmfile_name_hash(const char *name);

#endif /* AGILE_PRELOAD_SHMFILE_H */
