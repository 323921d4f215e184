/*
 * agilerun - run a command with libagilepreload.so loaded and its
 * destinations configured.
 *
 *     agilerun -d 'NAME=DEST key=value...' [-d ...] [-s STATE] [-v] -- CMD ARGS...
 *
 * Each -d is checked with the preload's own parser before anything runs, so
 * a mistake is reported here, once, with exit status 2, instead of in every
 * process the command starts.  Then agilerun sets AGILE_DEST_<NAME>,
 * AGILE_STATE and LD_PRELOAD (the library first, ahead of whatever
 * LD_PRELOAD held) and execs the command, exiting 127 when it cannot be found
 * and 126 when it cannot be run, like env(1).
 *
 * The library is looked for next to this executable in the build tree first
 * (../../preload/.libs/, so `src/tools/agilerun` works straight after
 * `make`), then where $(preloaddir) lies from $(bindir) seen from this
 * executable (so a tree installed or unpacked elsewhere, `dpkg -x` or
 * DESTDIR, runs its own copy), then in the $(preloaddir) it was configured
 * for ($(libdir) unless configure was told otherwise).  All are absolute
 * paths: the current directory is never searched, since a library planted
 * there would be loaded into the command.
 */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stddef.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "pacer.h"
#include "rules.h"

#if !defined(AGILE_PRELOAD_DIR) || !defined(AGILE_BINDIR)
#error "AGILE_PRELOAD_DIR and AGILE_BINDIR must name the installed directories"
#endif

#define LIBRARY_NAME "libagilepreload.so"
/* The seccomp pacer (pacer.h), installed beside the preload and found the
 * same way: a library of its own, so that the preload every target loads
 * does not carry the supervisor. */
#define PACER_LIBRARY_NAME "libagilepacer.so"

/* Exit statuses, as documented in agilerun(1). */
#define EXIT_CONFIG 2        /* bad option or -d, like AGILE_STRICT=1 */
#define EXIT_AGILERUN 125    /* agilerun itself failed (env(1)'s 125) */
#define EXIT_CANNOT_RUN 126  /* the command exists but cannot be run */
#define EXIT_NOT_FOUND 127   /* the command was not found */

static bool verbose;

/* The NAMEs of the -d options read so far, lower-cased as agilestat shows
 * them: two -d of one NAME would set one variable twice, and the second
 * would silently replace the first. */
static char spec_names[AGILE_RULES_MAX][AGILE_RULE_NAME_MAX];
static int spec_count;
/* The -d options with fleet settings, which need AGILE_REDIS. */
static int fleet_specs;

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: agilerun -d 'NAME=DEST key=value...' [-d ...] [-s STATE] "
	        "[-v] -- CMD [ARG...]\n"
	        "  -d, --dest SPEC    throttle calls to DEST, shown as NAME by\n"
	        "                     agilestat (sets AGILE_DEST_<NAME>); up to "
	        "32 times\n"
	        "  -s, --state STATE  the shared state file (sets AGILE_STATE)\n"
	        "  -v, --verbose      print the environment set and the command "
	        "run\n"
	        "  --seccomp          also pace the connections of programs "
	        "LD_PRELOAD\n"
	        "                     cannot reach (statically linked, Go) "
	        "through a\n"
	        "                     seccomp supervisor\n"
	        "  -h, --help         print this help\n"
	        "DEST is IPv4:PORT, [IPv6]:PORT, CIDR:PORT, HOST:PORT or "
	        "unix:/path;\nsee agilepreload(7) for the keys.\n");
}

/* Print one parser message the way every message of agilerun looks. */
static void print_problem(const char *message, void *arg)
{
	(void)arg;
	warnx("%s", message);
}

static void set_variable(const char *name, const char *value)
{
	if (setenv(name, value, 1) != 0)
		err(EXIT_AGILERUN, "cannot set %s", name);
	if (verbose)
		warnx("%s=%s", name, value);
}

/*
 * Unset the exported variables that name `var`'s destination in another
 * case (AGILE_DEST_api for AGILE_DEST_API).  The preload compares NAMEs
 * without case, so such a variable is the same NAME as the -d: left in
 * place it would not be replaced as agilerun(1) promises, and every process
 * would run both rules and warn about the second.
 */
static void unset_other_cases(const char *var)
{
	size_t len = strlen(var);
	char found[sizeof("AGILE_DEST_") + AGILE_RULE_NAME_MAX];

	for (;;) {
		found[0] = '\0';
		for (char **e = environ; *e != NULL; e++) {
			if (strncmp(*e, "AGILE_DEST_", 11) == 0 &&
			    strncasecmp(*e, var, len) == 0 && (*e)[len] == '=' &&
			    strncmp(*e, var, len) != 0) {
				memcpy(found, *e, len);
				found[len] = '\0';
				break;
			}
		}
		if (found[0] == '\0')
			return;
		if (unsetenv(found) != 0)
			err(EXIT_AGILERUN, "cannot unset %s", found);
		if (verbose)
			warnx("unset %s: the -d of the same NAME replaces it",
			      found);
	}
}

/*
 * Check one -d SPEC and set its variable.  Returns the number of problems
 * reported: a NAME that cannot be a variable name, or whatever the rules
 * parser finds in the value.  A rule the preload would disable or run with a
 * default instead of what was written is equally an error here, since
 * nothing has run yet and the user is at the keyboard.
 */
static int apply_spec(const char *spec)
{
	const char *eq = strchr(spec, '=');
	char var[sizeof("AGILE_DEST_") + AGILE_RULE_NAME_MAX];
	char name[AGILE_RULE_NAME_MAX];
	struct agile_rule rule;
	size_t len;
	int problems;

	len = eq != NULL ? (size_t)(eq - spec) : 0;
	if (eq == NULL || len == 0) {
		warnx("-d \"%s\": expected NAME=DEST key=value...", spec);
		return 1;
	}
	if (len >= sizeof(name)) {
		warnx("-d \"%s\": the name is longer than %zu characters", spec,
		      sizeof(name) - 1);
		return 1;
	}
	if (strspn(spec, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	                 "0123456789_") < len) {
		warnx("-d \"%.*s\": the name may hold only letters, digits and "
		      "'_'", (int)len, spec);
		return 1;
	}
	memcpy(name, spec, len);
	name[len] = '\0';
	for (int i = 0; i < spec_count; i++) {
		if (strcasecmp(spec_names[i], name) == 0) {
			warnx("-d \"%s\": the name is given twice (names are "
			      "compared without case); expected each NAME once",
			      name);
			return 1;
		}
	}
	if (spec_count < AGILE_RULES_MAX) {
		for (size_t i = 0; i <= len; i++)
			spec_names[spec_count][i] =
				(char)tolower((unsigned char)name[i]);
		spec_count++;
	}
	agile_rule_var(name, var, sizeof(var));

	problems = agile_rule_parse(var, name, eq + 1, &rule, print_problem,
	                            NULL);
	if (agile_fleet_rule_any(&rule.fleet))
		fleet_specs++;
	if (problems == 0) {
		unset_other_cases(var);
		set_variable(var, eq + 1);
	}
	return problems;
}

/* Fleet settings without a usable AGILE_REDIS are enforced on this host
 * alone, which the preload reports in every process (and AGILE_STRICT=1
 * refuses): say it here, once, before anything runs.  Returns the number
 * of problems reported (0 or 1). */
static int check_redis(void)
{
	const char *url = getenv("AGILE_REDIS");
	struct agile_redis_addr addr;
	char why[256];

	if (fleet_specs == 0)
		return 0;
	if (url == NULL || *url == '\0') {
		warnx("AGILE_REDIS is not set: %d -d destination%s with fleet "
		      "settings would enforce them on this host alone; expected "
		      "AGILE_REDIS=redis://HOST:PORT/DB", fleet_specs,
		      fleet_specs == 1 ? "" : "s");
		return 1;
	}
	if (agile_redis_url_parse(url, &addr, why, sizeof(why)) < 0) {
		warnx("AGILE_REDIS: %s", why);
		return 1;
	}
	return 0;
}

/* The preload reads at most AGILE_RULES_MAX rules and ignores the rest,
 * so more of them, -d and exported variables together, is an error here
 * rather than a destination silently left unthrottled.  Returns the
 * number of problems reported (0 or 1). */
static int count_rules(void)
{
	int count = 0;

	for (char **e = environ; *e != NULL; e++)
		if (strncmp(*e, "AGILE_DEST_", 11) == 0 ||
		    strncmp(*e, "AGILE_LISTEN_", 13) == 0)
			count++;
	if (count <= AGILE_RULES_MAX)
		return 0;
	warnx("%d destinations and listeners (-d and AGILE_DEST_* or "
	      "AGILE_LISTEN_* variables); expected at most %d, the most one "
	      "process reads", count, AGILE_RULES_MAX);
	return 1;
}

/* AGILE_STATE as an absolute path: the command may chdir before it opens
 * the file, and every process must find the same one. */
static void set_state(const char *path)
{
	char cwd[PATH_MAX];
	char *absolute;

	if (path[0] == '\0')
		errx(EXIT_CONFIG, "-s: the state file name is empty");
	if (path[0] == '/') {
		set_variable("AGILE_STATE", path);
		return;
	}
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		err(EXIT_AGILERUN, "-s %s: cannot read the current directory",
		    path);
	if (asprintf(&absolute, "%s/%s", cwd, path) < 0)
		err(EXIT_AGILERUN, "-s %s", path);
	set_variable("AGILE_STATE", absolute);
	free(absolute);
}

/* Whether `path` is a readable file; on success its canonical form (no
 * "..") goes to out, which holds PATH_MAX bytes. */
static bool library_at(const char *path, char *out)
{
	struct stat st;

	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
	    access(path, R_OK) != 0)
		return false;
	return realpath(path, out) != NULL;
}

/*
 * AGILE_PRELOAD_DIR relative to AGILE_BINDIR ("../lib/x86_64-linux-gnu"
 * for /usr/bin and /usr/lib/x86_64-linux-gnu) in out, which holds `len` bytes:
 * one ".." for each component of the bindir below the directories the two
 * share.  Returns false when either is not absolute.
 */
static bool preload_dir_from_bindir(char *out, size_t len)
{
	const char *bin = AGILE_BINDIR, *lib = AGILE_PRELOAD_DIR;
	size_t common = 0;

	if (bin[0] != '/' || lib[0] != '/')
		return false;
	/* The longest shared prefix that ends at a component's end. */
	for (size_t i = 0; bin[i] != '\0' && bin[i] == lib[i]; i++)
		if (bin[i + 1] == '/' || bin[i + 1] == '\0')
			if (lib[i + 1] == '/' || lib[i + 1] == '\0')
				common = i + 1;
	out[0] = '\0';
	for (const char *p = bin + common; *p != '\0'; p++)
		if (*p == '/' && p[1] != '\0' && p[1] != '/')
			strlcat(out, "../", len);
	strlcat(out, lib[common] == '/' ? lib + common + 1 : lib + common,
	        len);
	return true;
}

/*
 * The absolute path of library `name` (the preload's or the pacer's).  From
 * the build tree first: libtool links a program that uses only convenience
 * libraries in place, so this executable is src/tools/agilerun and the
 * library is src/tools/../../preload/.libs/; should it ever run from
 * src/tools/.libs/, one more level is tried.  Then the installed copy.
 */
static void find_library(const char *name, char *out)
{
	static const char *const build_dirs[] = {
		"/../../preload/.libs/",
		"/../../../preload/.libs/",
	};
	char exe[PATH_MAX], relative[PATH_MAX];
	char candidate[PATH_MAX * 3];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL) {
			*slash = '\0';
			for (size_t i = 0; i < 2; i++) {
				snprintf(candidate, sizeof(candidate), "%s%s%s", exe,
				         build_dirs[i], name);
				if (library_at(candidate, out))
					return;
			}
			if (preload_dir_from_bindir(relative, sizeof(relative))) {
				snprintf(candidate, sizeof(candidate),
				         "%s/%s/%s", exe, relative, name);
				if (library_at(candidate, out))
					return;
			}
		}
	}
	snprintf(candidate, sizeof(candidate), "%s/%s", AGILE_PRELOAD_DIR, name);
	if (library_at(candidate, out))
		return;
	errx(EXIT_AGILERUN, "cannot find %s in the build tree next to this "
	     "program or in %s; is agilepreload installed?", name,
	     AGILE_PRELOAD_DIR);
}

/*
 * Whether the space- or colon-separated list already names a copy of the
 * library: a word whose last component is libagilepreload.so, or a
 * versioned libagilepreload.so.N.  Another copy than ours (an installed one
 * exported in the shell, and agilerun run from a build tree) counts too:
 * two copies in one process each pace every request, which halves the rate.
 */
static bool list_has_library(const char *list)
{
	size_t name_len = strlen(LIBRARY_NAME);

	for (const char *p = list; *p != '\0';) {
		size_t word = strcspn(p, " :");
		const char *base = p;

		for (size_t i = 0; i < word; i++)
			if (p[i] == '/')
				base = p + i + 1;
		if ((size_t)(p + word - base) >= name_len &&
		    strncmp(base, LIBRARY_NAME, name_len) == 0 &&
		    (base + name_len == p + word || base[name_len] == '.'))
			return true;
		p += word;
		p += strspn(p, " :");
	}
	return false;
}

/* LD_PRELOAD with the library first, ahead of what the user preloads. */
static void set_preload(const char *library)
{
	const char *old = getenv("LD_PRELOAD");
	char *value;

	if (old == NULL || old[0] == '\0') {
		set_variable("LD_PRELOAD", library);
		return;
	}
	if (list_has_library(old)) {
		if (verbose)
			warnx("LD_PRELOAD already holds %s; using it", LIBRARY_NAME);
		return;
	}
	if (asprintf(&value, "%s:%s", library, old) < 0)
		err(EXIT_AGILERUN, "LD_PRELOAD");
	set_variable("LD_PRELOAD", value);
	free(value);
}

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
static void warn_unthrottled(const char *command, bool paced)
{
	const char *path = command_path(command);
	struct elf_kind kind;
	struct stat st;

	if (path == NULL)
		return;
	kind = elf_kind(path);
	if (paced && (kind.is_static || kind.is_go)) {
		if (verbose)
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

/*
 * --seccomp: a seccomp filter in this process, inherited through the exec
 * by the command and everything it starts, hands each connect(2) to a
 * supervisor, the pacer (libagilepacer.so, preload/pacer/pacer.c), which
 * lets it go on when its grant is due.  The pacer is a grandchild, so the command keeps this
 * process's id and is parent to nothing it did not start; it leaves the
 * terminal's session, so the terminal's signals go to the command alone,
 * and it ends when the last process under the filter does.
 *
 * The handshake over a socket pair: the pacer loads its library and sends
 * its process id (it is ready: the rules read, the state file open); this
 * process installs the filter and sends the listener; the pacer answers one
 * byte once it holds it.  Until the filter is installed, any failure leaves
 * the command to run unpaced, with one line on stderr (under
 * AGILE_STRICT=1, not to run).  After, there is no going back: a connect
 * with no supervisor fails with ENOSYS, so agilerun exits rather than run
 * the command that way.
 */

/* --seccomp cannot pace the command, for reason `why`: say so and run it
 * unpaced (false); under AGILE_STRICT=1, which never lets a command run
 * unthrottled for a problem it can report, exit 2 instead, as the preload
 * stops a program whose state file cannot be used. */
static bool unpaced(const char *why)
{
	const char *strict = getenv("AGILE_STRICT");

	if (strict != NULL && strcmp(strict, "1") == 0)
		errx(EXIT_CONFIG, "--seccomp: %s; AGILE_STRICT=1: not running "
		     "the command", why);
	warnx("--seccomp: %s; running unpaced", why);
	return false;
}

#if defined(__x86_64__)
#define PACER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PACER_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef PACER_ARCH
/* The offset of the low (0) or high (1) 32 bits of connect's fourth
 * argument in struct seccomp_data. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MARK_WORD(high) \
	(offsetof(struct seccomp_data, args) + 3 * sizeof(uint64_t) + \
	 (high) * sizeof(uint32_t))
#else
#define MARK_WORD(high) \
	(offsetof(struct seccomp_data, args) + 3 * sizeof(uint64_t) + \
	 (1 - (high)) * sizeof(uint32_t))
#endif

/* The pacer's side of the handshake over socket `*arg`, called by the
 * library once it is ready: send our process id, take the listener,
 * acknowledge it.  The listener, or -1 when agilerun went on without us. */
static int pacer_handshake(void *arg)
{
	char byte = 1, control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	                      .msg_control = control,
	                      .msg_controllen = sizeof(control) };
	struct cmsghdr *cmsg;
	int sock = *(int *)arg, listener = -1;
	pid_t self = getpid();

	if (write(sock, &self, sizeof(self)) != (ssize_t)sizeof(self))
		return -1;
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) == 1 &&
	    (cmsg = CMSG_FIRSTHDR(&msg)) != NULL &&
	    cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS)
		memcpy(&listener, CMSG_DATA(cmsg), sizeof(listener));
	if (listener >= 0 && write(sock, &byte, 1) != 1) {
		close(listener);
		listener = -1;
	}
	close(sock);
	return listener;
}

/* The pacer, in the grandchild, for the command that will run as process
 * `command`: never returns. */
static void __attribute__((noreturn)) pacer_main(int sock, const char *library,
                                                 pid_t command)
{
	int (*run)(int (*)(void *), void *, int);
	int null, watch;
	void *handle;

	/* Out of the terminal's session and process group: ^C, ^Z and a
	 * hang-up are the command's.  Nothing of agilerun's caller stays
	 * open in here but stderr, for the pacer's warnings, and that only
	 * while the command's first process runs (the library watches it
	 * through `watch`): a caller that reads the command's output until
	 * its end must not wait for us, nor for what the command left
	 * running, a daemon say, which the pacer goes on pacing. */
	setsid();
	prctl(PR_SET_NAME, (unsigned long)"agilerun-pacer", 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	if (sock != 3) {
		if (dup2(sock, 3) < 0)
			_exit(EXIT_AGILERUN);
		sock = 3;
	}
	close_range(4, ~0U, 0);
#ifdef SYS_pidfd_open
	watch = (int)syscall(SYS_pidfd_open, command, 0);
#else
	(void)command;
	watch = -1;
#endif
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
	handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	*(void **)&run = handle != NULL ? dlsym(handle, AGILE_PACER_SYMBOL)
	                                : NULL;
	if (run == NULL) {
		warnx("--seccomp: %s", dlerror());
		_exit(EXIT_AGILERUN);
	}
	/* The library reads the rules and opens the state file before it
	 * calls pacer_handshake: under AGILE_STRICT=1 a problem with either
	 * stops it there, before the filter is installed. */
	if (run(pacer_handshake, &sock, watch) < 0) {
		warn("--seccomp: the pacer stopped");
		_exit(EXIT_AGILERUN);
	}
	_exit(0);
}

/* Install the filter in this process; its listener, or -1 (errno set). */
static int install_filter(void)
{
	/* connect(2) of this architecture goes to the pacer unless its
	 * fourth argument carries the preload's mark (pacer.h); everything
	 * else is allowed. */
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		         offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACER_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		         offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_connect, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, MARK_WORD(0)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		         (uint32_t)AGILE_PACER_MARK, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, MARK_WORD(1)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		         (uint32_t)(AGILE_PACER_MARK >> 32), 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
		.filter = filter,
	};
	/* Killable: once the pacer holds a connect, only a fatal signal
	 * ends its wait (Linux 5.19).  Otherwise every signal the program
	 * takes meanwhile (Go's preemption signals among them) would end
	 * it, and the restarted call would take a second grant. */
	unsigned long flags = SECCOMP_FILTER_FLAG_NEW_LISTENER |
	                      SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
	bool nnp = false;

	for (;;) {
		int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		                      flags, &prog);

		if (fd >= 0)
			return fd;
		if (errno == EINVAL &&
		    (flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)) {
			flags &= ~(unsigned long)SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
			continue;
		}
		/* Without CAP_SYS_ADMIN a filter needs no_new_privs, which
		 * the command then keeps: a set-user-ID program it runs
		 * runs without its privileges (agilerun(1)). */
		if (errno == EACCES && !nnp) {
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
				return -1;
			nnp = true;
			if (verbose)
				warnx("--seccomp: no_new_privs set");
			continue;
		}
		return -1;
	}
}

/* Start the pacer and install the filter: true when the command's
 * connects will be paced. */
static bool start_pacer(const char *library)
{
	char byte, control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	                      .msg_control = control,
	                      .msg_controllen = sizeof(control) };
	struct cmsghdr *cmsg;
	pid_t self = getpid(), middle, pacer;
	int sv[2], listener, status, error;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return unpaced(strerror(errno));
	middle = fork();
	if (middle < 0) {
		error = errno;
		close(sv[0]);
		close(sv[1]);
		return unpaced(strerror(error));
	}
	if (middle == 0) {
		close(sv[0]);
		if (fork() == 0)
			pacer_main(sv[1], library, self);
		_exit(0);
	}
	close(sv[1]);
	while (waitpid(middle, &status, 0) < 0 && errno == EINTR)
		continue;
	if (read(sv[0], &pacer, sizeof(pacer)) != (ssize_t)sizeof(pacer)) {
		close(sv[0]);
		return unpaced("the pacer did not start");
	}
	/* Under Yama's ptrace_scope 1 only an ancestor may read a process's
	 * memory; the pacer is none, so the command names it (kept across
	 * the exec).  Without Yama this fails, harmlessly. */
	prctl(PR_SET_PTRACER, (unsigned long)pacer, 0, 0, 0);
	listener = install_filter();
	if (listener < 0 && errno == EBUSY) {
		/* A process has one seccomp supervisor at most (the kernel
		 * refuses a second filter with a listener), and AGILE_SECCOMP
		 * says whose this one is: an outer agilerun --seccomp's pacer,
		 * which goes on pacing the command, by its own rules. */
		const char *outer = getenv("AGILE_SECCOMP");

		close(sv[0]);
		if (outer != NULL && strcmp(outer, "1") == 0) {
			warnx("--seccomp: already under an outer agilerun "
			      "--seccomp, whose pacer paces what the preload "
			      "cannot reach by its destinations; those given "
			      "here reach preloaded programs only");
			return true;
		}
		return unpaced("cannot install the filter: another seccomp "
		               "supervisor already watches this process");
	}
	if (listener < 0) {
		char why[128];

		snprintf(why, sizeof(why), "cannot install the filter (%s)",
		         strerror(errno));
		close(sv[0]); /* the pacer reads the end and exits */
		return unpaced(why);
	}
	memset(control, 0, sizeof(control));
	byte = 1;
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &listener, sizeof(listener));
	if (sendmsg(sv[0], &msg, 0) != 1 || read(sv[0], &byte, 1) != 1)
		errx(EXIT_AGILERUN, "--seccomp: the pacer did not take the "
		     "filter's listener; not running the command, whose "
		     "connects would fail");
	close(listener);
	close(sv[0]);
	/* The preload in the command's processes marks its own connects
	 * for the filter (pacer.h). */
	set_variable("AGILE_SECCOMP", "1");
	return true;
}
#else
static bool start_pacer(const char *library)
{
	(void)library;
	return unpaced("not supported on this architecture");
}
#endif

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "dest", required_argument, NULL, 'd' },
		{ "state", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "seccomp", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char library[PATH_MAX], pacer_library[PATH_MAX];
	const char *state = NULL;
	int problems = 0;
	int specs = 0;
	bool seccomp = false, paced = false;
	int opt;

	/* Parse every option first so -v applies to all of them, and so
	 * every bad -d is reported before exiting. */
	while ((opt = getopt_long(argc, argv, "+d:s:vh", options, NULL)) != -1) {
		switch (opt) {
		case 'd':
		case 's':
			break;
		case 'v':
			verbose = true;
			break;
		case 'S':
			seccomp = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return EXIT_CONFIG;
		}
	}
	if (optind >= argc) {
		warnx("no command given");
		usage(stderr);
		return EXIT_CONFIG;
	}

	optind = 0;
	while ((opt = getopt_long(argc, argv, "+d:s:vh", options, NULL)) != -1) {
		if (opt == 'd') {
			problems += apply_spec(optarg);
			specs++;
		} else if (opt == 's') {
			/* One state file per run: a second -s would
			 * silently replace the first. */
			if (state != NULL) {
				warnx("-s \"%s\": -s is given twice; expected "
				      "one state file", optarg);
				problems++;
			}
			state = optarg;
		}
	}
	problems += check_redis();
	if (problems == 0)
		problems = count_rules();
	if (problems > 0)
		errx(EXIT_CONFIG, "%d configuration error%s; nothing was run",
		     problems, problems == 1 ? "" : "s");
	if (state != NULL)
		set_state(state);
	if (specs == 0) {
		bool any = false;
		for (char **e = environ; *e != NULL && !any; e++)
			any = strncmp(*e, "AGILE_DEST_", 11) == 0;
		if (!any)
			warnx("no -d and no AGILE_DEST_* variable: nothing will be "
			      "throttled");
	}

	find_library(LIBRARY_NAME, library);
	set_preload(library);
	if (seccomp) {
		find_library(PACER_LIBRARY_NAME, pacer_library);
		paced = start_pacer(pacer_library);
	}
	warn_unthrottled(argv[optind], paced);
	if (verbose)
		warnx("exec %s", argv[optind]);

	execvp(argv[optind], argv + optind);
	opt = errno;
	warn("%s", argv[optind]);
	return opt == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}
