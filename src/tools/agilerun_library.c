/*
 * agilerun_library.c - where agilerun finds libagilepreload.so (and
 * --seccomp's libagilepacer.so): the build tree next to this executable,
 * then where $(preloaddir) lies from $(bindir), then $(preloaddir) itself,
 * never the current directory (agilerun.c's opening comment); and
 * LD_PRELOAD with the library first.
 */
#include "config.h"

#include <err.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agilerun.h"

#if !defined(AGILE_PRELOAD_DIR) || !defined(AGILE_BINDIR)
#error "AGILE_PRELOAD_DIR and AGILE_BINDIR must name the installed directories"
#endif

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
void agilerun_find_library(const char *name, char *out)
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
void agilerun_set_preload(const char *library)
{
	const char *old = getenv("LD_PRELOAD");
	char *value;

	if (old == NULL || old[0] == '\0') {
		agilerun_set_variable("LD_PRELOAD", library);
		return;
	}
	if (list_has_library(old)) {
		if (agilerun_verbose)
			warnx("LD_PRELOAD already holds %s; using it", LIBRARY_NAME);
		return;
	}
	if (asprintf(&value, "%s:%s", library, old) < 0)
		err(EXIT_AGILERUN, "LD_PRELOAD");
	agilerun_set_variable("LD_PRELOAD", value);
	free(value);
}
