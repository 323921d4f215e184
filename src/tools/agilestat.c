/*
 * agilestat - show what libagilepreload.so is doing: one record per
 * configured destination, read from the shared state file.
 *
 *   agilestat [-s PATH] [--json | --prometheus | --history | --config]
 *   agilestat [-s PATH] --watch SECONDS
 *   agilestat [-s PATH] --serve ADDRESS    (agilestat_serve.c)
 *
 * The file is read into a private copy with pread and never modified, so
 * agilestat can run at any moment next to the programs that write it, and a
 * file truncated under it (any process of the user's can) is a rejection,
 * not a SIGBUS; values of one destination may come from two neighbouring
 * instants.  Every string in the file is untrusted and printed escaped
 * (agilestat_json.h).
 */
#include "config.h"

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agile.h"
#include "agilestat_fleet.h"
#include "agilestat_json.h"
#include "agilestat_serve.h"
#include "agilestat_view.h"
#include "state.h"

enum output { OUT_TABLE, OUT_JSON, OUT_PROMETHEUS, OUT_HISTORY, OUT_CONFIG };

/* A sparkline of `count` values scaled to their maximum. */
static void sparkline(const char *label, const double *values, int count,
                      const char *unit, double scale)
{
	static const char *const bars[] = { "\u2581", "\u2582", "\u2583",
		"\u2584", "\u2585", "\u2586", "\u2587", "\u2588" };
	double max = 0;

	for (int k = 0; k < count; k++)
		if (values[k] > max)
			max = values[k];
	printf("  %-5s", label);
	for (int k = 0; k < count; k++) {
		int level = max > 0 ? (int)lrint(values[k] / max * 7) : 0;

		printf("%s", bars[level < 0 ? 0 : level > 7 ? 7 : level]);
	}
	printf("  max %.1f%s\n", max * scale, unit);
}

static volatile sig_atomic_t stop_watch;

static void on_signal(int sig)
{
	(void)sig;
	stop_watch = 1;
}

static void watch(const char *path, unsigned int seconds)
{
	struct agilestat_view views[AGILE_STATE_SLOTS];
	struct agile_state_tick ticks[AGILE_STATE_RING];
	double rate[AGILE_STATE_RING], p99[AGILE_STATE_RING];
	char why[256], shown_path[AGILESTAT_TEXT_SIZE(4096)];

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop_watch) {
		struct agile_state_map m = { 0 };
		time_t now = time(NULL);
		int rc = agile__state_open_ro(path, &m, why, sizeof(why));

		/* Home the cursor and clear: refresh in place. */
		printf("\033[H\033[2J");
		printf("agilestat %s  every %us  %s",
		       agilestat_text(path, shown_path, sizeof(shown_path)),
		       seconds, ctime(&now));
		if (rc < 0) {
			printf("%s\n", rc == -ENOENT ? "no state file yet"
			                             : why);
		} else {
			int n = agilestat_read_views(&m, views);

			agilestat_fleet_open(path);
			agilestat_print_table(views, n);
			for (int i = 0; i < n; i++) {
				int count = agilestat_ring_entries(views[i].slot, 60,
				                         ticks);

				if (count == 0)
					continue;
				for (int k = 0; k < count; k++) {
					rate[k] = ticks[k].rate;
					p99[k] = (double)ticks[k].p99_ns;
				}
				struct agilestat_labels l;

				printf("\n%s, last %d ticks\n",
				       agilestat_labels(views[i].slot, &l)->name,
				       count);
				sparkline("rate", rate, count, "/s", 1);
				sparkline("p99", p99, count, "ms", 1e-6);
			}
			agile__state_close(&m);
		}
		fflush(stdout);
		sleep(seconds);
	}
}

/* The document OUTPUT for the state file open in M (NULL: there is none
 * yet, so no destination), on stdout. */
static void emit(const struct agile_state_map *m, const char *path,
                 enum output output)
{
	struct agilestat_view views[AGILE_STATE_SLOTS];
	int n = 0;

	/* The printers, in another file now, read none of it when n is 0,
	 * which the compiler can no longer see. */
	memset(views, 0, sizeof(views));
	if (m != NULL) {
		n = agilestat_read_views(m, views);
		agilestat_fleet_open(path);
	}
	switch (output) {
	case OUT_TABLE:
		agilestat_print_table(views, n);
		if (m != NULL)
			agilestat_print_unsaid_table(m);
		break;
	case OUT_JSON: agilestat_print_json(views, n, m); break;
	case OUT_PROMETHEUS: agilestat_print_prometheus(views, n); break;
	case OUT_HISTORY: agilestat_print_history(views, n); break;
	case OUT_CONFIG: agilestat_print_config(views, n); break;
	}
}

/* agilestat_render_fn for --serve: the file is opened afresh for every
 * request, so a state file created, replaced or removed while the server
 * runs is the one it shows. */
static int serve_render(const char *path, enum agilestat_document doc,
                        char *why, size_t why_len)
{
	static const enum output outputs[] = {
		[AGILESTAT_DOC_JSON] = OUT_JSON,
		[AGILESTAT_DOC_PROMETHEUS] = OUT_PROMETHEUS,
		[AGILESTAT_DOC_HISTORY] = OUT_HISTORY,
	};
	struct agile_state_map m = { 0 };
	int rc = agile__state_open_ro(path, &m, why, why_len);

	if (rc == -ENOENT) {
		emit(NULL, path, outputs[doc]);
		return 0;
	}
	if (rc < 0) {
		if (rc != -EINVAL && rc != -EPERM)
			snprintf(why, why_len, "%s", strerror(-rc));
		return rc;
	}
	emit(&m, path, outputs[doc]);
	agile__state_close(&m);
	return 0;
}

/* The preload's default path (state.h), found by the same rules and owner
 * checks but never created: a place passed over is said on stderr, since
 * another user may be taking this user's directory. */
/* The real user's home directory, as the preload finds it. */
static const char *home_of_user(void)
{
	const struct passwd *pw = getpwuid(getuid());

	return pw != NULL ? pw->pw_dir : NULL;
}

static void default_path(char *path, size_t len)
{
	char note[512];

	if (agile__state_path(getenv("AGILE_STATE"), home_of_user, false, path,
	                     len, note, sizeof(note)) < 0)
		errx(1, "no usable state file location: %s", note);
	if (note[0] != '\0')
		warnx("default state file: %s", note);
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: agilestat [-s PATH] [-j | -p | -H | -c]\n"
	        "       agilestat [-s PATH] -w SECONDS\n"
	        "       agilestat [-s PATH] --serve ADDRESS\n"
	        "  -s, --state PATH     state file (default: $AGILE_STATE, else\n"
	        "                       /run/user/<uid>/agilepreload.state, else\n"
	        "                       /dev/shm/agilepreload-<uid>/state)\n"
	        "  -j, --json           one JSON document\n"
	        "  -p, --prometheus     Prometheus text exposition format\n"
	        "  -w, --watch SECONDS  refresh in place, with sparklines\n"
	        "  -H, --history        the last 120 ticks as CSV\n"
	        "  -c, --config         each destination's resolved configuration\n"
	        "  -S, --serve ADDRESS  HTTP on PORT, HOST:PORT or unix:PATH:\n"
	        "                       /metrics, /json and a live page at /\n"
	        "  -h, --help           print this help\n");
}

/* One output format per run: a second one would silently win. */
static void set_output(enum output *output, enum output want)
{
	static const char *const names[] = {
		[OUT_JSON] = "--json", [OUT_PROMETHEUS] = "--prometheus",
		[OUT_HISTORY] = "--history", [OUT_CONFIG] = "--config",
	};

	if (*output != OUT_TABLE && *output != want)
		errx(2, "%s and %s: expected one output format", names[*output],
		     names[want]);
	*output = want;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "watch", required_argument, NULL, 'w' },
		{ "history", no_argument, NULL, 'H' },
		{ "config", no_argument, NULL, 'c' },
		{ "serve", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct agile_state_map m = { 0 };
	enum output output = OUT_TABLE;
	unsigned int watch_seconds = 0;
	const char *serve = NULL;
	char path[4096] = "", why[256];
	static char shown_path[AGILESTAT_TEXT_SIZE(4096)];
	const char *errstr;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "s:jpw:HcS:h", longopts,
	                          NULL)) != -1) {
		switch (opt) {
		case 's':
			if (strlcpy(path, optarg, sizeof(path)) >= sizeof(path))
				errx(2, "state path too long");
			break;
		case 'j': set_output(&output, OUT_JSON); break;
		case 'p': set_output(&output, OUT_PROMETHEUS); break;
		case 'H': set_output(&output, OUT_HISTORY); break;
		case 'c': set_output(&output, OUT_CONFIG); break;
		case 'w':
			watch_seconds = (unsigned int)strtonum(optarg, 1, 3600,
			                                       &errstr);
			if (errstr != NULL)
				errx(2, "--watch %s: %s (expected 1 to 3600 "
				     "seconds)", optarg, errstr);
			break;
		case 'S': serve = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (path[0] == '\0')
		default_path(path, sizeof(path));
	if (optind != argc) {
		warnx("unexpected argument \"%s\"; agilestat takes options "
		      "only", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (watch_seconds > 0 && output != OUT_TABLE)
		errx(2, "--watch redraws the table; expected it without "
		     "--json, --prometheus, --history or --config");
	if (serve != NULL && (output != OUT_TABLE || watch_seconds > 0))
		errx(2, "--serve answers every format itself; expected it "
		     "without --json, --prometheus, --history, --config or "
		     "--watch");
	if (serve != NULL)
		return agilestat_serve(serve, path, serve_render);
	if (watch_seconds > 0) {
		watch(path, watch_seconds);
		return 0;
	}
	rc = agile__state_open_ro(path, &m, why, sizeof(why));
	agilestat_text(path, shown_path, sizeof(shown_path));
	if (rc == -ENOENT)
		errx(1, "%s: no state file (no program has used a configured "
		     "destination yet; set AGILE_STATE or -s PATH)", shown_path);
	if (rc == -EINVAL || rc == -EPERM)
		errx(1, "%s: %s", shown_path, why);
	if (rc < 0)
		errx(1, "%s: %s", shown_path, strerror(-rc));
	emit(&m, path, output);
	agile__state_close(&m);
	if (fflush(stdout) != 0 || ferror(stdout))
		err(1, "stdout");
	return 0;
}
