/*
 * agilerun_elf.c - the programs LD_PRELOAD cannot reach, told from the
 * command's ELF headers before it runs: a statically linked program (no
 * program interpreter), a Go program (its build ID note: system calls of
 * its own), and a set-user-ID or set-group-ID one; one warning for each,
 * unless --seccomp paces it anyway.
 */
#include "config.h"

#include <elf.h>
#include <err.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agilerun.h"

/* The file execvp(3) would run for `command`, or NULL when there is none
 * (execvp will then say why).  Returned in a static buffer. */
static const char *command_path(const char *command)
{
	static char path[PATH_MAX];
	const char *search = getenv("PATH");

	if (strchr(command, '/') != NULL)
		return command;
	if (search == NULL)
		search = "/bin:/usr/bin";
	for (const char *p = search;; p++) {
		size_t len = strcspn(p, ":");
		int n;
		struct stat st;

		/* An empty PATH element means the current directory. */
		n = len == 0 ? snprintf(path, sizeof(path), "./%s", command)
		             : snprintf(path, sizeof(path), "%.*s/%s", (int)len, p,
		                        command);
		if (n > 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0 &&
		    S_ISREG(st.st_mode) && access(path, X_OK) == 0)
			return path;
		p += len;
		if (*p == '\0')
			return NULL;
	}
}

/* What the command's ELF headers say about how it reaches the network. */
struct elf_kind {
	bool is_static; /* no PT_INTERP: no dynamic loader, no LD_PRELOAD */
	bool is_go;     /* a Go build ID note: system calls of its own */
};

/* Whether the notes in [off, off + size) of `fd` hold Go's build ID (owner
 * "Go", type 4, NT_GO_BUILDID), which its linker writes into every Go
 * executable for Linux. */
static bool has_go_note(int fd, uint64_t off, uint64_t size)
{
	unsigned char notes[4096];
	size_t at = 0, len;

	if (size > sizeof(notes))
		size = sizeof(notes);
	if (pread(fd, notes, (size_t)size, (off_t)off) != (ssize_t)size)
		return false;
	len = (size_t)size;
	/* Each note: namesz, descsz, type, then the name and the
	 * description, each padded to 4 bytes. */
	while (len - at >= 12) {
		uint32_t namesz, descsz, type;

		memcpy(&namesz, notes + at, 4);
		memcpy(&descsz, notes + at + 4, 4);
		memcpy(&type, notes + at + 8, 4);
		at += 12;
		if (namesz > len - at)
			return false;
		/* Go's linker writes the name "Go\0\0", namesz 4. */
		if ((namesz == 3 || namesz == 4) && type == 4 &&
		    memcmp(notes + at, "Go", 3) == 0)
			return true;
		at += (namesz + 3u) & ~3u;
		if (at > len || descsz > len - at)
			return false;
		at += (descsz + 3u) & ~3u;
		if (at > len)
			return false;
	}
	return false;
}

/* Walk `count` program headers of `size` bytes each: PT_INTERP and Go's
 * note.  Only native-endian headers are understood; a header that cannot
 * be read counts as PT_INTERP, so a doubt never produces a false warning. */
static void scan_headers(int fd, bool wide, uint64_t phoff, unsigned count,
                         unsigned size, struct elf_kind *kind)
{
	bool interp = false;

	for (unsigned i = 0; i < count; i++) {
		union {
			Elf64_Phdr w;
			Elf32_Phdr n;
		} ph;
		uint64_t off, filesz;
		uint32_t type;

		if (size != (wide ? sizeof(ph.w) : sizeof(ph.n)) ||
		    pread(fd, &ph, size, (off_t)(phoff + (uint64_t)i * size)) !=
		    (ssize_t)size) {
			interp = true;
			break;
		}
		type = wide ? ph.w.p_type : ph.n.p_type;
		off = wide ? ph.w.p_offset : ph.n.p_offset;
		filesz = wide ? ph.w.p_filesz : ph.n.p_filesz;
		if (type == PT_INTERP)
			interp = true;
		else if (type == PT_NOTE && !kind->is_go)
			kind->is_go = has_go_note(fd, off, filesz);
	}
	kind->is_static = !interp;
}

/*
 * A statically linked program has no PT_INTERP: no dynamic loader runs, so
 * LD_PRELOAD is never read and the command would run unthrottled.  A Go
 * program, static or not, makes its socket calls without libc.  Scripts
 * (#!) and anything else that is not a native ELF file are neither.
 */
static struct elf_kind elf_kind(const char *path)
{
	struct elf_kind kind = { false, false };
	unsigned char ident[EI_NIDENT];
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kind;
	if (pread(fd, ident, sizeof(ident), 0) != (ssize_t)sizeof(ident) ||
	    memcmp(ident, ELFMAG, SELFMAG) != 0) {
		close(fd);
		return kind;
	}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (ident[EI_DATA] != ELFDATA2LSB) {
#else
	if (ident[EI_DATA] != ELFDATA2MSB) {
#endif
		close(fd);
		return kind;
	}
	if (ident[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr eh;
		if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh))
			scan_headers(fd, true, eh.e_phoff, eh.e_phnum,
			             eh.e_phentsize, &kind);
	} else if (ident[EI_CLASS] == ELFCLASS32) {
		Elf32_Ehdr eh;
		if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh))
			scan_headers(fd, false, eh.e_phoff, eh.e_phnum,
			             eh.e_phentsize, &kind);
	}
	close(fd);
	return kind;
}

/* One line for each reason the command will escape the preload, unless
 * --seccomp (`paced`) reaches it anyway. */
void agilerun_warn_unthrottled(const char *command, bool paced)
{
	const char *path = command_path(command);
	struct elf_kind kind;
	struct stat st;

	if (path == NULL)
		return;
	kind = elf_kind(path);
	if (paced && (kind.is_static || kind.is_go)) {
		if (agilerun_verbose)
			warnx("%s: its connections are paced through seccomp; "
			      "its requests are not measured", path);
	} else if (kind.is_go) {
		warnx("%s is a Go program, which makes its network calls "
		      "without libc; LD_PRELOAD cannot reach them, so it will "
		      "run unthrottled (--seccomp paces its connections)", path);
	} else if (kind.is_static) {
		warnx("%s is statically linked; LD_PRELOAD cannot reach it, so it "
		      "will run unthrottled (--seccomp paces its connections)",
		      path);
	}
	if (stat(path, &st) == 0 &&
	    (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
	     ((st.st_mode & S_ISGID) && st.st_gid != getegid())))
		warnx("%s is set-user-ID or set-group-ID; the dynamic loader "
		      "ignores LD_PRELOAD for it, so it will run unthrottled",
		      path);
}
