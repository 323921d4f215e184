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
 *
 * This file reads the options and runs the steps in their order; each step
 * is a file of its own (agilerun.h lists them).
 */
#include "config.h"

#include <errno.h>
#include <err.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agilerun.h"

bool agilerun_verbose;

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
			agilerun_verbose = true;
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
			problems += agilerun_apply_spec(optarg);
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
	problems += agilerun_check_redis();
	if (problems == 0)
		problems = agilerun_count_rules();
	if (problems > 0)
		errx(EXIT_CONFIG, "%d configuration error%s; nothing was run",
		     problems, problems == 1 ? "" : "s");
	if (state != NULL)
		agilerun_set_state(state);
	if (specs == 0) {
		bool any = false;
		for (char **e = environ; *e != NULL && !any; e++)
			any = strncmp(*e, "AGILE_DEST_", 11) == 0;
		if (!any)
			warnx("no -d and no AGILE_DEST_* variable: nothing will be "
			      "throttled");
	}

	agilerun_find_library(LIBRARY_NAME, library);
	agilerun_set_preload(library);
	if (seccomp) {
		agilerun_find_library(PACER_LIBRARY_NAME, pacer_library);
		paced = agilerun_start_pacer(pacer_library);
	}
	agilerun_warn_unthrottled(argv[optind], paced);
	if (agilerun_verbose)
		warnx("exec %s", argv[optind]);

	execvp(argv[optind], argv + optind);
	opt = errno;
	warn("%s", argv[optind]);
	return opt == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}
