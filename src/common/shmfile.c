/*
 * shmfile.c - open, create and replace a checked shared-memory file
 * (contract in shmfile.h), for the state file and the fleet companion file.
 *
 * Nothing here prints or reads the preload's globals: the preload,
 * agilestat and the tests all link this file.  Every call the preload makes
 * from here runs with its re-entrancy guard set, so the libc calls below go
 * straight to libc.
 *
 * Creation never exposes a half-written file and never leaves one behind:
 * a fresh file is made without a name (O_TMPFILE), filled, and then linked
 * into place when no file exists (so two processes racing to create agree
 * on one winner: the loser's link fails with EEXIST and it maps the
 * winner's), or in place of a rejected file (checked to be the very inode
 * that was rejected, so a file another process has just replaced is not
 * replaced again); see install_fresh.
 */
#include "config.h"

#include <dirent.h>
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

#include "shmfile.h"

void agile__shmfile_boot_id(char out[AGILE_SHMFILE_BOOT_ID_MAX])
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = 0;

	memset(out, 0, AGILE_SHMFILE_BOOT_ID_MAX);
	if (fd < 0)
		return;
	n = read(fd, out, AGILE_SHMFILE_BOOT_ID_MAX - 1);
	close(fd);
	if (n <= 0) {
		memset(out, 0, AGILE_SHMFILE_BOOT_ID_MAX);
		return;
	}
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
		out[--n] = '\0';
}

bool agile__shmfile_pid_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

uint64_t agile__shmfile_name_hash(const char *name)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (const char *c = name; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * UINT64_C(1099511628211);
	return h;
}

/* Why a file of `file_size` bytes is not one of `type`. */
static void describe_size(const struct agile_shmfile_type *type,
                          off_t file_size, char *why, size_t why_len)
{
	if (file_size < (off_t)type->header_size)
		snprintf(why, why_len, "truncated: %lld bytes",
		         (long long)file_size);
	else
		snprintf(why, why_len, "size %lld bytes, expected %zu",
		         (long long)file_size, type->size);
}

/* Fill the empty file open at `fd` as a fresh, valid one. */
static int write_fresh(const struct agile_shmfile_type *type, int fd)
{
	void *map;
	int rc;

	/* Reserve the blocks now: on a full tmpfs a later store into the
	 * mapping would be a SIGBUS in the host program, not an error. */
	rc = posix_fallocate(fd, 0, (off_t)type->size);
	if (rc != 0)
		return -rc;
	map = mmap(NULL, type->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	           0);
	if (map == MAP_FAILED)
		return -errno;
	/* The blocks are zero from posix_fallocate. */
	type->format(map);
	munmap(map, type->size);
	return 0;
}

/* `path`'s directory into `dir` ("." for a bare name). */
static int dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash == NULL ? 1 : slash == path ? 1 : (size_t)(slash - path);

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dir, slash == NULL ? "." : path, n);
	dir[n] = '\0';
	return 0;
}

/* Remove the temporary files of `path` that processes killed while they
 * created it left behind: "<path>.<pid>.<time>.tmp" whose pid is gone.
 * Only the named fallback of install_fresh makes them. */
static void clean_stale(const char *path)
{
	const char *base = strrchr(path, '/');
	char dir[4096];
	struct dirent *e;
	size_t base_len;
	DIR *d;

	base = base == NULL ? path : base + 1;
	base_len = strlen(base);
	if (dir_of(path, dir, sizeof(dir)) < 0 || (d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char *end;
		long pid;

		if (len < base_len + 5 || strncmp(e->d_name, base, base_len) != 0 ||
		    e->d_name[base_len] != '.' ||
		    strcmp(e->d_name + len - 4, ".tmp") != 0)
			continue;
		pid = strtol(e->d_name + base_len + 1, &end, 10);
		if (*end == '.' && pid > 0 && pid <= INT32_MAX &&
		    !agile__shmfile_pid_alive((int32_t)pid))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

/* The named way, where O_TMPFILE or /proc is missing: written under a
 * temporary name, then linked or renamed into place.  A process killed
 * meanwhile leaves the temporary file, which the next creator removes. */
static int install_named(const struct agile_shmfile_type *type,
                         const char *path, ino_t rejected_ino)
{
	char tmp[4096];
	struct timespec now;
	struct stat st;
	int fd, rc;

	clean_stale(path);
	/* pid and time make the name unique among concurrent creators. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (snprintf(tmp, sizeof(tmp), "%s.%ld.%ld%09ld.tmp", path,
	             (long)getpid(), (long)now.tv_sec, now.tv_nsec) >=
	    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	          0600);
	if (fd < 0)
		return -errno;
	rc = write_fresh(type, fd);
	close(fd);
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

/*
 * Put a fresh file at `path`.  With rejected_ino == 0 the path must not
 * exist; otherwise it must still be that inode, which is replaced.
 * Returns 0, or -errno; -EEXIST/-ESTALE mean "someone else got there first,
 * just open the path again".
 *
 * The file is made without a name (O_TMPFILE in the path's directory),
 * filled, and only then linked to `path` through /proc/self/fd (linkat
 * with AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH): a process killed at any
 * point leaves nothing behind.  A rejected file is unlinked first, then the
 * link is made; a process that finds no file in between creates one too,
 * and whichever link comes second fails with EEXIST, so all agree on one.
 * Where the kernel or the file system has no O_TMPFILE, or /proc is not
 * mounted, install_named does it with a temporary name.
 */
static int install_fresh(const struct agile_shmfile_type *type,
                         const char *path, ino_t rejected_ino)
{
	char dir[4096], proc[64];
	struct stat st;
	int fd, rc;

	if ((rc = dir_of(path, dir, sizeof(dir))) < 0)
		return rc;
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)
			return install_named(type, path, rejected_ino);
		return -errno;
	}
	rc = write_fresh(type, fd);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (rejected_ino != 0) {
		if (lstat(path, &st) != 0 || st.st_ino != rejected_ino) {
			close(fd);
			return -ESTALE;
		}
		if (unlink(path) != 0 && errno != ENOENT) {
			rc = -errno;
			close(fd);
			return rc;
		}
	}
	rc = linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0
	     ? 0 : -errno;
	close(fd);
	/* Another process put its fresh file there since the unlink. */
	if (rc == -EEXIST && rejected_ino != 0)
		rc = -ESTALE;
	/* No /proc: the named way (the rejected file is gone already). */
	if (rc == -ENOENT && access("/proc/self/fd", F_OK) != 0)
		return install_named(type, path, 0);
	return rc;
}

/*
 * Whether `st` is a file this process may trust: a regular file owned by
 * the real user.  The real uid, not the effective one, as for the default
 * path (state.c): a root process that has seteuid()'d to another user
 * still trusts only root's file.  Otherwise false, with why in `why`.
 */
static bool owned_file(const struct stat *st, char *why, size_t why_len)
{
	if (!S_ISREG(st->st_mode)) {
		snprintf(why, why_len, "not a regular file");
		return false;
	}
	if (st->st_uid != getuid()) {
		snprintf(why, why_len, "owned by uid %u, not by uid %u: another "
		         "user may have written anything in it",
		         (unsigned int)st->st_uid, (unsigned int)getuid());
		return false;
	}
	return true;
}

/* Whether this process may create a file: one made while the effective
 * uid differs from the real one would be owned by the wrong user, refused
 * by every later process of the real one. */
static bool may_create(char *why, size_t why_len)
{
	if (geteuid() == getuid())
		return true;
	snprintf(why, why_len, "the effective uid %u is not the real uid %u, "
	         "so a file made now would be owned by the wrong user",
	         (unsigned int)geteuid(), (unsigned int)getuid());
	return false;
}

int agile__shmfile_open_rw(const struct agile_shmfile_type *type,
                          const char *path, void **map, char *replaced_why,
                          size_t why_len)
{
	char why[160];
	int rc = -EAGAIN;

	replaced_why[0] = '\0';
	/* A lone process needs two attempts (create or replace, then map);
	 * the other two absorb races with processes doing the same. */
	for (int attempt = 0; attempt < 4; attempt++) {
		struct stat st;
		void *p;
		int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

		if (fd < 0) {
			if (errno != ENOENT)
				return -errno;
			if (!may_create(replaced_why, why_len))
				return -EPERM;
			rc = install_fresh(type, path, 0);
			if (rc < 0 && rc != -EEXIST)
				return rc;
			continue;
		}
		if (fstat(fd, &st) != 0) {
			rc = -errno;
			close(fd);
			return rc;
		}
		if (!owned_file(&st, replaced_why, why_len)) {
			close(fd);
			return -EPERM;
		}
		if ((size_t)st.st_size == type->size) {
			p = mmap(NULL, type->size, PROT_READ | PROT_WRITE,
			         MAP_SHARED, fd, 0);
			rc = p == MAP_FAILED ? -errno : 0;
			close(fd);
			if (rc < 0)
				return rc;
			if (type->validate(p, type->size, why,
			                   sizeof(why)) == 0) {
				*map = p;
				return 0;
			}
			munmap(p, type->size);
		} else {
			close(fd);
			describe_size(type, st.st_size, why, sizeof(why));
		}
		if (!may_create(replaced_why, why_len))
			return -EPERM;
		snprintf(replaced_why, why_len, "%s", why);
		rc = install_fresh(type, path, st.st_ino);
		if (rc < 0 && rc != -ESTALE)
			return rc;
	}
	return rc;
}

int agile__shmfile_read_fd(const struct agile_shmfile_type *type, int fd,
                          off_t file_size, void **copy, size_t *size,
                          char *why, size_t why_len)
{
	size_t want, got = 0;
	void *p;
	int rc;

	why[0] = '\0';
	if (type->ro_any_size ? file_size < (off_t)type->header_size
	                      : file_size != (off_t)type->size) {
		describe_size(type, file_size, why, why_len);
		return -EINVAL;
	}
	/* A longer file of another build is judged by its first `size`
	 * bytes, which hold all the judge reads. */
	want = (size_t)file_size < type->size ? (size_t)file_size : type->size;
	p = mmap(NULL, want, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	while (got < want) {
		ssize_t n = pread(fd, (char *)p + got, want - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EINVAL;
			if (n == 0)
				snprintf(why, why_len, "truncated while being "
				         "read: %zu of %lld bytes", got,
				         (long long)file_size);
			munmap(p, want);
			return rc;
		}
		got += (size_t)n;
	}
	mprotect(p, want, PROT_READ);
	rc = type->validate(p, want, why, why_len);
	if (rc < 0) {
		munmap(p, want);
		return rc;
	}
	*copy = p;
	*size = want;
	return 0;
}

int agile__shmfile_open_ro(const struct agile_shmfile_type *type,
                          const char *path, void **map, size_t *size,
                          char *why, size_t why_len)
{
	struct stat st;
	/* O_NONBLOCK: a FIFO named by mistake must not hang the reader in
	 * open() until something writes to it; a regular file ignores it. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	int rc;

	why[0] = '\0';
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	/* A directory or a device is no state file, whatever its size says:
	 * mapping it would fail with ENODEV ("No such device"), which names
	 * neither the path's mistake nor what was expected. */
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(why, why_len, "not a regular file (a %s); expected a "
		         "state file", S_ISDIR(st.st_mode) ? "directory"
		         : S_ISFIFO(st.st_mode) ? "FIFO"
		         : S_ISSOCK(st.st_mode) ? "socket" : "device");
		return -EINVAL;
	}
	/* Another user's file could say anything: agilestat shows only the
	 * real user's own, as the preload uses only those. */
	if (!owned_file(&st, why, why_len)) {
		close(fd);
		return -EPERM;
	}
	rc = agile__shmfile_read_fd(type, fd, st.st_size, map, size, why,
	                           why_len);
	close(fd);
	return rc;
}
